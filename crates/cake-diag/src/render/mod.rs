//! Three renderings of the same findings.
//!
//! - [`human`]: rustc-like text with source excerpts, for people and for
//!   agents reading a terminal.
//! - [`json`]: the `cake.findings/v1` document described in
//!   `docs/diagnostics.md` and `docs/schema/findings.schema.json`.
//! - [`sarif`]: a SARIF 2.1.0 log for CI and code-scanning tools.
//!
//! Each rendering shows every field a finding has; none of them sorts, so
//! pass [`crate::Findings::into_sorted`] for reading order. All positions are
//! clamped into the file, so no span makes a rendering fail.

mod human;
mod json;
mod sarif;

use serde::Serialize;

use crate::finding::{Finding, Severity};

pub use human::human;
pub use json::{json, json_string, JSON_SCHEMA_ID};
pub use sarif::{
    fingerprint, sarif, sarif_string, SarifOptions, FINGERPRINT_KEY, RULES_URL, SARIF_SCHEMA_URI,
    SRCROOT, TOOL_INFORMATION_URI,
};

/// How many findings of each severity a run produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
}

impl Summary {
    pub fn of(findings: &[Finding]) -> Summary {
        let mut summary = Summary::default();
        for f in findings {
            match f.severity {
                Severity::Error => summary.errors += 1,
                Severity::Warning => summary.warnings += 1,
                Severity::Note => summary.notes += 1,
            }
        }
        summary
    }

    pub fn total(self) -> usize {
        self.errors + self.warnings + self.notes
    }
}
