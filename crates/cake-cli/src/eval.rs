//! `cake test` and `cake bench`: a contract, a candidate and the evaluation worker
//! (docs/contracts.md). The protocols live in cake-eval; this module renders their progress and
//! their evidence.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cake_eval::{Contract, Mode, Options, Supervisor, WorkerCommand};

pub struct EvalArgs {
    pub contract: PathBuf,
    pub options: Options,
    pub json: bool,
    pub record: Option<PathBuf>,
    pub verbose: bool,
}

pub fn cmd_eval(mode: Mode, args: EvalArgs) -> ExitCode {
    let contract = match Contract::load(&args.contract) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors {
                eprintln!("error: {e}");
            }
            eprintln!(
                "{} error(s) in the contract; its format is in docs/contracts.md",
                errors.len()
            );
            return ExitCode::from(2);
        }
    };
    // Usage mistakes (no bench shapes, an unknown baseline, ...) are found before the worker
    // starts: cake_eval::check_options.
    let mut sup = Supervisor::new(WorkerCommand::from_env());
    sup.verbose = args.verbose;
    let human = !args.json;
    let spinner = crate::progress::Spinner::start_when(
        !args.verbose,
        match mode {
            Mode::Test => "checking on the GPU",
            Mode::Bench => "checking and timing on the GPU",
        },
    );
    let mut progress = |line: &str| {
        if human {
            spinner.println(line);
        }
    };
    let result = cake_eval::run(&contract, mode, &args.options, &mut sup, &mut progress);
    drop(spinner);
    sup.shutdown();
    let evidence = match result {
        Ok(e) => e,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(help) = e.help() {
                eprintln!("help: {help}");
            }
            return ExitCode::from(2);
        }
    };
    let text = serde_json::to_string_pretty(&evidence).expect("JSON") + "\n";
    if let Some(path) = &args.record {
        if let Err(code) = write_record(path, &evidence, &text) {
            return code;
        }
    }
    if args.json {
        out!("{text}");
    } else {
        let checks = &evidence.correctness.checks;
        outln!(
            "correctness: {}/{} checks passed (seed {}, {} run(s) each)",
            checks.iter().filter(|c| c.passed).count(),
            checks.len(),
            evidence.correctness.seed,
            evidence.correctness.runs_per_check
        );
        outln!("verdict: {}", evidence.verdict);
    }
    if evidence.verdict == "passed" {
        ExitCode::SUCCESS
    } else if evidence.verdict.starts_with("error:") {
        // The contract or the harness failed, not the candidate.
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

/// Write the record to `path`, or into it as `<hash>-<command>.json` when it is a directory.
fn write_record(path: &Path, e: &cake_eval::Evidence, text: &str) -> Result<(), ExitCode> {
    let file = if path.is_dir() {
        path.join(format!("{}-{}.json", e.candidate.hash, e.command))
    } else {
        path.to_path_buf()
    };
    crate::output::write_atomically(&file, text)
}
