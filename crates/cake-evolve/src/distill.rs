//! `cake distill`: recurring failures across run archives become reviewable artifacts, and a gate
//! decides whether what people made of them may land.
//!
//! Each failure signature (`logs::signatures`) seen at least `min` times across the runs is a
//! cluster. By class:
//! - a GPU failure after clean static gates (`runtime:*`, `mismatch:*`): the members' schedules,
//!   one reduced against its parent (knob edits that do not change the generated CUDA dropped),
//!   and a draft rule statement. Once a rule is written, the gate checks that it catches every
//!   member and leaves the corpus clean;
//! - predictions off by more than `logs::CALIBRATION_FACTOR` (`calibration:*`): a refit of the
//!   bottleneck's scale from the members' measurements, with the accuracy before and after;
//! - recurring verifier rejections (`rule:*`): a draft tactic for `kernels/tactics.toml` — the
//!   knob moves that kept being rejected, and what the candidates that passed did instead;
//! - recurring "not lowered" (`rule:CAKE-V001`): a primitive request listing the schedules that
//!   needed it.

use crate::archive::{Archive, Candidate};
use crate::logs::{signatures, Signature};
use crate::tactics::{Avoid, Tactic, Tactics};
use cake_mutate::knobs;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The summary file `cake distill` writes, and `--gate` reads.
pub const SUMMARY: &str = "distill.json";

/// A candidate and where it came from.
#[derive(Clone, Debug)]
pub struct Member {
    pub run_dir: PathBuf,
    pub target: String,
    pub candidate: Candidate,
    pub parent: Option<Candidate>,
}

/// Every member of one failure signature.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub signature: Signature,
    pub members: Vec<Member>,
}

/// The candidates of every run in each run directory, with their run's target.
pub fn load(dirs: &[PathBuf]) -> Result<Vec<(PathBuf, String, Vec<Candidate>)>, String> {
    let mut out = Vec::new();
    for dir in dirs {
        let archive = Archive::open_existing(dir)?;
        for run in archive.runs()? {
            let candidates = archive.candidates(&run.id)?;
            out.push((dir.clone(), run.target.clone(), candidates));
        }
    }
    Ok(out)
}

/// The clusters of `min` or more members, largest first.
pub fn clusters(runs: &[(PathBuf, String, Vec<Candidate>)], min: usize) -> Vec<Cluster> {
    let by_hash: BTreeMap<&str, &Candidate> = runs
        .iter()
        .flat_map(|(_, _, cs)| cs.iter().map(|c| (c.hash.as_str(), c)))
        .collect();
    let mut by: BTreeMap<String, Cluster> = BTreeMap::new();
    for (dir, target, cs) in runs {
        for c in cs {
            for s in signatures(c) {
                let parent = c
                    .parents
                    .first()
                    .and_then(|h| by_hash.get(h.as_str()))
                    .map(|p| (*p).clone());
                by.entry(s.signature.clone())
                    .or_insert_with(|| Cluster {
                        signature: s.clone(),
                        members: Vec::new(),
                    })
                    .members
                    .push(Member {
                        run_dir: dir.clone(),
                        target: target.clone(),
                        candidate: c.clone(),
                        parent,
                    });
            }
        }
    }
    let mut out: Vec<Cluster> = by
        .into_values()
        .filter(|c| c.members.len() >= min)
        .collect();
    out.sort_by(|a, b| {
        b.members
            .len()
            .cmp(&a.members.len())
            .then(a.signature.signature.cmp(&b.signature.signature))
    });
    out
}

/// The knob edits that turn `parent` into `child` — `(knob, parent value, child value)` — when
/// the two differ in module-level integer constants only.
pub fn knob_edits(parent: &str, child: &str) -> Option<Vec<(String, i64, i64)>> {
    let pk = knobs::knobs(parent);
    let ck = knobs::knobs(child);
    if pk.len() != ck.len() || pk.iter().zip(&ck).any(|(a, b)| a.name != b.name) {
        return None;
    }
    let edits: Vec<(&knobs::Knob, i64)> = pk
        .iter()
        .zip(&ck)
        .filter(|(a, b)| a.value != b.value)
        .map(|(a, b)| (a, b.value))
        .collect();
    (knobs::apply(parent, &edits) == child).then(|| {
        edits
            .iter()
            .map(|(k, v)| (k.name.clone(), k.value, *v))
            .collect()
    })
}

