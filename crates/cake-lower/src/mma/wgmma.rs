//! The wgmma backend (sm_90a): warpgroup MMAs issued asynchronously in committed groups. What
//! sets it apart is keeping groups in flight — a stage's release can lag one iteration, a
//! double-buffered accumulator lets the next MMA overlap this iteration's epilogue — and
//! retiring them before anything touches their accumulator registers.

use super::{check_sw128_operand, nested_conditions, nested_ops, MmaBackend, MmaCall};
use crate::emit::*;
use crate::legal::{self, Checker, Planner, Scope};
use cake_diag::Span;
use cake_ir::*;
use std::collections::BTreeSet;

pub(crate) struct Wgmma;

/// A committed wgmma group not yet waited for: its accumulator and the C array it writes (one
/// buffer of a double-buffered fragment).
#[derive(Clone, PartialEq)]
struct Group {
    acc: FragId,
    array: String,
    /// The `lm.mma` that committed it.
    sp: Span,
    /// The arrival that releases its stage, made once it has retired (the first MMA and the
    /// deferred MMA of a loop with `defer=True`, whose releases wait for the wait that the
    /// loop's reads need anyway).
    release: Option<String>,
    /// Its `a` operand and the register array holding it, when `a` is in registers: the
    /// tensor cores read those registers until the group retires.
    a_regs: Option<(FragId, String)>,
}

/// What the wgmma backend records while it emits.
#[derive(Default, Clone)]
pub(crate) struct State {
    /// wgmma forms used: (where A comes from, N, input types, `b` N-major), one wrapper each.
    shapes: BTreeSet<(AForm, u32, Inputs, bool)>,
    /// Groups committed and not yet waited for, oldest first: an operation that reads or
    /// overwrites the accumulator of one must first wait for it (and, groups retiring in order,
    /// for every older one) to retire.
    in_flight: Vec<Group>,
    /// The groups after a run-time branch whose paths committed different groups: how many are
    /// newer than a given one is unknown, so a wait retires them all (`wait_group 0`).
    inexact: bool,
    /// Barriers whose release is deferred by one iteration (one group stays in flight).
    deferred_release: Vec<(BarrierId, PipelineId)>,
    /// Inside a double-buffered loop's iteration: releases of the MMAs of its body, made after
    /// the wait that ends the iteration (waiting for them earlier would retire the next
    /// iteration's MMA too, issued before them).
    iteration_end_releases: Option<Vec<String>>,
    /// Emitting the first or the deferred MMA of a loop with `defer=True`: a `release=` is
    /// arrived on when the group retires, not by a wait right after the commit.
    lazy_release: bool,
    /// Emitting a rotated loop's head: the turn its MMA took (`turns=True`) is handed on after
    /// the deferred MMA that follows it, not right after its own commit.
    hold_turn: bool,
    /// The arrival that hands the turn on, held while `hold_turn`.
    held_turn: Option<String>,
    /// Inside a rotated loop's middle: the fragments written since the last wait, with the
    /// array each was written to. The next wait is preceded by an empty asm that reads them (so
    /// nvcc does not sink their computation below it) and by a shared-memory store of a value
    /// computed from them (ptxas keeps a `wgmma.wait_group` after earlier shared-memory stores,
    /// and otherwise hoists it above the whole middle: nothing would overlap).
    pinned: Option<Vec<(FragId, String)>>,
    /// The body stores with `cake_wgmma_order` (the prelude then defines it).
    orders: bool,
}

impl State {
    /// After a run-time branch: what either path may have left in flight.
    pub(crate) fn join(&mut self, other: State) {
        self.shapes.extend(other.shapes);
        if self.in_flight != other.in_flight {
            for g in other.in_flight {
                if !self.in_flight.contains(&g) {
                    self.in_flight.push(g);
                }
            }
            self.inexact = true;
        }
        self.inexact |= other.inexact;
        self.orders |= other.orders;
        if let (Some(mine), Some(theirs)) = (self.pinned.as_mut(), other.pinned) {
            for w in theirs {
                if !mine.contains(&w) {
                    mine.push(w);
                }
            }
        }
    }

    /// Every group has retired: the arrivals that waited for them, to be emitted now.
    #[must_use]
    fn retired(&mut self) -> Vec<String> {
        self.inexact = false;
        self.in_flight.drain(..).filter_map(|g| g.release).collect()
    }
}

impl MmaBackend for Wgmma {
    fn plan_layouts(&self, p: &mut Planner) {
        p.infer_warpgroup_layouts();
    }

    /// The MMA's conditions, then what its emission evaluates: the accumulate flag, and the
    /// operand descriptors of the first k-step (`a`'s, then `b`'s), which stop the MMA when not
    /// lowered.
    fn check_mma(&self, c: &mut Checker, m: &MmaCall) {
        match mma_form(c.k, |f| c.layout(f), m) {
            Err(msg) => c.unsupported(m.sp, msg),
            Ok(None) => {}
            Ok(Some(WgmmaForm::RegisterA { kdim, b, input, .. })) => {
                c.ix(m.accumulate);
                if kdim / input.k() > 0 {
                    check_sw128_operand(c, b, m.sp);
                }
            }
            Ok(Some(WgmmaForm::Shared {
                kdim, a, b, input, ..
            })) => {
                c.ix(m.accumulate);
                if kdim / input.k() > 0 {
                    check_sw128_operand(c, a, m.sp);
                    check_sw128_operand(c, b, m.sp);
                }
            }
        }
    }

    fn double_buffered(&self, k: &Kernel, body: &Block, p: PipelineId) -> Option<(StmtId, StmtId)> {
        cake_ir::sync::double_buffered_mma(k, body, p)
    }

    fn prelude(&self, e: &Emitter, out: &mut String) {
        out.push_str(WGMMA);
        if e.mma.wgmma.orders {
            out.push_str(WGMMA_ORDER);
        }
        for &(a, n, input, b_mn) in &e.mma.wgmma.shapes {
            out.push('\n');
            out.push_str(&wgmma_fn_with(n, input, a, b_mn));
        }
    }

    fn before_op(&self, e: &mut Emitter, op: &Op, sp: Span) {
        e.retire_mmas_before(&[op], &[], "");
        if let (Op::Assign { dst, .. }, Some(_)) = (op, &e.mma.wgmma.pinned) {
            let array = e.frag_name(*dst);
            let pinned = e.mma.wgmma.pinned.as_mut().expect("checked");
            if !pinned.iter().any(|(_, a)| *a == array) {
                pinned.push((*dst, array));
            }
        }
        // What is still in flight now is another accumulator's group: an operation writing the
        // accumulator of some wgmma meanwhile is legal, but ptxas serialises every wgmma for it
        // (C7515). The schedule's order is the cause; `cake build` says so (CAKE-P002).
        if let (Op::Assign { dst, .. }, Some(g)) = (op, e.mma.wgmma.in_flight.last()) {
            let k = e.k;
            let is_acc = k.stmts.iter().any(
                |(_, st)| matches!(st, Stmt::Op(Op::Mma { acc: Operand::Frag(f), .. }) if f == dst),
            );
            if is_acc {
                let g_sp = g.sp;
                e.in_flight_writes
                    .push(crate::InFlightWrite { at: sp, mma: g_sp });
            }
        }
    }

