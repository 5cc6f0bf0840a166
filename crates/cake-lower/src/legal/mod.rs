//! Lowerability: whether a kernel can be lowered for its target, decided without generating
//! code. [`lowerable`] returns the "not lowered" findings (`Unsupported`) exactly as
//! [`lower_with`](crate::lower_with) would report them — same messages, spans and order — so
//! `cake check` need not run the code generator.
//!
//! Every legality condition is a function here (or, for what one MMA family decides, a method of
//! its backend) returning `Result<_, String>`; the pass and the emitter both call it, the pass to
//! report, the emitter to know what it may emit (and, defensively, to report as well). What the
//! pass adds is the context those conditions depend on, rebuilt from the IR and the facts: the
//! role being walked, the pipelined loops around a statement, the row reductions already
//! computed in the block, the column loads issued early.
//!
//! Split by job: this file holds the plan (register layouts, inferred once) and the entry;
//! `layout` the layouts themselves and their inference; `expr` the expression conditions and the
//! analyses both sides share; `ops` the conditions of each operation; `walk` the pass's walk of
//! the kernel in the emitter's order.

mod expr;
mod layout;
mod ops;
mod rows;
mod walk;

pub(crate) use expr::{
    cast_to_16bit, iota_index, reduction_operands, reduction_tracks_index, replica_sync_under_vote,
    vote_site, IotaIndex, ReductionTile, Reductions, Scope, SYNCED_WORK,
};
pub(crate) use layout::{FragLayout, RowGeom, Site, ROW_CHUNK};
pub(crate) use ops::*;
pub(crate) use rows::{
    global_scatter_add, role_reduces_across_warps, row_loads, row_reduction, row_store, RowLoad,
};
pub(crate) use walk::Checker;

use crate::mma::MmaBackend;
use crate::Unsupported;
use cake_diag::Span;
use cake_ir::*;
use cake_target::{MmaFamily, Target};
use std::collections::HashMap;

/// What the legality pass decides once for the emitter: the register layout of every fragment it
/// could place, and what it could not (in program order).
pub(crate) struct Plan {
    pub(crate) frag_layouts: HashMap<FragId, FragLayout>,
    /// Tile loads a row reduction reads without a fragment, placed like the per-row fragment the
    /// reduction is assigned to (`Planner::infer_reduced_load_layouts`).
    pub(crate) load_layouts: HashMap<ExprId, FragLayout>,
    pub(crate) errors: Vec<Unsupported>,
}

impl Plan {
    /// Infer the register layouts of `k`'s fragments for `backend`'s family.
    pub(crate) fn new(k: &Kernel, kf: &KernelFacts, backend: &dyn MmaBackend) -> Plan {
        let mut p = Planner {
            k,
            kf,
            frag_layouts: HashMap::new(),
            load_layouts: HashMap::new(),
            errors: Vec::new(),
        };
        // Row layouts first: the MMA families' per-row vector inference leaves placed
        // fragments alone, and an MMA that claims a row-layout fragment is reported after.
        p.infer_row_layouts();
        backend.plan_layouts(&mut p);
        p.infer_accumulator_copies();
        p.check_row_layouts_kept();
        p.infer_reduced_load_layouts();
        Plan {
            frag_layouts: p.frag_layouts,
            load_layouts: p.load_layouts,
            errors: p.errors,
        }
    }
}

/// Layout inference in progress (what a backend's `plan_layouts` fills in).
pub(crate) struct Planner<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) kf: &'a KernelFacts,
    pub(crate) frag_layouts: HashMap<FragId, FragLayout>,
    pub(crate) load_layouts: HashMap<ExprId, FragLayout>,
    pub(crate) errors: Vec<Unsupported>,
}

impl Planner<'_> {
    pub(crate) fn unsupported(&mut self, span: Span, message: impl Into<String>) {
        record(&mut self.errors, span, message);
    }
}

/// Record a not-lowered finding once: unrolled and duplicated code (compile-time loops, double
/// buffering) reaches the same construct more than once.
pub(crate) fn record(errors: &mut Vec<Unsupported>, span: Span, message: impl Into<String>) {
    let u = Unsupported {
        span,
        message: message.into(),
    };
    if !errors.contains(&u) {
        errors.push(u);
    }
}

/// The message of an operation (named as the IR spells it) the target's MMA family has no
/// instruction for.
pub(crate) fn not_lowered_message(op: &str, target: &Target) -> String {
    format!("`{op}` is not lowered for {} yet", target.name)
}

/// The backend of an MMA family: the one place the family is tested. No `_` arm, so a new
/// family must choose one.
pub(crate) fn family_backend(family: MmaFamily) -> &'static dyn MmaBackend {
    match family {
        MmaFamily::MmaSync => &crate::mma::MmaSync,
        MmaFamily::Wgmma => &crate::mma::Wgmma,
        MmaFamily::Tcgen05 => &crate::mma::Tcgen05,
    }
}

/// The target's backend, or why this lowering has no code generator for it.
pub(crate) fn backend_for(target: &Target) -> Result<&'static dyn MmaBackend, String> {
    let backend = family_backend(target.mma);
    if !backend.generates_for(target) {
        return Err(format!(
            "code generation for {} ({}) is not implemented yet; sm_80, sm_89, sm_120a and sm_121a (mma.sync), sm_90a (wgmma), sm_100a and sm_103a (tcgen05) have it",
            target.name,
            target.mma.name()
        ));
    }
    Ok(backend)
}

/// The not-lowered findings of `k` on the facts' target, exactly as [`crate::lower_with`]
/// reports them, without generating code.
pub fn lowerable(k: &Kernel, facts: &KernelFacts) -> Vec<Unsupported> {
    let backend = match backend_for(facts.target) {
        Ok(b) => b,
        Err(message) => {
            return vec![Unsupported {
                span: k.span,
                message,
            }]
        }
    };
    let plan = Plan::new(k, facts, backend);
    let mut errors = kernel_problems(k);
    for u in Checker::new(k, facts, &plan, backend).run() {
        record(&mut errors, u.span, u.message);
    }
    errors
}

/// What the lowering cannot do with the schedule's own options, whatever its body.
pub(crate) fn kernel_problems(k: &Kernel) -> Vec<Unsupported> {
    let mut errors = Vec::new();
    if k.persistent && k.ctas_per_sm() > 1 {
        record(
            &mut errors,
            k.span,
            format!(
                "`ctas_per_sm={}` on a persistent schedule is not lowered: its grid is one CTA per SM",
                k.ctas_per_sm()
            ),
        );
    }
    errors
}

/// An operation only some families have an instruction for (`CpAsync`, `Ldmatrix`, `Commit`,
/// the TMEM transfers) is lowered only by a backend that lists it.
pub(crate) fn family_op(backend: &dyn MmaBackend, op: &Op, target: &Target) -> Result<(), String> {
    match ops::family_op_name(op) {
        Some(name) if !backend.family_ops().contains(&name) => {
            Err(not_lowered_message(name, target))
        }
        _ => Ok(()),
    }
}

/// Where a role region's first top-level wait is (its length when it has none): the region's
/// row reductions' column loads are issued there, after the copies that precede it.
pub(crate) fn first_wait(k: &Kernel, body: &[StmtId]) -> usize {
    body.iter()
        .position(|&s| matches!(k.stmts[s], Stmt::Op(Op::Wait { .. })))
        .unwrap_or(body.len())
}
