//! The MMA families as backends. Everything that differs between mma.sync (sm_80 … sm_121a),
//! wgmma (sm_90a) and tcgen05 (sm_100a, sm_103a) is a method of [`MmaBackend`]; the emitter
//! holds the backend `lower` picked from the target's MMA family and asks it at each of those
//! points, never testing the family itself. Adding a family is one file here, one arm in
//! `legal::backend_for`'s match, and the target's data — and the compiler lists every method to
//! decide, its legality (`plan_layouts`, `check_mma`, `family_ops`, `check_family_op`,
//! `double_buffered`) as well as its emission.
//!
//! Backends are zero-sized: their per-kernel state (instruction variants used, MMA groups in
//! flight) lives in [`MmaState`] inside the emitter, so a method borrows the emitter mutably and
//! the backend immutably without a fight (`let b = e.backend; b.method(e, …)`).

mod mma_sync;
mod tcgen05;
mod wgmma;

pub(crate) use mma_sync::MmaSync;
pub(crate) use tcgen05::Tcgen05;
pub(crate) use wgmma::Wgmma;

use crate::emit::*;
use crate::legal::{self, Checker, Planner};
use cake_diag::Span;
use cake_ir::*;
use cake_target::Target;

/// One `lm.mma` as the emitter hands it to the backend.
pub(crate) struct MmaCall<'o> {
    pub(crate) acc: &'o Operand,
    pub(crate) a: &'o Operand,
    pub(crate) b: &'o Operand,
    pub(crate) accumulate: ExprId,
    pub(crate) release: Option<BarrierId>,
    /// The role's replicas issue it in turns (`turns=True`).
    pub(crate) turns: bool,
    pub(crate) sp: Span,
}

/// What backends record while the body is emitted, read back for the prelude and for ordering.
/// Cloned at a run-time branch, each path emitted from the same state, then joined.
#[derive(Default, Clone)]
pub(crate) struct MmaState {
    pub(crate) mma_sync: mma_sync::State,
    pub(crate) wgmma: wgmma::State,
}

impl MmaState {
    /// After a run-time branch or a loop (`other`: the state at the end of the other path).
    pub(crate) fn join(&mut self, other: MmaState) {
        self.mma_sync.join(other.mma_sync);
        self.wgmma.join(other.wgmma);
    }
}

/// The points where MMA families differ. Defaults are what a family without the feature does:
/// nothing. The first group is legality — what the legality pass (`crate::legal`) asks and the
/// emitter asks again through the same functions; the rest is emission.
pub(crate) trait MmaBackend: Sync {
    /// Whether this generator is written and tested for `target` (every target of the family
    /// unless the backend says otherwise).
    fn generates_for(&self, _target: &Target) -> bool {
        true
    }

    /// Register layouts of the fragments this family's MMAs and loads use; what it cannot
    /// place is recorded as not lowered. Runs once per lowering, for the plan.
    fn plan_layouts(&self, p: &mut Planner);

    /// The legality pass at an `lm.mma`: what `mma` would report, in the same order.
    fn check_mma(&self, c: &mut Checker, m: &MmaCall);

