//! SARIF 2.1.0: one run of the `cake` tool for every file of an invocation,
//! the catalog as its rules, one result per finding, shaped for GitHub code
//! scanning.
//!
//! Only the parts of SARIF that carry finding data are produced. Columns are
//! declared as `unicodeCodePoints`, matching [`SourceFile::line_col`]; SARIF's
//! end column is exclusive, as ours is. Finding fields SARIF has no place for
//! (category, subject, role, stage, phase, expected, actual, help, notes) go
//! in the result's property bag under the same names as in the JSON rendering.
//!
//! Files: a relative file name is a URI relative to `SRCROOT` (`uriBaseId`),
//! the directory [`SarifOptions::srcroot`] names; an absolute one (`/...`) is a
//! `file://` URI. Each file is one entry of `artifacts`, and every location
//! points at it by `index`. Each result has a `partialFingerprints` entry
//! ([`FINGERPRINT_KEY`]) that survives lines moving: see [`fingerprint`].

use std::collections::HashMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::catalog::{self, CodeInfo};
use crate::finding::{Category, Finding, Severity, Subject};
use crate::source::{SourceFile, Span};

pub const SARIF_SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";
pub const TOOL_INFORMATION_URI: &str = "https://github.com/cake-compiler/cake";
/// The rules page each rule's `helpUri` points into (`#cake-l001`), unless
/// [`SarifOptions::rules_url`] says otherwise.
pub const RULES_URL: &str = "https://github.com/cake-compiler/cake/blob/main/docs/rules.md";
/// The `uriBaseId` of relative file names.
pub const SRCROOT: &str = "SRCROOT";
/// The `partialFingerprints` key of Cake's fingerprint (versioned, as SARIF
/// asks; GitHub's own `primaryLocationLineHash` is left to the uploader).
pub const FINGERPRINT_KEY: &str = "cakeFinding/v1";

/// How a log names its files and links its rules.
#[derive(Clone, Debug)]
pub struct SarifOptions {
    /// The compiler's version, `tool.driver.version`.
    pub tool_version: String,
    /// The absolute directory that relative file names are relative to, as
    /// a path (`/home/me/repo`); it becomes `originalUriBaseIds.SRCROOT`.
    /// `None` leaves SRCROOT to the consumer (code scanning takes the
    /// repository's checkout).
    pub srcroot: Option<String>,
    /// Where docs/rules.md is read; `helpUri` is this plus `#` and the
    /// code's anchor.
    pub rules_url: String,
}

impl SarifOptions {
    /// SRCROOT unstated, rules linked at [`RULES_URL`].
    pub fn new(tool_version: &str) -> Self {
        SarifOptions {
            tool_version: tool_version.into(),
            srcroot: None,
            rules_url: RULES_URL.into(),
        }
    }
}

