//! Measuring a family on the GPU (docs/dispatch.md): shapes drawn from its domain, each timed
//! through the route dispatch gives it (or, to choose routes, through every route whose guard
//! admits it) against the contract's baseline in the same worker, sample by sample in turn, with
//! the outputs of the timed calls checked against the oracle. Every timing is a `cake bench`
//! run of the route's schedule (run.rs), so a family's numbers are produced exactly as a
//! kernel's are.

use super::{sample, Family, Shard};
use crate::contract::{Contract, Shape, Specialization};
use crate::evidence::ShapeTiming;
use crate::run::{self, Mode as RunMode, Options, Progress, RunError};
use crate::worker::Supervisor;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SCHEMA: &str = "cake.family-measurement/v0";

/// What a measurement times at each shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// The route dispatch gives the shape (the fallback where no route takes it): the family
    /// as users call it, what G_span is computed from.
    Dispatch,
    /// Every route whose guard admits the shape: the evidence `choose` picks guards from.
    EveryRoute,
}

#[derive(Clone, Debug)]
pub struct MeasureOptions {
    pub shard: Shard,
    pub n: usize,
    pub seed: u64,
    pub mode: Mode,
    /// The contract's baseline to time against (default: its first).
    pub baseline: Option<String>,
    /// Override the contract's `[bench]` warm-up and sample counts.
    pub warmup: Option<u32>,
    pub samples: Option<u32>,
    /// The exact target (default: the GPU's).
    pub target: Option<String>,
    /// Every-route mode: time only these routes (empty: all). A later measurement of the same
    /// seed with the routes added since joins the earlier one's rows (`Measurement::merge`).
    pub routes: Vec<String>,
    /// Prebuild only: dispatch as on this GPU (a word of its name, as a route's `cards`);
    /// `None`: build what every GPU the family routes differently needs. A measurement
    /// dispatches as on the worker's GPU.
    pub card: Option<String>,
}

impl MeasureOptions {
    /// Whether the measurement times route `name` (every route unless `routes` names some).
    fn times(&self, name: &str) -> bool {
        self.routes.is_empty() || self.routes.iter().any(|r| r == name)
    }
}

/// A family's measurement: one record per shape, in the order the sampler drew them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Measurement {
    pub schema: String,
    pub family: String,
    pub contract: String,
    pub shard: String,
    pub seed: u64,
    pub n: usize,
    pub mode: Mode,
    pub baseline: String,
    pub created: String,
    /// The worker's environment (GPU, driver, versions) from the first run.
    pub environment: Value,
    pub shapes: Vec<ShapeResult>,
    /// The seeds of further representative measurements merged into this one for `choose`
    /// (their shapes follow this one's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_seeds: Vec<u64>,
}

/// The GPU's name in a worker's environment report (`gpu`), where it gave one.
fn gpu_name(environment: &Value) -> Option<&str> {
    environment.get("gpu").and_then(|g| g.as_str())
}

impl Measurement {
    /// The name of the GPU the worker ran on (`environment.gpu`), where it reported one.
    pub fn gpu(&self) -> Option<&str> {
        gpu_name(&self.environment)
    }