    /// Before a run-time `if` or a loop: the wait for an in-flight group that any operation
    /// inside reads goes here, where it dominates every path (inside, the wait would run on one
    /// path only, or not at all when the loop runs no iteration).
    fn before_control(&self, e: &mut Emitter, s: StmtId) {
        let mut ops = Vec::new();
        nested_ops(e.k, s, &mut ops);
        // A condition reads registers too (a warp vote, `lm.any(s > t)`).
        let mut conds = Vec::new();
        nested_conditions(e.k, s, &mut conds);
        e.retire_mmas_before(&ops, &conds, ", before the branch or loop that reads it");
    }

    fn mma(&self, e: &mut Emitter, m: &MmaCall) {
        e.wgmma(m);
    }

    fn double_buffered_loop(
        &self,
        e: &mut Emitter,
        lp: &RangeLoop,
        p: PipelineId,
        pair: (StmtId, StmtId),
        body: &Block,
    ) {
        e.double_buffered_loop(lp, p, pair, body);
    }

    fn lowers_mma_scheduling(&self) -> bool {
        true
    }

    fn family_ops(&self) -> &'static [&'static str] {
        &["Commit"]
    }

    fn commit(&self, e: &mut Emitter, barrier: BarrierId, sp: Span) {
        e.commit_barrier(barrier, sp);
    }

    fn deferred_loop(
        &self,
        e: &mut Emitter,
        lp: &RangeLoop,
        p: PipelineId,
        parts: cake_ir::sync::DeferredMma,
        body: &Block,
    ) {
        e.deferred_loop(lp, p, parts, body);
    }

    /// A release after wgmma lags one iteration so one MMA group stays in flight; after the
    /// loop, every group of it retires and the last deferred releases arrive.
    fn range_loop(
        &self,
        e: &mut Emitter,
        pipeline: Option<PipelineId>,
        body: &Block,
        emit: &mut dyn FnMut(&mut Emitter),
    ) {
        let k = e.k;
        let deferred: Vec<(BarrierId, PipelineId)> = match pipeline {
            Some(p) => body
                .iter()
                .filter_map(|&s| match &k.stmts[s] {
                    Stmt::Op(Op::Mma {
                        release: Some(b), ..
                    }) if k.barriers[*b].pipeline == Some(p)
                        && cake_ir::sync::defers_release(k, e.kf, body, s) =>
                    {
                        Some((*b, p))
                    }
                    _ => None,
                })
                .collect(),
            None => Vec::new(),
        };
        let has_mma = body.iter().any(|&s| {
            let mut ops = Vec::new();
            nested_ops(k, s, &mut ops);
            ops.iter().any(|op| matches!(op, Op::Mma { .. }))
        });
        for (bar, _) in &deferred {
            e.line(&format!(
                "int {}_pending = -1;  // stage whose release waits for its MMAs to retire",
                c_ident(&k.barriers[*bar].name)
            ));
        }
        let saved = std::mem::replace(&mut e.mma.wgmma.deferred_release, deferred.clone());
        emit(e);
        e.mma.wgmma.deferred_release = saved;
        if has_mma {
            e.line("cake_wgmma_wait<0>();  // every MMA of the loop has retired");
            for arrive in e.mma.wgmma.retired() {
                e.line(&arrive);
            }
        }
        for (bar, _) in &deferred {
            let bn = c_ident(&k.barriers[*bar].name);
            let pending = format!("{bn}_pending >= 0");
            let arrive = e.wgmma_release(*bar, &format!("{bn} + 8 * {bn}_pending"), Some(&pending));
            e.line(&arrive);
        }
    }
}

/// An `lm.mma` wgmma lowers: with `a` in registers or in shared memory, the accumulator's
/// columns, K, the input type, whether `a` in shared memory is M-major (`.T` of a (K, 64) view,
/// read with the instruction's transpose flag for A) rather than K-major (an (M, K) view as
/// stored), and whether `b` is N-major (a (K, N) view as stored, read with the instruction's
/// transpose flag) rather than K-major (`.T` of an (N, K) view).
enum WgmmaForm<'o> {
    RegisterA {
        accf: FragId,
        af: FragId,
        n: u32,
        kdim: u32,
        b: &'o ViewRef,
        b_mn: bool,
        input: Inputs,
    },
    Shared {
        accf: FragId,
        n: u32,
        kdim: u32,
        a: &'o ViewRef,
        a_mn: bool,
        b: &'o ViewRef,
        b_mn: bool,
        input: Inputs,
    },
}

/// An M-major `a`: `.T` of a 2-D (K, 64) view (or of `.rows(start, K)` of one), K a multiple of
/// wgmma's 16, 16-bit, with 128B swizzle: wgmma's 64 rows of M are one 128-byte panel row, so a
/// k-step of 16 is 16 panel rows further. Wider M tiles are stacked along the view's rows, one
/// (K, 64) block per warpgroup (examples/gemm_tn_sm90.py). Returns K.
fn m_major_a(k: &Kernel, av: &ViewRef) -> Result<u32, String> {
    let v = &k.views[av.view];
    let kdim = av
        .rows
        .map(|(_, n)| n)
        .unwrap_or(v.shape.first().copied().unwrap_or(0));
    if v.shape.len() != 2 || v.shape[1] != 64 || !kdim.is_multiple_of(16) {
        return Err(format!(
            "an M-major `a` (`.T` of a view stored (K, M)) is lowered from a (K, 64) view or `.rows(start, K)` of one, K a multiple of 16 (wgmma's M is 64: stack wider tiles along the rows, one (K, 64) block per warpgroup); `{}` is {:?}",
            v.name, v.shape
        ));
    }
    Ok(kdim)
}

/// An N-major `b`: the whole of a 2-D (K, N) view (K a multiple of wgmma's 16), 16-bit, with
/// 128B swizzle, its N in 64-column panels (the view's layout; `legal::sw128_operand`).
fn n_major_b(k: &Kernel, bv: &ViewRef, kdim: u32, n: u32) -> Result<(), String> {
    let v = &k.views[bv.view];
    if bv.rows.is_some() {
        return Err("an N-major `b` (a (K, N) view as stored) is lowered for the whole view; `.rows` of it is not".into());
    }
    if v.shape.len() != 2 || v.shape[0] != kdim || v.shape[1] != n || !kdim.is_multiple_of(16) {
        return Err(format!(
            "an N-major `b` is lowered from a (K, N) view with K = {kdim} (a multiple of 16) and N = {n}; `{}` is {:?}",
            v.name, v.shape
        ));
    }
    Ok(())
}

