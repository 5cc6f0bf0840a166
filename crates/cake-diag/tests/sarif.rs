//! The SARIF log meets the SARIF 2.1.0 requirements that consumers rely on, and validates
//! against the official schema. The schema is not vendored: `scripts/sarif-schema.sh` fetches
//! the pinned file and `scripts/test.sh` names it in `CAKE_SARIF_SCHEMA`; by hand:
//! `CAKE_SARIF_SCHEMA=$(scripts/sarif-schema.sh) cargo test -p cake-diag --test sarif`. Without
//! it that test is reported skipped (a failure under CAKE_REQUIRE_ALL=1, as in CI).

use std::collections::HashSet;

use cake_diag::catalog::{self, language, CodeInfo};
use cake_diag::render;
use cake_diag::{Category, Finding, Severity, SourceFile, Span};
use serde_json::Value;

/// A code that is not in the catalog passed to the renderer.
static UNLISTED: CodeInfo = CodeInfo {
    code: "CAKE-H999",
    name: "unlisted",
    category: Category::Hint,
    severity: Severity::Note,
    summary: "Not in the catalog.",
    explanation: "Used by this test only.",
    bad: "",
    good: "",
};

fn sample_log() -> Value {
    sample_log_with(&render::SarifOptions::new("0.1.0"))
}

/// Three files: two relative names (one that looks like a drive letter) and an absolute one.
fn sample_log_with(options: &render::SarifOptions) -> Value {
    let gemm = SourceFile::new(
        "examples/gemm kernel.py",
        "import cake\nfrom cake import lm\n\n# ünïcode\nx = «y» + z\n",
    );
    let empty = SourceFile::new("C:/tmp/empty.py", "");
    let mut gemm_findings: Vec<Finding> = catalog::all()
        .iter()
        .enumerate()
        .map(|(i, info)| {
            let start = (i as u32 * 7) % 60;
            Finding::new(info, Span::new(start, start + 5), format!("finding {i}"))
                .label(Span::new(0, 6), "import here")
                .label(Span::at(start), "")
        })
        .collect();
    gemm_findings.push(
        Finding::new(&UNLISTED, Span::new(500, 900), "past the end")
            .subject("barrier", "full")
            .role("load")
            .stage(0)
            .phase(1)
            .expected(16384)
            .actual("49152 B")
            .help("split the copy")
            .note("n"),
    );
    let empty_findings = vec![Finding::new(
        &language::NO_SCHEDULE,
        Span::at(0),
        "no schedule",
    )];
    let elsewhere = SourceFile::new("/outside/the root/k.py", "x = 1\n");
    let elsewhere_findings = vec![Finding::new(
        &language::UNUSED_VALUE,
        Span::new(4, 5),
        "unused",
    )];
    render::sarif(
        &[
            (&gemm, &gemm_findings),
            (&empty, &empty_findings),
            (&elsewhere, &elsewhere_findings),
        ],
        catalog::all(),
        options,
    )
}

fn positive(v: &Value, what: &str) -> u64 {
    let n = v
        .as_u64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"));
    assert!(n >= 1, "{what} must be 1-based, got {n}");
    n
}

/// A location's file: a relative URI under SRCROOT or an absolute `file://` one, and the
/// `artifacts` entry its `index` names, which has the same URI.
fn check_physical_location(loc: &Value, artifacts: &[Value]) {
    let at = &loc["artifactLocation"];
    let uri = at["uri"].as_str().expect("artifactLocation.uri");
    assert!(
        uri.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'\\' && b != b' '),
        "uri is not a URI reference: {uri}"
    );
    match at.get("uriBaseId") {
        Some(base) => {
            assert_eq!(base, render::SRCROOT);
            assert!(
                !uri.contains(':') && !uri.starts_with('/'),
                "a relative path must not look like a scheme or an absolute path: {uri}"
            );
        }
        None => assert!(uri.starts_with("file:///"), "{uri}"),
    }
    let index = at["index"].as_u64().expect("artifactLocation.index") as usize;
    assert_eq!(artifacts[index]["location"]["uri"], uri);
    assert_eq!(
        artifacts[index]["location"].get("uriBaseId"),
        at.get("uriBaseId")
    );
    let region = &loc["region"];
    let start_line = positive(&region["startLine"], "startLine");
    let start_column = positive(&region["startColumn"], "startColumn");
    let end_line = positive(&region["endLine"], "endLine");
    let end_column = positive(&region["endColumn"], "endColumn");
    assert!(
        (end_line, end_column) >= (start_line, start_column),
        "region ends before it starts: {region}"
    );
    assert!(region["byteOffset"].is_u64() && region["byteLength"].is_u64());
}

