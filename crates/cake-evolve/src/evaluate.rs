//! The GPU stage of the cascade. [`Evaluator`] is what the search calls; [`Harness`] is the real
//! one: `cake_eval::run` in bench mode (the full correctness protocol first, timing only when it
//! passes) through one supervised worker kept across candidates. A time under the physical
//! floor, which cake-eval flags as suspicious, makes the candidate `quarantined`: it is kept in
//! the archive with its evidence but never promoted.

use cake_eval::{Contract, Mode, Options, Supervisor};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// How a candidate's evaluation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed,
    /// The run could not judge the candidate (build, worker, contract).
    Error,
    /// Correct, but timed below the physical floor: not believed, not promoted.
    Quarantined,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::Error => "error",
            Outcome::Quarantined => "quarantined",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Evaluation {
    pub outcome: Outcome,
    pub verdict: String,
    /// Sum over the bench shapes of the candidate's median time (events), in microseconds.
    pub measured_us: Option<f64>,
    /// Geometric mean over the bench shapes of the speedup against the first baseline.
    pub speedup: Option<f64>,
    /// The `cake.evidence/v0` record (null when the run produced none).
    pub evidence: Value,
    /// Seconds of GPU-host time the evaluation took.
    pub gpu_s: f64,
}

pub trait Evaluator {
    /// Evaluate the schedule at `path` (already verified clean).
    fn evaluate(&mut self, path: &Path, progress: &mut dyn FnMut(&str)) -> Evaluation;
}

/// `cake bench` for every candidate, in one worker.
pub struct Harness {
    pub contract: Contract,
    pub supervisor: Supervisor,
    pub target: Option<String>,
    pub baseline: Option<String>,
    pub seed: Option<u64>,
    /// Where candidates are built (one directory each); `None`: cake-eval's build cache.
    pub build_root: Option<PathBuf>,
}

impl Evaluator for Harness {
    fn evaluate(&mut self, path: &Path, progress: &mut dyn FnMut(&str)) -> Evaluation {
        let started = std::time::Instant::now();
        let stem = path
            .file_stem()
            .map_or("candidate".into(), |s| s.to_string_lossy().into_owned());
        let opts = Options {
            kernel: Some(path.to_path_buf()),
            target: self.target.clone(),
            seed: self.seed,
            baseline: self.baseline.clone(),
            build_dir: self.build_root.as_ref().map(|r| r.join(stem)),
            shape_set: None,
            // Candidates are built for the exact target the run names: no PTX fallback.
            embed_ptx: false,
            python_candidate: None,
            timeline: false,
        };
        match cake_eval::run(
            &self.contract,
            Mode::Bench,
            &opts,
            &mut self.supervisor,
            progress,
        ) {
            Ok(e) => {
                let evidence = serde_json::to_value(&e).unwrap_or(Value::Null);
                from_evidence(evidence, e.budget.wall_s)
            }
            Err(e) => Evaluation {
                outcome: Outcome::Error,
                verdict: format!("error: {e}"),
                measured_us: None,
                speedup: None,
                evidence: Value::Null,
                gpu_s: started.elapsed().as_secs_f64(),
            },
        }
    }
}

/// Read an evidence record into an evaluation.
pub fn from_evidence(evidence: Value, gpu_s: f64) -> Evaluation {
    let verdict = evidence["verdict"]
        .as_str()
        .unwrap_or("error: no verdict")
        .to_string();
    let shapes = evidence["timing"]["shapes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let suspicious = shapes
        .iter()
        .any(|s| s["suspicious"].as_array().is_some_and(|a| !a.is_empty()));
    let outcome = if suspicious {
        Outcome::Quarantined
    } else if verdict == "passed" {
        Outcome::Passed
    } else if verdict.starts_with("error") {
        Outcome::Error
    } else {
        Outcome::Failed
    };
    let medians: Option<Vec<f64>> = shapes
        .iter()
        .map(|s| s["candidate"]["result"]["events_ms"]["median"].as_f64())
        .collect();
    let measured_us = medians
        .filter(|m| !m.is_empty())
        .map(|m| m.iter().sum::<f64>() * 1e3);
    let speedups: Option<Vec<f64>> = shapes
        .iter()
        .map(|s| {
            s["speedup"]
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|v| v["events"].as_f64())
        })
        .collect();
    let speedup = speedups
        .filter(|s| !s.is_empty())
        .map(|s| (s.iter().map(|x| x.ln()).sum::<f64>() / s.len() as f64).exp());
    let promoted = outcome == Outcome::Passed;
    Evaluation {
        outcome,
        verdict,
        measured_us: measured_us.filter(|_| promoted),
        speedup: speedup.filter(|_| promoted),
        evidence,
        gpu_s,
    }
}