/// The conditions of a wgmma `lm.mma` (the operand descriptors' are checked per k-step, as they
/// are emitted). `Ok(None)`: nothing is emitted and nothing reported (layout inference already
/// refused the fragments).
fn mma_form<'o>(
    k: &Kernel,
    layout: impl Fn(FragId) -> Option<FragLayout>,
    call: &MmaCall<'o>,
) -> Result<Option<WgmmaForm<'o>>, String> {
    if let (Operand::Frag(accf), Operand::Frag(af), Operand::Smem(bv)) = (call.acc, call.a, call.b)
    {
        let (Some(FragLayout::WgmmaAcc { n }), Some(FragLayout::WgmmaA { k: kdim })) =
            (layout(*accf), layout(*af))
        else {
            return Ok(None);
        };
        let b_mn = !bv.transposed;
        if b_mn {
            n_major_b(k, bv, kdim, n)?;
        }
        let input = Inputs::of(k.fragments[*af].dtype, k.views[bv.view].dtype)?;
        if input.is_fp8() {
            return Err("wgmma with `a` in registers is lowered for 16-bit inputs; an FP8 `a` is read from shared memory (a K-major view)".into());
        }
        return Ok(Some(WgmmaForm::RegisterA {
            accf: *accf,
            af: *af,
            n,
            kdim,
            b: bv,
            b_mn,
            input,
        }));
    }
    let (Operand::Frag(accf), Operand::Smem(av), Operand::Smem(bv)) = (call.acc, call.a, call.b)
    else {
        return Err("on sm_90a, lm.mma is lowered with the accumulator in registers, `b` in shared memory and `a` in shared memory or registers".into());
    };
    let Some(FragLayout::WgmmaAcc { n }) = layout(*accf) else {
        return Ok(None);
    };
    let input = Inputs::of(k.views[av.view].dtype, k.views[bv.view].dtype)?;
    let a_mn = av.transposed;
    if input.is_fp8() && (a_mn || !bv.transposed) {
        return Err(format!(
            "FP8 wgmma reads `a` and `b` K-major (its transpose flags are for 16-bit inputs): pass `a` as an (M, K) view and `b` as `.T` of an (N, K) view; here {} is {}",
            if a_mn { "`a`" } else { "`b`" },
            if a_mn { "M-major (`.T` of a (K, M) view)" } else { "N-major (a (K, N) view as stored)" }
        ));
    }
    let kdim = if a_mn {
        m_major_a(k, av)?
    } else {
        k.views[av.view].shape[1]
    };
    let b_mn = !bv.transposed;
    if b_mn {
        n_major_b(k, bv, kdim, n)?;
    }
    if !kdim.is_multiple_of(input.k()) {
        return Err(format!(
            "wgmma with {} inputs steps K by {}; `a`'s K is {kdim}",
            input.ptx(),
            input.k()
        ));
    }
    Ok(Some(WgmmaForm::Shared {
        accf: *accf,
        n,
        kdim,
        a: av,
        a_mn,
        b: bv,
        b_mn,
        input,
    }))
}

