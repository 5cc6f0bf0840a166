//! SARIF 2.1.0: one run of the `cake` tool, the catalog as its rules, one
//! result per finding.
//!
//! Only the parts of SARIF that carry finding data are produced. Columns are
//! declared as `unicodeCodePoints`, matching [`SourceFile::line_col`]; SARIF's
//! end column is exclusive, as ours is. Finding fields SARIF has no place for
//! (category, subject, role, stage, phase, expected, actual, help, notes) go
//! in the result's property bag under the same names as in the JSON rendering.

use serde::Serialize;

use crate::catalog::CodeInfo;
use crate::finding::{Category, Finding, Severity, Subject};
use crate::source::{SourceFile, Span};

pub const SARIF_SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const TOOL_INFORMATION_URI: &str = "https://github.com/cake-compiler/cake";

/// One SARIF log covering every `(file, findings)` pair, with `catalog` as
/// the tool's rules. A finding whose code is not in `catalog` still gets a
/// result, with `ruleId` but without `ruleIndex`.
pub fn sarif(
    files: &[(&SourceFile, &[Finding])],
    catalog: &[&'static CodeInfo],
    tool_version: &str,
) -> serde_json::Value {
    // Serializing plain structs of strings and integers cannot fail.
    serde_json::to_value(Log::new(files, catalog, tool_version)).unwrap_or_default()
}

/// [`sarif`] as pretty-printed text with a stable key order and a final newline.
pub fn sarif_string(
    files: &[(&SourceFile, &[Finding])],
    catalog: &[&'static CodeInfo],
    tool_version: &str,
) -> String {
    let log = Log::new(files, catalog, tool_version);
    let mut text = serde_json::to_string_pretty(&log).unwrap_or_default();
    text.push('\n');
    text
}

#[derive(Serialize)]
struct Log<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    version: &'static str,
    runs: [Run<'a>; 1],
}

impl<'a> Log<'a> {
    fn new(
        files: &'a [(&'a SourceFile, &'a [Finding])],
        catalog: &'a [&'static CodeInfo],
        tool_version: &'a str,
    ) -> Self {
        let results = files
            .iter()
            .flat_map(|&(file, findings)| findings.iter().map(move |f| (file, f)))
            .map(|(file, f)| SarifResult::new(file, f, catalog))
            .collect();
        Log {
            schema: SARIF_SCHEMA_URI,
            version: "2.1.0",
            runs: [Run {
                tool: Tool {
                    driver: Driver {
                        name: "cake",
                        version: tool_version,
                        information_uri: TOOL_INFORMATION_URI,
                        rules: catalog.iter().map(|info| Rule::new(info)).collect(),
                    },
                },
                results,
                column_kind: "unicodeCodePoints",
            }],
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Run<'a> {
    tool: Tool<'a>,
    results: Vec<SarifResult<'a>>,
    column_kind: &'static str,
}

#[derive(Serialize)]
struct Tool<'a> {
    driver: Driver<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Driver<'a> {
    name: &'static str,
    version: &'a str,
    information_uri: &'static str,
    rules: Vec<Rule>,
}

/// SARIF's `reportingDescriptor`: one catalog entry.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Rule {
    id: &'static str,
    /// The kebab-case slug, as `cake explain` and docs/rules.md spell it.
    name: &'static str,
    short_description: Text<'static>,
    full_description: Text<'static>,
    default_configuration: Configuration,
    properties: RuleProperties,
}

impl Rule {
    fn new(info: &'static CodeInfo) -> Self {
        Rule {
            id: info.code,
            name: info.name,
            short_description: Text { text: info.summary },
            full_description: Text {
                text: info.explanation,
            },
            default_configuration: Configuration {
                level: level(info.severity),
            },
            properties: RuleProperties {
                category: info.category,
            },
        }
    }
}

#[derive(Serialize)]
struct Text<'a> {
    text: &'a str,
}

#[derive(Serialize)]
struct Configuration {
    level: &'static str,
}

