//! `cake cost` and `cake calibrate`: the cost model's front door (docs/cost-model.md).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cake_cost::{Calibration, CostError};

/// The calibration table a command line names: `--calibration FILE` or `--gpu CARD` (they
/// exclude each other), or neither.
#[derive(Clone, Copy, Default)]
pub struct TableFlags<'a> {
    pub calibration: Option<&'a Path>,
    pub gpu: Option<&'a str>,
}

/// The table the command line names: `--calibration FILE`, else the committed table measured
/// on `--gpu`'s card (none: exit 1, naming the cards that have one); `None` when it names none.
pub fn chosen_calibration(
    target: &cake_target::Target,
    flags: TableFlags,
) -> Result<Option<Calibration>, ExitCode> {
    match (flags.calibration, flags.gpu) {
        (Some(p), _) => read_calibration(p).map(Some),
        (None, Some(gpu)) => Calibration::builtin_for(target, gpu)
            .map(Some)
            .map_err(|e| {
                eprintln!("error: --gpu {gpu}: {e}");
                ExitCode::from(1)
            }),
        (None, None) => Ok(None),
    }
}

/// The table the command line names, else the target's committed default (none: `CAKE-V003`,
/// exit 1).
pub fn calibration_for(
    target: &cake_target::Target,
    flags: TableFlags,
) -> Result<Calibration, ExitCode> {
    match chosen_calibration(target, flags)? {
        Some(c) => Ok(c),
        None => Calibration::builtin(target).map_err(|e| {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }),
    }
}

/// Read and validate a calibration table given on the command line.
pub fn read_calibration(path: &Path) -> Result<Calibration, ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", path.display());
        ExitCode::from(2)
    })?;
    Calibration::from_toml(&text).map_err(|e| {
        eprintln!("error: {}: {e}", path.display());
        ExitCode::from(2)
    })
}

/// The target of `--target`, or a located refusal with a suggestion.
pub fn lookup(target: &str) -> Result<&'static cake_target::Target, ExitCode> {
    cake_target::lookup(target).map_err(|e| {
        eprintln!("error: {e}");
        if let Some(s) = e.suggestion() {
            eprintln!("help: did you mean `{s}`? Cake compiles for exact targets only");
        }
        ExitCode::from(2)
    })
}

pub fn cmd_cost(
    file: &Path,
    target: &str,
    shape: &str,
    table: TableFlags,
    only: Option<&str>,
    json: bool,
) -> ExitCode {
    let t = match lookup(target) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let shape = match cake_cost::parse_shape(shape) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: --shape: {e}");
            return ExitCode::from(2);
        }
    };
    let cal = match calibration_for(t, table) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let bytes = match cake_driver::read_schedule(file) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: cannot read {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let checked = cake_driver::check(&file.display().to_string(), &bytes, Some(target));
    if checked.has_errors() {
        eprint!(
            "{}",
            cake_diag::render::human(&checked.file, &checked.findings, false)
        );
        eprintln!(
            "error: the schedule has errors; the cost model estimates verified schedules only"
        );
        return ExitCode::from(1);
    }
    let mut estimates = Vec::new();
    for (ki, k) in checked.kernels.iter().enumerate() {
        if only.is_some_and(|n| n != k.name) {
            continue;
        }
        match checked.estimate(ki, t, &shape, &cal) {
            Ok(e) => estimates.push(e),
            Err(e @ CostError::Shape(_)) => {
                eprintln!("error: --shape: {e}");
                return ExitCode::from(2);
            }
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        }
    }
    if estimates.is_empty() {
        eprintln!(
            "error: no kernel{} in {}",
            only.map(|n| format!(" `{n}`")).unwrap_or_default(),
            file.display()
        );
        return ExitCode::from(2);
    }
    if json {
        let doc = serde_json::json!({"schema": "cake.cost/v0", "estimates": estimates});
        outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        for e in &estimates {
            out!("{}", e.render());
        }
        if table.calibration.is_none() && table.gpu.is_none() {
            other_cards_note(t, &cal);
        }
    }
    ExitCode::SUCCESS
}

