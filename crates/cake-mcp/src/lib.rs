//! `cake mcp`: Cake as a Model Context Protocol server over stdio (docs/agents.md).
//!
//! Each tool is a thin shell over the library the matching `cake` subcommand uses, so an agent
//! sees the same findings, CUDA and evidence records as a person at a terminal:
//!
//! | tool | reuses |
//! |---|---|
//! | `check` | [`cake_driver::check`] and [`cake_diag::render::json`] |
//! | `explain` | [`cake_diag::catalog::explain`] |
//! | `lower` | [`cake_driver::lower`] |
//! | `build` | [`cake_driver::build`] (needs the CUDA toolchain) |
//! | `test`, `bench` | [`cake_eval::run`] (needs a GPU host and the evaluation worker) |
//! | `evolve_status` | [`cake_evolve::report::build`] over a run directory's archive |
//!
//! Findings in a schedule are a *successful* tool result that carries them: the agent's next
//! step is to repair the schedule by code and line. Bad arguments (a missing file, an unknown
//! target or code, a contract that does not load) are tool errors (`isError: true`) with a
//! message saying what to change.
//!
//! Every call runs under limits (docs/agents.md, "Limits"): `cake mcp` runs each compiler tool
//! in a child process (`cake mcp-worker`, [`isolate`]) with a time limit, an address-space limit
//! and the client's cancellation, all of which kill it; inputs are capped in size and must be
//! regular files; paths are confined to the working directory and the `--allow` roots
//! ([`limits::Policy`]); request lines are capped ([`transport`]). A panic is a tool error and
//! the server goes on.

pub mod isolate;
pub mod limits;
pub mod transport;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use isolate::worker_main;
pub use limits::{Config, Policy};
pub use transport::LineTransport;

use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{Implementation, ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, Json, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `cake mcp`'s line in `cake --help`: every tool by name (a test holds it to the tool list).
pub const ABOUT: &str = "Serve Cake's tools (check, explain, lower, cost, build, test, bench, \
evolve_status) to a coding agent over MCP on stdin/stdout (docs/agents.md)";

/// `cake mcp --help`.
pub const LONG_ABOUT: &str = "Serve Cake's tools to a coding agent over MCP on stdin/stdout \
(docs/agents.md):

  check          verify a schedule; every finding with its code and line (read-only)
  explain        a finding code's rule page                           (read-only)
  lower          CUDA and launch metadata for one target              (read-only)
  cost           the cost model's estimate at a shape                 (read-only)
  build          compile into out_dir (needs nvcc)                    (writes files, idempotent)
  test           a contract's correctness protocol (GPU host)         (open world)
  bench          test, then timing against the baselines (GPU host)   (open world)
  evolve_status  where a `cake evolve` / `cake tune` run stands       (read-only)

Each call of check, explain, lower, cost, build and evolve_status runs in a child process \
that is killed past --timeout, past --memory, or when the client cancels the call; test and \
bench are stopped past --eval-timeout or on cancellation. Schedules over 4 MiB, files that are \
not regular files and request lines over 16 MiB are refused. Tools read and write only under \
the working directory and the --allow directories.";

/// What the server tells a client at `initialize`.
const INSTRUCTIONS: &str = "Cake compiles GPU kernel schedules (Cake IR, Python syntax) to CUDA. \
A good session: `check` the schedule and repair every error finding by its code and line \
(`explain` a code for its rule, a bad and a good example); `lower` to read the CUDA and launch \
metadata; `build` to compile it (needs the CUDA toolchain); `test` a workload contract for \
correctness, then `bench` it against the contract's baselines (both need a GPU host) and read \
the evidence record's `verdict`; `test` and `bench` report each check and timing line as a \
progress notification when the request carries a progress token, and a cancelled request stops \
the evaluation (its worker is killed). `cost` estimates a schedule's time at a shape before \
compiling. `evolve_status` reads the archive of a `cake evolve` / `cake tune` \
run directory (budget spent, best so far, recent candidates, recurring failures). Relative paths are resolved against the server's working \
directory; paths outside it and the roots the server was started with (`cake mcp --allow DIR`) are \
refused. Each call has a time limit and a memory limit, and schedules are limited to 4 MiB.";

/// The Cake MCP server: its tools, its limits and the lock that keeps GPU runs from
/// overlapping.
#[derive(Clone)]
pub struct CakeServer {
    tool_router: ToolRouter<Self>,
    /// `test` and `bench` take this for their whole run: two timing runs sharing a GPU would
    /// each measure the other.
    gpu: Arc<std::sync::Mutex<()>>,
    config: Arc<Config>,
    policy: Arc<Policy>,
    /// One permit per tool process running.
    jobs: Arc<tokio::sync::Semaphore>,
}

impl Default for CakeServer {
    fn default() -> Self {
        Self::new()
    }
}

// ---------------------------------------------------------------------------------------------
// Inputs

/// A schedule to check, and how.
#[derive(Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckInput {
    /// Path of the schedule file (`.py`, at most 4 MiB). Give this or `source`.
    #[serde(default)]
    pub path: Option<String>,
    /// The schedule's text (at most 4 MiB), when it is not in a file. Give this or `path`.
    #[serde(default)]
    pub source: Option<String>,
    /// The file name findings are reported against when `source` is given (default
    /// `schedule.py`).
    #[serde(default)]
    pub name: Option<String>,
    /// Check for this exact target (e.g. `sm_90a`); default: every target the schedule declares.
    #[serde(default)]
    pub target: Option<String>,
    /// Treat coverage notes ("not verified: ...") as errors, as `cake check --strict` does.
    #[serde(default)]
    pub strict: Option<bool>,
    /// Also run the cost model at this shape (e.g. `M=4096,N=7168,K=4096`) and report its hints
    /// as performance findings (CAKE-P003..P007), as `cake check --shape` does.
    #[serde(default)]
    pub shape: Option<String>,
    /// The GPU those hints are for: a card (`H100`) or the driver's name of a device, whose
    /// committed calibration table the cost model takes, as `cake check --gpu` does (default:
    /// the target's default table).
    #[serde(default)]
    pub gpu: Option<String>,
}

