//! Evidence records match docs/schema/evidence.schema.json: the ones the fake worker's runs
//! produce in every outcome, and every record committed under bench/results/.

use cake_eval::{run, Contract, Mode, Options, Supervisor, WorkerCommand};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("docs/schema/evidence.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    assert!(jsonschema::meta::is_valid(&schema));
    jsonschema::draft202012::new(&schema).expect("the schema compiles")
}

fn violations(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

#[test]
fn records_of_every_outcome_match_the_schema() {
    let v = validator();
    let contract = Contract::load(&data("small.contract.toml")).unwrap();
    let mut sup = Supervisor::new(WorkerCommand {
        program: "python3".into(),
        args: vec![data("fake_worker.py").display().to_string()],
    });
    for (kernel, mode) in [
        ("good", Mode::Test),
        ("good", Mode::Bench),
        ("unwritten", Mode::Bench),
        ("hang", Mode::Test),
        ("crash", Mode::Test),
        ("sticky", Mode::Test),
        ("toofast", Mode::Bench),
    ] {
        let opts = Options {
            kernel: Some(data(&format!("{kernel}.launch.json"))),
            ..Options::default()
        };
        let e = run(&contract, mode, &opts, &mut sup, &mut |_: &str| {}).unwrap();
        let doc = serde_json::to_value(&e).unwrap();
        let bad = violations(&v, &doc);
        assert!(bad.is_empty(), "{kernel} {mode:?}: {bad:#?}");
    }
    sup.shutdown();
}

/// A family's record (`[specialize]`): passing, and with one value rejected. Needs nvcc to
/// build the schedule.
#[test]
fn records_of_a_specialized_family_match_the_schema() {
    if cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain").is_none() {
        return;
    }
    let v = validator();
    let text = std::fs::read_to_string(data("rows.contract.toml")).unwrap();
    let rejected = text.replacen("{ R = 100, H = 128 }", "{ R = 100, H = 32 }", 1);
    let dir = std::env::temp_dir().join(format!("cake-eval-schema-spec-{}", std::process::id()));
    let mut sup = Supervisor::new(WorkerCommand {
        program: "python3".into(),
        args: vec![data("fake_worker.py").display().to_string()],
    });
    for (text, mode) in [(&text, Mode::Bench), (&rejected, Mode::Test)] {
        let contract = Contract::parse(&data("rows.contract.toml"), text, &data("")).unwrap();
        let opts = Options {
            build_dir: Some(dir.clone()),
            ..Options::default()
        };
        let e = run(&contract, mode, &opts, &mut sup, &mut |_: &str| {}).unwrap();
        let doc = serde_json::to_value(&e).unwrap();
        assert!(doc["specializations"].is_array(), "{mode:?}");
        let bad = violations(&v, &doc);
        assert!(bad.is_empty(), "{mode:?}: {bad:#?}");
    }
    sup.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn committed_records_match_the_schema() {
    let v = validator();
    let mut seen = 0;
    // Every evidence record at any depth (sessions keep one folder per run).
    let mut dirs = vec![root().join("bench/results")];
    while let Some(dir) = dirs.pop() {
        for f in std::fs::read_dir(&dir).unwrap() {
            let f = f.unwrap().path();
            if f.is_dir() {
                dirs.push(f);
                continue;
            }
            if f.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let Ok(doc) = serde_json::from_str::<Value>(&std::fs::read_to_string(&f).unwrap())
            else {
                continue;
            };
            if doc["schema"] != "cake.evidence/v0" {
                continue;
            }
            let bad = violations(&v, &doc);
            assert!(bad.is_empty(), "{}: {bad:#?}", f.display());
            seen += 1;
        }
    }
    assert!(seen >= 5, "the H200 runtime records are there ({seen})");
}
