//! Proposers: where candidates come from. Each generation the search hands a proposer its
//! context — elites to start from (one per niche), the best validated candidate and its
//! evidence, and the feedback on the previous generation (findings, predicted vs measured) — and
//! takes back schedule sources and the tokens the proposal cost.
//!
//! [`KnobMutator`] is the offline, built-in one; `crate::external::Command` runs an agent,
//! `crate::chat::Chat` calls an OpenAI-compatible endpoint.

use crate::knobs;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;
use std::path::PathBuf;

/// A candidate the proposer may start from.
#[derive(Clone, Debug, Serialize)]
pub struct Parent {
    pub hash: String,
    pub source: String,
    pub niche: Option<String>,
    pub predicted_us: Option<f64>,
    pub measured_us: Option<f64>,
    pub speedup: Option<f64>,
    pub verdict: Option<String>,
}

/// What the previous generation taught: one entry per candidate that went through the cascade.
#[derive(Clone, Debug, Serialize)]
pub struct Feedback {
    pub hash: String,
    pub stage: String,
    /// Error findings, one line each: `CODE line N: message`.
    pub errors: Vec<String>,
    pub predicted_us: Option<f64>,
    /// How far to trust `predicted_us`, in (0, 1): 0.5 before this run measured anything of its
    /// bottleneck, then falling where the measurements disagreed with the predictions
    /// (`crate::rank::Calibration::confidence`).
    pub confidence: Option<f64>,
    pub measured_us: Option<f64>,
    /// The correctness protocol's outcome, when it ran: passed, failed, error, quarantined.
    pub correctness: Option<String>,
    pub verdict: Option<String>,
}

pub struct Context<'a> {
    pub generation: i64,
    /// Elites to mutate: the best of each niche, the overall best first.
    pub parents: &'a [Parent],
    /// The best validated candidate so far (or the best predicted in model-only runs).
    pub best: Option<&'a Parent>,
    /// Its evidence record, when it has one.
    pub best_evidence: Option<&'a Value>,
    pub feedback: &'a [Feedback],
    /// Every hash the run has seen (proposing one again is wasted).
    pub seen: &'a HashSet<String>,
    /// How many candidates the search would like.
    pub want: usize,
    pub contract: &'a std::path::Path,
    pub target: &'a str,
    pub entry: &'a str,
    /// The run directory (proposers may keep files under it).
    pub run_dir: &'a std::path::Path,
    /// Seconds of wall time left in the budget, if limited.
    pub wall_left_s: Option<f64>,
    /// The candidate hash function, so a proposer can skip what the run has seen.
    pub hash: &'a dyn Fn(&str) -> String,
    /// What earlier runs taught (`kernels/tactics.toml`): moves to skip, lessons to read.
    pub tactics: &'a crate::tactics::Tactics,
}

#[derive(Clone, Debug)]
pub struct Proposed {
    pub source: String,
    /// Hashes of the candidates it came from.
    pub parents: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Proposal {
    pub candidates: Vec<Proposed>,
    /// Tokens spent producing them (LLM usage).
    pub tokens: u64,
    /// Problems worth reporting that did not stop the proposal (a malformed reply, a timeout).
    pub notes: Vec<String>,
}

pub trait Proposer {
    fn name(&self) -> String;
    fn propose(&mut self, ctx: &Context) -> Proposal;
}

/// splitmix64: small, seedable, good enough to pick knobs.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }
}

/// Mutates module-level integer constants (tile sizes, stages, register budgets, swizzle,
/// cluster and persistence knobs written as constants) one or two at a time, starting from the
/// elites in turn. Knob values whose candidates the verifier rejected are remembered and not
/// tried again from the same parent, as are those whose candidates failed correctness on the
/// GPU; moves a tactic rules out are never made.
pub struct KnobMutator {
    rng: Rng,
    /// `(parent hash, knob, value)` that produced a rejected candidate.
    rejected: HashSet<(String, String, i64)>,
    /// What each proposed hash changed, to learn from feedback.
    edits: std::collections::HashMap<String, Vec<(String, String, i64)>>,
    /// Only these knobs (all when empty).
    pub only: Vec<String>,
}

impl KnobMutator {
    pub fn new(seed: u64) -> KnobMutator {
        KnobMutator {
            rng: Rng::new(seed),
            rejected: HashSet::new(),
            edits: Default::default(),
            only: Vec::new(),
        }
    }
}

impl Proposer for KnobMutator {
    fn name(&self) -> String {
        "knobs".into()
    }

