//! The verifier: every analysis runs on the typed IR before any code is generated, and every
//! finding of the run is returned. Each rule lives in the module of its category and names its
//! code from the catalog (`cake_diag::catalog`), so `cake explain CODE` documents exactly what
//! is checked here.

mod conformance;
mod consistency;
mod copies;
mod coverage;
mod ctx;
mod decl_labels;
mod explore;
mod index;
mod knock_on;
mod outputs;
mod safety;
mod semantics;
mod sizes;
mod sync_order;

use cake_diag::Finding;
use cake_ir::{Kernel, KernelFacts};
use cake_target::Target;

/// Run every rule for one target.
pub fn verify(k: &Kernel, target: &'static Target) -> Vec<Finding> {
    verify_with(k, &KernelFacts::new(k, target))
}

/// [`verify`] with the kernel's facts already derived (the driver shares them with lowering).
pub fn verify_with(k: &Kernel, facts: &KernelFacts) -> Vec<Finding> {
    let cx = ctx::Ctx::new(k, facts);
    let mut out = Vec::new();
    semantics::check(&cx, &mut out);
    conformance::check(&cx, &mut out);
    safety::check(&cx, &mut out);
    sync_order::check(&cx, &mut out);
    consistency::check(&cx, &mut out);
    copies::check(&cx, &mut out);
    sizes::check(&cx, &mut out);
    outputs::check(&cx, &mut out);
    coverage::check(&cx, &mut out);
    // Interleavings are explored only for schedules that pass every other rule: a broken
    // schedule deadlocks for reasons the other findings already name.
    if !out.iter().any(|f| f.is_error()) {
        explore::check(&cx, &mut out);
    }
    knock_on::mark(&cx, &mut out);
    decl_labels::add(k, &mut out);
    out
}