#[test]
fn log_meets_sarif_2_1_0_requirements() {
    let log = sample_log();
    assert_eq!(log["version"], "2.1.0");
    assert_eq!(log["$schema"], render::SARIF_SCHEMA_URI);
    let runs = log["runs"].as_array().expect("runs is an array");
    assert_eq!(runs.len(), 1, "every file in one run");
    let run = &runs[0];
    assert_eq!(run["columnKind"], "unicodeCodePoints");
    assert!(run["originalUriBaseIds"][render::SRCROOT].is_object());
    let artifacts = run["artifacts"].as_array().expect("artifacts");
    let uris: Vec<&str> = artifacts
        .iter()
        .map(|a| a["location"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "examples/gemm%20kernel.py",
            "C%3A/tmp/empty.py",
            "file:///outside/the%20root/k.py"
        ]
    );

    let driver = &run["tool"]["driver"];
    assert_eq!(driver["name"], "cake");
    assert_eq!(driver["version"], "0.1.0");
    let rules = driver["rules"].as_array().expect("rules is an array");
    assert_eq!(rules.len(), catalog::all().len());
    let mut ids = HashSet::new();
    for rule in rules {
        let id = rule["id"].as_str().expect("rule id");
        assert!(ids.insert(id), "duplicate rule id {id}");
        assert!(!rule["shortDescription"]["text"]
            .as_str()
            .unwrap_or("")
            .is_empty());
        assert!(!rule["fullDescription"]["text"]
            .as_str()
            .unwrap_or("")
            .is_empty());
        let level = &rule["defaultConfiguration"]["level"];
        assert!(["error", "warning", "note"].contains(&level.as_str().unwrap_or("")));
        // Help for every rule: `cake explain`'s page and the rules.md section, and a link to it.
        let info = catalog::lookup(id).unwrap();
        assert_eq!(rule["help"]["text"], catalog::explain(info));
        assert_eq!(rule["help"]["markdown"], catalog::rule_markdown(info));
        assert!(rule["help"]["markdown"]
            .as_str()
            .unwrap()
            .contains(info.summary));
        assert_eq!(
            rule["helpUri"],
            format!("{}#{}", render::RULES_URL, id.to_ascii_lowercase())
        );
    }
    // Each anchor exists in docs/rules.md.
    let rules_md = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/rules.md"),
    )
    .unwrap();
    for rule in rules {
        let uri = rule["helpUri"].as_str().unwrap();
        let anchor = uri.rsplit_once('#').unwrap().1;
        assert!(
            rules_md.contains(&format!("<a id=\"{anchor}\"></a>")),
            "{uri}: no such anchor in docs/rules.md"
        );
    }

    let results = run["results"].as_array().expect("results is an array");
    assert_eq!(results.len(), catalog::all().len() + 3);
    let mut fingerprints = HashSet::new();
    for result in results {
        let rule_id = result["ruleId"].as_str().expect("ruleId");
        match result.get("ruleIndex") {
            Some(index) => {
                let index = index.as_u64().expect("ruleIndex is an integer") as usize;
                assert_eq!(
                    rules[index]["id"], rule_id,
                    "ruleIndex points at another rule"
                );
            }
            None => assert!(
                !ids.contains(rule_id),
                "{rule_id} is in rules but has no ruleIndex"
            ),
        }
        assert!(!result["message"]["text"]
            .as_str()
            .expect("message.text")
            .is_empty());
        assert!(["error", "warning", "note"].contains(&result["level"].as_str().unwrap()));
        let locations = result["locations"].as_array().expect("locations");
        assert_eq!(locations.len(), 1);
        check_physical_location(&locations[0]["physicalLocation"], artifacts);
        let fp = result["partialFingerprints"][render::FINGERPRINT_KEY]
            .as_str()
            .expect("partialFingerprints");
        assert!(
            fingerprints.insert(fp.to_string()),
            "duplicate fingerprint {fp}"
        );
        let mut related_ids = HashSet::new();
        for related in result["relatedLocations"].as_array().into_iter().flatten() {
            assert!(related_ids.insert(related["id"].as_u64().expect("related id")));
            check_physical_location(&related["physicalLocation"], artifacts);
            assert!(related["message"]["text"].is_string());
        }
        // Property bags hold no nulls: absent values are left out.
        for (key, value) in result["properties"].as_object().expect("properties") {
            assert!(!value.is_null(), "properties.{key} is null");
        }
    }

    let unlisted = results.iter().find(|r| r["ruleId"] == "CAKE-H999").unwrap();
    assert!(unlisted.get("ruleIndex").is_none());
    assert_eq!(unlisted["properties"]["subject"]["kind"], "barrier");
    assert_eq!(unlisted["properties"]["expected"], "16384");
    let region = &unlisted["locations"][0]["physicalLocation"]["region"];
    assert_eq!(region["startLine"], 6);
    assert_eq!(region["byteLength"], 0);
    assert_eq!(
        unlisted["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "examples/gemm%20kernel.py"
    );
}