/// A finding code to explain.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainInput {
    /// A code such as `CAKE-S005` (the prefix and case are optional) or its slug.
    pub code: String,
}

/// A schedule and the target to lower it for.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LowerInput {
    /// Path of the schedule file (`.py`, at most 4 MiB). Give this or `source`.
    #[serde(default)]
    pub path: Option<String>,
    /// The schedule's text (at most 4 MiB), when it is not in a file. Give this or `path`.
    #[serde(default)]
    pub source: Option<String>,
    /// The file name findings are reported against when `source` is given (default
    /// `schedule.py`).
    #[serde(default)]
    pub name: Option<String>,
    /// The exact target, e.g. `sm_90a`.
    pub target: String,
}

/// A schedule, the target and the shape to estimate it at.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CostInput {
    /// Path of the schedule file (`.py`, at most 4 MiB). Give this or `source`.
    #[serde(default)]
    pub path: Option<String>,
    /// The schedule's text (at most 4 MiB), when it is not in a file. Give this or `path`.
    #[serde(default)]
    pub source: Option<String>,
    /// The file name findings are reported against when `source` is given (default
    /// `schedule.py`).
    #[serde(default)]
    pub name: Option<String>,
    /// The exact target, e.g. `sm_90a`; it needs a calibration table (sm_90a today).
    pub target: String,
    /// Every symbolic dimension of the kernel, e.g. `M=4096,N=7168,K=4096`.
    pub shape: String,
    /// The GPU to estimate for: a card (`H100`) or the driver's name of a device, whose
    /// committed calibration table the model takes, as `cake cost --gpu` does (default: the
    /// target's default table; sm_90a has the H200's, its default, and the H100's).
    #[serde(default)]
    pub gpu: Option<String>,
}

/// The cost model's estimates, one per kernel of the file.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CostOutput {
    /// `cake.cost/v0`: predicted time and throughput, the bound, the terms that add up to the
    /// time, utilization, grid and waves, per-loop breakdown, hints, the calibration used
    /// (docs/cost-model.md).
    pub estimates: Vec<Value>,
    /// The same, as `cake cost` prints it.
    pub report: String,
}

/// A schedule file, the target, and where to write the build.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildInput {
    /// Path of the schedule file (`.py`).
    pub path: String,
    /// The exact target, e.g. `sm_90a`.
    pub target: String,
    /// The directory to write `<kernel>.{cu,cubin,launch.json,resources.json}` into (created if
    /// missing).
    pub out_dir: String,
}

/// A workload contract and the candidate to evaluate (docs/contracts.md).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalInput {
    /// Path of the workload contract (`*.contract.toml`).
    pub contract: String,
    /// The candidate: a schedule (`.py`) or a prebuilt kernel's `.launch.json`; default: the
    /// contract's `kernel`.
    #[serde(default)]
    pub kernel: Option<String>,
    /// The exact target; default: the one matching the GPU the worker sees.
    #[serde(default)]
    pub target: Option<String>,
    /// Base seed, to reproduce a run; default: fresh.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The shape set to check on: `check` (default), `bench` or `held_out`.
    #[serde(default)]
    pub shapes: Option<String>,
    /// Where to build the candidate; default: a directory in the build cache.
    #[serde(default)]
    pub build_dir: Option<String>,
}

/// [`EvalInput`] plus the baseline to time (the fields are spelled out: `deny_unknown_fields`
/// does not combine with `flatten`).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BenchInput {
    /// Path of the workload contract (`*.contract.toml`).
    pub contract: String,
    /// The candidate: a schedule (`.py`) or a prebuilt kernel's `.launch.json`; default: the
    /// contract's `kernel`.
    #[serde(default)]
    pub kernel: Option<String>,
    /// The exact target; default: the one matching the GPU the worker sees.
    #[serde(default)]
    pub target: Option<String>,
    /// Base seed, to reproduce a run; default: fresh.
    #[serde(default)]
    pub seed: Option<u64>,
    /// The shape set to check on: `check` (default), `bench` or `held_out`.
    #[serde(default)]
    pub shapes: Option<String>,
    /// Where to build the candidate; default: a directory in the build cache.
    #[serde(default)]
    pub build_dir: Option<String>,
    /// Time only this baseline of the contract; default: all of them.
    #[serde(default)]
    pub baseline: Option<String>,
    /// After timing each shape, launch a build of the candidate with its timeline stamps once
    /// and return its per-CTA phases (first data, streaming, tail) in the evidence
    /// (`timing.shapes[*].timeline`, docs/timeline.md).
    #[serde(default)]
    pub timeline: bool,
}

