//! The real GPU stage, `evaluate::Harness` (cake_eval::run in bench mode), against cake-eval's
//! fake worker and prebuilt fake kernels (no GPU, no toolchain): a passing candidate gives a
//! time and a speedup; one timed below the physical floor is quarantined, never promoted; a
//! wrong one fails with the worker's reason.

use cake_evolve::evaluate::{Evaluator, Harness, Outcome};
use cake_evolve::logs;
use std::path::{Path, PathBuf};

fn eval_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../cake-eval/tests/data")
        .join(name)
}

fn harness() -> Harness {
    Harness {
        contract: cake_eval::Contract::load(&eval_data("small.contract.toml")).unwrap(),
        supervisor: cake_eval::Supervisor::new(cake_eval::WorkerCommand {
            program: "python3".into(),
            args: vec![eval_data("fake_worker.py").display().to_string()],
        }),
        target: None,
        baseline: None,
        seed: Some(5),
        build_root: None,
    }
}

#[test]
fn the_harness_checks_then_times_and_quarantines_impossible_times() {
    let mut h = harness();
    let mut lines = Vec::new();
    let good = h.evaluate(&eval_data("good.launch.json"), &mut |l: &str| {
        lines.push(l.to_string())
    });
    assert_eq!(good.outcome, Outcome::Passed, "{}", good.verdict);
    // The fake worker times the candidate at 1 ms and the baseline at 2 ms.
    assert!((good.measured_us.unwrap() - 1000.0).abs() < 1e-6);
    assert!((good.speedup.unwrap() - 2.0).abs() < 1e-6);
    assert!(good.evidence["correctness"]["passed"] == true);
    assert!(lines.iter().any(|l| l.starts_with("bench ")), "{lines:?}");

    let fast = h.evaluate(&eval_data("toofast.launch.json"), &mut |_: &str| {});
    assert_eq!(fast.outcome, Outcome::Quarantined, "{}", fast.verdict);
    assert!(
        fast.measured_us.is_none() && fast.speedup.is_none(),
        "never promoted"
    );
    assert!(!fast.evidence.is_null(), "the evidence is kept");

    let wrong = h.evaluate(&eval_data("unwritten.launch.json"), &mut |_: &str| {});
    assert_eq!(wrong.outcome, Outcome::Failed);
    assert!(
        wrong.evidence["timing"].is_null(),
        "no timing after failed checks"
    );

    // The failure's signature for the compiler-evolution log: an unwritten-output mismatch.
    let c = cake_evolve::Candidate {
        seq: 1,
        hash: "ab".repeat(32),
        generation: 1,
        parents: vec![],
        proposer: "test".into(),
        source: String::new(),
        stage: cake_evolve::Stage::Evaluated,
        findings: None,
        niche: None,
        bottleneck: None,
        cost_us: None,
        build: None,
        correctness: Some(wrong.outcome.as_str().into()),
        verdict: Some(wrong.verdict.clone()),
        evidence: Some(wrong.evidence.clone()),
        measured_us: None,
        speedup: None,
        spent: Default::default(),
        created: String::new(),
    };
    let sigs = logs::signatures(&c);
    assert_eq!(sigs[0].signature, "mismatch:unwritten", "{sigs:?}");
    assert!(logs::proposal(&sigs[0], 1).starts_with("verifier rule"));
    let q = cake_evolve::Candidate {
        correctness: Some("quarantined".into()),
        ..c
    };
    assert_eq!(logs::signatures(&q)[0].signature, "timing:below_floor");

    let missing = h.evaluate(Path::new("/nonexistent/x.launch.json"), &mut |_: &str| {});
    assert_eq!(missing.outcome, Outcome::Error);
    h.supervisor.shutdown();
}
