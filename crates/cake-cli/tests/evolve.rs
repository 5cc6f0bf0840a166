//! `cake tune`, `cake evolve` and `cake report` end to end, without a GPU: a model-only run, its
//! resume with a larger budget, the report files, usage errors, and a GPU run against the fake
//! evaluation worker (where a build without a CUDA toolchain is an `error` outcome, recorded and
//! clustered, not a crash).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn cake(args: &[&str], env: &[(&str, String)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cake"));
    c.current_dir(root()).args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("run cake")
}

fn tempdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cake-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

const CONTRACT: &str = "kernels/gemm/gemm.contract.toml";
const SEED: &str = "crates/cake-evolve/tests/data/poor_gemm.py";

fn report_json(run: &Path) -> serde_json::Value {
    let o = cake(&["report", run.to_str().unwrap(), "--format", "json"], &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn tune_model_only_then_resume_then_report() {
    let run = tempdir("tune");
    let r = run.to_str().unwrap();
    let o = cake(
        &[
            "tune",
            CONTRACT,
            "--seed",
            SEED,
            // Spent by the first candidate on any machine, so the run stops on its wall
            // budget long before the cost model has ranked every reachable knob setting (that
            // takes ~0.6 s and ~116 candidates of a debug build on a 2-core VM).
            "--budget",
            "wall=0.001s",
            "--model-only",
            "--run",
            r,
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped: budget spent: wall"), "{err}");
    assert!(run.join("archive.sqlite").exists() && run.join("report.svg").exists());
    let first = report_json(&run)["counts"]["candidates"].as_u64().unwrap();
    assert!(first >= 1);
    // A second start in the same directory is refused; --resume with a larger budget goes on.
    let again = cake(
        &[
            "tune",
            CONTRACT,
            "--seed",
            SEED,
            "--budget",
            "wall=1s",
            "--model-only",
            "--run",
            r,
        ],
        &[],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--resume"));
    let o = cake(
        &["tune", "--resume", "--run", r, "--budget", "wall=2s"],
        &[],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rep = report_json(&run);
    let second = rep["counts"]["candidates"].as_u64().unwrap();
    assert!(second > first, "{first} -> {second}");
    assert_eq!(rep["run"]["budget"]["wall_s"], 2.0);
    let hashes: std::collections::BTreeSet<&str> = rep["trajectory"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["hash"].as_str().unwrap())
        .collect();
    assert_eq!(hashes.len() as u64, second, "no candidate twice");
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn usage_errors_exit_2() {
    let run = tempdir("usage");
    let r = run.to_str().unwrap();
    for args in [
        vec!["tune", CONTRACT, "--seed", SEED, "--model-only", "--run", r],
        vec![
            "tune",
            CONTRACT,
            "--budget",
            "wall=1s",
            "--model-only",
            "--run",
            r,
        ],
        vec!["tune", "--resume"],
        vec![
            "evolve",
            CONTRACT,
            "--seed",
            SEED,
            "--budget",
            "wall=1s",
            "--proposer",
            "command",
            "--model-only",
        ],
        vec![
            "tune",
            CONTRACT,
            "--seed",
            SEED,
            "--budget",
            "wall=1s",
            "--model-only",
            "--gpu",
            "A100",
        ],
        vec!["report", "/no/such/run"],
        vec!["distill", "/no/such/run"],
        vec!["distill", "--gate", "/no/such/distilled"],
        vec!["distill", "--gate", "a", "b"],
    ] {
        let o = cake(&args, &[]);
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // A budget that sets no limit, or an iteration count, is refused by the parser.
    let o = cake(
        &["tune", CONTRACT, "--seed", SEED, "--budget", "iterations=5"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    // Without --model-only a worker must start, or nothing runs.
    let o = cake(
        &[
            "tune", CONTRACT, "--seed", SEED, "--budget", "wall=1s", "--run", r,
        ],
        &[("CAKE_WORKER", "false".into())],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--model-only"));
    assert!(!run.join("archive.sqlite").exists(), "nothing was started");
}

#[test]
fn a_gpu_run_against_the_fake_worker_records_every_evaluation() {
    let run = tempdir("fakegpu");
    let worker = root().join("crates/cake-eval/tests/data/fake_worker.py");
    let o = cake(
        &[
            "tune",
            CONTRACT,
            "--seed",
            SEED,
            "--budget",
            "wall=3s",
            "--run",
            run.to_str().unwrap(),
            "--top-k",
            "1",
        ],
        &[("CAKE_WORKER", format!("python3 {}", worker.display()))],
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rep = report_json(&run);
    let evaluated = rep["counts"]["evaluated"].as_u64().unwrap();
    assert!(evaluated >= 1, "{}", rep["counts"]);
    // Without nvcc every build fails: an `error` outcome, which stops the run at the seed and
    // is clustered with a proposal. With nvcc (CI installs it) every candidate is built and the
    // fake worker passes it at 1 ms against a 2 ms baseline: validated, 2x. Which half runs is
    // decided by `cake`'s own discovery, never by the outcome, so a lost toolchain cannot pass.
    let nvcc = cake_testkit::require(
        cake_toolchain::Toolchain::discover(),
        "no CUDA toolchain, so only the unbuildable-seed half runs",
    )
    .is_some();
    let count = |k: &str| rep["counts"][k].as_u64().unwrap();
    assert_eq!(
        count("passed") + count("failed") + count("error") + count("quarantined"),
        evaluated,
        "{}",
        rep["counts"]
    );
    let signature = if !nvcc {
        assert!(count("error") > 0, "{}", rep["counts"]);
        assert_eq!(evaluated, 1, "a seed the harness cannot run stops the run");
        assert!(rep["run"]["status"]
            .as_str()
            .unwrap()
            .starts_with("done: the seed could not be evaluated"));
        "harness:error"
    } else {
        assert_eq!(count("error"), 0, "{}", rep["counts"]);
        assert!(count("quarantined") >= 1, "{}", rep["counts"]);
        assert!(
            rep["best"].is_null(),
            "a quarantined candidate is never the best"
        );
        "timing:below_floor"
    };
    assert!(
        rep["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["signature"] == signature),
        "{}",
        rep["clusters"]
    );
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn resume_keeps_the_stored_command_proposer() {
    let run = tempdir("resume-command");
    let r = run.to_str().unwrap();
    std::fs::create_dir_all(&run).unwrap();
    let marker = run.join("calls.txt");
    // The agent: note the call, propose best.py with a new comment, report 10 tokens.
    let script = format!(
        "echo stored-agent >> '{}'; n=$(wc -l < '{}'); {{ cat best.py; echo \"# call $n\"; }} > candidates/c.py; echo '{{\"tokens\": 10}}' > usage.json",
        marker.display(),
        marker.display()
    );
    let calls = || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let o = cake(
        &[
            "evolve",
            CONTRACT,
            "--seed",
            SEED,
            "--budget",
            "tokens=5,wall=120s",
            "--model-only",
            "--proposer",
            "command",
            "--command",
            &script,
            "--run",
            r,
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped: budget spent: tokens"), "{err}");
    assert_eq!(calls(), 1, "the seed, then one generation of the command");
    let rep = report_json(&run);
    let first = rep["counts"]["candidates"].as_u64().unwrap();
    // A proposer flag that disagrees with the stored one is refused, naming both.
    for (flag, value, stored) in [
        ("--proposer", "knobs", "proposer command"),
        ("--command", "true", "command \"echo stored-agent"),
    ] {
        let o = cake(
            &[
                "evolve",
                "--resume",
                "--run",
                r,
                "--budget",
                "tokens=15",
                flag,
                value,
            ],
            &[],
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(value) && err.contains(stored), "{flag}: {err}");
    }
    let o = cake(
        &["tune", "--resume", "--run", r, "--budget", "tokens=15"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "tune resumes knob runs only");
    let o = cake(
        &[
            "evolve",
            "--resume",
            "--run",
            r,
            "--top-k",
            "5",
            "--budget",
            "tokens=15",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--top-k 5 conflicts with this run's stored 2"),
        "{err}"
    );
    assert_eq!(calls(), 1, "refused resumes ran nothing");
    // Resumed with no proposer flags: the stored command proposes again.
    let o = cake(
        &[
            "evolve",
            "--resume",
            "--run",
            r,
            "--budget",
            "tokens=15,wall=120s",
        ],
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("stopped: budget spent: tokens"), "{err}");
    assert_eq!(calls(), 2, "the stored command ran on resume: {err}");
    let rep = report_json(&run);
    assert_eq!(rep["counts"]["candidates"].as_u64().unwrap(), first + 1);
    let _ = std::fs::remove_dir_all(&run);
}

/// `--gpu` ranks with the table measured on that card: the seed schedule's prediction is the
/// H100 table's, not the default (H200) table's.
#[test]
fn tune_ranks_for_the_gpu_asked_for() {
    let seed_prediction = |gpu: &[&str], name: &str| -> f64 {
        let run = tempdir(name);
        let r = run.to_str().unwrap();
        let mut args = vec![
            "tune",
            CONTRACT,
            "--seed",
            SEED,
            "--budget",
            "wall=0.001s",
            "--model-only",
            "--run",
            r,
        ];
        args.extend_from_slice(gpu);
        let o = cake(&args, &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let rep = report_json(&run);
        let _ = std::fs::remove_dir_all(&run);
        rep["trajectory"][0]["predicted_us"].as_f64().unwrap()
    };
    let default = seed_prediction(&[], "gpu-default");
    let h200 = seed_prediction(&["--gpu", "H200"], "gpu-h200");
    let h100 = seed_prediction(&["--gpu", "H100"], "gpu-h100");
    assert_eq!(default, h200);
    assert_ne!(default, h100);
}

/// `--gpu` is a run setting: stored when the run starts, kept by `--resume` (which ranks with the
/// same card's table), and a different card given on resume is refused.
#[test]
fn resume_keeps_the_stored_gpu() {
    let run = tempdir("gpu");
    let r = run.to_str().unwrap();
    let start = [
        "tune",
        CONTRACT,
        "--seed",
        SEED,
        "--budget",
        "wall=0.001s",
        "--model-only",
        "--gpu",
        "H100",
        "--run",
        r,
    ];
    // The card must have a table of the run's target: sm_80 has none.
    let mut sm80 = start.to_vec();
    sm80.extend(["--target", "sm_80"]);
    let o = cake(&sm80, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--gpu H100") && err.contains("no calibration for sm_80"),
        "{err}"
    );
    assert!(!run.join("archive.sqlite").exists(), "nothing was started");
    let o = cake(&start, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(report_json(&run)["run"]["config"]["gpu"], "H100");
    let other = cake(
        &[
            "tune", "--resume", "--run", r, "--budget", "wall=1s", "--gpu", "H200",
        ],
        &[],
    );
    assert_eq!(other.status.code(), Some(2));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("--gpu Some(\"H200\") conflicts"), "{err}");
    for again in [vec![], vec!["--gpu", "H100"]] {
        let mut args = vec!["tune", "--resume", "--run", r, "--budget", "wall=0.5s"];
        args.extend(again);
        let o = cake(&args, &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(report_json(&run)["run"]["config"]["gpu"], "H100");
    }
    let _ = std::fs::remove_dir_all(&run);
}
