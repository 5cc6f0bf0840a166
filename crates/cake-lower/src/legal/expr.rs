//! Expressions: which index expressions and register values can be evaluated where, the shape
//! analyses of element-wise values (`tile_of`, `row_elementwise`), and the row reductions a block
//! has computed. [`Scope`] is what a condition needs to know about where it is evaluated; the
//! emitter and the legality pass both implement it, so both ask the same functions.

use super::layout::{FragLayout, RowGeom, Site};
use cake_diag::Span;
use cake_ir::*;
use std::collections::HashMap;

/// Problems found in an expression, in the order evaluation meets them.
pub(crate) type Problems = Vec<(Span, String)>;

/// Where an expression is evaluated: the kernel, the register layouts, the pipelined loops
/// around it, the row reductions already computed in its block and the column loads in
/// registers.
pub(crate) trait Scope {
    fn kernel(&self) -> &Kernel;
    fn layout(&self, f: FragId) -> Option<FragLayout>;
    /// The layout of a tile load that a row reduction reads without a fragment (the plan's
    /// `load_layouts`).
    fn load_layout(&self, e: ExprId) -> Option<FragLayout>;
    /// Whether a loop over pipeline `p` encloses the expression.
    fn in_pipeline(&self, p: PipelineId) -> bool;
    /// Whether reduction `e` has been computed in the current block.
    fn reduced(&self, e: ExprId) -> bool;
    /// Whether per-column load `e` is held in a register for the current reduction pass.
    fn col_loaded(&self, e: ExprId) -> bool;

