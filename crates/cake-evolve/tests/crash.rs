//! Crash safety: a search running in a child process (this test binary, re-run on the ignored
//! `crash_child` test) is killed with SIGKILL in the middle of a run; the archive keeps every
//! committed candidate, and `resume` goes on in the same run with no candidate twice.

mod common;

use cake_evolve::search::{Event, Search, Settings};
use cake_evolve::{Archive, Budget, KnobMutator};
use common::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const DIR_VAR: &str = "CAKE_EVOLVE_CRASH_DIR";

fn evaluator(sleep_ms: u64) -> Option<Box<dyn cake_evolve::Evaluator>> {
    Some(Box::new(Scripted { sleep_ms, calls: 0 }))
}

/// The child: a long GPU-budget run with slow evaluations, killed by the parent.
#[test]
#[ignore = "run by crash_mid_run_loses_nothing_and_resume_duplicates_nothing"]
fn crash_child() {
    let Ok(dir) = std::env::var(DIR_VAR) else {
        cake_testkit::skip(&format!(
            "runs only as the crash test's child ({DIR_VAR} unset)"
        ));
        return;
    };
    let mut s = Settings::new(
        PathBuf::from(dir),
        gemm_contract(),
        data("poor_gemm.py"),
        "gpu=100000s".parse::<Budget>().unwrap(),
    );
    s.per_generation = 4;
    s.top_k = 2;
    let mut search = Search::start(
        s,
        Box::new(KnobMutator::new(11)),
        Some(Box::new(Toy)),
        evaluator(30),
    )
    .unwrap();
    search.run(&mut |_e: Event| {}).unwrap();
    unreachable!("the parent kills this process before the budget is spent");
}

fn rows(dir: &Path) -> Vec<cake_evolve::Candidate> {
    let a = Archive::open_existing(dir).unwrap();
    let runs = a.runs().unwrap();
    runs.first()
        .map(|r| a.candidates(&r.id).unwrap())
        .unwrap_or_default()
}

#[test]
fn crash_mid_run_loses_nothing_and_resume_duplicates_nothing() {
    let dir = std::env::temp_dir().join(format!("cake-evolve-crash-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "crash_child", "--nocapture"])
        .env(DIR_VAR, &dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if dir.join(cake_evolve::archive::FILE).exists() && rows(&dir).len() >= 12 {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(120),
            "the child made no progress"
        );
        assert!(child.try_wait().unwrap().is_none(), "the child ended early");
    }
    // Mid-run: the child is evaluating (30 ms per candidate) or proposing right now.
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = rows(&dir);
    assert!(before.len() >= 12);

    // Everything committed is intact and readable; the database is consistent.
    {
        let conn = rusqlite::Connection::open(dir.join(cake_evolve::archive::FILE)).unwrap();
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
    let a = Archive::open_existing(&dir).unwrap();
    let run = a.runs().unwrap()[0].clone();
    assert_eq!(run.status, "running", "the killed run never finished");
    let spent = a.spent(&run.id).unwrap();
    drop(a);

    // Resume with a budget a few evaluations larger.
    let budget = Budget {
        gpu_s: Some(spent.gpu_s + 2.0),
        ..Budget::default()
    };
    let mut search = Search::resume(
        &dir,
        Some(budget),
        Box::new(KnobMutator::new(12)),
        Some(Box::new(Toy)),
        evaluator(0),
    )
    .unwrap();
    assert_eq!(search.run_id, run.id);
    assert_eq!(search.population().len(), before.len());
    let why = search.run(&mut |_e: Event| {}).unwrap();
    assert_eq!(why, "budget spent: gpu");

    let after = rows(&dir);
    assert!(
        after.len() > before.len(),
        "the resumed run added candidates"
    );
    // Nothing lost: every row committed before the kill is there, unchanged.
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(
            (b.seq, &b.hash, &b.verdict, b.cost_us),
            (a.seq, &a.hash, &a.verdict, a.cost_us)
        );
    }
    // Nothing duplicated: hashes unique in the run; one run in the archive.
    let hashes: BTreeSet<&String> = after.iter().map(|c| &c.hash).collect();
    assert_eq!(hashes.len(), after.len());
    assert_eq!(
        Archive::open_existing(&dir).unwrap().runs().unwrap().len(),
        1
    );
    // Generations continue after the last committed one.
    let last_before = before.iter().map(|c| c.generation).max().unwrap();
    assert!(after[before.len()..]
        .iter()
        .all(|c| c.generation > last_before));
    // The logs were rebuilt from the archive: one calibration line per evaluated candidate.
    let cal = std::fs::read_to_string(dir.join("calibration.jsonl")).unwrap();
    let evaluated = after.iter().filter(|c| c.measured_us.is_some()).count();
    assert_eq!(cal.lines().count(), evaluated);
    // Resuming a finished run with the same budget does nothing more.
    let mut again = Search::resume(
        &dir,
        None,
        Box::new(KnobMutator::new(13)),
        Some(Box::new(Toy)),
        evaluator(0),
    )
    .unwrap();
    assert_eq!(again.run(&mut |_e: Event| {}).unwrap(), "budget spent: gpu");
    assert_eq!(rows(&dir).len(), after.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn starting_over_an_existing_run_is_refused() {
    let dir = std::env::temp_dir().join(format!("cake-evolve-twice-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s = Settings::new(
        dir.clone(),
        gemm_contract(),
        data("poor_gemm.py"),
        "wall=5s".parse().unwrap(),
    );
    let mut m = s.clone();
    m.model_only = true;
    Search::start(m.clone(), Box::new(KnobMutator::new(1)), None, None).unwrap();
    let e = Search::start(m, Box::new(KnobMutator::new(1)), None, None)
        .err()
        .unwrap();
    assert!(e.contains("--resume"), "{e}");
    // Without --model-only a run needs an evaluator.
    let other = dir.join("other");
    let mut s2 = s;
    s2.run_dir = other;
    let e = Search::start(s2, Box::new(KnobMutator::new(1)), None, None)
        .err()
        .unwrap();
    assert!(e.contains("--model-only"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
