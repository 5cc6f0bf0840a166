//! One `cake test` / `cake bench` run: pick the target from the GPU the worker sees, build (or
//! take) the candidate (once per specialization, with `[specialize]`), check its interface
//! against the contract, run the correctness protocol over every check shape × distribution,
//! then (bench) time the candidate and the baselines on the bench shapes in the same worker, and
//! assemble the evidence record.

use crate::contract::{shape_text, Contract, Precision, Shape, ShapeEntry, Specialization};
use crate::evidence::{
    self, deferred_writeback, Budget, CandidateRecord, CheckRecord, ContractRecord, Correctness,
    Evidence, Floor, Predicted, Rate, ShapeTiming, SpecializationRecord, Speedup, Timed, Timing,
};
use crate::worker::{Failure, Supervisor};
use indexmap::IndexMap;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Test,
    Bench,
}

#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The candidate: a schedule (`.py`) or a prebuilt kernel's `.launch.json`; default: the
    /// contract's `kernel`.
    pub kernel: Option<PathBuf>,
    /// The exact target; default: the one matching the worker's GPU.
    pub target: Option<String>,
    /// Base seed of the run; default: fresh from the OS.
    pub seed: Option<u64>,
    /// `bench`: time only this baseline.
    pub baseline: Option<String>,
    /// Where schedules are built; default: a directory in the build cache. With `[specialize]`,
    /// each build in a folder of its own under it (`H4096`).
    pub build_dir: Option<PathBuf>,
    /// The shape set the correctness protocol runs on; default `check` (`held_out` keeps a
    /// tuning loop honest).
    pub shape_set: Option<String>,
    /// Build the schedule with its target's PTX embedded, so a kernel for an older, forward-
    /// compatible target (sm_80, sm_89) runs on a later GPU through the driver's JIT. Without
    /// it, a `target` other than the GPU's is refused before anything runs.
    pub embed_ptx: bool,
    /// The candidate is a Python function (`/abs/file.py:fn`, called like the baselines), not
    /// a schedule: a family's fallback is timed this way.
    pub python_candidate: Option<String>,
    /// `bench`: after timing each shape, launch a second build of the candidate with its
    /// timeline stamps compiled in once and record the summary (docs/timeline.md).
    pub timeline: bool,
}

/// What stops a run before there is a candidate to judge (exit 2).
#[derive(Debug)]
pub enum RunError {
    Usage(String),
    Worker(Failure),
    Build(cake_driver::BuildError),
}

/// What a GPU host needs for the worker to start, for front doors to print with a worker error.
pub const WORKER_HELP: &str = "the worker is `python3 -m cake.worker` (CAKE_PYTHON picks the \
    interpreter, CAKE_WORKER the whole command); it needs the cake package (scripts/wheel.sh builds \
    the wheel) and PyTorch with a CUDA device; see docs/gpu.md";

impl RunError {
    /// A hint for the user, where the error has one.
    pub fn help(&self) -> Option<&'static str> {
        matches!(self, RunError::Worker(_)).then_some(WORKER_HELP)
    }
}

/// Check the options against the contract before any worker starts, so a usage mistake costs
/// nothing: the bench set exists for `bench`, the shape set and baseline asked for exist, the
/// target is known, the candidate file is there.
pub fn check_options(c: &Contract, mode: Mode, opts: &Options) -> Result<(), RunError> {
    let usage = |m: String| Err(RunError::Usage(m));
    if mode == Mode::Bench && c.shape_set("bench").is_empty() {
        return usage(format!(
            "{}: the contract has no `bench` shapes to time",
            shown(&c.path)
        ));
    }
    if let Some(set) = &opts.shape_set {
        if !crate::contract::SHAPE_SETS.contains(&set.as_str()) {
            return usage(format!(
                "unknown shape set `{set}`; use {}",
                crate::contract::SHAPE_SETS.join(", ")
            ));
        }
        if c.shape_set(set).is_empty() {
            let sets: Vec<&str> = c.shapes.keys().map(String::as_str).collect();
            return usage(format!(
                "{}: the contract has no `{set}` shapes (its sets: {})",
                shown(&c.path),
                sets.join(", ")
            ));
        }
    }
    if let Some(b) = &opts.baseline {
        if !c.baselines.contains_key(b) {
            let known: Vec<&str> = c.baselines.keys().map(String::as_str).collect();
            return usage(format!(
                "the contract has no baseline `{b}`; it has {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    if let Some(t) = &opts.target {
        if let Err(e) = cake_target::lookup(t) {
            let hint = e
                .suggestion()
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return usage(format!("{e}{hint}"));
        }
    }
    if let Some(k) = &opts.kernel {
        if !k.exists() {
            let cwd = std::env::current_dir().map_or("?".into(), |d| d.display().to_string());
            return usage(format!(
                "the candidate {} does not exist (relative paths are resolved against {cwd})",
                k.display()
            ));
        }
    }
    check_specialize(c, opts)
}

/// The candidate's file: `--kernel`, else the contract's `kernel`.
fn candidate_path(c: &Contract, opts: &Options) -> PathBuf {
    opts.kernel.clone().unwrap_or_else(|| c.kernel.clone())
}

fn is_prebuilt(path: &Path) -> bool {
    path.to_string_lossy().ends_with(".launch.json")
}

/// `[specialize]` needs a schedule that has every constant it sets.
fn check_specialize(c: &Contract, opts: &Options) -> Result<(), RunError> {
    if (c.specialize.is_empty() && c.constants.is_empty()) || opts.python_candidate.is_some() {
        return Ok(());
    }
    let path = candidate_path(c, opts);
    let keys: Vec<&str> = c
        .specialize
        .keys()
        .chain(c.constants.keys())
        .map(String::as_str)
        .collect();
    if is_prebuilt(&path) {
        return Err(RunError::Usage(format!(
            "{}: a prebuilt kernel cannot be rebuilt per shape, but the contract's [specialize] \
             sets {} from each shape; pass the schedule (.py) instead",
            path.display(),
            keys.join(", ")
        )));
    }
    // An unreadable schedule is reported where it is built.
    let Ok(bytes) = cake_driver::read_schedule(&path) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(&bytes);
    let constants = cake_mutate::knobs::constants(&text);
    if let Err(m) = cake_mutate::knobs::set(&text, &constants, keys.iter().map(|k| (*k, 0))) {
        return Err(RunError::Usage(format!(
            "the contract's [specialize] sets `{key}`, but {} has no module-level integer \
             constant `{key}` (`{key} = <integer>`); its constants are {}",
            path.display(),
            m.available_text(),
            key = m.name,
        )));
    }
    Ok(())
}

/// `H=4096,W=8`: a specialization as records and progress lines show it.
pub fn specialization_text(spec: &Specialization) -> String {
    spec.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The name a specialization's kernel is loaded under in the worker: `candidate[H=4096]`, or
/// `candidate` when the contract specializes nothing.
pub fn callable_name(spec: &Specialization) -> String {
    if spec.is_empty() {
        "candidate".into()
    } else {
        format!("candidate[{}]", specialization_text(spec))
    }
}

/// The distinct specializations of the shapes a run uses (the correctness set, and in `bench`
/// the bench set), in order of first use; exactly one, empty, without `[specialize]`.
pub fn specializations(c: &Contract, mode: Mode, opts: &Options) -> Vec<Specialization> {
    let set = opts.shape_set.as_deref().unwrap_or("check");
    let bench: &[Shape] = if mode == Mode::Bench {
        c.shape_set("bench")
    } else {
        &[]
    };
    let mut out: Vec<Specialization> = Vec::new();
    for shape in c.shape_set(set).iter().chain(bench) {
        let spec = c.specialization(shape);
        if !out.contains(&spec) {
            out.push(spec);
        }
    }
    if out.is_empty() {
        out.push(Specialization::new());
    }
    out
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Usage(m) => f.write_str(m),
            RunError::Worker(w) => write!(f, "evaluation worker: {w}"),
            RunError::Build(b) => write!(f, "{b}"),
        }
    }
}

/// Live progress, one line per event, for the human rendering.
pub type Progress<'a> = &'a mut dyn FnMut(&str);

/// The exact target of a compute capability (from the target table).
pub fn target_for_cc(cc: (u32, u32)) -> Option<&'static str> {
    cake_target::TARGETS
        .iter()
        .find(|t| t.cc == cc)
        .map(|t| t.name)
}

fn sha256_hex(parts: &[&[u8]]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for p in parts {
        h.update((p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// A candidate ready to load, or the reason it cannot be (a failed verdict, not a tool error).
struct Prepared {
    record: CandidateRecord,
    launch_json: PathBuf,
    findings: Value,
    resources: Value,
    rejected: Option<String>,
    /// The schedule's IR, for the cost model (absent for prebuilt kernels).
    kernel: Option<cake_ir::Kernel>,
}

/// The cost model's estimate at every bench shape, with the target's committed calibration
/// measured on the worker's GPU (`gpu`; the target's default table where none was): the
/// evidence record's `cost_estimate`, and per shape what the timing compares against. Bench
/// shape `i` is estimated with `kernels[of_shape[i]]` (its specialization's schedule, or why
/// there is none). A target without calibration gives `{"error": "CAKE-V003 ..."}`.
fn cost_estimates(
    c: &Contract,
    kernels: &[Result<&cake_ir::Kernel, String>],
    of_shape: &[usize],
    target: &str,
    gpu: Option<&str>,
) -> (Value, Vec<Option<cake_cost::Estimate>>) {
    let shapes = c.shape_set("bench");
    let Ok(t) = cake_target::lookup(target) else {
        return (
            json!({"error": format!("unknown target {target}")}),
            vec![None; shapes.len()],
        );
    };
    let cal = match cake_cost::Calibration::builtin_for_device(t, gpu) {
        Ok(cal) => cal,
        Err(e) => return (json!({"error": e.to_string()}), vec![None; shapes.len()]),
    };
    let mut out = Vec::new();
    let mut docs = Vec::new();
    // The facts do not depend on the shape: derive them once per kernel.
    let with_facts: Vec<Result<(&cake_ir::Kernel, cake_ir::KernelFacts), &String>> = kernels
        .iter()
        .map(|k| k.as_ref().map(|k| (*k, cake_ir::KernelFacts::new(k, t))))
        .collect();
    for (shape, &k) in shapes.iter().zip(of_shape) {
        let (kernel, facts) = match &with_facts[k] {
            Ok((kernel, facts)) => (*kernel, facts),
            Err(why) => {
                docs.push(json!({"shape": shape, "error": why}));
                out.push(None);
                continue;
            }
        };
        // A dimension that only sets a specialized constant is not one of the kernel's.
        let s: std::collections::BTreeMap<String, i64> = shape
            .iter()
            .filter(|(d, _)| {
                !c.specialize.values().any(|v| v == *d)
                    || kernel.dims.iter().any(|(_, kd)| &kd.name == *d)
            })
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        match cake_cost::estimate_with(kernel, facts, &s, &cal) {
            Ok(e) => {
                docs.push(serde_json::to_value(&e).unwrap_or_default());
                out.push(Some(e));
            }
            Err(e) => {
                docs.push(json!({"shape": shape, "error": e.to_string()}));
                out.push(None);
            }
        }
    }
    (json!({"schema": "cake.cost/v0", "estimates": docs}), out)
}

fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.001))
}

/// Fresh, OS-seeded randomness without a dependency: std's hasher keys are random per process.
fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() >> 11 // JSON numbers stay exact below 2^53
}

/// The seed of check `i` of a run (splitmix64 of the base), below 2^53 so JSON keeps it exact.
pub fn check_seed(base: u64, i: u64) -> u64 {
    let mut z = base.wrapping_add(0x9E37_79B9_7F4A_7C15u64.wrapping_mul(i + 1));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (z ^ (z >> 31)) >> 11
}

/// A path as records show it: resolved, and relative to the working directory when inside it,
/// so records from different machines compare.
fn shown(p: &Path) -> String {
    let abs = std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| d.canonicalize().ok());
    cwd.and_then(|d| abs.strip_prefix(d).ok().map(Path::to_path_buf))
        .unwrap_or(abs)
        .display()
        .to_string()
}

