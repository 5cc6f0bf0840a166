//! `cake`: the command-line front door. Each subcommand is a thin shell over a library crate;
//! exit codes are 0 (clean), 1 (findings with errors) and 2 (usage or I/O error).

use cake_diag::{render, Finding, SourceFile};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[macro_use]
mod output;

mod cost;
mod eval;
mod evolve;
mod family;
mod progress;

#[derive(Parser)]
#[command(
    name = "cake",
    version,
    about = "Cake: a verified GPU kernel compiler for schedules written in Cake IR"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Human,
    Json,
    Sarif,
}

/// Output of the commands that produce a document of their own (`lower`, `build`): SARIF
/// describes findings only, so it is not offered there.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DocFormat {
    Human,
    Json,
}

/// What `cake test` and `cake bench` share.
#[derive(clap::Args)]
struct EvalFlags {
    /// The workload contract (`*.contract.toml`).
    contract: PathBuf,
    /// The candidate: a schedule, or a prebuilt kernel's `.launch.json` (default: the
    /// contract's `kernel`).
    #[arg(long)]
    kernel: Option<PathBuf>,
    /// Exact target (default: the one matching the GPU the worker sees).
    #[arg(long)]
    target: Option<String>,
    /// Base seed, to reproduce a run (default: fresh).
    #[arg(long)]
    seed: Option<u64>,
    /// Where to build the candidate (default: a directory in the build cache); with the
    /// contract's [specialize], one folder per build under it.
    #[arg(long)]
    build_dir: Option<PathBuf>,
    /// The shape set to check on: check (default), bench or held_out.
    #[arg(long, value_parser = ["check", "bench", "held_out"])]
    shapes: Option<String>,
    /// Build with the target's PTX embedded, so a kernel for an older, forward-compatible
    /// target (sm_80, sm_89) runs on a later GPU through the driver's JIT (docs/targets.md).
    #[arg(long)]
    embed_ptx: bool,
    /// `json`: print the evidence record instead of the progress table.
    #[arg(long, value_enum, default_value = "human")]
    format: DocFormat,
    /// Also write the evidence record here (a file, or a directory: `<hash>-<command>.json`).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Echo the evaluation worker's log to stderr.
    #[arg(long)]
    verbose: bool,
}

impl EvalFlags {
    fn into_args(self, baseline: Option<String>, timeline: bool) -> eval::EvalArgs {
        eval::EvalArgs {
            contract: self.contract,
            options: cake_eval::Options {
                kernel: self.kernel,
                target: self.target,
                seed: self.seed,
                baseline,
                build_dir: self.build_dir,
                shape_set: self.shapes,
                embed_ptx: self.embed_ptx,
                python_candidate: None,
                timeline,
            },
            json: self.format == DocFormat::Json,
            record: self.record,
            verbose: self.verbose,
        }
    }
}

impl From<DocFormat> for Format {
    fn from(f: DocFormat) -> Format {
        match f {
            DocFormat::Human => Format::Human,
            DocFormat::Json => Format::Json,
        }
    }
}

