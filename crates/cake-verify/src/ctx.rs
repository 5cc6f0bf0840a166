//! The rules' view of one kernel on one target: the facts `cake_ir` derives once, plus helpers
//! for naming things in findings.

use cake_diag::Span;
use cake_ir::sync::Memory;
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

    /// A run-time index as a finding quotes it: its text without parentheses around all of it.
    pub(crate) fn index_text(&self, e: ExprId) -> String {
        unparen(&self.expr_text(e)).to_string()
    }

    /// Canonical text of an expression (for comparing trip counts between roles).
    pub fn expr_text(&self, e: ExprId) -> String {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Dim(d) => k.dims[*d].name.clone(),
            ExprKind::Scalar(p) => k.params[*p].name.clone(),
            ExprKind::LoopVar(l) => k.loops[*l].var_name.clone(),
            ExprKind::TileCoord { tiles, axis } => match &k.loops[*tiles].kind {
                LoopKind::Tiles { names, .. } if *axis < names.len() => names[*axis].clone(),
                _ => format!("tile[{axis}]"),
            },
            ExprKind::RoleIndex(r) => format!("{}.index", k.roles[*r].name),
            ExprKind::PipelineStage(p) => format!("{}.stage", k.pipelines[*p].name),
            ExprKind::Binary(op, a, b) => op.python(&self.expr_text(*a), &self.expr_text(*b)),
            other => format!("{other:?}"),
        }
    }
}

/// One use of a view or TMEM region by an operation.
pub(crate) struct PlaceUse {
    pub(crate) place: Memory,
    /// The finding subject's kind (`view`, `tmem`) and the place's name.
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) stages: u32,
    pub(crate) decl: Span,
    /// The stage it names (`.stage(i)`), if any.
    pub(crate) stage: Option<ExprId>,
    pub(crate) write: bool,
}

impl PlaceUse {
    /// How a finding names the place.
    pub(crate) fn what(&self) -> String {
        match self.kind {
            "view" => format!("view `{}`", self.name),
            _ => format!("TMEM region `{}`", self.name),
        }
    }
}

/// The views and TMEM regions an operation writes and reads.
pub(crate) fn place_uses(k: &Kernel, e: &OpEffects) -> Vec<PlaceUse> {
    let views = [(&e.smem_writes, true), (&e.smem_reads, false)]
        .into_iter()
        .flat_map(|(refs, write)| refs.iter().map(move |v| (v, write)))
        .map(|(v, write)| {
            let view = &k.views[v.view];
            PlaceUse {
                place: Memory::View(v.view),
                kind: "view",
                name: view.name.clone(),
                stages: view.stages,
                decl: k.views.span(v.view),
                stage: v.stage,
                write,
            }
        });
    let tmems = [(&e.tmem_writes, true), (&e.tmem_reads, false)]
        .into_iter()
        .flat_map(|(refs, write)| refs.iter().map(move |t| (t, write)))
        .map(|(t, write)| {
            let region = &k.tmems[t.region];
            PlaceUse {
                place: Memory::Tmem(t.region),
                kind: "tmem",
                name: region.name.clone(),
                stages: region.stages,
                decl: k.tmems.span(t.region),
                stage: t.stage,
                write,
            }
        });
    views.chain(tmems).collect()
}

/// The pipelines of the loops around an operation, outermost first.
pub(crate) fn rings_around(k: &Kernel, loops: &[LoopId]) -> Vec<PipelineId> {
    loops
        .iter()
        .filter_map(|&l| match k.loops[l].kind {
            LoopKind::Range {
                pipeline: Some(p), ..
            } => Some(p),
            _ => None,
        })
        .collect()
}

/// `text` without one pair of parentheses around all of it (`(k + 1)`: `k + 1`).
pub(crate) fn unparen(text: &str) -> &str {
    let Some(inner) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) else {
        return text;
    };
    // Only when the first parenthesis closes at the end: not `(a) + (b)`.
    let mut depth = 0i32;
    for c in inner.chars() {
        depth += match c {
            '(' => 1,
            ')' => -1,
            _ => 0,
        };
        if depth < 0 {
            return text;
        }
    }
    inner
}