/// Differences between one tensor's extents in the contract and in the kernel, of equal rank. A
/// dimension that sets a specialized constant matches the kernel's fixed extent when that
/// extent is its value in `spec`.
fn extent_mismatches(
    c: &Contract,
    spec: &Specialization,
    tensor: &str,
    contract: &[ShapeEntry],
    kernel: &[Value],
) -> Vec<String> {
    let mut out = Vec::new();
    let mut differs = false;
    // A dimension the kernel fixes but the contract does not specialize.
    let mut hint: Option<(&str, i64)> = None;
    for (i, (e, k)) in contract.iter().zip(kernel).enumerate() {
        match (e, k.as_i64()) {
            (ShapeEntry::Fixed(n), Some(m)) if *n == m => {}
            (ShapeEntry::Dim(d), None) if k.as_str() == Some(d.as_str()) => {}
            (ShapeEntry::Dim(d), Some(m)) => match c.specialized_dim(spec, d) {
                Some(v) if v == m => {}
                Some(v) => out.push(format!(
                    "`{tensor}`: extent {i} is `{d}` = {v} in this specialization ({}), but the \
                     kernel's is fixed at {m}; write the extent with the specialized constant",
                    specialization_text(spec)
                )),
                None => {
                    differs = true;
                    hint.get_or_insert((d.as_str(), m));
                }
            },
            _ => differs = true,
        }
    }
    if differs {
        let shape: Vec<Value> = contract
            .iter()
            .map(|e| match e {
                ShapeEntry::Fixed(n) => json!(n),
                ShapeEntry::Dim(d) => json!(d),
            })
            .collect();
        let mut m = format!(
            "`{tensor}`: the contract's shape is {}, the kernel's {}",
            Value::from(shape),
            Value::from(kernel.to_vec())
        );
        if let Some((d, n)) = hint {
            m += &format!(
                " (the kernel fixes `{d}` at {n}: to build it per value of `{d}`, set its \
                 constant from `{d}` in the contract's [specialize])"
            );
        }
        out.insert(0, m);
    }
    out
}

/// Differences between the contract's tensors and scalars and the kernel's parameters; `spec`
/// gives the values of the specialized constants the kernel was built with (empty: none).
pub fn interface_mismatches(
    c: &Contract,
    meta: &cake_lower::LaunchMeta,
    spec: &Specialization,
) -> Vec<String> {
    let mut out = Vec::new();
    for t in &c.tensors {
        let Some(k) = meta.tensors.iter().find(|k| k.name == t.name) else {
            out.push(format!("the kernel has no tensor `{}`", t.name));
            continue;
        };
        if !crate::contract::dtype_matches(&t.dtype, &k.dtype) {
            out.push(format!(
                "`{}`: the contract says {}, the kernel takes {}",
                t.name, t.dtype, k.dtype
            ));
        }
        let dims: Vec<Value> = t
            .shape
            .iter()
            .map(|e| match e {
                ShapeEntry::Fixed(n) => json!(n),
                ShapeEntry::Dim(d) => json!(d),
            })
            .collect();
        if k.dims.len() != dims.len() {
            out.push(format!(
                "`{}`: the contract's shape is {}, the kernel's {}",
                t.name,
                Value::from(dims),
                Value::from(k.dims.clone())
            ));
        } else {
            out.extend(extent_mismatches(c, spec, &t.name, &t.shape, &k.dims));
        }
        let writes = k.access != "read";
        if t.role.is_output() != writes {
            out.push(format!(
                "`{}`: the contract's role is {:?}, the kernel's access is {}",
                t.name, t.role, k.access
            ));
        }
    }
    for k in &meta.tensors {
        // A timeline build's stamp buffer is the harness's to give, not the contract's.
        if c.tensor(&k.name).is_none() && k.name != cake_lower::TIMELINE_TENSOR {
            out.push(format!(
                "the kernel's tensor `{}` is not in the contract",
                k.name
            ));
        }
    }
    for s in &meta.scalars {
        match c.scalars.iter().find(|cs| cs.name == s.name) {
            None => out.push(format!(
                "the kernel's scalar `{}` has no value in the contract",
                s.name
            )),
            Some(cs) if cs.dtype != s.dtype => out.push(format!(
                "scalar `{}`: the contract says {}, the kernel takes {}",
                s.name, cs.dtype, s.dtype
            )),
            Some(_) => {}
        }
    }
    for cs in &c.scalars {
        if !meta.scalars.iter().any(|s| s.name == cs.name) {
            out.push(format!("the kernel has no scalar `{}`", cs.name));
        }
    }
    out
}