impl Emitter<'_> {
    /// A pipelined loop whose MMA writes a double-buffered accumulator: iteration k+1's wait and
    /// MMA are issued before the rest of iteration k, which reads the other buffer, so the tensor
    /// cores work through the epilogue. Unrolled by two so each buffer is a fixed register array.
    fn double_buffered_loop(
        &mut self,
        lp: &RangeLoop,
        p: PipelineId,
        (wait, mma): (StmtId, StmtId),
        body: &Block,
    ) {
        let (id, var, start, stop, sp) = (lp.id, lp.var, lp.start, lp.stop, lp.sp);
        let k = self.k;
        let Stmt::Op(Op::Mma {
            acc: Operand::Frag(f),
            a,
            b,
            accumulate,
            release,
            turns,
            ..
        }) = k.stmts[mma].clone()
        else {
            return;
        };
        let Stmt::Op(wait_op) = k.stmts[wait].clone() else {
            return;
        };
        let pn = c_ident(&k.pipelines[p].name);
        let fname = c_ident(&k.fragments[f].name);
        let (wsp, msp) = (k.stmts.span(wait), k.stmts.span(mma));
        // Issue one iteration's wait and MMA (into `buf`), for pipeline iteration `it`.
        let issue = |me: &mut Self, it: &str, buf: &str| {
            me.stage_lines(p, &format!("({it})"));
            me.op(&wait_op, wsp);
            me.frag_alias.insert(f, buf.to_string());
            me.wgmma(&MmaCall {
                acc: &Operand::Frag(f),
                a: &a,
                b: &b,
                accumulate,
                release: None,
                turns,
                sp: msp,
            });
            me.frag_alias.remove(&f);
        };
        let open = format!("{{  // {} ({}): double-buffered `{}` — the MMA of iteration k+1 overlaps the rest of iteration k", var, self.loc(sp), k.fragments[f].name);
        self.braced(&open, |me| {
            me.line(&format!("const int {var}_end = {stop};"));
            me.pipes.push((id, p));
            let first = format!("if ({start} < {var}_end) {{  // first iteration's MMA");
            me.braced(&first, |me| {
                issue(me, &format!("{pn}_it"), &format!("{fname}_b0"));
                me.line("cake_wgmma_wait<0>();");
                for arrive in me.mma.wgmma.retired() {
                    me.line(&arrive);
                }
            });
            let pairs = format!(
                "for (int {var}_pair = {start}; {var}_pair < {var}_end; {var}_pair += 2) {{"
            );
            me.braced(&pairs, |me| {
                for (half, (cur, nxt)) in [("b0", "b1"), ("b1", "b0")].into_iter().enumerate() {
                    let open = if half == 1 {
                        format!("if ({var}_pair + 1 < {var}_end) {{")
                    } else {
                        "{".to_string()
                    };
                    me.braced(&open, |me| {
                        me.line(&format!("const int {var} = {var}_pair + {half};"));
                        me.stage_lines(p, &format!("({pn}_it)"));
                        // This iteration's MMA retired before the iteration began; the next one
                        // is issued now and runs while the rest of this iteration reads `cur`.
                        me.braced(&format!("if ({var} + 1 < {var}_end) {{"), |me| {
                            issue(me, &format!("{pn}_it + 1"), &format!("{fname}_{nxt}"))
                        });
                        me.line(&format!("cake_wgmma_fence_regs({fname}_{cur});"));
                        if let Some(bar) = release {
                            let slot = me.barrier_slot(bar);
                            let arrive = me.wgmma_release(bar, &slot, None);
                            me.line(&format!("{arrive}  // release ({})", me.loc(msp)));
                        }
                        me.frag_alias.insert(f, format!("{fname}_{cur}"));
                        me.invalidate_reductions(None);
                        let saved = me.mma.wgmma.iteration_end_releases.replace(Vec::new());
                        for &s in &body[2..] {
                            me.stmt(s);
                        }
                        let releases = std::mem::replace(
                            &mut me.mma.wgmma.iteration_end_releases,
                            saved,
                        );
                        me.invalidate_reductions(None);
                        me.frag_alias.remove(&f);
                        // Nothing stays in flight across the loop's back edge: ptxas cannot
                        // follow a wgmma group through it and would serialise every MMA (C7514).
                        // `wait_group 0`: the next iteration's MMA was committed first, so the
                        // body's own groups retire only with it.
                        me.line("cake_wgmma_wait<0>();  // the next MMA and this iteration's have retired");
                        for arrive in me.mma.wgmma.retired() {
                            me.line(&arrive);
                        }
                        for arrive in releases.unwrap_or_default() {
                            me.line(&arrive);
                        }
                        me.line(&format!("++{pn}_it;"));
                    });
                }
            });
            me.pipes.pop();
        });
    }

    /// A pipelined loop whose last MMA is deferred (`defer=True`), rotated so that iteration j
    /// issues its head (waits and first MMA), then the deferred part (its waits, accumulator
    /// updates and MMA) of iteration j − 1, then its middle, whose first read of the head's
    /// accumulator waits for that group only (`wait_group 1`): the deferred MMA runs under the
    /// middle. The first iteration is peeled (nothing is deferred yet: a run-time `if` there would
    /// make every wait `wait_group 0`), the last deferred part follows the loop, and nothing stays
    /// in flight across the back edge (ptxas would serialise every wgmma, C7514). Both MMAs'
    /// releases are arrived on when their groups retire.
    ///
    /// When the deferred MMA's `a` is a register fragment (P) that the middle writes, the tensor
    /// cores still read the previous P during the middle: the loop keeps two arrays for it and is
    /// unrolled by two, each iteration writing the array the deferred MMA does not read. (With
    /// one array the writes wait for the deferred MMA, and ptxas hoists that wait above the whole
    /// middle so that nothing overlaps; with a copy it coalesces the two arrays and serialises
    /// the wgmmas, C7513.)
    fn deferred_loop(
        &mut self,
        lp: &RangeLoop,
        p: PipelineId,
        parts: cake_ir::sync::DeferredMma,
        body: &Block,
    ) {
        let (id, var, start, stop, sp) = (lp.id, lp.var, lp.start, lp.stop, lp.sp);
        let k = self.k;
        let pn = c_ident(&k.pipelines[p].name);
        let stages = k.pipelines[p].stages;
        let (head, middle, tail) = (
            &body[..parts.head],
            &body[parts.head..parts.tail],
            &body[parts.tail..],
        );
        let tail_at = self.loc(k.stmts.span(body[body.len() - 1]));
        // P, its two arrays and their registers, when the middle writes it: while the deferred
        // MMA may still read it (before anything in the middle reads or writes the deferred
        // accumulator, which retires the MMA first), or when the role's register budget has room
        // for a second array (measured faster: the loop unrolled by two schedules better).
        let buffered = match &k.stmts[body[body.len() - 1]] {
            Stmt::Op(Op::Mma {
                a: Operand::Frag(af),
                acc: Operand::Frag(acc),
                ..
            }) if writes_under_mma(k, middle, *af, *acc)
                || (writes_fragment(k, middle, *af) && self.room_for_second_array(*af)) =>
            {
                match legal::declared_layout(k, *af, self.layout(*af)) {
                    Ok(l @ FragLayout::WgmmaA { .. }) => {
                        let name = self.frag_name(*af);
                        Some((*af, [name.clone(), format!("{name}_next")], l.registers()))
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let lazily = |me: &mut Self, stmts: &[StmtId]| {
            let saved = std::mem::replace(&mut me.mma.wgmma.lazy_release, true);
            for &s in stmts {
                me.stmt(s);
            }
            me.mma.wgmma.lazy_release = saved;
        };
        // Which array of P a part reads or writes (buffer 0 or 1; none without two arrays).
        let use_buffer = |me: &mut Self, buffer: Option<usize>| {
            if let (Some((af, arrays, _)), Some(b)) = (&buffered, buffer) {
                me.frag_alias.insert(*af, arrays[b].clone());
            }
        };
        let drop_buffer = |me: &mut Self| {
            if let Some((af, _, _)) = &buffered {
                me.frag_alias.remove(af);
            }
        };
        // The deferred part of the previous iteration: its stage, phase and loop variable; P
        // from `buffer`.
        let deferred = |me: &mut Self, buffer: Option<usize>| {
            me.line(&format!(
                "const uint32_t {pn}_prev_stage = ({pn}_it - 1) % {stages};"
            ));
            me.line(&format!(
                "const uint32_t {pn}_prev_phase = (({pn}_it - 1) / {stages}) & 1;"
            ));
            me.line(&format!("const int {var}_prev = {var} - 1;"));
            me.braced(
                &format!("{{  // deferred from the previous iteration ({tail_at})"),
                |me| {
                    me.line(&format!("const int {var} = {var}_prev;"));
                    me.line(&format!("(void){var};"));
                    let saved = me.deferred_pipe.replace(p);
                    use_buffer(me, buffer);
                    lazily(me, tail);
                    drop_buffer(me);
                    me.deferred_pipe = saved;
                },
            );
        };
        // Nothing crosses the back edge: the groups still in flight retire, their stages are
        // released.
        let end_of_iteration = |me: &mut Self| {
            if !me.mma.wgmma.in_flight.is_empty() {
                me.pin_before_wait();
                let st = &me.mma.wgmma;
                let arrays: Vec<String> = st.in_flight.iter().map(|g| g.array.clone()).collect();
                me.line("cake_wgmma_wait<0>();  // nothing stays in flight across the back edge");
                for a in arrays.iter().collect::<BTreeSet<_>>() {
                    me.line(&format!("cake_wgmma_fence_regs({a});"));
                }
                for arrive in me.mma.wgmma.retired() {
                    me.line(&arrive);
                }
            }
        };
        // One iteration: `reads` is the P array its deferred part reads (None: the first
        // iteration, nothing deferred yet), `writes` the one its middle writes.
        let iteration = |me: &mut Self, reads: Option<Option<usize>>, writes: Option<usize>| {
            me.stage_lines(p, &format!("{pn}_it"));
            me.invalidate_reductions(None);
            // A turn taken by the head is handed on once the deferred MMA is issued too.
            me.mma.wgmma.hold_turn = reads.is_some();
            lazily(me, head);
            me.mma.wgmma.hold_turn = false;
            if let Some(buffer) = reads {
                deferred(me, buffer);
                if let Some(arrive) = me.mma.wgmma.held_turn.take() {
                    me.line(&arrive);
                }
            }
            me.mma.wgmma.pinned = Some(Vec::new());
            use_buffer(me, writes);
            for &s in middle {
                me.stmt(s);
            }
            drop_buffer(me);
            end_of_iteration(me);
            me.mma.wgmma.pinned = None;
            me.invalidate_reductions(None);
            me.line(&format!("++{pn}_it;"));
        };
        let open = format!(
            "{{  // {var} ({}): the MMA at {tail_at} is deferred — issued in the next iteration, after its first MMA",
            self.loc(sp)
        );
        self.braced(&open, |me| {
            me.line(&format!("const int {var}_end = {stop};"));
            let two = buffered.is_some();
            if let Some((_, arrays, n)) = &buffered {
                me.line(&format!(
                    "uint32_t {}[{n}];  // the other array of `{}`: odd iterations write it while the deferred MMA reads the even one's",
                    arrays[1], arrays[0]
                ));
            }
            me.pipes.push((id, p));
            let (b0, b1) = if two { (Some(0), Some(1)) } else { (None, None) };
            me.braced(&format!("if ({start} < {var}_end) {{  // the first iteration: nothing deferred yet"), |me| {
                me.line(&format!("const int {var} = {start};"));
                iteration(me, None, b0);
            });
            if two {
                // Unrolled by two: iteration start + 1 + 2i writes the second array and reads
                // the first; the next one the other way round.
                me.braced(
                    &format!("for (int {var}_pair = {start} + 1; {var}_pair < {var}_end; {var}_pair += 2) {{"),
                    |me| {
                        me.braced("{", |me| {
                            me.line(&format!("const int {var} = {var}_pair;"));
                            iteration(me, Some(b0), b1);
                        });
                        me.braced(&format!("if ({var}_pair + 1 < {var}_end) {{"), |me| {
                            me.line(&format!("const int {var} = {var}_pair + 1;"));
                            iteration(me, Some(b1), b0);
                        });
                    },
                );
            } else {
                me.braced(
                    &format!("for (int {var} = {start} + 1; {var} < {var}_end; ++{var}) {{"),
                    |me| iteration(me, Some(None), None),
                );
            }
            let last = |me: &mut Self, buffer: Option<usize>| {
                me.line(&format!("const int {var} = {var}_end;"));
                deferred(me, buffer);
                end_of_iteration(me);
            };
            if two {
                // The last iteration wrote the first array when it is an even number after start.
                me.braced_else(
                    &format!("if ({start} < {var}_end && ({var}_end - 1 - ({start})) % 2 == 0) {{  // the last iteration's deferred MMA"),
                    |me| last(me, b0),
                    |me| {
                        me.braced(&format!("if ({start} < {var}_end) {{"), |me| last(me, b1));
                    },
                );
            } else {
                me.braced(&format!("if ({start} < {var}_end) {{  // the last iteration's deferred MMA"), |me| {
                    last(me, None)
                });
            }
            me.pipes.pop();
        });
    }

    /// `lm.commit(bar)` on sm_90a: every wgmma group the warpgroup issued retires, then one
    /// thread per warpgroup arrives (tcgen05.commit's meaning: an arrival once the issued MMAs
    /// have completed). The releases waiting for those groups go out first.
    fn commit_barrier(&mut self, b: BarrierId, sp: Span) {
        let name = self.k.barriers[b].name.clone();
        self.line(&format!(
            "cake_wgmma_wait<0>();  // commit {name}: every MMA issued so far has retired ({})",
            self.loc(sp)
        ));
        for arrive in self.mma.wgmma.retired() {
            self.line(&arrive);
        }
        let slot = self.barrier_slot(b);
        let arrive = self.wgmma_release(b, &slot, None);
        self.line(&arrive);
    }

    /// The statement that releases barrier `b` at `slot` once the current role's wgmma groups
    /// have retired: one thread per warpgroup (a group completes for the whole warpgroup), thread
    /// c of each warpgroup in CTA c for a cluster barrier (`cake_ir::sync` counts them).
    /// `when` is a further condition (a deferred release has a stage pending).
    fn wgmma_release(&self, b: BarrierId, slot: &str, when: Option<&str>) -> String {
        let (role, _) = self.role.expect("inside a role");
        let t = format!("{}_thread", c_ident(&self.k.roles[role].name));
        let when = when.map(|w| format!("{w} && ")).unwrap_or_default();
        if self.k.barriers[b].cluster && self.clustered() {
            let n = self.cluster_ctas();
            format!("if ({when}{t} < {n}) cake_mbar_release_cluster({slot}, {t});")
        } else {
            format!("if ({when}{t} == 0) cake_mbar_arrive({slot});")
        }
    }

    /// `lm.mma(acc, frag, view.T)` on sm_90a: wgmma with A from registers (a [`FragLayout::WgmmaA`]
    /// fragment, four registers per k-step) and B from shared memory.
    #[allow(clippy::too_many_arguments)]
    fn wgmma_register_a(
        &mut self,
        (accf, af, n, kdim): (FragId, FragId, u32, u32),
        (bv, b_mn): (&ViewRef, bool),
        input: Inputs,
        accumulate: ExprId,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        let k = self.k;
        self.mma
            .wgmma
            .shapes
            .insert((AForm::Registers, n, input, b_mn));
        let (accn, an) = (self.frag_name(accf), self.frag_name(af));
        let acc_pred = self.ix(accumulate);
        self.line(&format!(
            "// mma {accn} += {} (registers) * {}.T ({})",
            k.fragments[af].name,
            k.views[bv.view].name,
            self.loc(sp)
        ));
        self.line("cake_wgmma_fence();");
        let tb = if b_mn { "_tb" } else { "" };
        for kk in 0..kdim / input.k() {
            let Some(bd) = self.wgmma_b_desc(bv, b_mn, kk, input.k(), sp) else {
                return;
            };
            let scale = if kk == 0 {
                format!("({acc_pred}) ? 1 : 0")
            } else {
                "1".into()
            };
            let r = 4 * kk;
            self.line(&format!(
                "{}_rs{tb}({accn}, {an}[{r}], {an}[{}], {an}[{}], {an}[{}], {bd}, {scale});",
                wrapper_name(n, input),
                r + 1,
                r + 2,
                r + 3
            ));
        }
        self.wgmma_commit(accf, Some((af, an)), release, sp);
    }

    /// `lm.mma` on sm_90a. With `turns=True` the replicas of the role issue it in turns: wait on
    /// this replica's hardware barrier (the previous replica arrived on it when it issued), issue,
    /// arrive on the next replica's — or, in a rotated loop's head, once the deferred MMA that
    /// follows has been issued too.
    fn wgmma(&mut self, m: &MmaCall) {
        let turn = match (m.turns, self.role) {
            (true, Some((role, _))) => match legal::turn_barriers(self.k, self.kf, role) {
                Ok(ids) => Some((role, ids)),
                Err(msg) => return self.unsupported(m.sp, msg),
            },
            _ => None,
        };
        let Some((role, (first, count))) = turn else {
            return self.wgmma_issue(m);
        };
        let r = &self.k.roles[role];
        let (name, n) = (c_ident(&r.name), r.replicas());
        self.line(&format!(
            "cake_named_sync({first} + {name}_index, {count});  // this replica's turn ({})",
            self.loc(m.sp)
        ));
        self.wgmma_issue(m);
        let arrive = format!(
            "cake_named_arrive({first} + ({name}_index + 1) % {n}, {count});  // the next replica's turn ({})",
            self.loc(m.sp)
        );
        if self.mma.wgmma.hold_turn {
            self.mma.wgmma.held_turn = Some(arrive);
        } else {
            self.line(&arrive);
        }
    }

    /// `lm.mma` on sm_90a: wgmma with the accumulator in registers, `b` in shared memory and `a`
    /// in shared memory or registers.
    fn wgmma_issue(&mut self, m: &MmaCall) {
        let (accumulate, release, sp) = (m.accumulate, m.release, m.sp);
        let k = self.k;
        let (accf, n, kdim, av, bv, input) = match mma_form(k, |f| self.layout(f), m) {
            Err(msg) => return self.unsupported(sp, msg),
            Ok(None) => return,
            Ok(Some(WgmmaForm::RegisterA {
                accf,
                af,
                n,
                kdim,
                b,
                b_mn,
                input,
            })) => {
                return self.wgmma_register_a(
                    (accf, af, n, kdim),
                    (b, b_mn),
                    input,
                    accumulate,
                    release,
                    sp,
                )
            }
            Ok(Some(WgmmaForm::Shared {
                accf,
                n,
                kdim,
                a,
                a_mn,
                b,
                b_mn,
                input,
            })) => (accf, n, kdim, (a, a_mn), (b, b_mn), input),
        };
        let ((av, a_mn), (bv, b_mn)) = (av, bv);
        let accf = &accf;
        let k_step = input.k();
        let a_form = if a_mn {
            AForm::SharedMn
        } else {
            AForm::SharedK
        };
        self.mma.wgmma.shapes.insert((a_form, n, input, b_mn));
        let accn = self.frag_name(*accf);
        let acc_pred = self.ix(accumulate);
        self.line(&format!(
            "// mma {accn} += {} * {}.T ({})",
            k.views[av.view].name,
            k.views[bv.view].name,
            self.loc(sp)
        ));
        self.line("cake_wgmma_fence();");
        for kk in 0..kdim / k_step {
            let (Some(ad), Some(bd)) = (
                self.wgmma_a_desc(av, a_mn, kk, k_step, sp),
                self.wgmma_b_desc(bv, b_mn, kk, k_step, sp),
            ) else {
                return;
            };
            let scale = if kk == 0 {
                format!("({acc_pred}) ? 1 : 0")
            } else {
                "1".into()
            };
            let ta = if a_mn { "_ta" } else { "" };
            let tb = if b_mn { "_tb" } else { "" };
            self.line(&format!(
                "{}{ta}{tb}({accn}, {ad}, {bd}, {scale});",
                wrapper_name(n, input)
            ));
        }
        self.wgmma_commit(*accf, None, release, sp);
    }

    /// The shared-memory descriptor of `a` at k-step `kk` (`k_step` along K: 32 bytes of a
    /// K-major row). K-major (an (M, K) view as stored): the operand tile's start within its
    /// 128-byte panel. M-major (`.T` of a 16-bit (K, 64) view): 16 panel rows of 128 bytes
    /// further per k-step, from the `.rows` start;
    /// one panel along M, so the leading byte offset is the panel's size (not read), and the
    /// stride offset the 1024 bytes between groups of 8 rows along K.
    fn wgmma_a_desc(
        &mut self,
        av: &ViewRef,
        a_mn: bool,
        kk: u32,
        k_step: u32,
        sp: Span,
    ) -> Option<String> {
        let ad = self.wgmma_operand(av, if a_mn { 0 } else { kk }, k_step, sp)?;
        if !a_mn {
            return Some(format!("cake_wgmma_desc({ad}, 16, 1024, 1)"));
        }
        let view = &self.k.views[av.view];
        let row_bytes = view.panel_cols() * view.dtype.bytes();
        let panel = super::n_major_panel_stride(view);
        Some(format!(
            "cake_wgmma_desc({ad} + {}, {panel}, 1024, 1)",
            kk * k_step * row_bytes
        ))
    }

    /// The shared-memory descriptor of `b` at k-step `kk` (`k_step` along K). K-major (`.T` of
    /// an (N, K) view): the operand tile's start within its 128-byte panel, no leading offset.
    /// N-major (a (K, N) view as stored): 16 rows of 128 bytes further per k-step; the leading
    /// byte offset is the stride between the 64-column panels along N (the view's rows × 128
    /// bytes), the stride offset the 1024 bytes between groups of 8 rows along K.
    fn wgmma_b_desc(
        &mut self,
        bv: &ViewRef,
        b_mn: bool,
        kk: u32,
        k_step: u32,
        sp: Span,
    ) -> Option<String> {
        if !b_mn {
            let bd = self.wgmma_operand(bv, kk, k_step, sp)?;
            return Some(format!("cake_wgmma_desc({bd}, 16, 1024, 1)"));
        }
        if let Err(m) = crate::legal::sw128_operand(&self.k.views[bv.view]) {
            self.unsupported(sp, m);
            return None;
        }
        let panels = super::n_major_panel_stride(&self.k.views[bv.view]);
        let at = self.n_major_operand(bv, kk, k_step);
        Some(format!("cake_wgmma_desc({at}, {panels}, 1024, 1)"))
    }

    /// Close a group of wgmma into `accf`: commit it, then release `release` once the MMAs have
    /// retired — right away, or one iteration later when the loop keeps a group in flight
    /// (deferred release) — or, without a release, remember the accumulator as in flight.
    fn wgmma_commit(
        &mut self,
        accf: FragId,
        a_regs: Option<(FragId, String)>,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        let k = self.k;
        self.line("cake_wgmma_commit();");
        let mut group = Group {
            acc: accf,
            array: self.frag_name(accf),
            sp,
            release: None,
            a_regs,
        };
        if let (Some(bar), true) = (release, self.mma.wgmma.lazy_release) {
            let slot = self.barrier_slot(bar);
            let arrive = self.wgmma_release(bar, &slot, None);
            group.release = Some(format!(
                "{arrive}  // release ({}), now that its MMAs have retired",
                self.loc(sp)
            ));
            self.mma.wgmma.in_flight.push(group);
            return;
        }
        if let (Some(bar), Some(_)) = (release, &self.mma.wgmma.iteration_end_releases) {
            let slot = self.barrier_slot(bar);
            let arrive = self.wgmma_release(bar, &slot, None);
            let line = format!("{arrive}  // release, once this iteration's MMAs have retired");
            if let Some(list) = self.mma.wgmma.iteration_end_releases.as_mut() {
                list.push(line);
            }
            self.mma.wgmma.in_flight.push(group);
            return;
        }
        if let Some(bar) = release {
            let bn = c_ident(&k.barriers[bar].name);
            if self
                .mma
                .wgmma
                .deferred_release
                .iter()
                .any(|(b, _)| *b == bar)
            {
                let pipe = self
                    .pipes
                    .last()
                    .map(|(_, p)| c_ident(&k.pipelines[*p].name))
                    .unwrap_or_default();
                if let Some(b) = self.prefetch_at_wait.take() {
                    self.prefetch_column_loads(&b);
                }
                self.line("cake_wgmma_wait<1>();  // the previous iteration's MMAs have retired");
                let pending = format!("{bn}_pending >= 0");
                let arrive =
                    self.wgmma_release(bar, &format!("{bn} + 8 * {bn}_pending"), Some(&pending));
                self.line(&format!("{arrive}  // release"));
                self.line(&format!("{bn}_pending = (int){pipe}_stage;"));
            } else {
                let slot = self.barrier_slot(bar);
                if let Some(b) = self.prefetch_at_wait.take() {
                    self.prefetch_column_loads(&b);
                }
                self.line("cake_wgmma_wait<0>();");
                for arrive in self.mma.wgmma.retired() {
                    self.line(&arrive);
                }
                let arrive = self.wgmma_release(bar, &slot, None);
                self.line(&format!("{arrive}  // release"));
            }
        } else if self.mma.wgmma.deferred_release.is_empty() {
            self.mma.wgmma.in_flight.push(group);
        }
    }

    /// Inside a rotated loop's iteration, before a wait: the arrays written since the last wait
    /// are read by an empty asm, so their computation is not moved below the wait (the arrays
    /// of groups in flight are left alone: touching them would serialise the wgmmas).
    fn pin_before_wait(&mut self) {
        let Some(pinned) = self.mma.wgmma.pinned.as_mut() else {
            return;
        };
        let written = std::mem::take(pinned);
        let busy = |a: &str, st: &State| {
            st.in_flight
                .iter()
                .any(|g| g.array == a || g.a_regs.as_ref().is_some_and(|(_, r)| r == a))
        };
        let k = self.k;
        let mut terms = Vec::new();
        for (f, array) in written {
            if busy(&array, &self.mma.wgmma) {
                continue;
            }
            self.line(&format!(
                "cake_wgmma_fence_regs({array});  // computed before the wait"
            ));
            let n = legal::declared_layout(k, f, self.layout(f)).map_or(1, |l| l.registers());
            // The first and last register of the array: the last is what the middle computes
            // last (a row's sum, the last exponentials).
            for i in [0, n.saturating_sub(1)]
                .into_iter()
                .collect::<BTreeSet<_>>()
            {
                terms.push(as_float(k.fragments[f].dtype, &format!("{array}[{i}]")));
            }
        }
        if let (Some(slot), false) = (self.kf.layout.order_slot, terms.is_empty()) {
            self.line(&format!(
                "cake_wgmma_order(cake_smem + {slot}, {});  // keeps the wait below after the work above",
                terms.join(" + ")
            ));
            self.mma.wgmma.orders = true;
        }
    }

    /// Before operations that read or overwrite the accumulator of a wgmma group still in flight,
    /// wait for that group to retire (the registers are the tensor cores' until then): with
    /// `wait_group N`, N the groups committed after it, which may stay in flight.
    fn retire_mmas_before(&mut self, ops: &[&Op], reads: &[ExprId], why: &str) {
        let k = self.k;
        let st = &self.mma.wgmma;
        // A group must retire before its accumulator is read or overwritten, and before the
        // registers of its `a` operand are overwritten.
        let Some(last) = st.in_flight.iter().rposition(|g| {
            (self.frag_name(g.acc) == g.array
                && (ops.iter().any(|op| touches(k, op, g.acc))
                    || reads.iter().any(|e| k.expr_reads_fragment(*e, g.acc))))
                || g.a_regs.as_ref().is_some_and(|(af, regs)| {
                    self.frag_name(*af) == *regs && ops.iter().any(|op| overwrites(op, *af))
                })
        }) else {
            return;
        };
        let newer = if st.inexact {
            0
        } else {
            st.in_flight.len() - 1 - last
        };
        let name = &k.fragments[st.in_flight[last].acc].name;
        let rest = if newer > 0 {
            format!("; {newer} newer group(s) stay in flight")
        } else {
            String::new()
        };
        self.pin_before_wait();
        self.line(&format!(
            "cake_wgmma_wait<{newer}>();  // the MMAs into `{name}` have retired{why}{rest}"
        ));
        let done: Vec<Group> = if newer == 0 {
            let all = self.mma.wgmma.in_flight.clone();
            let _ = self.mma.wgmma.retired(); // their arrivals are made below, after the fences
            all
        } else {
            self.mma.wgmma.in_flight.drain(..=last).collect()
        };
        // Keep nvcc from hoisting reads of the retired registers above the wait (ptxas would
        // then see them read in flight and serialise every wgmma, C7514/C7515).
        let mut fenced: Vec<&str> = Vec::new();
        for g in &done {
            if !fenced.contains(&g.array.as_str()) {
                fenced.push(&g.array);
                self.line(&format!("cake_wgmma_fence_regs({});", g.array));
            }
        }
        for g in done {
            if let Some(arrive) = g.release {
                self.line(&arrive);
            }
        }
    }
}

/// A register of a fragment array of `dtype` read as a float (its bits, for the ordering store).
fn as_float(dtype: DType, register: &str) -> String {
    match dtype {
        DType::F32 => register.to_string(),
        DType::I32 => format!("__int_as_float({register})"),
        _ => format!("__uint_as_float({register})"),
    }
}

/// Whether `op` reads or overwrites register fragment `f` outside the tensor cores' own
/// accumulation (an MMA accumulating into `f` may follow an MMA into `f` still in flight).
fn touches(k: &Kernel, op: &Op, f: FragId) -> bool {
    let reads = |e: &ExprId| k.expr_reads_fragment(*e, f);
    match op {
        Op::Assign { dst, value } => *dst == f || reads(value),
        Op::AssignMany { pairs } => pairs.iter().any(|(dst, value)| *dst == f || reads(value)),
        Op::Store { value, .. }
        | Op::SmemStore { value, .. }
        | Op::TmemStore { src: value, .. } => reads(value),
        Op::Mma {
            a: Operand::Frag(a),
            ..
        } => *a == f,
        _ => false,
    }
}

/// Registers a role keeps free beyond its fragments for the temporaries of its arithmetic,
/// addresses and loop state, when deciding whether a second array of P fits.
const SECOND_ARRAY_MARGIN: u64 = 32;

impl Emitter<'_> {
    /// Whether fragment `f`'s role can hold a second copy of it: its fragments, the copy and
    /// [`SECOND_ARRAY_MARGIN`] within its register budget (`regs=`, else the launch allocation).
    fn room_for_second_array(&self, f: FragId) -> bool {
        let k = self.k;
        let role = k.fragments[f].role;
        let launch = self
            .target
            .limits
            .launch_registers(k.block_threads() * k.ctas_per_sm());
        let budget = k.register_budget(role, launch);
        let need = k.role_fragment_registers(role) + k.fragment_registers(f) + SECOND_ARRAY_MARGIN;
        need <= budget
    }
}

/// Whether a statement of `block` overwrites register fragment `a`.
fn writes_fragment(k: &Kernel, block: &[StmtId], a: FragId) -> bool {
    block.iter().any(|&s| {
        let mut ops = Vec::new();
        nested_ops(k, s, &mut ops);
        ops.iter().any(|op| overwrites(op, a))
    })
}

/// Whether the first statement of `middle` that overwrites register fragment `a` is reached
/// with the MMA into `acc` (which reads `a`) possibly in flight: no statement up to it, itself
/// included, reads or writes `acc`, which would retire the MMA before it.
fn writes_under_mma(k: &Kernel, middle: &[StmtId], a: FragId, acc: FragId) -> bool {
    let nested = |s: StmtId| {
        let mut ops = Vec::new();
        nested_ops(k, s, &mut ops);
        ops
    };
    let Some(write) = middle.iter().position(|&s| writes_fragment(k, &[s], a)) else {
        return false;
    };
    !middle[..=write].iter().any(|&s| {
        let mut conds = Vec::new();
        nested_conditions(k, s, &mut conds);
        nested(s).iter().any(|op| touches(k, op, acc))
            || conds.iter().any(|c| k.expr_reads_fragment(*c, acc))
    })
}

/// Whether `op` overwrites register fragment `f` (the `a` operand of a group in flight must not
/// change under the tensor cores).
fn overwrites(op: &Op, f: FragId) -> bool {
    match op {
        Op::Assign { dst, .. } | Op::Ldmatrix { dst, .. } | Op::TmemLoad { dst, .. } => *dst == f,
        Op::AssignMany { pairs } => pairs.iter().any(|(dst, _)| *dst == f),
        Op::Mma {
            acc: Operand::Frag(acc),
            ..
        } => *acc == f,
        _ => false,
    }
}

/// The ordering store of a rotated loop (`pin_before_wait`).
const WGMMA_ORDER: &str = r#"
// A shared-memory store of a value the preceding work computed: ptxas keeps a later
// wgmma.wait_group after it, so that work runs while the MMA is in flight instead of after the
// wait. The word is the kernel's own scratch; its value is never read.
static __device__ __forceinline__ void cake_wgmma_order(uint32_t slot, float v) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(slot), "f"(v) : "memory");
}
"#;

