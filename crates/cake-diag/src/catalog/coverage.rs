//! Coverage rules (`CAKE-Vxxx`). Examples are the test files under tests/check/,
//! so every documented example is also a regression test.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const NOT_LOWERED: CodeInfo = CodeInfo {
    code: "CAKE-V001",
    name: "not-lowered",
    category: Category::Coverage,
    severity: Severity::Note,
    summary: r#"The schedule uses a construct the code generator does not implement for this target yet."#,
    explanation: r#"Cake checks that what it verified it can also lower: a construct without a lowering for the requested target is reported here, before any compiler runs, rather than failing later. The message names the construct. `cake check` reports it as a note (coverage is non-blocking there; `--strict` makes it an error); `cake lower` and `cake build` report it as an error and stop before code generation, so a schedule they accept never fails later.

Use a supported form (see docs/language.md) or another target."#,
    bad: include_str!("../../../../tests/check/CAKE-V001-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-V001-good.py"),
};

pub const NOT_VERIFIED: CodeInfo = CodeInfo {
    code: "CAKE-V002",
    name: "not-verified",
    category: Category::Coverage,
    severity: Severity::Note,
    summary: r#"Part of the schedule is outside what the verifier models."#,
    explanation: r#"The verifier reports explicitly what it does not model (for example waits inside run-time `if`s, cluster multicast) instead of treating it as verified. `--strict` turns these notes into errors."#,
    bad: include_str!("../../../../tests/check/CAKE-V002-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-V002-good.py"),
};

pub const NO_CALIBRATION: CodeInfo = CodeInfo {
    code: "CAKE-V003",
    name: "no-calibration",
    category: Category::Coverage,
    severity: Severity::Note,
    summary: r#"The cost model has no calibration for the target, so it gives no estimate."#,
    explanation: r#"Predicted times come from constants measured on one target (crates/cake-cost/calibration/<target>.toml: tensor-core rate, bandwidths, latencies). Cake never uses one target's numbers for another, so a target without a table gets this note instead of an estimate, and no performance hints.

Run `cake calibrate --target <target> -o FILE` on a GPU of that target and pass the table with `--calibration FILE`, or commit it under crates/cake-cost/calibration/."#,
    bad: "",
    good: "",
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[&NOT_LOWERED, &NOT_VERIFIED, &NO_CALIBRATION];