#[derive(Serialize)]
struct RuleProperties {
    category: Category,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SarifResult<'a> {
    rule_id: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    rule_index: Option<usize>,
    level: &'static str,
    message: Text<'a>,
    locations: [Location<'a>; 1],
    #[serde(skip_serializing_if = "Vec::is_empty")]
    related_locations: Vec<RelatedLocation<'a>>,
    properties: ResultProperties<'a>,
}

impl<'a> SarifResult<'a> {
    fn new(file: &'a SourceFile, f: &'a Finding, catalog: &[&'static CodeInfo]) -> Self {
        SarifResult {
            rule_id: f.code,
            rule_index: catalog.iter().position(|info| info.code == f.code),
            level: level(f.severity),
            message: Text { text: &f.message },
            locations: [Location {
                physical_location: PhysicalLocation::new(file, f.span),
            }],
            related_locations: f
                .labels
                .iter()
                .enumerate()
                .map(|(id, l)| RelatedLocation {
                    id,
                    physical_location: PhysicalLocation::new(file, l.span),
                    message: Text { text: &l.message },
                })
                .collect(),
            properties: ResultProperties {
                category: f.category,
                subject: f.subject.as_ref(),
                role: f.role.as_deref(),
                stage: f.stage,
                phase: f.phase,
                expected: f.expected.as_deref(),
                actual: f.actual.as_deref(),
                help: f.help.as_deref(),
                notes: &f.notes,
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Location<'a> {
    physical_location: PhysicalLocation<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RelatedLocation<'a> {
    id: usize,
    physical_location: PhysicalLocation<'a>,
    message: Text<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PhysicalLocation<'a> {
    artifact_location: ArtifactLocation,
    region: Region<'a>,
}

impl<'a> PhysicalLocation<'a> {
    fn new(file: &'a SourceFile, span: Span) -> Self {
        let span = file.clamp_span(span);
        let (start_line, start_column) = file.line_col(span.start);
        let (end_line, end_column) = file.line_col(span.end);
        let text = file.slice(span);
        PhysicalLocation {
            artifact_location: ArtifactLocation {
                uri: uri_reference(&file.name),
            },
            region: Region {
                start_line,
                start_column,
                end_line,
                end_column,
                byte_offset: span.start,
                byte_length: span.len(),
                snippet: (!text.is_empty()).then_some(Text { text }),
            },
        }
    }
}

#[derive(Serialize)]
struct ArtifactLocation {
    uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Region<'a> {
    start_line: u32,
    start_column: u32,
    end_line: u32,
    end_column: u32,
    byte_offset: u32,
    byte_length: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    snippet: Option<Text<'a>>,
}

/// Finding fields without a SARIF home; absent ones are left out, as SARIF
/// prefers absent properties to nulls.
#[derive(Serialize)]
struct ResultProperties<'a> {
    category: Category,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject: Option<&'a Subject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stage: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    phase: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    actual: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    help: Option<&'a str>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    notes: &'a [String],
}

fn level(severity: Severity) -> &'static str {
    // SARIF's levels are named like ours; `none` is never produced.
    severity.as_str()
}

/// The file name as a relative URI reference: SARIF requires `uri` to be a
/// valid URI, so bytes outside RFC 3986's path characters are
/// percent-encoded (spaces, `%`, `\`, non-ASCII, `<stdin>`'s brackets), and
/// so is `:`, which would otherwise make `C:/x.py` read as a URI scheme.
fn uri_reference(name: &str) -> String {
    let mut uri = String::with_capacity(name.len());
    for byte in name.bytes() {
        let keep = byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=@".contains(&byte);
        if keep {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::uri_reference;

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(uri_reference("examples/gemm.py"), "examples/gemm.py");
        assert_eq!(uri_reference("my dir/ké.py"), "my%20dir/k%C3%A9.py");
        assert_eq!(uri_reference("<stdin>"), "%3Cstdin%3E");
        assert_eq!(uri_reference("100%.py"), "100%25.py");
        assert_eq!(uri_reference("C:/k.py"), "C%3A/k.py");
    }
}