/// The schedule's source with every specialized constant set to its value (its other bytes as
/// they were, so findings keep their lines).
fn specialize(path: &Path, bytes: Vec<u8>, spec: &Specialization) -> Result<Vec<u8>, RunError> {
    if spec.is_empty() {
        return Ok(bytes);
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let constants = cake_mutate::knobs::constants(&text);
    let values = spec.iter().map(|(name, v)| (name.as_str(), *v));
    cake_mutate::knobs::set(&text, &constants, values)
        .map(String::into_bytes)
        .map_err(|m| {
            RunError::Usage(format!(
                "{} has no module-level integer constant `{}` for the contract's [specialize]",
                path.display(),
                m.name
            ))
        })
}

/// The IR of the contract's entry kernel specialized to `spec` (its constants and the
/// specialization set in the source), checked for `target`: what the cost model reads. Nothing
/// is lowered or compiled. Errors say why there is no kernel (the schedule's errors, a missing
/// entry).
pub fn schedule_ir(
    c: &Contract,
    spec: &Specialization,
    target: &str,
) -> Result<cake_ir::Kernel, String> {
    let bytes = cake_driver::read_schedule(&c.kernel)
        .map_err(|e| format!("cannot read {}: {e}", c.kernel.display()))?;
    let mut values = c.constants.clone();
    values.extend(spec.iter().map(|(k, v)| (k.clone(), *v)));
    let bytes = specialize(&c.kernel, bytes, &values).map_err(|e| e.to_string())?;
    let checked = cake_driver::check(&shown(&c.kernel), &bytes, Some(target));
    if let Some(f) = checked.findings.iter().find(|f| f.is_error()) {
        let n = checked.findings.iter().filter(|f| f.is_error()).count();
        return Err(format!(
            "the schedule has {n} error(s), the first {}: {}",
            f.code, f.message
        ));
    }
    checked
        .kernels
        .into_iter()
        .find(|k| k.name == c.entry)
        .ok_or_else(|| format!("{}: no kernel `{}`", c.kernel.display(), c.entry))
}

/// Build (or take) the candidate for one specialization. `findings_at` is where the record keeps
/// this build's findings, for the rejection message.
fn prepare(
    c: &Contract,
    opts: &Options,
    target: &str,
    spec: &Specialization,
    findings_at: &str,
) -> Result<Prepared, RunError> {
    prepare_build(c, opts, target, spec, findings_at, false)
}

/// `prepare`, with the timeline stamps compiled in when `timeline` (another build: its own
/// hash and folder; a prebuilt kernel cannot be rebuilt so).
fn prepare_build(
    c: &Contract,
    opts: &Options,
    target: &str,
    spec: &Specialization,
    findings_at: &str,
    timeline: bool,
) -> Result<Prepared, RunError> {
    let path = candidate_path(c, opts);
    let read = |p: &Path| {
        std::fs::read(p).map_err(|e| RunError::Usage(format!("cannot read {}: {e}", p.display())))
    };
    if is_prebuilt(&path) && timeline {
        return Err(RunError::Usage(format!(
            "{} is a prebuilt kernel: its timeline needs the schedule (or a build with `cake build --timeline`)",
            path.display()
        )));
    }
    if is_prebuilt(&path) {
        let text = read(&path)?;
        let meta: cake_lower::LaunchMeta = serde_json::from_slice(&text).map_err(|e| {
            RunError::Usage(format!("{} is not launch metadata: {e}", path.display()))
        })?;
        let cubin = path.parent().unwrap_or(Path::new(".")).join(&meta.cubin);
        let cubin_bytes = read(&cubin)?;
        let mut rejected = None;
        if meta.target != target {
            rejected = Some(format!(
                "the prebuilt kernel is for {}, the GPU is {target}",
                meta.target
            ));
        }
        let mismatches = interface_mismatches(c, &meta, spec);
        if !mismatches.is_empty() {
            rejected = Some(format!("interface: {}", mismatches.join("; ")));
        }
        return Ok(Prepared {
            record: CandidateRecord {
                hash: sha256_hex(&[&cubin_bytes, &text]),
                origin: "prebuilt".into(),
                path: shown(&path),
                source: None,
                entry: meta.kernel.clone(),
                target: meta.target.clone(),
                launch: serde_json::to_value(&meta).unwrap_or_default(),
            },
            launch_json: std::fs::canonicalize(&path).unwrap_or(path),
            findings: json!(null),
            resources: json!(null),
            rejected,
            kernel: None,
        });
    }
    // A schedule: the front doors' rule (a regular file of at most 4 MiB).
    let bytes = cake_driver::read_schedule(&path)
        .map_err(|e| RunError::Usage(format!("cannot read {}: {e}", path.display())))?;
    let mut values = c.constants.clone();
    values.extend(spec.iter().map(|(k, v)| (k.clone(), *v)));
    let bytes = specialize(&path, bytes, &values)?;
    // A build with the PTX embedded is another image: another candidate hash.
    let image: &[u8] = if opts.embed_ptx { b"+ptx" } else { b"" };
    let stamps: &[u8] = if timeline { b"+timeline" } else { b"" };
    let hash = sha256_hex(&[
        &bytes,
        target.as_bytes(),
        image,
        stamps,
        env!("CARGO_PKG_VERSION").as_bytes(),
    ]);
    let record = |launch: Value| CandidateRecord {
        hash: hash.clone(),
        origin: "schedule".into(),
        path: shown(&path),
        source: Some(String::from_utf8_lossy(&bytes).into_owned()),
        entry: c.entry.clone(),
        target: target.to_string(),
        launch,
    };
    let dir = match &opts.build_dir {
        // Each specialization in a folder of its own: its files have the same names.
        Some(d) if !spec.is_empty() => d.join(
            spec.iter()
                .map(|(k, v)| format!("{k}{v}"))
                .collect::<Vec<_>>()
                .join("-"),
        ),
        Some(d) => d.clone(),
        None => cake_toolchain::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("eval")
            .join(&hash[..16]),
    };
    let dir = if timeline && opts.build_dir.is_some() {
        dir.join("timeline")
    } else {
        dir
    };
    let name = shown(&path);
    let build = cake_driver::BuildOptions {
        embed_ptx: opts.embed_ptx,
        timeline,
    };
    let built = match cake_driver::build_opts(&name, &bytes, target, &dir, &build) {
        Ok(b) => b,
        Err(cake_driver::BuildError::Findings(checked)) => {
            let n = checked.findings.iter().filter(|f| f.is_error()).count();
            return Ok(Prepared {
                record: record(json!(null)),
                launch_json: PathBuf::new(),
                findings: cake_diag::render::json(&checked.file, &checked.findings),
                resources: json!(null),
                rejected: Some(format!(
                    "the schedule has {n} error(s); see `{findings_at}`"
                )),
                kernel: None,
            });
        }
        // One value of a family that Cake cannot compile fails its shapes, not the whole run.
        Err(e @ cake_driver::BuildError::Codegen { .. }) if !spec.is_empty() => {
            return Ok(Prepared {
                record: record(json!(null)),
                launch_json: PathBuf::new(),
                findings: json!(null),
                resources: json!(null),
                rejected: Some(e.to_string()),
                kernel: None,
            });
        }
        Err(e) => return Err(RunError::Build(e)),
    };
    let findings = cake_diag::render::json(&built.checked.file, &built.findings);
    let Some(k) = built.kernels.iter().find(|k| k.name == c.entry) else {
        let names: Vec<&str> = built.kernels.iter().map(|k| k.name.as_str()).collect();
        return Err(RunError::Usage(format!(
            "{}: no kernel `{}` (the contract's entry); the schedule has {}",
            path.display(),
            c.entry,
            names.join(", ")
        )));
    };
    let mut rejected = None;
    if built.has_errors() {
        rejected = Some(format!("the build reported errors; see `{findings_at}`"));
    }
    let mismatches = interface_mismatches(c, &k.launch, spec);
    if !mismatches.is_empty() {
        rejected = Some(format!("interface: {}", mismatches.join("; ")));
    }
    Ok(Prepared {
        record: record(serde_json::to_value(&k.launch).unwrap_or_default()),
        launch_json: std::fs::canonicalize(&k.launch_json).unwrap_or(k.launch_json.clone()),
        findings,
        resources: serde_json::to_value(&k.resources).unwrap_or_default(),
        rejected,
        kernel: built
            .checked
            .kernels
            .iter()
            .find(|k| k.name == c.entry)
            .cloned(),
    })
}

/// The worker's answer without the protocol fields.
fn strip(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove("id");
        o.remove("ok");
    }
    v
}

