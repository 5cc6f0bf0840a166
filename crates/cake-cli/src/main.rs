//! `cake`: the command-line front door. Each subcommand is a thin shell over a library crate;
//! exit codes are 0 (clean), 1 (findings with errors) and 2 (usage or I/O error).

use cake_diag::{render, Finding, SourceFile};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Write to stdout; a closed pipe (`cake ... | head`) ends the program quietly instead of
/// panicking.
fn write_stdout(text: &str) {
    use std::io::Write;
    if let Err(e) = std::io::stdout().lock().write_all(text.as_bytes()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

macro_rules! out {
    ($($arg:tt)*) => { write_stdout(&format!($($arg)*)) };
}

macro_rules! outln {
    ($($arg:tt)*) => { write_stdout(&(format!($($arg)*) + "\n")) };
}

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

impl From<DocFormat> for Format {
    fn from(f: DocFormat) -> Format {
        match f {
            DocFormat::Human => Format::Human,
            DocFormat::Json => Format::Json,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Parse, type-check and verify a schedule; print every finding.
    Check {
        file: PathBuf,
        /// Check for this target (default: every target the schedule declares).
        #[arg(long)]
        target: Option<String>,
        #[arg(long, value_enum, default_value = "human")]
        format: Format,
        /// Treat coverage notes ("not verified: ...") as errors.
        #[arg(long)]
        strict: bool,
        /// Colour the human output (default: when stdout is a terminal).
        #[arg(long)]
        color: Option<bool>,
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
            file,
            target,
            format,
            strict,
            color,
        } => cmd_check(&file, target.as_deref(), format, strict, color),
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
            format,
        } => cmd_build(&file, &target, &out, format.into()),
        Command::Mutate { file, out } => cmd_mutate(&file, out.as_deref()),
    }
}

fn read(file: &Path) -> Result<Vec<u8>, ExitCode> {
    std::fs::read(file).map_err(|e| {
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
        Format::Sarif => {
            let sarif = render::sarif(
                &[(source, findings)],
                cake_diag::catalog::all(),
                env!("CARGO_PKG_VERSION"),
            );
            outln!("{}", serde_json::to_string_pretty(&sarif).expect("JSON"));
        }
    }
}

fn cmd_check(
    file: &Path,
    target: Option<&str>,
    format: Format,
    strict: bool,
    color: Option<bool>,
) -> ExitCode {
    let bytes = match read(file) {
        Ok(b) => b,
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
    let checked = cake_driver::check(&file.display().to_string(), &bytes, target);
    let mut findings = checked.findings;
    if strict {
        for f in &mut findings {
            if f.category == cake_diag::Category::Coverage {
                f.severity = cake_diag::Severity::Error;
            }
        }
    }
    let color = color.unwrap_or_else(|| std::io::IsTerminal::is_terminal(&std::io::stdout()));
    emit(&checked.file, &findings, format, color);
    if findings.iter().any(|f| f.is_error()) {
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
    let t = match cake_target::lookup(target) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let bytes = read(file)?;
    let mut checked = cake_driver::check(&file.display().to_string(), &bytes, Some(target));
    // What cannot be lowered stops `lower` and `build` (it is only a note for `check`).
    for f in &mut checked.findings {
        if f.code == cake_diag::catalog::coverage::NOT_LOWERED.code {
            f.severity = cake_diag::Severity::Error;
        }
    }
    if checked.has_errors() {
        emit(&checked.file, &checked.findings, format, false);
        return Err(ExitCode::from(1));
    }
    let mut out = Vec::new();
    for k in &checked.kernels {
        match cake_lower::lower(k, &checked.file, t) {
            Ok(l) => out.push(l),
            Err(errors) => {
                // The driver's coverage check makes this unreachable; report rather than panic.
                let findings: Vec<Finding> = errors
                    .into_iter()
                    .map(|e| {
                        Finding::new(
                            &cake_diag::catalog::coverage::NOT_LOWERED,
                            e.span,
                            e.message,
                        )
                    })
                    .collect();
                emit(&checked.file, &findings, format, false);
                return Err(ExitCode::from(1));
            }
        }
    }
    Ok((checked, out))
}

fn cmd_build(file: &Path, target: &str, out: &Path, format: Format) -> ExitCode {
    let (checked, lowered) = match lower_file(file, target, format) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let t = cake_target::lookup(target).expect("checked");
    let tc = match cake_toolchain::Toolchain::discover() {
        Ok(tc) => tc,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    // The check's warnings and notes (it had no errors), then what ptxas reports.
    let mut findings = checked.findings.clone();
    let mut built = Vec::new();
    for (k, l) in checked.kernels.iter().zip(&lowered) {
        let stem = l.launch.kernel.clone();
        let build = match tc.compile_cached(&l.cuda, t, out, &stem) {
            Ok(b) => b,
            Err(e) => {
                // The schedule verified and lowered, so this is Cake's fault (or the toolchain's),
                // not a finding in the schedule: exit 2, as for other tool failures.
                eprintln!("error: the CUDA generated for kernel `{stem}` did not compile; this is a bug in Cake, please report it with the schedule\n{e}");
                return ExitCode::from(2);
            }
        };
        let launch = serde_json::to_string_pretty(&l.launch).expect("JSON");
        let resources = serde_json::to_string_pretty(&build.resources).expect("JSON");
        for (name, text) in [
            (format!("{stem}.launch.json"), launch),
            (format!("{stem}.resources.json"), resources),
        ] {
            if let Err(e) = std::fs::write(out.join(&name), text + "\n") {
                eprintln!("error: cannot write {}: {e}", out.join(&name).display());
                return ExitCode::from(2);
            }
        }
        for r in &build.resources {
            if format == Format::Human {
                outln!(
                    "{}: {} registers, {} B stack, {} B spill stores, {} B spill loads -> {}{}",
                    r.kernel,
                    r.registers,
                    r.stack_frame,
                    r.spill_stores,
                    r.spill_loads,
                    build.cubin.display(),
                    if build.cached { " (cached)" } else { "" }
                );
            }
            findings.extend(resource_findings(k, r));
        }
        built.push(serde_json::json!({
            "kernel": stem,
            "cu": out.join(format!("{stem}.cu")),
            "cubin": build.cubin,
            "launch": out.join(format!("{stem}.launch.json")),
            "resources": build.resources,
            "cached": build.cached,
        }));
    }
    if format == Format::Human {
        emit(&checked.file, &findings, Format::Human, false);
    } else {
        let doc = serde_json::json!({
            "schema": "cake.build/v0",
            "target": target,
            "kernels": built,
            "findings": render::json(&checked.file, &findings),
        });
        outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    }
    if findings.iter().any(|f| f.is_error()) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Problems in the ptxas report, placed on the schedule's own lines.
fn resource_findings(k: &cake_ir::Kernel, r: &cake_toolchain::KernelResources) -> Vec<Finding> {
    let mut out = Vec::new();
    if r.warnings.iter().any(|w| w.contains("C7508")) {
        for (rid, role) in k.roles.iter().filter(|(_, role)| role.regs.is_some()) {
            out.push(
                Finding::new(
                    &cake_diag::catalog::conformance::SETMAXNREG_IGNORED,
                    k.roles.span(rid),
                    format!(
                        "ptxas ignored the register budget of role `{}` (C7508)",
                        role.name
                    ),
                )
                .role(&role.name),
            );
        }
    }
    // C7514 and C7517 are the codes seen on sm_90a; ptxas has others for other causes (register
    // pressure, ...), all saying the wgmma instructions are serialised.
    let is_serialisation = |w: &&String| {
        w.contains("C7514")
            || w.contains("C7517")
            || w.contains("wgmma.mma_async instructions are serialized")
    };
    let serialised = r
        .warnings
        .iter()
        .find(|w| w.contains("C7514"))
        .or_else(|| r.warnings.iter().find(is_serialisation));
    if let Some(note) = serialised {
        // ptxas names no source line: point at the schedule's MMAs into register accumulators.
        let mut mmas = Vec::new();
        k.walk(|sid, stmt, _| {
            if let cake_ir::Stmt::Op(cake_ir::Op::Mma {
                acc: cake_ir::Operand::Frag(_),
                ..
            }) = stmt
            {
                mmas.push(k.stmts.span(sid));
            }
        });
        if let Some(first) = mmas.first() {
            // The note's own code, `(C75xx)`.
            let code = note
                .split_once("(C")
                .and_then(|(_, rest)| rest.split_once(')'))
                .map_or("ptxas note".to_string(), |(digits, _)| format!("C{digits}"));
            let mut f = Finding::new(
                &cake_diag::catalog::performance::WGMMA_SERIALIZED,
                *first,
                format!("ptxas serialised the wgmma instructions ({code}): the MMAs no longer overlap the code around them"),
            )
            .note(note.trim_start_matches("ptxas info    : ").to_string());
            for m in &mmas[1..] {
                f = f.label(*m, "another MMA into registers");
            }
            out.push(f);
        }
    }
    if r.spill_stores > 0 || r.spill_loads > 0 {
        // The role whose fragments hold the most registers per thread is the usual cause.
        let regs_of = |f: &cake_ir::Fragment| {
            let threads = k.roles[f.role].unit.threads();
            (f.shape.iter().product::<u32>() * f.dtype.bytes()).div_ceil(4 * threads)
        };
        let heaviest = k
            .roles
            .iter()
            .map(|(rid, _)| {
                (
                    rid,
                    k.fragments
                        .iter()
                        .filter(|(_, f)| f.role == rid)
                        .map(|(_, f)| regs_of(f))
                        .sum::<u32>(),
                )
            })
            .max_by_key(|(rid, total)| (*total, std::cmp::Reverse(rid.index())));
        let msg = format!(
            "ptxas spilled {} B to local memory ({} B stores, {} B loads)",
            r.spill_stores.max(r.spill_loads),
            r.spill_stores,
            r.spill_loads
        );
        let site = heaviest.and_then(|(rid, total)| {
            k.fragments
                .iter()
                .filter(|(_, f)| f.role == rid)
                .max_by_key(|(fid, f)| (regs_of(f), std::cmp::Reverse(fid.index())))
                .map(|(fid, _)| (rid, total, fid))
        });
        let f = match site {
            Some((rid, total, fid)) => {
                let role = &k.roles[rid];
                let names: Vec<String> = k
                    .fragments
                    .iter()
                    .filter(|(_, f)| f.role == rid)
                    .map(|(_, f)| format!("`{}` ({} regs)", f.name, regs_of(f)))
                    .collect();
                Finding::new(&cake_diag::catalog::performance::REGISTER_SPILL, k.fragments.span(fid), msg)
                    .role(&role.name)
                    .subject("fragment", &k.fragments[fid].name)
                    .note(format!(
                        "role `{}` holds {total} registers per thread in fragments {} with a budget of {}; it is the likeliest place of the spill",
                        role.name,
                        names.join(", "),
                        role.regs.map_or(format!("{} (launch allocation)", r.registers), |n| n.to_string())
                    ))
            }
            None => Finding::new(
                &cake_diag::catalog::performance::REGISTER_SPILL,
                k.span,
                msg,
            ),
        };
        out.push(f.note(format!(
            "{} registers per thread at entry, {} B stack frame",
            r.registers, r.stack_frame
        )));
    }
    out
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
            if m.equivalent.is_some() {
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