/// What `bench` asks beyond `test`.
#[derive(Debug, Default)]
struct BenchExtras {
    baseline: Option<String>,
    timeline: bool,
}

impl BenchInput {
    fn split(self) -> (EvalInput, BenchExtras) {
        let BenchInput {
            contract,
            kernel,
            target,
            seed,
            shapes,
            build_dir,
            baseline,
            timeline,
        } = self;
        let eval = EvalInput {
            contract,
            kernel,
            target,
            seed,
            shapes,
            build_dir,
        };
        (eval, BenchExtras { baseline, timeline })
    }
}

/// A run directory of `cake evolve` or `cake tune`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvolveStatusInput {
    /// The run directory (the one holding `archive.sqlite`).
    pub run: String,
    /// How many of the most recent candidates to list; default 10.
    #[serde(default)]
    pub recent: Option<usize>,
    /// Include the best candidate's schedule text; default true.
    #[serde(default)]
    pub include_source: Option<bool>,
}

// ---------------------------------------------------------------------------------------------
// Outputs

/// The check's findings.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckOutput {
    /// The file the findings are about.
    pub file: String,
    /// Findings of severity `error`; the schedule compiles only when this is 0.
    pub errors: usize,
    /// Findings of severity `warning`.
    pub warnings: usize,
    /// Targets the schedule declares (or the one asked for) that it cannot be built for: each
    /// with the number of constructs not lowered there (`CAKE-V001` notes). The schedule builds
    /// for every target checked only when `errors` is 0 and this is empty.
    pub unbuildable: Vec<Unbuildable>,
    /// Every finding, as `cake check --format json` prints them: a `cake.findings/v1` document
    /// (docs/diagnostics.md), each finding with its code, message, 1-based line and column,
    /// labels, help and notes.
    pub findings: Value,
}

/// A target a schedule cannot be built for.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Unbuildable {
    pub target: String,
    /// Constructs not lowered for it.
    pub constructs: usize,
}

/// A rule's page.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ExplainOutput {
    /// The stable code, e.g. `CAKE-S005`.
    pub code: String,
    /// Its kebab-case slug.
    pub name: String,
    /// `language`, `safety`, `conformance`, `consistency`, `semantics`, `performance`, `hint`
    /// or `coverage`.
    pub category: String,
    /// The default severity: `error`, `warning` or `note`.
    pub severity: String,
    /// One line.
    pub summary: String,
    /// The whole page as `cake explain CODE` prints it: the rule, why, how to fix, a bad and a
    /// good example.
    pub text: String,
}

/// One lowered kernel.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LoweredKernel {
    /// The kernel's name in the schedule.
    pub kernel: String,
    /// The `extern "C"` symbol in the CUDA source.
    pub symbol: String,
    /// The exact target it was lowered for.
    pub target: String,
    /// The CUDA C++ source (inline PTX).
    pub cuda: String,
    /// The launch metadata, as in `<kernel>.launch.json` (docs/launch.md).
    pub launch: Value,
}

/// The lowering, or the findings that stopped it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct LowerOutput {
    /// True when every kernel lowered; false when errors in the schedule stopped it (see
    /// `findings`).
    pub ok: bool,
    /// Findings of severity `error`.
    pub errors: usize,
    /// Each kernel's CUDA and launch metadata (empty when `ok` is false).
    pub kernels: Vec<LoweredKernel>,
    /// The check's findings, a `cake.findings/v1` document.
    pub findings: Value,
}

/// One built kernel: the files written and what ptxas reports.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BuiltKernelOutput {
    pub kernel: String,
    /// The CUDA source written.
    pub cu: String,
    /// The compiled cubin.
    pub cubin: String,
    /// The launch metadata file.
    pub launch: String,
    /// ptxas's per-kernel report: registers, stack frame, spill stores and loads, shared memory.
    pub resources: Value,
    /// Whether the cubin came from the build cache.
    pub cached: bool,
}

/// The build, or the findings that stopped it.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BuildOutput {
    /// True when every kernel was compiled and no finding (check or ptxas report) is an error.
    pub ok: bool,
    /// Findings of severity `error`.
    pub errors: usize,
    pub target: String,
    /// The kernels built (empty when errors in the schedule stopped the build).
    pub kernels: Vec<BuiltKernelOutput>,
    /// The check's findings plus those drawn from the ptxas reports (spills, ...), a
    /// `cake.findings/v1` document.
    pub findings: Value,
}

/// The outcome of `test` or `bench`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EvalOutput {
    /// The evidence record's verdict: `passed`, `failed: <first reason>`, or `error: ...` when the
    /// contract or the harness failed rather than the candidate.
    pub verdict: String,
    /// Whether the verdict is `passed`.
    pub passed: bool,
    /// The whole evidence record (`cake.evidence/v0`, docs/contracts.md): candidate, contract,
    /// findings, resources, every correctness check, timing against the baselines (`bench`),
    /// environment and budget.
    pub evidence: Value,
    /// The progress lines `cake test` prints, one per event.
    pub progress: Vec<String>,
}