/// The fingerprint of the only result of `text` checked as `name` with one CAKE-L016 finding
/// on `needle`, and the finding's line.
fn fingerprint_of(name: &str, text: &str, needle: &str) -> (String, u64) {
    let file = SourceFile::new(name, text);
    let start = text.find(needle).unwrap() as u32;
    let findings = [Finding::new(
        &language::UNUSED_VALUE,
        Span::new(start, start + needle.len() as u32),
        "unused",
    )];
    let log = render::sarif(
        &[(&file, &findings)],
        catalog::all(),
        &render::SarifOptions::new("0"),
    );
    let result = &log["runs"][0]["results"][0];
    (
        result["partialFingerprints"][render::FINGERPRINT_KEY]
            .as_str()
            .unwrap()
            .to_string(),
        result["locations"][0]["physicalLocation"]["region"]["startLine"]
            .as_u64()
            .unwrap(),
    )
}

#[test]
fn a_fingerprint_survives_lines_inserted_above_and_nothing_else() {
    let text = "import cake\n\n    sA.rows(0, 64)\n";
    let (fp, line) = fingerprint_of("k.py", text, "sA.rows(0, 64)");
    assert_eq!(line, 3);
    assert!(fp.ends_with(":1"), "{fp}: the first such finding");
    // Lines inserted above, and the line re-indented: same fingerprint, another line.
    let moved = "import cake\n# a comment\n\nx = 1\n\n        sA.rows(0, 64)\n";
    let (same, moved_line) = fingerprint_of("k.py", moved, "sA.rows(0, 64)");
    assert_eq!(moved_line, 6);
    assert_eq!(same, fp, "a finding keeps its fingerprint when lines move");
    // Its line edited, or another file: another fingerprint.
    let edited = "import cake\n\n    sA.rows(0, 32)\n";
    assert_ne!(fingerprint_of("k.py", edited, "sA.rows(0, 32)").0, fp);
    assert_ne!(fingerprint_of("other.py", text, "sA.rows(0, 64)").0, fp);
    // The same path written `./k.py` is the same artifact, so the same fingerprint.
    assert_eq!(fingerprint_of("./k.py", text, "sA.rows(0, 64)").0, fp);
}

