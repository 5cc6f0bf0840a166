//! The two traversals every analysis shares: the operands of an expression and the effects of
//! an operation. Both are exhaustive `match`es without a catch-all arm, so a new expression kind
//! or operation is a compile error here, not a node some walker silently skips.

use crate::kernel::*;
use std::collections::HashSet;

impl ExprKind {
    /// Calls `f` on each direct operand, left to right.
    pub fn for_each_child(&self, mut f: impl FnMut(ExprId)) {
        match self {
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Dim(_)
            | ExprKind::Scalar(_)
            | ExprKind::LoopVar(_)
            | ExprKind::TileCoord { .. }
            | ExprKind::RoleIndex(_)
            | ExprKind::PipelineStage(_)
            | ExprKind::Frag(_) => {}
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                f(*a);
                f(*b);
            }
            ExprKind::Select(c, a, b) => {
                f(*c);
                f(*a);
                f(*b);
            }
            ExprKind::Unary(_, a)
            | ExprKind::Cast(_, a)
            | ExprKind::Reduce { arg: a, .. }
            | ExprKind::Vote { arg: a, .. }
            | ExprKind::Expand { arg: a, .. } => f(*a),
            ExprKind::Load { coords, .. } => coords.iter().copied().for_each(f),
            ExprKind::Iota { .. } => {}
            ExprKind::ViewLoad { view, cta } => {
                let rows = view.rows.map(|(start, _)| start);
                rows.into_iter().chain(view.stage).chain(*cta).for_each(f);
            }
        }
    }
}

impl Kernel {
    /// [`Op::effects`], with the views its expressions read (`view.load`) among its shared-memory
    /// reads.
    pub fn op_effects(&self, op: &Op) -> OpEffects {
        let mut effects = op.effects();
        let mut views = Vec::new();
        for &e in &effects.exprs {
            self.visit_expr(e, |_, kind| {
                if let ExprKind::ViewLoad { view, .. } = kind {
                    views.push(view.clone());
                }
                true
            });
        }
        effects.smem_reads.extend(views);
        effects
    }

    /// Whether `op` reaches another CTA of the cluster: a multicast load, an arrival (plain, on
    /// commit or on release) on a cluster barrier, or a read of a peer's shared memory. The
    /// lowering waits for the cluster's CTAs to start before a thread's first such operation.
    pub fn reaches_peers(&self, op: &Op) -> bool {
        if matches!(op, Op::TmaLoad { multicast, .. } if *multicast > 1) {
            return true;
        }
        let effects = self.op_effects(op);
        let remote_arrival = effects.barriers.iter().any(|(b, u)| {
            self.barriers[*b].cluster
                && matches!(
                    u,
                    BarrierUse::Arrive | BarrierUse::Commit | BarrierUse::Release
                )
        });
        remote_arrival
            || effects.exprs.iter().any(|&e| {
                self.expr_any(e, |kind| {
                    matches!(kind, ExprKind::ViewLoad { cta: Some(_), .. })
                })
            })
    }

    /// Visits `e` and the expressions under it in pre-order, left to right, each node once
    /// (expressions form a DAG: names share subexpressions). `f` returns whether to descend
    /// into the node's operands.
    pub fn visit_expr(&self, e: ExprId, mut f: impl FnMut(ExprId, &ExprKind) -> bool) {
        let mut seen = HashSet::new();
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            if !seen.insert(e) {
                continue;
            }
            let kind = &self.exprs[e].kind;
            if f(e, kind) {
                // Reversed on the stack so the leftmost operand is visited first.
                let start = stack.len();
                kind.for_each_child(|c| stack.push(c));
                stack[start..].reverse();
            }
        }
    }

    /// Whether `e` or any expression under it satisfies `leaf`.
    pub fn expr_any(&self, e: ExprId, leaf: impl Fn(&ExprKind) -> bool) -> bool {
        let mut found = false;
        self.visit_expr(e, |_, kind| {
            found |= leaf(kind);
            !found
        });
        found
    }

    /// Every fragment `e` reads, in first-use order.
    pub fn fragments_in(&self, e: ExprId, out: &mut Vec<FragId>) {
        self.visit_expr(e, |_, kind| {
            if let ExprKind::Frag(f) = kind {
                if !out.contains(f) {
                    out.push(*f);
                }
            }
            true
        });
    }
}

