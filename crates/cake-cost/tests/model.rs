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

/// A kernel of ten microseconds is launch-bound as CUDA events time it, but its span on the GPU
/// (what CUPTI and the harness's medians measure) is bound by its own work: the small-M GEMM's
/// 64 CTAs on 132 SMs leave a tail wave. The span leaves the launch out.
#[test]
fn a_short_kernel_names_its_bound_on_the_gpu_apart_from_the_launch() {
    // The shipped route at M = 8 for a 4096 x 4096 weight: 64-row tiles unsplit, BK = 256.
    let path = "examples/tinygemm_sm90.py";
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    let text = text
        .replace("\nNW = 2048 ", "\nNW = 4096 ")
        .replace("\nBK = 64\n", "\nBK = 256\n");
    let (_, front) = cake_front::check_bytes(path, text.as_bytes());
    assert!(!front.findings.has_errors());
    let k = front.kernels.into_iter().next().unwrap();
    assert_eq!(k.cluster.iter().product::<u32>(), 1, "not split");
    let cal = Calibration::builtin(sm90()).unwrap();
    let e = estimate(&k, sm90(), &parse_shape("N=4096,K=4096").unwrap(), &cal).unwrap();
    assert_eq!(e.bound, Bound::Launch);
    assert_eq!(e.span_bound, Bound::TailWave);
    assert!(
        e.span_us < e.time_us - e.terms.launch_us + 2.0,
        "{} {}",
        e.span_us,
        e.time_us
    );
    // Measured on the H200 at M = 8: 12.4 us (bench/results/2026-12-06-cards/).
    assert!(
        e.span_us > 0.75 * 12.4 && e.span_us < 1.25 * 12.4,
        "{}",
        e.span_us
    );
    let gemm = kernel("examples/gemm_sm90.py");
    let e = estimate(
        &gemm,
        sm90(),
        &parse_shape("M=4096,N=7168,K=4096").unwrap(),
        &cal,
    )
    .unwrap();
    assert_eq!(
        (e.bound, e.span_bound),
        (Bound::TensorCores, Bound::TensorCores)
    );
}

/// A multicast load is charged its CTA's share of L2 traffic: the cluster GEMM, identical to
/// the CTA GEMM but for the B tile multicast to 2 CTAs, moves B's L2 bytes once per cluster.
/// Its DRAM traffic and FLOPs do not change.
#[test]
fn multicast_halves_the_shared_operands_l2_traffic() {
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("M=4096,N=7168,K=4096").unwrap();
    let cta = estimate(&kernel("examples/gemm_sm90.py"), sm90(), &shape, &cal).unwrap();
    let cluster = estimate(
        &kernel("examples/gemm_cluster_sm90.py"),
        sm90(),
        &shape,
        &cal,
    )
    .unwrap();
    // Per tile and k-step: A 128 x 64 and B 256 x 64 bf16 (16 + 32 KiB), of which B is halved.
    let expected = cta.l2_bytes * (16.0 + 32.0 / 2.0) / (16.0 + 32.0);
    assert!(
        (cluster.l2_bytes - expected).abs() < 1e-6 * expected,
        "{} vs {expected}",
        cluster.l2_bytes
    );
    assert_eq!(cluster.dram_bytes, cta.dram_bytes);
    assert_eq!(cluster.flops, cta.flops);
}

#[test]
fn an_m_major_a_costs_what_a_k_major_one_does() {
    // examples/gemm_tn_sm90.py is examples/gemm_nn_sm90.py with `a` read M-major from
    // `.rows(w * BK, BK).T` of a (2 BK, 64) view: the same MMAs, bytes and tiles. K is the
    // slice's rows, not the view's (which once doubled the flops and failed the speed-of-light
    // check on a correct kernel, bench/results/2026-12-05-tn/).
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("M=4096,N=7168,K=4096").unwrap();
    let nn = estimate(&kernel("examples/gemm_nn_sm90.py"), sm90(), &shape, &cal).unwrap();
    let tn = estimate(&kernel("examples/gemm_tn_sm90.py"), sm90(), &shape, &cal).unwrap();
    assert_eq!(tn.flops, 2.0 * 4096.0 * 7168.0 * 4096.0);
    assert_eq!((tn.flops, tn.dram_bytes), (nn.flops, nn.dram_bytes));
    assert!((tn.time_us - nn.time_us).abs() < 1e-6 * nn.time_us);
    assert_eq!(tn.speed_of_light_us, nn.speed_of_light_us);
}

#[test]
fn stream_k_fills_the_sms_without_a_tail() {
    // 64 weight tiles on 132 SMs: one CTA per tile leaves 68 SMs idle; stream-K shares the
    // tiles' 64 K steps each over every SM, with no tail, and pays for its fix-up.
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("N=4096,K=4096").unwrap();
    let tiles = estimate(&kernel("examples/tinygemm_sm90.py"), sm90(), &shape, &cal).unwrap();
    let stream = estimate(
        &kernel("examples/tinygemm_streamk_sm90.py"),
        sm90(),
        &shape,
        &cal,
    )
    .unwrap();
    assert_eq!(stream.grid.tiles, 64);
    assert_eq!(stream.grid.ctas, 132);
    assert!(tiles.grid.ctas < 132, "{}", tiles.grid.ctas);
    assert_eq!(stream.terms.tail_us, 0.0);
    // The same bytes move either way.
    assert!((stream.dram_bytes - tiles.dram_bytes).abs() < 0.01 * tiles.dram_bytes);
}

