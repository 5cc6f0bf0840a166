//! Lowering: a verified `Kernel` → CUDA C++ with inline PTX for one exact target, and the launch
//! metadata any runtime needs to call it. Output is deterministic: the same IR and target always
//! produce the same bytes.

mod emit;
mod launch;
mod legal;
mod mma;
mod prelude;

use cake_diag::{SourceFile, Span};
use cake_ir::{Kernel, KernelFacts};
use cake_target::Target;

pub use emit::timeline::{
    enable_timeline, timeline_points, timeline_source, TIMELINE_LEN, TIMELINE_TENSOR,
};
pub use launch::{Arg, Grid, LaunchMeta, ScalarMeta, StateMeta, TensorMeta, Timeline};
pub use legal::lowerable;

thread_local! {
    static LOWERINGS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many kernels this thread has lowered: lets a test prove a compile session lowers each
/// kernel once.
pub fn lowerings_on_this_thread() -> u64 {
    LOWERINGS.with(|n| n.get())
}

/// The file stem of a kernel's outputs (`<stem>.cu`, `.cubin`, `.launch.json`): the kernel's
/// name with every character but letters, digits, `_` and `-` replaced by `_`, so no name reaches
/// outside the output directory (`../`, `/abs`) or hides a file (`.x`). A Python identifier, as
/// the front-end gives every kernel, is its own stem.
pub fn file_stem(kernel: &str) -> String {
    let stem: String = kernel
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() || stem.starts_with('-') {
        format!("kernel{stem}")
    } else {
        stem
    }
}

/// What lowering produced for one kernel.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The extern "C" symbol of the kernel.
    pub symbol: String,
    pub cuda: String,
    pub launch: LaunchMeta,
    /// Where the schedule writes an MMA accumulator while another MMA group is in flight
    /// (sm_90a): legal, but ptxas then serialises the wgmma instructions (C7515), and
    /// `cake build` names these lines as the cause of CAKE-P002.
    pub in_flight_writes: Vec<InFlightWrite>,
}

/// An accumulator write (`at`) emitted while the group of the MMA at `mma` was in flight.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InFlightWrite {
    pub at: Span,
    pub mma: Span,
}

/// A construct this lowering does not implement for this target yet. The verifier reports these
/// as coverage findings before code generation, so a verified kernel never reaches one.
#[derive(Clone, Debug, PartialEq)]
pub struct Unsupported {
    pub span: Span,
    pub message: String,
}

/// Targets the mma.sync generator is written and tested for. On sm_120a and sm_121a it also
/// takes TMA loads (the sm_90a lowering's); their clusters and block-scaled MMAs are not emitted.
pub const MMA_SYNC_TARGETS: &[&str] = &["sm_80", "sm_89", "sm_120a", "sm_121a"];

/// Whether this lowering has a code generator for `target` at all: the wgmma family (sm_90a),
/// the tcgen05 family (sm_100a / sm_103a) and the mma.sync family on [`MMA_SYNC_TARGETS`]. For
/// other targets every kernel comes back as one `Unsupported`.
pub fn has_code_generator(target: &Target) -> bool {
    legal::family_backend(target.mma).generates_for(target)
}

pub fn lower(
    k: &Kernel,
    file: &SourceFile,
    target: &'static Target,
) -> Result<Lowered, Vec<Unsupported>> {
    lower_with(k, &KernelFacts::new(k, target), file)
}

/// [`lower`] with the kernel's facts already derived (the compile session shares them with the
/// verifier).
pub fn lower_with(
    k: &Kernel,
    facts: &KernelFacts,
    file: &SourceFile,
) -> Result<Lowered, Vec<Unsupported>> {
    LOWERINGS.with(|n| n.set(n.get() + 1));
    let backend = match legal::backend_for(facts.target) {
        Ok(b) => b,
        Err(message) => {
            return Err(vec![Unsupported {
                span: k.span,
                message,
            }])
        }
    };
    // Register layouts are inferred once, by the legality pass's plan; the emitter asks the
    // same conditions the pass does as it goes (`lowerable` returns exactly its findings).
    let plan = legal::Plan::new(k, facts, backend);
    let mut errors = legal::kernel_problems(k);
    match emit::Emitter::new(k, facts, file, backend, &plan).run() {
        Ok(lowered) if errors.is_empty() => Ok(lowered),
        Ok(_) => Err(errors),
        Err(more) => {
            for u in more {
                legal::record(&mut errors, u.span, u.message);
            }
            Err(errors)
        }
    }
}