/// Where the default table was used and the target has tables for other cards, say so: an H100
/// user reading an H200 estimate should know a closer one is a flag away.
fn other_cards_note(target: &cake_target::Target, used: &Calibration) {
    let others: Vec<String> = Calibration::builtin_tables(target)
        .unwrap_or_default()
        .iter()
        .filter(|t| t.meta.gpu != used.meta.gpu)
        .filter_map(|t| t.meta.card().map(|c| format!("`--gpu {c}`")))
        .collect();
    if !others.is_empty() {
        outln!(
            "note: estimated for the {} ({}'s default table); {} estimates for that card",
            used.meta.gpu,
            target.name,
            others.join(" or ")
        );
    }
}

/// Where the calibration schedules are: `$CAKE_CALIBRATE_DIR`, else `kernels/calibrate` under
/// the working directory or above the `cake` binary (`dist/cake` in a checkout).
fn schedules_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CAKE_CALIBRATE_DIR") {
        return Some(PathBuf::from(d));
    }
    let mut bases = vec![std::env::current_dir().ok()?];
    if let Ok(exe) = std::env::current_exe() {
        bases.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    bases
        .into_iter()
        .map(|b| b.join("kernels/calibrate"))
        .find(|d| d.is_dir())
}

pub fn cmd_calibrate(
    target: &str,
    out: &Path,
    measurements: Option<&Path>,
    keep: Option<&Path>,
) -> ExitCode {
    let t = match lookup(target) {
        Ok(t) => t,
        Err(c) => return c,
    };
    let text = match measurements {
        Some(p) => match std::fs::read_to_string(p) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot read {}: {e}", p.display());
                return ExitCode::from(2);
            }
        },
        None => {
            let Some(dir) = schedules_dir() else {
                eprintln!("error: kernels/calibrate not found; run from the repository root or set CAKE_CALIBRATE_DIR");
                return ExitCode::from(2);
            };
            let raw = keep.map(Path::to_path_buf).unwrap_or_else(|| {
                std::env::temp_dir().join(format!("cake-calibrate-{}.json", std::process::id()))
            });
            let python = std::env::var("CAKE_PYTHON").unwrap_or_else(|_| "python3".into());
            let cake = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("cake"));
            eprintln!(
                "running {python} -m cake.calibrate on {} ...",
                dir.display()
            );
            let status = std::process::Command::new(&python)
                .args(["-m", "cake.calibrate", "--target", target, "--schedules"])
                .arg(&dir)
                .arg("--cake")
                .arg(&cake)
                .arg("--out")
                .arg(&raw)
                .status();
            match status {
                Ok(s) if s.success() => {}
                Ok(s) => {
                    eprintln!("error: python -m cake.calibrate failed ({s})");
                    return ExitCode::from(1);
                }
                Err(e) => {
                    eprintln!("error: cannot start {python}: {e}");
                    return ExitCode::from(2);
                }
            }
            match std::fs::read_to_string(&raw) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: cannot read {}: {e}", raw.display());
                    return ExitCode::from(1);
                }
            }
        }
    };
    let m: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: the measurements are not JSON: {e}");
            return ExitCode::from(1);
        }
    };
    if m["target"].as_str().is_some_and(|mt| mt != t.name) {
        eprintln!(
            "error: the measurements are for {}, not {}",
            m["target"], t.name
        );
        return ExitCode::from(1);
    }
    // Parameters no probe measures keep the committed table's of this card, else the default's.
    let gpu = m["environment"]["gpu"].as_str();
    let seed = Calibration::builtin_for_device(t, gpu).unwrap_or_else(|_| Calibration {
        meta: cake_cost::Meta {
            target: t.name.into(),
            gpu: String::new(),
            driver: String::new(),
            date: String::new(),
            method: String::new(),
            commit: None,
        },
        params: Default::default(),
        mma_tflops_16bit_by_n: Default::default(),
        mma_chain_tflops_16bit_by_n: Default::default(),
        tma_stream_gbps: Default::default(),
        cluster_ctas: Default::default(),
    });
    let cal = match Calibration::from_measurements(&seed, &m) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = std::fs::write(out, cal.to_toml()) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return ExitCode::from(2);
    }
    eprintln!("wrote {}", out.display());
    for (name, p) in &cal.params {
        eprintln!("  {name:<18} {:>12.4}  {}", p.value, p.source);
    }
    ExitCode::SUCCESS
}