    /// One measurement of the shapes of several every-route measurements of the same family's
    /// representative shards (`cake family choose` over measurements from several GPU calls).
    /// Held-out and boundary shards never choose routes, so they are refused. A shape measured
    /// again (the same seed's draw, timed later for routes added since) is one row: the routes
    /// timed there join it, and a route timed in both keeps its first timing. Measurements
    /// that name different GPUs are refused: cards of one target disagree on routes.
    pub fn merge(ms: Vec<Measurement>) -> Result<Measurement, String> {
        let mut it = ms.into_iter();
        let mut first = it.next().ok_or("no measurement to merge")?;
        for m in std::iter::once(&first).chain(it.as_slice()) {
            if m.shard != "representative" {
                return Err(format!(
                    "the {} shard (seed {}) judges a table and never chooses one: choose from representative shards only",
                    m.shard, m.seed
                ));
            }
        }
        for m in it {
            if m.family != first.family || m.mode != first.mode {
                return Err(format!(
                    "cannot merge a {:?} measurement of family `{}` into a {:?} one of `{}`",
                    m.mode, m.family, first.mode, first.family
                ));
            }
            // Cards of one target disagree on routes (docs/dispatch.md): times from two GPUs
            // are not one choice.
            if let (Some(a), Some(b)) = (first.gpu(), m.gpu()) {
                if a != b {
                    return Err(format!(
                        "cannot merge a measurement on {b} (seed {}) into one on {a} (seed {}): choose from one GPU's times",
                        m.seed, first.seed
                    ));
                }
            }
            for seed in std::iter::once(m.seed).chain(m.merged_seeds) {
                if seed != first.seed && !first.merged_seeds.contains(&seed) {
                    first.merged_seeds.push(seed);
                }
            }
            for row in m.shapes {
                match first.shapes.iter_mut().find(|r| r.shape == row.shape) {
                    Some(same) => {
                        for (route, outcome) in row.timed {
                            same.timed.entry(route).or_insert(outcome);
                        }
                    }
                    None => first.shapes.push(row),
                }
            }
            first.n = first.shapes.len();
        }
        Ok(first)
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShapeResult {
    pub shape: Shape,
    /// The route dispatch gives this shape, or `fallback`.
    pub route: String,
    /// Per callable timed here: a route's name, or `fallback`.
    pub timed: IndexMap<String, Outcome>,
}

impl ShapeResult {
    /// What dispatch measured here: the outcome of the route the shape takes.
    pub fn dispatched(&self) -> Option<&Outcome> {
        self.timed.get(&self.route)
    }

    /// The median of every baseline timing at this shape: an every-route measurement times the
    /// baseline beside each route, and those timings differ by more than the routes do at
    /// times (SDPA's samples 0-5 % apart at one shape, bench/results/2026-12-11-attention-dynamic/).
    pub fn pooled_baseline_ms(&self) -> Option<f64> {
        super::median(
            self.timed
                .values()
                .filter_map(|o| o.baseline_cupti_ms)
                .collect(),
        )
    }

    /// `o`'s speedup over [`ShapeResult::pooled_baseline_ms`] ([`Outcome::speedup_over`]).
    pub fn pooled_speedup(&self, o: &Outcome) -> Option<f64> {
        o.speedup_over(self.pooled_baseline_ms())
    }
}

impl Outcome {
    /// This speedup rescaled from the baseline timing beside it to `pooled_ms` (a shape's
    /// [`ShapeResult::pooled_baseline_ms`]), so that two routes' speedups compare as their own
    /// times do and any writeback charged in the speedup stays charged; the speedup as measured
    /// where either timing is missing.
    pub fn speedup_over(&self, pooled_ms: Option<f64>) -> Option<f64> {
        let own = self.speedup?;
        match (pooled_ms, self.baseline_cupti_ms) {
            (Some(pooled), Some(beside)) if beside > 0.0 => Some(own * pooled / beside),
            _ => Some(own),
        }
    }
}

/// One callable at one shape, against the baseline timed in turn with it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Outcome {
    /// Median CUPTI span of this callable's calls, and of the baseline's, in ms.
    pub cupti_ms: Option<f64>,
    pub baseline_cupti_ms: Option<f64>,
    /// Baseline ÷ this callable (CUPTI medians, each with its deferred writeback added); absent
    /// where either is missing or the time is not believable.
    pub speedup: Option<f64>,
    /// Writeback this callable, or the baseline, left for the flush after it beyond what the
    /// other left (ms; `evidence::deferred_writeback`), charged in `speedup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deferred_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_deferred_ms: Option<f64>,
    /// The outputs of the timed calls matched the oracle.
    pub correct: bool,
    /// Why there is no speedup, or why the outputs are wrong.
    pub problem: Option<String>,
    /// The fallback is the baseline's own function: the call is the baseline's, so its speedup
    /// is 1 by identity and it is not timed (timing it measures only the noise between two
    /// runs of one kernel).
    #[serde(default)]
    pub baseline_itself: bool,
    /// The waves this callable's grid took on the GPU, as the driver reckons the CTAs resident
    /// at once (the worker's `launch` facts; a Cake kernel's only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waves: Option<f64>,
}

impl Outcome {
    fn from_timing(st: &ShapeTiming, baseline: &str) -> Outcome {
        let mut problems: Vec<String> = st.suspicious.clone();
        if let Some(f) = &st.candidate.failure {
            problems.push(format!("timing failed: {f}"));
        }
        if let Some(w) = &st.outputs_wrong {
            problems.push(format!("wrong outputs: {w}"));
        }
        let base = st.baselines.get(baseline);
        if let Some(f) = base.and_then(|b| b.failure.as_ref()) {
            problems.push(format!("the baseline failed: {f}"));
        }
        Outcome {
            cupti_ms: st.candidate.median("cupti_ms"),
            baseline_cupti_ms: base.and_then(|b| b.median("cupti_ms")),
            speedup: st.speedup.get(baseline).and_then(|s| s.cupti),
            deferred_ms: st.deferred_ms.get("candidate").copied(),
            baseline_deferred_ms: st.deferred_ms.get(baseline).copied(),
            correct: st.candidate.result.is_some()
                && st.outputs_wrong.is_none()
                && st.candidate.failure.is_none(),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
            baseline_itself: false,
            waves: st
                .candidate
                .result
                .as_ref()
                .and_then(|r| r.get("launch")?.get("waves")?.as_f64()),
        }
    }