/// Where an evolution run stands, read from its archive.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct EvolveStatusOutput {
    pub run_id: String,
    /// `running`, or `done: <why it stopped>` (a budget, or nothing new to propose). A run
    /// killed mid-way still says `running` until it is resumed.
    pub status: String,
    pub contract: String,
    pub seed: String,
    pub proposer: String,
    /// The limits: `tokens`, `wall_s`, `gpu_s` (null: unlimited).
    pub budget: Value,
    /// What the run has spent: `tokens`, `wall_s`, `gpu_s`.
    pub spent: Value,
    /// The fraction of the tightest limit spent, 0 to 1.
    pub fraction: f64,
    /// Candidates by stage (`rejected`, `ranked_out`, `estimated`, `evaluated`) and by outcome
    /// (`passed`, `failed`, `error`, `quarantined`), and the number of niches.
    pub counts: Value,
    /// The best candidate: fastest validated (or best predicted in a model-only run), with its
    /// hash, generation, niche, predicted and measured microseconds, speedup, verdict and
    /// (unless turned off) source; null when there is none.
    pub best: Value,
    /// The most recent candidates, newest last: seq, hash, generation, proposer, stage,
    /// correctness, verdict, predicted_us, measured_us, speedup.
    pub recent: Vec<Value>,
    /// Recurring failures by signature (rule code, runtime error class, mismatch pattern), each
    /// with its count and a proposal of what the compiler should grow.
    pub clusters: Vec<Value>,
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// A panic's message as a tool error.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    let what = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    format!("internal error in Cake (please report it with the input): {what}")
}

/// The schedule named by `path` (read under the path policy and the input limits) or given as
/// `source`: its name and bytes.
fn schedule(
    policy: &Policy,
    path: Option<&str>,
    source: Option<&str>,
    name: Option<&str>,
) -> Result<(String, Vec<u8>), String> {
    match (path, source) {
        (Some(p), None) => Ok((p.to_string(), policy.read_schedule(p)?)),
        (None, Some(s)) => {
            limits::check_source(s)?;
            Ok((
                name.unwrap_or("schedule.py").to_string(),
                s.as_bytes().to_vec(),
            ))
        }
        (Some(_), Some(_)) => Err("give `path` or `source`, not both".into()),
        (None, None) => Err("give the schedule as `path` (a file) or `source` (its text)".into()),
    }
}

fn cwd() -> String {
    limits::cwd()
}

/// An exact target, or an error naming the nearest one.
fn known_target(t: &str) -> Result<(), String> {
    cake_target::lookup(t)
        .map(|_| ())
        .map_err(|e| match e.suggestion() {
            Some(s) => format!("{e}; did you mean `{s}`? Cake compiles for exact targets only"),
            None => format!("{e}; Cake compiles for exact targets only"),
        })
}

fn count(findings: &[cake_diag::Finding], severity: cake_diag::Severity) -> usize {
    findings.iter().filter(|f| f.severity == severity).count()
}

fn errors(findings: &[cake_diag::Finding]) -> usize {
    findings.iter().filter(|f| f.is_error()).count()
}

