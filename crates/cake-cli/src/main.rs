//! `cake`: the command-line front door. Each subcommand is a thin shell over a library crate;
//! exit codes are 0 (clean), 1 (findings with errors) and 2 (usage or I/O error).

use cake_diag::{render, Finding, SourceFile};
use clap::{Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "cake", version, about = "Cake: a verified GPU kernel compiler for schedules written in Cake IR")]
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
        Command::Check { file, target, format, strict, color } => cmd_check(&file, target.as_deref(), format, strict, color),
        Command::Ir { file } => cmd_ir(&file),
        Command::Targets { format } => {
            match format {
                Format::Human => print!("{}", cake_target::render_table()),
                _ => println!("{}", serde_json::to_string_pretty(&cake_target::to_json()).expect("JSON")),
            }
            ExitCode::SUCCESS
        }
        Command::Explain { code, markdown } => cmd_explain(code.as_deref(), markdown),
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
        Format::Human => print!("{}", render::human(source, findings, color)),
        Format::Json => println!("{}", serde_json::to_string_pretty(&render::json(source, findings)).expect("JSON")),
        Format::Sarif => {
            let sarif = render::sarif(&[(source, findings)], cake_diag::catalog::all(), env!("CARGO_PKG_VERSION"));
            println!("{}", serde_json::to_string_pretty(&sarif).expect("JSON"));
        }
    }
}

fn cmd_check(file: &Path, target: Option<&str>, format: Format, strict: bool, color: Option<bool>) -> ExitCode {
    let (source, checked) = match front(file, target) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut findings = checked.findings.into_sorted();
    if strict {
        for f in &mut findings {
            if f.category == cake_diag::Category::Coverage {
                f.severity = cake_diag::Severity::Error;
            }
        }
    }
    let color = color.unwrap_or_else(|| std::io::IsTerminal::is_terminal(&std::io::stdout()));
    emit(&source, &findings, format, color);
    if findings.iter().any(|f| f.is_error()) { ExitCode::from(1) } else { ExitCode::SUCCESS }
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
        print!("{}", cake_ir::print::print(k));
    }
    ExitCode::SUCCESS
}

fn cmd_explain(code: Option<&str>, markdown: bool) -> ExitCode {
    if markdown {
        print!("{}", cake_diag::catalog::rules_markdown());
        return ExitCode::SUCCESS;
    }
    match code {
        None => {
            for info in cake_diag::catalog::all() {
                println!("{}  {:<12} {:<24} {}", info.code, info.category.as_str(), info.name, info.summary);
            }
            ExitCode::SUCCESS
        }
        Some(c) => match cake_diag::catalog::lookup(c) {
            Some(info) => {
                print!("{}", cake_diag::catalog::explain(info));
                ExitCode::SUCCESS
            }
            None => {
                eprintln!("error: unknown code `{c}`; `cake explain` lists every code");
                ExitCode::from(2)
            }
        },
    }
}
