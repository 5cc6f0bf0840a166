//! `cake cost`, `cake check --shape` and `cake calibrate --measurements` (no GPU, no toolchain).

use std::process::{Command, Output};

fn cake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cake"))
        .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .output()
        .expect("run cake")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn cost_reports_time_bound_and_json() {
    let shape = "M=4096,N=7168,K=4096";
    let o = cake(&[
        "cost",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--shape",
        shape,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("bound by tensor cores") && t.contains("TFLOP/s"),
        "{t}"
    );
    let o = cake(&[
        "cost",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--shape",
        shape,
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "cake.cost/v0");
    let e = &v["estimates"][0];
    assert_eq!(e["bound"], "tensor_cores");
    assert!(e["time_us"].as_f64().unwrap() > 0.0);
    for key in [
        "terms",
        "utilization",
        "grid",
        "loops",
        "hints",
        "calibration",
    ] {
        assert!(e.get(key).is_some(), "{key}");
    }
}

#[test]
fn cost_errors_are_clear() {
    let o = cake(&[
        "cost",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--shape",
        "M=4096,N=x",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("`x` in `N=x` is not an integer"),
        "{}",
        text(&o)
    );
    let o = cake(&[
        "cost",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--shape",
        "M=4096",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("needs a value for K, N"), "{}", text(&o));
    // A target without calibration: no estimate, a coded reason.
    let o = cake(&[
        "cost",
        "examples/attention_sm100.py",
        "--target",
        "sm_100a",
        "--shape",
        "BH=1,S=128",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("CAKE-V003: no calibration for sm_100a"),
        "{}",
        text(&o)
    );
}

#[test]
fn check_with_a_shape_reports_hints() {
    let o = cake(&[
        "check",
        "tests/cost/P004_tail_wave.py",
        "--target",
        "sm_90a",
        "--shape",
        "M=1024,N=4352,K=4096",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["CAKE-P004", "CAKE-P006"]);
    // Without a shape, no cost findings.
    let o = cake(&["check", "tests/cost/P004_tail_wave.py", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["findings"].as_array().unwrap().is_empty());
    // An uncalibrated target gets a V003 note, not numbers from another target.
    let o = cake(&[
        "check",
        "examples/attention_sm100.py",
        "--target",
        "sm_100a",
        "--shape",
        "BH=1,S=128",
    ]);
    assert!(text(&o).contains("CAKE-V003"), "{}", text(&o));
}

#[test]
fn calibrate_from_measurements_writes_a_table() {
    let dir = std::env::temp_dir().join(format!("cake-cli-calibrate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let m = dir.join("m.json");
    std::fs::write(
        &m,
        r#"{"schema": "cake.calibrate/v0", "target": "sm_90a", "date": "2026-11-30",
            "environment": {"gpu": "NVIDIA H200", "driver": "580", "sm_count": 132},
            "probes": {"dram_stream": {"median_ms": 0.25, "bytes": 1.0e9, "samples": 30}}}"#,
    )
    .unwrap();
    let out = dir.join("sm_90a.toml");
    let o = cake(&[
        "calibrate",
        "--target",
        "sm_90a",
        "-o",
        out.to_str().unwrap(),
        "--measurements",
        m.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = std::fs::read_to_string(&out).unwrap();
    assert!(table.contains("dram_gbps = { value = 4000.0"), "{table}");
    let o = cake(&[
        "cost",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--shape",
        "M=128,N=256,K=64",
        "--calibration",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("cake calibrate"), "{}", text(&o));
}

#[test]
fn cost_rejects_shapes_the_kernel_cannot_index() {
    let cost = |shape: &str| {
        cake(&[
            "cost",
            "examples/gemm_sm90.py",
            "--target",
            "sm_90a",
            "--shape",
            shape,
        ])
    };
    for (shape, why) in [
        // 2^63 - 1 used to answer "7.3 µs".
        (
            "M=9223372036854775807,N=9223372036854775807,K=9223372036854775807",
            "K = 9223372036854775807 is more than the kernel's 32-bit `int` dimensions can hold (at most 2147483647)",
        ),
        (
            "M=4096,N=2147483648,K=4096",
            "N = 2147483648 is more than the kernel's 32-bit `int` dimensions can hold",
        ),
        // Each dimension fits an int; the tile count does not.
        (
            "M=2147483647,N=2147483647,K=64",
            "tiles: more than its 32-bit `int` tile index can count",
        ),
    ] {
        let o = cost(shape);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{shape}: {t}");
        assert!(t.contains(why), "{shape}: {t}");
        assert!(!t.contains("µs") && !t.contains(" us"), "{shape}: {t}");
    }
    // The largest shape it can index is still costed.
    let o = cost("M=65536,N=65536,K=2147483647");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

/// `cake family accuracy`: the model against a committed family measurement (no GPU), in both
/// renderings, and a clear refusal when the family file is not the one the measurement timed.
#[test]
fn family_accuracy_sets_committed_timings_against_the_model() {
    let m = "bench/results/2026-12-03-cost-model/c5/tinygemm/measurement.json";
    // The table that measurement was taken with (the shipped one has changed since).
    let fam = "bench/results/2026-12-03-cost-model/c5/tinygemm.family.toml";
    let o = cake(&["family", "accuracy", fam, m]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let t = text(&o);
    for want in [
        "cost model on family `tinygemm`",
        "all routes: 36 points",
        "swapped: 34 points",
        "worst predictions:",
    ] {
        assert!(t.contains(want), "missing `{want}` in\n{t}");
    }
    let o = cake(&["family", "accuracy", fam, m, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["overall"]["points"], 36);
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 36);
    // Every point is a correct CUPTI timing and the model's span for it.
    for p in points {
        assert!(p["measured_us"].as_f64().unwrap() > 1.0);
        assert!(p["predicted_us"].as_f64().unwrap() > 1.0);
    }
    // A breakdown by a dimension, in both renderings; an unknown dimension is refused.
    let by = |extra: &[&str]| {
        let mut args = vec!["family", "accuracy", fam, m, "--by", "M"];
        args.extend_from_slice(extra);
        cake(&args)
    };
    let o = by(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("by route and M:"), "{}", text(&o));
    assert!(text(&o).contains("gemv at M=1: 1 points"), "{}", text(&o));
    let o = by(&["--format", "json"]);
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(doc["breakdowns"]["M"].as_array().unwrap().len() >= 3);
    let o = by(&["--by", "Q"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("no timed shape of the measurements has dimension `Q`"));
    // A calibration table of another target: refused before any estimate.
    let other =
        std::env::temp_dir().join(format!("cake-accuracy-sm80-{}.toml", std::process::id()));
    let table = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../crates/cake-cost/calibration/sm_90a.toml"),
    )
    .unwrap()
    .replace("target = \"sm_90a\"", "target = \"sm_80\"");
    std::fs::write(&other, table).unwrap();
    let o = by(&["--calibration", other.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("the calibration table is for sm_80, not sm_90a"),
        "{}",
        text(&o)
    );
    // A measurement taken with a table that had a route this one has not: refused, named.
    let o = cake(&[
        "family",
        "accuracy",
        "kernels/tinygemm/tinygemm.family.toml",
        "bench/results/2026-12-02-tinygemm-gemv/4-tinygemm/measurement.json",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains(
            "times route `swapped`, which kernels/tinygemm/tinygemm.family.toml does not have"
        ),
        "{}",
        text(&o)
    );
    // The candidates file of another family: refused, with the reason.
    let o = cake(&[
        "family",
        "accuracy",
        "kernels/gemm/gemm.candidates.family.toml",
        m,
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("measures family `tinygemm`, not `gemm`"),
        "{}",
        text(&o)
    );
}

/// `--gpu` picks the committed table measured on that card; a card without one is refused with
/// the cards that have one, and `--gpu` with `--calibration` is a usage error.
#[test]
fn cost_takes_the_table_of_the_gpu_asked_for() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "cost",
            "examples/rmsnorm_sm90.py",
            "--target",
            "sm_90a",
            "--shape",
            "R=32768",
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        cake(&args)
    };
    let time = |o: &Output| -> (f64, String) {
        assert_eq!(o.status.code(), Some(0), "{}", text(o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let e = &v["estimates"][0];
        (
            e["time_us"].as_f64().unwrap(),
            e["calibration"]["gpu"].as_str().unwrap().to_string(),
        )
    };
    // The human report says which card the default table is for, and how to pick another.
    let o = cake(&[
        "cost",
        "examples/rmsnorm_sm90.py",
        "--target",
        "sm_90a",
        "--shape",
        "R=32768",
    ]);
    assert!(
        text(&o).contains(
            "note: estimated for the NVIDIA H200 (sm_90a's default table); `--gpu H100` \
             estimates for that card"
        ),
        "{}",
        text(&o)
    );
    let (default, default_gpu) = time(&run(&[]));
    let (h200, h200_gpu) = time(&run(&["--gpu", "H200"]));
    let (h100, h100_gpu) = time(&run(&["--gpu", "NVIDIA H100 80GB HBM3"]));
    assert_eq!(default_gpu, "NVIDIA H200");
    assert_eq!((h200, h200_gpu.as_str()), (default, "NVIDIA H200"));
    assert!(h100_gpu.contains("H100"), "{h100_gpu}");
    // A memory-bound kernel: the H100's DRAM is about three quarters of the H200's.
    assert!(h100 > default * 1.2, "H100 {h100} µs, H200 {default} µs");

    let o = run(&["--gpu", "A100"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("no calibration table of sm_90a was measured on `A100`")
            && text(&o).contains("its tables are for H200, H100"),
        "{}",
        text(&o)
    );
    let o = run(&[
        "--gpu",
        "H100",
        "--calibration",
        "crates/cake-cost/calibration/sm_90a.toml",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("cannot be used with"), "{}", text(&o));

    // `cake check --shape` takes it too: the hints are for that card's table.
    let o = cake(&[
        "check",
        "examples/rmsnorm_sm90.py",
        "--shape",
        "R=32768",
        "--gpu",
        "A100",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("error: --gpu:"), "{}", text(&o));
    let o = cake(&[
        "check",
        "examples/rmsnorm_sm90.py",
        "--shape",
        "R=32768",
        "--gpu",
        "H100",
    ]);
    assert!(o.status.success(), "{}", text(&o));
}

/// `cake family accuracy` predicts each measurement with the table of the GPU it ran on: an
/// H100 run of the tinygemm table with the H100's, an H200 run with the H200's.
#[test]
fn family_accuracy_takes_each_measurements_own_gpu() {
    let fam = "kernels/tinygemm/tinygemm.family.toml";
    let h100 = "bench/results/2026-12-07-clusters/c10/shipped/measurement.json";
    let h200 = "bench/results/2026-12-06-grid/c6/shipped/measurement.json";
    let bias = |args: &[&str]| -> (f64, String) {
        let mut all = vec!["family", "accuracy", fam];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--format", "json"]);
        let o = cake(&all);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (
            doc["overall"]["bias"].as_f64().unwrap(),
            doc["calibration"].as_str().unwrap().to_string(),
        )
    };
    let (own, table) = bias(&[h100]);
    assert!(table.starts_with("NVIDIA H100"), "{table}");
    let (h200_table, _) = bias(&[h100, "--gpu", "H200"]);
    // The H200's table predicts the H100 about a quarter fast; its own within 10 %.
    assert!((0.9..1.1).contains(&own), "{own}");
    assert!(h200_table < 0.85, "{h200_table}");
    let (_, both) = bias(&[h100, h200]);
    assert!(
        both.contains("H100") && both.contains("NVIDIA H200"),
        "{both}"
    );
}
