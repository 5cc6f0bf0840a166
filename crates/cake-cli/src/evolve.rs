//! `cake evolve`, `cake tune` and `cake report` (docs/agents.md): the search loop of cake-evolve
//! with a progress bar, and the report of a run directory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cake_evolve::search::{Event, ProposerSettings, Search, Settings};
use cake_evolve::{Budget, Estimator, Evaluator, Proposer};

/// What `evolve` and `tune` share. A run stores every setting when it starts; `--resume`
/// restores them all, and a setting given again on resume must equal the stored one (else a
/// usage error naming both): only --budget (and --verbose) may change.
#[derive(clap::Args)]
pub struct EvolveFlags {
    /// The workload contract (`*.contract.toml`); not needed with --resume.
    contract: Option<PathBuf>,
    /// The schedule to start from.
    #[arg(long)]
    seed: Option<PathBuf>,
    /// When to stop: gpu=SECONDS, wall=SECONDS, tokens=N, comma-separated (e.g.
    /// gpu=600s,wall=30m). With --resume, replaces the stored budget.
    #[arg(long)]
    budget: Option<Budget>,
    /// The run directory (archive.sqlite, candidates/, logs, report); default
    /// runs/<contract name>-<unix time>.
    #[arg(long)]
    run: Option<PathBuf>,
    /// Continue the run in --run DIR where it stopped (after a crash, or with a larger budget).
    #[arg(long)]
    resume: bool,
    /// Never use the GPU: candidates are verified and ranked by the cost model only.
    #[arg(long)]
    model_only: bool,
    /// Exact target (default: the contract's first).
    #[arg(long)]
    target: Option<String>,
    /// The GPU the cost model ranks candidates for: a card (`H100`) or the driver's name of a
    /// device, whose committed calibration table it takes (default: the target's default table).
    #[arg(long)]
    gpu: Option<String>,
    /// Candidates evaluated on the GPU per generation (the best predicted, with a cost model);
    /// default 2.
    #[arg(long)]
    top_k: Option<usize>,
    /// Candidates asked of the proposer per generation; default 8.
    #[arg(long)]
    per_generation: Option<usize>,
    /// Seed of the knob mutator's choices; default 1.
    #[arg(long)]
    rng_seed: Option<u64>,
    /// Time only this baseline (speedups are against it).
    #[arg(long)]
    baseline: Option<String>,
    /// Print every candidate and the harness's progress lines.
    #[arg(long)]
    verbose: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProposerKind {
    /// The built-in knob mutator (offline).
    Knobs,
    /// An external agent: --command runs in a task directory each generation.
    Command,
    /// An OpenAI-compatible chat-completions endpoint (CAKE_LLM_BASE_URL, CAKE_LLM_MODEL,
    /// CAKE_LLM_API_KEY).
    Chat,
}

impl ProposerKind {
    fn name(self) -> &'static str {
        match self {
            ProposerKind::Knobs => "knobs",
            ProposerKind::Command => "command",
            ProposerKind::Chat => "chat",
        }
    }
}

#[derive(clap::Args)]
pub struct ProposerFlags {
    /// Who proposes candidates; default knobs.
    #[arg(long, value_enum)]
    proposer: Option<ProposerKind>,
    /// The external agent's command (`sh -c`, run in the task directory).
    #[arg(long)]
    command: Option<String>,
    /// The external agent's wall-time limit per generation, in seconds; default 600.
    #[arg(long)]
    command_timeout: Option<f64>,
    /// Chat requests per generation; default 4.
    #[arg(long)]
    chat_requests: Option<usize>,
}

