//! The evaluation protocols against a fake worker (tests/data/fake_worker.py, no GPU): a passing
//! candidate, one that leaves outputs unwritten, one that hangs, one that crashes the worker, one
//! that poisons the CUDA context, one that times below the physical floor, and an interface
//! mismatch. The run must end with a record in every case.

use cake_eval::{run, Contract, Mode, Options, Supervisor, WorkerCommand};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn supervisor() -> Supervisor {
    Supervisor::new(WorkerCommand {
        program: "python3".into(),
        args: vec![data("fake_worker.py").display().to_string()],
    })
}

fn evaluate(kernel: &str, mode: Mode) -> cake_eval::Evidence {
    let contract = Contract::load(&data("small.contract.toml")).expect("valid contract");
    let opts = Options {
        kernel: Some(data(&format!("{kernel}.launch.json"))),
        seed: Some(7),
        ..Options::default()
    };
    let mut sup = supervisor();
    let mut lines = Vec::new();
    let e = run(&contract, mode, &opts, &mut sup, &mut |l: &str| {
        lines.push(l.to_string())
    })
    .expect("the run completes");
    sup.shutdown();
    e
}

#[test]
fn a_good_candidate_passes_every_check_with_fresh_recorded_seeds() {
    let e = evaluate("good", Mode::Test);
    assert_eq!(e.verdict, "passed");
    assert_eq!(e.correctness.checks.len(), 4, "2 shapes x 2 distributions");
    assert!(e.correctness.checks.iter().all(|c| c.passed));
    let mut seeds: Vec<u64> = e.correctness.checks.iter().map(|c| c.seed).collect();
    seeds.dedup();
    assert_eq!(seeds.len(), 4, "every check draws fresh inputs");
    assert_eq!(e.candidate.origin, "prebuilt");
    assert_eq!(e.environment["gpu"], "Fake GPU");
    assert!(e.timing.is_none());
}

#[test]
fn unwritten_outputs_fail_with_the_worker_reason() {
    let e = evaluate("unwritten", Mode::Test);
    assert!(
        e.verdict
            .starts_with("failed: M=8 N=8 K=8 normal: C: 8 elements never written"),
        "{}",
        e.verdict
    );
    assert!(e.correctness.checks.iter().all(|c| !c.passed));
    assert!(!e.correctness.passed);
}

#[test]
fn a_hang_is_killed_and_the_rest_of_the_candidate_skipped() {
    let t = Instant::now();
    let e = evaluate("hang", Mode::Test);
    assert!(t.elapsed().as_secs() < 30, "the watchdog fired");
    assert!(e.verdict.contains("hang"), "{}", e.verdict);
    let first = &e.correctness.checks[0];
    assert!(matches!(
        first.failure,
        Some(cake_eval::Failure::Hang { .. })
    ));
    assert!(e.correctness.checks[1..]
        .iter()
        .all(|c| c.skipped.is_some()));
}