    /// What evaluating index expression `e` (`ix`) cannot do.
    fn scalar_problems(&self, e: ExprId, out: &mut Problems) {
        let k = self.kernel();
        match &k.exprs[e].kind {
            ExprKind::Int(_)
            | ExprKind::Bool(_)
            | ExprKind::Float(_)
            | ExprKind::Dim(_)
            | ExprKind::Scalar(_)
            | ExprKind::LoopVar(_)
            | ExprKind::TileCoord { .. }
            | ExprKind::RoleIndex(_) => {}
            ExprKind::PipelineStage(p) => {
                if !self.in_pipeline(*p) {
                    out.push((
                        k.exprs.span(e),
                        format!(
                            "`{}.stage` is read outside every loop over that pipeline",
                            k.pipelines[*p].name
                        ),
                    ));
                }
            }
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.scalar_problems(*a, out);
                self.scalar_problems(*b, out);
            }
            ExprKind::Unary(UnOp::Neg | UnOp::Not, a) => self.scalar_problems(*a, out),
            ExprKind::Vote { arg, .. } => match vote_site(self.tile_of(*arg)) {
                Ok(site) => self.elem_problems(*arg, site, out),
                Err(m) => out.push((k.exprs.span(e), m)),
            },
            _ => out.push((
                k.exprs.span(e),
                "this expression is not lowered as a scalar yet".into(),
            )),
        }
    }

    /// What evaluating register expression `e` one element at a time, at `site` (`elem`),
    /// cannot do.
    fn elem_problems(&self, e: ExprId, site: Site, out: &mut Problems) {
        let k = self.kernel();
        if k.exprs[e].ty == Ty::Index || k.exprs[e].ty == Ty::Bool {
            return self.scalar_problems(e, out);
        }
        let sp = k.exprs.span(e);
        let row_site = matches!(site, Site::Row(_) | Site::RowVal(_) | Site::RowCol(_));
        match &k.exprs[e].kind {
            ExprKind::Load {
                evict: Some(ev), ..
            } if !row_site => out.push((sp, super::evict_not_lowered("lm.load", *ev))),
            ExprKind::Frag(f) => {
                if !readable_at(self.layout(*f), site) {
                    out.push((
                        sp,
                        format!(
                            "fragment `{}` cannot be read per row here",
                            k.fragments[*f].name
                        ),
                    ));
                }
            }
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Scalar(_) => {}
            ExprKind::Cast(d, a) => {
                self.elem_problems(*a, site, out);
                if !matches!(d, DType::F32 | DType::I32) {
                    out.push((
                        sp,
                        format!("casting a register value to {d} is lowered only inside lm.store"),
                    ));
                }
            }
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.elem_problems(*a, site, out);
                self.elem_problems(*b, site, out);
            }
            ExprKind::Select(c, a, b) => {
                self.elem_problems(*c, site, out);
                self.elem_problems(*a, site, out);
                self.elem_problems(*b, site, out);
            }
            ExprKind::Unary(_, a) => self.elem_problems(*a, site, out),
            ExprKind::Expand { arg, axis } if matches!(site, Site::Row(_)) => {
                let Site::Row(g) = site else { unreachable!() };
                let inner = if *axis == 1 {
                    Site::RowVal(g)
                } else {
                    Site::RowCol(g)
                };
                self.elem_problems(*arg, inner, out)
            }
            ExprKind::Expand { .. } if matches!(site, Site::RowVal(_) | Site::RowCol(_)) => out
                .push((
                    sp,
                    "a broadcast of a broadcast is not lowered in a row-layout value".into(),
                )),
            ExprKind::Expand { arg, axis: 1 } if site == Site::Lane => {
                self.elem_problems(*arg, site, out)
            }
            ExprKind::Expand { arg, axis: 1 } => self.elem_problems(*arg, Site::Rows, out),
            ExprKind::Expand { arg, axis: 0 } => self.elem_problems(*arg, site, out),
            ExprKind::Reduce { .. } if matches!(site, Site::RowCol(_)) => out.push((
                sp,
                "a row reduction is not a per-column value (broadcast it with [:, None])".into(),
            )),
            ExprKind::Reduce { .. } => {
                if !self.reduced(e) {
                    out.push((sp, "this reduction is not lowered here".into()));
                }
            }
            ExprKind::Iota { shape, axis } => {
                if let Err(m) = iota_index(shape, *axis, site) {
                    out.push((sp, m));
                }
            }
            ExprKind::Load { .. } | ExprKind::ViewLoad { .. } if self.col_loaded(e) => {}
            // One element (`shape=()`), the same for every thread: read anywhere.
            ExprKind::Load {
                tensor,
                coords,
                shape,
                ..
            } if shape.is_empty() => {
                for c in coords {
                    self.scalar_problems(*c, out);
                }
                if let ParamKind::Tensor { dtype, .. } = k.params[*tensor].kind {
                    if !matches!(dtype, DType::BF16 | DType::F16 | DType::F32 | DType::I32) {
                        out.push((
                            sp,
                            format!("a one-element load of {dtype} is not lowered yet (bf16, f16, f32 and i32 are)"),
                        ));
                    }
                }
            }
            ExprKind::Load {
                tensor,
                coords,
                shape,
                ..
            } if shape.len() == 1 && matches!(site, Site::Tile | Site::Rows) => {
                // A vector along the tile's columns, or (`[:, None]`) its rows: the last
                // coordinate, then the others.
                let ParamKind::Tensor { dims, .. } = &k.params[*tensor].kind else {
                    return;
                };
                let last = dims.len() - 1;
                self.scalar_problems(coords[last], out);
                for (i, _) in dims.iter().enumerate() {
                    if i != last {
                        self.scalar_problems(coords[i], out);
                    }
                }
            }
            ExprKind::ViewLoad { view, cta } if matches!(site, Site::Tile | Site::Rows) => {
                if let Err(m) = super::view_load(k, view) {
                    out.push((sp, m));
                }
                let rows = view.rows.map(|(start, _)| start);
                for i in rows.into_iter().chain(view.stage).chain(*cta) {
                    self.scalar_problems(i, out);
                }
            }
            _ => out.push((sp, "this register expression is not lowered yet".into())),
        }
    }

    /// The tile layout an element-wise expression is computed over.
    /// Where `view.load` is read in `e`, evaluated at `site`: element by element in a wgmma
    /// accumulator tile's layout (what the f32 `view.store` wrote), from a peer CTA only in a
    /// cluster.
    fn view_load_problems(&self, e: ExprId, site: Site, out: &mut Vec<(Span, String)>) {
        let k = self.kernel();
        let mut loads = Vec::new();
        k.visit_expr(e, |x, kind| {
            // Read into registers already by a row-layout statement (`row_view_read`).
            if let ExprKind::ViewLoad { cta, .. } = kind {
                if !self.col_loaded(x) {
                    loads.push((x, cta.is_some()));
                }
            }
            true
        });
        // A tile in the accumulator's layout, or one value per row of one.
        let tiled = matches!(
            (site, self.tile_of(e)),
            (Site::Tile, Some(FragLayout::WgmmaAcc { .. }))
                | (Site::Rows, Some(FragLayout::AccRows))
        );
        for (x, peer) in loads {
            let sp = k.exprs.span(x);
            if !tiled {
                out.push((
                    sp,
                    "view.load is lowered inside values over a wgmma accumulator tile or over one value per row of one".into(),
                ));
            } else if peer && k.cluster_size() < 2 {
                out.push((
                    sp,
                    "view.load(cta=...) reads a peer CTA's view: it needs a cluster".into(),
                ));
            }
        }
    }

    fn tile_of(&self, e: ExprId) -> Option<FragLayout> {
        match &self.kernel().exprs[e].kind {
            ExprKind::Frag(f) => self.layout(*f),
            ExprKind::Cast(_, a) | ExprKind::Unary(_, a) => self.tile_of(*a),
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                let (x, y) = (self.tile_of(*a), self.tile_of(*b));
                match (x, y) {
                    (Some(l), _) | (_, Some(l)) if l.is_accumulator() => Some(l),
                    // A per-row value broadcast along a row-layout tile takes the tile's layout.
                    (Some(l @ FragLayout::RowTile(_)), _)
                    | (_, Some(l @ FragLayout::RowTile(_))) => Some(l),
                    (Some(l), _) | (_, Some(l)) => Some(l),
                    _ => None,
                }
            }
            ExprKind::Select(c, a, b) => self
                .tile_of(*a)
                .or_else(|| self.tile_of(*b))
                .or_else(|| self.tile_of(*c)),
            ExprKind::Reduce { arg, .. } => match self.tile_of(*arg) {
                Some(FragLayout::RowTile(g)) => Some(FragLayout::RowVals(g)),
                _ => Some(FragLayout::AccRows),
            },
            ExprKind::Expand { arg, .. } => self.tile_of(*arg),
            ExprKind::Load { .. } => self.load_layout(e),
            // A 64-row tile read by a warpgroup is read in the wgmma accumulator's layout.
            ExprKind::ViewLoad { .. } => match &self.kernel().exprs[e].ty {
                Ty::Frag { shape, role, .. }
                    if shape.len() == 2
                        && shape[0] == 64
                        && self.kernel().roles[*role].unit == RoleUnit::Warpgroup =>
                {
                    Some(FragLayout::WgmmaAcc { n: shape[1] })
                }
                // A 1-D view of 64 rows: one value per row, as a (64,) fragment holds it.
                Ty::Frag { shape, role, .. }
                    if shape[..] == [64]
                        && self.kernel().roles[*role].unit == RoleUnit::Warpgroup =>
                {
                    Some(FragLayout::AccRows)
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether `e` is computed element by element from one-row-per-thread tiles, scalars and
    /// constants (what `Site::Lane` can evaluate).
    fn row_elementwise(&self, e: ExprId) -> bool {
        match &self.kernel().exprs[e].kind {
            ExprKind::Frag(f) => matches!(
                self.layout(*f),
                Some(FragLayout::TmemRow { .. } | FragLayout::LaneScalar)
            ),
            ExprKind::Expand { arg, axis: 1 } => self.row_elementwise(*arg),
            ExprKind::Reduce { arg, axis: 1, .. } => {
                matches!(self.tile_of(*arg), Some(FragLayout::TmemRow { .. }))
                    && self.row_elementwise(*arg)
            }
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) | ExprKind::Scalar(_) => true,
            ExprKind::Cast(_, a) | ExprKind::Unary(_, a) => self.row_elementwise(*a),
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.row_elementwise(*a) && self.row_elementwise(*b)
            }
            ExprKind::Select(c, a, b) => {
                self.row_elementwise(*c) && self.row_elementwise(*a) && self.row_elementwise(*b)
            }
            _ => false,
        }
    }

    /// Per-column vector loads (`lm.load` of shape (N,)) inside `e`.
    /// Reductions are not entered (they read their argument per element themselves), nor
    /// broadcasts along any axis but the first.
    fn column_loads(&self, e: ExprId, out: &mut Vec<ExprId>) {
        self.kernel().visit_expr(e, |id, kind| match kind {
            ExprKind::Load { shape, .. } => {
                if shape.len() == 1 && !out.contains(&id) {
                    out.push(id);
                }
                false
            }
            ExprKind::Reduce { .. } => false,
            ExprKind::Expand { axis, .. } => *axis == 0,
            _ => true,
        });
    }

    /// The per-column loads of `body`'s row reductions over wgmma-layout tiles that are issued
    /// ahead of them in a loop iteration, with the tile's columns: loads of tensors the kernel never
    /// writes, in statements of the body itself, not issued already (`issued`), each once.
    fn loads_to_prefetch(
        &self,
        kf: &KernelFacts,
        body: &[StmtId],
        issued: &dyn Fn(ExprId) -> bool,
    ) -> Vec<(ExprId, u32)> {
        let k = self.kernel();
        let access = super::tensor_access(k, kf);
        let written = |t: &ParamId| access.get(t).is_some_and(|a| a.1);
        let mut reductions = Vec::new();
        for &s in body {
            if let Stmt::Op(
                Op::Assign { value, .. } | Op::Store { value, .. } | Op::SmemStore { value, .. },
            ) = &k.stmts[s]
            {
                reductions_in(k, *value, &mut reductions);
            }
            if let Stmt::Op(Op::AssignMany { pairs }) = &k.stmts[s] {
                for (_, value) in pairs {
                    reductions_in(k, *value, &mut reductions);
                }
            }
        }
        let mut out: Vec<(ExprId, u32)> = Vec::new();
        for r in reductions {
            let ExprKind::Reduce { arg, axis: 1, .. } = k.exprs[r].kind else {
                continue;
            };
            let Some(FragLayout::WgmmaAcc { n }) = self.tile_of(arg) else {
                continue;
            };
            let mut loads = Vec::new();
            self.column_loads(arg, &mut loads);
            for l in loads {
                let ExprKind::Load { tensor, .. } = k.exprs[l].kind else {
                    continue;
                };
                if written(&tensor) || issued(l) || out.iter().any(|(x, _)| *x == l) {
                    continue;
                }
                out.push((l, n));
            }
        }
        out
    }

    /// A row reduction of `arg` along `axis`: the tile it runs over.
    fn reduction_tile(&self, arg: ExprId, axis: usize) -> Result<ReductionTile, String> {
        match self.tile_of(arg) {
            Some(FragLayout::WgmmaAcc { n }) if axis == 1 => Ok(ReductionTile::Quad(n)),
            Some(FragLayout::TmemRow { n }) if axis == 1 => Ok(ReductionTile::Lanes(n)),
            Some(FragLayout::RowTile(g)) if axis == 1 => Ok(ReductionTile::Rows(g)),
            _ => Err(
                "reductions are lowered along the columns (axis=1) of an accumulator tile or a row-layout tile; a reduction of loads alone takes its rows from the per-row fragment (rows=) it is assigned to, with as many rows as the loaded tile".into(),
            ),
        }
    }
}

