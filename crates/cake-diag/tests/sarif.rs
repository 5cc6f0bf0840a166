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
    render::sarif(
        &[(&gemm, &gemm_findings), (&empty, &empty_findings)],
        catalog::all(),
        "0.1.0",
    )
}

fn positive(v: &Value, what: &str) -> u64 {
    let n = v
        .as_u64()
        .unwrap_or_else(|| panic!("{what} is not an integer: {v}"));
    assert!(n >= 1, "{what} must be 1-based, got {n}");
    n
}

fn check_physical_location(loc: &Value) {
    let uri = loc["artifactLocation"]["uri"]
        .as_str()
        .expect("artifactLocation.uri");
    assert!(
        uri.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'\\' && b != b' '),
        "uri is not a URI reference: {uri}"
    );
    assert!(
        !uri.contains(':'),
        "a relative path must not look like a scheme: {uri}"
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
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    assert_eq!(run["columnKind"], "unicodeCodePoints");

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
    }

    let results = run["results"].as_array().expect("results is an array");
    assert_eq!(results.len(), catalog::all().len() + 2);
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
        check_physical_location(&locations[0]["physicalLocation"]);
        let mut related_ids = HashSet::new();
        for related in result["relatedLocations"].as_array().into_iter().flatten() {
            assert!(related_ids.insert(related["id"].as_u64().expect("related id")));
            check_physical_location(&related["physicalLocation"]);
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

#[test]
fn empty_log_is_still_a_valid_run() {
    let log = render::sarif(&[], &[], "0");
    assert_eq!(log["runs"][0]["results"], serde_json::json!([]));
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
    let log = sample_log();
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "SARIF schema violations:\n{}",
        errors.join("\n")
    );

    // The schema must be able to fail: a wrong version is rejected.
    let mut wrong = log;
    wrong["version"] = "2.0".into();
    assert!(!validator.is_valid(&wrong));
}