fn path_string(p: &Path) -> String {
    p.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The tools' bodies, synchronous: each runs on a blocking thread.

fn do_check(input: CheckInput, policy: &Policy) -> Result<CheckOutput, String> {
    let (name, bytes) = schedule(
        policy,
        input.path.as_deref(),
        input.source.as_deref(),
        input.name.as_deref(),
    )?;
    if let Some(t) = &input.target {
        known_target(t)?;
    }
    let mut checked = cake_driver::check(&name, &bytes, input.target.as_deref());
    let mut findings = std::mem::take(&mut checked.findings);
    if let Some(shape) = &input.shape {
        let shape = cake_cost::parse_shape(shape).map_err(|e| format!("shape: {e}"))?;
        if !findings.iter().any(|f| f.is_error()) {
            let extra = cake_driver::cost_findings(
                &checked,
                input.target.as_deref(),
                &shape,
                None,
                input.gpu.as_deref(),
            )
            .map_err(|e| match e {
                cake_cost::CostError::NoCalibrationForGpu { .. } => format!("gpu: {e}"),
                e => format!("shape: {e}"),
            })?;
            findings.extend(extra);
            findings.sort_by_key(|f| (f.span.start, f.code));
        }
    }
    if input.strict == Some(true) {
        for f in &mut findings {
            if f.category == cake_diag::Category::Coverage {
                f.severity = cake_diag::Severity::Error;
            }
        }
    }
    Ok(CheckOutput {
        file: name,
        errors: errors(&findings),
        warnings: count(&findings, cake_diag::Severity::Warning),
        unbuildable: cake_driver::unbuildable_targets(&findings)
            .into_iter()
            .map(|(target, constructs)| Unbuildable {
                target: target.to_string(),
                constructs,
            })
            .collect(),
        findings: cake_diag::render::json(&checked.file, &findings),
    })
}

fn do_explain(input: ExplainInput, _policy: &Policy) -> Result<ExplainOutput, String> {
    let info = cake_diag::catalog::lookup(&input.code).ok_or_else(|| {
        format!(
            "unknown code `{}`; codes look like CAKE-S005 (docs/rules.md lists every one)",
            input.code
        )
    })?;
    Ok(ExplainOutput {
        code: info.code.into(),
        name: info.name.into(),
        category: info.category.as_str().into(),
        severity: info.severity.as_str().into(),
        summary: info.summary.into(),
        text: cake_diag::catalog::explain(info),
    })
}

fn do_lower(input: LowerInput, policy: &Policy) -> Result<LowerOutput, String> {
    let (name, bytes) = schedule(
        policy,
        input.path.as_deref(),
        input.source.as_deref(),
        input.name.as_deref(),
    )?;
    known_target(&input.target)?;
    match cake_driver::lower(&name, &bytes, &input.target) {
        Ok((checked, lowered)) => Ok(LowerOutput {
            ok: true,
            errors: errors(&checked.findings),
            kernels: lowered
                .into_iter()
                .map(|l| LoweredKernel {
                    kernel: l.launch.kernel.clone(),
                    symbol: l.symbol.clone(),
                    target: l.launch.target.clone(),
                    cuda: l.cuda.clone(),
                    launch: serde_json::to_value(&l.launch).unwrap_or(Value::Null),
                })
                .collect(),
            findings: cake_diag::render::json(&checked.file, &checked.findings),
        }),
        Err(cake_driver::BuildError::Findings(checked)) => Ok(LowerOutput {
            ok: false,
            errors: errors(&checked.findings),
            kernels: Vec::new(),
            findings: cake_diag::render::json(&checked.file, &checked.findings),
        }),
        Err(other) => Err(other.to_string()),
    }
}

fn do_build(input: BuildInput, policy: &Policy) -> Result<BuildOutput, String> {
    let (name, bytes) = schedule(policy, Some(&input.path), None, None)?;
    known_target(&input.target)?;
    // Checked before anything is created.
    let out = policy.writable_dir(&input.out_dir)?;
    std::fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", input.out_dir))?;
    match cake_driver::build(&name, &bytes, &input.target, &out) {
        Ok(built) => Ok(BuildOutput {
            ok: !built.has_errors(),
            errors: errors(&built.findings),
            target: input.target,
            kernels: built
                .kernels
                .iter()
                .map(|k| BuiltKernelOutput {
                    kernel: k.name.clone(),
                    cu: path_string(&k.cu),
                    cubin: path_string(&k.cubin),
                    launch: path_string(&k.launch_json),
                    resources: serde_json::to_value(&k.resources).unwrap_or(Value::Null),
                    cached: k.cached,
                })
                .collect(),
            findings: cake_diag::render::json(&built.checked.file, &built.findings),
        }),
        Err(cake_driver::BuildError::Findings(checked)) => Ok(BuildOutput {
            ok: false,
            errors: errors(&checked.findings),
            target: input.target,
            kernels: Vec::new(),
            findings: cake_diag::render::json(&checked.file, &checked.findings),
        }),
        Err(cake_driver::BuildError::Tool(e)) => Err(format!(
            "{e}\n`build` needs the CUDA toolchain (nvcc, ptxas): set CUDA_HOME or put nvcc on \
             PATH (scripts/toolchain.sh installs the pinned one); `lower` needs none"
        )),
        Err(other) => Err(other.to_string()),
    }
}

fn do_cost(input: CostInput, policy: &Policy) -> Result<CostOutput, String> {
    let (name, bytes) = schedule(
        policy,
        input.path.as_deref(),
        input.source.as_deref(),
        input.name.as_deref(),
    )?;
    known_target(&input.target)?;
    let target = cake_target::lookup(&input.target).map_err(|e| e.to_string())?;
    let shape = cake_cost::parse_shape(&input.shape).map_err(|e| format!("shape: {e}"))?;
    let calibration = match &input.gpu {
        Some(gpu) => cake_cost::Calibration::builtin_for(target, gpu),
        None => cake_cost::Calibration::builtin(target),
    }
    .map_err(|e| e.to_string())?;
    let checked = cake_driver::check(&name, &bytes, Some(&input.target));
    if checked.has_errors() {
        return Err(format!(
            "the schedule has {} error(s); the cost model estimates verified schedules only (`check` lists them)",
            errors(&checked.findings)
        ));
    }
    let mut estimates = Vec::new();
    let mut report = String::new();
    for ki in 0..checked.kernels.len() {
        let e = checked
            .estimate(ki, target, &shape, &calibration)
            .map_err(|e| e.to_string())?;
        report.push_str(&e.render());
        estimates.push(serde_json::to_value(&e).unwrap_or(Value::Null));
    }
    Ok(CostOutput { estimates, report })
}

/// `shown` under the path policy: refused when it resolves outside the roots; otherwise passed
/// on (one that does not resolve too, for the callee's own "not found" message).
fn policed(policy: &Policy, shown: &str) -> Result<PathBuf, String> {
    match policy.readable(shown) {
        Err(e) if e.starts_with("path policy") => Err(e),
        // As given, so records and messages name it as the client did.
        _ => Ok(PathBuf::from(shown)),
    }
}

fn do_eval(
    mode: cake_eval::Mode,
    input: EvalInput,
    extras: BenchExtras,
    mut sup: cake_eval::Supervisor,
    policy: &Policy,
    on_line: &mut dyn FnMut(&str),
) -> Result<EvalOutput, String> {
    let contract_path = policed(policy, &input.contract)?;
    if let Ok(meta) = std::fs::metadata(&contract_path) {
        limits::check_regular(&meta, limits::MAX_INPUT_BYTES)
            .map_err(|e| format!("cannot read {}: {e}", input.contract))?;
    }
    let kernel = input
        .kernel
        .as_deref()
        .map(|k| policed(policy, k))
        .transpose()?;
    let build_dir = input
        .build_dir
        .as_deref()
        .map(|d| policy.writable_dir(d))
        .transpose()?;
    let contract = cake_eval::Contract::load(&contract_path).map_err(|errors| {
        let mut m: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        m.push(format!(
            "{} error(s) in the contract {}; its format is in docs/contracts.md",
            errors.len(),
            input.contract
        ));
        m.join("\n")
    })?;
    // The files the contract names (its schedule, the Python of its oracle, generator and
    // baselines) fall under the policy too.
    let mut named = vec![contract.kernel.display().to_string()];
    let functions = std::iter::once(&contract.oracle)
        .chain(contract.generator.as_ref())
        .chain(contract.baselines.values());
    named.extend(functions.filter_map(|f| f.rsplit_once(':').map(|(file, _)| file.to_string())));
    for file in named.iter().filter(|f| Path::new(f).exists()) {
        policy.readable(file)?;
    }
    let options = cake_eval::Options {
        kernel,
        target: input.target,
        seed: input.seed,
        baseline: extras.baseline,
        build_dir,
        shape_set: input.shapes,
        embed_ptx: false,
        python_candidate: None,
        timeline: extras.timeline,
    };
    // Usage mistakes (no bench shapes, an unknown baseline, shape set or target, a missing
    // candidate) come back from cake_eval::check_options before the worker starts.
    cake_eval::check_options(&contract, mode, &options).map_err(|e| e.to_string())?;
    let mut progress = Vec::new();
    let result = cake_eval::run(&contract, mode, &options, &mut sup, &mut |line: &str| {
        on_line(line);
        progress.push(line.to_string())
    });
    sup.shutdown();
    let evidence = result.map_err(|e| {
        let mut m = e.to_string();
        if let Some(help) = e.help() {
            m.push_str(&format!("\n`test` and `bench` need a GPU host: {help}"));
        }
        m
    })?;
    Ok(EvalOutput {
        passed: evidence.verdict == "passed",
        verdict: evidence.verdict.clone(),
        evidence: serde_json::to_value(&evidence).unwrap_or(Value::Null),
        progress,
    })
}

fn do_evolve_status(
    input: EvolveStatusInput,
    policy: &Policy,
) -> Result<EvolveStatusOutput, String> {
    let dir = policed(policy, &input.run)?;
    let report = cake_evolve::report::build(&dir)
        .map_err(|e| format!("{e} (relative paths are resolved against {})", cwd()))?;
    let archive = cake_evolve::Archive::open_existing(&dir)?;
    let cands = archive.candidates(&report.run.id)?;
    let n = input.recent.unwrap_or(10);
    let recent = cands[cands.len().saturating_sub(n)..]
        .iter()
        .map(|c| {
            serde_json::json!({"seq": c.seq, "hash": c.hash, "generation": c.generation,
                "proposer": c.proposer, "stage": c.stage.as_str(), "correctness": c.correctness,
                "verdict": c.verdict, "predicted_us": c.cost_us, "measured_us": c.measured_us,
                "speedup": c.speedup})
        })
        .collect();
    let mut best = report.best.clone().unwrap_or(Value::Null);
    if input.include_source == Some(false) {
        if let Some(o) = best.as_object_mut() {
            o.remove("source");
        }
    }
    Ok(EvolveStatusOutput {
        run_id: report.run.id.clone(),
        status: report.run.status.clone(),
        contract: report.run.contract.clone(),
        seed: report.run.seed.clone(),
        proposer: report.run.proposer.clone(),
        budget: serde_json::to_value(report.run.budget).unwrap_or(Value::Null),
        spent: serde_json::to_value(report.spent).unwrap_or(Value::Null),
        fraction: report.run.budget.fraction(&report.spent),
        counts: report.counts.clone(),
        best,
        recent,
        clusters: report.clusters.clone(),
    })
}

// ---------------------------------------------------------------------------------------------
// The server

/// Run tool `tool` on its JSON input: the worker's entry and the in-process path alike.
pub(crate) fn dispatch(tool: &str, input: Value, policy: &Policy) -> Result<Value, String> {
    fn go<I: serde::de::DeserializeOwned, O: Serialize>(
        input: Value,
        policy: &Policy,
        f: fn(I, &Policy) -> Result<O, String>,
    ) -> Result<Value, String> {
        let input = serde_json::from_value(input).map_err(|e| format!("arguments: {e}"))?;
        let out = f(input, policy)?;
        serde_json::to_value(out).map_err(|e| format!("internal error in Cake: {e}"))
    }
    match tool {
        "check" => go(input, policy, do_check),
        "explain" => go(input, policy, do_explain),
        "lower" => go(input, policy, do_lower),
        "build" => go(input, policy, do_build),
        "cost" => go(input, policy, do_cost),
        "evolve_status" => go(input, policy, do_evolve_status),
        other => Err(format!("`{other}` is not a tool of the worker")),
    }
}

impl CakeServer {
    /// A server with `config`'s limits; the roots of the path policy must exist.
    pub fn with_config(config: Config) -> Result<Self, String> {
        Ok(Self {
            tool_router: Self::tool_router(),
            gpu: Arc::new(std::sync::Mutex::new(())),
            policy: Arc::new(Policy::new(&config.allow)?),
            jobs: Arc::new(tokio::sync::Semaphore::new(config.jobs.max(1))),
            config: Arc::new(config),
        })
    }

    /// The names of the tools, as `tools/list` gives them.
    pub fn tool_names(&self) -> Vec<String> {
        self.tool_router
            .list_all()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// One call of a compiler tool under the limits: in a child process that is killed on
    /// timeout or cancellation, or (no worker configured) on a blocking thread of this process.
    async fn run<I: Serialize, O: serde::de::DeserializeOwned>(
        &self,
        tool: &'static str,
        input: I,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<O>, String> {
        let input = serde_json::to_value(input).map_err(|e| e.to_string())?;
        let ct = ctx.ct.clone();
        let _slot = tokio::select! {
            slot = self.jobs.clone().acquire_owned() => slot.map_err(|e| e.to_string())?,
            _ = ct.cancelled() => return Err(format!("`{tool}` was cancelled by the client")),
        };
        let timeout = self.config.timeout;
        let stopped = |why| match why {
            isolate::Stopped::Timeout => format!(
                "time limit: `{tool}` ran past {} s and was stopped (cake mcp --timeout)",
                timeout.as_secs_f64()
            ),
            isolate::Stopped::Cancelled => format!("`{tool}` was cancelled by the client"),
        };
        let value = match &self.config.worker {
            Some(exe) => {
                let request = isolate::Request {
                    tool: tool.to_string(),
                    input,
                    policy: (*self.policy).clone(),
                };
                isolate::run(
                    exe,
                    self.config.memory,
                    timeout,
                    ct.cancelled_owned(),
                    &request,
                )
                .await
                .map_err(stopped)??
            }
            None => {
                let policy = self.policy.clone();
                let work = tokio::task::spawn_blocking(move || {
                    std::panic::catch_unwind(|| dispatch(tool, input, &policy))
                });
                tokio::select! {
                    r = work => match r {
                        Ok(Ok(r)) => r?,
                        Ok(Err(p)) => return Err(panic_message(p)),
                        Err(e) => return Err(panic_message(Box::new(e.to_string()))),
                    },
                    _ = tokio::time::sleep(timeout) => return Err(stopped(isolate::Stopped::Timeout)),
                    _ = ct.cancelled() => return Err(stopped(isolate::Stopped::Cancelled)),
                }
            }
        };
        serde_json::from_value(value)
            .map(Json)
            .map_err(|e| format!("internal error in Cake: {e}"))
    }

    /// `test` and `bench`: one evaluation at a time on the GPU; each progress line goes to the
    /// client as a progress notification (when the request carries a progress token), and a
    /// cancelled request or the time limit kills the worker, which ends the run.
    async fn evaluate(
        &self,
        mode: cake_eval::Mode,
        input: EvalInput,
        extras: BenchExtras,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<EvalOutput>, String> {
        let sup = cake_eval::Supervisor::new(cake_eval::WorkerCommand::from_env());
        let cancel = sup.cancel_handle();
        let ct = ctx.ct.clone();
        let limit = self.config.eval_timeout;
        let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = timed_out.clone();
        let watcher = tokio::spawn(async move {
            tokio::select! {
                _ = ct.cancelled() => {}
                _ = tokio::time::sleep(limit) => flag.store(true, std::sync::atomic::Ordering::SeqCst),
            }
            cancel.cancel();
        });
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let (token, peer) = (ctx.meta.get_progress_token(), ctx.peer.clone());
        let forward = tokio::spawn(async move {
            let mut n = 0u32;
            while let Some(line) = rx.recv().await {
                n += 1;
                if let Some(t) = &token {
                    let p =
                        ProgressNotificationParam::new(t.clone(), f64::from(n)).with_message(line);
                    let _ = peer.notify_progress(p).await;
                }
            }
        });
        let gpu = self.gpu.clone();
        let policy = self.policy.clone();
        let result = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _held = gpu.lock().unwrap_or_else(|p| p.into_inner());
                do_eval(mode, input, extras, sup, &policy, &mut |line: &str| {
                    let _ = tx.send(line.to_string());
                })
            }))
        })
        .await;
        watcher.abort();
        let _ = forward.await; // every notification is sent before the result
        let result = match result {
            Ok(Ok(r)) => r,
            Ok(Err(p)) => Err(panic_message(p)),
            Err(e) => Err(panic_message(Box::new(e.to_string()))),
        };
        if timed_out.load(std::sync::atomic::Ordering::SeqCst) {
            let what = if mode == cake_eval::Mode::Bench {
                "bench"
            } else {
                "test"
            };
            return Err(format!(
                "time limit: `{what}` ran past {} s; its worker was killed (cake mcp --eval-timeout)",
                limit.as_secs_f64()
            ));
        }
        result.map(Json)
    }
}