/// How an operation takes part in a barrier's phases.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierUse {
    /// `lm.wait`: blocks until the current phase completes.
    Wait,
    /// `lm.arrive`.
    Arrive,
    /// `lm.commit`: arrives once the issuing thread's tensor-core work completes.
    Commit,
    /// `release=` on an MMA: arrives once the MMA's operand reads have retired.
    Release,
    /// A TMA load completing on the barrier: its bytes land as transactions.
    Tma,
    /// cp.async completing on the barrier: one arrival per thread.
    CpAsync,
}

impl BarrierUse {
    /// A copy that completes on the barrier (it writes the memory the barrier hands over).
    pub fn is_completion(self) -> bool {
        match self {
            BarrierUse::Tma | BarrierUse::CpAsync => true,
            BarrierUse::Wait | BarrierUse::Arrive | BarrierUse::Commit | BarrierUse::Release => {
                false
            }
        }
    }
}

/// What one operation reads, writes and synchronises on. Fragment operands of an MMA are
/// listed here; fragments read by expressions are found by walking `exprs`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpEffects {
    pub smem_reads: Vec<ViewRef>,
    pub smem_writes: Vec<ViewRef>,
    pub tmem_reads: Vec<TmemRef>,
    pub tmem_writes: Vec<TmemRef>,
    pub frag_reads: Vec<FragId>,
    pub frag_writes: Vec<FragId>,
    /// Global tensors read and written.
    pub global_reads: Vec<ParamId>,
    pub global_writes: Vec<ParamId>,
    pub barriers: Vec<(BarrierId, BarrierUse)>,
    /// The accumulator an MMA writes (its place decides the instruction family).
    pub mma_accumulator: Option<Operand>,
    pub named_barriers: Vec<NamedBarrierId>,
    /// The expressions the operation evaluates (coordinates, values, row starts, flags).
    pub exprs: Vec<ExprId>,
    /// The writes also read what they overwrite: an MMA that may accumulate, scatter_add's
    /// atomic adds.
    pub read_modify_write: bool,
}

impl OpEffects {
    fn operand(&mut self, o: &Operand, write: bool) {
        match (o, write) {
            (Operand::Smem(v), false) => self.smem_read(v),
            (Operand::Smem(v), true) => self.smem_write(v),
            (Operand::Tmem(t), false) => self.tmem_reads.push(t.clone()),
            (Operand::Tmem(t), true) => self.tmem_writes.push(t.clone()),
            (Operand::Frag(f), false) => self.frag_reads.push(*f),
            (Operand::Frag(f), true) => self.frag_writes.push(*f),
        }
    }

    fn view_rows(&mut self, v: &ViewRef) {
        if let Some((start, _)) = v.rows {
            self.exprs.push(start);
        }
    }

    fn smem_read(&mut self, v: &ViewRef) {
        self.smem_reads.push(v.clone());
        self.view_rows(v);
    }

    fn smem_write(&mut self, v: &ViewRef) {
        self.smem_writes.push(v.clone());
        self.view_rows(v);
    }

    /// Every fragment the operation writes or reads (operands, then expressions), each once.
    pub fn fragments(&self, k: &Kernel) -> Vec<FragId> {
        let mut out = self.frag_writes.clone();
        out.extend(
            self.frag_reads
                .iter()
                .filter(|f| !self.frag_writes.contains(f)),
        );
        for e in &self.exprs {
            k.fragments_in(*e, &mut out);
        }
        out
    }

    /// Every fragment the operation reads, as an operand or in an expression, each once.
    pub fn fragments_read(&self, k: &Kernel) -> Vec<FragId> {
        let mut out = self.frag_reads.clone();
        for e in &self.exprs {
            k.fragments_in(*e, &mut out);
        }
        out
    }
}