#[test]
fn identical_findings_get_numbered_fingerprints() {
    let text = "x\nx\n";
    let file = SourceFile::new("k.py", text);
    let findings = [
        Finding::new(&language::UNUSED_VALUE, Span::new(0, 1), "a"),
        Finding::new(&language::UNUSED_VALUE, Span::new(2, 3), "b"),
    ];
    let log = render::sarif(
        &[(&file, &findings)],
        catalog::all(),
        &render::SarifOptions::new("0"),
    );
    let fp = |i: usize| {
        log["runs"][0]["results"][i]["partialFingerprints"][render::FINGERPRINT_KEY]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (a, b) = (fp(0), fp(1));
    assert_eq!(a.split_once(':').unwrap().0, b.split_once(':').unwrap().0);
    assert!(a.ends_with(":1") && b.ends_with(":2"), "{a} {b}");
}

#[test]
fn two_files_are_one_run_with_one_artifact_each() {
    let a = SourceFile::new("a.py", "x = 1\n");
    let b = SourceFile::new("dir/b.py", "\ny = 2\n");
    let fa = [Finding::new(&language::UNUSED_VALUE, Span::new(0, 1), "a")];
    let fb = [
        Finding::new(&language::UNUSED_VALUE, Span::new(1, 2), "b"),
        Finding::new(&language::NO_SCHEDULE, Span::at(0), "none"),
    ];
    let options = render::SarifOptions {
        srcroot: Some("/home/me/repo".into()),
        rules_url: "https://example.org/rules.md".into(),
        ..render::SarifOptions::new("0")
    };
    let log = render::sarif(&[(&a, &fa), (&b, &fb)], catalog::all(), &options);
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(
        run["originalUriBaseIds"]["SRCROOT"]["uri"],
        "file:///home/me/repo/"
    );
    assert_eq!(run["artifacts"].as_array().unwrap().len(), 2);
    assert_eq!(run["artifacts"][0]["location"]["uri"], "a.py");
    assert_eq!(run["artifacts"][1]["location"]["uri"], "dir/b.py");
    assert_eq!(run["artifacts"][1]["length"], 7);
    let index = |i: usize| {
        let at = &run["results"][i]["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(at["uriBaseId"], "SRCROOT");
        at["index"].as_u64().unwrap()
    };
    assert_eq!((index(0), index(1), index(2)), (0, 1, 1));
    assert_eq!(
        run["tool"]["driver"]["rules"][0]["helpUri"],
        "https://example.org/rules.md#cake-l001"
    );
}

#[test]
fn empty_log_is_still_a_valid_run() {
    let log = render::sarif(&[], &[], &render::SarifOptions::new("0"));
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
    assert_eq!(log["runs"][0]["artifacts"], serde_json::json!([]));
    assert_eq!(
        log["runs"][0]["tool"]["driver"]["rules"],
        serde_json::json!([])
    );
}

/// The official SARIF 2.1.0 schema named by `CAKE_SARIF_SCHEMA`, compiled.
fn official_schema() -> Option<jsonschema::Validator> {
    let path = cake_testkit::require(
        std::env::var("CAKE_SARIF_SCHEMA").map_err(|_| "CAKE_SARIF_SCHEMA is not set"),
        "the official SARIF schema (scripts/sarif-schema.sh fetches it)",
    )?;
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(&path).expect("read the SARIF schema named by CAKE_SARIF_SCHEMA"),
    )
    .expect("the SARIF schema is JSON");
    Some(jsonschema::validator_for(&schema).expect("a usable schema"))
}

/// Full validation against the official schema.
#[test]
fn log_validates_against_the_official_schema() {
    let Some(validator) = official_schema() else {
        return;
    };
    // Both ways of stating SRCROOT: a directory URI, or only a description.
    let rooted = render::SarifOptions {
        srcroot: Some("/home/me/my repo".into()),
        ..render::SarifOptions::new("0.1.0")
    };
    for log in [
        sample_log(),
        sample_log_with(&rooted),
        render::sarif(&[], &[], &render::SarifOptions::new("0")),
    ] {
        let errors: Vec<String> = validator
            .iter_errors(&log)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "SARIF schema violations:\n{}",
            errors.join("\n")
        );
    }
    let log = sample_log();

    // The schema must be able to fail: a wrong version is rejected, and so are the new
    // properties when malformed.
    let mut wrong = log.clone();
    wrong["version"] = "2.0".into();
    assert!(!validator.is_valid(&wrong));
    let mut wrong = log.clone();
    wrong["runs"][0]["results"][0]["partialFingerprints"][render::FINGERPRINT_KEY] = 5.into();
    assert!(!validator.is_valid(&wrong));
    let mut wrong = log.clone();
    wrong["runs"][0]["tool"]["driver"]["rules"][0]["help"] = "text".into();
    assert!(!validator.is_valid(&wrong));
    let mut wrong = log;
    wrong["runs"][0]["artifacts"][0]["location"]["index"] = (-2).into();
    assert!(!validator.is_valid(&wrong));
}