/// What `source` lowers to for `target` (every kernel's CUDA and launch metadata), or `None`
/// when it does not check clean or lower.
fn lowered(source: &str, target: &str) -> Option<String> {
    let (_, kernels) = cake_driver::lower("candidate.py", source.as_bytes(), target).ok()?;
    Some(
        kernels
            .iter()
            .map(|l| {
                format!(
                    "{}\n{}",
                    l.cuda,
                    serde_json::to_string(&l.launch).unwrap_or_default()
                )
            })
            .collect(),
    )
}

/// `child` with each knob edit from `parent` reverted where that leaves the generated code
/// unchanged: what remains are the edits the failure can depend on (the harness ran the code,
/// not the text). The child itself when it is not a knob edit of the parent or does not lower.
pub fn reduce(parent: &str, child: &str, target: &str) -> (String, Vec<(String, i64, i64)>) {
    let Some(edits) = knob_edits(parent, child) else {
        return (child.to_string(), Vec::new());
    };
    let Some(goal) = lowered(child, target) else {
        return (child.to_string(), edits);
    };
    let mut kept = edits.clone();
    let mut current = child.to_string();
    for e in &edits {
        let ks = knobs::knobs(&current);
        let Some(k) = ks.iter().find(|k| k.name == e.0) else {
            continue;
        };
        let trial = knobs::apply(&current, &[(k, e.1)]);
        if lowered(&trial, target).as_deref() == Some(goal.as_str()) {
            current = trial;
            kept.retain(|x| x.0 != e.0);
        }
    }
    (current, kept)
}

/// Median of |ln(measured / predicted)| over `pairs`, after scaling predictions by `scale`.
fn median_log_error(pairs: &[(f64, f64)], scale: f64) -> f64 {
    let mut e: Vec<f64> = pairs
        .iter()
        .map(|(p, m)| (m / (p * scale)).ln().abs())
        .collect();
    e.sort_by(|a, b| a.total_cmp(b));
    e.get(e.len() / 2).copied().unwrap_or(0.0)
}