/// The contract's floor at `shape`: its FLOPs and bytes at the datasheet ceilings of the
/// worker's GPU (`gpu`, the driver's name) where Cake knows that card's, else the target's.
fn floor(c: &Contract, shape: &Shape, target: &str, gpu: Option<&str>) -> Option<Floor> {
    let lookup = |n: &str| shape.get(n).map(|v| *v as f64);
    let flops = c.bench.flops.as_ref().and_then(|e| e.eval(&lookup));
    let bytes = c.bench.bytes.as_ref().and_then(|e| e.eval(&lookup));
    let peak = cake_target::peak_for(target, gpu);
    let peak_tflops = peak.and_then(|p| match c.bench.precision {
        Precision::Bits16 => Some(p.tflops_16bit),
        Precision::Fp8 => p.tflops_fp8,
    });
    // The datasheet peak, not the measured copy rate: a read-heavy kernel can beat a copy, and
    // the floor must hold for every correct kernel. Without a table entry there is no memory
    // floor (the measured rate is reported in `environment`).
    let bandwidth_gbps = peak.map(|p| p.dram_gbps);
    let compute_ms = flops.zip(peak_tflops).map(|(f, p)| f / (p * 1e12) * 1e3);
    let memory_ms = bytes.zip(bandwidth_gbps).map(|(b, g)| b / (g * 1e9) * 1e3);
    let ms = match (compute_ms, memory_ms) {
        (None, None) => return None,
        (a, b) => a.unwrap_or(0.0).max(b.unwrap_or(0.0)),
    };
    Some(Floor {
        flops,
        bytes,
        peak_tflops,
        bandwidth_gbps,
        ms,
    })
}

/// The cost model's prediction against the measured medians: the record's `predicted`, and a
/// reason for each median below the model's speed of light (less [`FLOOR_ALLOWANCE`]). The
/// speed of light comes from the schedule's own FLOPs and bytes at the same datasheet ceilings
/// as the floor (cake_target::peak_for), so it flags what the contract's formula cannot see (a
/// kernel that skips work its schedule says it does); a median already below the contract's
/// floor (`floor_ms`) is reported there and not twice.
pub fn judge_prediction(
    e: &cake_cost::Estimate,
    events_ms: Option<f64>,
    cupti_ms: Option<f64>,
    floor_ms: Option<f64>,
) -> (Predicted, Vec<String>) {
    let sol_ms = e.speed_of_light_us * 1e-3;
    let mut suspicious = Vec::new();
    for (measure, m) in [("events", events_ms), ("cupti", cupti_ms)] {
        let Some(m) = m else { continue };
        let below_floor = floor_ms.is_some_and(|f| m < f * FLOOR_ALLOWANCE);
        if !below_floor && m < sol_ms * FLOOR_ALLOWANCE {
            suspicious.push(format!(
                "{measure} median {m:.4} ms is below the cost model's speed of light {sol_ms:.4} ms for this schedule"
            ));
        }
    }
    let predicted = Predicted {
        time_ms: e.time_us * 1e-3,
        speed_of_light_ms: sol_ms,
        bound: e.bound.as_str().to_string(),
        measured_over_predicted: events_ms.map(|m| m / (e.time_us * 1e-3)),
        span_ms: e.span_us * 1e-3,
        span_bound: e.span_bound.as_str().to_string(),
        cupti_over_predicted_span: cupti_ms.map(|m| m / (e.span_us * 1e-3)),
    };
    (predicted, suspicious)
}

/// A time this far under the floor is flagged; the allowance absorbs timer granularity and the
/// rounding of the datasheet ceilings.
pub const FLOOR_ALLOWANCE: f64 = 0.95;

/// What a run has concluded so far: the first reason the candidate failed, or the first fault
/// of the contract or harness (which makes the verdict `error`, not `failed`).
#[derive(Default)]
struct Verdict {
    failed: Option<String>,
    error: Option<String>,
}

impl Verdict {
    fn fail(&mut self, reason: impl FnOnce() -> String) {
        if self.failed.is_none() {
            self.failed = Some(reason());
        }
    }

    fn is_clean(&self) -> bool {
        self.failed.is_none() && self.error.is_none()
    }

    fn render(self) -> String {
        match (self.error, self.failed) {
            (Some(e), _) => format!("error: {e}"),
            (None, None) => "passed".into(),
            (None, Some(r)) => format!("failed: {r}"),
        }
    }
}

/// The exact target to run on: the one asked for, else the one whose compute capability the
/// worker's GPU reports; it must be one the contract covers.
fn resolve_target(c: &Contract, opts: &Options, env: &Value) -> Result<String, RunError> {
    let cc = env["cc"]
        .as_array()
        .and_then(|a| Some((a.first()?.as_u64()? as u32, a.get(1)?.as_u64()? as u32)));
    let target = match &opts.target {
        Some(t) => {
            // An older target on a newer GPU runs only through its PTX, and only when asked.
            if let (Some(cc), Ok(tt)) = (cc, cake_target::lookup(t)) {
                if !tt.runs_on(cc, opts.embed_ptx) {
                    let gpu = target_for_cc(cc).unwrap_or("a GPU Cake has no target for");
                    let why = if tt.ptx_forward_compatible() && cc > tt.cc {
                        "; pass --embed-ptx to run its PTX there through the driver's JIT"
                    } else {
                        ""
                    };
                    return Err(RunError::Usage(format!(
                        "a kernel for {t} does not run on the worker's GPU ({gpu}, compute capability {}.{}){why}",
                        cc.0, cc.1
                    )));
                }
            }
            t.clone()
        }
        None => {
            let Some(cc) = cc else {
                return Err(RunError::Usage(
                    "the worker reported no compute capability; pass --target".into(),
                ));
            };
            target_for_cc(cc)
                .ok_or_else(|| {
                    RunError::Usage(format!(
                        "no Cake target has compute capability {}.{}",
                        cc.0, cc.1
                    ))
                })?
                .to_string()
        }
    };
    if !c.targets.contains(&target) {
        return Err(RunError::Usage(format!(
            "the contract covers {}, not {target}",
            c.targets.join(", ")
        )));
    }
    Ok(target)
}

