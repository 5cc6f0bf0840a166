//! Lowering and building one checked file: what `cake lower`, `cake build`, `cake test` and the
//! Python package's `cake.compile` all do after the check, so they agree on which findings stop
//! a build and on what a build writes.

use crate::Checked;
use cake_diag::Finding;
use std::path::{Path, PathBuf};

/// Why a build stopped.
#[derive(Debug)]
pub enum BuildError {
    /// The schedule has errors (front-end, verifier, or a construct the lowering does not cover
    /// for this target); every finding of the check is in the `Checked`.
    Findings(Box<Checked>),
    /// The target name is unknown.
    Target(String),
    /// No CUDA toolchain, or a file could not be written.
    Tool(String),
    /// The generated CUDA did not compile: a bug in Cake, not in the schedule.
    Codegen { kernel: String, log: String },
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Findings(c) => {
                let n = c.findings.iter().filter(|f| f.is_error()).count();
                write!(f, "{}: {n} error(s) in the schedule", c.file.name)
            }
            BuildError::Target(e) | BuildError::Tool(e) => f.write_str(e),
            BuildError::Codegen { kernel, log } => write!(
                f,
                "the CUDA generated for kernel `{kernel}` did not compile; this is a bug in Cake, please report it with the schedule\n{log}"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Check `bytes` for `target` and lower every kernel. What cannot be lowered is an error here
/// (it is only a coverage note for `cake check`).
pub fn lower(
    name: &str,
    bytes: &[u8],
    target: &str,
) -> Result<(Checked, Vec<cake_lower::Lowered>), BuildError> {
    let t = cake_target::lookup(target).map_err(|e| BuildError::Target(e.to_string()))?;
    let mut checked = crate::check(name, bytes, Some(target));
    for f in &mut checked.findings {
        if f.code == cake_diag::catalog::coverage::NOT_LOWERED.code {
            f.severity = cake_diag::Severity::Error;
        }
    }
    if checked.has_errors() {
        return Err(BuildError::Findings(Box::new(checked)));
    }
    let mut out = Vec::new();
    for ki in 0..checked.kernels.len() {
        // Each kernel is lowered once, here, with the facts the check verified it with (the
        // check asked only whether it can be lowered).
        let lowered = match checked.facts_for(ki, t.name) {
            Some(kf) => cake_lower::lower_with(&checked.kernels[ki], kf, &checked.file),
            None => cake_lower::lower(&checked.kernels[ki], &checked.file, t),
        };
        match lowered {
            Ok(l) => out.push(l),
            Err(errors) => {
                // The check's coverage rule makes this unreachable; report rather than panic.
                checked.findings.extend(errors.into_iter().map(|e| {
                    Finding::new(
                        &cake_diag::catalog::coverage::NOT_LOWERED,
                        e.span,
                        e.message,
                    )
                }));
                return Err(BuildError::Findings(Box::new(checked)));
            }
        }
    }
    Ok((checked, out))
}

/// One built kernel: the files written into the output directory and the ptxas report.
#[derive(Clone, Debug)]
pub struct BuiltKernel {
    pub name: String,
    pub cu: PathBuf,
    pub cubin: PathBuf,
    pub launch_json: PathBuf,
    pub launch: cake_lower::LaunchMeta,
    pub resources: Vec<cake_toolchain::KernelResources>,
    /// Whether the cubin came from the build cache.
    pub cached: bool,
}

/// A successful build: the check (warnings and notes only) and the kernels. `findings` holds the
/// check's findings plus those drawn from the ptxas reports (spills, ignored register budgets,
/// serialised wgmma), which may include errors.
pub struct Built {
    pub checked: Checked,
    pub kernels: Vec<BuiltKernel>,
    pub findings: Vec<Finding>,
}

impl Built {
    pub fn has_errors(&self) -> bool {
        self.findings.iter().any(|f| f.is_error())
    }
}

/// Check, lower and compile every kernel of a schedule for `target` into `out`:
/// `<kernel>.{cu,cubin,launch.json,resources.json}`.
pub fn build(name: &str, bytes: &[u8], target: &str, out: &Path) -> Result<Built, BuildError> {
    build_with(name, bytes, target, out, false)
}

/// `build`, optionally embedding the target's PTX (`embed_ptx`): the image is then
/// `<kernel>.fatbin` with the target's machine code and PTX, which a later GPU runs through the
/// driver's JIT. Refused for targets whose PTX is not forward compatible (the `a` targets).
pub fn build_with(
    name: &str,
    bytes: &[u8],
    target: &str,
    out: &Path,
    embed_ptx: bool,
) -> Result<Built, BuildError> {
    build_opts(
        name,
        bytes,
        target,
        out,
        &BuildOptions {
            embed_ptx,
            timeline: false,
        },
    )
}

/// How `build_opts` compiles.
#[derive(Clone, Copy, Debug, Default)]
pub struct BuildOptions {
    /// Embed the target's PTX beside its machine code (sm_80, sm_89).
    pub embed_ptx: bool,
    /// Compile the timeline stamps in (docs/timeline.md): the kernel takes the stamp buffer and
    /// its length as two more arguments, which the launch metadata lists.
    pub timeline: bool,
}

/// `build` with [`BuildOptions`].
pub fn build_opts(
    name: &str,
    bytes: &[u8],
    target: &str,
    out: &Path,
    opts: &BuildOptions,
) -> Result<Built, BuildError> {
    let embed_ptx = opts.embed_ptx;
    let t = cake_target::lookup(target).map_err(|e| BuildError::Target(e.to_string()))?;
    if embed_ptx && !t.ptx_forward_compatible() {
        return Err(BuildError::Target(format!(
            "{target}'s PTX ({}) runs only on {} GPUs, so embedding it gains nothing; --embed-ptx is for targets whose PTX later GPUs can JIT (sm_80, sm_89)",
            t.compute, t.name
        )));
    }
    let image = if embed_ptx {
        cake_toolchain::Image::FatbinWithPtx
    } else {
        cake_toolchain::Image::Cubin
    };
    let (checked, lowered) = lower(name, bytes, target)?;
    let tc = cake_toolchain::Toolchain::discover().map_err(|e| BuildError::Tool(e.to_string()))?;
    let mut findings = checked.findings.clone();
    let mut kernels = Vec::new();
    for (k, mut l) in checked.kernels.iter().zip(lowered) {
        // The kernel's name made a file name that stays in `out`; two kernels whose names
        // make one stem would overwrite each other's files.
        let stem = cake_lower::file_stem(&l.launch.kernel);
        if kernels.iter().any(|b: &BuiltKernel| b.name == stem) {
            return Err(BuildError::Tool(format!(
                "two kernels would write {stem}.cu in {}; rename one",
                out.display()
            )));
        }
        l.launch.cubin = format!("{stem}.{}", image.extension());
        if opts.timeline {
            l.cuda = cake_lower::timeline_source(&l.cuda);
            cake_lower::enable_timeline(&mut l.launch);
        }
        let build = tc
            .compile_cached_image(&l.cuda, t, image, out, &stem)
            .map_err(|e| match e {
                cake_toolchain::ToolchainError::Compile { log } => BuildError::Codegen {
                    kernel: stem.clone(),
                    log,
                },
                other => BuildError::Tool(other.to_string()),
            })?;
        let launch_json = out.join(format!("{stem}.launch.json"));
        let launch = serde_json::to_string_pretty(&l.launch).expect("JSON");
        let resources = serde_json::to_string_pretty(&build.resources).expect("JSON");
        for (path, text) in [
            (launch_json.clone(), launch),
            (out.join(format!("{stem}.resources.json")), resources),
        ] {
            std::fs::write(&path, text + "\n")
                .map_err(|e| BuildError::Tool(format!("cannot write {}: {e}", path.display())))?;
        }
        for r in &build.resources {
            findings.extend(resource_findings(k, r, &l.in_flight_writes));
        }
        kernels.push(BuiltKernel {
            name: stem.clone(),
            cu: out.join(format!("{stem}.cu")),
            cubin: build.cubin,
            launch_json,
            launch: l.launch,
            resources: build.resources,
            cached: build.cached,
        });
    }
    Ok(Built {
        checked,
        kernels,
        findings,
    })
}

/// Problems in the ptxas report, placed on the schedule's own lines. `in_flight_writes`: where
/// the lowering saw the schedule write an MMA accumulator while another MMA was in flight
/// (`cake_lower::Lowered`), the schedule's own cause of a serialisation.
pub fn resource_findings(
    k: &cake_ir::Kernel,
    r: &cake_toolchain::KernelResources,
    in_flight_writes: &[cake_lower::InFlightWrite],
) -> Vec<Finding> {
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
            // Whose the cause is. Cake derives every wgmma wait and fence on sm_90a, so reads
            // of an accumulator in flight are the compiler's; the schedule's are its register
            // budget and the accumulator writes it orders between another MMA and its wait.
            let registers = note.contains("insufficient register resources");
            let (site, cause) = if registers {
                (*first, "cause: the schedule — the role's fragments leave ptxas too few registers for the wgmma pipeline: give the role more registers (`regs=`) or shrink its fragments".to_string())
            } else if let Some(w) = in_flight_writes.first() {
                (w.at, "cause: the schedule — this statement writes an MMA accumulator while another MMA (labelled) is in flight, which ptxas does not allow inside a wgmma pipeline stage: write it before that MMA is issued or after it is read".to_string())
            } else {
                (*first, "cause: the compiler — Cake places every wgmma wait and fence on sm_90a and the schedule writes no accumulator while another MMA is in flight, so this is a lowering bug: please report it with the schedule".to_string())
            };
            let mut f = Finding::new(
                &cake_diag::catalog::performance::WGMMA_SERIALIZED,
                site,
                format!("ptxas serialised the wgmma instructions ({code}): the MMAs no longer overlap the code around them; {cause}"),
            )
            .note(note.trim_start_matches("ptxas info    : ").to_string());
            let in_flight = in_flight_writes
                .first()
                .filter(|_| !registers)
                .map(|w| w.mma);
            for m in &mmas {
                if Some(*m) == in_flight {
                    f = f.label(*m, "in flight while the accumulator is written");
                } else if *m != site {
                    f = f.label(*m, "an MMA into registers");
                }
            }
            out.push(f);
        }
    }
    if r.spill_stores > 0 || r.spill_loads > 0 {
        // The role whose fragments hold the most registers per thread is the usual cause.
        let regs_of = |f: cake_ir::FragId| k.fragment_registers(f);
        let heaviest = k
            .roles
            .iter()
            .map(|(rid, _)| (rid, k.role_fragment_registers(rid)))
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
                .max_by_key(|(fid, _)| (regs_of(*fid), std::cmp::Reverse(fid.index())))
                .map(|(fid, _)| (rid, total, fid))
        });
        let f = match site {
            Some((rid, total, fid)) => {
                let role = &k.roles[rid];
                let names: Vec<String> = k
                    .fragments
                    .iter()
                    .filter(|(_, f)| f.role == rid)
                    .map(|(fid, f)| format!("`{}` ({} regs)", f.name, regs_of(fid)))
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