    /// The operations only some families have (as the IR spells them: `CpAsync`, `Ldmatrix`,
    /// `Commit`, `TmemLoad`, `TmemStore`, `TmemCopy`) this family lowers; the others are
    /// reported not lowered for the target without asking the backend.
    fn family_ops(&self) -> &'static [&'static str] {
        &[]
    }

    /// The legality pass at one of the `family_ops`: what its emission would report.
    fn check_family_op(&self, _c: &mut Checker, _op: &Op, _sp: Span) {}

    /// The wait and the MMA of a pipelined loop body that fits the family's
    /// double-buffered-accumulator pattern (the loop is then `double_buffered_loop`); `None`
    /// (the default) when there is none.
    fn double_buffered(
        &self,
        _k: &Kernel,
        _body: &Block,
        _p: PipelineId,
    ) -> Option<(StmtId, StmtId)> {
        None
    }

    /// The family's prelude sections (helpers and one wrapper per instruction variant used),
    /// after the target's common ones.
    fn prelude(&self, e: &Emitter, out: &mut String);

    /// Inside a role made of warps (not warpgroups): the per-lane coordinates the family's
    /// register tiles need.
    fn warp_role_lanes(&self, _e: &mut Emitter) {}

    /// Before any operation of a role (wgmma: retire in-flight groups whose accumulator the
    /// operation reads or overwrites).
    fn before_op(&self, _e: &mut Emitter, _op: &Op, _sp: Span) {}

    /// Before a run-time `if` or a loop of a role, statement `s` (wgmma: retire, where the wait
    /// dominates every path, the in-flight groups whose accumulator an operation inside reads).
    fn before_control(&self, _e: &mut Emitter, _s: StmtId) {}

    /// After an mbarrier wait of `role` (tcgen05: order the role's tcgen05 work after it).
    fn after_wait(&self, _e: &mut Emitter, _role: RoleId) {}

    /// Before an arrival of `role` (tcgen05: order the role's tcgen05 work before it).
    fn before_arrive(&self, _e: &mut Emitter, _role: RoleId) {}

    /// `lm.mma`.
    fn mma(&self, e: &mut Emitter, m: &MmaCall);

    /// A pipelined loop for which `double_buffered` gave (wait, MMA), emitted whole.
    fn double_buffered_loop(
        &self,
        _e: &mut Emitter,
        _lp: &RangeLoop,
        _p: PipelineId,
        _pair: (StmtId, StmtId),
        _body: &Block,
    ) {
    }

    /// Whether the family lowers the MMA scheduling options: a loop whose last MMA is deferred
    /// (`defer=True`) and MMAs whose role's replicas take turns (`turns=True`).
    fn lowers_mma_scheduling(&self) -> bool {
        false
    }

    /// A pipelined loop whose last MMA is deferred (`cake_ir::sync::deferred_mma` gave its
    /// parts), emitted whole; only called when `lowers_mma_scheduling`.
    fn deferred_loop(
        &self,
        _e: &mut Emitter,
        _lp: &RangeLoop,
        _p: PipelineId,
        _parts: cake_ir::sync::DeferredMma,
        _body: &Block,
    ) {
    }

    /// Around a range loop: `emit` writes the loop itself; the family adds what must precede or
    /// follow it (wgmma: releases deferred by one iteration, retiring the loop's MMA groups).
    fn range_loop(
        &self,
        e: &mut Emitter,
        _pipeline: Option<PipelineId>,
        _body: &Block,
        emit: &mut dyn FnMut(&mut Emitter),
    ) {
        emit(e)
    }

    // The `family_ops`, called only for those the family lists.

    /// `lm.ldmatrix(frag, view)`.
    fn ldmatrix(&self, _e: &mut Emitter, _dst: FragId, _src: &ViewRef, _sp: Span) {}

    /// `lm.commit(barrier)`.
    fn commit(&self, _e: &mut Emitter, _barrier: BarrierId, _sp: Span) {}

    /// `lm.tmem_load(frag, region)` (or `region.cols(...)`).
    fn tmem_load(&self, _e: &mut Emitter, _dst: FragId, _src: &TmemRef, _sp: Span) {}

    /// `lm.tmem_store(region, value)` (or `region.cols(...)`).
    fn tmem_store(&self, _e: &mut Emitter, _dst: &TmemRef, _value: ExprId, _sp: Span) {}

    /// `lm.tmem_copy(region, view)`.
    fn tmem_copy(&self, _e: &mut Emitter, _dst: &TmemRef, _src: &ViewRef, _sp: Span) {}
}