/// Run the contract's protocol on one candidate and return the evidence.
pub fn run(
    c: &Contract,
    mode: Mode,
    opts: &Options,
    sup: &mut Supervisor,
    progress: Progress,
) -> Result<Evidence, RunError> {
    check_options(c, mode, opts)?;
    let started = Instant::now();
    let mut requests = 0u32;
    sup.ensure_running().map_err(RunError::Worker)?;
    let env = sup.env.clone().unwrap_or(Value::Null);
    let target = resolve_target(c, opts, &env)?;
    progress(&format!(
        "contract {} · target {target} · GPU {}",
        c.name,
        env["gpu"].as_str().unwrap_or("unknown")
    ));
    // The GPU's own target: the physical floor of a kernel run through PTX JIT is that GPU's.
    let device_target = env["cc"]
        .as_array()
        .and_then(|a| Some((a.first()?.as_u64()? as u32, a.get(1)?.as_u64()? as u32)))
        .and_then(target_for_cc)
        .unwrap_or(target.as_str())
        .to_string();
    let seed = opts.seed.unwrap_or_else(fresh_seed);
    let mut verdict = Verdict::default();
    // One build per specialization the run's shapes need, each loaded under its own name. One
    // that is rejected or fails to load fails the shapes that need it; the others still run.
    let mut candidates: Vec<Candidate> = Vec::new();
    if let Some(func) = &opts.python_candidate {
        requests += 1;
        let load = json!({"op": "load", "name": "candidate", "python": func});
        let dead = sup
            .load(load)
            .err()
            .map(|f| format!("the candidate did not load: {f}"));
        if let Some(why) = &dead {
            verdict.fail(|| why.clone());
        }
        progress(&format!("candidate {func} (python)"));
        candidates.push(Candidate {
            spec: Specialization::new(),
            callable: "candidate".into(),
            prepared: Prepared {
                record: CandidateRecord {
                    hash: sha256_hex(&[func.as_bytes()]),
                    origin: "python".into(),
                    path: func.clone(),
                    source: None,
                    entry: func.clone(),
                    target: target.clone(),
                    launch: Value::Null,
                },
                launch_json: PathBuf::new(),
                findings: Value::Null,
                resources: Value::Null,
                rejected: None,
                kernel: None,
            },
            dead,
        });
    }
    let specs = if opts.python_candidate.is_some() {
        Vec::new()
    } else {
        specializations(c, mode, opts)
    };
    for (i, spec) in specs.into_iter().enumerate() {
        let findings_at = if i == 0 {
            "findings".to_string()
        } else {
            format!("specializations[{i}].findings")
        };
        let p = prepare(c, opts, &target, &spec, &findings_at)?;
        let label = |why: &str| {
            if spec.is_empty() {
                why.to_string()
            } else {
                format!("{}: {why}", specialization_text(&spec))
            }
        };
        progress(&format!(
            "candidate {} ({}, sha256 {}){}",
            p.record.path,
            p.record.origin,
            &p.record.hash[..12],
            if spec.is_empty() {
                String::new()
            } else {
                format!(" {}", specialization_text(&spec))
            }
        ));
        let callable = callable_name(&spec);
        // Once a specialization is rejected, fails to load, hangs, crashes or poisons the
        // context, its remaining checks are skipped.
        let mut dead = p.rejected.as_deref().map(|r| label(&first_line(&r)));
        if let Some(why) = &dead {
            verdict.fail(|| why.clone());
        } else {
            let load = json!({"op": "load", "name": callable, "launch": p.launch_json});
            requests += 1;
            if let Err(f) = sup.load(load) {
                let why = label(&format!("the candidate did not load: {f}"));
                verdict.fail(|| why.clone());
                dead = Some(why);
            }
        }
        candidates.push(Candidate {
            spec,
            callable,
            prepared: p,
            dead,
        });
    }
    // Which candidate each shape runs with.
    let of_shape = |shape: &Shape| {
        let spec = c.specialization(shape);
        candidates
            .iter()
            .position(|k| k.spec == spec)
            .unwrap_or_default()
    };
    let shape_set = opts.shape_set.clone().unwrap_or_else(|| "check".into());
    let check_of: Vec<usize> = c.shape_set(&shape_set).iter().map(of_shape).collect();
    let bench_of: Vec<usize> = c.shape_set("bench").iter().map(of_shape).collect();
    let problem = c.problem();
    let mut correctness = Correctness {
        passed: false,
        shape_set: shape_set.clone(),
        seed,
        runs_per_check: c.check.runs,
        checks: Vec::new(),
    };
    // Set when the contract or the harness fails: nothing after it can be judged.
    let mut stopped: Option<String> = None;
    let mut index = 0u64;
    for (shape, &k) in c.shape_set(&shape_set).iter().zip(&check_of) {
        for dist in &c.distributions {
            let check = Check {
                shape,
                distribution: dist,
                seed: check_seed(seed, index),
            };
            index += 1;
            let cand = &mut candidates[k];
            let rec = match stopped.as_ref().or(cand.dead.as_ref()) {
                Some(why) => check.skipped(why),
                None => {
                    requests += 1;
                    check.run(
                        c,
                        &problem,
                        sup,
                        &cand.callable,
                        &mut verdict,
                        &mut stopped,
                        &mut cand.dead,
                    )
                }
            };
            progress(&format!(
                "check {:<28} {:<13} {}",
                shape_text(shape),
                dist,
                if rec.passed {
                    "pass".to_string()
                } else if let Some(s) = &rec.skipped {
                    format!("skipped ({s})")
                } else {
                    format!("FAIL: {}", first_line(&check_reason(&rec)))
                }
            ));
            correctness.checks.push(rec);
        }
    }
    correctness.passed = verdict.is_clean() && correctness.checks.iter().all(|r| r.passed);

    // The cost model's estimate of each bench shape, from the schedule of its specialization.
    let (cost_estimate, predictions) = if candidates[0].prepared.record.origin != "schedule" {
        (None, Vec::new())
    } else {
        let kernels: Vec<Result<&cake_ir::Kernel, String>> = candidates
            .iter()
            .map(|k| {
                k.prepared.kernel.as_ref().ok_or_else(|| {
                    k.dead
                        .clone()
                        .unwrap_or_else(|| "the schedule was not built".into())
                })
            })
            .collect();
        let (doc, est) = cost_estimates(c, &kernels, &bench_of, &target, env["gpu"].as_str());
        (Some(doc), est)
    };
    let callables: Vec<&str> = bench_of
        .iter()
        .map(|&k| candidates[k].callable.as_str())
        .collect();
    // With `timeline`, each specialization the bench shapes use gets a second build with its
    // stamps compiled in, loaded beside the first: its name in the worker, or why there is none.
    let mut stamped: std::collections::BTreeMap<usize, Result<String, String>> =
        std::collections::BTreeMap::new();
    if mode == Mode::Bench && correctness.passed && opts.timeline {
        for &k in &bench_of {
            if stamped.contains_key(&k) {
                continue;
            }
            let cand = &candidates[k];
            let name = format!("{}~timeline", cand.callable);
            let got = match prepare_build(c, opts, &target, &cand.spec, "timeline", true) {
                Err(e) => Err(e.to_string()),
                Ok(p) => match p.rejected {
                    Some(why) => Err(why),
                    None => {
                        requests += 1;
                        sup.load(json!({"op": "load", "name": name, "launch": p.launch_json}))
                            .map(|_| name)
                            .map_err(|f| format!("the timeline build did not load: {f}"))
                    }
                },
            };
            if let Err(why) = &got {
                progress(&format!("timeline {}: {why}", cand.callable));
            }
            stamped.insert(k, got);
        }
    }
    let timelines: Vec<Option<Result<&str, &str>>> = bench_of
        .iter()
        .map(|k| {
            stamped
                .get(k)
                .map(|r| r.as_ref().map(String::as_str).map_err(String::as_str))
        })
        .collect();
    let timing = (mode == Mode::Bench && correctness.passed).then(|| {
        bench(
            c,
            opts,
            sup,
            &device_target,
            &problem,
            seed,
            &mut requests,
            progress,
            &predictions,
            &callables,
            &timelines,
        )
    });
    if let Some(t) = &timing {
        judge_timing(t, &mut verdict);
    }
    let mut environment = env.clone();
    if let Some(o) = environment.as_object_mut() {
        o.insert("cake_version".into(), json!(env!("CARGO_PKG_VERSION")));
        o.insert(
            "nvcc".into(),
            json!(cake_toolchain::Toolchain::discover()
                .ok()
                .map(|t| t.version)),
        );
    }
    let specializations = (!c.specialize.is_empty()).then(|| {
        candidates
            .iter()
            .map(|k| SpecializationRecord {
                values: k.spec.clone(),
                callable: k.callable.clone(),
                hash: k.prepared.record.hash.clone(),
                launch: k.prepared.record.launch.clone(),
                findings: k.prepared.findings.clone(),
                resources: k.prepared.resources.clone(),
                rejected: k.prepared.rejected.clone(),
            })
            .collect()
    });
    let first = candidates.swap_remove(0).prepared;
    Ok(Evidence {
        schema: evidence::SCHEMA,
        command: match mode {
            Mode::Test => "test",
            Mode::Bench => "bench",
        }
        .into(),
        created: evidence::rfc3339(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        ),
        candidate: first.record,
        specializations,
        contract: ContractRecord {
            path: shown(&c.path),
            name: c.name.clone(),
            hash: c.hash.clone(),
        },
        findings: first.findings,
        cost_estimate,
        resources: first.resources,
        correctness,
        timing,
        environment,
        budget: Budget {
            wall_s: started.elapsed().as_secs_f64(),
            worker_restarts: sup.restarts,
            requests,
        },
        verdict: verdict.render(),
    })
}