#[test]
fn uncalibrated_target_declines() {
    let t = cake_target::lookup("sm_100a").unwrap();
    let err = Calibration::builtin(t).unwrap_err();
    assert!(matches!(err, CostError::NoCalibration { .. }));
    assert_eq!(err.code(), Some("CAKE-V003"));
    let msg = err.to_string();
    assert!(msg.contains("no calibration for sm_100a"), "{msg}");
    // The calibrated targets, each named once however many cards it has tables for.
    assert!(msg.contains("(calibrated: sm_90a;"), "{msg}");
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
    // Without an FP8 probe, FP8 is assumed twice the 16-bit rate, and says so.
    assert!((cal.get("mma_tflops_8bit") - 2.0 * cal.get("mma_tflops_16bit")).abs() < 1e-6);
    assert!(cal.params["mma_tflops_8bit"]
        .source
        .starts_with("[U] twice"));
    // With one, its own rate.
    let mut m8 = m.clone();
    m8["probes"]["wgmma_fp8"] = serde_json::json!({"schedule": "wgmma", "config": "FP8=1",
        "samples": 30, "median_ms": 2.0, "flops": 3.0e12});
    let cal8 = Calibration::from_measurements(&seed, &m8).unwrap();
    assert!((cal8.get("mma_tflops_8bit") - 1500.0).abs() < 1e-6);
    assert!(cal8.params["mma_tflops_8bit"]
        .source
        .contains("kernels/calibrate/wgmma.py FP8=1"));
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

/// The built-in table with extra TOML sections appended.
/// The built-in table without its optional sections (per-N MMA rates, stream table): the
/// single-number model the section tests start from.
fn plain_toml() -> String {
    let full = Calibration::builtin(sm90()).unwrap().to_toml();
    let cut = ["\n[mma_tflops_16bit_by_n]", "\n[tma_stream_gbps]"]
        .iter()
        .filter_map(|h| full.find(h))
        .min()
        .unwrap_or(full.len());
    full[..cut].to_string()
}

fn plain() -> Calibration {
    Calibration::from_toml(&plain_toml()).unwrap()
}

fn with_sections(extra: &str) -> Result<Calibration, CostError> {
    Calibration::from_toml(&format!("{}\n{extra}", plain_toml()))
}

/// The schedule at `path` with each `old` replaced by `new` once: at the start of a line where
/// one starts with it (a module constant, not the same words in the docstring), else the first.
fn kernel_with(path: &str, lines: &[(&str, &str)]) -> cake_ir::Kernel {
    let mut text = std::fs::read_to_string(root().join(path)).unwrap();
    for (old, new) in lines {
        let at = text
            .match_indices(old)
            .map(|(i, _)| i)
            .find(|&i| i == 0 || text.as_bytes()[i - 1] == b'\n')
            .or_else(|| text.find(old));
        let Some(at) = at else {
            panic!("{path}: no `{old}`")
        };
        text.replace_range(at..at + old.len(), new);
    }
    let (_, front) = cake_front::check_bytes(path, text.as_bytes());
    assert!(!front.findings.has_errors(), "{path} must parse");
    front.kernels.into_iter().next().unwrap()
}

const TABLES: &str = r#"
[mma_tflops_16bit_by_n]
n64 = { value = 600.0, source = "test" }
n128 = { value = 700.0, source = "test" }
n256 = { value = 900.0, source = "test" }

[tma_stream_gbps]
bm128_s1 = { value = 3000.0, source = "test" }
bm128_s2 = { value = 6000.0, source = "test" }
bm128_s4 = { value = 10000.0, source = "test" }
bm256_s4 = { value = 11000.0, source = "test" }
"#;

#[test]
fn calibration_tables_parse_and_validate() {
    let cal = with_sections(TABLES).unwrap();
    assert_eq!(
        cal.mma_by_n(),
        [(64.0, 600.0), (128.0, 700.0), (256.0, 900.0)]
    );
    assert_eq!(Calibration::from_toml(&cal.to_toml()).unwrap(), cal);
    // Little's law: a ring of 2 stages whose consumer holds one (the probe's token wgmma
    // releases its stage an iteration late) has 1 x 128 rows x 128 B = 16 KiB in flight per SM;
    // at 6000 GB/s over 132 SMs that is 0.352 µs per round trip, less one handoff.
    // The points are (bytes per µs per SM, µs), by rate.
    let pts = cal.loaded_latency();
    assert_eq!(pts.len(), 4, "{pts:?}");
    let (x, l) = pts[1];
    assert!((x - 6000.0e3 / 132.0).abs() < 1e-9, "{x}");
    let l2_sm = cal.get("l2_gbps") * 1e3 / 132.0;
    let want = 16384.0 / (6000.0e3 / 132.0) - cal.get("barrier_us") - 16384.0 / l2_sm;
    assert!(
        (l - want.max(cal.get("tma_latency_us"))).abs() < 1e-9,
        "{l} vs {want}"
    );
    let (x, l) = pts[3];
    assert!((x - 11000.0e3 / 132.0).abs() < 1e-9, "{x}");
    // 4 stages of 256 rows: 3 x 256 x 128 B in flight.
    assert!((l - (98304.0 / x - cal.get("barrier_us") - 32768.0 / l2_sm)).abs() < 1e-9);
    // Latency never falls with load, never below the unloaded latency.
    assert!(pts.windows(2).all(|w| w[0].1 <= w[1].1));
    assert!(pts[0].1 >= cal.get("tma_latency_us"));
    // Every value positive, with a source; unknown keys and sections refused.
    for (bad, needle) in [
        (
            "[mma_tflops_16bit_by_n]\nn65 = { value = 1.0, source = \"x\" }",
            "unknown key `n65`",
        ),
        (
            "[mma_tflops_16bit_by_n]\nwide = { value = 1.0, source = \"x\" }",
            "unknown key `wide`",
        ),
        (
            "[mma_tflops_16bit_by_n]\nn64 = { value = 0.0, source = \"x\" }",
            "positive",
        ),
        (
            "[mma_tflops_16bit_by_n]\nn64 = { value = 1.0, source = \" \" }",
            "no source",
        ),
        (
            "[tma_stream_gbps]\nbm128 = { value = 1.0, source = \"x\" }",
            "unknown key `bm128`",
        ),
        (
            "[tma_stream_gbps]\nbm128_s0 = { value = 1.0, source = \"x\" }",
            "unknown key",
        ),
        (
            "[tma_stream_gbps]\nbm128_s2 = { value = -3.0, source = \"x\" }",
            "positive",
        ),
        ("[tma_stream_gbps]\nbm128_s2 = { value = 3.0 }", "source"),
        (
            "[mma_rates]\nn64 = { value = 1.0, source = \"x\" }",
            "mma_rates",
        ),
    ] {
        let e = with_sections(bad).unwrap_err().to_string();
        assert!(e.contains(needle), "{bad}: {e}");
    }
    // A table without `named_barrier_us` is incomplete.
    let base = Calibration::builtin(sm90()).unwrap().to_toml();
    let e = Calibration::from_toml(&base.replace("named_barrier_us", "named_barrier_ms"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("named_barrier_us"), "{e}");
}

#[test]
fn calibration_tables_from_measurements() {
    let seed =
        with_sections("[tma_stream_gbps]\nbm64_s1 = { value = 1.0, source = \"guess\" }").unwrap();
    let probe = |cfg: &str, ms: f64, work: &str, v: f64| serde_json::json!({"schedule": "x", "config": cfg, "samples": 30, "median_ms": ms, work: v});
    let m = serde_json::json!({
        "schema": "cake.calibrate/v0", "target": "sm_90a", "date": "2026-11-30",
        "environment": {"gpu": "NVIDIA H200", "driver": "580.159.04", "sm_count": 132,
                        "l2_bytes": 62914560, "clock_max_mhz": 1980.0},
        "probes": {
            "wgmma": probe("BN=256", 2.0, "flops", 1.8e12),
            "wgmma_n64": probe("BN=64", 1.0, "flops", 0.6e12),
            "wgmma_n128": probe("BN=128", 1.0, "flops", 0.75e12),
            "wgmma_chain_n64": probe("BN=64", 1.0, "flops", 0.2e12),
            "wgmma_chain_n256": probe("BN=256", 1.0, "flops", 0.4e12),
            "l2_stream": probe("REUSE=8", 0.1, "bytes", 1.2e9),
            "stream_bm128_s2": probe("BM=128, STAGES=2", 0.2, "bytes", 1.2e9),
            "stream_bm256_s9": {"error": "timed out"},
            "stream_bogus": probe("?", 0.2, "bytes", 1.2e9),
            "named_barrier": probe("REPS=65536", 1.31072, "iterations", 65536.0),
            "barrier": probe("", 0.4096, "iterations", 4096.0),
            "cluster_c2": {"config": "BM=256, STAGES=6, CLUSTER=2", "sm_count": 132, "ctas_per_sm": 1,
                           "cluster": 2, "clusters_at_once": 66, "resident_ctas": 132},
            "cluster_c4": {"config": "BM=256, STAGES=6, CLUSTER=4", "sm_count": 132, "ctas_per_sm": 1,
                           "cluster": 4, "clusters_at_once": 30, "resident_ctas": 120},
            "cluster_c8": {"config": "BM=256, STAGES=6, CLUSTER=8", "sm_count": 132, "ctas_per_sm": 2,
                           "cluster": 8, "clusters_at_once": 30, "resident_ctas": 240}
        }
    });
    let cal = Calibration::from_measurements(&seed, &m).unwrap();
    // Clusters at one CTA per SM enter [cluster_ctas]; a probe that fit two per SM does not.
    assert_eq!(cal.cluster_ctas(2), Some(132.0));
    assert_eq!(cal.cluster_ctas(4), Some(120.0));
    assert!(cal.cluster_ctas["c4"]
        .source
        .contains("30 clusters of 4 at once"));
    assert_eq!(cal.cluster_ctas(8), None);
    assert_eq!(
        cal.mma_by_n(),
        [(64.0, 600.0), (128.0, 750.0), (256.0, 900.0)]
    );
    assert_eq!(cal.get("mma_tflops_16bit"), 900.0);
    assert_eq!(cal.mma_chain_by_n(), [(64.0, 200.0), (256.0, 400.0)]);
    assert!(cal.mma_chain_tflops_16bit_by_n["n64"]
        .source
        .ends_with("one tile per SM"));
    let s = &cal.tma_stream_gbps;
    assert_eq!(s["bm128_s4"].value, 12000.0);
    assert_eq!(s["bm128_s2"].value, 6000.0);
    assert!(s["bm128_s2"]
        .source
        .contains("BM=128, STAGES=2 (median of 30"));
    // An unmeasured entry keeps the seed's, marked; failed or foreign probes add nothing.
    assert!(s["bm64_s1"].source.starts_with("seed: "));
    assert_eq!(s.len(), 3, "{s:?}");
    assert!((cal.get("named_barrier_us") - 0.02).abs() < 1e-9);
    assert!(cal.params["named_barrier_us"].source.contains("REPS=65536"));
    assert_eq!(Calibration::from_toml(&cal.to_toml()).unwrap(), cal);
}

#[test]
fn model_uses_the_per_n_rate() {
    let shape = parse_shape("M=4096,N=4096,K=4096").unwrap();
    let plain = plain();
    let tables = with_sections(TABLES).unwrap();
    let tensor = |k: &cake_ir::Kernel, c: &Calibration| {
        let e = estimate(k, sm90(), &shape, c).unwrap();
        (e.terms.tensor_us, e.assumptions)
    };
    // N = 128: 700 instead of the single rate: the tensor term grows by that ratio.
    let bn128 = kernel_with(
        "examples/gemm_sm90.py",
        &[("BM, BN, BK = 128, 256, 64", "BM, BN, BK = 128, 128, 64")],
    );
    let (t0, a0) = tensor(&bn128, &plain);
    let (t1, a1) = tensor(&bn128, &tables);
    let ratio = plain.get("mma_tflops_16bit") / 700.0;
    assert!((t1 / t0 - ratio).abs() < 1e-6, "{t0} -> {t1}");
    assert!(
        a0.iter()
            .any(|a| a.contains("no measured wgmma rate for N = 128")),
        "{a0:?}"
    );
    assert!(!a1.iter().any(|a| a.contains("wgmma rate")), "{a1:?}");
    // N = 256 at 900 instead of the single rate; between points the rate is interpolated.
    let bn256 = kernel("examples/gemm_sm90.py");
    let (u0, _) = tensor(&bn256, &plain);
    let (u1, _) = tensor(&bn256, &tables);
    let single = plain.get("mma_tflops_16bit");
    assert!((u1 / u0 - single / 900.0).abs() < 1e-6, "{u0} -> {u1}");
    let bn192 = kernel_with(
        "examples/gemm_sm90.py",
        &[("BM, BN, BK = 128, 256, 64", "BM, BN, BK = 128, 192, 64")],
    );
    let (v0, _) = tensor(&bn192, &plain);
    let (v1, _) = tensor(&bn192, &tables);
    assert!((v1 / v0 - single / 800.0).abs() < 1e-6, "{v0} -> {v1}");
    // A table that lacks the shape falls back to the single rate, and says so.
    let only64 =
        with_sections("[mma_tflops_16bit_by_n]\nn64 = { value = 100.0, source = \"t\" }").unwrap();
    let (w, a) = tensor(&bn256, &only64);
    assert!((w - u0).abs() < 1e-9);
    assert!(
        a.iter()
            .any(|a| a.contains("N = 256") && a.contains("cover 64")),
        "{a:?}"
    );
}

#[test]
fn model_uses_the_loaded_latency() {
    let shape = parse_shape("M=4096,N=7168,K=4096").unwrap();
    let plain = plain();
    let tables = with_sections(TABLES).unwrap();
    let ring = |stages: &str, c: &Calibration| {
        let k = kernel_with("examples/gemm_sm90.py", &[("STAGES = 3", stages)]);
        let e = estimate(&k, sm90(), &shape, c).unwrap();
        (e.loops[0].ring_us, e.time_us, e.assumptions)
    };
    let (r2, t2, a2) = ring("STAGES = 2", &plain);
    let (r2l, t2l, a2l) = ring("STAGES = 2", &tables);
    let (r4, t4, _) = ring("STAGES = 4", &plain);
    let (r4l, t4l, _) = ring("STAGES = 4", &tables);
    assert!(
        a2.iter().any(|a| a.contains("unloaded tma_latency_us")),
        "{a2:?}"
    );
    assert!(!a2l.iter().any(|a| a.contains("unloaded")), "{a2l:?}");
    // The iteration is the fixed point of max(load, consume, ring) with the ring's latency
    // at the rate the iteration draws (48 KiB per iteration per SM): above the unloaded latency.
    let e = estimate(
        &kernel_with("examples/gemm_sm90.py", &[("STAGES = 3", "STAGES = 2")]),
        sm90(),
        &shape,
        &tables,
    )
    .unwrap();
    let l = &e.loops[0];
    assert!((l.iteration_us - l.ring_us).abs() < 1e-6, "{l:?}");
    let rate = l.load_bytes / l.iteration_us;
    let pts = tables.loaded_latency();
    let i = pts.iter().position(|p| p.0 >= rate).unwrap();
    let (p0, p1) = (
        if i == 0 {
            (0.0, tables.get("tma_latency_us"))
        } else {
            pts[i - 1]
        },
        pts[i],
    );
    let lat = p0.1 + (p1.1 - p0.1) * (rate - p0.0) / (p1.0 - p0.0);
    // The wgmma holds its stage until the next stage's wait (its release is deferred), so of
    // two stages one covers the latency, and the consume is inside that hold.
    assert!(l.deferred_release, "{l:?}");
    let want = (lat + l.load_us + l.handoff_us) / 1.0;
    assert!((r2l - want).abs() < 1e-6, "{r2l} vs {want} at {rate} B/µs");
    assert!(r2l > r2 && t2l > t2, "{r2} -> {r2l}, {t2} -> {t2l}");
    // Deeper rings divide the loaded latency by more stages: 2 -> 4 stages gains more with it.
    assert!(t2l / t4l > t2 / t4, "{t2}/{t4} vs {t2l}/{t4l}");
    assert!(r4l < r2l && r4 < r2);
}

#[test]
fn model_charges_named_barrier_syncs() {
    let k = kernel("kernels/calibrate/named_barrier.py");
    let shape = parse_shape("M=256,REPS=10000").unwrap();
    let cal = Calibration::builtin(sm90()).unwrap();
    let slow = Calibration::from_toml(&cal.to_toml().replace(
        &format!(
            "named_barrier_us = {{ value = {:?}",
            cal.get("named_barrier_us")
        ),
        "named_barrier_us = { value = 0.5",
    ))
    .unwrap();
    assert_eq!(slow.get("named_barrier_us"), 0.5);
    let t0 = estimate(&k, sm90(), &shape, &cal).unwrap();
    let t1 = estimate(&k, sm90(), &shape, &slow).unwrap();
    let d = t1.loops[0].iteration_us - t0.loops[0].iteration_us;
    let want = 0.5 - cal.get("named_barrier_us");
    assert!((d - want).abs() < 1e-9, "{d} vs {want}");
    assert!(t1.time_us > t0.time_us + 10000.0 * want * 0.99);
    // The mbarrier handoff is not what a named barrier costs.
    let bar = Calibration::from_toml(&cal.to_toml().replace(
        &format!("\nbarrier_us = {{ value = {:?}", cal.get("barrier_us")),
        "\nbarrier_us = { value = 0.5",
    ))
    .unwrap();
    assert_eq!(bar.get("barrier_us"), 0.5);
    let t2 = estimate(&k, sm90(), &shape, &bar).unwrap();
    assert!((t2.time_us - t0.time_us).abs() < 1e-9);
}

/// An argmin epilogue: min and argmin of one value share a pass (FSETP + two SELs per
/// element); packed keys make it an LOP3 and an FMNMX, so the epilogue term shrinks by a third
/// of its reduction work and nothing else changes.
#[test]
fn packed_argmin_costs_two_alu_operations_per_element() {
    let shape = parse_shape("B=32,N=65536,K=1024").unwrap();
    let cal = Calibration::builtin(sm90()).unwrap();
    let exact = kernel("kernels/kmeans/variants/kmeans_assign_2wg_sm90.py");
    let packed = kernel_with(
        "kernels/kmeans/variants/kmeans_assign_2wg_sm90.py",
        &[
            ("lm.min(dist, axis=1)", "lm.min(dist, axis=1, packed=True)"),
            (
                "lm.argmin(dist, axis=1)",
                "lm.argmin(dist, axis=1, packed=True)",
            ),
        ],
    );
    // Only one of the pair packed: two passes, the exact one and the packed one.
    let mixed = kernel_with(
        "kernels/kmeans/variants/kmeans_assign_2wg_sm90.py",
        &[("lm.min(dist, axis=1)", "lm.min(dist, axis=1, packed=True)")],
    );
    let epilogue =
        |k: &cake_ir::Kernel| estimate(k, sm90(), &shape, &cal).unwrap().terms.epilogue_us;
    let (e, p, m) = (epilogue(&exact), epilogue(&packed), epilogue(&mixed));
    assert!(p < e && e < m, "exact {e}, packed {p}, mixed {m}");
}

/// Registers over a role's budget are spilled, each reloaded and stored once per iteration at
/// L1 latency: the attention example's 192-key tiles (212 registers in fragments and the wgmma
/// working set of 26 against 232; ptxas spilled 48 B) are charged, its 176-key tiles (200) are
/// not, and the charge is the formula's.
#[test]
fn model_charges_registers_over_the_budget() {
    let shape = parse_shape("BH=128,BHKV=128,S=8192").unwrap();
    let cal = Calibration::builtin(sm90()).unwrap();
    let path = "examples/attention_sm90.py";
    let at = |bn: &str| {
        let k = kernel_with(path, &[("BN = 128 ", &format!("BN = {bn} "))]);
        estimate(&k, sm90(), &shape, &cal).unwrap()
    };
    let spills = |e: &cake_cost::Estimate| e.assumptions.iter().any(|a| a.contains("ptxas spills"));
    let (b176, b192) = (at("176"), at("192"));
    assert!(!spills(&b176), "{:?}", b176.assumptions);
    assert!(spills(&b192), "{:?}", b192.assumptions);
    let lp = b192
        .loops
        .iter()
        .find(|l| l.role.contains("math"))
        .expect("the math loop");
    let charged = 6.0 * 2.0 * 33.0 / (cal.get("clock_ghz") * 1e3);
    assert!(
        b192.assumptions
            .iter()
            .any(|a| a.contains("6 registers per thread more")
                && a.contains(&format!("{charged:.3} µs"))),
        "{:?}",
        b192.assumptions
    );
    assert!(lp.iteration_us >= charged);
    // The charge reaches the total (a rounding residue in the pipeline's latency split once
    // overwrote it): the spilling tiles rank below the shipped ones, at D = 64 too.
    assert!(b192.time_us > at("128").time_us);
    // With the H200 table of the run that exposed it.
    let measured = std::fs::read_to_string(
        root().join("bench/results/2026-12-02-cost-accuracy/2-held-out/sm_90a.toml"),
    )
    .unwrap();
    let h200 = Calibration::from_toml(&measured).unwrap();
    let d64 = |bn: &str| {
        let k = kernel_with(
            path,
            &[
                ("D = 128 ", "D = 64 "),
                ("BN = 128 ", &format!("BN = {bn} ")),
            ],
        );
        estimate(&k, sm90(), &shape, &h200).unwrap()
    };
    let (shipped, wide) = (d64("128"), d64("192"));
    assert!(
        wide.terms.latency_us > 0.5 * (wide.time_us - shipped.time_us),
        "{:?}",
        wide.terms
    );
    assert!(wide.time_us > 1.3 * shipped.time_us);
}

/// Global atomic adds: adds to one destination are serialized, so the rate grows with the
/// destinations in use (as a power of them) up to the L2's rate, or the DRAM's when they do
/// not fit L2. `zero=` tensors cost a fill each; the span (what CUPTI sees) leaves out the
/// launch.
#[test]
fn atomics_pay_for_contention_and_zeroed_outputs_for_their_fill() {
    let cal = Calibration::builtin(sm90()).unwrap();
    let k = kernel("kernels/calibrate/atomic.py");
    let at = |n: i64, kk: i64| {
        estimate(
            &k,
            sm90(),
            &parse_shape(&format!("N={n},K={kk}")).unwrap(),
            &cal,
        )
        .unwrap()
    };
    let n = 1 << 20;
    let reds = (n * 128 / 4) as f64;
    let near = |e: &cake_cost::Estimate, want: f64| {
        assert!(
            e.span_us > want && e.span_us < want * 1.1,
            "{} vs {want}",
            e.span_us
        )
    };
    // Every row on one row of 32 destinations; on 64 rows (2048 destinations).
    near(&at(n, 1), reds / (cal.get("red_contended_gops") * 1e3));
    let r64 = cal.get("red_contended_gops") * 64f64.powf(cal.get("red_contention_exponent"));
    near(&at(n, 64), reds / (r64.min(cal.get("red_gops")) * 1e3));
    // 512 KiB of sums over 32 768 destinations: the L2's rate; 512 MiB: the DRAM's.
    let (l2, dram) = (at(n, 1024), at(n, n));
    near(&l2, reds / (cal.get("red_gops") * 1e3));
    near(&dram, reds / (cal.get("red_dram_gops") * 1e3));
    for e in [&at(n, 1), &l2, &dram] {
        assert!(e.span_us < e.time_us);
        assert!(e
            .assumptions
            .iter()
            .any(|a| a.contains("global atomic adds land on the destinations in use uniformly")));
    }

    // The zeroed twin at a few rows: the fill of 512 MiB (a launch of its own), then the kernel.
    let z = kernel_with("kernels/calibrate/atomic.py", &[("ZERO = 0 ", "ZERO = 1 ")]);
    let shape = parse_shape(&format!("N=16,K={n}")).unwrap();
    let e = estimate(&z, sm90(), &shape, &cal).unwrap();
    let plain = estimate(&k, sm90(), &shape, &cal).unwrap();
    let fill = (n * 128 * 4) as f64 / (cal.get("memset_gbps") * 1e3);
    assert!((e.span_us - plain.span_us - fill - cal.get("kernel_span_us")).abs() < 1e-6);
    // A small fill is quicker than the host's next launch: the GPU waits for that instead.
    let small = parse_shape("N=16,K=16").unwrap();
    let gap = estimate(&z, sm90(), &small, &cal).unwrap().span_us
        - estimate(&k, sm90(), &small, &cal).unwrap().span_us;
    assert!((gap - (cal.get("launch_us") - cal.get("kernel_span_us"))).abs() < 1e-6);
    // A one-CTA kernel of a few rows spans what the table measured for one; in a cluster of
    // two, what a cluster launch adds too.
    let one = at(16, 16);
    assert!(
        (one.span_us - cal.get("kernel_span_us")).abs() < 0.5,
        "{}",
        one.span_us
    );
    let c = kernel_with(
        "kernels/calibrate/atomic.py",
        &[("CLUSTER = 1 ", "CLUSTER = 2 ")],
    );
    let pair = estimate(&c, sm90(), &parse_shape("N=32,K=16").unwrap(), &cal).unwrap();
    let two = at(32, 16);
    assert!((pair.span_us - two.span_us - cal.get("cluster_start_us")).abs() < 1e-6);
}

/// `cake calibrate`'s probes give the new parameters: the launch probe's CUPTI span, the fill
/// rate, and the atomic rates with the contention halfway between them.
#[test]
fn calibration_derives_the_span_the_fill_and_the_atomic_rates() {
    let seed = Calibration::builtin(sm90()).unwrap();
    let m: serde_json::Value = serde_json::from_str(
        r#"{"schema": "cake.calibrate/v0", "target": "sm_90a", "date": "2026-12-02",
            "environment": {"gpu": "NVIDIA H200", "driver": "580", "sm_count": 132},
            "probes": {
              "launch": {"median_ms": 0.007, "samples": 30},
              "empty_span": {"median_ms": 0.006, "span_median_ms": 0.002, "samples": 30},
              "cluster_span": {"median_ms": 0.006, "span_median_ms": 0.003, "samples": 30},
              "memset": {"median_ms": 0.2, "bytes": 6.0e8, "samples": 30},
              "atomic_spread": {"median_ms": 0.5, "reds": 4.0e7, "per_target": 1.0, "samples": 30},
              "atomic_contended": {"median_ms": 10.0, "reds": 4.0e7, "per_target": 1.0e6, "samples": 30},
              "atomic_contended64": {"median_ms": 1.25, "reds": 4.0e7, "per_target": 1.6e4, "samples": 30},
              "atomic_mid": {"median_ms": 0.4, "reds": 4.0e7, "per_target": 1024.0, "samples": 30}
            }}"#,
    )
    .unwrap();
    let c = Calibration::from_measurements(&seed, &m).unwrap();
    assert_eq!(c.get("kernel_span_us"), 2.0);
    assert_eq!(c.get("cluster_start_us"), 1.0);
    assert_eq!(c.get("memset_gbps"), 3000.0);
    assert_eq!(c.get("red_gops"), 100.0);
    assert_eq!(c.get("red_dram_gops"), 80.0);
    assert_eq!(c.get("red_contended_gops"), 4.0);
    // Eight times the rate on 64 times the destinations: exponent ½.
    assert!((c.get("red_contention_exponent") - 0.5).abs() < 1e-9);
    // A table written before these parameters existed still loads, with the built-in values.
    let old = std::fs::read_to_string(
        root().join("bench/results/2026-12-02-cost-accuracy/2-held-out/sm_90a.toml"),
    )
    .unwrap();
    let c = Calibration::from_toml(&old).unwrap();
    assert_eq!(c.get("red_gops"), seed.get("red_gops"));
}

/// The built-in table with one parameter's value replaced.
fn builtin_with(name: &str, value: f64) -> Calibration {
    let text = Calibration::builtin(sm90()).unwrap().to_toml();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{name} = ")))
        .unwrap_or_else(|| panic!("no `{name}` in the built-in table"));
    let new = format!("{name} = {{ value = {value}, source = \"test\" }}");
    Calibration::from_toml(&text.replacen(line, &new, 1)).unwrap()
}

/// The harness's write-flush: a weight-streaming kernel's DRAM loads carry the writeback of the
/// dirty lines they evict, less of it when its copies are `evict="first"`; one SM's copies
/// never draw more than `sm_dram_gbps`.
#[test]
fn flush_writeback_evict_first_and_the_per_sm_cap() {
    let shape = parse_shape("N=4096,K=4096").unwrap();
    let tiny = |evict: &str| {
        kernel_with(
            "examples/tinygemm_sm90.py",
            &[
                ("NW = 2048 ", "NW = 4096 "),
                ("EVICT_FIRST = 1", &format!("EVICT_FIRST = {evict}")),
            ],
        )
    };
    let (plain, first) = (tiny("0"), tiny("1"));
    let span =
        |k: &cake_ir::Kernel, cal: &Calibration| estimate(k, sm90(), &shape, cal).unwrap().span_us;
    let cal = Calibration::builtin(sm90()).unwrap();
    let clean = builtin_with("flush_dirty_fraction", 1e-9);
    assert!(
        span(&plain, &cal) > span(&plain, &clean) * 1.1,
        "the writeback of a 32 MB weight is charged: {} against {}",
        span(&plain, &cal),
        span(&plain, &clean)
    );
    assert!(
        span(&first, &cal) < span(&plain, &cal),
        "evict_first evicts fewer dirty lines"
    );
    assert!(span(&first, &cal) > span(&plain, &clean));
    // The weight copied by the producer's threads (`cp_async(..., evict="first")`) is charged
    // as the TMA copy with the same priority.
    // (The lowering refuses the priority on cp_async for now; the model costs what it asks.)
    let threads = |evict: &str| {
        kernel_with(
            "examples/tinygemm_sm90.py",
            &[
                ("NW = 2048 ", "NW = 4096 "),
                ("CP_ASYNC = 0", "CP_ASYNC = 1"),
                (
                    "barrier=full)\n                else:",
                    &format!("barrier=full, evict={evict})\n                else:"),
                ),
            ],
        )
    };
    let (cp_plain, cp_first) = (threads("None"), threads("\"first\""));
    assert!(span(&cp_first, &cal) < span(&cp_plain, &cal));
    assert!((span(&cp_first, &cal) - span(&first, &cal)).abs() < 0.02 * span(&first, &cal));
    // 64 CTAs at 1 GB/s each cannot stream 32 MB in the DRAM-bound time.
    let capped = builtin_with("sm_dram_gbps", 1.0);
    assert!(span(&plain, &capped) > 2.0 * span(&plain, &cal));
}

/// A row-layout kernel's per-column vectors (A's two rows in the GEMV, read from L2 by every
/// CTA) are charged at the SM's share of L2: four CTAs resident on an SM take turns in the wave,
/// so dividing by them as well charged the vectors four times (predicted 99 µs against 33.5
/// measured on the H200, bench/results/2026-12-05-row-model/). They still cost what L2 serves.
#[test]
fn row_vectors_are_charged_once_per_sm() {
    let gemv = kernel_with(
        "examples/gemv_sm90.py",
        &[("K = 4096 ", "K = 14336 "), ("MT = 1 ", "MT = 2 ")],
    );
    let shape = parse_shape("M=2,N=4096").unwrap();
    let cal = Calibration::builtin(sm90()).unwrap();
    let e = estimate(&gemv, sm90(), &shape, &cal).unwrap();
    assert_eq!(e.grid.ctas_per_sm, 4, "{:?}", e.grid);
    assert!(
        e.span_us < 1.8 * e.speed_of_light_us,
        "span {} against the speed of light {}",
        e.span_us,
        e.speed_of_light_us
    );
    let slow_l2 = builtin_with("l2_gbps", 1500.0);
    let slow = estimate(&gemv, sm90(), &shape, &slow_l2).unwrap();
    assert!(
        slow.span_us > 1.5 * e.span_us,
        "235 MB of vector reads at 1.5 TB/s: {} against {}",
        slow.span_us,
        e.span_us
    );
}

/// `acc_issue_ratio` charges indexed reductions and per-column loads in accumulator layouts
/// (k-means assign's fold), and nothing of attention's softmax.
#[test]
fn acc_issue_ratio_charges_indexed_reductions_only() {
    let cal = Calibration::builtin(sm90()).unwrap();
    let one = builtin_with("acc_issue_ratio", 1.0);
    let epilogue = |k: &cake_ir::Kernel, shape: &str, cal: &Calibration| {
        let e = estimate(k, sm90(), &parse_shape(shape).unwrap(), cal).unwrap();
        e.terms.epilogue_us + e.terms.tensor_us
    };
    let assign = kernel("examples/kmeans_assign_stream_sm90.py");
    let s = "B=2,N=135704,K=17136";
    assert!(epilogue(&assign, s, &cal) > 1.2 * epilogue(&assign, s, &one));
    let attention = kernel("examples/attention_sm90.py");
    let s = "BH=64,BHKV=8,S=4096";
    assert_eq!(epilogue(&attention, s, &cal), epilogue(&attention, s, &one));
}

/// Warpgroups whose element-wise results feed an MMA of the same iteration (attention's P·V)
/// hide (W - 1)/W of the shorter phase behind each other's MMAs, deferred or not; warpgroups
/// whose element-wise work only reads the accumulator (k-means assign's argmin) run in
/// lockstep, MMA then element-wise.
#[test]
fn warpgroups_overlap_where_element_wise_results_feed_an_mma() {
    let cal = Calibration::builtin(sm90()).unwrap();
    let main_loop = |k: &cake_ir::Kernel, shape: &str| {
        let e = estimate(k, sm90(), &parse_shape(shape).unwrap(), &cal).unwrap();
        e.loops
            .into_iter()
            .find(|l| l.mma_us > 0.0)
            .expect("a loop issuing MMAs")
    };
    let s = "BH=64,BHKV=8,S=4096";
    let line = "CONSUMERS = 3 if D == 64 else 2";
    for (consumers, w) in [("CONSUMERS = 2", 2.0), ("CONSUMERS = 3", 3.0)] {
        let deferred = kernel_with(
            "examples/attention_sm90.py",
            &[
                ("D = 128            #", "D = 64            #"),
                (line, consumers),
            ],
        );
        let plain = kernel_with(
            "examples/attention_sm90.py",
            &[
                ("D = 128            #", "D = 64            #"),
                (line, consumers),
                (", defer=True)", ")"),
            ],
        );
        for k in [&deferred, &plain] {
            let l = main_loop(k, s);
            let hidden = l.mma_us.min(l.alu_us) * (w - 1.0) / w;
            let want = l.mma_us + l.alu_us - hidden;
            assert!(
                (l.consume_us - want).abs() < 1e-9 * want,
                "{consumers}: consume {} against {want}",
                l.consume_us
            );
        }
        assert_eq!(
            main_loop(&deferred, s).consume_us,
            main_loop(&plain, s).consume_us
        );
    }
    let assign = kernel("examples/kmeans_assign_sm90.py");
    let l = main_loop(&assign, "B=32,N=65536,K=1024");
    assert!(
        (l.consume_us - (l.mma_us + l.alu_us)).abs() < 1e-9 * l.consume_us,
        "lockstep: {} against {} + {}",
        l.consume_us,
        l.mma_us,
        l.alu_us
    );
}

/// With a measured rate for one warpgroup's chain of dependent MMAs, an SM whose resident
/// warpgroups issue fewer chains than reach the per-N rate runs its MMAs at the chains' rate:
/// tinygemm's lone consumer warpgroup slows; a GEMM whose two consumers' chains reach the rate
/// does not.
#[test]
fn too_few_mma_chains_cannot_reach_the_tensor_rate() {
    let base = Calibration::builtin(sm90()).unwrap();
    let with_chain = |tflops: f64| {
        let mut c = base.clone();
        c.mma_chain_tflops_16bit_by_n = [64, 256]
            .into_iter()
            .map(|n| {
                (
                    format!("n{n}"),
                    cake_cost::Param {
                        value: tflops,
                        source: "test".into(),
                    },
                )
            })
            .collect();
        c
    };
    let tensor = |k: &cake_ir::Kernel, shape: &str, cal: &Calibration| {
        estimate(k, sm90(), &parse_shape(shape).unwrap(), cal)
            .unwrap()
            .terms
            .tensor_us
    };
    let gemm = kernel("examples/gemm_sm90.py");
    let s = "M=4096,N=7168,K=4096";
    let full = tensor(&gemm, s, &base);
    assert_eq!(tensor(&gemm, s, &with_chain(600.0)), full);
    assert!(tensor(&gemm, s, &with_chain(200.0)) > 1.5 * full);
    let tiny = kernel_with(
        "examples/tinygemm_sm90.py",
        &[("M = 8 ", "M = 128 "), ("NW = 2048 ", "NW = 4096 ")],
    );
    let s = "N=4096,K=14336";
    assert!(tensor(&tiny, s, &with_chain(300.0)) > 1.5 * tensor(&tiny, s, &base));
    // The table round-trips through TOML and is validated like the per-N one.
    let c = with_chain(300.0);
    assert_eq!(Calibration::from_toml(&c.to_toml()).unwrap(), c);
    let bad = c
        .to_toml()
        .replace("n64 = { value = 300.0", "m64 = { value = 300.0");
    let e = Calibration::from_toml(&bad).unwrap_err().to_string();
    assert!(e.contains("[mma_chain_tflops_16bit_by_n]"), "{e}");
}

#[test]
fn a_loop_split_into_an_outer_loop_over_runs_costs_what_the_flat_loop_does() {
    // tests/check/D006_outer_loop_over_runs_of_boxes.py walks K as `kc` over runs of four
    // pipelined steps `k`; flattened, the same steps. The inner loop runs once per `kc` (its trips
    // multiply), and an iteration of `kc` is its four steps (not added after them): until the
    // cost model counted so, the nested form was costed with 4 steps per tile.
    let path = "tests/check/D006_outer_loop_over_runs_of_boxes.py";
    let nested = std::fs::read_to_string(root().join(path)).unwrap();
    let flat = nested
        .replace(
            "            for kc in lm.range(lm.cdiv(K, 4 * BK)):\n                for k in lm.range(4, pipeline=pipe):\n                    lm.wait(empty)\n                    sA.tma_load(A, coords=(tm * BM, kc * (4 * BK) + k * BK), barrier=full)\n                    sB.tma_load(B, coords=(tn * BN, kc * (4 * BK) + k * BK), barrier=full)",
            "            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):\n                lm.wait(empty)\n                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)\n                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)",
        )
        .replace(
            "            for kc in lm.range(lm.cdiv(K, 4 * BK)):\n                for k in lm.range(4, pipeline=pipe):\n                    lm.wait(full)\n                    lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=kc + k > 0, release=empty)",
            "            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):\n                lm.wait(full)\n                lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0, release=empty)",
        );
    assert!(!flat.contains("for kc in"), "both loops flattened");
    let parse = |name: &str, text: &str| {
        let (_, front) = cake_front::check_bytes(name, text.as_bytes());
        assert!(!front.findings.has_errors(), "{name} must check");
        front.kernels.into_iter().next().unwrap()
    };
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("M=4096,N=7168,K=4096").unwrap();
    let n = estimate(&parse("nested.py", &nested), sm90(), &shape, &cal).unwrap();
    let f = estimate(&parse("flat.py", &flat), sm90(), &shape, &cal).unwrap();
    assert_eq!((n.flops, n.dram_bytes), (f.flops, f.dram_bytes));
    assert!(
        (n.time_us - f.time_us).abs() < 0.01 * f.time_us,
        "nested {} µs against flat {} µs",
        n.time_us,
        f.time_us
    );
}

#[test]
fn clusters_that_a_gpc_cannot_hold_run_another_wave() {
    // The tinygemm at 2048 x 7168, split four ways: 32 tiles x 4 = 128 CTAs in 32 clusters of
    // four. On the H100 measured only 30 clusters of four run at once (120 SMs), so two of
    // them make a second wave; split two ways, 64 clusters of two fit on all 132 SMs.
    let split = |ways: &str| {
        kernel_with(
            "examples/tinygemm_sm90.py",
            &[
                ("\nBK = 64\n", "\nBK = 128\n"),
                ("\nSPLIT_WAYS = 2 ", &format!("\nSPLIT_WAYS = {ways} ")),
            ],
        )
    };
    let shape = parse_shape("N=2048,K=7168").unwrap();
    let cal = Calibration::builtin(sm90()).unwrap();
    assert_eq!(cal.cluster_ctas(4), Some(120.0));
    assert_eq!(cal.cluster_ctas(3), None, "a size not measured");
    let four = estimate(&split("4"), sm90(), &shape, &cal).unwrap();
    let two = estimate(&split("2"), sm90(), &shape, &cal).unwrap();
    assert_eq!((four.grid.cluster, four.grid.cluster_sms), (4, Some(120)));
    assert_eq!((two.grid.cluster, two.grid.cluster_sms), (2, None));
    assert!(four.grid.waves > 1.0 && two.grid.waves <= 1.0);
    // Measured 19.3-19.9 us against 15.1-15.3 on an H100 (bench/results/2026-12-06-grid/ c2).
    assert!(
        four.span_us > 1.15 * two.span_us,
        "{} vs {}",
        four.span_us,
        two.span_us
    );
    let tail = four
        .hints
        .iter()
        .find(|h| h.code == "CAKE-P004")
        .unwrap_or_else(|| panic!("{:?}", four.hints));
    assert!(
        tail.message.contains("only 30 clusters of 4 run at once"),
        "{}",
        tail.message
    );
    assert!(
        tail.help
            .as_deref()
            .unwrap_or("")
            .contains("at most 30 clusters of 4"),
        "{:?}",
        tail.help
    );
    assert!(four
        .render()
        .contains("clusters of 4: at most 30 at once, on 120 SMs"));
    // Without the section the model knows no GPCs: every SM takes a CTA.
    let bare = plain();
    let four = estimate(&split("4"), sm90(), &shape, &bare).unwrap();
    assert_eq!(four.grid.cluster_sms, None);
    assert!(four.grid.waves <= 1.0);
    // The section is validated like the others.
    for (bad, needle) in [
        (
            "[cluster_ctas]\nc1 = { value = 1.0, source = \"x\" }",
            "unknown key `c1`",
        ),
        (
            "[cluster_ctas]\nc4 = { value = 200.0, source = \"x\" }",
            "more CTAs than",
        ),
        ("[cluster_ctas]\nc4 = { value = 120.0 }", "source"),
    ] {
        let e = with_sections(bad).unwrap_err().to_string();
        assert!(e.contains(needle), "{bad}: {e}");
    }
    let cal = with_sections("[cluster_ctas]\nc8 = { value = 120.0, source = \"x\" }").unwrap();
    assert_eq!(Calibration::from_toml(&cal.to_toml()).unwrap(), cal);
}

#[test]
fn the_tail_wave_help_keeps_the_mma_extent_and_splits_a_short_grid() {
    // 64 tiles of 64 weight rows (wgmma's M): half a wave. Tiles of 32 rows would fill it,
    // but wgmma cannot take them; the help names a split of K instead.
    let k = kernel_with(
        "examples/tinygemm_sm90.py",
        &[
            ("\nNW = 2048 ", "\nNW = 4096 "),
            ("\nBK = 64\n", "\nBK = 256\n"),
        ],
    );
    let cal = Calibration::builtin(sm90()).unwrap();
    let e = estimate(&k, sm90(), &parse_shape("N=4096,K=4096").unwrap(), &cal).unwrap();
    let tail = e
        .hints
        .iter()
        .find(|h| h.code == "CAKE-P004")
        .unwrap_or_else(|| panic!("{:?}", e.hints));
    let help = tail.help.as_deref().unwrap_or("");
    assert!(!help.contains("tiles of 32"), "{help}");
    assert!(help.contains("split the contraction"), "{help}");
}

#[test]
fn stream_k_pays_for_every_partial_the_ending_run_adds() {
    // At M = 128, N = 4096: 16 tiles of 128 x 256 spread over 132 CTAs are ~8 runs each, whose
    // ending run adds 128 KB partials one after another; 32 tiles of 128 x 128 are ~5 runs of
    // 64 KB. Measured 51.1 against 26.6 us on an H100 (bench/results/2026-12-07-clusters/ c10).
    let wide = kernel("examples/gemm_streamk_sm90.py");
    let narrow = kernel_with(
        "examples/gemm_streamk_sm90.py",
        &[
            ("BM, BN, BK = 128, 256, 64", "BM, BN, BK = 128, 128, 64"),
            ("\nSTAGES = 3 ", "\nSTAGES = 5 "),
        ],
    );
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("M=128,N=4096,K=4096").unwrap();
    let w = estimate(&wide, sm90(), &shape, &cal).unwrap();
    let n = estimate(&narrow, sm90(), &shape, &cal).unwrap();
    assert!(
        w.span_us > 1.3 * n.span_us,
        "{} vs {}",
        w.span_us,
        n.span_us
    );
    // Where tiles outnumber the CTAs, whole waves run data-parallel: the fix-up stays small.
    let big = estimate(
        &wide,
        sm90(),
        &parse_shape("M=4096,N=7168,K=4096").unwrap(),
        &cal,
    )
    .unwrap();
    assert!(big.terms.latency_us < 0.02 * big.time_us, "{:?}", big.terms);
}

/// Thread operations summed over every role: before its loops, in them and after.
fn thread_ops(k: &cake_ir::Kernel, shape: &std::collections::BTreeMap<String, i64>) -> f64 {
    cake_cost::analyze::analyze(k, shape)
        .roles
        .iter()
        .map(|r| {
            r.before.alu_ops + r.after.alu_ops + r.loops.iter().map(|l| l.work.alu_ops).sum::<f64>()
        })
        .sum()
}

/// A tile stored transposed into shared memory (`view.T.store`) goes in by `stmatrix .x4 .trans`,
/// eight 16-bit elements a store, where a plain `view.store` takes a pair a store: at M = 64 (a
/// 64 × 64 tile, where both forms parse) the kernel's thread operations differ by exactly
/// 4096 / 2 − 4096 / 8 per tile.
#[test]
fn a_transposed_shared_store_costs_a_store_per_eight_elements() {
    let shape = parse_shape("M=64,N=4096,K=4096").unwrap();
    let staged = [
        ("M = 8 ", "M = 64 "),
        ("NW = 2048", "NW = 4096"),
        ("STAGED_STORE = 0", "STAGED_STORE = 1"),
    ];
    let transposed = kernel_with("examples/tinygemm_sm90.py", &staged);
    let mut plain_lines = staged.to_vec();
    plain_lines.push((
        "sC.T.store(lm.cast(acc, lm.bf16))",
        "sC.store(lm.cast(acc, lm.bf16))",
    ));
    let plain = kernel_with("examples/tinygemm_sm90.py", &plain_lines);
    let (t, p) = (thread_ops(&transposed, &shape), thread_ops(&plain, &shape));
    assert_eq!(
        p - t,
        4096.0 / 2.0 - 4096.0 / 8.0,
        "plain {p}, transposed {t}"
    );
}

/// One value per row of a 64-row tile (`part.rows(row0, 64).store(best)`) is held by the four
/// threads of a quad, and each thread issues the predicated store of both its rows: four store
/// instructions per element, where a tile's pair store is half of one. A second store of the
/// same value adds exactly its stores (the value's own operations are counted once), in each of
/// the three consumer warpgroups (D = 128).
#[test]
fn a_per_row_shared_store_costs_four_stores_per_row() {
    let shape = parse_shape("B=1,N=16384,K=1024,D=128").unwrap();
    let store = "part_d.rows(row0, 64).store(best_d)";
    let once = kernel_with("examples/kmeans_assign_split_sm90.py", &[]);
    let twice = kernel_with(
        "examples/kmeans_assign_split_sm90.py",
        &[(
            &format!("            {store}"),
            &format!("            {store}\n            {store}"),
        )],
    );
    let (a, b) = (thread_ops(&once, &shape), thread_ops(&twice, &shape));
    assert_eq!(b - a, 3.0 * 64.0 * 4.0, "once {a}, twice {b}");
}

/// One warpgroup that waits for the TMA copies it issues keeps in flight only those it issues
/// early (`with lm.ahead(n):`), not its whole ring: with n = 0 one of the three stages is, with
/// n = 1 two are, and the estimate falls with n. Its P003 hint names the `lm.ahead` to write, one
/// fewer than stages − 1 since the wgmma hands each stage back an iteration late.
#[test]
fn a_role_alone_on_its_pipeline_has_in_flight_what_it_issues_early() {
    let cal = Calibration::builtin(sm90()).unwrap();
    let shape = parse_shape("M=4096,N=4096,K=4096").unwrap();
    let file = "tests/check/S012_ahead_deferred_release.py";
    let at = |n: &str| {
        let k = kernel_with(file, &[("lm.ahead(STAGES - 1)", n)]);
        estimate(&k, sm90(), &shape, &cal).unwrap()
    };
    let (none, one) = (at("lm.ahead(0)"), at("lm.ahead(1)"));
    assert_eq!(none.loops[0].stages, Some(1));
    assert_eq!(one.loops[0].stages, Some(2));
    assert!(
        none.time_us > one.time_us,
        "{} vs {}",
        none.time_us,
        one.time_us
    );
    let help = |e: &cake_cost::Estimate| {
        e.hints
            .iter()
            .find(|h| h.code == "CAKE-P003")
            .and_then(|h| h.help.clone())
            .unwrap_or_default()
    };
    assert!(
        help(&none).contains("`with lm.ahead(1):`"),
        "{:?}",
        none.hints
    );
    assert!(
        help(&one).contains("4 stages with `lm.ahead(2)`"),
        "{:?}",
        one.hints
    );
}

/// A target's tables, one per card: the first is the default, the others are chosen by the
/// GPU's name (a card word or the driver's name of the device), and a card without one is
/// refused by name unless the caller asked for the nearest table.
#[test]
fn tables_are_chosen_by_the_gpu_they_were_measured_on() {
    let tables = Calibration::builtin_tables(sm90()).unwrap();
    let cards: Vec<_> = tables.iter().map(|t| t.meta.card().unwrap()).collect();
    assert_eq!(cards, ["H200", "H100"]);
    assert_eq!(Calibration::builtin(sm90()).unwrap(), tables[0]);
    assert_eq!(Calibration::builtin_cards(), ["H200", "H100"]);
    for (asked, card) in [
        ("H100", "H100"),
        ("h100", "H100"),
        ("NVIDIA H100 80GB HBM3", "H100"),
        ("NVIDIA H200", "H200"),
    ] {
        let t = Calibration::builtin_for(sm90(), asked).unwrap();
        assert_eq!(t.meta.card(), Some(card), "{asked}");
        assert_eq!(t.meta.target, "sm_90a");
    }
    // Not a word of the name: GH200 is not an H200, H10 not an H100.
    for asked in ["A100", "NVIDIA GH200 480GB", "H10", ""] {
        let e = Calibration::builtin_for(sm90(), asked).unwrap_err();
        assert!(
            matches!(e, CostError::NoCalibrationForGpu { .. }),
            "{asked}: {e}"
        );
        assert!(
            e.to_string().contains("its tables are for H200, H100"),
            "{e}"
        );
        // A run on that device still gets an estimate: the target's default table.
        let t = Calibration::builtin_for_device(sm90(), Some(asked)).unwrap();
        assert_eq!(t, tables[0]);
    }
    assert_eq!(
        Calibration::builtin_for_device(sm90(), None).unwrap(),
        tables[0]
    );
    // A target without tables has none for any card.
    let sm100 = cake_target::lookup("sm_100a").unwrap();
    let e = Calibration::builtin_for(sm100, "B200").unwrap_err();
    assert!(matches!(e, CostError::NoCalibration { .. }), "{e}");
    assert!(Calibration::builtin_tables(sm100).unwrap().is_empty());
}

/// The H100's table against the H200's: a memory-bound kernel is predicted slower in about the
/// ratio of the measured DRAM rates; a compute-bound GEMM within a few percent.
#[test]
fn the_h100_table_predicts_memory_bound_kernels_slower() {
    let h200 = Calibration::builtin_for(sm90(), "H200").unwrap();
    let h100 = Calibration::builtin_for(sm90(), "H100").unwrap();
    let dram = h200.get("dram_gbps") / h100.get("dram_gbps");
    assert!((1.2..1.5).contains(&dram), "{dram}");
    let rows = kernel("examples/rmsnorm_sm90.py");
    let shape = parse_shape("R=32768").unwrap();
    let (on_h100, on_h200) = (
        estimate(&rows, sm90(), &shape, &h100).unwrap(),
        estimate(&rows, sm90(), &shape, &h200).unwrap(),
    );
    let slower = on_h100.time_us / on_h200.time_us;
    assert!(
        (1.15..dram * 1.1).contains(&slower),
        "{slower} against {dram}"
    );
    // The speed of light is each card's own: 3.35 TB/s on the H100 SXM, 4.8 on the H200.
    let sol = on_h100.speed_of_light_us / on_h200.speed_of_light_us;
    assert!((sol - 4800.0 / 3350.0).abs() < 1e-9, "{sol}");
    let gemm = kernel("examples/gemm_sm90.py");
    let shape = parse_shape("M=4096,N=4096,K=4096").unwrap();
    let ratio = estimate(&gemm, sm90(), &shape, &h100).unwrap().time_us
        / estimate(&gemm, sm90(), &shape, &h200).unwrap().time_us;
    assert!((0.9..1.1).contains(&ratio), "{ratio}");
}

/// A run-time `if` on an index condition is charged for the share of executions that take it:
/// the causal mask of `examples/attention_sm90.py` runs on the key tiles that cross the
/// diagonal, and the non-causal tail mask on the last key tile, only where S leaves a tail.
#[test]
fn an_index_branch_is_charged_for_the_executions_that_take_it() {
    let text = std::fs::read_to_string(root().join("examples/attention_sm90.py")).unwrap();
    let causal_mask = "                    if (j + 1) * BN > q0:
                        keys = j * BN + lm.iota((64, BN), axis=1)
                        s[:] = lm.select((keys < S) & (q0 + lm.iota((64, BN), axis=0) >= keys), s, -lm.inf)";
    let tail_mask = "                elif (j + 1) * BN > S:
                    s[:] = lm.select(j * BN + lm.iota((64, BN), axis=1) < S, s, -lm.inf)";
    assert!(text.contains(causal_mask) && text.contains(tail_mask));
    let parse = |src: String| {
        let (_, front) = cake_front::check_bytes("attention.py", src.as_bytes());
        assert!(!front.findings.has_errors());
        front.kernels.into_iter().next().unwrap()
    };
    let causal = |src: &str| src.replace("\nCAUSAL = 0 ", "\nCAUSAL = 1 ");
    let cal = Calibration::builtin(sm90()).unwrap();
    let time = |k: &cake_ir::Kernel, shape: &str| {
        estimate(k, sm90(), &parse_shape(shape).unwrap(), &cal)
            .unwrap()
            .time_us
    };
    let shape = "BH=128,BHKV=128,S=8192";
    // Causal: 64 key tiles per query tile on average, the mask on one or two of them.
    let masked = parse(causal(&text));
    let unmasked = parse(causal(
        &text.replace(causal_mask, "                    pass"),
    ));
    let ratio = time(&masked, shape) / time(&unmasked, shape);
    assert!((1.0..1.02).contains(&ratio), "{ratio}");
    // Non-causal at S = 8192: no key tile has a tail, so the tail mask costs nothing; at
    // S = 8000 the last of 63 key tiles takes it.
    let plain = parse(text.clone());
    let no_tail = parse(text.replace(tail_mask, ""));
    assert_eq!(time(&plain, shape), time(&no_tail, shape));
    let tail = "BH=128,BHKV=128,S=8000";
    let ratio = time(&plain, tail) / time(&no_tail, tail);
    assert!(ratio > 1.0 && ratio < 1.01, "{ratio}");
}
