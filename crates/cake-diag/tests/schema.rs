//! The JSON rendering matches docs/schema/findings.schema.json, and every
//! field the schema names is documented in docs/diagnostics.md.

use std::path::{Path, PathBuf};

use cake_diag::catalog::{self, language};
use cake_diag::render;
use cake_diag::{Finding, SourceFile, Span};
use serde_json::Value;

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

fn schema() -> Value {
    let path = docs().join("schema/findings.schema.json");
    let text = std::fs::read_to_string(&path).expect("read docs/schema/findings.schema.json");
    serde_json::from_str(&text).expect("the schema is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).expect("the schema compiles")
}

fn violations(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Documents exercising every field, every code, and the awkward spans.
fn documents() -> Vec<Value> {
    let text = "import cake\n# ünïcode «x»\ny = sB2 + 1\r\n";
    let file = SourceFile::new("examples/k.py", text);
    let mut findings: Vec<Finding> = catalog::all()
        .iter()
        .enumerate()
        .map(|(i, info)| Finding::new(info, Span::new(i as u32 * 3, i as u32 * 5), "m"))
        .collect();
    findings.push(
        Finding::new(
            &language::UNKNOWN_NAME,
            Span::new(40, 43),
            "unknown name `sB2`",
        )
        .label(Span::new(0, 6), "import here")
        .label(Span::at(9999), "past the end")
        .subject("view", "sB")
        .role("math")
        .stage(3)
        .phase(0)
        .expected(16384)
        .actual("49152 B")
        .help("did you mean `sB`?")
        .note("one")
        .note("two"),
    );
    let empty = SourceFile::new("", "");
    vec![
        render::json(&file, &findings),
        render::json(&file, &[]),
        render::json(
            &empty,
            &[Finding::new(&language::NO_SCHEDULE, Span::at(5), "none")],
        ),
    ]
}

#[test]
fn schema_is_draft_2020_12_and_valid() {
    let schema = schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert!(jsonschema::meta::is_valid(&schema));
    assert_eq!(
        schema["properties"]["schema"]["const"],
        render::JSON_SCHEMA_ID
    );
}

#[test]
fn json_rendering_matches_the_schema() {
    let validator = validator();
    for doc in documents() {
        let errors = violations(&validator, &doc);
        assert!(
            errors.is_empty(),
            "schema violations:\n{}\nin {doc:#}",
            errors.join("\n")
        );
    }
}

#[test]
fn schema_rejects_drift() {
    // Guards against a schema so loose that it accepts anything.
    let validator = validator();
    let doc = documents().remove(0);
    type Mutation = (&'static str, fn(&mut Value));
    let mutations: [Mutation; 5] = [
        ("unknown key", |d| d["findings"][0]["extra"] = 1.into()),
        ("missing key", |d| {
            d["findings"][0].as_object_mut().unwrap().remove("help");
        }),
        ("bad code", |d| d["findings"][0]["code"] = "L003".into()),
        ("zero column", |d| {
            d["findings"][0]["span"]["start_column"] = 0.into()
        }),
        ("bad severity", |d| {
            d["findings"][0]["severity"] = "fatal".into()
        }),
    ];
    for (what, mutate) in mutations {
        let mut bad = doc.clone();
        mutate(&mut bad);
        assert!(
            !validator.is_valid(&bad),
            "schema accepted a document with a {what}"
        );
    }
}

/// Every property the schema defines is explained in docs/diagnostics.md.
#[test]
fn every_field_is_documented() {
    let prose =
        std::fs::read_to_string(docs().join("diagnostics.md")).expect("docs/diagnostics.md");
    let schema = schema();
    let objects = [
        &schema,
        &schema["properties"]["summary"],
        &schema["$defs"]["finding"],
        &schema["$defs"]["label"],
        &schema["$defs"]["subject"],
        &schema["$defs"]["span"],
    ];
    for object in objects {
        for key in object["properties"].as_object().expect("properties").keys() {
            assert!(
                prose.contains(&format!("`{key}`")),
                "docs/diagnostics.md does not mention `{key}`"
            );
        }
    }
}