/// Build every specialization a bench run of `c` needs for `target`, without a worker: a GPU
/// host then finds the cubins in the build cache (`CAKE_CACHE_DIR`) instead of compiling them.
/// Each specialization's rejection, if any, comes back beside it.
pub fn prebuild(
    c: &Contract,
    opts: &Options,
    target: &str,
) -> Result<Vec<(Specialization, Option<String>)>, RunError> {
    check_specialize(c, opts)?;
    specializations(c, Mode::Bench, opts)
        .into_iter()
        .map(|spec| {
            let p = prepare(c, opts, target, &spec, "findings")?;
            Ok((spec, p.rejected))
        })
        .collect()
}

/// One specialization's candidate in a run.
struct Candidate {
    spec: Specialization,
    /// Its name in the worker.
    callable: String,
    prepared: Prepared,
    /// Why its checks are skipped from now on.
    dead: Option<String>,
}

/// One correctness check: a shape, a distribution and the seed of its inputs.
struct Check<'a> {
    shape: &'a Shape,
    distribution: &'a str,
    seed: u64,
}

impl Check<'_> {
    fn record(&self) -> CheckRecord {
        CheckRecord {
            shape: self.shape.clone(),
            distribution: self.distribution.to_string(),
            seed: self.seed,
            passed: false,
            result: None,
            failure: None,
            skipped: None,
        }
    }

    fn skipped(&self, why: &str) -> CheckRecord {
        CheckRecord {
            skipped: Some(why.to_string()),
            ..self.record()
        }
    }

    /// Ask the worker to check `callable`; fold the outcome into the verdict, into `stopped`
    /// when the harness can no longer judge anything, and into `dead` when this candidate can
    /// no longer be run.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        c: &Contract,
        problem: &Value,
        sup: &mut Supervisor,
        callable: &str,
        verdict: &mut Verdict,
        stopped: &mut Option<String>,
        dead: &mut Option<String>,
    ) -> CheckRecord {
        let mut rec = self.record();
        let at = format!("{} {}", shape_text(self.shape), self.distribution);
        let req = json!({"op": "check", "callable": callable, "problem": problem,
                         "shape": self.shape, "distribution": self.distribution,
                         "seed": self.seed, "runs": c.check.runs});
        match sup.request(req, seconds(c.check.timeout_s)) {
            Ok(answer) => {
                let answer = strip(answer);
                rec.passed = answer["passed"].as_bool() == Some(true);
                if !rec.passed {
                    verdict.fail(|| {
                        format!(
                            "{at}: {}",
                            answer["reason"].as_str().unwrap_or("wrong results")
                        )
                    });
                }
                rec.result = Some(answer);
            }
            Err(f) if f.is_harness_fault() => {
                // The contract's generator or oracle, or the protocol, failed: the run cannot
                // judge the candidate.
                let why = format!("{at}: {}", first_line(&f));
                stopped.get_or_insert(format!("the run stopped: {why}"));
                verdict.error.get_or_insert(why);
                rec.failure = Some(f);
            }
            Err(f) => {
                if f.ended_worker() {
                    *dead = Some(format!("the candidate already failed: {f}"));
                }
                verdict.fail(|| format!("{at}: {}", first_line(&f)));
                rec.failure = Some(f);
            }
        }
        rec
    }
}

/// Fold what the timing found into the verdict: wrong outputs after the timed calls, a time
/// below the physical floor, or a timing that failed.
fn judge_timing(t: &Timing, verdict: &mut Verdict) {
    if let Some(s) = t.shapes.iter().find(|s| s.outputs_wrong.is_some()) {
        verdict.fail(|| {
            format!(
                "{}: the timed calls' outputs are wrong: {}",
                shape_text(&s.shape),
                s.outputs_wrong.as_deref().unwrap_or_default()
            )
        });
    } else if let Some(s) = t.shapes.iter().find(|s| !s.suspicious.is_empty()) {
        verdict.fail(|| format!("suspicious timing: {}", s.suspicious.join("; ")));
    } else if let Some(s) = t.shapes.iter().find(|s| s.candidate.failure.is_some()) {
        verdict.fail(|| {
            format!(
                "{}: timing failed: {}",
                shape_text(&s.shape),
                s.candidate
                    .failure
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default()
            )
        });
    }
}

/// The first line of a message (tracebacks and CUDA's advice follow it; the record keeps them).
fn first_line(m: &impl ToString) -> String {
    m.to_string().lines().next().unwrap_or("").to_string()
}

/// Why a check failed.
pub fn check_reason(r: &CheckRecord) -> String {
    if let Some(f) = &r.failure {
        return f.to_string();
    }
    r.result
        .as_ref()
        .and_then(|a| a["reason"].as_str())
        .unwrap_or("wrong results")
        .to_string()
}

