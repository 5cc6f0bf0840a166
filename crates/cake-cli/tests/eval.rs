//! `cake test` and `cake bench` through the real binary, with the fake evaluation worker of
//! cake-eval's tests standing in for the GPU (`CAKE_WORKER`): exit codes, the progress table,
//! the evidence record and contract errors.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cake-eval/tests/data")
        .join(name)
}

fn cake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cake"))
        .env(
            "CAKE_WORKER",
            format!("python3 {}", data("fake_worker.py").display()),
        )
        .args(args)
        .output()
        .expect("run cake")
}

fn contract() -> String {
    data("small.contract.toml").display().to_string()
}

fn kernel(name: &str) -> String {
    data(&format!("{name}.launch.json")).display().to_string()
}

#[test]
fn a_passing_candidate_exits_0_with_a_table() {
    let o = cake(&[
        "test",
        &contract(),
        "--kernel",
        &kernel("good"),
        "--seed",
        "1",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("contract fake-gemm · target sm_90a · GPU Fake GPU"),
        "{out}"
    );
    assert!(out.contains("check M=100 N=64 K=32"), "{out}");
    assert!(
        out.contains("correctness: 4/4 checks passed (seed 1, 2 run(s) each)"),
        "{out}"
    );
    assert!(out.contains("verdict: passed"), "{out}");
}

#[test]
fn a_failing_candidate_exits_1_and_json_is_the_evidence_record() {
    let o = cake(&[
        "bench",
        &contract(),
        "--kernel",
        &kernel("unwritten"),
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert_eq!(v["schema"], "cake.evidence/v0");
    assert_eq!(v["command"], "bench");
    assert!(v["timing"].is_null(), "a failed candidate has no speed");
    assert!(v["verdict"].as_str().unwrap().contains("never written"));
}

#[test]
fn bench_reports_speedups_and_writes_the_record_atomically_by_hash() {
    let dir = std::env::temp_dir().join(format!("cake-cli-eval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let o = cake(&[
        "bench",
        &contract(),
        "--kernel",
        &kernel("good"),
        "--baseline",
        "torch_matmul",
        "--record",
        dir.to_str().unwrap(),
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(
        out.contains("torch_matmul 2.0000 / 1.8000 ms (2.000x)"),
        "{out}"
    );
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(
        name.ends_with("-bench.json") && name.len() == 64 + 11,
        "{name}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn contract_and_usage_errors_exit_2() {
    let bad =
        std::env::temp_dir().join(format!("cake-cli-bad-{}.contract.toml", std::process::id()));
    std::fs::write(&bad, "name = \"x\"\nkernel = 3\n").unwrap();
    let o = cake(&["test", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(":2:"), "located: {err}");
    let _ = std::fs::remove_file(&bad);

    let o = cake(&["bench", &contract(), "--baseline", "cublas"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no baseline `cublas`; it has torch_matmul")
    );

    let o = Command::new(env!("CARGO_BIN_EXE_cake"))
        .env("CAKE_WORKER", "/nonexistent/worker")
        .args(["test", &contract()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the worker did not start"));
}

#[test]
fn another_shape_set_can_be_checked() {
    let o = cake(&[
        "test",
        &contract(),
        "--kernel",
        &kernel("good"),
        "--shapes",
        "bench",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["correctness"]["shape_set"], "bench");
    assert_eq!(
        v["correctness"]["checks"].as_array().unwrap().len(),
        2,
        "1 shape x 2 distributions"
    );
    let o = cake(&["test", &contract(), "--shapes", "held_out"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr)
        .contains("has no `held_out` shapes (its sets: check, bench)"));
}
