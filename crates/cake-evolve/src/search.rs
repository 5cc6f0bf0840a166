//! The search loop. Each generation: the proposer's candidates → parse and type → verifier gates
//! → cost ranking (top k by predicted time, when there is an estimator) → GPU evaluation
//! (correctness, then timing) → the archive, one committed row per candidate → evidence routed
//! to the proposer (next generation's feedback), the compiler-evolution log and the calibration
//! log. Selection is MAP-Elites style: the population is split into niches (bottleneck class ×
//! schedule structure) and every niche's best is a parent, so no single lineage takes over.
//! The run stops when a budget (tokens, wall seconds, GPU seconds) is spent.

use crate::archive::{self, Archive, Candidate, RunRow, Stage};
use crate::budget::{Budget, Spent};
use crate::estimate::{self, Estimator};
use crate::evaluate::{Evaluator, Outcome};
use crate::logs::Logs;
use crate::propose::{Context, Feedback, Parent, Proposal, Proposer};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A run's settings (stored in the archive so `--resume` needs only the directory).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Settings {
    pub run_dir: PathBuf,
    pub contract: PathBuf,
    pub seed: PathBuf,
    /// The exact target candidates are verified (and evaluated) for; default: the contract's
    /// first.
    pub target: Option<String>,
    pub budget: Budget,
    /// Never evaluate on the GPU: rank by the estimator only.
    pub model_only: bool,
    /// Candidates asked of the proposer per generation.
    pub per_generation: usize,
    /// Clean candidates evaluated per generation (the best predicted, when there is an estimator).
    pub top_k: usize,
    /// Elites handed to the proposer.
    pub parents: usize,
    pub rng_seed: u64,
    /// How the proposer is made, so `--resume` continues with the one the run started with.
    /// `None` in archives of runs started before it was stored.
    #[serde(default)]
    pub proposer: Option<ProposerSettings>,
    /// The one baseline timed (speedups are against it); `None`: every baseline.
    #[serde(default)]
    pub baseline: Option<String>,
    /// The GPU whose calibration table the cost model ranks with (`--gpu`); `None`: the
    /// target's default table (and in archives of runs started before it was stored).
    #[serde(default)]
    pub gpu: Option<String>,
}

/// A run's proposer, as the front door that starts the run makes it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposerSettings {
    /// `knobs`, `command` or `chat`.
    pub kind: String,
    /// The external agent's command (`command`).
    pub command: Option<String>,
    /// The external agent's wall-time limit per generation, in seconds (`command`).
    pub command_timeout_s: f64,
    /// Chat requests per generation (`chat`).
    pub chat_requests: usize,
    /// The chat model (`chat`; the endpoint and key come from the environment).
    pub chat_model: Option<String>,
}

impl Settings {
    pub fn new(run_dir: PathBuf, contract: PathBuf, seed: PathBuf, budget: Budget) -> Settings {
        Settings {
            run_dir,
            contract,
            seed,
            target: None,
            budget,
            model_only: false,
            per_generation: 8,
            top_k: 2,
            parents: 6,
            rng_seed: 1,
            proposer: None,
            baseline: None,
            gpu: None,
        }
    }
}

/// What the loop reports as it goes (for progress bars and logs).
pub enum Event<'a> {
    Candidate(&'a Candidate),
    Generation {
        generation: i64,
        spent: Spent,
        fraction: f64,
        best: Option<&'a Candidate>,
    },
    Note(String),
}

pub struct Search {
    pub settings: Settings,
    pub run_id: String,
    archive: Archive,
    contract: cake_eval::Contract,
    target: String,
    shapes: Vec<BTreeMap<String, i64>>,
    proposer: Box<dyn Proposer>,
    estimator: Option<Box<dyn Estimator>>,
    evaluator: Option<Box<dyn Evaluator>>,
    population: Vec<Candidate>,
    seen: HashSet<String>,
    feedback: Vec<Feedback>,
    logs: Logs,
    generation: i64,
    /// The checkout's tactics file (`kernels/tactics.toml`), for every proposer.
    tactics: crate::tactics::Tactics,
}

