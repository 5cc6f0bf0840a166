//! One compile session over one file: parse and type (front-end), verify for each target, and
//! confirm the lowering covers every construct (`cake_lower::lowerable`, which generates no
//! code) — the exact sequence `cake check` runs, in one place so every front door (CLI, tests,
//! Python, MCP) reports the same findings.

use cake_diag::{Finding, Label, SourceFile, Span};
use cake_ir::{Inlined, Kernel, KernelFacts};

mod build;
mod read;
pub use build::{
    build, build_opts, build_with, lower, resource_findings, BuildError, BuildOptions, Built,
    BuiltKernel,
};
pub use read::{read_schedule, ReadError, MAX_SCHEDULE_BYTES};

#[derive(Debug)]
pub struct Checked {
    pub file: SourceFile,
    pub kernels: Vec<Kernel>,
    /// Per kernel, the facts derived for each target it was verified for (none when the
    /// front-end reported errors). Later stages read these instead of deriving them again.
    pub facts: Vec<Vec<KernelFacts>>,
    /// Every finding, sorted by position then code.
    pub findings: Vec<Finding>,
}

impl Checked {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.is_error())
    }

    /// The cost model's estimate of kernel `kernel` on `target`, from the session's facts when
    /// the check derived them.
    pub fn estimate(
        &self,
        kernel: usize,
        target: &'static cake_target::Target,
        shape: &std::collections::BTreeMap<String, i64>,
        calibration: &cake_cost::Calibration,
    ) -> Result<cake_cost::Estimate, cake_cost::CostError> {
        let k = &self.kernels[kernel];
        match self.facts_for(kernel, target.name) {
            Some(kf) => cake_cost::estimate_with(k, kf, shape, calibration),
            None => cake_cost::estimate(k, target, shape, calibration),
        }
    }

    /// The facts of kernel `kernel` on `target`, if it was verified for it.
    pub fn facts_for(&self, kernel: usize, target: &str) -> Option<&KernelFacts> {
        self.facts
            .get(kernel)?
            .iter()
            .find(|f| f.target.name == target)
    }
}

/// Check `bytes` (a schedule file named `name`) for `target`, or for every target each kernel
/// declares. Verification runs only on files the front-end accepted.
pub fn check(name: &str, bytes: &[u8], target: Option<&str>) -> Checked {
    // The verifier and the lowering walk expressions recursively too: run the whole session on
    // the front-end's large stack, whatever thread called (Python, an async worker).
    cake_front::limits::on_big_stack(|| check_here(name, bytes, target))
}

fn check_here(name: &str, bytes: &[u8], target: Option<&str>) -> Checked {
    let (file, front) = cake_front::check_bytes(name, bytes);
    let mut findings = front.findings.into_sorted();
    let mut facts = Vec::new();
    if !findings.iter().any(|f| f.is_error()) {
        let session = verify_session(&front.kernels, target);
        findings.extend(session.findings);
        facts = session.facts;
    }
    findings.sort_by_key(|f| (f.span.start, f.code));
    // An unrolled loop or a helper called twice can make the same finding more than once:
    // report it once.
    let mut seen: Vec<Finding> = Vec::new();
    findings.retain(|f| {
        let fresh = !seen.contains(f);
        if fresh {
            seen.push(f.clone());
        }
        fresh
    });
    for f in &mut findings {
        label_inlined_calls(f, &front.kernels);
    }
    Checked {
        file,
        kernels: front.kernels,
        facts,
        findings,
    }
}

/// The most calls of one helper a finding inside it names.
const CALLS_NAMED: usize = 4;

