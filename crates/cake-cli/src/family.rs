//! `cake family`: a family file's routes over its contract's domain (docs/dispatch.md).

use cake_eval::contract::shape_text;
use cake_eval::family::choose::{self, ChooseOptions};
use cake_eval::family::measure::{self, MeasureOptions, Measurement, Mode};
use cake_eval::family::{accuracy, report};
use cake_eval::family::{sample, Family, Shard};
use cake_eval::{Supervisor, WorkerCommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn load(file: &Path) -> Result<Family, ExitCode> {
    Family::load(file).map_err(|errs| {
        for e in errs {
            eprintln!("error: {e}");
        }
        ExitCode::from(2)
    })
}

/// Which route takes each region of the domain, on each GPU the family routes differently;
/// exit 1 when a route takes no region on any GPU it serves.
pub fn cmd_validate(file: &Path, json: bool) -> ExitCode {
    let f = match load(file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let all = match f.validate() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    let (named, other) = all.views.split_at(all.views.len() - 1);
    if json {
        let mut doc = serde_json::json!({
            "family": f.name,
            "contract": f.contract.path,
            "routes": f.routes,
            "fallback": f.fallback,
            "validation": other[0].validation,
            "unreachable": all.unreachable,
        });
        if !named.is_empty() {
            doc["cards"] = serde_json::json!(named);
        }
        outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        for view in &all.views {
            let v = &view.validation;
            let on = match (&view.card, named.is_empty()) {
                (_, true) => String::new(),
                (Some(card), false) => format!(" on {card}"),
                (None, false) => " on any other GPU".to_string(),
            };
            outln!(
                "family {} over contract {}{on}: {} regions of the domain",
                f.name,
                f.contract.name,
                v.regions
            );
            for (r, n) in f.routes.iter().zip(&v.by_route) {
                let taken = if r.serves(view.card.as_deref()) {
                    format!("{n:>6} regions")
                } else {
                    format!("{:>14}", "not this GPU")
                };
                outln!(
                    "  route {:<20} {taken}  when {}  ({})",
                    r.name,
                    guard_text(r),
                    r.kernel.display()
                );
            }
            outln!(
                "  fallback                   {:>6} regions  {}",
                v.fallback_regions,
                f.fallback
            );
            for s in &v.fallback_examples {
                outln!("    e.g. {}", shape_text(s));
            }
            for o in &v.overlaps {
                outln!(
                    "  overlap: {} all admit {}; `{}` takes it",
                    o.routes.join(", "),
                    shape_text(&o.shape),
                    o.routes[0]
                );
            }
        }
        for r in &all.unreachable {
            outln!(
                "  error: route `{r}` takes no shape: an earlier route or its own guard shadows it"
            );
        }
    }
    if all.unreachable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// A route's guard as text (`M >= 2 and N in [4096]`), and the cards it serves.
fn guard_text(r: &cake_eval::family::Route) -> String {
    let when: Vec<String> = r
        .when
        .iter()
        .map(|(d, g)| {
            let mut parts = Vec::new();
            if let Some(m) = g.min {
                parts.push(format!("{d} >= {m}"));
            }
            if let Some(m) = g.max {
                parts.push(format!("{d} <= {m}"));
            }
            if let Some(s) = &g.values {
                parts.push(format!("{d} in {s:?}"));
            }
            parts.join(" and ")
        })
        .collect();
    let mut text = if when.is_empty() {
        "every shape".to_string()
    } else {
        when.join(" and ")
    };
    if !r.cards.is_empty() {
        text += &format!(" on {}", r.cards.join(", "));
    }
    text
}

/// Shapes of the family's domain, one JSON object per line.
pub fn cmd_sample(file: &Path, shard: &str, n: usize, seed: u64, card: Option<&str>) -> ExitCode {
    let Some(shard) = Shard::parse(shard) else {
        eprintln!("error: --shard is representative, boundary, held_out or bench, got `{shard}`");
        return ExitCode::from(2);
    };
    let f = match load(file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    for s in sample(&f.contract, shard, n, seed) {
        let route = f
            .route_of(&s, card)
            .map_or("fallback".to_string(), |i| f.routes[i].name.clone());
        outln!("{}", serde_json::json!({"shape": s, "route": route}));
    }
    ExitCode::SUCCESS
}

/// `cake family measure`'s arguments (main.rs).
#[derive(clap::Args)]
pub struct MeasureArgs {
    pub file: PathBuf,
    /// representative, boundary, held_out, or bench (the contract's bench shapes)
    #[arg(long, default_value = "held_out")]
    pub shard: String,
    #[arg(long, default_value_t = 100)]
    pub n: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Time every route whose guard admits a shape (the evidence `choose` reads)
    #[arg(long)]
    pub every_route: bool,
    /// With --every-route, time only this route (repeatable): the routes added since an earlier
    /// measurement of the same seed, whose rows `choose` then joins
    #[arg(long = "route", value_name = "NAME")]
    pub routes: Vec<String>,
    /// The contract's baseline to time against (default: its first)
    #[arg(long)]
    pub baseline: Option<String>,
    /// Override the contract's warm-up and sample counts
    #[arg(long)]
    pub warmup: Option<u32>,
    #[arg(long)]
    pub samples: Option<u32>,
    /// The exact target (default: the GPU's; required with --prebuild)
    #[arg(long)]
    pub target: Option<String>,
    /// Only build every schedule the measurement needs (no GPU): a GPU host given the
    /// build cache (CAKE_CACHE_DIR) then compiles nothing
    #[arg(long)]
    pub prebuild: bool,
    /// With --prebuild, build what dispatch needs on this GPU only (a word of its name: H100,
    /// H200); default: on every GPU the family's routes name, and on any other
    #[arg(long, requires = "prebuild")]
    pub card: Option<String>,
    #[arg(long, short, required_unless_present = "prebuild")]
    pub out: Option<PathBuf>,
    /// Print the worker's chatter
    #[arg(long, short)]
    pub verbose: bool,
}

/// Time the family on the GPU (or, with --prebuild, only build what that needs).
pub fn cmd_measure(a: MeasureArgs) -> ExitCode {
    let Some(shard) = Shard::parse(&a.shard) else {
        eprintln!(
            "error: --shard is representative, boundary, held_out or bench, got `{}`",
            a.shard
        );
        return ExitCode::from(2);
    };
    let f = match load(&a.file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let o = MeasureOptions {
        shard,
        n: a.n,
        seed: a.seed,
        mode: if a.every_route {
            Mode::EveryRoute
        } else {
            Mode::Dispatch
        },
        baseline: a.baseline,
        warmup: a.warmup,
        samples: a.samples,
        target: a.target,
        routes: a.routes,
        card: a.card,
    };
    let mut progress = |line: &str| eprintln!("{line}");
    if a.prebuild {
        let Some(target) = o.target.clone() else {
            eprintln!("error: --prebuild needs --target (there is no GPU to ask)");
            return ExitCode::from(2);
        };
        return match measure::prebuild(&f, &o, &target, &mut progress) {
            Ok(built) => {
                let rejected = built.iter().filter(|b| b.2.is_some()).count();
                outln!(
                    "built {} schedule(s) for {target}; {rejected} rejected",
                    built.len()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        };
    }
    let out = a.out.expect("clap requires --out without --prebuild");
    if let Err(e) = std::fs::create_dir_all(&out) {
        eprintln!("error: cannot create {}: {e}", out.display());
        return ExitCode::from(2);
    }
    let mut sup = Supervisor::new(WorkerCommand::from_env());
    sup.verbose = a.verbose;
    // The measurement so far, after every run: a time limit that stops this process leaves
    // the shapes already timed (the report and choose read a partial measurement alike).
    let partial = out.join("measurement.json");
    let mut checkpoint = |m: &measure::Measurement| {
        let json = serde_json::to_string_pretty(m).expect("JSON") + "\n";
        let _ = crate::output::write_atomically(&partial, &json);
    };
    let result = measure::measure(&f, &o, &mut sup, &mut progress, &mut checkpoint);
    sup.shutdown();
    let m = match result {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(help) = e.help() {
                eprintln!("help: {help}");
            }
            return ExitCode::from(2);
        }
    };
    let r = report::report(&m);
    let text = report::render(&m, &r);
    let svg = cake_chart::scatter_with_best(&report::chart(&m, &r));
    let json = serde_json::to_string_pretty(&m).expect("JSON") + "\n";
    let mut files = vec![("measurement.json", json), ("report.txt", text.clone())];
    match svg {
        Ok(svg) => files.push(("report.svg", svg)),
        Err(e) => eprintln!("warning: no chart: {e}"),
    }
    for (name, body) in files {
        if let Err(code) = crate::output::write_atomically(&out.join(name), &body) {
            return code;
        }
    }
    out!("{text}");
    verdict(&r)
}

/// Exit 1 when the family returned a wrong output anywhere.
fn verdict(r: &report::Report) -> ExitCode {
    if r.incorrect.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn read_measurement(path: &Path) -> Result<Measurement, ExitCode> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        eprintln!("error: cannot read {}: {e}", path.display());
        ExitCode::from(2)
    })?;
    let m: Measurement = serde_json::from_str(&text).map_err(|e| {
        eprintln!(
            "error: {}: not a family measurement ({}): {e}",
            path.display(),
            measure::SCHEMA
        );
        ExitCode::from(2)
    })?;
    if m.schema != measure::SCHEMA {
        eprintln!(
            "error: {}: schema `{}`, expected `{}`",
            path.display(),
            m.schema,
            measure::SCHEMA
        );
        return Err(ExitCode::from(2));
    }
    Ok(m)
}

/// Every measurement of `paths`, in order; the first that does not read stops it.
fn read_measurements(paths: &[PathBuf]) -> Result<Vec<Measurement>, ExitCode> {
    paths.iter().map(|p| read_measurement(p)).collect()
}

/// Re-render a measurement's report (and chart).
pub fn cmd_report(path: &Path, svg: Option<&Path>, json: bool) -> ExitCode {
    let m = match read_measurement(path) {
        Ok(m) => m,
        Err(code) => return code,
    };
    let r = report::report(&m);
    if let Some(file) = svg {
        match cake_chart::scatter_with_best(&report::chart(&m, &r)) {
            Ok(body) => {
                if let Err(code) = crate::output::write_atomically(file, &body) {
                    return code;
                }
            }
            Err(e) => {
                eprintln!("error: cannot draw the chart: {e}");
                return ExitCode::from(2);
            }
        }
    }
    if json {
        outln!("{}", serde_json::to_string_pretty(&r).expect("JSON"));
    } else {
        out!("{}", report::render(&m, &r));
    }
    verdict(&r)
}

/// The cost model against a family's measurements.
pub fn cmd_accuracy(
    file: &Path,
    paths: &[PathBuf],
    target: &str,
    table: crate::cost::TableFlags,
    worst: usize,
    by: &[String],
    json: bool,
) -> ExitCode {
    let f = match load(file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let cal =
        match crate::cost::lookup(target).and_then(|t| crate::cost::chosen_calibration(t, table)) {
            Ok(c) => c,
            Err(code) => return code,
        };
    let ms: Vec<(String, Measurement)> = match read_measurements(paths) {
        Ok(ms) => ms
            .into_iter()
            .zip(paths)
            .map(|(m, p)| (p.display().to_string(), m))
            .collect(),
        Err(code) => return code,
    };
    match accuracy::accuracy(&f, &ms, target, cal.as_ref()) {
        Ok(a) => {
            let mut breakdowns = Vec::new();
            for dim in by {
                match accuracy::breakdown(&a, dim) {
                    Some(groups) => breakdowns.push((dim, groups)),
                    None => {
                        eprintln!(
                            "error: --by {dim}: no timed shape of the measurements has dimension `{dim}`"
                        );
                        return ExitCode::from(2);
                    }
                }
            }
            if json {
                let mut doc = serde_json::to_value(&a).expect("JSON");
                if !breakdowns.is_empty() {
                    doc["breakdowns"] = breakdowns
                        .iter()
                        .map(|(dim, g)| ((*dim).clone(), serde_json::to_value(g).expect("JSON")))
                        .collect::<serde_json::Map<_, _>>()
                        .into();
                }
                outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
            } else {
                out!("{}", accuracy::render(&a, worst));
                for (dim, groups) in &breakdowns {
                    out!("{}", accuracy::render_breakdown(dim, groups));
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// Print the family file `choose` picks from an every-route measurement.
pub fn cmd_choose(
    file: &Path,
    paths: &[PathBuf],
    o: ChooseOptions,
    cross_validate: Option<usize>,
) -> ExitCode {
    let f = match load(file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let ms = match read_measurements(paths) {
        Ok(ms) => ms,
        Err(code) => return code,
    };
    let m = match Measurement::merge(ms) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let cv = match cross_validate.map(|folds| choose::cross_validate(&f, &m, &o, folds)) {
        None => None,
        Some(Ok(cv)) => Some(cv),
        Some(Err(e)) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    match choose::choose(&f, &m, &o) {
        Ok(chosen) if chosen.is_empty() => {
            eprintln!(
                "error: no candidate route gains {}x anywhere it was measured (every shape at least {}x): the family would be its fallback alone, which a family file cannot be",
                o.material, o.worst
            );
            ExitCode::from(1)
        }
        Ok(chosen) => {
            out!("{}", choose::render(&f, &m, &chosen, &o, cv.as_ref()));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