/// Where the argument of a warp vote (`lm.any`, `lm.all`) is evaluated: at every element of
/// the MMA accumulator tile, or every row value, it is laid out like; the thread combines its
/// elements, then the warp votes.
pub(crate) fn vote_site(layout: Option<FragLayout>) -> Result<Site, String> {
    match layout {
        Some(FragLayout::AccRows) => Ok(Site::Rows),
        Some(FragLayout::WgmmaAcc { .. } | FragLayout::MmaAcc { .. }) => Ok(Site::Tile),
        _ => Err("lm.any and lm.all are lowered over MMA accumulator tiles (wgmma, mma.sync) and their per-row values".into()),
    }
}

/// What `replica_sync_under_vote` names.
pub(crate) const SYNCED_WORK: &str =
    "this operation (a store through shared memory, or a row reduction across warps)";

/// A synchronisation of the role's replica under a warp vote: only the warps whose vote chose
/// the branch would arrive, and the others' never come.
pub(crate) fn replica_sync_under_vote(warp_branches: u32, what: &str) -> Result<(), String> {
    if warp_branches == 0 {
        return Ok(());
    }
    Err(format!(
        "{what} synchronises every warp of the role's replica, but it sits in a branch on a warp vote (lm.any / lm.all), which each warp takes on its own: move it out of the branch"
    ))
}