#[test]
fn a_crash_is_recorded_with_the_workers_last_words() {
    let e = evaluate("crash", Mode::Test);
    match &e.correctness.checks[0].failure {
        Some(cake_eval::Failure::Crash { stderr_tail, .. }) => {
            assert!(
                stderr_tail.contains("segmentation fault (pretend)"),
                "{stderr_tail}"
            )
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    assert!(e.verdict.starts_with("failed:"));
}

#[test]
fn a_sticky_cuda_error_ends_the_worker_and_the_next_request_starts_a_fresh_one() {
    let contract = Contract::load(&data("small.contract.toml")).unwrap();
    let mut sup = supervisor();
    let sticky = Options {
        kernel: Some(data("sticky.launch.json")),
        ..Options::default()
    };
    let e = run(&contract, Mode::Test, &sticky, &mut sup, &mut |_: &str| {}).unwrap();
    assert!(e.verdict.contains("illegal memory access"), "{}", e.verdict);
    // The same supervisor goes on with another candidate in a new worker.
    let good = Options {
        kernel: Some(data("good.launch.json")),
        ..Options::default()
    };
    let e = run(&contract, Mode::Test, &good, &mut sup, &mut |_: &str| {}).unwrap();
    assert_eq!(e.verdict, "passed");
    assert!(e.budget.worker_restarts >= 1);
    sup.shutdown();
}

#[test]
fn bench_times_candidate_and_baseline_and_computes_speedups() {
    let e = evaluate("good", Mode::Bench);
    assert_eq!(e.verdict, "passed");
    let t = e.timing.expect("timed");
    let s = &t.shapes[0];
    let speedup = &s.speedup["torch_matmul"];
    assert_eq!(speedup.events, Some(2.0));
    assert_eq!(speedup.cupti, Some(2.0));
    let floor = s.floor.as_ref().expect("flops and bytes given");
    // 2·4096³ flops at 989.4 TF/s.
    assert!((floor.ms - 2.0 * 4096f64.powi(3) / 989.4e12 * 1e3).abs() < 1e-9);
}

#[test]
fn a_time_below_the_physical_floor_is_flagged_not_reported_as_a_win() {
    let e = evaluate("toofast", Mode::Bench);
    assert!(
        e.verdict.starts_with("failed: suspicious timing"),
        "{}",
        e.verdict
    );
    let s = &e.timing.unwrap().shapes[0];
    assert!(s.speedup.is_empty());
    assert_eq!(s.suspicious.len(), 2, "both measures");
}

/// A build that ends the worker while it is timed (a sticky CUDA error) is not run again at the
/// run's later shapes, which record why and still time the baseline: each retry would cost a
/// worker restart (or, for a hang, the whole deadline) and say nothing new. Measured on the GPU:
/// 25 shapes of one failing route took a 300 s budget.
#[test]
fn a_build_that_ended_the_worker_is_not_timed_again_at_later_shapes() {
    let mut contract = Contract::load(&data("small.contract.toml")).unwrap();
    // Bench shapes only, as a family measurement's runs have.
    let bench: Vec<_> = [256, 512, 1024]
        .iter()
        .map(|&n| serde_json::from_value(serde_json::json!({"M": n, "N": n, "K": n})).unwrap())
        .collect();
    contract.shapes = indexmap::IndexMap::from([("bench".to_string(), bench)]);
    let opts = Options {
        kernel: Some(data("sticky.launch.json")),
        seed: Some(7),
        ..Options::default()
    };
    let mut sup = supervisor();
    let e = run(&contract, Mode::Bench, &opts, &mut sup, &mut |_: &str| {}).unwrap();
    sup.shutdown();
    let t = e.timing.expect("timed");
    assert_eq!(t.shapes.len(), 3);
    match &t.shapes[0].candidate.failure {
        Some(cake_eval::Failure::Error {
            sticky: true,
            message,
            ..
        }) => {
            assert!(message.contains("illegal instruction"), "{message}")
        }
        other => panic!("expected the sticky error, got {other:?}"),
    }
    for s in &t.shapes[1..] {
        match &s.candidate.failure {
            Some(cake_eval::Failure::Skipped { reason }) => assert!(
                reason.starts_with("this build ended the worker at M=256 N=256 K=256"),
                "{reason}"
            ),
            other => panic!("expected a skip, got {other:?}"),
        }
        assert!(s.baselines["torch_matmul"].median("events_ms").is_some());
    }
    // The joint request and the candidate alone at the first shape: two restarts, not six.
    assert!(
        e.budget.worker_restarts <= 2,
        "{}",
        e.budget.worker_restarts
    );
}

#[test]
fn a_failed_candidate_is_never_timed() {
    let e = evaluate("unwritten", Mode::Bench);
    assert!(e.timing.is_none());
}

#[test]
fn a_candidate_whose_interface_disagrees_with_the_contract_is_rejected_before_it_runs() {
    let dir = std::env::temp_dir().join(format!("cake-eval-iface-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(data("good.launch.json")).unwrap();
    let text = text.replacen("\"dtype\": \"bf16\"", "\"dtype\": \"f16\"", 1);
    std::fs::write(dir.join("good.launch.json"), text).unwrap();
    std::fs::copy(data("good.cubin"), dir.join("good.cubin")).unwrap();
    let contract = Contract::load(&data("small.contract.toml")).unwrap();
    let opts = Options {
        kernel: Some(dir.join("good.launch.json")),
        ..Options::default()
    };
    let mut sup = supervisor();
    let e = run(&contract, Mode::Test, &opts, &mut sup, &mut |_: &str| {}).unwrap();
    assert_eq!(
        e.verdict,
        "failed: interface: `A`: the contract says bf16, the kernel takes f16"
    );
    assert!(e.correctness.checks.iter().all(|c| c.skipped.is_some()));
    sup.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_worker_that_cannot_start_is_a_tool_error_not_a_verdict() {
    let contract = Contract::load(&data("small.contract.toml")).unwrap();
    let mut sup = Supervisor::new(WorkerCommand {
        program: "/nonexistent/python".into(),
        args: vec![],
    });
    let err = run(
        &contract,
        Mode::Test,
        &Options::default(),
        &mut sup,
        &mut |_: &str| {},
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("cannot run `/nonexistent/python`"),
        "{err}"
    );
}

#[test]
fn the_record_serialises_with_every_documented_field() {
    let e = evaluate("good", Mode::Bench);
    let v = serde_json::to_value(&e).unwrap();
    for key in [
        "schema",
        "command",
        "created",
        "candidate",
        "contract",
        "findings",
        "cost_estimate",
        "resources",
        "correctness",
        "timing",
        "environment",
        "budget",
        "verdict",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
    assert_eq!(v["schema"], "cake.evidence/v0");
    assert_eq!(v["candidate"]["hash"].as_str().unwrap().len(), 64);
    assert_eq!(v["contract"]["name"], "fake-gemm");
    assert!(v["timing"]["shapes"][0]["candidate"]["result"]["events_ms"]["median"].is_number());
}

#[test]
fn a_failing_baseline_does_not_take_the_candidates_time_with_it() {
    let contract = Contract::load(&data("small.contract.toml")).unwrap();
    let mut sup = Supervisor::new(WorkerCommand {
        program: "python3".into(),
        args: vec![
            data("fake_worker.py").display().to_string(),
            "--baseline-fails".into(),
        ],
    });
    let opts = Options {
        kernel: Some(data("good.launch.json")),
        ..Options::default()
    };
    let e = run(&contract, Mode::Bench, &opts, &mut sup, &mut |_: &str| {}).unwrap();
    sup.shutdown();
    let s = &e.timing.expect("timed").shapes[0];
    assert_eq!(s.candidate.median("events_ms"), Some(1.0));
    let base = &s.baselines["torch_matmul"];
    assert!(
        matches!(&base.failure, Some(cake_eval::Failure::Error { message, .. }) if message == "the baseline raised"),
        "{:?}",
        base.failure
    );
    assert_eq!(s.speedup["torch_matmul"].events, None);
    assert_eq!(
        e.budget.requests,
        2 + 4 + 3,
        "load x2, 4 checks, joint + 2 single timings"
    );
}

#[test]
fn a_kernel_whose_timed_calls_end_wrong_has_no_speed() {
    let e = evaluate("drifts", Mode::Bench);
    assert!(e.correctness.passed, "its checks pass");
    assert!(
        e.verdict.starts_with("failed: M=4096 N=4096 K=4096: the timed calls' outputs are wrong: C: 64 elements differ"),
        "{}",
        e.verdict
    );
    let s = &e.timing.unwrap().shapes[0];
    assert!(s.speedup.is_empty());
    assert!(s.interleaved);
}

#[test]
fn a_failing_oracle_is_an_error_of_the_run_not_a_failure_of_the_candidate() {
    let e = evaluate("contractbug", Mode::Test);
    assert!(
        e.verdict
            .starts_with("error: M=8 N=8 K=8 normal: oracle error: the oracle raised"),
        "{}",
        e.verdict
    );
    assert!(!e.correctness.passed);
    assert!(e.correctness.checks[1..].iter().all(|c| c
        .skipped
        .as_deref()
        .is_some_and(|s| s.starts_with("the run stopped"))));
}

#[test]
fn stray_lines_do_not_extend_the_deadline() {
    let t = Instant::now();
    let e = evaluate("chatter", Mode::Test);
    assert!(t.elapsed().as_secs() < 30);
    assert!(matches!(
        e.correctness.checks[0].failure,
        Some(cake_eval::Failure::Hang { .. })
    ));
}

#[test]
fn bench_reports_throughput_and_the_fraction_of_the_floor() {
    let e = evaluate("good", Mode::Bench);
    let s = &e.timing.unwrap().shapes[0];
    let r = s.candidate_rate.as_ref().expect("an events median");
    // The fake candidate takes 1 ms for 2·4096³ flops.
    assert!((r.tflops.unwrap() - 2.0 * 4096f64.powi(3) / 1e-3 / 1e12).abs() < 1e-9);
    assert!((r.of_floor.unwrap() - s.floor.as_ref().unwrap().ms / 1.0).abs() < 1e-12);
}

#[test]
fn usage_mistakes_are_found_before_any_worker_starts() {
    let contract = Contract::load(&data("small.contract.toml")).unwrap();
    // A worker that cannot start: reaching it would be a different error.
    let mut sup = Supervisor::new(WorkerCommand {
        program: "/nonexistent/worker".into(),
        args: vec![],
    });
    let mut try_with = |opts: Options| {
        run(&contract, Mode::Bench, &opts, &mut sup, &mut |_: &str| {})
            .unwrap_err()
            .to_string()
    };
    let e = try_with(Options {
        target: Some("sm_90".into()),
        ..Options::default()
    });
    assert!(e.contains("did you mean `sm_90a`?"), "{e}");
    let e = try_with(Options {
        kernel: Some("no/such/kernel.py".into()),
        ..Options::default()
    });
    assert!(
        e.contains("the candidate no/such/kernel.py does not exist"),
        "{e}"
    );
    let e = try_with(Options {
        shape_set: Some("held_out".into()),
        ..Options::default()
    });
    assert!(
        e.contains("has no `held_out` shapes (its sets: check, bench)"),
        "{e}"
    );
}

#[test]
fn a_cancelled_supervisor_kills_its_worker_and_starts_no_other() {
    // A worker that never answers: without the cancel, `hello` would wait out its 180 s.
    let mut sup = Supervisor::new(WorkerCommand {
        program: "sleep".into(),
        args: vec!["600".into()],
    });
    let cancel = sup.cancel_handle();
    let t = Instant::now();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        cancel.cancel();
    });
    assert_eq!(sup.ensure_running(), Err(cake_eval::Failure::Cancelled));
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
    canceller.join().unwrap();
    // Every later request fails at once, without a new worker.
    let t = Instant::now();
    assert_eq!(
        sup.request(
            serde_json::json!({"op": "hello"}),
            std::time::Duration::from_secs(60)
        ),
        Err(cake_eval::Failure::Cancelled)
    );
    assert!(t.elapsed().as_millis() < 500);
    assert_eq!(sup.restarts, 0);
}

// ---- [specialize]: a family built once per value of its compile-time extent ----------------
// rows.py fixes its width H in its tensors' types; rows.contract.toml sets H from each shape.
// The fake worker gives wrong results to a kernel whose fixed extent differs from the shape's,
// so a shape run with another specialization's kernel fails.

/// The rows family's contract, edited (each edit must apply).
fn rows_contract(edits: &[(&str, &str)]) -> Contract {
    let mut text = std::fs::read_to_string(data("rows.contract.toml")).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "test edit `{from}` does not apply");
        text = text.replacen(from, to, 1);
    }
    Contract::parse(&data("rows.contract.toml"), &text, &data("")).expect("valid contract")
}

/// A build directory of the test's own.
fn build_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cake-eval-spec-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn has_toolchain() -> bool {
    cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain").is_some()
}

fn run_rows(c: &Contract, mode: Mode, dir: &Path) -> cake_eval::Evidence {
    let opts = Options {
        seed: Some(3),
        build_dir: Some(dir.to_path_buf()),
        ..Options::default()
    };
    let mut sup = supervisor();
    let e = run(c, mode, &opts, &mut sup, &mut |_: &str| {}).expect("the run completes");
    sup.shutdown();
    e
}

#[test]
fn shapes_are_grouped_by_the_values_of_their_specialized_constants() {
    use cake_eval::run::{callable_name, specializations};
    let c = rows_contract(&[]);
    let values = |mode, set: Option<&str>| -> Vec<String> {
        let opts = Options {
            shape_set: set.map(Into::into),
            ..Options::default()
        };
        specializations(&c, mode, &opts)
            .iter()
            .map(callable_name)
            .collect()
    };
    // check: H = 64, 128, 64: two builds, in order of first use.
    assert_eq!(
        values(Mode::Test, None),
        ["candidate[H=64]", "candidate[H=128]"]
    );
    // bench adds the bench set's H = 256.
    assert_eq!(
        values(Mode::Bench, None),
        ["candidate[H=64]", "candidate[H=128]", "candidate[H=256]"]
    );
    assert_eq!(values(Mode::Test, Some("held_out")), ["candidate[H=128]"]);
    // Without [specialize], one build under the usual name.
    let small = Contract::load(&data("small.contract.toml")).unwrap();
    let specs = specializations(&small, Mode::Bench, &Options::default());
    assert_eq!(specs.len(), 1);
    assert_eq!(callable_name(&specs[0]), "candidate");
}

#[test]
fn a_family_builds_each_value_once_and_runs_every_shape_with_its_own_build() {
    if !has_toolchain() {
        return;
    }
    let dir = build_dir("family");
    let e = run_rows(&rows_contract(&[]), Mode::Bench, &dir);
    assert_eq!(e.verdict, "passed");
    let specs = e.specializations.as_ref().expect("recorded");
    let values: Vec<i64> = specs.iter().map(|s| s.values["H"]).collect();
    assert_eq!(values, [64, 128, 256]);
    // Each build is its own candidate: its own hash, source and fixed extent.
    assert_eq!(e.candidate.hash, specs[0].hash);
    assert!(e.candidate.source.as_deref().unwrap().contains("\nH = 64 "));
    let mut hashes: Vec<&str> = specs.iter().map(|s| s.hash.as_str()).collect();
    hashes.dedup();
    assert_eq!(hashes.len(), 3);
    for s in specs {
        let h = s.values["H"];
        assert_eq!(s.launch["tensors"][0]["dims"], serde_json::json!(["R", h]));
        assert!(s.rejected.is_none());
        assert!(dir.join(format!("H{h}/rows.cubin")).is_file(), "H={h}");
    }
    // Every check ran the build of its shape's H.
    for check in &e.correctness.checks {
        let h = check.shape["H"];
        let result = check.result.as_ref().expect("answered");
        assert_eq!(result["callable"], format!("candidate[H={h}]"));
    }
    assert_eq!(e.correctness.checks.len(), 3);
    // The bench shape (H = 256, in no check) was timed with its own build, and costed with it.
    let t = e.timing.as_ref().expect("timed");
    assert_eq!(
        t.shapes[0].candidate.result.as_ref().unwrap()["outputs_ok"],
        true
    );
    let est = &e.cost_estimate.as_ref().unwrap()["estimates"][0];
    assert!(est.get("error").is_none(), "{est}");
    let doc = serde_json::to_value(&e).unwrap();
    assert_eq!(
        doc["specializations"][2]["values"],
        serde_json::json!({"H": 256})
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_value_the_schedule_cannot_take_fails_only_its_own_shapes() {
    if !has_toolchain() {
        return;
    }
    // H = 32: 64-byte rows under a 128-byte swizzle, which the verifier refuses.
    let dir = build_dir("rejected");
    let c = rows_contract(&[("{ R = 100, H = 128 }", "{ R = 100, H = 32 }")]);
    let e = run_rows(&c, Mode::Test, &dir);
    assert!(
        e.verdict.starts_with(
            "failed: H=32: the schedule has 2 error(s); see `specializations[1].findings`"
        ),
        "{}",
        e.verdict
    );
    let specs = e.specializations.as_ref().unwrap();
    assert!(specs[0].rejected.is_none());
    assert!(specs[1].rejected.is_some());
    assert!(specs[1].findings["findings"]
        .as_array()
        .is_some_and(|f| !f.is_empty()));
    let checks = &e.correctness.checks;
    assert!(checks[0].passed && checks[2].passed, "H = 64 still runs");
    assert!(checks[1]
        .skipped
        .as_deref()
        .is_some_and(|s| s.starts_with("H=32: the schedule has")));
    assert!(!e.correctness.passed);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_specialized_dimension_matches_the_kernels_fixed_extent_of_that_value_only() {
    if !has_toolchain() {
        return;
    }
    // The contract says Y is R × H; the kernel fixes Y's width at 64, whatever H is.
    let dir = build_dir("mismatch");
    let c = rows_contract(&[("shape = [\"R\", 64]", "shape = [\"R\", \"H\"]")]);
    let e = run_rows(&c, Mode::Test, &dir);
    assert_eq!(
        e.verdict,
        "failed: H=128: interface: `Y`: extent 1 is `H` = 128 in this specialization (H=128), \
         but the kernel's is fixed at 64; write the extent with the specialized constant"
    );
    let checks = &e.correctness.checks;
    assert!(
        checks[0].passed && checks[2].passed,
        "at H = 64 it is the same"
    );
    assert!(checks[1].skipped.is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn specialize_needs_a_schedule_with_those_constants() {
    // A worker that cannot start: these are found before it would be needed.
    let mut sup = Supervisor::new(WorkerCommand {
        program: "/nonexistent/worker".into(),
        args: vec![],
    });
    let mut err = |c: &Contract, kernel: Option<PathBuf>| {
        let opts = Options {
            kernel,
            ..Options::default()
        };
        run(c, Mode::Test, &opts, &mut sup, &mut |_: &str| {})
            .unwrap_err()
            .to_string()
    };
    // A prebuilt kernel cannot be rebuilt per shape.
    let text = std::fs::read_to_string(data("small.contract.toml")).unwrap()
        + "\n[specialize]\nK = \"K\"\n";
    let small = Contract::parse(&data("small.contract.toml"), &text, &data("")).unwrap();
    let e = err(&small, None);
    assert!(
        e.contains("good.launch.json: a prebuilt kernel cannot be rebuilt per shape, but the contract's [specialize] sets K"),
        "{e}"
    );
    // A constant the schedule does not have is named, with the ones it has.
    let rows = rows_contract(&[("H = \"H\"", "HIDDEN = \"H\"")]);
    let e = err(&rows, None);
    assert!(
        e.contains("[specialize] sets `HIDDEN`, but") && e.ends_with("its constants are BM, H"),
        "{e}"
    );
    // The same check covers a schedule given with --kernel.
    let e = err(&rows, Some(root_example("gemm_sm90.py")));
    assert!(
        e.contains("has no module-level integer constant `HIDDEN`"),
        "{e}"
    );
}

fn root_example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

#[test]
fn a_fixed_extent_matches_a_specialized_dimension_at_its_value() {
    use cake_eval::contract::Specialization;
    use cake_eval::run::interface_mismatches;
    // good.launch.json with A's K fixed at 64, as a schedule with `K = 64` in A's type builds.
    let text = std::fs::read_to_string(data("good.launch.json")).unwrap();
    let text = text.replacen("\"M\",\n        \"K\"", "\"M\",\n        64", 1);
    let meta: cake_lower::LaunchMeta = serde_json::from_str(&text).unwrap();
    assert_eq!(
        meta.tensors[0].dims,
        serde_json::json!(["M", 64]).as_array().unwrap().clone()
    );
    let small = std::fs::read_to_string(data("small.contract.toml")).unwrap();
    let parse = |t: &str| Contract::parse(&data("small.contract.toml"), t, &data("")).unwrap();
    let c = parse(&(small.clone() + "\n[specialize]\nK = \"K\"\n"));
    let at = |k: i64| Specialization::from_iter([("K".to_string(), k)]);
    assert_eq!(
        interface_mismatches(&c, &meta, &at(64)),
        Vec::<String>::new()
    );
    assert_eq!(
        interface_mismatches(&c, &meta, &at(128)),
        [
            "`A`: extent 1 is `K` = 128 in this specialization (K=128), but the kernel's is fixed \
          at 64; write the extent with the specialized constant"
        ]
    );
    // Unspecialized, the fixed extent is a mismatch that says how to specialize it.
    let plain = parse(&small);
    assert_eq!(
        interface_mismatches(&plain, &meta, &Specialization::new()),
        ["`A`: the contract's shape is [\"M\",\"K\"], the kernel's [\"M\",64] (the kernel fixes \
          `K` at 64: to build it per value of `K`, set its constant from `K` in the contract's \
          [specialize])"]
    );
}

// ---- families: measured through dispatch, each route as a bench run -------------------------

/// The rows contract with a baseline (the fake worker times any Python callable at 2 ms) and
/// absolute paths, and a family over it: `narrow` (rows.py) takes H ≤ 128, the rest falls back
/// to `fallback` (a function of data/contract.py).
fn rows_family(tag: &str, fallback: &str) -> cake_eval::family::Family {
    let dir = build_dir(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(data("rows.contract.toml"))
        .unwrap()
        .replace(
            "kernel = \"rows.py\"",
            &format!("kernel = {:?}", data("rows.py")),
        )
        .replace(
            "python = \"contract.py\"",
            &format!("python = {:?}", data("contract.py")),
        )
        + "\n[baselines]\nbase = \"baseline\"\n";
    std::fs::write(dir.join("fake.contract.toml"), text).unwrap();
    let family = format!(
        "name = \"fake\"\ncontract = \"fake.contract.toml\"\n[domain]\nR = {{ max = 4096 }}\n\
         [[route]]\nname = \"narrow\"\nwhen = {{ H = {{ max = 128 }} }}\n\
         [fallback]\npython = \"{}:{fallback}\"\n",
        data("contract.py").display()
    );
    let path = dir.join("fake.family.toml");
    std::fs::write(&path, family).unwrap();
    cake_eval::family::Family::load(&path).unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn a_family_is_measured_through_dispatch_against_its_baseline() {
    use cake_eval::family::measure::{measure, MeasureOptions, Mode as FamilyMode};
    use cake_eval::family::Shard;
    if !has_toolchain() {
        return;
    }
    let o = MeasureOptions {
        shard: Shard::Representative,
        n: 10,
        seed: 5,
        mode: FamilyMode::Dispatch,
        baseline: None,
        warmup: None,
        samples: None,
        target: None,
        routes: Vec::new(),
        card: None,
    };
    // The fallback is the baseline's own function: speedup 1 by identity, never timed.
    let f = rows_family("family-identity", "baseline");
    let mut sup = supervisor();
    let mut lines = Vec::new();
    // Timed shapes in each partial measurement handed out between runs.
    let mut partial: Vec<usize> = Vec::new();
    let m = measure(
        &f,
        &o,
        &mut sup,
        &mut |l: &str| lines.push(l.to_string()),
        &mut |m| partial.push(m.shapes.iter().filter(|s| !s.timed.is_empty()).count()),
    )
    .unwrap();
    sup.shutdown();
    assert_eq!(m.shapes.len(), 10);
    assert_eq!(m.baseline, "base");
    let narrow = m.shapes.iter().filter(|s| s.route == "narrow").count();
    assert!(narrow > 0 && narrow < 10, "the draw should take both ways");
    for s in &m.shapes {
        let o = s
            .dispatched()
            .expect("every shape has its dispatched outcome");
        if s.shape["H"] <= 128 {
            assert_eq!(s.route, "narrow");
            // 0.9 ms against the baseline's 1.8 (CUPTI, the fake worker's), with its own build.
            assert_eq!(o.speedup, Some(2.0), "{s:?}");
            assert!(o.correct && !o.baseline_itself);
        } else {
            assert_eq!(s.route, "fallback");
            assert!(o.baseline_itself && o.cupti_ms.is_none(), "{s:?}");
            assert_eq!(o.speedup, Some(1.0));
        }
    }
    let r = cake_eval::family::report::report(&m);
    let want = 2f64.powf(narrow as f64 / 10.0);
    assert!((r.g_span.unwrap() - want).abs() < 1e-9, "{r:?}");
    // One run per build of the route (per H), none for the fallback.
    let runs = lines.iter().filter(|l| l.starts_with('[')).count();
    let builds: std::collections::BTreeSet<i64> = m
        .shapes
        .iter()
        .filter(|s| s.route == "narrow")
        .map(|s| s.shape["H"])
        .collect();
    assert_eq!(runs, builds.len(), "{lines:?}");
    // A partial measurement after every run but the last, each holding more timed shapes, all
    // fewer than the whole (the fallback's shapes are there from the start, by identity).
    assert_eq!(partial.len(), runs - 1, "{partial:?}");
    assert!(partial.windows(2).all(|w| w[0] < w[1]), "{partial:?}");
    assert!(partial.iter().all(|n| *n < 10), "{partial:?}");

    // Another fallback is timed as a Python candidate, in turn with the baseline.
    let f = rows_family("family-python", "oracle");
    let mut sup = supervisor();
    let m = measure(&f, &o, &mut sup, &mut |_: &str| {}, &mut |_| {}).unwrap();
    sup.shutdown();
    let fb = m.shapes.iter().find(|s| s.route == "fallback").unwrap();
    let o = fb.dispatched().unwrap();
    assert!(!o.baseline_itself && o.correct, "{o:?}");
    assert_eq!((o.cupti_ms, o.speedup), (Some(1.8), Some(1.0)));
}

#[test]
fn timing_only_some_routes_names_routes_of_the_family_in_every_route_mode() {
    use cake_eval::family::measure::{measure, prebuild, MeasureOptions, Mode as FamilyMode};
    use cake_eval::family::Shard;
    let f = rows_family("family-only", "baseline");
    let o = |mode, routes: &[&str]| MeasureOptions {
        shard: Shard::Representative,
        n: 4,
        seed: 5,
        mode,
        baseline: None,
        warmup: None,
        samples: None,
        target: Some("sm_90a".into()),
        routes: routes.iter().map(|r| r.to_string()).collect(),
        card: None,
    };
    let usage = |o: &MeasureOptions| {
        let mut sup = supervisor();
        let e = measure(&f, o, &mut sup, &mut |_: &str| {}, &mut |_| {}).unwrap_err();
        sup.shutdown();
        let p = prebuild(&f, o, "sm_90a", &mut |_: &str| {}).unwrap_err();
        assert_eq!(e.to_string(), p.to_string());
        e.to_string()
    };
    let unknown = usage(&o(FamilyMode::EveryRoute, &["narrow", "wide"]));
    assert!(
        unknown.contains("no route `wide`; it has narrow"),
        "{unknown}"
    );
    let dispatch = usage(&o(FamilyMode::Dispatch, &["narrow"]));
    assert!(dispatch.contains("needs every-route mode"), "{dispatch}");
}

#[test]
fn a_timeline_needs_a_schedule_and_leaves_the_timing_alone() {
    // A prebuilt candidate cannot be rebuilt with its stamps: every bench shape says why, and
    // the timing and verdict are what they are without --timeline.
    let contract = Contract::load(&data("small.contract.toml")).expect("valid contract");
    let opts = Options {
        kernel: Some(data("good.launch.json")),
        seed: Some(7),
        timeline: true,
        ..Options::default()
    };
    let mut sup = supervisor();
    let mut lines = Vec::new();
    let e = run(&contract, Mode::Bench, &opts, &mut sup, &mut |l: &str| {
        lines.push(l.to_string())
    })
    .expect("the run completes");
    sup.shutdown();
    assert_eq!(e.verdict, "passed");
    let t = e.timing.as_ref().expect("timed");
    for s in &t.shapes {
        assert!(s.candidate.median("cupti_ms").is_some());
        let why = s.timeline.as_ref().expect("a timeline entry")["error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(why.contains("prebuilt kernel"), "{why}");
    }
    assert!(
        lines.iter().any(|l| l.starts_with("timeline candidate: ")),
        "{lines:?}"
    );
}

#[test]
fn a_timeline_build_is_loaded_beside_each_build_and_launched_at_its_shapes() {
    if !has_toolchain() {
        return;
    }
    let dir = build_dir("timeline");
    let opts = Options {
        seed: Some(3),
        build_dir: Some(dir.clone()),
        timeline: true,
        ..Options::default()
    };
    let mut sup = supervisor();
    let mut lines = Vec::new();
    let e = run(
        &rows_contract(&[]),
        Mode::Bench,
        &opts,
        &mut sup,
        &mut |l: &str| lines.push(l.to_string()),
    )
    .expect("the run completes");
    sup.shutdown();
    assert_eq!(e.verdict, "passed");
    for s in &e.timing.as_ref().expect("timed").shapes {
        let h = s.shape["H"];
        let tl = s.timeline.as_ref().expect("a timeline");
        // The worker launched the stamped build of this shape's H, at this shape.
        assert_eq!(tl["callable"], format!("candidate[H={h}]~timeline"), "{tl}");
        assert_eq!(tl["shape"]["H"], h);
        // Its own build, with the stamps compiled in, in a folder beside the plain one.
        let launch = std::fs::read_to_string(dir.join(format!("H{h}/timeline/rows.launch.json")))
            .expect("the timeline build");
        assert!(launch.contains("CAKE_TIMELINE"), "H={h}");
    }
    assert!(lines
        .iter()
        .any(|l| l.starts_with("  timeline 4 CTAs of candidate[H=")));
}