impl Op {
    /// This operation's effects.
    pub fn effects(&self) -> OpEffects {
        let mut e = OpEffects::default();
        match self {
            Op::TmaLoad {
                dst,
                src,
                coords,
                barrier,
                multicast: _,
                evict: _,
            } => {
                e.smem_write(dst);
                e.global_reads.push(*src);
                e.exprs.extend(coords);
                e.barriers.push((*barrier, BarrierUse::Tma));
            }
            Op::CpAsync {
                dst,
                src,
                coords,
                barrier,
                evict: _,
            } => {
                e.smem_write(dst);
                e.global_reads.push(*src);
                e.exprs.extend(coords);
                e.barriers.push((*barrier, BarrierUse::CpAsync));
            }
            Op::TmaStore {
                dst,
                src,
                coords,
                add,
            }
            | Op::CopyTo {
                dst,
                src,
                coords,
                add,
            } => {
                e.smem_read(src);
                e.global_writes.push(*dst);
                if *add {
                    e.global_reads.push(*dst);
                }
                e.exprs.extend(coords);
            }
            Op::Ldmatrix { dst, src } => {
                e.smem_read(src);
                e.frag_writes.push(*dst);
            }
            Op::Mma {
                acc,
                a,
                b,
                accumulate,
                release,
                defer: _,
                turns: _,
            } => {
                e.operand(a, false);
                e.operand(b, false);
                e.operand(acc, true);
                e.mma_accumulator = Some(acc.clone());
                e.exprs.push(*accumulate);
                e.read_modify_write = true;
                if let Some(r) = release {
                    e.barriers.push((*r, BarrierUse::Release));
                }
            }
            Op::TmemLoad { dst, src } => {
                e.tmem_reads.push(src.clone());
                e.frag_writes.push(*dst);
            }
            Op::TmemStore { dst, src } => {
                e.tmem_writes.push(dst.clone());
                e.exprs.push(*src);
            }
            Op::TmemCopy { dst, src } => {
                e.smem_read(src);
                e.tmem_writes.push(dst.clone());
            }
            Op::Store {
                dst, value, coords, ..
            } => {
                e.global_writes.push(*dst);
                e.exprs.push(*value);
                e.exprs.extend(coords);
            }
            Op::GlobalScatterAdd {
                dst,
                value,
                index,
                coords,
                counts,
            } => {
                e.global_writes.push(*dst);
                e.global_reads.push(*dst);
                if let Some(c) = counts {
                    e.global_writes.push(*c);
                    e.global_reads.push(*c);
                }
                e.exprs.push(*value);
                e.exprs.push(*index);
                e.exprs.extend(coords);
                e.read_modify_write = true;
            }
            Op::SmemStore { dst, value } => {
                e.smem_write(dst);
                e.exprs.push(*value);
            }
            Op::ScatterAdd {
                dst,
                src,
                index,
                offset,
                valid_rows,
                counts,
            } => {
                e.smem_write(dst);
                if let Some(c) = counts {
                    e.smem_write(c);
                }
                e.smem_read(src);
                e.smem_read(index);
                e.exprs.push(*offset);
                e.exprs.extend(valid_rows);
                e.read_modify_write = true;
            }
            Op::Assign { dst, value } => {
                e.frag_writes.push(*dst);
                e.exprs.push(*value);
            }
            Op::AssignMany { pairs } => {
                for (dst, value) in pairs {
                    e.frag_writes.push(*dst);
                    e.exprs.push(*value);
                }
            }
            Op::Wait { barrier } => e.barriers.push((*barrier, BarrierUse::Wait)),
            Op::Arrive { barrier } => e.barriers.push((*barrier, BarrierUse::Arrive)),
            Op::Commit { barrier } => e.barriers.push((*barrier, BarrierUse::Commit)),
            Op::FenceProxyAsync => {}
            Op::Sync { barrier } => e.named_barriers.push(*barrier),
            // Reads the partial and, on the run that ends the tile, writes the sum.
            Op::StreamFixup { frag } => {
                e.frag_reads.push(*frag);
                e.frag_writes.push(*frag);
            }
        }
        e
    }
}