/// Which index of its element an `lm.iota` evaluated at a site holds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum IotaIndex {
    Row,
    Column,
}

/// `lm.iota(shape, axis)` at `site`: its axis counts from the right like a broadcast (the last
/// axis is the tile's columns, the one before its rows); at a per-row site a 1-D iota counts
/// rows.
pub(crate) fn iota_index(shape: &[u32], axis: usize, site: Site) -> Result<IotaIndex, String> {
    let from_right = shape.len() - 1 - axis;
    let per_row = matches!(site, Site::Rows | Site::RowVal(_));
    match (from_right, per_row, site) {
        (0, true, _) => Ok(IotaIndex::Row),
        (0, false, _) => Ok(IotaIndex::Column),
        (1, false, Site::Tile | Site::Lane | Site::Row(_)) => Ok(IotaIndex::Row),
        _ => Err(format!(
            "lm.iota of shape {shape:?} along axis {axis} is not lowered here: it is lowered along the rows or columns of the tile it is evaluated over"
        )),
    }
}

/// The tile a row reduction runs over.
#[derive(Clone, Copy)]
pub(crate) enum ReductionTile {
    /// A wgmma-layout tile of `n` columns: rows shared by the four threads of a quad.
    Quad(u32),
    /// A one-row-per-thread TMEM tile of `n` columns.
    Lanes(u32),
    /// A row-layout tile.
    Rows(RowGeom),
}

