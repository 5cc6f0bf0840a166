//! Where evidence goes besides the proposer: the compiler-evolution log
//! (`compiler-evolution.jsonl`: recurring failures clustered by signature, each with a proposal
//! of what the compiler should grow to catch or prevent it) and the calibration log
//! (`calibration.jsonl`: the estimator's prediction against the measurement).
//!
//! Both are derived from the archive: lines are appended after each commit, and a resumed run
//! rewrites them from the archive, so a crash never leaves a line for a candidate the archive
//! lost, nor loses one it kept.

use crate::archive::{Candidate, Stage};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

pub const EVOLUTION: &str = "compiler-evolution.jsonl";
pub const CALIBRATION: &str = "calibration.jsonl";

/// A prediction off by more than this factor either way is a calibration task.
pub const CALIBRATION_FACTOR: f64 = 2.0;

/// One recurring-failure class.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Signature {
    /// `rule:CAKE-S012`, `runtime:hang`, `runtime:error:cuda`, `mismatch:unwritten`,
    /// `timing:below_floor`, `calibration:<bottleneck>`, `harness:error`.
    pub signature: String,
    /// verifier | runtime | mismatch | timing | calibration | harness
    pub class: String,
    pub detail: String,
}

fn sig(class: &str, signature: String, detail: impl Into<String>) -> Signature {
    Signature {
        signature,
        class: class.into(),
        detail: detail.into(),
    }
}

/// The failure signatures of one candidate (none for a clean, believed one).
pub fn signatures(c: &Candidate) -> Vec<Signature> {
    let mut out = Vec::new();
    if c.stage == Stage::Rejected {
        let findings = c
            .findings
            .as_ref()
            .and_then(|f| f["findings"].as_array().cloned())
            .unwrap_or_default();
        for f in findings.iter().filter(|f| f["severity"] == "error") {
            let code = f["code"].as_str().unwrap_or("?");
            let line = f["span"]["start_line"].as_u64().unwrap_or(0);
            let msg = f["message"].as_str().unwrap_or("");
            out.push(sig(
                "verifier",
                format!("rule:{code}"),
                format!("line {line}: {msg}"),
            ));
        }
        if out.is_empty() {
            out.push(sig(
                "verifier",
                "rule:none".into(),
                c.verdict.clone().unwrap_or_default(),
            ));
        }
    }
    match c.correctness.as_deref() {
        Some("quarantined") => out.push(sig(
            "timing",
            "timing:below_floor".into(),
            c.verdict.clone().unwrap_or_default(),
        )),
        Some("error") => out.push(sig(
            "harness",
            "harness:error".into(),
            c.verdict.clone().unwrap_or_default(),
        )),
        Some("failed") => {
            let checks = c
                .evidence
                .as_ref()
                .and_then(|e| e["correctness"]["checks"].as_array().cloned())
                .unwrap_or_default();
            for ch in &checks {
                let f = &ch["failure"];
                if let Some(kind) = f["failure"].as_str() {
                    let s = match f["kind"].as_str() {
                        Some(k) => format!("runtime:{kind}:{k}"),
                        None => format!("runtime:{kind}"),
                    };
                    out.push(sig("runtime", s, f.to_string()));
                    continue;
                }
                let r = &ch["result"];
                if ch["passed"] == false && r.is_object() {
                    let outputs = r["outputs"].as_object().cloned().unwrap_or_default();
                    let any = |field: &str| {
                        outputs
                            .values()
                            .any(|o| o[field].as_u64().is_some_and(|n| n > 0))
                    };
                    let pattern = if r["inputs_unmodified"] == false {
                        "inputs_modified"
                    } else if any("unwritten") {
                        "unwritten"
                    } else if any("nonfinite") {
                        "nonfinite"
                    } else if r["deterministic"] == false {
                        "nondeterministic"
                    } else {
                        "values"
                    };
                    out.push(sig(
                        "mismatch",
                        format!("mismatch:{pattern}"),
                        r["reason"].as_str().unwrap_or("").to_string(),
                    ));
                }
            }
            if checks.is_empty() || out.is_empty() {
                out.push(sig(
                    "runtime",
                    "runtime:failed".into(),
                    c.verdict.clone().unwrap_or_default(),
                ));
            }
        }
        _ => {}
    }
    if let Some(ratio) = calibration_ratio(c) {
        if !(1.0 / CALIBRATION_FACTOR..=CALIBRATION_FACTOR).contains(&ratio) {
            out.push(sig(
                "calibration",
                format!(
                    "calibration:{}",
                    c.bottleneck.as_deref().unwrap_or("unclassified")
                ),
                format!("measured / predicted = {ratio:.3}"),
            ));
        }
    }
    out.dedup_by(|a, b| a.signature == b.signature);
    out
}