#[tool_router(router = tool_router)]
impl CakeServer {
    /// A server with the default limits whose tools run in this process (for tests and
    /// embedding; `cake mcp` runs each call in a child process, [`Config::worker`]).
    pub fn new() -> Self {
        Self::with_config(Config::default()).expect("the working directory exists")
    }

    /// Parse, type-check and verify a schedule; every finding with its code and location.
    #[tool(
        name = "check",
        description = "Parse, type-check and verify a Cake schedule (as `cake check`). Returns every finding as a cake.findings/v1 document (code, severity, message, 1-based line and column, help) and the error count; the schedule compiles only when `errors` is 0. Findings are a successful result: repair them by code and line, `explain` a code for its rule.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn check(
        &self,
        Parameters(input): Parameters<CheckInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<CheckOutput>, String> {
        self.run("check", input, ctx).await
    }

    /// A finding code's rule page.
    #[tool(
        name = "explain",
        description = "Explain a finding code (e.g. CAKE-S005), as `cake explain CODE`: the rule, why it exists, how to fix it, and a bad and a good schedule.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain(
        &self,
        Parameters(input): Parameters<ExplainInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<ExplainOutput>, String> {
        self.run("explain", input, ctx).await
    }

    /// Lower a schedule for one target: CUDA and launch metadata, or the findings.
    #[tool(
        name = "lower",
        description = "Check a schedule for one exact target and lower it (as `cake lower --format json`): per kernel the CUDA C++ source (inline PTX) and the launch metadata. When the schedule has errors, `ok` is false and `findings` holds them. Needs no CUDA toolchain.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn lower(
        &self,
        Parameters(input): Parameters<LowerInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<LowerOutput>, String> {
        self.run("lower", input, ctx).await
    }