/// wgmma protocol helpers (sm_90a).
const WGMMA: &str = r#"
static __device__ __forceinline__ void cake_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void cake_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void cake_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
// An empty asm that "redefines" every accumulator register: code that reads the registers cannot
// be moved above the wait_group before it. Without it nvcc may hoist those reads above the wait,
// and ptxas then serialises every wgmma of the function (C7514/C7517).
template <int N>
static __device__ __forceinline__ void cake_wgmma_fence_regs(float (&r)[N]) {
  #pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
template <int N>
static __device__ __forceinline__ void cake_wgmma_fence_regs(uint32_t (&r)[N]) {
  #pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}
template <int N>
static __device__ __forceinline__ void cake_wgmma_fence_regs(int (&r)[N]) {
  #pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(r[i]) :: "memory");
}
// Shared-memory matrix descriptor: start address, leading and stride byte offsets (all >> 4),
// and the swizzle mode in bits 62-63 (1 = 128B, 2 = 64B, 3 = 32B).
static __device__ __forceinline__ uint64_t cake_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle_mode) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32)
       | ((uint64_t)swizzle_mode << 62);
}
"#;

/// Where a wgmma's A operand comes from (in this order in the prelude).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum AForm {
    /// Shared memory, K-major (an (M, K) view as stored).
    SharedK,
    /// Shared memory, M-major (`.T` of a (K, M) view), read with the transpose flag for A.
    SharedMn,
    /// Registers: four 32-bit registers of packed 16-bit pairs, the accumulator's element order.
    Registers,
}