    fn failed(why: String) -> Outcome {
        Outcome {
            problem: Some(why),
            ..Outcome::default()
        }
    }
}

/// One `cake bench` run of a measurement: a callable over the shapes one build serves.
struct Job {
    /// `fallback` or the route's name.
    callable: String,
    contract: Contract,
    python: Option<String>,
    shapes: Vec<usize>,
}

/// The most shapes one run times: a measurement cut short (a time limit) loses at most this
/// many, the rest being in the partial measurement already written.
const JOB_SHAPES: usize = 12;

/// The runs a measurement makes: per route (and the fallback, in dispatch mode), one per build
/// (specialization) of the shapes it times, so one build that fails costs only its shapes, in
/// runs of at most [`JOB_SHAPES`] shapes.
fn plan(
    f: &Family,
    shapes: &[Shape],
    o: &MeasureOptions,
    baseline: &str,
    gpu: Option<&str>,
) -> Vec<Job> {
    let mode = o.mode;
    let mut jobs = Vec::new();
    for (i, r) in f.routes.iter().enumerate() {
        if !o.times(&r.name) {
            continue;
        }
        let contract = f.route_contract(i);
        let mut groups: IndexMap<Vec<(String, i64)>, Vec<usize>> = IndexMap::new();
        for (k, s) in shapes.iter().enumerate() {
            let takes = match mode {
                Mode::Dispatch => f.route_of(s, gpu) == Some(i),
                Mode::EveryRoute => r.admits(s),
            };
            if takes {
                let spec = contract.specialization(s).into_iter().collect();
                groups.entry(spec).or_default().push(k);
            }
        }
        for (_, ks) in groups {
            for chunk in ks.chunks(JOB_SHAPES) {
                jobs.push(Job {
                    callable: r.name.clone(),
                    contract: contract.clone(),
                    python: None,
                    shapes: chunk.to_vec(),
                });
            }
        }
    }
    if mode == Mode::Dispatch && !fallback_is_baseline(f, baseline) {
        let ks: Vec<usize> = (0..shapes.len())
            .filter(|k| f.route_of(&shapes[*k], gpu).is_none())
            .collect();
        for chunk in ks.chunks(JOB_SHAPES) {
            jobs.push(Job {
                callable: "fallback".into(),
                contract: f.contract.clone(),
                python: Some(f.fallback.clone()),
                shapes: chunk.to_vec(),
            });
        }
    }
    jobs
}

/// Whether the family's fallback is the baseline's function (`/abs/file.py:fn`, resolved alike).
fn fallback_is_baseline(f: &Family, baseline: &str) -> bool {
    let resolved = |r: &str| {
        let (file, func) = r.rsplit_once(':')?;
        Some((std::fs::canonicalize(file).ok()?, func.to_string()))
    };
    match f.contract.baselines.get(baseline) {
        Some(b) => resolved(b).is_some() && resolved(b) == resolved(&f.fallback),
        None => false,
    }
}

fn job_contract(job: &Job, shapes: &[Shape], o: &MeasureOptions) -> Contract {
    let mut c = job.contract.clone();
    c.shapes = IndexMap::from([(
        "bench".to_string(),
        job.shapes.iter().map(|k| shapes[*k].clone()).collect(),
    )]);
    if let Some(w) = o.warmup {
        c.bench.warmup = w;
    }
    if let Some(s) = o.samples {
        c.bench.samples = s;
    }
    c
}

fn job_options(job: &Job, o: &MeasureOptions, baseline: &str) -> Options {
    Options {
        target: o.target.clone(),
        seed: Some(o.seed),
        baseline: Some(baseline.to_string()),
        python_candidate: job.python.clone(),
        ..Options::default()
    }
}

/// A usage error where `--route` names a route the family lacks, or is given outside
/// every-route mode (dispatch without some routes would time another table than the file's).
fn check_routes(f: &Family, o: &MeasureOptions) -> Result<(), RunError> {
    if o.routes.is_empty() {
        return Ok(());
    }
    if o.mode != Mode::EveryRoute {
        return Err(RunError::Usage(
            "timing only some routes needs every-route mode: dispatch times the table as the file has it".into(),
        ));
    }
    match o
        .routes
        .iter()
        .find(|n| !f.routes.iter().any(|r| &r.name == *n))
    {
        Some(n) => Err(RunError::Usage(format!(
            "the family has no route `{n}`; it has {}",
            f.routes
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => Ok(()),
    }
}

/// The baseline a measurement times against: the one asked for, else the contract's first.
fn baseline_of(f: &Family, o: &MeasureOptions) -> Result<String, RunError> {
    match &o.baseline {
        Some(b) if f.contract.baselines.contains_key(b) => Ok(b.clone()),
        Some(b) => Err(RunError::Usage(format!(
            "the contract has no baseline `{b}`; it has {}",
            f.contract
                .baselines
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))),
        None => f.contract.baselines.keys().next().cloned().ok_or_else(|| {
            RunError::Usage("the family's contract has no [baselines] to time against".into())
        }),
    }
}

/// The shapes of the shard, each with the route dispatch gives it on the GPU named `gpu`.
pub fn shapes_of(f: &Family, o: &MeasureOptions, gpu: Option<&str>) -> Vec<(Shape, String)> {
    sample(&f.contract, o.shard, o.n, o.seed)
        .into_iter()
        .map(|s| {
            let r = f
                .route_of(&s, gpu)
                .map_or("fallback".to_string(), |i| f.routes[i].name.clone());
            (s, r)
        })
        .collect()
}

/// Build every schedule the measurement will run, for `target`, without a worker (into the
/// build cache the GPU host is then given). Returns (callable, specialization, why rejected).
pub fn prebuild(
    f: &Family,
    o: &MeasureOptions,
    target: &str,
    progress: Progress,
) -> Result<Vec<(String, Specialization, Option<String>)>, RunError> {
    let shapes: Vec<Shape> = shapes_of(f, o, None).into_iter().map(|(s, _)| s).collect();
    let mut out = Vec::new();
    check_routes(f, o)?;
    let baseline = baseline_of(f, o)?;
    // Dispatch on the card asked for, else on every GPU the family routes differently.
    let gpus: Vec<Option<&str>> = match &o.card {
        Some(card) => vec![Some(card.as_str())],
        None => f.gpu_views(),
    };
    // A route's job is one build (`plan` groups shapes by specialization), which several GPUs'
    // plans, or runs of one, can share: each build once.
    let mut built = std::collections::HashSet::new();
    for job in gpus
        .into_iter()
        .flat_map(|gpu| plan(f, &shapes, o, &baseline, gpu))
    {
        let spec = job.contract.specialization(&shapes[job.shapes[0]]);
        if job.python.is_some()
            || !built.insert((job.callable.clone(), run::specialization_text(&spec)))
        {
            continue;
        }
        let c = job_contract(&job, &shapes, o);
        for (spec, rejected) in run::prebuild(&c, &Options::default(), target)? {
            progress(&format!(
                "built {} {}{}",
                job.callable,
                run::specialization_text(&spec),
                rejected
                    .as_deref()
                    .map(|r| format!(": rejected: {r}"))
                    .unwrap_or_default()
            ));
            out.push((job.callable.clone(), spec, rejected));
        }
    }
    Ok(out)
}

/// Time the family over the shard (see the module docs). A run that cannot judge (the worker,
/// the contract or a usage mistake) stops the measurement; a route that fails to build, load,
/// run or match the oracle is recorded at its shapes and the measurement goes on. After each
/// run, `checkpoint` gets the measurement so far (shapes not yet timed have no outcomes), so a
/// caller can keep it if the process is stopped.
pub fn measure(
    f: &Family,
    o: &MeasureOptions,
    sup: &mut Supervisor,
    progress: Progress,
    checkpoint: &mut dyn FnMut(&Measurement),
) -> Result<Measurement, RunError> {
    check_routes(f, o)?;
    let baseline = baseline_of(f, o)?;
    if o.card.is_some() {
        return Err(RunError::Usage(
            "a measurement dispatches as on the worker's GPU; --card is for --prebuild".into(),
        ));
    }
    // Routes that name cards dispatch on the name of the GPU the worker runs on.
    let gpu = if f.cards().is_empty() {
        None
    } else {
        sup.ensure_running().map_err(RunError::Worker)?;
        sup.env.as_ref().and_then(gpu_name).map(str::to_string)
    };
    let drawn = shapes_of(f, o, gpu.as_deref());
    let shapes: Vec<Shape> = drawn.iter().map(|(s, _)| s.clone()).collect();
    let mut results: Vec<ShapeResult> = drawn
        .into_iter()
        .map(|(shape, route)| ShapeResult {
            shape,
            route,
            timed: IndexMap::new(),
        })
        .collect();
    if o.mode == Mode::Dispatch && fallback_is_baseline(f, &baseline) {
        for r in results.iter_mut().filter(|r| r.route == "fallback") {
            let identity = Outcome {
                speedup: Some(1.0),
                correct: true,
                baseline_itself: true,
                ..Outcome::default()
            };
            r.timed.insert("fallback".into(), identity);
        }
    }
    let mut environment = Value::Null;
    let jobs = plan(f, &shapes, o, &baseline, gpu.as_deref());
    for (j, job) in jobs.iter().enumerate() {
        progress(&format!(
            "[{}/{}] {} at {} shape(s)",
            j + 1,
            jobs.len(),
            job.callable,
            job.shapes.len()
        ));
        let c = job_contract(job, &shapes, o);
        let outcomes: Vec<Outcome> = match run::run(
            &c,
            RunMode::Bench,
            &job_options(job, o, &baseline),
            sup,
            progress,
        ) {
            Ok(ev) => {
                if environment.is_null() {
                    environment = ev.environment.clone();
                }
                match &ev.timing {
                    Some(t) => t
                        .shapes
                        .iter()
                        .map(|st| Outcome::from_timing(st, &baseline))
                        .collect(),
                    None => vec![Outcome::failed(ev.verdict.clone()); job.shapes.len()],
                }
            }
            // This route's schedule did not build: its shapes fail, the others still run.
            Err(RunError::Build(e)) => {
                vec![Outcome::failed(format!("did not build: {e}")); job.shapes.len()]
            }
            Err(e) => return Err(e),
        };
        for (k, outcome) in job.shapes.iter().zip(outcomes) {
            results[*k].timed.insert(job.callable.clone(), outcome);
        }
        if j + 1 < jobs.len() {
            checkpoint(&snapshot(f, o, &baseline, &environment, &results));
        }
    }
    Ok(snapshot(f, o, &baseline, &environment, &results))
}

fn snapshot(
    f: &Family,
    o: &MeasureOptions,
    baseline: &str,
    environment: &Value,
    results: &[ShapeResult],
) -> Measurement {
    Measurement {
        schema: SCHEMA.into(),
        family: f.name.clone(),
        contract: f.contract.name.clone(),
        shard: o.shard.name().into(),
        seed: o.seed,
        n: o.n,
        mode: o.mode,
        baseline: baseline.to_string(),
        created: crate::evidence::rfc3339(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        ),
        environment: environment.clone(),
        shapes: results.to_vec(),
        merged_seeds: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::{Speedup, Timed};
    use serde_json::json;

    #[test]
    fn an_outcome_keeps_the_waves_the_worker_reported() {
        let timing = |launch: Option<Value>| {
            let mut result = json!({"events_ms": {"median": 0.02}, "cupti_ms": {"median": 0.015}});
            if let Some(l) = launch {
                result["launch"] = l;
            }
            ShapeTiming {
                shape: Shape::from([("M".to_string(), 8)]),
                floor: None,
                candidate: Timed {
                    result: Some(result),
                    failure: None,
                },
                baselines: IndexMap::new(),
                speedup: IndexMap::from([(
                    "torch_matmul".to_string(),
                    Speedup {
                        events: Some(1.1),
                        cupti: Some(1.2),
                    },
                )]),
                suspicious: Vec::new(),
                interleaved: true,
                outputs_wrong: None,
                candidate_rate: None,
                predicted: None,
                deferred_ms: IndexMap::new(),
                timeline: None,
            }
        };
        let launch = json!({"grid": [128, 1, 1], "cluster": 4, "clusters_at_once": 30,
                            "resident_ctas": 120, "waves": 128.0 / 120.0});
        let o = Outcome::from_timing(&timing(Some(launch)), "torch_matmul");
        assert_eq!(o.waves, Some(128.0 / 120.0));
        assert_eq!(o.speedup, Some(1.2));
        let o = Outcome::from_timing(&timing(None), "torch_matmul");
        assert_eq!(o.waves, None);
        assert!(!serde_json::to_string(&o).unwrap().contains("waves"));
    }
}
