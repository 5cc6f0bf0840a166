//! The `cake.findings/v1` JSON document (see `docs/diagnostics.md`).
//!
//! The document is built from typed structs rather than `json!` so that the
//! key order is the declaration order below whatever serde_json features the
//! rest of the workspace enables.

use serde::Serialize;

use super::Summary;
use crate::finding::{Category, Finding, Severity, Subject};
use crate::source::{SourceFile, Span};

/// Value of the document's `schema` key; bumped on any incompatible change.
pub const JSON_SCHEMA_ID: &str = "cake.findings/v1";

/// The findings of one file as a `cake.findings/v1` document.
pub fn json(file: &SourceFile, findings: &[Finding]) -> serde_json::Value {
    // Serializing plain structs of strings and integers cannot fail.
    serde_json::to_value(Document::new(file, findings)).unwrap_or_default()
}

/// [`json`] as pretty-printed text with the documented key order and a final newline.
pub fn json_string(file: &SourceFile, findings: &[Finding]) -> String {
    let mut text = serde_json::to_string_pretty(&Document::new(file, findings)).unwrap_or_default();
    text.push('\n');
    text
}

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    file: &'a str,
    summary: Summary,
    findings: Vec<JsonFinding<'a>>,
}

impl<'a> Document<'a> {
    fn new(file: &'a SourceFile, findings: &'a [Finding]) -> Self {
        Document {
            schema: JSON_SCHEMA_ID,
            file: &file.name,
            summary: Summary::of(findings),
            findings: findings.iter().map(|f| JsonFinding::new(file, f)).collect(),
        }
    }
}

#[derive(Serialize)]
struct JsonFinding<'a> {
    code: &'static str,
    category: Category,
    severity: Severity,
    message: &'a str,
    span: JsonSpan<'a>,
    labels: Vec<JsonLabel<'a>>,
    subject: Option<&'a Subject>,
    role: Option<&'a str>,
    stage: Option<u32>,
    phase: Option<u32>,
    expected: Option<&'a str>,
    actual: Option<&'a str>,
    help: Option<&'a str>,
    notes: &'a [String],
}

impl<'a> JsonFinding<'a> {
    fn new(file: &'a SourceFile, f: &'a Finding) -> Self {
        JsonFinding {
            code: f.code,
            category: f.category,
            severity: f.severity,
            message: &f.message,
            span: JsonSpan::new(file, f.span),
            labels: f
                .labels
                .iter()
                .map(|l| JsonLabel {
                    span: JsonSpan::new(file, l.span),
                    message: &l.message,
                })
                .collect(),
            subject: f.subject.as_ref(),
            role: f.role.as_deref(),
            stage: f.stage,
            phase: f.phase,
            expected: f.expected.as_deref(),
            actual: f.actual.as_deref(),
            help: f.help.as_deref(),
            notes: &f.notes,
        }
    }
}

#[derive(Serialize)]
struct JsonLabel<'a> {
    span: JsonSpan<'a>,
    message: &'a str,
}

/// A span with both the positions a reader wants and the offsets a tool wants.
#[derive(Serialize)]
struct JsonSpan<'a> {
    file: &'a str,
    start_line: u32,
    start_column: u32,
    end_line: u32,
    end_column: u32,
    start_byte: u32,
    end_byte: u32,
}

impl<'a> JsonSpan<'a> {
    fn new(file: &'a SourceFile, span: Span) -> Self {
        let span = file.clamp_span(span);
        let (start_line, start_column) = file.line_col(span.start);
        let (end_line, end_column) = file.line_col(span.end);
        JsonSpan {
            file: &file.name,
            start_line,
            start_column,
            end_line,
            end_column,
            start_byte: span.start,
            end_byte: span.end,
        }
    }
}