/// The cost model (cake-cost, with the target's built-in calibration measured on `gpu`, else its
/// default). A target without a calibration gets no predictions, and the run evaluates clean
/// candidates up to --top-k in proposal order.
fn cost_model(gpu: Option<String>) -> Option<Box<dyn Estimator>> {
    Some(Box::new(cake_evolve::CostModel::for_gpu(gpu)))
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

pub fn cmd_evolve(flags: EvolveFlags, p: &ProposerFlags) -> ExitCode {
    let stored = match stored_settings(&flags) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let ps = match proposer_settings(p, stored.as_ref()) {
        Ok(ps) => ps,
        Err(e) => return usage(e),
    };
    let proposer: Box<dyn Proposer> = match ps.kind.as_str() {
        "command" => match &ps.command {
            Some(c) => Box::new(cake_evolve::external::Command::new(
                c.clone(),
                Duration::from_secs_f64(ps.command_timeout_s.max(1.0)),
            )),
            None => return usage("--proposer command needs --command 'CMD'"),
        },
        "chat" => match cake_evolve::chat::Chat::from_env() {
            Ok(mut c) => {
                if let Some(m) = ps.chat_model.as_ref().filter(|m| **m != c.model) {
                    return usage(format!(
                        "{}={} conflicts with this run's stored chat model {m}; a resumed run keeps its settings",
                        cake_evolve::chat::MODEL_VAR,
                        c.model
                    ));
                }
                c.requests = ps.chat_requests.max(1);
                Box::new(c)
            }
            Err(e) => return usage(e),
        },
        _ => Box::new(cake_evolve::KnobMutator::new(knob_seed(
            &flags,
            stored.as_ref(),
        ))),
    };
    let mut ps = ps;
    if ps.kind == "chat" {
        ps.chat_model = proposer.name().strip_prefix("chat:").map(str::to_string);
    }
    run(flags, stored, ps, proposer)
}

pub fn cmd_tune(flags: EvolveFlags) -> ExitCode {
    let stored = match stored_settings(&flags) {
        Ok(s) => s,
        Err(code) => return code,
    };
    let ps = match proposer_settings(&ProposerFlags::knobs(), stored.as_ref()) {
        Ok(ps) => ps,
        Err(e) => {
            return usage(format!(
                "`cake tune` runs the knob mutator: {e}; continue it with `cake evolve --resume`"
            ))
        }
    };
    let seed = knob_seed(&flags, stored.as_ref());
    run(
        flags,
        stored,
        ps,
        Box::new(cake_evolve::KnobMutator::new(seed)),
    )
}

impl ProposerFlags {
    /// What `cake tune` implies.
    fn knobs() -> ProposerFlags {
        ProposerFlags {
            proposer: Some(ProposerKind::Knobs),
            command: None,
            command_timeout: None,
            chat_requests: None,
        }
    }
}

/// The stored settings of the run to resume (`None` when not resuming).
fn stored_settings(flags: &EvolveFlags) -> Result<Option<(Settings, String)>, ExitCode> {
    if !flags.resume {
        return Ok(None);
    }
    let Some(dir) = &flags.run else {
        return Err(usage("--resume needs --run DIR"));
    };
    let read = || -> Result<(Settings, String), String> {
        let a = cake_evolve::Archive::open_existing(dir)?;
        let run = a
            .runs()?
            .into_iter()
            .next()
            .ok_or_else(|| format!("{} holds no run to resume", dir.display()))?;
        let s: Settings = serde_json::from_value(run.config)
            .map_err(|e| format!("the stored run settings do not load: {e}"))?;
        Ok((s, run.proposer))
    };
    let (settings, proposer) = read().map_err(usage)?;
    conflicts(flags, &settings).map_err(usage)?;
    Ok(Some((settings, proposer)))
}

/// A flag given on resume must say what the run stored.
fn conflicts(flags: &EvolveFlags, s: &Settings) -> Result<(), String> {
    fn differ<T: PartialEq + std::fmt::Debug>(
        flag: &str,
        given: Option<T>,
        stored: T,
    ) -> Result<(), String> {
        match given {
            Some(g) if g != stored => Err(format!(
                "{flag} {g:?} conflicts with this run's stored {stored:?}; a resumed run keeps every setting it started with (only --budget may change): drop the flag, or start a new run"
            )),
            _ => Ok(()),
        }
    }
    let same_file = |given: &Option<PathBuf>, stored: &PathBuf| {
        given.as_ref().map(|g| {
            if std::fs::canonicalize(g).is_ok_and(|g| g == *stored) {
                stored.clone()
            } else {
                g.clone()
            }
        })
    };
    differ(
        "the contract",
        same_file(&flags.contract, &s.contract),
        s.contract.clone(),
    )?;
    differ("--seed", same_file(&flags.seed, &s.seed), s.seed.clone())?;
    differ("--target", flags.target.clone().map(Some), s.target.clone())?;
    differ(
        "--model-only",
        flags.model_only.then_some(true),
        s.model_only,
    )?;
    differ("--top-k", flags.top_k.map(|k| k.max(1)), s.top_k)?;
    differ(
        "--per-generation",
        flags.per_generation.map(|k| k.max(1)),
        s.per_generation,
    )?;
    differ("--rng-seed", flags.rng_seed, s.rng_seed)?;
    differ(
        "--baseline",
        flags.baseline.clone().map(Some),
        s.baseline.clone(),
    )?;
    differ("--gpu", flags.gpu.clone().map(Some), s.gpu.clone())?;
    Ok(())
}

/// The proposer's settings: the flags' (with their defaults) for a new run; the stored ones on
/// resume, where a flag given must agree. A run stored before proposers' settings were stored
/// resumes with the flags' proposer only when its kind is the one the run recorded.
fn proposer_settings(
    p: &ProposerFlags,
    stored: Option<&(Settings, String)>,
) -> Result<ProposerSettings, String> {
    let from_flags = || ProposerSettings {
        kind: p.proposer.unwrap_or(ProposerKind::Knobs).name().to_string(),
        command: p.command.clone(),
        command_timeout_s: p.command_timeout.unwrap_or(600.0),
        chat_requests: p.chat_requests.unwrap_or(4),
        chat_model: None,
    };
    let Some((settings, recorded)) = stored else {
        return Ok(from_flags());
    };
    let Some(s) = &settings.proposer else {
        let f = from_flags();
        let kind = recorded.split(':').next().unwrap_or(recorded);
        if f.kind != kind {
            return Err(format!(
                "--proposer {} conflicts with this run's proposer {recorded} (stored by an older cake without its settings: give them again)",
                f.kind
            ));
        }
        return Ok(f);
    };
    let clash = |flag: &str, given: String, stored: String| {
        format!(
            "{flag} {given} conflicts with this run's stored {stored}; a resumed run keeps its proposer and every setting it started with (only --budget may change): drop the flag, or start a new run"
        )
    };
    if let Some(k) = p.proposer.filter(|k| k.name() != s.kind) {
        return Err(clash(
            "--proposer",
            k.name().into(),
            format!("proposer {}", s.kind),
        ));
    }
    if let Some(c) = p
        .command
        .as_ref()
        .filter(|c| Some(*c) != s.command.as_ref())
    {
        return Err(clash(
            "--command",
            format!("{c:?}"),
            format!("command {:?}", s.command.as_deref().unwrap_or("(none)")),
        ));
    }
    if let Some(t) = p.command_timeout.filter(|t| *t != s.command_timeout_s) {
        return Err(clash(
            "--command-timeout",
            t.to_string(),
            format!("command timeout {}", s.command_timeout_s),
        ));
    }
    if let Some(n) = p.chat_requests.filter(|n| *n != s.chat_requests) {
        return Err(clash(
            "--chat-requests",
            n.to_string(),
            format!("chat requests {}", s.chat_requests),
        ));
    }
    Ok(s.clone())
}

/// A resumed run continues with different knob choices than it started with.
fn knob_seed(flags: &EvolveFlags, stored: Option<&(Settings, String)>) -> u64 {
    let rng_seed = stored.map_or(flags.rng_seed.unwrap_or(1), |(s, _)| s.rng_seed);
    let done = flags
        .run
        .as_ref()
        .filter(|_| flags.resume)
        .and_then(|d| cake_evolve::Archive::open_existing(d).ok())
        .and_then(|a| {
            let run = a.runs().ok()?.into_iter().next()?;
            Some(a.candidates(&run.id).ok()?.len() as u64)
        })
        .unwrap_or(0);
    rng_seed.wrapping_add(done.wrapping_mul(1_000_003))
}

fn run(
    flags: EvolveFlags,
    stored: Option<(Settings, String)>,
    ps: ProposerSettings,
    proposer: Box<dyn Proposer>,
) -> ExitCode {
    // A resumed run ranks for the GPU it started with (`conflicts` refused a different one).
    let gpu = match &stored {
        Some((s, _)) => s.gpu.clone(),
        None => flags.gpu.clone(),
    };
    if let Some(gpu) = &gpu {
        let (contract, target) = match &stored {
            Some((s, _)) => (Some(s.contract.clone()), s.target.clone()),
            None => (flags.contract.clone(), flags.target.clone()),
        };
        if let Err(e) = check_gpu(contract.as_deref(), target.as_deref(), gpu) {
            return usage(format!("--gpu {gpu}: {e}"));
        }
    }
    let estimator = cost_model(gpu.clone());
    let search = if let Some((stored, _)) = stored {
        let Some(dir) = &flags.run else {
            return usage("--resume needs --run DIR");
        };
        let evaluator = if stored.model_only {
            None
        } else {
            match harness(
                &stored.contract,
                stored.target.clone(),
                stored.baseline.clone(),
                flags.verbose,
            ) {
                Ok(h) => Some(h),
                Err(code) => return code,
            }
        };
        Search::resume(dir, flags.budget, proposer, estimator, evaluator)
    } else {
        let Some(contract) = flags.contract.clone() else {
            return usage("give the workload contract (or --resume --run DIR)");
        };
        let Some(seed) = flags.seed.clone() else {
            return usage("give the schedule to start from: --seed FILE");
        };
        let Some(budget) = flags.budget else {
            return usage("give a budget: --budget gpu=600s,wall=30m (or tokens=N)");
        };
        let dir = flags.run.clone().unwrap_or_else(|| {
            let stem = contract.file_name().map_or("run".into(), |s| {
                s.to_string_lossy().replace(".contract.toml", "")
            });
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            PathBuf::from("runs").join(format!("{stem}-{t}"))
        });
        let mut s = Settings::new(dir, contract.clone(), seed, budget);
        s.model_only = flags.model_only;
        s.target = flags.target.clone();
        s.top_k = flags.top_k.unwrap_or(2).max(1);
        s.per_generation = flags.per_generation.unwrap_or(8).max(1);
        s.rng_seed = flags.rng_seed.unwrap_or(1);
        s.baseline = flags.baseline.clone();
        s.gpu = gpu;
        s.proposer = Some(ps);
        let evaluator = if s.model_only {
            None
        } else {
            match harness(
                &contract,
                flags.target.clone(),
                flags.baseline.clone(),
                flags.verbose,
            ) {
                Ok(h) => Some(h),
                Err(code) => return code,
            }
        };
        Search::start(s, proposer, estimator, evaluator)
    };
    let mut search = match search {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    let dir = search.settings.run_dir.clone();
    eprintln!(
        "run {} in {} · budget {}",
        search.run_id,
        dir.display(),
        search.settings.budget
    );
    let bar = indicatif::ProgressBar::new(1000);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let verbose = flags.verbose;
    let say = |bar: &indicatif::ProgressBar, line: String| {
        if bar.is_hidden() {
            eprintln!("{line}");
        } else {
            bar.println(line);
        }
    };
    let result = search.run(&mut |e: Event| match e {
        Event::Candidate(c) if verbose => say(
            &bar,
            format!(
                "  {} gen {} {:<10} {}",
                &c.hash[..12],
                c.generation,
                c.stage.as_str(),
                c.verdict.as_deref().unwrap_or("")
            ),
        ),
        Event::Note(n) if verbose => say(&bar, format!("  {n}")),
        Event::Generation {
            generation,
            spent,
            fraction,
            best,
        } => {
            let best = match best {
                Some(b) => match (b.speedup, b.measured_us, b.cost_us) {
                    (Some(s), Some(m), _) => format!("best {s:.3}x ({m:.1} us) {}", &b.hash[..12]),
                    (_, _, Some(p)) => format!("best predicted {p:.1} us {}", &b.hash[..12]),
                    _ => format!("best {}", &b.hash[..12]),
                },
                None => "no validated candidate yet".into(),
            };
            let msg = format!(
                "gen {generation} · {} tok, {:.0} s wall, {:.0} s GPU · {best}",
                spent.tokens, spent.wall_s, spent.gpu_s
            );
            bar.set_position((fraction * 1000.0) as u64);
            if bar.is_hidden() {
                eprintln!("{msg}");
            }
            bar.set_message(msg);
        }
        _ => {}
    });
    bar.finish_and_clear();
    let why = match result {
        Ok(w) => w,
        Err(e) => return usage(e),
    };
    eprintln!("stopped: {why}");
    drop(search);
    match cake_evolve::report::write(&dir) {
        Ok(r) => {
            out!("{}", r.text());
            eprintln!(
                "wrote {} and {}",
                dir.join("report.json").display(),
                dir.join("report.svg").display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => usage(e),
    }
}

/// `--gpu` names a card one of the run's target's committed calibration tables was measured on
/// (the target: `--target`, else the contract's first). A contract that does not load is left
/// for the run's own start to report.
fn check_gpu(
    contract: Option<&std::path::Path>,
    target: Option<&str>,
    gpu: &str,
) -> Result<(), String> {
    let target = match target {
        Some(t) => t.to_string(),
        None => {
            let first = contract
                .and_then(|c| cake_eval::Contract::load(c).ok())
                .and_then(|c| c.targets.first().cloned());
            let Some(first) = first else { return Ok(()) };
            first
        }
    };
    let Ok(t) = cake_target::lookup(&target) else {
        return Ok(());
    };
    cake_cost::Calibration::builtin_for(t, gpu)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The GPU evaluator: one supervised worker for the whole run, started now so a missing worker
/// is a usage error before anything is spent.
fn harness(
    contract: &std::path::Path,
    target: Option<String>,
    baseline: Option<String>,
    verbose: bool,
) -> Result<Box<dyn Evaluator>, ExitCode> {
    let c = match cake_eval::Contract::load(contract) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            return Err(ExitCode::from(2));
        }
    };
    let mut sup = cake_eval::Supervisor::new(cake_eval::WorkerCommand::from_env());
    sup.verbose = verbose;
    if let Err(f) = sup.ensure_running() {
        eprintln!("error: evaluation worker: {f}");
        eprintln!("help: {}", cake_eval::WORKER_HELP);
        eprintln!("help: --model-only runs without a GPU");
        return Err(ExitCode::from(2));
    }
    Ok(Box::new(cake_evolve::Harness {
        contract: c,
        supervisor: sup,
        target,
        baseline,
        seed: None,
        build_root: None,
    }))
}

pub fn cmd_report(run: &std::path::Path, json: bool) -> ExitCode {
    match cake_evolve::report::write(run) {
        Ok(r) => {
            if json {
                outln!("{}", serde_json::to_string_pretty(&r).expect("JSON"));
            } else {
                out!("{}", r.text());
                eprintln!(
                    "wrote {} and {}",
                    run.join("report.json").display(),
                    run.join("report.svg").display()
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => usage(e),
    }
}

/// `cake distill RUN... --out DIR` or `cake distill --gate DIR`.
pub fn cmd_distill(
    runs: &[std::path::PathBuf],
    out: &std::path::Path,
    min: usize,
    gate: bool,
    json: bool,
) -> ExitCode {
    use cake_evolve::distill;
    if gate {
        let [dir] = runs else {
            return usage("--gate takes one directory: what `cake distill` wrote".to_string());
        };
        let root = std::env::current_dir().unwrap_or_default();
        let tactics = match cake_evolve::tactics::Tactics::for_checkout(&root) {
            Ok(t) => t,
            Err(e) => return usage(e),
        };
        let verdicts = match distill::gate(dir, &distill::corpus(&root), &tactics) {
            Ok(v) => v,
            Err(e) => return usage(e),
        };
        if json {
            let doc: Vec<_> = verdicts
                .iter()
                .map(|v| serde_json::json!({"folder": v.folder, "kind": v.kind, "accepted": v.accepted, "reasons": v.reasons}))
                .collect();
            outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
        } else {
            for v in &verdicts {
                outln!(
                    "{} {:<11} {}",
                    if v.accepted { "accepted" } else { "rejected" },
                    v.kind,
                    v.folder.display()
                );
                for r in &v.reasons {
                    outln!("    {r}");
                }
            }
        }
        return if verdicts.iter().all(|v| v.accepted) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    let loaded = match distill::load(runs) {
        Ok(l) => l,
        Err(e) => return usage(e),
    };
    let clusters = distill::clusters(&loaded, min.max(1));
    let accepted = distill::accepted_moves(&loaded);
    let summary = match distill::distill(&clusters, &accepted, out) {
        Ok(s) => s,
        Err(e) => return usage(e),
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&summary).expect("JSON"));
    } else {
        outln!(
            "{} recurring failure(s) of {} or more candidates in {} run(s):",
            clusters.len(),
            min.max(1),
            loaded.len()
        );
        for a in summary["artifacts"].as_array().into_iter().flatten() {
            outln!(
                "  {:<11} {:>4}  {}  -> {}",
                a["kind"].as_str().unwrap_or(""),
                a["count"],
                a["signature"].as_str().unwrap_or(""),
                a["folder"].as_str().unwrap_or("")
            );
        }
        eprintln!("wrote {}", out.join(distill::SUMMARY).display());
    }
    ExitCode::SUCCESS
}