    /// Compile a schedule into a directory.
    #[tool(
        name = "build",
        description = "Check, lower and compile a schedule for one exact target into `out_dir` (as `cake build --format json`): the files written (<kernel>.cu, .cubin, .launch.json, .resources.json), ptxas's resource report per kernel (registers, spills), and the findings, including those drawn from the resource report. `out_dir` must lie under the server's working directory or an `--allow` root. Needs the CUDA toolchain (nvcc); without it the tool fails with a message saying so.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn build(
        &self,
        Parameters(input): Parameters<BuildInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<BuildOutput>, String> {
        self.run("build", input, ctx).await
    }

    /// Run a workload contract's correctness protocol.
    #[tool(
        name = "test",
        description = "Run a workload contract's correctness protocol on a candidate (as `cake test --format json`, docs/contracts.md) and return the evidence record and its verdict (`passed` or `failed: <reason>`). Needs a GPU host with the evaluation worker (python3 -m cake.worker, PyTorch with CUDA). Runs one at a time.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn test(
        &self,
        Parameters(input): Parameters<EvalInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<EvalOutput>, String> {
        self.evaluate(cake_eval::Mode::Test, input, BenchExtras::default(), ctx)
            .await
    }

    /// Check a candidate, then time it against the contract's baselines.
    #[tool(
        name = "bench",
        description = "Check a candidate as `test` does, then time it and the contract's baselines in the same process (as `cake bench --format json`); returns the evidence record (timing per shape, speedups) and its verdict. Needs a GPU host with the evaluation worker. Runs one at a time.",
        annotations(
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = true
        )
    )]
    async fn bench(
        &self,
        Parameters(input): Parameters<BenchInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<EvalOutput>, String> {
        let (eval, extras) = input.split();
        self.evaluate(cake_eval::Mode::Bench, eval, extras, ctx)
            .await
    }

    /// The cost model's estimate of a schedule at a shape.
    #[tool(
        name = "cost",
        description = "Estimate a verified schedule's time at a shape before compiling it (as `cake cost --format json`, docs/cost-model.md): predicted time and throughput, the bound (tensor cores, memory, latency, synchronization, epilogue, tail wave, launch), the terms that add up to the time, utilization, grid and waves, a per-loop breakdown and non-blocking hints. A target without a calibration table is refused (CAKE-V003), never estimated with another target's numbers. Microseconds; no GPU needed.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn cost(
        &self,
        Parameters(input): Parameters<CostInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<CostOutput>, String> {
        self.run("cost", input, ctx).await
    }

    /// Where an evolution run stands.
    #[tool(
        name = "evolve_status",
        description = "Read the archive of a `cake evolve` / `cake tune` run directory: status, budget and what has been spent (tokens, wall seconds, GPU seconds), candidate counts by stage and outcome, the best candidate so far (fastest validated, with its schedule), the most recent candidates, and recurring failures clustered by signature with a proposal for each. Safe while the run is going on.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn evolve_status(
        &self,
        Parameters(input): Parameters<EvolveStatusInput>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<EvolveStatusOutput>, String> {
        self.run("evolve_status", input, ctx).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for CakeServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("cake", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }
}

/// Serve MCP over this process's stdin and stdout until the client closes them, each tool call
/// under `config`'s limits. Logs, if any, go to stderr: stdout carries only the protocol.
pub fn serve_stdio(config: Config) -> Result<(), String> {
    let server = CakeServer::with_config(config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let (stdin, stdout) = rmcp::transport::stdio();
        let service = server
            .serve(LineTransport::new(stdin, stdout))
            .await
            .map_err(|e| format!("MCP initialization failed: {e}"))?;
        service
            .waiting()
            .await
            .map_err(|e| format!("MCP server stopped: {e}"))?;
        Ok(())
    })
}
