//! The `cake` command's contract: exit codes (0 clean, 1 findings with errors, 2 usage or I/O
//! error) and the JSON documents of `check`, `lower` and `explain`. No toolchain needed.

use std::process::{Command, Output};

fn cake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cake"))
        .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .output()
        .expect("run cake")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn exit_codes() {
    assert_eq!(
        cake(&["check", "examples/gemm_sm90.py"]).status.code(),
        Some(0)
    );
    assert_eq!(
        cake(&["check", "tests/check/CAKE-S005-bad.py"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(cake(&["check", "no/such/file.py"]).status.code(), Some(2));
    assert_eq!(
        cake(&["check", "examples/gemm_sm90.py", "--target", "sm_90"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(cake(&["explain", "CAKE-Z999"]).status.code(), Some(2));
    // SARIF describes findings only; `lower` and `build` have documents of their own.
    let lower = ["lower", "examples/gemm_sm90.py", "--target", "sm_90a"];
    let build = [
        "build",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "-o",
        "unused",
    ];
    for args in [&lower[..], &build[..]] {
        let o = cake(&[args, &["--format", "sarif"]].concat());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?} --format sarif");
        assert!(stderr.contains("'sarif'"), "{args:?}: {stderr}");
        assert!(
            o.stdout.is_empty(),
            "{args:?} --format sarif wrote to stdout"
        );
    }
    let o = cake(&[
        "lower",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--format",
        "json",
        "--launch",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--launch"));
}

#[test]
fn check_json_reports_every_finding_with_spans() {
    let o = cake(&["check", "tests/check/CAKE-S013-bad.py", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc = json(&o);
    assert_eq!(doc["schema"], "cake.findings/v1");
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["CAKE-S013", "CAKE-S012"]);
    assert_eq!(doc["findings"][0]["span"]["start_line"], 26);
}

#[test]
fn strict_turns_coverage_notes_into_errors() {
    assert_eq!(
        cake(&["check", "tests/check/V001_tcgen05_unlowered.py"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        cake(&["check", "tests/check/V001_tcgen05_unlowered.py", "--strict"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn lower_json_carries_source_and_launch_metadata() {
    let o = cake(&[
        "lower",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let doc = json(&o);
    assert_eq!(doc["schema"], "cake.lower/v0");
    let k = &doc["kernels"][0];
    assert_eq!(k["symbol"], "cake_gemm");
    assert!(k["cuda"]
        .as_str()
        .unwrap()
        .contains("extern \"C\" __global__"));
    assert_eq!(k["launch"]["schema"], "cake.launch/v0");
    assert_eq!(doc["findings"]["summary"]["errors"], 0);
}

/// A schedule with warnings still lowers, and its warnings travel with the result.
#[test]
fn lower_keeps_the_checks_warnings() {
    let args = [
        "lower",
        "tests/check/CAKE-S015-bad.py",
        "--target",
        "sm_90a",
    ];
    let o = cake(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(0));
    let doc = json(&o);
    assert_eq!(doc["findings"]["findings"][0]["code"], "CAKE-S015");
    let o = cake(&args);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning[CAKE-S015]"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("__global__"));
}

#[test]
fn lowering_an_unimplemented_construct_is_an_error_naming_the_target() {
    // Every target has a code generator now; constructs a generator lacks are still errors.
    let o = cake(&[
        "lower",
        "tests/check/V001_tcgen05_unlowered.py",
        "--target",
        "sm_100a",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let doc = json(&o);
    let f = &doc["findings"][0];
    assert_eq!(f["code"], "CAKE-V001");
    assert_eq!(f["severity"], "error");
    assert!(f["message"].as_str().unwrap().contains("sm_100a"));
}

/// sm_80 and sm_89 have the mma.sync generator: the Ampere GEMM lowers clean for both.
#[test]
fn the_ampere_gemm_lowers_for_sm_80_and_sm_89() {
    assert_eq!(
        cake(&["check", "examples/gemm_sm80.py", "--strict"])
            .status
            .code(),
        Some(0)
    );
    for t in ["sm_80", "sm_89"] {
        let o = cake(&["lower", "examples/gemm_sm80.py", "--target", t]);
        assert_eq!(o.status.code(), Some(0), "{t}");
        let cuda = String::from_utf8_lossy(&o.stdout);
        assert!(cuda.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
        assert!(cuda.contains("mbarrier.test_wait.parity"));
    }
}