/// A finding inside a helper function's body points at code that runs where the helper was
/// called: label the calls it was inlined at (and theirs, when a helper calls a helper), so the
/// finding names the line in the schedule that brought the code in.
fn label_inlined_calls(f: &mut Finding, kernels: &[Kernel]) {
    let calls: Vec<&Inlined> = kernels.iter().flat_map(|k| &k.inlined).collect();
    let inside = |at: Span, body: Span| body.start <= at.start && at.end <= body.end;
    let mut frontier = vec![f.span];
    let mut named: Vec<Span> = Vec::new();
    // Helpers nest at most `MAX_INLINE_DEPTH` deep; each round climbs one level.
    for _ in 0..=cake_front::limits::MAX_INLINE_DEPTH {
        let mut next = Vec::new();
        for at in frontier {
            let mut of_helper: Vec<&Inlined> = calls
                .iter()
                .copied()
                .filter(|c| inside(at, c.body) && !named.contains(&c.call))
                .collect();
            of_helper.sort_by_key(|c| c.call.start);
            of_helper.dedup_by_key(|c| c.call);
            let total = of_helper.len();
            for (i, c) in of_helper.into_iter().enumerate() {
                named.push(c.call);
                next.push(c.call);
                if i < CALLS_NAMED {
                    let more = if i + 1 == CALLS_NAMED && total > CALLS_NAMED {
                        format!(" (and {} more calls)", total - CALLS_NAMED)
                    } else {
                        String::new()
                    };
                    f.labels.push(Label {
                        span: c.call,
                        message: format!("in helper `{}`, inlined here{more}", c.helper),
                    });
                }
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
}

/// Verify every kernel for the requested target, or for each target it declares, and check that
/// lowering covers it (so a verified kernel never fails to lower).
pub fn verify_all(kernels: &[Kernel], target: Option<&str>) -> Vec<Finding> {
    verify_session(kernels, target).findings
}

/// What verifying a file produced besides its findings, per kernel and verified target.
struct Session {
    findings: Vec<Finding>,
    facts: Vec<Vec<KernelFacts>>,
}

fn verify_session(kernels: &[Kernel], target: Option<&str>) -> Session {
    let mut out = Vec::new();
    let mut all_facts = Vec::new();
    for k in kernels {
        let mut kernel_facts = Vec::new();
        let targets: Vec<String> = match target {
            Some(t) => vec![t.to_string()],
            None => k.targets.clone(),
        };
        for name in targets {
            let Ok(t) = cake_target::lookup(&name) else {
                continue;
            };
            if !k.targets.iter().any(|d| d == &name) {
                out.push(
                    Finding::new(
                        &cake_diag::catalog::language::UNKNOWN_TARGET,
                        k.span,
                        format!("schedule `{}` does not declare target {name}", k.name),
                    )
                    .expected(k.targets.join(", "))
                    .actual(&name)
                    .help("add it to @cake.schedule(targets=[...]) if the schedule supports it"),
                );
                continue;
            }
            let facts = KernelFacts::new(k, t);
            let mut found = cake_verify::verify_with(k, &facts);
            if !found.iter().any(|f| f.is_error()) {
                // Coverage: what the lowering would refuse, decided without generating code.
                for e in cake_lower::lowerable(k, &facts) {
                    found.push(
                        Finding::new(
                            &cake_diag::catalog::coverage::NOT_LOWERED,
                            e.span,
                            format!("{}: {}", t.name, e.message),
                        )
                        // The target as data: what `unbuildable_targets` reads.
                        .subject("target", t.name),
                    );
                }
            }
            if k.targets.len() > 1 && target.is_none() {
                for f in &mut found {
                    f.message = format!("[{}] {}", t.name, f.message);
                }
            }
            out.extend(found);
            kernel_facts.push(facts);
        }
        all_facts.push(kernel_facts);
    }
    Session {
        findings: out,
        facts: all_facts,
    }
}

/// The cost model's hints for every kernel of a checked file at `shape`, as performance
/// findings, for `target` or each target a kernel declares. A target without calibration gets
/// one `CAKE-V003` note per kernel instead. `calibration` (default: the target's committed
/// table measured on `gpu`'s card, else its default table) applies to the targets it was made
/// for. Shape errors, and a `gpu` none of a target's tables was measured on, are returned, not
/// reported.
pub fn cost_findings(
    checked: &Checked,
    target: Option<&str>,
    shape: &std::collections::BTreeMap<String, i64>,
    calibration: Option<&cake_cost::Calibration>,
    gpu: Option<&str>,
) -> Result<Vec<Finding>, cake_cost::CostError> {
    let mut out = Vec::new();
    for (ki, k) in checked.kernels.iter().enumerate() {
        let targets: Vec<String> = match target {
            Some(t) => vec![t.to_string()],
            None => k.targets.clone(),
        };
        for name in targets {
            let Ok(t) = cake_target::lookup(&name) else {
                continue;
            };
            let cal = match calibration.filter(|c| c.meta.target == t.name) {
                Some(c) => c.clone(),
                None => match gpu.map_or_else(
                    || cake_cost::Calibration::builtin(t),
                    |g| cake_cost::Calibration::builtin_for(t, g),
                ) {
                    Ok(c) => c,
                    Err(e @ cake_cost::CostError::NoCalibration { .. }) => {
                        out.push(Finding::new(
                            &cake_diag::catalog::coverage::NO_CALIBRATION,
                            k.span,
                            format!(
                                "no calibration for {}: the cost model gives `{}` no estimate and no hints",
                                t.name, k.name
                            ),
                        ).note(e.to_string()));
                        continue;
                    }
                    Err(e) => return Err(e),
                },
            };
            let est = checked.estimate(ki, t, shape, &cal)?;
            out.extend(est.findings());
        }
    }
    Ok(out)
}

/// The declared targets a schedule cannot be built for, from a check's findings: each target a
/// not-lowered note (`CAKE-V001`, whose subject is its target) names, with
/// how many constructs it cannot lower, in target order. Empty means `cake build` succeeds for
/// every target checked (once there are no errors). Every front door reports it the same way:
/// `cake check` exits 1 on it, MCP and Python return it.
pub fn unbuildable_targets(findings: &[cake_diag::Finding]) -> Vec<(&'static str, usize)> {
    cake_target::TARGETS
        .iter()
        .map(|t| {
            let n = findings
                .iter()
                .filter(|f| {
                    f.code == cake_diag::catalog::coverage::NOT_LOWERED.code
                        && f.subject
                            .as_ref()
                            .is_some_and(|s| s.kind == "target" && s.name == t.name)
                })
                .count();
            (t.name, n)
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}