/// Whether a fragment of `layout` can be read one element at a time at `site`.
fn readable_at(layout: Option<FragLayout>, site: Site) -> bool {
    match (layout, site) {
        (Some(FragLayout::RowTile(l)), Site::Row(g)) => l == g,
        (Some(FragLayout::RowVals(l)), Site::Row(g) | Site::RowVal(g)) => l.same_rows(g),
        (Some(FragLayout::RowTile(_) | FragLayout::RowVals(_)), _)
        | (_, Site::Row(_) | Site::RowVal(_) | Site::RowCol(_)) => false,
        _ => readable_at_mma(layout, site),
    }
}

fn readable_at_mma(layout: Option<FragLayout>, site: Site) -> bool {
    matches!(
        (layout, site),
        (Some(FragLayout::WgmmaAcc { .. }), Site::Tile)
            | (Some(FragLayout::MmaAcc { .. }), Site::Tile)
            | (Some(FragLayout::AccRows), _)
            | (Some(FragLayout::TmemRow { .. }), Site::Lane)
            | (Some(FragLayout::LaneScalar), _)
    )
}

/// `lm.cast(x, d)` written into a destination of the same 16-bit float type `d`: (x, d). The
/// store packs two elements per 32-bit word.
pub(crate) fn cast_to_16bit(k: &Kernel, value: ExprId, dst: DType) -> Option<(ExprId, DType)> {
    match (&k.exprs[value].kind, dst) {
        (ExprKind::Cast(DType::BF16, x), DType::BF16) => Some((*x, DType::BF16)),
        (ExprKind::Cast(DType::F16, x), DType::F16) => Some((*x, DType::F16)),
        _ => None,
    }
}

/// The reductions inside `e` (each once).
/// A reduction's own argument is not entered: its inner reductions are its own business.
fn reductions_in(k: &Kernel, e: ExprId, out: &mut Vec<ExprId>) {
    k.visit_expr(e, |id, kind| match kind {
        ExprKind::Reduce { .. } => {
            if !out.contains(&id) {
                out.push(id);
            }
            false
        }
        _ => true,
    });
}

/// Where row reductions inside `e` are searched for before `e` is evaluated: its operands,
/// not a reduction's argument.
pub(crate) fn reduction_operands(k: &Kernel, e: ExprId) -> Vec<ExprId> {
    let mut out = Vec::new();
    match &k.exprs[e].kind {
        // A reduction's own argument is reduced per element by its pass; a load's coordinates
        // are indices.
        ExprKind::Reduce { .. } | ExprKind::Load { .. } => {}
        kind => kind.for_each_child(|c| out.push(c)),
    }
    out
}