/// The legality pass at a K-major operand tile read through a shared-memory descriptor (what
/// `Emitter::wgmma_operand` evaluates): the condition, then the stage and the first row.
/// `false` when it is not lowered (the MMA stops there).
pub(crate) fn check_sw128_operand(c: &mut Checker, v: &ViewRef, sp: Span) -> bool {
    if let Err(m) = legal::sw128_operand(&c.k.views[v.view]) {
        c.unsupported(sp, m);
        return false;
    }
    c.view_base(v);
    c.rows_start(v);
    true
}

/// An N-major operand (a whole `(K, N)` view as stored, 128B swizzle, N in 64-column panels):
/// the stride between its panels along N (the view's K rows × a panel row's bytes), which
/// wgmma and tcgen05 descriptors both take as their leading byte offset. Groups of 8 K rows
/// are 8 × 128 = 1024 bytes apart (the stride byte offset).
pub(crate) fn n_major_panel_stride(view: &View) -> u32 {
    view.shape[0] * view.panel_cols() * view.dtype.bytes()
}

impl Emitter<'_> {
    /// Byte address (expression) of an N-major operand at k-step `kk`: 16 rows of its panels
    /// further per k-step of 16 (`n_major_panel_stride` gives the rest of the descriptor).
    fn n_major_operand(&mut self, v: &ViewRef, kk: u32, k_step: u32) -> String {
        let view = &self.k.views[v.view];
        let off = kk * k_step * view.panel_cols() * view.dtype.bytes();
        format!("{} + {off}", self.view_base(v))
    }

    /// Byte address (expression) of the K-major operand tile at k-step `kk` of a 2-D view with
    /// 128B swizzle: what a wgmma or tcgen05 shared-memory descriptor starts at.
    fn wgmma_operand(&mut self, v: &ViewRef, kk: u32, k_step: u32, sp: Span) -> Option<String> {
        let view = self.k.views[v.view].clone();
        if let Err(m) = legal::sw128_operand(&view) {
            self.unsupported(sp, m);
            return None;
        }
        let elem = view.dtype.bytes();
        let panel_cols = view.panel_cols();
        let k_elem = kk * k_step;
        let panel = k_elem / panel_cols;
        let within = (k_elem % panel_cols) * elem;
        let rows_total = view.shape[0];
        let base = self.view_base(v);
        let row_off = match v.rows {
            Some((start, _)) => format!(" + ({}) * {}", self.ix(start), panel_cols * elem),
            None => String::new(),
        };
        let off = panel as u64 * rows_total as u64 * (panel_cols * elem) as u64 + within as u64;
        Some(format!("{base} + {off}{row_off}"))
    }
}

/// The conditions of statement `s` and of the run-time `if`s inside it.
pub(crate) fn nested_conditions(k: &Kernel, s: StmtId, out: &mut Vec<ExprId>) {
    match &k.stmts[s] {
        Stmt::Op(_) => {}
        Stmt::Role { body, .. } | Stmt::Loop { body, .. } | Stmt::Ahead { body, .. } => {
            body.iter().for_each(|&t| nested_conditions(k, t, out))
        }
        Stmt::If {
            cond,
            then_body,
            else_body,
        } => {
            out.push(*cond);
            then_body
                .iter()
                .chain(else_body)
                .for_each(|&t| nested_conditions(k, t, out));
        }
    }
}

/// The operations of statement `s` and of every block nested in it, in program order.
pub(crate) fn nested_ops<'k>(k: &'k Kernel, s: StmtId, out: &mut Vec<&'k Op>) {
    let block = |b: &Block, out: &mut Vec<&'k Op>| {
        for &t in b {
            nested_ops(k, t, out);
        }
    };
    match &k.stmts[s] {
        Stmt::Op(op) => out.push(op),
        Stmt::Role { body, .. } | Stmt::Loop { body, .. } | Stmt::Ahead { body, .. } => {
            block(body, out)
        }
        Stmt::If {
            then_body,
            else_body,
            ..
        } => {
            block(then_body, out);
            block(else_body, out);
        }
    }
}