#[derive(Subcommand)]
enum FamilyCommand {
    /// Which route takes each region of the family's domain (exit 1 when a route takes none)
    Validate {
        file: PathBuf,
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// Shapes drawn from the domain, deterministic in the seed, each with the route it takes:
    /// `representative` (choose routes), `boundary` (extremes and tails), `held_out` (judge only),
    /// or `bench` (the contract's bench shapes, not drawn; judge only)
    Sample {
        file: PathBuf,
        #[arg(long, default_value = "representative")]
        shard: String,
        #[arg(long, default_value_t = 100)]
        n: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Route as on this GPU (a word of its name: H100, H200); default: a GPU no route's
        /// `cards` names
        #[arg(long)]
        card: Option<String>,
    },
    /// Time the family on the GPU over shapes drawn from its domain, each through the route
    /// dispatch gives it (or every route that admits it, `--every-route`), against the
    /// contract's baseline; writes measurement.json, report.txt and report.svg into --out
    Measure(family::MeasureArgs),
    /// G_span, the routes, the worst shape and every shape of a measurement (and its chart)
    Report {
        measurement: PathBuf,
        /// Write the chart (SVG) here
        #[arg(long)]
        svg: Option<PathBuf>,
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// How well the cost model predicts the family: every correct route timing of the
    /// measurements against the model's estimate of that route at that shape (no GPU needed)
    Accuracy {
        /// The family file whose routes the measurements timed (the candidates file for
        /// every-route measurements)
        file: PathBuf,
        #[arg(required = true)]
        measurement: Vec<PathBuf>,
        /// The target the measurements ran on
        #[arg(long, default_value = "sm_90a")]
        target: String,
        /// A calibration table (default: each measurement takes the committed table of the GPU
        /// it ran on, or the target's default where no table was measured on that card)
        #[arg(long)]
        calibration: Option<PathBuf>,
        /// Predict every measurement with the committed table of this GPU (a card, `H100`)
        #[arg(long, conflicts_with = "calibration")]
        gpu: Option<String>,
        /// How many of the worst predictions to list
        #[arg(long, default_value_t = 8)]
        worst: usize,
        /// Also break the points down by route and this dimension (repeatable): by value, or by
        /// powers of four where it takes more than eight values
        #[arg(long = "by", value_name = "DIM")]
        by: Vec<String>,
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// Pick each candidate route's guard from an every-route measurement and print the family
    /// file (to write next to the candidates file)
    Choose {
        file: PathBuf,
        /// Every-route measurements of representative shards (several: their shapes together)
        #[arg(required = true)]
        measurement: Vec<PathBuf>,
        /// The lowest speedup a route may have at any measured shape it takes
        #[arg(long, default_value_t = 0.97)]
        worst: f64,
        /// The geomean speedup a route must bring to be kept
        #[arg(long, default_value_t = 1.02)]
        material: f64,
        /// The fewest measured shapes a kept route must take
        #[arg(long, default_value_t = 3)]
        min_shapes: usize,
        /// Guard boxes per candidate route
        #[arg(long, default_value_t = 2)]
        boxes: usize,
        /// Let a later box take shapes from an earlier one where its route beats it there (the
        /// later box is listed first)
        #[arg(long)]
        carve: bool,
        /// Where a box reaches the largest measured value of a dimension, keep its guard open to
        /// the domain's top (larger problems amortise a route's fixed costs)
        #[arg(long)]
        open_above: bool,
        /// Also let boxes bound this product of dimensions from below, e.g. `B*N` (repeatable):
        /// a route can then start at a problem size
        #[arg(long = "product", value_name = "DIMS")]
        products: Vec<String>,
        /// Also let boxes bound this product of dimensions from above (repeatable): a route that
        /// wins small problems on low fixed costs can then end at a problem size
        #[arg(long = "product-under", value_name = "DIMS")]
        products_under: Vec<String>,
        /// Compare routes at a shape through one baseline time, the median of every baseline
        /// timing there, instead of each route's speedup over its own baseline timing
        #[arg(long)]
        pooled_baseline: bool,
        /// Shapes whose baseline ran under this many microseconds need `--short-worst` instead
        /// of `--worst` (few-wave problems are where speedups move most between neighbours)
        #[arg(long, value_name = "US", default_value_t = 0.0)]
        short_us: f64,
        /// The lowest speedup a route may have at a measured shape shorter than `--short-us`
        #[arg(long, value_name = "SPEEDUP", default_value_t = 0.97)]
        short_worst: f64,
        /// Also estimate the table's worth on unseen shapes: choose on all but one of FOLDS
        /// parts of the shapes, route the part left out (stated in the table's header)
        #[arg(long, value_name = "FOLDS")]
        cross_validate: Option<usize>,
        /// Write routes for this card alone (`cards = [CARD]`, named `<route>-<card>`), from a
        /// measurement that ran on it: they go ahead of the table's shared routes
        #[arg(long, value_name = "CARD")]
        card: Option<String>,
    },
}

#[derive(Subcommand)]
enum Command {
    /// Parse, type-check and verify schedules; print every finding.
    Check {
        /// One or more schedules. Several go into one SARIF log (one run, one artifact each) or
        /// one human report; `--format json` takes one file.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Check for this target (default: every target the schedule declares).
        #[arg(long)]
        target: Option<String>,
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// Treat coverage notes ("not verified: ...") as errors.
        #[arg(long)]
        strict: bool,
        /// Exit 0 even when a declared target cannot be built (constructs not lowered for it,
        /// CAKE-V001). Without it such a schedule fails the check, so a clean exit means every
        /// declared target builds.
        #[arg(long)]
        allow_unbuildable: bool,
        /// Colour the human output (default: when stdout is a terminal).
        #[arg(long)]
        color: Option<bool>,
        /// Also run the cost model at this shape (`M=4096,N=7168,K=4096`) and report its hints
        /// as performance findings.
        #[arg(long)]
        shape: Option<String>,
        /// The cost model's calibration table (default: the target's committed table).
        #[arg(long)]
        calibration: Option<PathBuf>,
        /// The GPU the hints are for: a card (`H100`) or the driver's name of a device, whose
        /// committed table the cost model takes (default: the target's default table).
        #[arg(long, conflicts_with = "calibration")]
        gpu: Option<String>,
        /// SARIF: the directory file URIs are relative to (`uriBaseId` SRCROOT; default: the
        /// current directory). Files outside it get absolute `file://` URIs.
        #[arg(long)]
        srcroot: Option<PathBuf>,
        /// SARIF: the rules page each rule's `helpUri` points into (`URL#cake-l001`).
        #[arg(long, default_value = render::RULES_URL)]
        rules_url: String,
    },
    /// Predict a schedule's time at a shape with the cost model: time, throughput, bound,
    /// utilization and hints (docs/cost-model.md).
    Cost {
        file: PathBuf,
        #[arg(long)]
        target: String,
        /// The shape, e.g. `M=4096,N=7168,K=4096`.
        #[arg(long)]
        shape: String,
        /// A calibration table (default: the target's committed table).
        #[arg(long)]
        calibration: Option<PathBuf>,
        /// The GPU to estimate for: a card (`H100`) or the driver's name of a device, whose
        /// committed table the model takes (default: the target's default table;
        /// docs/cost-model.md lists them).
        #[arg(long, conflicts_with = "calibration")]
        gpu: Option<String>,
        /// Only this kernel of the file (default: every kernel).
        #[arg(long)]
        kernel: Option<String>,
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// On a GPU host: run the calibration microbenchmarks (kernels/calibrate/) through
    /// `python3 -m cake.calibrate` and write the target's calibration table.
    Calibrate {
        #[arg(long)]
        target: String,
        /// Where to write the table (TOML).
        #[arg(short, long)]
        out: PathBuf,
        /// Derive the table from measurements already taken (`cake.calibrate/v0` JSON) instead
        /// of running the microbenchmarks.
        #[arg(long)]
        measurements: Option<PathBuf>,
        /// Also keep the raw measurements here.
        #[arg(long)]
        keep: Option<PathBuf>,
    },
    /// Print the canonical IR of a schedule.
    Ir { file: PathBuf },
    /// List the targets Cake knows, with their limits and instruction families.
    Targets {
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
    },
    /// Print the CUDA C++ (inline PTX) a schedule lowers to for one target.
    Lower {
        file: PathBuf,
        #[arg(long)]
        target: String,
        /// Print the launch metadata (JSON) instead of the source.
        #[arg(long)]
        launch: bool,
        /// `json`: one document with the source and launch metadata of every kernel (or the
        /// findings, when there are errors).
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// Lower and compile a schedule: writes <kernel>.cu, <kernel>.cubin, <kernel>.launch.json
    /// and <kernel>.resources.json into the output directory.
    Build {
        file: PathBuf,
        #[arg(long)]
        target: String,
        #[arg(short, long)]
        out: PathBuf,
        /// Write <kernel>.fatbin with the target's machine code and its PTX instead of a
        /// cubin, so a later GPU can run it through the driver's JIT (sm_80 and sm_89 only).
        #[arg(long)]
        embed_ptx: bool,
        /// Compile the timeline stamps in (docs/timeline.md): the kernel records, per CTA, when
        /// it starts, ends its prologue, and when each role starts, first completes a wait and
        /// ends, into a buffer given as two more arguments (`cake.timeline` in Python).
        #[arg(long)]
        timeline: bool,
        /// `json`: the files written, the resource reports and the findings as one document.
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// Plant hazards into a valid schedule (drop a wait, change a count, misalign a view, ...)
    /// and report which mutants the verifier catches.
    Mutate {
        file: PathBuf,
        /// Write every mutant into this directory as <stem>.<n>.<operator>.py.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Run a workload contract's correctness protocol on a candidate, on this machine's GPU
    /// (docs/contracts.md).
    Test {
        #[command(flatten)]
        eval: EvalFlags,
    },
    /// Check a candidate as `test` does, then time it and the contract's baselines in the same
    /// process (docs/contracts.md).
    Bench {
        #[command(flatten)]
        eval: EvalFlags,
        /// Time only this baseline.
        #[arg(long)]
        baseline: Option<String>,
        /// After timing each shape, launch a build of the candidate with its timeline stamps
        /// compiled in once and report its phases (first data, streaming, tail; docs/timeline.md)
        #[arg(long)]
        timeline: bool,
    },
    /// Search for faster schedules: a proposer (knob mutator, an external agent command or a
    /// chat-completions model) → verify → cost ranking → GPU evaluation, until the budget is
    /// spent; every candidate goes into the run's archive (docs/agents.md).
    Evolve {
        #[command(flatten)]
        flags: evolve::EvolveFlags,
        #[command(flatten)]
        proposer: evolve::ProposerFlags,
    },
    /// Autotune a schedule's module-level integer constants (tile sizes, stages, register
    /// budgets, ...) with the built-in knob mutator: `cake evolve --proposer knobs`.
    Tune {
        #[command(flatten)]
        flags: evolve::EvolveFlags,
    },
    /// A family of routes over a contract's domain (docs/dispatch.md): which route takes each
    /// region, where guards overlap, what falls back; or shapes drawn from the domain
    #[command(subcommand)]
    Family(FamilyCommand),
    /// Print a run's trajectory and failure clusters; write RUN/report.json and RUN/report.svg
    /// (best validated speedup against budget spent).
    Report {
        run: PathBuf,
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    /// Turn recurring failures across run archives into reviewable artifacts (draft rules with
    /// reduced failing schedules, calibration refits, tactics, primitive requests) under --out;
    /// with --gate OUT, judge them against the compiler as it is now (docs/agents.md)
    Distill {
        /// Run directories (each holds an archive); with --gate, the distil output directory.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Where the artifacts go.
        #[arg(long, value_name = "DIR", default_value = "distilled")]
        out: PathBuf,
        /// Members a failure signature needs to be distilled.
        #[arg(long, default_value_t = 3)]
        min: usize,
        /// Judge the artifacts in the given directory instead: rules must catch every member
        /// and keep the corpus (examples/, kernels/, tests/check/*-good.py) clean; exit 1 when
        /// any is rejected.
        #[arg(long)]
        gate: bool,
        #[arg(long, value_enum, default_value = "human")]
        format: DocFormat,
    },
    #[command(about = cake_mcp::ABOUT, long_about = cake_mcp::LONG_ABOUT)]
    Mcp {
        /// A directory the tools may read and write besides the working directory (repeatable).
        #[arg(long, value_name = "DIR")]
        allow: Vec<PathBuf>,
        /// Seconds one call of check, explain, lower, cost, build or evolve_status may run.
        #[arg(long, value_name = "SECS", default_value_t = 120)]
        timeout: u64,
        /// Seconds one call of test or bench may run.
        #[arg(long, value_name = "SECS", default_value_t = 1800)]
        eval_timeout: u64,
        /// Memory (address space) of each tool process: 4G, 512M, or bytes.
        #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = cake_mcp::limits::parse_size)]
        memory: u64,
        /// Tool processes running at once; later calls wait [default: the number of CPUs].
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
    },
    /// `cake mcp`'s tool process: one JSON request on stdin, the result on stdout.
    #[command(name = "mcp-worker", hide = true)]
    McpWorker,
    /// Explain a finding code (e.g. CAKE-L003), or list every code.
    Explain {
        code: Option<String>,
        /// Print the whole rule catalog as Markdown (docs/rules.md).
        #[arg(long)]
        markdown: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check {
            files,
            target,
            format,
            strict,
            allow_unbuildable,
            color,
            shape,
            calibration,
            gpu,
            srcroot,
            rules_url,
        } => cmd_check(
            &files,
            CheckFlags {
                target: target.as_deref(),
                format,
                strict,
                allow_unbuildable,
                color,
                shape: shape.as_deref(),
                calibration: calibration.as_deref(),
                gpu: gpu.as_deref(),
                srcroot: srcroot.as_deref(),
                rules_url,
            },
        ),
        Command::Cost {
            file,
            target,
            shape,
            calibration,
            gpu,
            kernel,
            format,
        } => cost::cmd_cost(
            &file,
            &target,
            &shape,
            cost::TableFlags {
                calibration: calibration.as_deref(),
                gpu: gpu.as_deref(),
            },
            kernel.as_deref(),
            format == DocFormat::Json,
        ),
        Command::Calibrate {
            target,
            out,
            measurements,
            keep,
        } => cost::cmd_calibrate(&target, &out, measurements.as_deref(), keep.as_deref()),
        Command::Ir { file } => cmd_ir(&file),
        Command::Targets { format } => {
            match format {
                Format::Human => out!("{}", cake_target::render_table()),
                _ => outln!(
                    "{}",
                    serde_json::to_string_pretty(&cake_target::to_json()).expect("JSON")
                ),
            }
            ExitCode::SUCCESS
        }
        Command::Explain { code, markdown } => cmd_explain(code.as_deref(), markdown),
        Command::McpWorker => cake_mcp::worker_main(),
        Command::Mcp {
            allow,
            timeout,
            eval_timeout,
            memory,
            jobs,
        } => match mcp_config(allow, timeout, eval_timeout, memory, jobs)
            .and_then(cake_mcp::serve_stdio)
        {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Command::Lower {
            file,
            target,
            launch,
            format,
        } => match lower_file(&file, &target, format.into()) {
            Ok((checked, lowered)) => {
                if format == DocFormat::Json {
                    if launch {
                        eprintln!("error: --launch and --format json do not combine: the JSON document already holds each kernel's launch metadata");
                        return ExitCode::from(2);
                    }
                    let kernels: Vec<serde_json::Value> = lowered
                        .iter()
                        .map(|l| serde_json::json!({"kernel": l.launch.kernel, "symbol": l.symbol, "target": l.launch.target, "cuda": l.cuda, "launch": l.launch}))
                        .collect();
                    outln!(
                        "{}",
                        serde_json::to_string_pretty(&serde_json::json!({
                            "schema": "cake.lower/v0",
                            "kernels": kernels,
                            "findings": render::json(&checked.file, &checked.findings),
                        }))
                        .expect("JSON")
                    );
                    return ExitCode::SUCCESS;
                }
                // The source goes to stdout; the check's warnings and notes, if any, to stderr.
                if !checked.findings.is_empty() {
                    eprint!("{}", render::human(&checked.file, &checked.findings, false));
                }
                for l in lowered {
                    if launch {
                        outln!("{}", serde_json::to_string_pretty(&l.launch).expect("JSON"));
                    } else {
                        out!("{}", l.cuda);
                    }
                }
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Build {
            file,
            target,
            out,
            embed_ptx,
            timeline,
            format,
        } => cmd_build(
            &file,
            &target,
            &out,
            cake_driver::BuildOptions {
                embed_ptx,
                timeline,
            },
            format.into(),
        ),
        Command::Mutate { file, out } => cmd_mutate(&file, out.as_deref()),
        Command::Test { eval } => {
            eval::cmd_eval(cake_eval::Mode::Test, eval.into_args(None, false))
        }
        Command::Bench {
            eval,
            baseline,
            timeline,
        } => eval::cmd_eval(cake_eval::Mode::Bench, eval.into_args(baseline, timeline)),
        Command::Evolve { flags, proposer } => evolve::cmd_evolve(flags, &proposer),
        Command::Tune { flags } => evolve::cmd_tune(flags),
        Command::Report { run, format } => evolve::cmd_report(&run, format == DocFormat::Json),
        Command::Distill {
            runs,
            out,
            min,
            gate,
            format,
        } => evolve::cmd_distill(&runs, &out, min, gate, format == DocFormat::Json),
        Command::Family(FamilyCommand::Validate { file, format }) => {
            family::cmd_validate(&file, format == DocFormat::Json)
        }
        Command::Family(FamilyCommand::Sample {
            file,
            shard,
            n,
            seed,
            card,
        }) => family::cmd_sample(&file, &shard, n, seed, card.as_deref()),
        Command::Family(FamilyCommand::Measure(args)) => family::cmd_measure(args),
        Command::Family(FamilyCommand::Report {
            measurement,
            svg,
            format,
        }) => family::cmd_report(&measurement, svg.as_deref(), format == DocFormat::Json),
        Command::Family(FamilyCommand::Accuracy {
            file,
            measurement,
            target,
            calibration,
            gpu,
            worst,
            by,
            format,
        }) => family::cmd_accuracy(
            &file,
            &measurement,
            &target,
            cost::TableFlags {
                calibration: calibration.as_deref(),
                gpu: gpu.as_deref(),
            },
            worst,
            &by,
            format == DocFormat::Json,
        ),
        Command::Family(FamilyCommand::Choose {
            file,
            measurement,
            worst,
            material,
            min_shapes,
            boxes,
            carve,
            open_above,
            products,
            products_under,
            pooled_baseline,
            short_us,
            short_worst,
            cross_validate,
            card,
        }) => family::cmd_choose(
            &file,
            &measurement,
            cake_eval::family::choose::ChooseOptions {
                worst,
                material,
                min_shapes,
                boxes,
                carve,
                open_above,
                products,
                products_under,
                pooled_baseline,
                short_us,
                short_worst,
                card,
            },
            cross_validate,
        ),
    }
}

fn read(file: &Path) -> Result<Vec<u8>, ExitCode> {
    // A regular file of at most 4 MiB (`cake_driver::read_schedule`): never a FIFO that blocks.
    cake_driver::read_schedule(file).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", file.display());
        ExitCode::from(2)
    })
}

/// Front-end plus the target request: the kernels and all findings so far.
fn front(file: &Path, target: Option<&str>) -> Result<(SourceFile, cake_front::Checked), ExitCode> {
    let bytes = read(file)?;
    let (source, checked) = cake_front::check_bytes(&file.display().to_string(), &bytes);
    if let Some(t) = target {
        if let Err(e) = cake_target::lookup(t) {
            eprintln!("error: {e}");
            if let Some(s) = e.suggestion() {
                eprintln!("help: did you mean `{s}`? Cake compiles for exact targets only");
            }
            return Err(ExitCode::from(2));
        }
    }
    Ok((source, checked))
}

fn emit(source: &SourceFile, findings: &[Finding], format: Format, color: bool) {
    match format {
        Format::Human => out!("{}", render::human(source, findings, color)),
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&render::json(source, findings)).expect("JSON")
        ),
        Format::Sarif => emit_sarif(
            &mut [(source.clone(), findings.to_vec())],
            None,
            render::RULES_URL.into(),
        ),
    }
}

/// One SARIF log for every checked file: names made relative to `srcroot` (default: the
/// current directory) where the file is inside it, absolute otherwise.
fn emit_sarif(
    checked: &mut [(SourceFile, Vec<Finding>)],
    srcroot: Option<&Path>,
    rules_url: String,
) {
    let root = std::fs::canonicalize(srcroot.unwrap_or(Path::new(".")));
    for (file, _) in checked.iter_mut() {
        let path = std::fs::canonicalize(&file.name);
        file.name = match (&root, path) {
            (Ok(root), Ok(path)) => match path.strip_prefix(root) {
                Ok(rel) => rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/"),
                Err(_) => path.display().to_string(),
            },
            // An unreadable root or file: the name as given (it was read, so this is rare).
            _ => std::mem::take(&mut file.name),
        };
    }
    let options = render::SarifOptions {
        tool_version: env!("CARGO_PKG_VERSION").into(),
        // Only an explicit --srcroot is written into the log: by default the consumer (GitHub
        // code scanning: the checkout) supplies SRCROOT, and no machine's path is recorded.
        srcroot: srcroot.and(root.ok()).map(|r| r.display().to_string()),
        rules_url,
    };
    let files: Vec<(&SourceFile, &[Finding])> =
        checked.iter().map(|(f, v)| (f, v.as_slice())).collect();
    out!(
        "{}",
        render::sarif_string(&files, cake_diag::catalog::all(), &options)
    );
}

/// `cake check`'s options.
struct CheckFlags<'a> {
    target: Option<&'a str>,
    format: Format,
    strict: bool,
    allow_unbuildable: bool,
    color: Option<bool>,
    shape: Option<&'a str>,
    calibration: Option<&'a Path>,
    gpu: Option<&'a str>,
    srcroot: Option<&'a Path>,
    rules_url: String,
}

fn cmd_check(files: &[PathBuf], flags: CheckFlags) -> ExitCode {
    let CheckFlags {
        target,
        format,
        strict,
        allow_unbuildable,
        color,
        shape,
        calibration,
        gpu,
        srcroot,
        rules_url,
    } = flags;
    if format == Format::Json && files.len() > 1 {
        eprintln!(
            "error: --format json describes one file (cake.findings/v1): check one file per \
             call, or use --format sarif for several in one log"
        );
        return ExitCode::from(2);
    }
    let shape = match shape.map(cake_cost::parse_shape).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: --shape: {e}");
            return ExitCode::from(2);
        }
    };
    let calibration = match calibration.map(cost::read_calibration).transpose() {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(t) = target {
        if let Err(e) = cake_target::lookup(t) {
            eprintln!("error: {e}");
            if let Some(s) = e.suggestion() {
                eprintln!("help: did you mean `{s}`? Cake compiles for exact targets only");
            }
            return ExitCode::from(2);
        }
    }
    let mut all = Vec::with_capacity(files.len());
    for file in files {
        let bytes = match read(file) {
            Ok(b) => b,
            Err(code) => return code,
        };
        let mut checked = cake_driver::check(&file.display().to_string(), &bytes, target);
        let mut findings = std::mem::take(&mut checked.findings);
        if let Some(shape) = &shape {
            if !findings.iter().any(|f| f.is_error()) {
                match cake_driver::cost_findings(&checked, target, shape, calibration.as_ref(), gpu)
                {
                    Ok(extra) => {
                        findings.extend(extra);
                        findings.sort_by_key(|f| (f.span.start, f.code));
                    }
                    Err(e @ cake_cost::CostError::NoCalibrationForGpu { .. }) => {
                        eprintln!("error: --gpu: {e}");
                        return ExitCode::from(1);
                    }
                    Err(e) => {
                        eprintln!("error: --shape: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
        }
        if strict {
            for f in &mut findings {
                if f.category == cake_diag::Category::Coverage {
                    f.severity = cake_diag::Severity::Error;
                }
            }
        }
        all.push((checked.file, findings));
    }
    let errors = all
        .iter()
        .any(|(_, findings)| findings.iter().any(|f| f.is_error()));
    // One summary line per file that some declared target cannot build: a clean exit must mean
    // `cake build` would succeed for every target checked.
    let mut unbuildable = false;
    for (file, findings) in &all {
        let targets = cake_driver::unbuildable_targets(findings);
        if targets.is_empty() {
            continue;
        }
        unbuildable = true;
        let list: Vec<String> = targets
            .iter()
            .map(|(t, n)| {
                format!(
                    "{t} ({n} construct{} not lowered)",
                    if *n == 1 { "" } else { "s" }
                )
            })
            .collect();
        let (lead, tail) = if allow_unbuildable {
            ("note", "allowed by --allow-unbuildable")
        } else {
            (
                "error",
                "see the CAKE-V001 notes; --allow-unbuildable exits 0 anyway",
            )
        };
        eprintln!(
            "{lead}: {} cannot be built for {}: {tail}",
            file.name,
            list.join(", ")
        );
    }
    if format == Format::Sarif {
        emit_sarif(&mut all, srcroot, rules_url);
    } else {
        let color = color.unwrap_or_else(|| std::io::IsTerminal::is_terminal(&std::io::stdout()));
        for (file, findings) in &all {
            emit(file, findings, format, color);
        }
    }
    if errors || (unbuildable && !allow_unbuildable) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn cmd_ir(file: &Path) -> ExitCode {
    let (source, checked) = match front(file, None) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let findings = checked.findings.into_sorted();
    if findings.iter().any(|f| f.is_error()) {
        emit(&source, &findings, Format::Human, false);
        return ExitCode::from(1);
    }
    for k in &checked.kernels {
        out!("{}", cake_ir::print::print(k));
    }
    ExitCode::SUCCESS
}

fn cmd_explain(code: Option<&str>, markdown: bool) -> ExitCode {
    if markdown {
        out!("{}", cake_diag::catalog::rules_markdown());
        return ExitCode::SUCCESS;
    }
    match code {
        None => {
            for info in cake_diag::catalog::all() {
                outln!(
                    "{}  {:<12} {:<24} {}",
                    info.code,
                    info.category.as_str(),
                    info.name,
                    info.summary
                );
            }
            ExitCode::SUCCESS
        }
        Some(c) => match cake_diag::catalog::lookup(c) {
            Some(info) => {
                out!("{}", cake_diag::catalog::explain(info));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("error: unknown code `{c}`; `cake explain` lists every code");
                ExitCode::from(2)
            }
        },
    }
}

/// Check (front-end, verification, lowering coverage) for one target, then lower; findings are
/// printed and end the run.
fn lower_file(
    file: &Path,
    target: &str,
    format: Format,
) -> Result<(cake_driver::Checked, Vec<cake_lower::Lowered>), ExitCode> {
    let bytes = read(file)?;
    cake_driver::lower(&file.display().to_string(), &bytes, target)
        .map_err(|e| build_failed(e, format))
}

/// Report why a lowering or build stopped: findings in the schedule exit 1, anything else 2.
fn build_failed(e: cake_driver::BuildError, format: Format) -> ExitCode {
    match e {
        cake_driver::BuildError::Findings(checked) => {
            emit(&checked.file, &checked.findings, format, false);
            ExitCode::from(1)
        }
        other => {
            eprintln!("error: {other}");
            ExitCode::from(2)
        }
    }
}

fn cmd_build(
    file: &Path,
    target: &str,
    out: &Path,
    opts: cake_driver::BuildOptions,
    format: Format,
) -> ExitCode {
    let bytes = match read(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let spinner = progress::Spinner::start(format!(
        "compiling {} for {target} with nvcc",
        file.display()
    ));
    let built = cake_driver::build_opts(&file.display().to_string(), &bytes, target, out, &opts);
    drop(spinner);
    let built = match built {
        Ok(b) => b,
        Err(e) => return build_failed(e, format),
    };
    if format == Format::Human {
        for k in &built.kernels {
            for r in &k.resources {
                outln!(
                    "{}: {} registers, {} B stack, {} B spill stores, {} B spill loads -> {}{}",
                    r.kernel,
                    r.registers,
                    r.stack_frame,
                    r.spill_stores,
                    r.spill_loads,
                    k.cubin.display(),
                    if k.cached { " (cached)" } else { "" }
                );
            }
        }
        // The check's warnings and notes (it had no errors), then what ptxas reports.
        emit(&built.checked.file, &built.findings, Format::Human, false);
    } else {
        let kernels: Vec<_> = built
            .kernels
            .iter()
            .map(|k| {
                serde_json::json!({
                    "kernel": k.name,
                    "cu": k.cu,
                    "cubin": k.cubin,
                    "launch": k.launch_json,
                    "resources": k.resources,
                    "cached": k.cached,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "schema": "cake.build/v0",
            "target": target,
            "kernels": kernels,
            "findings": render::json(&built.checked.file, &built.findings),
        });
        outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    }
    if built.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

fn cmd_mutate(file: &Path, out: Option<&Path>) -> ExitCode {
    let bytes = match read(file) {
        Ok(b) => b,
        Err(code) => return code,
    };
    let Ok(source) = String::from_utf8(bytes) else {
        eprintln!("error: {} is not UTF-8 text", file.display());
        return ExitCode::from(2);
    };
    let name = file.display().to_string();
    let original = cake_driver::check(&name, source.as_bytes(), None);
    if original.has_errors() {
        eprintln!("error: {name} does not check clean; mutate a valid schedule");
        return ExitCode::from(1);
    }
    let mutants = cake_mutate::mutants(&source);
    let mut outcomes = Vec::new();
    for (n, m) in mutants.into_iter().enumerate() {
        if let Some(dir) = out {
            let stem = file
                .file_stem()
                .map_or("schedule".into(), |s| s.to_string_lossy().into_owned());
            if let Err(e) = std::fs::create_dir_all(dir).and_then(|_| {
                std::fs::write(dir.join(format!("{stem}.{n}.{}.py", m.operator)), &m.source)
            }) {
                eprintln!("error: cannot write mutants into {}: {e}", dir.display());
                return ExitCode::from(2);
            }
        }
        let o = cake_mutate::evaluate(&name, &m);
        outln!(
            "{:<16} line {:>4}  {:<9} {}",
            m.operator,
            m.line,
            // `evaluate` may find the mutant equivalent (an edit in a branch the constants fold away).
            if o.mutant.equivalent.is_some() {
                "equivalent"
            } else if o.caught {
                "caught"
            } else {
                "MISSED"
            },
            m.description
        );
        outcomes.push(o);
    }
    out!("\n{}", cake_mutate::catch_table(&outcomes));
    ExitCode::SUCCESS
}

/// `cake mcp`'s limits; each tool call runs in `cake mcp-worker`, this same executable.
fn mcp_config(
    allow: Vec<PathBuf>,
    timeout: u64,
    eval_timeout: u64,
    memory: u64,
    jobs: Option<usize>,
) -> Result<cake_mcp::Config, String> {
    if timeout == 0 || eval_timeout == 0 {
        return Err("--timeout and --eval-timeout take a positive number of seconds".into());
    }
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the cake executable: {e}"))?;
    let defaults = cake_mcp::Config::default();
    Ok(cake_mcp::Config {
        timeout: std::time::Duration::from_secs(timeout),
        eval_timeout: std::time::Duration::from_secs(eval_timeout),
        memory,
        allow,
        worker: Some(exe),
        jobs: jobs.unwrap_or(defaults.jobs).max(1),
    })
}
