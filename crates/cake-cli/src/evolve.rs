//! `cake evolve`, `cake tune` and `cake report` (docs/agents.md): the search loop of cake-evolve
//! with a progress bar, and the report of a run directory.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use cake_evolve::search::{Event, Search, Settings};
use cake_evolve::{Budget, Estimator, Evaluator, Proposer};

/// What `evolve` and `tune` share.
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
    /// Candidates evaluated on the GPU per generation (the best predicted, with a cost model).
    #[arg(long, default_value_t = 2)]
    top_k: usize,
    /// Candidates asked of the proposer per generation.
    #[arg(long, default_value_t = 8)]
    per_generation: usize,
    /// Seed of the knob mutator's choices.
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
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

#[derive(clap::Args)]
pub struct ProposerFlags {
    #[arg(long, value_enum, default_value = "knobs")]
    proposer: ProposerKind,
    /// The external agent's command (`sh -c`, run in the task directory).
    #[arg(long)]
    command: Option<String>,
    /// The external agent's wall-time limit per generation, in seconds.
    #[arg(long, default_value_t = 600.0)]
    command_timeout: f64,
    /// Chat requests per generation.
    #[arg(long, default_value_t = 4)]
    chat_requests: usize,
}

/// The cost model (cake-cost, with the target's built-in calibration). A target without a
/// calibration gets no predictions, and the run evaluates clean candidates up to --top-k in
/// proposal order.
fn cost_model() -> Option<Box<dyn Estimator>> {
    Some(Box::new(cake_evolve::CostModel::default()))
}

fn usage(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

pub fn cmd_evolve(flags: EvolveFlags, p: &ProposerFlags) -> ExitCode {
    let proposer: Box<dyn Proposer> = match p.proposer {
        ProposerKind::Knobs => Box::new(cake_evolve::KnobMutator::new(knob_seed(&flags))),
        ProposerKind::Command => match &p.command {
            Some(c) => Box::new(cake_evolve::external::Command::new(
                c.clone(),
                Duration::from_secs_f64(p.command_timeout.max(1.0)),
            )),
            None => return usage("--proposer command needs --command 'CMD'"),
        },
        ProposerKind::Chat => match cake_evolve::chat::Chat::from_env() {
            Ok(mut c) => {
                c.requests = p.chat_requests.max(1);
                Box::new(c)
            }
            Err(e) => return usage(e),
        },
    };
    run(flags, proposer)
}

pub fn cmd_tune(flags: EvolveFlags) -> ExitCode {
    let seed = knob_seed(&flags);
    run(flags, Box::new(cake_evolve::KnobMutator::new(seed)))
}

/// A resumed run continues with different knob choices than it started with.
fn knob_seed(flags: &EvolveFlags) -> u64 {
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
    flags.rng_seed.wrapping_add(done.wrapping_mul(1_000_003))
}

fn run(flags: EvolveFlags, proposer: Box<dyn Proposer>) -> ExitCode {
    let estimator = cost_model();
    let search = if flags.resume {
        let Some(dir) = &flags.run else {
            return usage("--resume needs --run DIR");
        };
        let model_only = cake_evolve::Archive::open_existing(dir)
            .ok()
            .and_then(|a| a.runs().ok()?.into_iter().next())
            .is_some_and(|r| r.config["model_only"] == true);
        let evaluator = if model_only {
            None
        } else {
            let (contract, target) = match stored_contract(dir) {
                Ok(c) => c,
                Err(e) => return usage(e),
            };
            match harness(&contract, target, &flags) {
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
        s.top_k = flags.top_k.max(1);
        s.per_generation = flags.per_generation.max(1);
        s.rng_seed = flags.rng_seed;
        let evaluator = if s.model_only {
            None
        } else {
            match harness(&contract, flags.target.clone(), &flags) {
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
            print!("{}", r.text());
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

fn stored_contract(dir: &std::path::Path) -> Result<(PathBuf, Option<String>), String> {
    let a = cake_evolve::Archive::open_existing(dir)?;
    let run = a
        .runs()?
        .into_iter()
        .next()
        .ok_or_else(|| format!("{} holds no run", dir.display()))?;
    let target = run.config["target"].as_str().map(str::to_string);
    Ok((PathBuf::from(run.contract), target))
}

/// The GPU evaluator: one supervised worker for the whole run, started now so a missing worker
/// is a usage error before anything is spent.
fn harness(
    contract: &std::path::Path,
    target: Option<String>,
    flags: &EvolveFlags,
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
    sup.verbose = flags.verbose;
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
        baseline: flags.baseline.clone(),
        seed: None,
        build_root: None,
    }))
}

pub fn cmd_report(run: &std::path::Path, json: bool) -> ExitCode {
    match cake_evolve::report::write(run) {
        Ok(r) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&r).expect("JSON"));
            } else {
                print!("{}", r.text());
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
