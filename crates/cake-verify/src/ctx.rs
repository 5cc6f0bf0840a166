//! Facts every rule needs, computed once per kernel and target.

use cake_diag::Span;
use cake_ir::layout::{smem_layout, SmemLayout};
use cake_ir::sync::{barrier_facts, BarrierFacts};
use cake_ir::*;
use cake_target::{MmaFamily, Target};

/// One operation in program order, with where it sits.
#[derive(Clone, Debug)]
pub struct OpSite {
    pub stmt: StmtId,
    pub op: Op,
    pub role: Option<RoleId>,
    pub loops: Vec<LoopId>,
    pub if_depth: u32,
    pub guards: Vec<Guard>,
}

pub struct Ctx<'a> {
    pub k: &'a Kernel,
    pub target: &'a Target,
    pub layout: SmemLayout,
    pub facts: Vec<BarrierFacts>,
    pub ops: Vec<OpSite>,
}

impl<'a> Ctx<'a> {
    pub fn new(k: &'a Kernel, target: &'a Target) -> Self {
        let mut ops = Vec::new();
        k.walk(|sid, stmt, ctx| {
            if let Stmt::Op(op) = stmt {
                ops.push(OpSite {
                    stmt: sid,
                    op: op.clone(),
                    role: ctx.role,
                    loops: ctx.loops.clone(),
                    if_depth: ctx.if_depth,
                    guards: ctx.guards.clone(),
                });
            }
        });
        Ctx {
            k,
            target,
            layout: smem_layout(k),
            facts: barrier_facts(k, target),
            ops,
        }
    }

    pub fn span(&self, s: StmtId) -> Span {
        self.k.stmts.span(s)
    }

    pub fn role_name(&self, r: Option<RoleId>) -> String {
        r.map_or("<none>".into(), |r| self.k.roles[r].name.clone())
    }

    /// The instruction family an MMA maps to on this target, from where its operands live.
    pub fn mma_family(&self, acc: &Operand) -> MmaFamily {
        match acc {
            Operand::Tmem(_) => MmaFamily::Tcgen05,
            _ if self.target.mma == MmaFamily::Wgmma => MmaFamily::Wgmma,
            _ => MmaFamily::MmaSync,
        }
    }

    /// The pipeline bound by the innermost enclosing pipelined loop.
    pub fn loop_pipeline(&self, loops: &[LoopId]) -> Option<(LoopId, PipelineId)> {
        self.k.enclosing_pipeline(loops)
    }

    pub fn operand_view(o: &Operand) -> Option<&ViewRef> {
        match o {
            Operand::Smem(v) => Some(v),
            _ => None,
        }
    }

    /// Views an op writes and reads (shared memory only).
    pub fn view_accesses(op: &Op) -> (Vec<&ViewRef>, Vec<&ViewRef>) {
        match op {
            Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. } | Op::SmemStore { dst, .. } => {
                (vec![dst], vec![])
            }
            Op::TmaStore { src, .. } | Op::Ldmatrix { src, .. } | Op::TmemCopy { src, .. } => {
                (vec![], vec![src])
            }
            Op::ScatterAdd {
                dst,
                src,
                index,
                counts,
                ..
            } => (
                std::iter::once(dst).chain(counts.as_ref()).collect(),
                vec![src, index],
            ),
            Op::Mma { a, b, .. } => (
                vec![],
                [a, b].into_iter().filter_map(Self::operand_view).collect(),
            ),
            _ => (vec![], vec![]),
        }
    }

    /// Barriers that writes of `view` signal (their completion barriers).
    pub fn writer_barriers(&self, view: ViewId) -> Vec<BarrierId> {
        let mut out = Vec::new();
        for site in &self.ops {
            match &site.op {
                Op::TmaLoad { dst, barrier, .. } | Op::CpAsync { dst, barrier, .. }
                    if dst.view == view && !out.contains(barrier) =>
                {
                    out.push(*barrier)
                }
                _ => {}
            }
        }
        out
    }

    /// Every fragment an expression reads.
    pub fn fragments_in(&self, e: ExprId, out: &mut Vec<FragId>) {
        match &self.k.exprs[e].kind {
            ExprKind::Frag(f) => out.push(*f),
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.fragments_in(*a, out);
                self.fragments_in(*b, out);
            }
            ExprKind::Select(c, a, b) => {
                self.fragments_in(*c, out);
                self.fragments_in(*a, out);
                self.fragments_in(*b, out);
            }
            ExprKind::Unary(_, a)
            | ExprKind::Cast(_, a)
            | ExprKind::Reduce { arg: a, .. }
            | ExprKind::Expand { arg: a, .. } => self.fragments_in(*a, out),
            _ => {}
        }
    }

    /// Canonical text of an expression (for comparing trip counts between roles).
    pub fn expr_text(&self, e: ExprId) -> String {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Dim(d) => k.dims[*d].name.clone(),
            ExprKind::Scalar(p) => k.params[*p].name.clone(),
            ExprKind::LoopVar(l) => k.loops[*l].var_name.clone(),
            ExprKind::TileCoord { axis, .. } => format!("tile[{axis}]"),
            ExprKind::RoleIndex(r) => format!("{}.index", k.roles[*r].name),
            ExprKind::PipelineStage(p) => format!("{}.stage", k.pipelines[*p].name),
            ExprKind::Binary(op, a, b) => op.python(&self.expr_text(*a), &self.expr_text(*b)),
            other => format!("{other:?}"),
        }
    }
}