    fn propose(&mut self, ctx: &Context) -> Proposal {
        for f in ctx.feedback {
            if f.stage == "rejected" || f.correctness.as_deref() == Some("failed") {
                if let Some(edits) = self.edits.get(&f.hash) {
                    self.rejected.extend(edits.iter().cloned());
                }
            }
        }
        let mut out = Proposal::default();
        if ctx.parents.is_empty() {
            out.notes.push("no parent to mutate".into());
            return out;
        }
        let mut batch = HashSet::new();
        let attempts = ctx.want * 20;
        for i in 0..attempts {
            if out.candidates.len() >= ctx.want {
                break;
            }
            // Round-robin over elites keeps several lineages alive; the first (the best) also
            // gets every other extra try.
            let parent = if i % 2 == 0 {
                &ctx.parents[(i / 2) % ctx.parents.len()]
            } else {
                &ctx.parents[self.rng.below(ctx.parents.len())]
            };
            let mut ks = knobs::knobs(&parent.source);
            if !self.only.is_empty() {
                ks.retain(|k| self.only.contains(&k.name));
            }
            if ks.is_empty() {
                continue;
            }
            let n_edits = if ks.len() > 1 && self.rng.below(4) == 0 {
                2
            } else {
                1
            };
            let mut edits: Vec<(&knobs::Knob, i64)> = Vec::new();
            for _ in 0..n_edits {
                let k = &ks[self.rng.below(ks.len())];
                if edits.iter().any(|(e, _)| e.name == k.name) {
                    continue;
                }
                let options: Vec<i64> = knobs::knob_neighbours(k)
                    .into_iter()
                    .filter(|v| {
                        !self
                            .rejected
                            .contains(&(parent.hash.clone(), k.name.clone(), *v))
                            && ctx.tactics.blocks(ctx.entry, &k.name, *v).is_none()
                    })
                    .collect();
                if options.is_empty() {
                    continue;
                }
                edits.push((k, options[self.rng.below(options.len())]));
            }
            if edits.is_empty() {
                continue;
            }
            let source = knobs::apply(&parent.source, &edits);
            let h = (ctx.hash)(&source);
            if ctx.seen.contains(&h) || !batch.insert(h.clone()) {
                continue;
            }
            self.edits.insert(
                h,
                edits
                    .iter()
                    .map(|(k, v)| (parent.hash.clone(), k.name.clone(), *v))
                    .collect(),
            );
            out.candidates.push(Proposed {
                source,
                parents: vec![parent.hash.clone()],
            });
        }
        if out.candidates.is_empty() {
            out.notes
                .push("every knob neighbour of the elites has been tried".into());
        }
        out
    }
}

/// Paths of the language and rule documentation, for proposers that brief an agent: found by
/// walking up from the contract to a checkout's `docs/`.
pub fn docs_paths(start: &std::path::Path) -> Vec<PathBuf> {
    let start = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    for dir in start.ancestors() {
        let docs = dir.join("docs");
        if docs.join("language.md").exists() {
            return ["language.md", "rules.md", "contracts.md", "agents.md"]
                .iter()
                .map(|f| docs.join(f))
                .filter(|p| p.exists())
                .collect();
        }
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tactics::Tactics;

    /// The values of `BN` the mutator proposes from one parent, after `feedback`.
    fn proposed_bn(m: &mut KnobMutator, feedback: &[Feedback], tactics: &Tactics) -> Vec<i64> {
        let parent = Parent {
            hash: "p".into(),
            source: "BN = 192\n".into(),
            niche: None,
            predicted_us: None,
            measured_us: None,
            speedup: None,
            verdict: None,
        };
        let seen = HashSet::new();
        let hash = |s: &str| s.to_string();
        let ctx = Context {
            generation: 1,
            parents: std::slice::from_ref(&parent),
            best: None,
            best_evidence: None,
            feedback,
            seen: &seen,
            want: 64,
            contract: std::path::Path::new("c.contract.toml"),
            target: "sm_90a",
            entry: "kmeans_assign",
            run_dir: std::path::Path::new("."),
            wall_left_s: None,
            hash: &hash,
            tactics,
        };
        let mut values: Vec<i64> = m
            .propose(&ctx)
            .candidates
            .iter()
            .map(|c| knobs::knobs(&c.source)[0].value)
            .collect();
        values.sort_unstable();
        values.dedup();
        values
    }

    fn feedback(hash: &str, stage: &str, correctness: Option<&str>) -> Feedback {
        Feedback {
            hash: hash.into(),
            stage: stage.into(),
            errors: Vec::new(),
            predicted_us: None,
            confidence: None,
            measured_us: None,
            correctness: correctness.map(str::to_string),
            verdict: None,
        }
    }

    #[test]
    fn moves_that_failed_on_the_gpu_or_that_a_tactic_rules_out_are_not_made() {
        let none = Tactics::default();
        let mut m = KnobMutator::new(1);
        let all = proposed_bn(&mut m, &[], &none);
        assert!(all.contains(&256), "{all:?}");
        // The candidate that set BN = 256 failed correctness: not proposed again.
        let failed = feedback("BN = 256\n", "evaluated", Some("failed"));
        let after = proposed_bn(&mut m, &[failed], &none);
        assert!(!after.contains(&256), "{after:?}");
        // One that passed is no reason to stop.
        let mut m = KnobMutator::new(1);
        proposed_bn(&mut m, &[], &none);
        let passed = feedback("BN = 256\n", "evaluated", Some("passed"));
        assert!(proposed_bn(&mut m, &[passed], &none).contains(&256));
        // A tactic for this kernel rules BN = 256 out from the start; one for another does not.
        let tactic = |kernel: &str| {
            Tactics::parse(&format!(
                "[[tactic]]\nid = \"t\"\nrule = \"CAKE-D006\"\nkernel = \"{kernel}\"\ntext = \"x\"\navoid = [{{ knob = \"BN\", values = [256] }}]\n"
            ))
            .unwrap()
        };
        let mut m = KnobMutator::new(1);
        assert!(!proposed_bn(&mut m, &[], &tactic("kmeans_assign")).contains(&256));
        let mut m = KnobMutator::new(1);
        assert!(proposed_bn(&mut m, &[], &tactic("gemm")).contains(&256));
    }
}