/// The hash that identifies a candidate within a run: its text and the target.
pub fn candidate_hash(source: &str, target: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    h.update([0u8]);
    h.update(target.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn load_contract(p: &Path) -> Result<cake_eval::Contract, String> {
    cake_eval::Contract::load(p).map_err(|errs| {
        errs.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })
}

impl Search {
    /// Start a new run in `settings.run_dir` (which must not hold one already).
    pub fn start(
        settings: Settings,
        proposer: Box<dyn Proposer>,
        estimator: Option<Box<dyn Estimator>>,
        evaluator: Option<Box<dyn Evaluator>>,
    ) -> Result<Search, String> {
        needs_evaluator(&settings, evaluator.is_some())?;
        let archive = Archive::open(&settings.run_dir)?;
        if !archive.runs()?.is_empty() {
            return Err(format!(
                "{} already holds a run; pass --resume to continue it, or choose another directory",
                settings.run_dir.display()
            ));
        }
        // Absolute paths, so `--resume` works from any directory.
        let mut settings = settings;
        for p in [&mut settings.contract, &mut settings.seed] {
            if let Ok(abs) = std::fs::canonicalize(&*p) {
                *p = abs;
            }
        }
        let contract = load_contract(&settings.contract)?;
        if !settings.seed.exists() {
            return Err(format!(
                "the seed {} does not exist",
                settings.seed.display()
            ));
        }
        let created = archive::now();
        let id = format!(
            "run-{}",
            candidate_hash(&created, &settings.seed.display().to_string())[..12].to_owned()
        );
        let row = RunRow {
            id: id.clone(),
            created,
            contract: settings.contract.display().to_string(),
            seed: settings.seed.display().to_string(),
            target: settings.target.clone().unwrap_or_default(),
            proposer: proposer.name(),
            budget: settings.budget,
            config: serde_json::to_value(&settings).unwrap_or(Value::Null),
            status: "running".into(),
        };
        archive.create_run(&row)?;
        Search::assemble(
            settings, id, archive, contract, proposer, estimator, evaluator,
        )
    }

    /// Continue the run in `run_dir`; `budget` replaces the stored one when given (to extend a
    /// run that ended on its budget).
    pub fn resume(
        run_dir: &Path,
        budget: Option<Budget>,
        proposer: Box<dyn Proposer>,
        estimator: Option<Box<dyn Estimator>>,
        evaluator: Option<Box<dyn Evaluator>>,
    ) -> Result<Search, String> {
        let archive = Archive::open_existing(run_dir)?;
        let row = archive
            .runs()?
            .into_iter()
            .next()
            .ok_or_else(|| format!("{} holds no run to resume", run_dir.display()))?;
        let mut settings: Settings = serde_json::from_value(row.config.clone())
            .map_err(|e| format!("the stored run settings do not load: {e}"))?;
        settings.run_dir = run_dir.to_path_buf();
        // The budget column, not the settings' copy: an earlier resume may have extended it.
        settings.budget = row.budget;
        needs_evaluator(&settings, evaluator.is_some())?;
        if let Some(b) = budget {
            settings.budget = b;
            archive.set_budget(&row.id, &b)?;
        }
        archive.set_status(&row.id, "running")?;
        let contract = load_contract(&settings.contract)?;
        Search::assemble(
            settings, row.id, archive, contract, proposer, estimator, evaluator,
        )
    }

    fn assemble(
        settings: Settings,
        run_id: String,
        archive: Archive,
        contract: cake_eval::Contract,
        proposer: Box<dyn Proposer>,
        estimator: Option<Box<dyn Estimator>>,
        evaluator: Option<Box<dyn Evaluator>>,
    ) -> Result<Search, String> {
        let target = match &settings.target {
            Some(t) => t.clone(),
            None => contract
                .targets
                .first()
                .cloned()
                .ok_or("the contract names no target")?,
        };
        cake_target::lookup(&target).map_err(|e| e.to_string())?;
        let shapes: Vec<BTreeMap<String, i64>> = {
            let bench = contract.shape_set("bench");
            let set = if bench.is_empty() {
                contract.shape_set("check")
            } else {
                bench
            };
            set.iter()
                .map(|s| s.iter().map(|(k, v)| (k.clone(), *v)).collect())
                .collect()
        };
        let tactics = crate::tactics::Tactics::for_checkout(&settings.contract)?;
        let population = archive.candidates(&run_id)?;
        let seen = population.iter().map(|c| c.hash.clone()).collect();
        std::fs::create_dir_all(settings.run_dir.join("candidates"))
            .map_err(|e| format!("{}: {e}", settings.run_dir.display()))?;
        let logs = Logs::rebuild(&settings.run_dir, &population)?;
        let generation = archive.last_generation(&run_id)? + 1;
        // The last generation's candidates are the feedback a resumed proposer starts from.
        let calibration = crate::rank::Calibration::of(&population);
        let feedback = population
            .iter()
            .filter(|c| c.generation == generation - 1)
            .map(|c| feedback_of(c, &calibration))
            .collect();
        Ok(Search {
            settings,
            run_id,
            archive,
            contract,
            target,
            shapes,
            proposer,
            estimator,
            evaluator,
            population,
            seen,
            feedback,
            logs,
            generation,
            tactics,
        })
    }

    pub fn population(&self) -> &[Candidate] {
        &self.population
    }

    pub fn spent(&self) -> Result<Spent, String> {
        self.archive.spent(&self.run_id)
    }

    /// The best candidate: the fastest validated one; in model-only runs, the best predicted.
    pub fn best(&self) -> Option<&Candidate> {
        best_of(&self.population, self.settings.model_only)
    }

    /// Run generations until a budget is spent (or the proposer has nothing new for three
    /// generations in a row). Returns why it stopped.
    pub fn run(&mut self, on: &mut dyn FnMut(Event)) -> Result<String, String> {
        let mut barren = 0;
        let why =
            loop {
                let spent = self.spent()?;
                if let Some(limit) = self.settings.budget.exhausted(&spent) {
                    break format!("budget spent: {limit}");
                }
                if self.settings.budget.is_unlimited() {
                    break "no budget limit set".to_string();
                }
                let new = self.generation_step(on)?;
                let spent = self.spent()?;
                on(Event::Generation {
                    generation: self.generation - 1,
                    spent,
                    fraction: self.settings.budget.fraction(&spent),
                    best: self.best(),
                });
                if let Some(seed) = self.population.first().filter(|c| {
                    self.population.len() == 1 && c.correctness.as_deref() == Some("error")
                }) {
                    // The harness could not run the seed (no toolchain, a contract fault): every
                    // other candidate would meet the same fate.
                    break format!(
                        "the seed could not be evaluated: {}",
                        seed.verdict
                            .as_deref()
                            .unwrap_or("error")
                            .lines()
                            .next()
                            .unwrap_or("")
                    );
                }
                barren = if new == 0 { barren + 1 } else { 0 };
                if barren >= 3 {
                    break "the proposer found nothing new in 3 generations".to_string();
                }
            };
        self.archive
            .set_status(&self.run_id, &format!("done: {why}"))?;
        Ok(why)
    }

    /// One generation; returns how many new candidates it stored.
    pub fn generation_step(&mut self, on: &mut dyn FnMut(Event)) -> Result<usize, String> {
        let started = Instant::now();
        let (proposal, proposer_name) = if self.population.is_empty() {
            let source = std::fs::read_to_string(&self.settings.seed)
                .map_err(|e| format!("{}: {e}", self.settings.seed.display()))?;
            (
                Proposal {
                    candidates: vec![crate::propose::Proposed {
                        source,
                        parents: vec![],
                    }],
                    ..Proposal::default()
                },
                "seed".to_string(),
            )
        } else {
            let parents = self.elites();
            let best = self.best().map(parent_of);
            let best_evidence = self.best().and_then(|c| c.evidence.clone());
            let spent = self.spent()?;
            let target = self.target.clone();
            let hash = move |s: &str| candidate_hash(s, &target);
            let ctx = Context {
                generation: self.generation,
                parents: &parents,
                best: best.as_ref(),
                best_evidence: best_evidence.as_ref(),
                feedback: &self.feedback,
                seen: &self.seen,
                want: self.settings.per_generation,
                contract: &self.settings.contract,
                target: &self.target,
                entry: &self.contract.entry,
                run_dir: &self.settings.run_dir,
                wall_left_s: self
                    .settings
                    .budget
                    .wall_s
                    .map(|w| (w - spent.wall_s).max(0.0)),
                hash: &hash,
                tactics: &self.tactics,
            };
            (self.proposer.propose(&ctx), self.proposer.name())
        };
        for n in &proposal.notes {
            on(Event::Note(format!("{proposer_name}: {n}")));
        }
        let propose_s = started.elapsed().as_secs_f64();

        // Stage 1-2: parse, type, verify; estimate the clean ones.
        let mut staged: Vec<(Candidate, f64)> = Vec::new();
        let mut batch = HashSet::new();
        for p in proposal.candidates {
            let t = Instant::now();
            let hash = candidate_hash(&p.source, &self.target);
            if self.seen.contains(&hash) || !batch.insert(hash.clone()) {
                continue;
            }
            let c = self.gate(&hash, p, &proposer_name);
            staged.push((c, t.elapsed().as_secs_f64()));
        }
        // Stage 3: rank the clean ones by predicted time, corrected by what this run measured,
        // and repeats of a sibling's failed moves last (crate::rank); the top k go to the GPU.
        let mut clean: Vec<usize> = (0..staged.len())
            .filter(|&i| staged[i].0.stage != Stage::Rejected)
            .collect();
        if self.estimator.is_some() {
            let refs: Vec<&Candidate> = clean.iter().map(|&i| &staged[i].0).collect();
            let order = crate::rank::order(&refs, &self.population);
            clean = order.into_iter().map(|k| clean[k]).collect();
        }
        let evaluate = !self.settings.model_only && self.evaluator.is_some();
        for (rank, &i) in clean.iter().enumerate() {
            staged[i].0.stage = if !evaluate {
                Stage::Estimated
            } else if rank < self.settings.top_k || self.population.is_empty() {
                Stage::Evaluated
            } else {
                Stage::RankedOut
            };
        }
        // Proposal cost is shared by the generation's candidates.
        let n = staged.len().max(1) as u64;
        let mut stored = 0;
        let first_stored = self.population.len();
        // What candidates left unevaluated (the budget ran out) had spent: kept as overhead.
        let mut unstored = Spent::default();
        for (k, (mut c, gate_s)) in staged.into_iter().enumerate() {
            let t = Instant::now();
            c.spent.tokens = proposal.tokens / n + u64::from((k as u64) < proposal.tokens % n);
            c.spent.wall_s = gate_s + propose_s / n as f64;
            if c.stage == Stage::Evaluated {
                // Every limit is checked before each evaluation, not only between generations.
                // A candidate that cannot be evaluated now is not stored, so a resumed run with
                // a larger budget may evaluate it; what it cost so far still counts.
                let spent = self.spent()?;
                if self.settings.budget.exhausted(&spent).is_some() {
                    unstored.add(&c.spent);
                    continue;
                }
                self.evaluate(&mut c, on);
            }
            c.spent.wall_s += t.elapsed().as_secs_f64();
            c.created = archive::now();
            if let Some(seq) = self.archive.insert(&self.run_id, &c)? {
                c.seq = seq;
                stored += 1;
                self.logs.append(&self.settings.run_dir, &c)?;
                self.seen.insert(c.hash.clone());
                on(Event::Candidate(&c));
                self.population.push(c);
            }
        }
        if stored == 0 && unstored == Spent::default() {
            self.archive.insert_overhead(
                &self.run_id,
                self.generation,
                "proposal produced no new candidate",
                &Spent {
                    tokens: proposal.tokens,
                    wall_s: propose_s,
                    gpu_s: 0.0,
                },
            )?;
        } else if unstored != Spent::default() {
            self.archive.insert_overhead(
                &self.run_id,
                self.generation,
                "candidates left unevaluated when the budget ran out",
                &unstored,
            )?;
        }
        // The generation's feedback, each prediction's confidence from every measurement so far
        // (this generation's included).
        let calibration = crate::rank::Calibration::of(&self.population);
        self.feedback = self.population[first_stored..]
            .iter()
            .map(|c| feedback_of(c, &calibration))
            .collect();
        self.generation += 1;
        Ok(stored)
    }

    /// Parse, type and verify; estimate and place in a niche when clean.
    fn gate(&self, hash: &str, p: crate::propose::Proposed, proposer: &str) -> Candidate {
        let name = format!("candidates/{}.py", &hash[..16]);
        let checked = cake_driver::check(&name, p.source.as_bytes(), Some(&self.target));
        let findings = cake_diag::render::json(&checked.file, &checked.findings);
        let mut c = Candidate {
            seq: 0,
            hash: hash.to_string(),
            generation: self.generation,
            parents: p.parents,
            proposer: proposer.to_string(),
            source: p.source,
            stage: Stage::Rejected,
            findings: Some(findings),
            niche: None,
            bottleneck: None,
            cost_us: None,
            build: None,
            correctness: None,
            verdict: None,
            evidence: None,
            measured_us: None,
            speedup: None,
            spent: Spent::default(),
            created: String::new(),
        };
        if checked.has_errors() {
            let n = checked.findings.iter().filter(|f| f.is_error()).count();
            c.verdict = Some(format!("rejected: {n} error finding(s)"));
            return c;
        }
        let Some(kernel) = checked
            .kernels
            .iter()
            .find(|k| k.name == self.contract.entry)
        else {
            c.verdict = Some(format!(
                "rejected: no kernel `{}` (the contract's entry)",
                self.contract.entry
            ));
            return c;
        };
        c.stage = Stage::Estimated;
        if let (Some(e), Ok(t)) = (&self.estimator, cake_target::lookup(&self.target)) {
            let (us, b) = estimate::over_shapes(e.as_ref(), kernel, t, &self.shapes);
            c.cost_us = us;
            c.bottleneck = b;
        }
        c.niche = Some(format!(
            "{} | {}",
            c.bottleneck.as_deref().unwrap_or("-"),
            estimate::structure(kernel)
        ));
        c
    }

    fn evaluate(&mut self, c: &mut Candidate, on: &mut dyn FnMut(Event)) {
        let path = self
            .settings
            .run_dir
            .join("candidates")
            .join(format!("{}.py", &c.hash[..16]));
        if let Err(e) = std::fs::write(&path, &c.source) {
            c.correctness = Some("error".into());
            c.verdict = Some(format!("error: {}: {e}", path.display()));
            return;
        }
        let Some(ev) = self.evaluator.as_mut() else {
            return;
        };
        let mut lines = Vec::new();
        let e = ev.evaluate(&path, &mut |l: &str| lines.push(l.to_string()));
        for l in lines {
            on(Event::Note(l));
        }
        c.correctness = Some(e.outcome.as_str().into());
        c.verdict = Some(match e.outcome {
            Outcome::Quarantined => format!("quarantined: {}", e.verdict),
            _ => e.verdict.clone(),
        });
        c.measured_us = e.measured_us;
        c.speedup = e.speedup;
        c.spent.gpu_s += e.gpu_s;
        if !e.evidence.is_null() {
            let mut evidence = e.evidence;
            // The record's slot for the cost model, when the harness left it empty (a prebuilt
            // candidate): what this run predicted for the candidate.
            if let (Some(us), true, Some(o)) = (
                c.cost_us,
                evidence["cost_estimate"].is_null(),
                evidence.as_object_mut(),
            ) {
                o.insert(
                    "cost_estimate".into(),
                    serde_json::json!({"predicted_us": us, "bottleneck": c.bottleneck,
                                       "shape_set": "bench"}),
                );
            }
            c.build = Some(evidence["resources"].clone());
            c.evidence = Some(evidence);
        }
    }

    /// The best of each niche, overall best first, at most `settings.parents`.
    fn elites(&self) -> Vec<Parent> {
        let model_only = self.settings.model_only;
        let mut best: BTreeMap<String, &Candidate> = BTreeMap::new();
        for c in self.population.iter().filter(|c| eligible(c)) {
            let niche = c.niche.clone().unwrap_or_default();
            match best.get(&niche) {
                Some(b) if fitness(b, model_only) <= fitness(c, model_only) => {}
                _ => {
                    best.insert(niche, c);
                }
            }
        }
        if best.is_empty() {
            // Nothing clean and correct yet (the seed failed its checks): start from the clean
            // candidates anyway, so a mutation can repair what the seed got wrong.
            // Never from a quarantined one: its numbers were not believed.
            let repairable = |c: &&Candidate| {
                c.stage != Stage::Rejected
                    && !matches!(c.correctness.as_deref(), Some("error" | "quarantined"))
            };
            for c in self.population.iter().filter(repairable) {
                best.entry(c.niche.clone().unwrap_or_default()).or_insert(c);
            }
        }
        let mut elites: Vec<&Candidate> = best.into_values().collect();
        elites.sort_by(|a, b| fitness(a, model_only).total_cmp(&fitness(b, model_only)));
        elites
            .into_iter()
            .take(self.settings.parents.max(1))
            .map(parent_of)
            .collect()
    }
}

fn needs_evaluator(s: &Settings, has: bool) -> Result<(), String> {
    if !s.model_only && !has {
        return Err("no evaluator: run with --model-only, or on a GPU host".into());
    }
    Ok(())
}

/// Candidates that may be parents: clean, and not failed, errored or quarantined on the GPU.
fn eligible(c: &Candidate) -> bool {
    c.stage != Stage::Rejected && matches!(c.correctness.as_deref(), None | Some("passed"))
}

/// Lower is better: validated measured time first, then (as a second tier) predicted time.
fn fitness(c: &Candidate, model_only: bool) -> f64 {
    const TIER: f64 = 1e12;
    match (c.measured_us, c.cost_us) {
        (Some(m), _) if c.validated() && !model_only => m,
        (_, Some(p)) => TIER + p,
        _ => 2.0 * TIER + c.seq as f64,
    }
}

pub fn best_of(population: &[Candidate], model_only: bool) -> Option<&Candidate> {
    if model_only {
        population
            .iter()
            .filter(|c| c.stage != Stage::Rejected && c.cost_us.is_some())
            .min_by(|a, b| {
                a.cost_us
                    .unwrap_or(0.0)
                    .total_cmp(&b.cost_us.unwrap_or(0.0))
            })
    } else {
        population
            .iter()
            .filter(|c| c.validated() && c.measured_us.is_some())
            .min_by(|a, b| {
                a.measured_us
                    .unwrap_or(0.0)
                    .total_cmp(&b.measured_us.unwrap_or(0.0))
            })
    }
}

fn parent_of(c: &Candidate) -> Parent {
    Parent {
        hash: c.hash.clone(),
        source: c.source.clone(),
        niche: c.niche.clone(),
        predicted_us: c.cost_us,
        measured_us: c.measured_us,
        speedup: c.speedup,
        verdict: c.verdict.clone(),
    }
}

fn feedback_of(c: &Candidate, calibration: &crate::rank::Calibration) -> Feedback {
    let errors = c
        .findings
        .as_ref()
        .and_then(|f| f["findings"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| {
            format!(
                "{} line {}: {}",
                f["code"].as_str().unwrap_or("?"),
                f["span"]["start_line"].as_u64().unwrap_or(0),
                f["message"].as_str().unwrap_or("")
            )
        })
        .collect();
    Feedback {
        hash: c.hash.clone(),
        stage: c.stage.as_str().into(),
        errors,
        predicted_us: c.cost_us,
        confidence: c
            .cost_us
            .map(|_| calibration.confidence(c.bottleneck.as_deref().unwrap_or(""))),
        measured_us: c.measured_us,
        correctness: c.correctness.clone(),
        verdict: c.verdict.clone(),
    }
}