/// One SARIF log covering every `(file, findings)` pair in one run, with
/// `catalog` as the tool's rules. A finding whose code is not in `catalog`
/// still gets a result, with `ruleId` but without `ruleIndex`.
pub fn sarif(
    files: &[(&SourceFile, &[Finding])],
    catalog: &[&'static CodeInfo],
    options: &SarifOptions,
) -> serde_json::Value {
    // Serializing plain structs of strings and integers cannot fail.
    serde_json::to_value(Log::new(files, catalog, options)).unwrap_or_default()
}

/// [`sarif`] as pretty-printed text with a stable key order and a final newline.
pub fn sarif_string(
    files: &[(&SourceFile, &[Finding])],
    catalog: &[&'static CodeInfo],
    options: &SarifOptions,
) -> String {
    let log = Log::new(files, catalog, options);
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
        options: &'a SarifOptions,
    ) -> Self {
        // One artifact per file name, in order of first appearance.
        let mut artifacts: Vec<Artifact> = Vec::new();
        let mut index_of: HashMap<&str, usize> = HashMap::new();
        for (file, _) in files {
            index_of.entry(file.name.as_str()).or_insert_with(|| {
                artifacts.push(Artifact {
                    location: ArtifactLocation::new(&file.name, None),
                    length: u64::from(file.len()),
                    source_language: "python",
                });
                artifacts.len() - 1
            });
        }
        let mut occurrences: HashMap<String, usize> = HashMap::new();
        let results = files
            .iter()
            .flat_map(|&(file, findings)| findings.iter().map(move |f| (file, f)))
            .map(|(file, f)| {
                let index = index_of[file.name.as_str()];
                let mut result = SarifResult::new(file, index, f, catalog);
                // The n-th identical finding gets its own fingerprint.
                let base = fingerprint(file, f);
                let n = occurrences.entry(base.clone()).or_insert(0);
                *n += 1;
                result
                    .partial_fingerprints
                    .insert(FINGERPRINT_KEY, format!("{base}:{n}"));
                result
            })
            .collect();
        let srcroot = match &options.srcroot {
            Some(dir) => OriginalBase {
                uri: Some(directory_uri(dir)),
                description: None,
            },
            None => OriginalBase {
                uri: None,
                description: Some(Text {
                    text: "The directory relative file names are relative to: where `cake` ran, \
                           or its --srcroot.",
                }),
            },
        };
        Log {
            schema: SARIF_SCHEMA_URI,
            version: "2.1.0",
            runs: [Run {
                tool: Tool {
                    driver: Driver {
                        name: "cake",
                        version: &options.tool_version,
                        information_uri: TOOL_INFORMATION_URI,
                        rules: catalog
                            .iter()
                            .map(|info| Rule::new(info, &options.rules_url))
                            .collect(),
                    },
                },
                original_uri_base_ids: [(SRCROOT, srcroot)].into_iter().collect(),
                artifacts,
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
    original_uri_base_ids: std::collections::BTreeMap<&'static str, OriginalBase>,
    artifacts: Vec<Artifact>,
    results: Vec<SarifResult<'a>>,
    column_kind: &'static str,
}

/// `originalUriBaseIds.SRCROOT`: an absolute directory URI, or a description
/// when the caller does not know it.
#[derive(Serialize)]
struct OriginalBase {
    #[serde(skip_serializing_if = "Option::is_none")]
    uri: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<Text<'static>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Artifact {
    location: ArtifactLocation,
    length: u64,
    source_language: &'static str,
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
    /// `cake explain`'s page as text, the docs/rules.md section as Markdown.
    help: Help,
    help_uri: String,
    default_configuration: Configuration,
    properties: RuleProperties,
}

impl Rule {
    fn new(info: &'static CodeInfo, rules_url: &str) -> Self {
        Rule {
            id: info.code,
            name: info.name,
            short_description: Text { text: info.summary },
            full_description: Text {
                text: info.explanation,
            },
            help: Help {
                text: catalog::explain(info),
                markdown: catalog::rule_markdown(info),
            },
            help_uri: format!("{rules_url}#{}", catalog::anchor(info)),
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
struct Help {
    text: String,
    markdown: String,
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
    partial_fingerprints: std::collections::BTreeMap<&'static str, String>,
    properties: ResultProperties<'a>,
}

impl<'a> SarifResult<'a> {
    fn new(
        file: &'a SourceFile,
        index: usize,
        f: &'a Finding,
        catalog: &[&'static CodeInfo],
    ) -> Self {
        SarifResult {
            rule_id: f.code,
            rule_index: catalog.iter().position(|info| info.code == f.code),
            level: level(f.severity),
            message: Text { text: &f.message },
            locations: [Location {
                physical_location: PhysicalLocation::new(file, index, f.span),
            }],
            related_locations: f
                .labels
                .iter()
                .enumerate()
                .map(|(id, l)| RelatedLocation {
                    id,
                    physical_location: PhysicalLocation::new(file, index, l.span),
                    message: Text { text: &l.message },
                })
                .collect(),
            partial_fingerprints: Default::default(),
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
    fn new(file: &'a SourceFile, index: usize, span: Span) -> Self {
        let span = file.clamp_span(span);
        let (start_line, start_column) = file.line_col(span.start);
        let (end_line, end_column) = file.line_col(span.end);
        let text = file.slice(span);
        PhysicalLocation {
            artifact_location: ArtifactLocation::new(&file.name, Some(index)),
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
#[serde(rename_all = "camelCase")]
struct ArtifactLocation {
    uri: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    uri_base_id: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<usize>,
}

impl ArtifactLocation {
    /// A relative name is relative to SRCROOT; an absolute one is a `file://` URI.
    fn new(name: &str, index: Option<usize>) -> Self {
        if name.starts_with('/') {
            ArtifactLocation {
                uri: format!("file://{}", uri_reference(name)),
                uri_base_id: None,
                index,
            }
        } else {
            ArtifactLocation {
                uri: uri_reference(name.strip_prefix("./").unwrap_or(name)),
                uri_base_id: Some(SRCROOT),
                index,
            }
        }
    }
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

/// A finding's fingerprint, before its occurrence number: the first 128 bits
/// of SHA-256 over the code, the file's URI, the text of the line the
/// finding starts on (surrounding whitespace removed) and the finding's
/// offset in that trimmed text. No line number goes in, so a finding keeps
/// its fingerprint when lines are inserted or removed above it; editing its
/// line, or moving it to another file, changes it. SHA-256 (not std's
/// hashers) because the value must not change between builds or releases.
pub fn fingerprint(file: &SourceFile, f: &Finding) -> String {
    let span = file.clamp_span(f.span);
    let line = file.line_text(file.line_of(span.start));
    let line_start = file.line_span(file.line_of(span.start)).start;
    let trimmed = line.trim();
    let lead = (line.len() - line.trim_start().len()) as u32;
    let offset = span.start.saturating_sub(line_start + lead);
    let mut hash = Sha256::new();
    for part in [
        f.code,
        &ArtifactLocation::new(&file.name, None).uri,
        trimmed,
        &offset.to_string(),
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn level(severity: Severity) -> &'static str {
    // SARIF's levels are named like ours; `none` is never produced.
    severity.as_str()
}

/// `dir` as an absolute `file://` URI ending in `/`, as SARIF wants a base.
fn directory_uri(dir: &str) -> String {
    let path = uri_reference(dir);
    let slash = if path.ends_with('/') { "" } else { "/" };
    let lead = if path.starts_with('/') { "" } else { "/" };
    format!("file://{lead}{path}{slash}")
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
    use super::{directory_uri, uri_reference, ArtifactLocation};

    #[test]
    fn uris_are_percent_encoded() {
        assert_eq!(uri_reference("examples/gemm.py"), "examples/gemm.py");
        assert_eq!(uri_reference("my dir/ké.py"), "my%20dir/k%C3%A9.py");
        assert_eq!(uri_reference("<stdin>"), "%3Cstdin%3E");
        assert_eq!(uri_reference("100%.py"), "100%25.py");
        assert_eq!(uri_reference("C:/k.py"), "C%3A/k.py");
    }

    #[test]
    fn relative_names_are_under_srcroot_and_absolute_ones_are_file_uris() {
        let rel = ArtifactLocation::new("./examples/gemm.py", Some(0));
        assert_eq!(rel.uri, "examples/gemm.py");
        assert_eq!(rel.uri_base_id, Some("SRCROOT"));
        let abs = ArtifactLocation::new("/tmp/my k.py", None);
        assert_eq!(abs.uri, "file:///tmp/my%20k.py");
        assert_eq!(abs.uri_base_id, None);
        assert_eq!(directory_uri("/home/me/repo"), "file:///home/me/repo/");
        assert_eq!(directory_uri("/"), "file:///");
    }
}