fn slug(signature: &str) -> String {
    signature
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn short(hash: &str) -> &str {
    &hash[..12.min(hash.len())]
}

/// Single knob moves `(knob, value)` of candidates the verifier accepted: a tactic must not rule
/// them out, whatever else was rejected.
pub fn accepted_moves(runs: &[(PathBuf, String, Vec<Candidate>)]) -> Vec<(String, i64)> {
    let by_hash: BTreeMap<&str, &Candidate> = runs
        .iter()
        .flat_map(|(_, _, cs)| cs.iter().map(|c| (c.hash.as_str(), c)))
        .collect();
    let mut out = Vec::new();
    for c in runs.iter().flat_map(|(_, _, cs)| cs) {
        if c.stage == crate::archive::Stage::Rejected {
            continue;
        }
        let Some(parent) = c.parents.first().and_then(|h| by_hash.get(h.as_str())) else {
            continue;
        };
        for (k, _, v) in knob_edits(&parent.source, &c.source).unwrap_or_default() {
            out.push((k, v));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Distil `clusters` into `out`: one folder per cluster, and `distill.json` listing them.
/// `accepted` are the knob moves candidates passed the verifier with ([`accepted_moves`]).
pub fn distill(
    clusters: &[Cluster],
    accepted: &[(String, i64)],
    out: &Path,
) -> Result<Value, String> {
    let mut artifacts = Vec::new();
    for c in clusters {
        let dir = out.join(slug(&c.signature.signature));
        let members: Vec<Value> = c
            .members
            .iter()
            .map(|m| {
                json!({"hash": m.candidate.hash, "run": m.run_dir, "target": m.target,
                       "parent": m.parent.as_ref().map(|p| p.hash.clone())})
            })
            .collect();
        let mut doc = json!({
            "signature": c.signature.signature, "class": c.signature.class,
            "count": c.members.len(), "folder": dir, "members": members,
        });
        match (c.signature.class.as_str(), c.signature.signature.as_str()) {
            ("runtime" | "mismatch", _) => rule_draft(c, &dir, &mut doc)?,
            ("calibration", _) => calibration_refit(c, &dir, &mut doc)?,
            ("verifier", "rule:CAKE-V001") => primitive_request(c, &dir, &mut doc)?,
            ("verifier", _) => tactic_draft(c, accepted, &dir, &mut doc)?,
            _ => doc["kind"] = json!("report"),
        }
        artifacts.push(doc);
    }
    let summary = json!({"schema": "cake.distill/v0", "artifacts": artifacts});
    write(
        &out.join(SUMMARY),
        &(serde_json::to_string_pretty(&summary).unwrap_or_default() + "\n"),
    )?;
    Ok(summary)
}

/// A GPU failure after clean static gates: every member's schedule under `members/`, the first
/// one with a parent reduced to the edits that change its code, and a draft rule statement.
fn rule_draft(c: &Cluster, dir: &Path, doc: &mut Value) -> Result<(), String> {
    doc["kind"] = json!("rule");
    for m in &c.members {
        write(
            &dir.join("members")
                .join(format!("{}.py", short(&m.candidate.hash))),
            &m.candidate.source,
        )?;
    }
    let first = c
        .members
        .iter()
        .find(|m| m.parent.is_some())
        .or(c.members.first());
    let Some(first) = first else { return Ok(()) };
    let (reduced, edits) = match &first.parent {
        Some(p) => reduce(&p.source, &first.candidate.source, &first.target),
        None => (first.candidate.source.clone(), Vec::new()),
    };
    // Knobs every member with a knob-edit parent changed, and the values it took.
    let mut changed: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut with_parent = 0;
    for m in &c.members {
        if let Some(es) = m
            .parent
            .as_ref()
            .and_then(|p| knob_edits(&p.source, &m.candidate.source))
        {
            with_parent += 1;
            for (k, _, v) in es {
                changed.entry(k).or_default().push(v);
            }
        }
    }
    let header = format!(
        "# Distilled from {} candidates with the failure `{}`: they passed every static gate and\n\
         # failed on the GPU. Reduced from {} against its parent {}: the knob edits left are the\n\
         # ones that change the generated code ({}). Review it, then mark the line a new rule\n\
         # should flag with `# error[CAKE-XXXX]: ...` and move it under tests/check/.\n",
        c.members.len(),
        c.signature.signature,
        short(&first.candidate.hash),
        first.parent.as_ref().map_or("(none)", |p| short(&p.hash)),
        if edits.is_empty() {
            "none isolated".to_string()
        } else {
            edits
                .iter()
                .map(|(k, a, b)| format!("{k} {a} -> {b}"))
                .collect::<Vec<_>>()
                .join(", ")
        }
    );
    write(&dir.join("minimized.py"), &(header + &reduced))?;
    let mut md = String::new();
    let _ = writeln!(md, "# Draft rule: `{}`\n", c.signature.signature);
    let _ = writeln!(
        md,
        "{} candidates passed the verifier and failed the correctness protocol on the GPU with \
         `{}`. What the harness saw (first member): {}\n",
        c.members.len(),
        c.signature.signature,
        first.candidate.verdict.as_deref().unwrap_or("(no verdict)")
    );
    if !changed.is_empty() {
        let _ = writeln!(
            md,
            "Of the {with_parent} members that are knob edits of their parent, the knobs they set:"
        );
        for (k, vs) in &changed {
            let _ = writeln!(md, "- `{k}` = {vs:?}");
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "**Statement (draft).** A schedule like `minimized.py` must be rejected before the GPU: \
         name the hazard the edits above create, the finding's code and span, and the expected \
         and derived values. The gate (`cake distill --gate`) accepts the rule when every file \
         under `members/` is caught and the corpus (examples, kernels, every good test file) \
         stays clean."
    );
    write(&dir.join("rule.md"), &md)?;
    doc["minimized"] = json!(dir.join("minimized.py"));
    doc["edits"] = json!(edits);
    Ok(())
}

/// Predictions off by more than the calibration factor: the scale that centres the members'
/// measured / predicted ratios, and the median error before and after it.
fn calibration_refit(c: &Cluster, dir: &Path, doc: &mut Value) -> Result<(), String> {
    doc["kind"] = json!("calibration");
    let pairs: Vec<(f64, f64)> = c
        .members
        .iter()
        .filter_map(|m| Some((m.candidate.cost_us?, m.candidate.measured_us?)))
        .filter(|(p, m)| *p > 0.0 && *m > 0.0)
        .collect();
    if pairs.is_empty() {
        return Ok(());
    }
    let scale = (pairs.iter().map(|(p, m)| (m / p).ln()).sum::<f64>() / pairs.len() as f64).exp();
    let (before, after) = (
        median_log_error(&pairs, 1.0),
        median_log_error(&pairs, scale),
    );
    let bottleneck = c.signature.signature.trim_start_matches("calibration:");
    let refit = json!({
        "bottleneck": bottleneck, "points": pairs.len(), "scale": scale,
        "median_error_before": before.exp() - 1.0, "median_error_after": after.exp() - 1.0,
    });
    write(
        &dir.join("calibration.json"),
        &(serde_json::to_string_pretty(&refit).unwrap_or_default() + "\n"),
    )?;
    doc["refit"] = refit;
    Ok(())
}

/// Recurring verifier rejections: the single knob moves the members were rejected after, as a
/// draft tactic, less any move another candidate passed the verifier with (`accepted`).
fn tactic_draft(
    c: &Cluster,
    accepted: &[(String, i64)],
    dir: &Path,
    doc: &mut Value,
) -> Result<(), String> {
    doc["kind"] = json!("tactic");
    let code = c
        .signature
        .signature
        .trim_start_matches("rule:")
        .to_string();
    let mut moves: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for m in &c.members {
        if let Some(es) = m
            .parent
            .as_ref()
            .and_then(|p| knob_edits(&p.source, &m.candidate.source))
        {
            // Only a single edit pins the rejection on one knob.
            if let [(k, _, v)] = es.as_slice() {
                moves.entry(k.clone()).or_default().push(*v);
            }
        }
    }
    let avoid: Vec<Avoid> = moves
        .into_iter()
        .map(|(knob, mut values)| {
            values.sort_unstable();
            values.dedup();
            values.retain(|v| !accepted.contains(&(knob.clone(), *v)));
            Avoid { knob, values }
        })
        .filter(|a| !a.values.is_empty())
        .collect();
    // The first member's finding of this rule, as an example.
    let detail = c
        .members
        .iter()
        .flat_map(|m| {
            let f = m.candidate.findings.clone().unwrap_or(Value::Null);
            f["findings"].as_array().cloned().unwrap_or_default()
        })
        .find(|f| f["code"].as_str() == Some(code.as_str()))
        .and_then(|f| f["message"].as_str().map(str::to_string))
        .unwrap_or_default();
    let text = if avoid.is_empty() {
        format!("Candidates kept being rejected with {code}: {detail}")
    } else {
        format!(
            "Candidates kept being rejected with {code} after setting {}: {detail}",
            avoid
                .iter()
                .map(|a| format!("{} to {:?}", a.knob, a.values))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let kernel = c.members.first().and_then(|m| {
        cake_driver::check("candidate.py", m.candidate.source.as_bytes(), None)
            .kernels
            .first()
            .map(|k| k.name.clone())
    });
    let tactic = Tactic {
        id: slug(&format!(
            "{}-{code}-{}",
            kernel.as_deref().unwrap_or("any"),
            avoid.first().map_or("moves", |a| a.knob.as_str())
        )),
        rule: code,
        kernel,
        text,
        avoid,
        evidence: format!("{} rejected candidates", c.members.len()),
    };
    let tactics = Tactics {
        tactics: vec![tactic.clone()],
    };
    write(&dir.join("tactic.toml"), &tactics.to_toml())?;
    doc["tactic"] = serde_json::to_value(&tactic).unwrap_or(Value::Null);
    Ok(())
}

/// Recurring "not lowered": what the members needed, for a primitive request.
fn primitive_request(c: &Cluster, dir: &Path, doc: &mut Value) -> Result<(), String> {
    doc["kind"] = json!("primitive");
    let mut md = format!(
        "# Primitive request: {} schedules needed what is not lowered\n\n",
        c.members.len()
    );
    for m in &c.members {
        write(
            &dir.join("members")
                .join(format!("{}.py", short(&m.candidate.hash))),
            &m.candidate.source,
        )?;
        let findings = m.candidate.findings.clone().unwrap_or(Value::Null);
        for f in findings["findings"].as_array().into_iter().flatten() {
            if f["code"] == "CAKE-V001" {
                let _ = writeln!(
                    md,
                    "- `members/{}.py` line {}: {}",
                    short(&m.candidate.hash),
                    f["span"]["start_line"],
                    f["message"].as_str().unwrap_or("")
                );
            }
        }
    }
    write(&dir.join("primitive.md"), &md)?;
    Ok(())
}

/// The gate's verdict on one artifact.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub folder: PathBuf,
    pub kind: String,
    pub accepted: bool,
    pub reasons: Vec<String>,
}

/// Schedules the compiler must keep accepting: every `.py` under `examples/` and `kernels/`
/// and every `*-good.py` under `tests/check/`, from the checkout at `root`.
pub fn corpus(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|e| e == "py") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&root.join("examples"), &mut out);
    walk(&root.join("kernels"), &mut out);
    let mut good = Vec::new();
    walk(&root.join("tests/check"), &mut good);
    out.extend(good.into_iter().filter(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with("-good.py"))
    }));
    out
}

/// Whether `source` is a schedule the checker rejects (an error finding).
fn rejected(name: &str, source: &str) -> bool {
    cake_driver::check(name, source.as_bytes(), None).has_errors()
}

/// Files of the corpus that are schedules (declare a `@cake.schedule`) and no longer check
/// clean: each one is a regression.
pub fn corpus_regressions(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .filter_map(|p| {
            let text = std::fs::read_to_string(p).ok()?;
            (text.contains("@cake.schedule") && rejected(&p.display().to_string(), &text))
                .then(|| p.display().to_string())
        })
        .collect()
}

/// Judge what people made of `out`'s artifacts against the compiler as it is now: a rule is
/// accepted when every member is caught and `corpus` stays clean; a calibration when its refit
/// lowers the median error; a tactic when the repository's tactics file rules out every move it
/// names; a primitive when no member is still "not lowered".
pub fn gate(out: &Path, corpus: &[PathBuf], tactics: &Tactics) -> Result<Vec<Verdict>, String> {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join(SUMMARY))
            .map_err(|e| format!("{}: {e}", out.join(SUMMARY).display()))?,
    )
    .map_err(|e| format!("{}: {e}", out.join(SUMMARY).display()))?;
    let artifacts = summary["artifacts"].as_array().cloned().unwrap_or_default();
    // Checking the corpus takes a while: only rules need it.
    let regressions = if artifacts.iter().any(|a| a["kind"] == "rule") {
        corpus_regressions(corpus)
    } else {
        Vec::new()
    };
    let mut verdicts = Vec::new();
    for a in &artifacts {
        let folder = PathBuf::from(a["folder"].as_str().unwrap_or(""));
        let kind = a["kind"].as_str().unwrap_or("report").to_string();
        let mut reasons = Vec::new();
        let member_files = || -> Vec<PathBuf> {
            let mut fs: Vec<PathBuf> = std::fs::read_dir(folder.join("members"))
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            fs.sort();
            fs
        };
        let accepted = match kind.as_str() {
            "rule" => {
                for f in member_files() {
                    let text = std::fs::read_to_string(&f).unwrap_or_default();
                    if !rejected(&f.display().to_string(), &text) {
                        reasons.push(format!("{} still checks clean", f.display()));
                    }
                }
                for r in &regressions {
                    reasons.push(format!("corpus: {r} no longer checks clean"));
                }
                reasons.is_empty()
            }
            "calibration" => {
                let before = a["refit"]["median_error_before"].as_f64().unwrap_or(0.0);
                let after = a["refit"]["median_error_after"].as_f64().unwrap_or(0.0);
                if after >= before {
                    reasons.push(format!(
                        "the refit does not lower the median error ({before:.3} -> {after:.3})"
                    ));
                }
                reasons.is_empty()
            }
            "tactic" => {
                let avoid: Vec<Avoid> =
                    serde_json::from_value(a["tactic"]["avoid"].clone()).unwrap_or_default();
                if avoid.is_empty() {
                    reasons.push("the draft names no knob move to rule out".into());
                }
                for av in &avoid {
                    for v in &av.values {
                        let kernel = a["tactic"]["kernel"].as_str().unwrap_or("");
                        if tactics.blocks(kernel, &av.knob, *v).is_none() {
                            reasons.push(format!(
                                "the tactics file does not rule out {} = {v}",
                                av.knob
                            ));
                        }
                    }
                }
                reasons.is_empty()
            }
            "primitive" => {
                for f in member_files() {
                    let text = std::fs::read_to_string(&f).unwrap_or_default();
                    let checked =
                        cake_driver::check(&f.display().to_string(), text.as_bytes(), None);
                    if checked.findings.iter().any(|x| x.code == "CAKE-V001") {
                        reasons.push(format!("{} is still not lowered", f.display()));
                    }
                }
                reasons.is_empty()
            }
            _ => false,
        };
        verdicts.push(Verdict {
            folder,
            kind,
            accepted,
            reasons,
        });
    }
    Ok(verdicts)
}