/// The input types of a wgmma (bf16 or f16 on both sides, or FP8, e4m3 or e5m2, on each) and
/// the K of one instruction, the target table's (`cake_target::mma_instr_k`: k16 for 16-bit
/// inputs, k32 for FP8, 32 bytes of a K-major row either way).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Inputs {
    a: DType,
    b: DType,
    k: u32,
}

impl Inputs {
    fn of(a: DType, b: DType) -> Result<Inputs, String> {
        let lowered = matches!(
            (a, b),
            (DType::BF16, DType::BF16) | (DType::F16, DType::F16)
        ) || (a.is_fp8() && b.is_fp8());
        if !lowered
            && matches!(a, DType::BF16 | DType::F16)
            && matches!(b, DType::BF16 | DType::F16)
        {
            return Err("wgmma takes `a` and `b` of the same 16-bit type".into());
        }
        match cake_target::mma_instr_k(cake_target::MmaFamily::Wgmma, a) {
            Some(k) if lowered => Ok(Inputs { a, b, k }),
            _ => Err(format!("wgmma with {a} x {b} inputs is not lowered yet")),
        }
    }

    fn is_fp8(self) -> bool {
        self.a.is_fp8()
    }

    /// K of one instruction.
    fn k(self) -> u32 {
        self.k
    }