#[allow(clippy::too_many_arguments)]
fn bench(
    c: &Contract,
    opts: &Options,
    sup: &mut Supervisor,
    target: &str,
    problem: &Value,
    seed: u64,
    requests: &mut u32,
    progress: Progress,
    predictions: &[Option<cake_cost::Estimate>],
    // The candidate's callable at each bench shape (its specialization's).
    callables: &[&str],
    // Its timeline build's callable at each bench shape, or why it has none; `None` when no
    // timeline was asked for.
    timelines: &[Option<Result<&str, &str>>],
) -> Timing {
    let mut baselines: Vec<(String, Option<Failure>)> = Vec::new();
    for (name, func) in &c.baselines {
        if opts.baseline.as_ref().is_some_and(|b| b != name) {
            continue;
        }
        *requests += 1;
        let loaded = sup.load(json!({"op": "load", "name": name, "python": func}));
        baselines.push((name.clone(), loaded.err()));
    }
    let dist = c
        .distributions
        .first()
        .cloned()
        .unwrap_or_else(|| "normal".into());
    let mut shapes = Vec::new();
    // Where the candidate ended the worker (a sticky CUDA error, a crash, a hang): its build is
    // not run at the later shapes, whose baselines are still timed.
    let mut candidate_ended: Option<(String, String)> = None;
    for (i, shape) in c.shape_set("bench").iter().enumerate() {
        let request = |callables: Vec<&str>| {
            json!({"op": "time", "callables": callables, "problem": problem,
                   "shape": shape, "distribution": dist,
                   "seed": check_seed(seed, 1_000_000 + i as u64),
                   "warmup": c.bench.warmup, "samples": c.bench.samples,
                   "flush_l2": true, "cupti": true})
        };
        // Candidate and baselines are timed together, sample by sample in turn, so drift in
        // clocks or power during the series reaches all of them alike.
        let candidate_name = callables.get(i).copied().unwrap_or("candidate");
        // A later shape of the same build after it ended the worker (builds differ per
        // specialization: a callable of another name is another build, and runs).
        let skip = candidate_ended
            .as_ref()
            .filter(|(name, _)| name == candidate_name);
        let mut names = if skip.is_some() {
            Vec::new()
        } else {
            vec![candidate_name]
        };
        names.extend(
            baselines
                .iter()
                .filter(|(_, failed)| failed.is_none())
                .map(|(n, _)| n.as_str()),
        );
        *requests += 1;
        let mut results = match sup.request(request(names.clone()), seconds(c.bench.timeout_s)) {
            Ok(a) => a["results"].as_object().cloned().unwrap_or_default(),
            Err(_) => serde_json::Map::new(),
        };
        let interleaved = names.iter().all(|n| results.contains_key(*n));
        let mut time = |sup: &mut Supervisor, name: &str| -> Timed {
            if let Some(r) = results.remove(name) {
                return Timed {
                    result: Some(r),
                    failure: None,
                };
            }
            // The joint request failed: time this one alone, so one failing callable does not
            // take the others' times with it.
            *requests += 1;
            match sup.request(request(vec![name]), seconds(c.bench.timeout_s)) {
                Ok(mut a) => Timed {
                    result: a["results"].get_mut(name).map(Value::take),
                    failure: None,
                },
                Err(f) => Timed {
                    result: None,
                    failure: Some(f),
                },
            }
        };
        let candidate = match skip {
            Some((_, at)) => Timed {
                result: None,
                failure: Some(Failure::Skipped {
                    reason: format!("this build ended the worker at {at}"),
                }),
            },
            None => time(sup, candidate_name),
        };
        if skip.is_none() {
            if let Some(f) = candidate.failure.as_ref().filter(|f| f.ended_worker()) {
                candidate_ended = Some((
                    candidate_name.to_string(),
                    format!("{} ({f})", shape_text(shape)),
                ));
            }
        }
        let mut timed = IndexMap::new();
        for (name, load_failure) in &baselines {
            let t = match load_failure {
                Some(f) => Timed {
                    result: None,
                    failure: Some(f.clone()),
                },
                None => time(sup, name),
            };
            timed.insert(name.clone(), t);
        }
        let gpu = sup.env.as_ref().and_then(|e| e["gpu"].as_str());
        let fl = floor(c, shape, target, gpu);
        let mut suspicious = Vec::new();
        if candidate
            .result
            .as_ref()
            .and_then(|r| r["kernels_per_call"].as_u64())
            == Some(0)
        {
            suspicious.push("the profiler saw no GPU work in the candidate's calls".to_string());
        }
        let outputs_wrong = candidate.result.as_ref().and_then(|r| {
            (r["outputs_ok"] == json!(false)).then(|| {
                r["outputs_reason"]
                    .as_str()
                    .unwrap_or("they differ from the oracle")
                    .to_string()
            })
        });
        if let Some(f) = &fl {
            for measure in ["events_ms", "cupti_ms"] {
                if let Some(m) = candidate.median(measure) {
                    if m < f.ms * FLOOR_ALLOWANCE {
                        suspicious.push(format!(
                            "{} median {m:.4} ms is below the physical floor {:.4} ms",
                            measure.trim_end_matches("_ms"),
                            f.ms
                        ));
                    }
                }
            }
        }
        // The cost model's speed of light comes from the schedule's own FLOPs and bytes at the
        // same datasheet ceilings as the floor (cake_target::peak_for), so it flags what the
        // contract's formula cannot see (a kernel that skips work the schedule says it does).
        let (predicted, below) = match predictions.get(i).and_then(Option::as_ref) {
            Some(e) => {
                let (p, s) = judge_prediction(
                    e,
                    candidate.median("events_ms"),
                    candidate.median("cupti_ms"),
                    fl.as_ref().map(|f| f.ms),
                );
                (Some(p), s)
            }
            None => (None, Vec::new()),
        };
        suspicious.extend(below);
        let flushes: Vec<(String, Option<f64>)> = std::iter::once(("candidate", &candidate))
            .chain(timed.iter().map(|(n, t)| (n.as_str(), t)))
            .map(|(n, t)| (n.to_string(), t.median("flush_after_ms")))
            .collect();
        let deferred_ms = deferred_writeback(&flushes);
        let charge = |name: &str| deferred_ms.get(name).copied().unwrap_or(0.0);
        let mut speedup = IndexMap::new();
        if suspicious.is_empty() && outputs_wrong.is_none() {
            for (name, t) in &timed {
                let ratio = |m: &str| {
                    Some(
                        (t.median(m)? + charge(name))
                            / (candidate.median(m)? + charge("candidate")),
                    )
                };
                speedup.insert(
                    name.clone(),
                    Speedup {
                        events: ratio("events_ms"),
                        cupti: ratio("cupti_ms"),
                    },
                );
            }
        }
        let fmt = |t: &Timed| match (t.median("events_ms"), t.median("cupti_ms"), &t.failure) {
            (Some(e), c, _) => format!(
                "{e:.4} / {}",
                c.map_or("-".to_string(), |c| format!("{c:.4}"))
            ),
            (None, _, Some(f)) => format!("failed ({f})"),
            _ => "-".into(),
        };
        let candidate_rate = candidate.median("events_ms").map(|ms| Rate {
            tflops: fl
                .as_ref()
                .and_then(|f| f.flops)
                .map(|f| f / (ms * 1e-3) / 1e12),
            tbps: fl
                .as_ref()
                .and_then(|f| f.bytes)
                .map(|b| b / (ms * 1e-3) / 1e12),
            of_floor: fl.as_ref().map(|f| f.ms / ms),
        });
        let mut line = format!(
            "bench {:<28} candidate {} ms",
            shape_text(shape),
            fmt(&candidate)
        );
        if let Some(r) = &candidate_rate {
            let parts: Vec<String> = [
                r.tflops.map(|t| format!("{t:.0} TF/s")),
                r.tbps
                    .filter(|_| r.tflops.is_none())
                    .map(|t| format!("{t:.2} TB/s")),
                r.of_floor.map(|f| format!("{:.0}% of floor", f * 100.0)),
            ]
            .into_iter()
            .flatten()
            .collect();
            if !parts.is_empty() {
                line += &format!(" ({})", parts.join(", "));
            }
        }
        for (name, t) in &timed {
            line += &format!(" · {name} {} ms", fmt(t));
            if let Some(s) = speedup.get(name).and_then(|s| s.events) {
                line += &format!(" ({s:.3}x)");
            }
        }
        if let Some(w) = candidate.result.as_ref().and_then(waves_note) {
            line += &format!(" · {w}");
        }
        if let Some(pr) = &predicted {
            line += &format!(
                " · model {:.4} ms ({}), on the GPU {:.4} ms ({})",
                pr.time_ms, pr.bound, pr.span_ms, pr.span_bound
            );
        }
        if !suspicious.is_empty() {
            line += &format!(" · SUSPICIOUS: {}", suspicious.join("; "));
        }
        if let Some(w) = &outputs_wrong {
            line += &format!(" · WRONG OUTPUTS: {}", first_line(w));
        }
        if !interleaved {
            line += " · (timed one at a time)";
        }
        for (name, ms) in &deferred_ms {
            line += &format!(" · {name} charged {ms:.4} ms of deferred writeback");
        }
        progress(&line);
        // One stamped launch after the timed ones (it never enters the medians).
        let timeline = match timelines.get(i).copied().flatten() {
            None => None,
            Some(Err(why)) => Some(json!({"error": why})),
            Some(Ok(_)) if candidate_ended.is_some() || candidate.failure.is_some() => None,
            Some(Ok(name)) => {
                *requests += 1;
                let req = json!({"op": "timeline", "callable": name, "problem": problem,
                                 "shape": shape, "distribution": dist,
                                 "seed": check_seed(seed, 1_000_000 + i as u64)});
                Some(match sup.request(req, seconds(c.bench.timeout_s)) {
                    Ok(a) => {
                        if let Some(text) = a["text"].as_str() {
                            for l in text.lines() {
                                progress(&format!("  timeline {l}"));
                            }
                        }
                        a.get("summary").cloned().unwrap_or_else(
                            || json!({"error": "the worker's answer had no summary"}),
                        )
                    }
                    Err(f) => {
                        progress(&format!("  timeline failed: {f}"));
                        json!({"error": f.to_string()})
                    }
                })
            }
        };
        shapes.push(ShapeTiming {
            shape: shape.clone(),
            floor: fl,
            candidate,
            baselines: timed,
            speedup,
            suspicious,
            interleaved,
            outputs_wrong,
            candidate_rate,
            predicted,
            deferred_ms,
            timeline,
        });
    }
    Timing {
        shape_set: "bench".into(),
        warmup: c.bench.warmup,
        samples: c.bench.samples,
        flush_l2: true,
        cupti: true,
        shapes,
    }
}

