//! The cost model: hints on schedules built to trigger them (tests/cost/, annotated like
//! tests/check/), determinism, calibration tables, and clear errors.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use cake_cost::{estimate, parse_shape, Bound, Calibration, CostError};

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn sm90() -> &'static cake_target::Target {
    cake_target::lookup("sm_90a").unwrap()
}

fn kernel(path: &str) -> cake_ir::Kernel {
    let text = std::fs::read(root().join(path)).unwrap();
    let (_, front) = cake_front::check_bytes(path, &text);
    assert!(!front.findings.has_errors(), "{path} must parse");
    front.kernels.into_iter().next().unwrap()
}

/// Every file in tests/cost/: line 1 is `# shape: ...`; a trailing `# note[CODE]: text` marks
/// each hint expected on its line. The hints reported must be exactly the marked ones.
#[test]
fn annotated_hints() {
    let dir = root().join("tests/cost");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 6);
    let cal = Calibration::builtin(sm90()).unwrap();
    let mut failures = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let shape = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# shape: "))
            .unwrap_or_else(|| panic!("{name}: line 1 must be `# shape: ...`"));
        let shape = parse_shape(shape).unwrap();
        let mut expected = BTreeSet::new();
        let mut texts = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if let Some(at) = line.find("# note[") {
                let m = &line[at + 7..];
                let code = &m[..m.find(']').unwrap()];
                expected.insert((i as u32 + 1, code.to_string()));
                if let Some(t) = m.split_once("]: ") {
                    texts.push((code.to_string(), t.1.to_string()));
                }
            }
        }
        let checked = cake_driver_like(&name, &text);
        let (file, kernels) = checked;
        let mut got = BTreeSet::new();
        let mut messages = Vec::new();
        for k in &kernels {
            let e = estimate(k, sm90(), &shape, &cal).unwrap();
            for f in e.findings() {
                assert_eq!(f.category, cake_diag::Category::Performance);
                assert_eq!(f.severity, cake_diag::Severity::Note);
                got.insert((file.line_col(f.span.start).0, f.code.to_string()));
                messages.push((f.code.to_string(), f.message.clone()));
            }
        }
        if got != expected {
            failures.push(format!(
                "{name}: expected {expected:?}, got {got:?} ({messages:?})"
            ));
        }
        for (code, t) in texts {
            if !messages.iter().any(|(c, m)| *c == code && m.contains(&t)) {
                failures.push(format!(
                    "{name}: no {code} message contains {t:?}: {messages:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn cake_driver_like(name: &str, text: &str) -> (cake_diag::SourceFile, Vec<cake_ir::Kernel>) {
    let (file, front) = cake_front::check_bytes(name, text.as_bytes());
    assert!(!front.findings.has_errors(), "{name} must parse");
    (file, front.kernels)
}

#[test]
fn estimates_are_deterministic() {
    let k = kernel("examples/gemm_sm90.py");
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("M=4096,N=7168,K=4096").unwrap();
    let a = estimate(&k, sm90(), &shape, &cal).unwrap();
    let b = estimate(&kernel("examples/gemm_sm90.py"), sm90(), &shape, &cal).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn gemm_example_is_tensor_bound_and_plausible() {
    let k = kernel("examples/gemm_sm90.py");
    let cal = Calibration::builtin(sm90()).unwrap();
    let e = estimate(
        &k,
        sm90(),
        &parse_shape("M=4096,N=7168,K=4096").unwrap(),
        &cal,
    )
    .unwrap();
    assert_eq!(e.bound, Bound::TensorCores);
    // Measured on the H200: 0.304 ms (790 TFLOP/s, kernels/gemm/NOTES.md v3).
    assert!(
        e.time_us > 0.75 * 304.0 && e.time_us < 1.5 * 304.0,
        "{}",
        e.time_us
    );
    assert!(e.speed_of_light_us < e.time_us);
    assert!((e.flops - 2.0 * 4096.0 * 7168.0 * 4096.0).abs() < 1.0);
    assert_eq!(e.grid.tiles, 32 * 28);
    let terms = &e.terms;
    let sum = terms.tensor_us
        + terms.memory_us
        + terms.latency_us
        + terms.sync_us
        + terms.epilogue_us
        + terms.tail_us
        + terms.launch_us;
    assert!(
        (sum - e.time_us).abs() < 1e-6 * e.time_us,
        "{sum} vs {}",
        e.time_us
    );
}

#[test]
fn uncalibrated_target_declines() {
    let t = cake_target::lookup("sm_100a").unwrap();
    let err = Calibration::builtin(t).unwrap_err();
    assert!(matches!(err, CostError::NoCalibration { .. }));
    assert_eq!(err.code(), Some("CAKE-V003"));
    let msg = err.to_string();
    assert!(msg.contains("no calibration for sm_100a"), "{msg}");
    // Another target's table is never used.
    let cal = Calibration::builtin(sm90()).unwrap();
    let k = kernel("examples/gemm_sm90.py");
    let shape = parse_shape("M=128,N=256,K=64").unwrap();
    let e = estimate(&k, t, &shape, &cal).unwrap_err();
    assert!(matches!(e, CostError::WrongCalibration { .. }), "{e}");
}

#[test]
fn shape_errors_are_clear() {
    for (text, needle) in [
        ("", "empty"),
        ("M", "is not NAME=VALUE"),
        ("M=abc", "`abc` in `M=abc` is not an integer"),
        ("M=0", "at least 1"),
        ("M=1,M=2", "given twice"),
        ("M-1=3", "not a dimension name"),
    ] {
        let e = parse_shape(text).unwrap_err().to_string();
        assert!(e.contains(needle), "{text:?}: {e}");
    }
    let k = kernel("examples/gemm_sm90.py");
    let cal = Calibration::builtin(sm90()).unwrap();
    let missing = estimate(&k, sm90(), &parse_shape("M=1,N=8").unwrap(), &cal).unwrap_err();
    assert!(
        missing.to_string().contains("needs a value for K"),
        "{missing}"
    );
    let unknown = estimate(&k, sm90(), &parse_shape("M=1,N=8,K=8,Q=2").unwrap(), &cal).unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("`Q` is not a dimension of `gemm`; its dimensions are"),
        "{unknown}"
    );
}

#[test]
fn calibration_toml_round_trip() {
    let cal = Calibration::builtin(sm90()).unwrap();
    let again = Calibration::from_toml(&cal.to_toml()).unwrap();
    assert_eq!(cal, again);
    for (name, _) in cake_cost::PARAMS {
        assert!(!cal.params[*name].source.is_empty(), "{name}");
    }
    // A table missing a parameter, or with an unknown one, is refused.
    let broken = cal.to_toml().replace("dram_gbps", "dram_gbs");
    let e = Calibration::from_toml(&broken).unwrap_err().to_string();
    assert!(e.contains("missing") || e.contains("unknown"), "{e}");
}

#[test]
fn calibration_from_measurements() {
    let seed = Calibration::builtin(sm90()).unwrap();
    let m = serde_json::json!({
        "schema": "cake.calibrate/v0", "target": "sm_90a", "date": "2026-11-30",
        "environment": {"gpu": "NVIDIA H200", "driver": "580.159.04", "sm_count": 132,
                        "l2_bytes": 62914560, "clock_max_mhz": 1980.0},
        "probes": {
            "dram_stream": {"schedule": "stream", "config": "M=135168, K=4096", "samples": 30,
                            "median_ms": 0.27, "bytes": 1107296256.0},
            "wgmma": {"schedule": "wgmma", "samples": 30, "median_ms": 3.0, "flops": 2.2e15 * 1e-3 * 1.2},
            "tma_latency": {"schedule": "stream", "samples": 30, "median_ms": 1.5, "iterations": 2048},
            "barrier": {"schedule": "stream", "samples": 30, "median_ms": 0.4096, "iterations": 4096},
            "alu": {"error": "timed out"}
        }
    });
    let cal = Calibration::from_measurements(&seed, &m).unwrap();
    assert_eq!(cal.meta.date, "2026-11-30");
    assert!(
        (cal.get("dram_gbps") - 4101.0).abs() < 1.0,
        "{}",
        cal.get("dram_gbps")
    );
    assert!(cal.params["dram_gbps"]
        .source
        .contains("kernels/calibrate/stream.py"));
    // The one-stage ring's iteration less one handoff.
    assert!((cal.get("barrier_us") - 0.1).abs() < 1e-9);
    assert!(
        (cal.get("tma_latency_us") - 0.6324).abs() < 1e-3,
        "{}",
        cal.get("tma_latency_us")
    );
    // Unmeasured parameters keep the seed's value, marked as such.
    assert_eq!(cal.get("alu_gops_per_sm"), seed.get("alu_gops_per_sm"));
    assert!(cal.params["alu_gops_per_sm"].source.starts_with("seed: "));
    let text = cal.to_toml();
    assert_eq!(Calibration::from_toml(&text).unwrap(), cal);
    let wrong = serde_json::json!({"schema": "nope"});
    assert!(Calibration::from_measurements(&seed, &wrong).is_err());
}

#[test]
fn hints_only_where_built_to_trigger() {
    // The shipped GEMM at its bench shape gets one hint, the truth about its epilogue: with the
    // H200's measured TMA-store bandwidth, storing a tile is ~10% of the tile's time and only
    // one consumer set works on it. Nothing else fires.
    let cal = Calibration::builtin(sm90()).unwrap();
    let e = estimate(
        &kernel("examples/gemm_sm90.py"),
        sm90(),
        &parse_shape("M=4096,N=7168,K=4096").unwrap(),
        &cal,
    )
    .unwrap();
    let codes: Vec<&str> = e.hints.iter().map(|h| h.code).collect();
    assert_eq!(codes, ["CAKE-P006"], "{:?}", e.hints);
    let _: BTreeMap<String, i64> = e.shape;
}
