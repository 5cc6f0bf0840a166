//! The rules' view of one kernel on one target: the facts `cake_ir` derives once, plus helpers
//! for naming things in findings.

use cake_diag::Span;
use cake_ir::*;
use cake_target::Target;

pub use cake_ir::OpSite;

/// What every rule reads: the kernel, the target and the facts derived once for both.
pub struct Ctx<'a> {
    pub k: &'a Kernel,
    pub target: &'a Target,
    pub facts: &'a KernelFacts,
}

impl std::ops::Deref for Ctx<'_> {
    type Target = KernelFacts;
    fn deref(&self) -> &KernelFacts {
        self.facts
    }
}

impl<'a> Ctx<'a> {
    pub fn new(k: &'a Kernel, facts: &'a KernelFacts) -> Self {
        Ctx {
            k,
            target: facts.target,
            facts,
        }
    }

    pub fn span(&self, s: StmtId) -> Span {
        self.k.stmts.span(s)
    }

    pub fn role_name(&self, r: Option<RoleId>) -> String {
        r.map_or("<none>".into(), |r| self.k.roles[r].name.clone())
    }

    /// The pipeline bound by the innermost enclosing pipelined loop.
    pub fn loop_pipeline(&self, loops: &[LoopId]) -> Option<(LoopId, PipelineId)> {
        self.k.enclosing_pipeline(loops)
    }

    /// Barriers that writes of `view` signal (their completion barriers).
    pub fn writer_barriers(&self, view: ViewId) -> Vec<BarrierId> {
        let mut out = Vec::new();
        for site in &self.ops {
            let e = &site.effects;
            if e.smem_writes.iter().any(|v| v.view == view) {
                for (b, _) in e.barriers.iter().filter(|(_, u)| u.is_completion()) {
                    if !out.contains(b) {
                        out.push(*b);
                    }
                }
            }
        }
        out
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