/// The candidate's waves from the worker's `launch` facts (its grid against the CTAs the driver
/// says run at once), naming the cluster limit where that is what cut the resident CTAs:
/// "1.07 waves (only 30 clusters of 4 at once: 120 CTAs)".
fn waves_note(result: &Value) -> Option<String> {
    let l = result.get("launch")?;
    let waves = l["waves"].as_f64()?;
    let mut note = format!("{waves:.2} waves");
    let (Some(at_once), Some(n)) = (l["clusters_at_once"].as_u64(), l["cluster"].as_u64()) else {
        return Some(note);
    };
    let every = l["sm_count"].as_u64()? * l["ctas_per_sm"].as_u64()?;
    if at_once * n < every {
        note += &format!(
            " (only {at_once} clusters of {n} at once: {} CTAs)",
            at_once * n
        );
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Role;

    #[test]
    fn the_bench_line_names_the_waves_and_the_cluster_limit() {
        let fact = |clusters: Value| {
            json!({"launch": {"grid": [128, 1, 1], "sm_count": 132, "ctas_per_sm": 1,
                              "cluster": 4, "clusters_at_once": clusters,
                              "resident_ctas": 120, "waves": 128.0 / 120.0}})
        };
        assert_eq!(
            waves_note(&fact(json!(30))).as_deref(),
            Some("1.07 waves (only 30 clusters of 4 at once: 120 CTAs)")
        );
        let plain = json!({"launch": {"grid": [64, 1, 1], "sm_count": 132, "ctas_per_sm": 1,
                                      "cluster": 1, "clusters_at_once": null,
                                      "resident_ctas": 132, "waves": 64.0 / 132.0}});
        assert_eq!(waves_note(&plain).as_deref(), Some("0.48 waves"));
        // Clusters of 2 on every SM: no limit to name.
        let pairs = json!({"launch": {"grid": [128, 1, 1], "sm_count": 132, "ctas_per_sm": 1,
                                      "cluster": 2, "clusters_at_once": 66,
                                      "resident_ctas": 132, "waves": 128.0 / 132.0}});
        assert_eq!(waves_note(&pairs).as_deref(), Some("0.97 waves"));
        // No facts (a baseline, or a backend without a driver): nothing.
        assert_eq!(waves_note(&json!({"events_ms": {}})), None);
    }

    #[test]
    fn a_time_under_the_models_speed_of_light_is_suspicious() {
        let src = include_str!("../../../examples/gemm_sm90.py");
        let checked = cake_driver::check("gemm_sm90.py", src.as_bytes(), None);
        let t = cake_target::lookup("sm_90a").unwrap();
        let cal = cake_cost::Calibration::builtin(t).unwrap();
        let shape = cake_cost::parse_shape("M=4096,N=7168,K=4096").unwrap();
        let e = cake_cost::estimate(&checked.kernels[0], t, &shape, &cal).unwrap();
        let sol = e.speed_of_light_us * 1e-3;
        // A believable time: recorded against the prediction, nothing flagged.
        let (p, s) = super::judge_prediction(&e, Some(0.304), None, None);
        assert!(s.is_empty(), "{s:?}");
        assert!((p.measured_over_predicted.unwrap() - 0.304 / (e.time_us * 1e-3)).abs() < 1e-12);
        assert_eq!(p.bound, "tensor cores");
        // Half the speed of light: flagged, once per measure.
        let (_, s) = super::judge_prediction(&e, Some(sol * 0.5), Some(sol * 0.5), None);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(
            s[0].contains("below the cost model's speed of light"),
            "{s:?}"
        );
        // Already below the contract's floor: reported there, not twice.
        let (_, s) = super::judge_prediction(&e, Some(sol * 0.5), None, Some(sol));
        assert!(s.is_empty());
    }

    #[test]
    fn targets_follow_compute_capability() {
        assert_eq!(target_for_cc((9, 0)), Some("sm_90a"));
        assert_eq!(target_for_cc((8, 0)), Some("sm_80"));
        assert_eq!(target_for_cc((12, 1)), Some("sm_121a"));
        assert_eq!(target_for_cc((7, 5)), None);
    }

    #[test]
    fn check_seeds_differ_and_stay_json_exact() {
        let seeds: Vec<u64> = (0..100).map(|i| check_seed(42, i)).collect();
        let mut unique = seeds.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seeds.len());
        assert!(seeds.iter().all(|s| *s < (1 << 53)));
        assert_eq!(check_seed(42, 7), check_seed(42, 7));
    }

    /// The contract's floor is the worker's card's where Cake knows its ceilings, else the
    /// target's (which hold for every card of it).
    #[test]
    fn the_floor_is_the_workers_cards() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let c = Contract::load(&root.join("kernels/rows/rmsnorm.contract.toml")).expect("contract");
        let shape = c.shape_set("bench")[0].clone();
        let ms = |gpu| floor(&c, &shape, "sm_90a", gpu).unwrap();
        let h100 = ms(Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(h100.bandwidth_gbps, Some(3350.0));
        for other in [Some("NVIDIA H200"), Some("NVIDIA H100 NVL"), None] {
            assert_eq!(ms(other).bandwidth_gbps, Some(4800.0), "{other:?}");
        }
        assert!((h100.ms / ms(None).ms - 4800.0 / 3350.0).abs() < 1e-9);
    }

    /// A bench run's estimates use the table measured on the worker's GPU where there is one,
    /// else the target's default.
    #[test]
    fn estimates_take_the_table_of_the_workers_gpu() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let c = Contract::load(&root.join("kernels/gemm/gemm.contract.toml")).expect("contract");
        let src = include_str!("../../../examples/gemm_sm90.py");
        let checked = cake_driver::check("gemm_sm90.py", src.as_bytes(), None);
        let kernels = [Ok(&checked.kernels[0])];
        let of_shape = vec![0; c.shape_set("bench").len()];
        let table_of = |gpu| {
            let (doc, est) = cost_estimates(&c, &kernels, &of_shape, "sm_90a", gpu);
            assert!(est.iter().all(Option::is_some), "{doc}");
            doc["estimates"][0]["calibration"]["gpu"]
                .as_str()
                .unwrap()
                .to_string()
        };
        assert_eq!(
            table_of(Some("NVIDIA H100 80GB HBM3")),
            "NVIDIA H100 80GB HBM3"
        );
        assert_eq!(table_of(Some("NVIDIA H200")), "NVIDIA H200");
        assert_eq!(table_of(Some("NVIDIA A100-SXM4-80GB")), "NVIDIA H200");
        assert_eq!(table_of(None), "NVIDIA H200");
    }

    /// An older target on a newer GPU is refused unless its PTX is embedded, and an `a` target
    /// never runs elsewhere; the GPU's own target always resolves.
    #[test]
    fn an_older_target_needs_its_ptx_on_a_newer_gpu() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let c = Contract::load(&root.join("kernels/gemm/gemm.contract.toml")).expect("contract");
        let h200 = json!({"cc": [9, 0]});
        let opts = |t: &str, embed_ptx| Options {
            target: Some(t.into()),
            embed_ptx,
            ..Options::default()
        };
        let refused = resolve_target(&c, &opts("sm_80", false), &h200).unwrap_err();
        assert!(refused.to_string().contains("--embed-ptx"), "{refused}");
        assert_eq!(
            resolve_target(&c, &opts("sm_80", true), &h200).unwrap(),
            "sm_80"
        );
        assert_eq!(
            resolve_target(&c, &Options::default(), &h200).unwrap(),
            "sm_90a"
        );
        let a100 = json!({"cc": [8, 0]});
        let later = resolve_target(&c, &opts("sm_90a", true), &a100).unwrap_err();
        assert!(!later.to_string().contains("--embed-ptx"), "{later}");
    }

    #[test]
    fn role_and_output() {
        assert!(Role::Inout.is_output() && Role::Output.is_output() && !Role::Input.is_output());
    }
}