/// What a signature should become, given how often it has been seen.
pub fn proposal(s: &Signature, occurrences: u64) -> String {
    match s.class.as_str() {
        "verifier" if occurrences >= 3 => format!(
            "primitive: `{}` keeps being written; an IR primitive or a derived default should make it unwritable",
            s.signature.trim_start_matches("rule:")
        ),
        "verifier" => format!(
            "proposer hint: feed `cake explain {}` to the proposer",
            s.signature.trim_start_matches("rule:")
        ),
        "runtime" | "mismatch" => format!(
            "verifier rule: `{}` passed every static gate and failed on the GPU; find the hazard statically",
            s.signature
        ),
        "timing" => "verifier rule: a speed-of-light finding from the estimator's bound should reject such a candidate before the GPU".into(),
        "calibration" => format!(
            "calibration task: re-fit the cost model for the `{}` class against these measurements",
            s.signature.trim_start_matches("calibration:")
        ),
        _ => "coverage: a verified schedule the harness could not run is a compiler or lowering bug".into(),
    }
}

pub fn calibration_ratio(c: &Candidate) -> Option<f64> {
    let (p, m) = (c.cost_us?, c.measured_us?);
    (p > 0.0 && m > 0.0).then(|| m / p)
}

/// The calibration line of a candidate, when it has both a prediction and a measurement.
pub fn calibration_line(c: &Candidate) -> Option<Value> {
    let ratio = calibration_ratio(c)?;
    Some(json!({
        "hash": c.hash, "generation": c.generation, "niche": c.niche,
        "bottleneck": c.bottleneck, "predicted_us": c.cost_us, "measured_us": c.measured_us,
        "ratio": ratio, "log_error": ratio.ln(),
    }))
}

/// Appends to the two logs, counting occurrences per signature.
#[derive(Default)]
pub struct Logs {
    pub counts: BTreeMap<String, u64>,
}

impl Logs {
    /// Rewrite both logs from the archive's candidates (used when a run starts or resumes).
    pub fn rebuild(dir: &Path, candidates: &[Candidate]) -> Result<Logs, String> {
        for f in [EVOLUTION, CALIBRATION] {
            std::fs::write(dir.join(f), "")
                .map_err(|e| format!("{}: {e}", dir.join(f).display()))?;
        }
        let mut logs = Logs::default();
        for c in candidates {
            logs.append(dir, c)?;
        }
        Ok(logs)
    }

    pub fn append(&mut self, dir: &Path, c: &Candidate) -> Result<(), String> {
        let mut evo = String::new();
        for s in signatures(c) {
            let n = self.counts.entry(s.signature.clone()).or_insert(0);
            *n += 1;
            let line = json!({
                "hash": c.hash, "generation": c.generation, "proposer": c.proposer,
                "signature": s.signature, "class": s.class, "detail": s.detail,
                "occurrences": *n, "proposal": proposal(&s, *n),
            });
            evo += &format!("{line}\n");
        }
        write_append(&dir.join(EVOLUTION), &evo)?;
        if let Some(l) = calibration_line(c) {
            write_append(&dir.join(CALIBRATION), &format!("{l}\n"))?;
        }
        Ok(())
    }
}

fn write_append(path: &Path, text: &str) -> Result<(), String> {
    if text.is_empty() {
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Clusters of the compiler-evolution log: signature → (class, count, proposal, example hashes).
pub fn clusters(candidates: &[Candidate]) -> Vec<Value> {
    let mut by: BTreeMap<String, (Signature, u64, Vec<String>)> = BTreeMap::new();
    for c in candidates {
        for s in signatures(c) {
            let e = by
                .entry(s.signature.clone())
                .or_insert_with(|| (s.clone(), 0, Vec::new()));
            e.1 += 1;
            if e.2.len() < 5 {
                e.2.push(c.hash[..12.min(c.hash.len())].to_string());
            }
        }
    }
    let mut v: Vec<_> = by.into_values().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.signature.cmp(&b.0.signature)));
    v.into_iter()
        .map(|(s, n, ex)| {
            json!({"signature": s.signature, "class": s.class, "count": n,
                   "proposal": proposal(&s, n), "examples": ex})
        })
        .collect()
}