    /// The instruction's type suffix, `a`'s then `b`'s: `bf16.bf16`, `e4m3.e5m2`.
    fn ptx(self) -> String {
        format!("{}.{}", self.a, self.b)
    }
}

/// `cake_wgmma_m64n<N>k<K>_f32_<input>`: the wrapper's name before the operand-form suffix; one
/// type names equal inputs (`bf16`, `e4m3`), else both (`e4m3_e5m2`).
fn wrapper_name(n: u32, input: Inputs) -> String {
    let types = if input.a == input.b {
        input.a.to_string()
    } else {
        format!("{}_{}", input.a, input.b)
    };
    format!("cake_wgmma_m64n{n}k{}_f32_{types}", input.k())
}

/// One wgmma wrapper for an `m64nN` shape with f32 accumulators.
/// `cake_wgmma_m64n<N>k<K>_f32_<input>[_rs|_ta][_tb]` (`wrapper_name`): the wgmma of one k-step,
/// its A operand in shared memory, K-major or (`_ta`) M-major, or (`_rs`) in registers, its B
/// operand K-major or (`_tb`) N-major; the M-major and N-major ones are read with the
/// instruction's transpose flags. FP8 inputs are K-major on both sides, and their instruction
/// takes no transpose flags.
fn wgmma_fn_with(n: u32, input: Inputs, a: AForm, b_n_major: bool) -> String {
    let regs = n / 2;
    let a_in_registers = a == AForm::Registers;
    let suffix = format!(
        "{}{}",
        match a {
            AForm::SharedK => "",
            AForm::SharedMn => "_ta",
            AForm::Registers => "_rs",
        },
        if b_n_major { "_tb" } else { "" }
    );
    let tnsp_a = u8::from(a == AForm::SharedMn);
    let tnsp_b = u8::from(b_n_major);
    let name = format!("{}{suffix}", wrapper_name(n, input));
    // Only 16-bit inputs take the transpose immediates.
    let flags = |text: String| if input.is_fp8() { String::new() } else { text };
    let a_params = if a_in_registers {
        "uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3"
    } else {
        "uint64_t desc_a"
    };
    // Operand numbers after the accumulator registers: A (one descriptor or four registers),
    // then B's descriptor, then the scale-d flag.
    let a_count = if a_in_registers { 4 } else { 1 };
    let (b_op, scale_op) = (regs + a_count, regs + a_count + 1);
    let mut out = String::new();
    out.push_str(&format!(
        "static __device__ __forceinline__ void {name}(float (&d)[{regs}], {a_params}, uint64_t desc_b, int scale_d) {{\n"
    ));
    let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    out.push_str("  asm volatile(\n      \"{\\n\\t.reg .pred p;\\n\\t\"\n");
    out.push_str(&format!("      \"setp.ne.b32 p, %{scale_op}, 0;\\n\\t\"\n"));
    out.push_str(&format!(
        "      \"wgmma.mma_async.sync.aligned.m64n{n}k{}.f32.{} \"\n",
        input.k(),
        input.ptx()
    ));
    for chunk in list.chunks(16) {
        let first = chunk[0] == "%0";
        out.push_str(&format!(
            "      \"{}{},\"\n",
            if first { "{" } else { " " },
            chunk.join(", ")
        ));
    }
    // Replace the trailing comma of the register list with the closing brace.
    let pos = out.rfind(",\"\n").expect("non-empty register list");
    out.replace_range(pos..pos + 3, "},\"\n");
    if a_in_registers {
        // Register A: no transpose flag for A; B's transpose flag.
        out.push_str(&format!(
            "      \" {{%{}, %{}, %{}, %{}}}, %{b_op}, p, 1, 1{};\\n\\t}}\\n\"\n",
            regs,
            regs + 1,
            regs + 2,
            regs + 3,
            flags(format!(", {tnsp_b}"))
        ));
    } else {
        // A's transpose flag (M-major), then B's.
        out.push_str(&format!(
            "      \" %{regs}, %{b_op}, p, 1, 1{};\\n\\t}}\\n\"\n",
            flags(format!(", {tnsp_a}, {tnsp_b}"))
        ));
    }
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(d[{i}])")).collect();
    out.push_str("      : ");
    for (i, chunk) in outs.chunks(8).enumerate() {
        if i > 0 {
            out.push_str(",\n        ");
        }
        out.push_str(&chunk.join(", "));
    }
    if a_in_registers {
        out.push_str("\n      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"l\"(desc_b), \"r\"(scale_d));\n}\n");
    } else {
        out.push_str("\n      : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));\n}\n");
    }
    out
}