/// Whether the row reduction `op` of `arg` needs the fused value/index pass: it is an
/// arg-reduction, or a min (max) whose argument some argmin (argmax) of the kernel also reduces
/// along `axis` with the same `packed` (the two then share one pass). A plain min/max/sum keeps
/// no index.
pub(crate) fn reduction_tracks_index(
    k: &Kernel,
    (arg, op, axis, packed): (ExprId, ReduceOp, usize, bool),
) -> bool {
    let sibling = match op {
        ReduceOp::ArgMin | ReduceOp::ArgMax => return true,
        ReduceOp::Sum => return false,
        ReduceOp::Min => ReduceOp::ArgMin,
        ReduceOp::Max => ReduceOp::ArgMax,
    };
    k.exprs.iter().any(|(_, x)| {
        matches!(x.kind, ExprKind::Reduce { op: o, axis: a, arg: g, packed: p }
            if o == sibling && a == axis && g == arg && p == packed)
    })
}

/// The row reductions computed in the current block: expression → what holds its result (the
/// emitter's array name; nothing for the pass), and (argument, op, packed) → the same, for reuse
/// by structurally equal reductions.
pub(crate) struct Reductions<N> {
    by_expr: HashMap<ExprId, N>,
    keys: Vec<(ExprId, ReduceOp, bool, N)>,
}

impl<N> Default for Reductions<N> {
    fn default() -> Self {
        Reductions {
            by_expr: HashMap::new(),
            keys: Vec::new(),
        }
    }
}

impl<N: Clone> Reductions<N> {
    pub(crate) fn get(&self, e: ExprId) -> Option<&N> {
        self.by_expr.get(&e)
    }

    pub(crate) fn contains(&self, e: ExprId) -> bool {
        self.by_expr.contains_key(&e)
    }

    /// A structurally equal reduction already computed in this block (same op, same argument):
    /// `e` takes its result.
    pub(crate) fn reuse_twin(
        &mut self,
        e: ExprId,
        arg: ExprId,
        op: ReduceOp,
        packed: bool,
    ) -> bool {
        let twin = self
            .keys
            .iter()
            .find(|(a, o, p, _)| *a == arg && *o == op && *p == packed)
            .map(|(_, _, _, n)| n.clone());
        match twin {
            Some(n) => {
                self.by_expr.insert(e, n);
                true
            }
            None => false,
        }
    }

    /// Reduction `e` was computed into `value` and `index`: record it and the other reductions
    /// the same pass computes (min/argmin, max/argmax of one argument share it). A plain pass
    /// (`index` None: a min or max no arg-reduction needs) computes only `e`'s own operator.
    pub(crate) fn computed(
        &mut self,
        e: ExprId,
        (arg, op, packed): (ExprId, ReduceOp, bool),
        value: N,
        index: Option<N>,
    ) {
        let Some(index) = index else {
            self.by_expr.insert(e, value.clone());
            self.keys.push((arg, op, packed, value));
            return;
        };
        let pick = |o: ReduceOp| {
            if matches!(o, ReduceOp::ArgMin | ReduceOp::ArgMax) {
                index.clone()
            } else {
                value.clone()
            }
        };
        self.by_expr.insert(e, pick(op));
        let siblings: &[ReduceOp] = match op {
            ReduceOp::Min | ReduceOp::ArgMin => &[ReduceOp::Min, ReduceOp::ArgMin],
            ReduceOp::Max | ReduceOp::ArgMax => &[ReduceOp::Max, ReduceOp::ArgMax],
            ReduceOp::Sum => &[ReduceOp::Sum],
        };
        for o in siblings {
            self.keys.push((arg, *o, packed, pick(*o)));
        }
    }

    /// Forget reductions that read `f` (it is about to change) — or all of them.
    pub(crate) fn invalidate(&mut self, k: &Kernel, f: Option<FragId>) {
        match f {
            None => {
                self.by_expr.clear();
                self.keys.clear();
            }
            Some(f) => {
                self.by_expr.retain(|e, _| !k.expr_reads_fragment(*e, f));
                self.keys
                    .retain(|(a, _, _, _)| !k.expr_reads_fragment(*a, f));
            }
        }
    }
}
