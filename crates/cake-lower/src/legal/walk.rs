//! The pass: the kernel walked as the emitter walks it — the tile counts, one branch per role,
//! and inside it the role's statements in program order — asking at each construct the
//! condition the emitter asks, in the same order, with the context it would have: the role, the
//! pipelined loops around the statement, the row reductions computed in the block, the column
//! loads issued early. Nothing is emitted.

use super::expr::{
    reduction_operands, reduction_tracks_index, replica_sync_under_vote, Problems, ReductionTile,
    Reductions, Scope, SYNCED_WORK,
};
use super::layout::{FragLayout, RowGeom, Site};
use super::ops::*;
use super::rows::{global_scatter_add, row_loads, row_reduction, row_store};
use super::Plan;
use crate::mma::{MmaBackend, MmaCall};
use crate::Unsupported;
use cake_diag::Span;
use cake_ir::*;
use cake_target::Target;
use std::collections::HashSet;

pub(crate) struct Checker<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) kf: &'a KernelFacts,
    pub(crate) target: &'a Target,
    plan: &'a Plan,
    backend: &'static dyn MmaBackend,
    errors: Vec<Unsupported>,
    /// Role whose branch is being walked, and whether it runs on one thread per replica.
    pub(crate) role: Option<(RoleId, bool)>,
    /// Pipelined loops enclosing the current statement: (loop, pipeline).
    pipes: Vec<(LoopId, PipelineId)>,
    /// Depth of the current role's `with` regions around the statement.
    depth: u32,
    /// Row reductions computed in the current block.
    reductions: Reductions<()>,
    /// Column loads issued at the top of the current loop iteration.
    prefetched: HashSet<ExprId>,
    /// Column loads held in registers by the reduction pass being checked.
    col_loads: HashSet<ExprId>,
    /// Loads of the row-layout value being checked, read into registers before it.
    row_loaded: HashSet<ExprId>,
    /// How many branches on a warp vote enclose the statement.
    warp_branches: u32,
    /// `lm.ahead` regions the lowering issues early: each opens the body of a plain pipelined
    /// loop.
    ahead_lowered: HashSet<StmtId>,
}

impl Scope for Checker<'_> {
    fn kernel(&self) -> &Kernel {
        self.k
    }
    fn layout(&self, f: FragId) -> Option<FragLayout> {
        self.plan.frag_layouts.get(&f).copied()
    }
    fn load_layout(&self, e: ExprId) -> Option<FragLayout> {
        self.plan.load_layouts.get(&e).copied()
    }
    fn in_pipeline(&self, p: PipelineId) -> bool {
        self.pipes.iter().any(|(_, q)| *q == p)
    }
    fn reduced(&self, e: ExprId) -> bool {
        self.reductions.contains(e)
    }
    fn col_loaded(&self, e: ExprId) -> bool {
        self.col_loads.contains(&e) || self.row_loaded.contains(&e)
    }
}

impl<'a> Checker<'a> {
    pub(crate) fn new(
        k: &'a Kernel,
        kf: &'a KernelFacts,
        plan: &'a Plan,
        backend: &'static dyn MmaBackend,
    ) -> Self {
        Checker {
            k,
            kf,
            target: kf.target,
            plan,
            backend,
            errors: Vec::new(),
            role: None,
            pipes: Vec::new(),
            depth: 0,
            reductions: Reductions::default(),
            prefetched: HashSet::new(),
            col_loads: HashSet::new(),
            row_loaded: HashSet::new(),
            warp_branches: 0,
            ahead_lowered: HashSet::new(),
        }
    }

    pub(crate) fn unsupported(&mut self, span: Span, message: impl Into<String>) {
        super::record(&mut self.errors, span, message);
    }

    fn report(&mut self, problems: Problems) {
        for (sp, m) in problems {
            self.unsupported(sp, m);
        }
    }

    /// Index expression `e` is evaluated here.
    pub(crate) fn ix(&mut self, e: ExprId) {
        let mut p = Vec::new();
        self.scalar_problems(e, &mut p);
        self.report(p);
    }

    /// Register expression `e` is evaluated here, one element at `site`.
    pub(crate) fn elem(&mut self, e: ExprId, site: Site) {
        let mut p = Vec::new();
        self.elem_problems(e, site, &mut p);
        self.view_load_problems(e, site, &mut p);
        self.report(p);
    }

    /// The address of `v`'s stage is taken: an explicit stage is evaluated.
    pub(crate) fn view_base(&mut self, v: &ViewRef) {
        if let Some(st) = v.stage {
            self.ix(st);
        }
    }

    /// The address of TMEM region `t`'s stage is taken: an explicit stage is evaluated.
    pub(crate) fn tmem_stage(&mut self, t: &TmemRef) {
        if let Some(st) = t.stage {
            self.ix(st);
        }
    }

    /// The first row of `v`'s row range is evaluated.
    pub(crate) fn rows_start(&mut self, v: &ViewRef) {
        if let Some((start, _)) = v.rows {
            self.ix(start);
        }
    }

    /// Reductions cached for the block that read `f` are stale.
    pub(crate) fn invalidate(&mut self, f: FragId) {
        self.reductions.invalidate(self.k, Some(f));
    }

    pub(crate) fn run(mut self) -> Vec<Unsupported> {
        let k = self.k;
        self.errors = self.plan.errors.clone();
        for c in tile_counts(k) {
            self.ix(c);
        }
        for (rid, _) in k.roles.iter() {
            if let Err(m) = role_warp_range(k, rid) {
                self.unsupported(k.roles.span(rid), m);
                continue;
            }
            for (fid, f) in k.fragments.iter() {
                if f.role == rid {
                    if let Err(m) = declared_layout(k, fid, self.layout(fid)) {
                        self.unsupported(k.fragments.span(fid), m);
                    }
                }
            }
            self.role = Some((rid, self.kf.issue_only[rid.index()]));
            self.block(&k.body);
            self.role = None;
        }
        self.errors
    }

    fn block(&mut self, block: &[StmtId]) {
        for &s in block {
            self.stmt(s);
        }
    }

    fn role_work(&self, block: &Block) -> bool {
        let (role, _) = self.role.expect("walking a role");
        has_role_work(self.k, role, block, self.depth > 0)
    }

    fn stmt(&mut self, s: StmtId) {
        let k = self.k;
        if !matches!(k.stmts[s], Stmt::Op(_)) {
            self.reductions.invalidate(k, None);
        }
        match &k.stmts[s] {
            Stmt::Role { role, body } => {
                if Some(*role) == self.role.map(|r| r.0) {
                    let entering = self.depth == 0;
                    self.depth += 1;
                    if entering {
                        // As the emitter: the region's column loads go out before its first wait.
                        let at = super::first_wait(k, body);
                        self.block(&body[..at]);
                        let saved = self.prefetch_column_loads(body);
                        self.block(&body[at..]);
                        self.prefetched = saved;
                    } else {
                        self.block(body);
                    }
                    self.depth -= 1;
                }
            }
            Stmt::Loop { id, body } => {
                if !self.role_work(body) {
                    return;
                }
                match &k.loops[*id].kind {
                    LoopKind::Tiles { .. } => self.block(body),
                    LoopKind::Range {
                        start,
                        stop,
                        pipeline,
                    } => self.range_loop(*id, *start, *stop, *pipeline, body),
                }
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                if !self.role_work(then_body) && !self.role_work(else_body) {
                    return;
                }
                self.precompute_reductions(*cond);
                self.ix(*cond);
                let voted = k.expr_votes(*cond);
                self.warp_branches += u32::from(voted);
                self.block(then_body);
                self.block(else_body);
                self.warp_branches -= u32::from(voted);
            }
            Stmt::Ahead { body, .. } => {
                if !self.role_work(body) {
                    return;
                }
                if !self.ahead_lowered.contains(&s) {
                    self.unsupported(k.stmts.span(s), AHEAD_PLACES);
                }
                self.block(body);
            }
            Stmt::Op(op) => {
                if self.depth > 0 {
                    self.op(op, k.stmts.span(s));
                }
            }
        }
    }

    fn range_loop(
        &mut self,
        id: LoopId,
        start: ExprId,
        stop: ExprId,
        pipeline: Option<PipelineId>,
        body: &Block,
    ) {
        self.ix(start);
        self.ix(stop);
        let deferred = cake_ir::sync::deferred_mma(self.k, body, pipeline);
        if let Ok(Some(parts)) = deferred {
            self.deferred_loop(parts, body);
        }
        if let Some(p) = pipeline {
            if let Some(pair) = self.backend.double_buffered(self.k, body, p) {
                return self.double_buffered_loop(id, p, pair, body);
            }
        }
        if let Some(p) = pipeline {
            self.pipes.push((id, p));
            // A rotated loop (a deferred MMA) is emitted in parts of its own: not yet with a
            // region issued early.
            if let (Some((s, _, _)), Ok(None)) = (self.k.leading_ahead(body), &deferred) {
                self.ahead_lowered.insert(s);
            }
        }
        let saved = self.prefetch_column_loads(body);
        self.block(body);
        self.prefetched = saved;
        if pipeline.is_some() {
            self.pipes.pop();
        }
    }

    /// A loop with a deferred MMA: lowered by families that implement it, and only with the
    /// releases of its middle on the first or the deferred MMA (an arrival that waits for the
    /// MMAs to retire is made where the loop's reads wait anyway, at the iteration's top level).
    fn deferred_loop(&mut self, parts: cake_ir::sync::DeferredMma, body: &Block) {
        let k = self.k;
        let deferred = body[body.len() - 1];
        if !self.backend.lowers_mma_scheduling() {
            self.unsupported(
                k.stmts.span(deferred),
                super::mma_scheduling_not_lowered("defer"),
            );
            return;
        }
        for &s in &body[parts.head..parts.tail] {
            let mut ops = Vec::new();
            crate::mma::nested_ops(k, s, &mut ops);
            if ops.iter().any(|op| {
                matches!(
                    op,
                    Op::Mma {
                        release: Some(_),
                        ..
                    }
                )
            }) {
                self.unsupported(
                    k.stmts.span(s),
                    "an MMA with `release=` between a loop's first MMA and its deferred MMA is not lowered yet: release the stage on the first or the deferred MMA",
                );
            }
        }
    }

    /// The backend's double-buffered loop: the wait and the MMA (without its release) are
    /// issued ahead of the rest of the body, which runs with the reductions of the block
    /// forgotten on both sides. The loop is unrolled by two; both halves check the same.
    fn double_buffered_loop(
        &mut self,
        id: LoopId,
        p: PipelineId,
        (wait, mma): (StmtId, StmtId),
        body: &Block,
    ) {
        let k = self.k;
        let Stmt::Op(Op::Mma {
            acc: Operand::Frag(f),
            a,
            b,
            accumulate,
            ..
        }) = &k.stmts[mma]
        else {
            return;
        };
        let Stmt::Op(wait_op) = &k.stmts[wait] else {
            return;
        };
        self.pipes.push((id, p));
        self.op(wait_op, k.stmts.span(wait));
        let backend = self.backend;
        backend.check_mma(
            self,
            &MmaCall {
                acc: &Operand::Frag(*f),
                a,
                b,
                accumulate: *accumulate,
                release: None,
                turns: false,
                sp: k.stmts.span(mma),
            },
        );
        self.reductions.invalidate(k, None);
        for &s in &body[2..] {
            self.stmt(s);
        }
        self.reductions.invalidate(k, None);
        self.pipes.pop();
    }

    /// The per-column loads of the loop body's row reductions over wgmma tiles, issued at the
    /// top of the iteration (loads of tensors the kernel never writes, in the current role's
    /// statements). Returns the previous set, restored after the body.
    fn prefetch_column_loads(&mut self, body: &Block) -> HashSet<ExprId> {
        let saved = self.prefetched.clone();
        if self.depth == 0 {
            return saved;
        }
        let loads = self.loads_to_prefetch(self.kf, body, &|l| self.prefetched.contains(&l));
        for (l, _) in loads {
            self.elem(l, Site::Tile);
            self.prefetched.insert(l);
        }
        saved
    }

    /// Every row reduction inside `e` is computed before `e` is evaluated (or reused from the
    /// block).
    pub(crate) fn precompute_reductions(&mut self, e: ExprId) {
        let k = self.k;
        for c in reduction_operands(k, e) {
            self.precompute_reductions(c);
        }
        let ExprKind::Reduce {
            op,
            axis,
            arg,
            packed,
        } = k.exprs[e].kind
        else {
            return;
        };
        if self.reductions.contains(e) || self.reductions.reuse_twin(e, arg, op, packed) {
            return;
        }
        let tile = match self.reduction_tile(arg, axis) {
            Ok(tile) => tile,
            Err(m) => {
                // Recorded as computed: its readers are not reported again.
                self.unsupported(k.exprs.span(e), m);
                self.reductions.computed(e, (arg, op, packed), (), None);
                return;
            }
        };
        let index = reduction_tracks_index(k, (arg, op, axis, packed));
        if let ReductionTile::Rows(g) = tile {
            if let Err(m) = row_reduction(k, arg, op, index) {
                // Recorded as computed: its readers are not reported again.
                self.unsupported(k.exprs.span(e), m);
                self.reductions.computed(e, (arg, op, packed), (), None);
                return;
            }
            self.row_value(arg, g, true);
            if g.t > 32 {
                let (role, issue_only) = self.role.expect("role");
                let what = "a row reduction across the warps of a warpgroup";
                if let Err(m) = replica_threads(k, role, issue_only, what) {
                    self.unsupported(k.exprs.span(e), m);
                }
                self.replica_sync(k.exprs.span(e));
            }
            self.reductions.computed(e, (arg, op, packed), (), None);
            return;
        }
        if matches!(tile, ReductionTile::Lanes(_)) {
            self.elem(arg, Site::Lane);
        } else {
            let mut loads = Vec::new();
            self.column_loads(arg, &mut loads);
            for l in loads {
                if !self.prefetched.contains(&l) {
                    self.elem(l, Site::Tile);
                }
                self.col_loads.insert(l);
            }
            self.elem(arg, Site::Tile);
            self.col_loads.clear();
        }
        self.reductions
            .computed(e, (arg, op, packed), (), index.then_some(()));
    }

    /// A value evaluated over a row-layout tile `g` (element by element when `tile`, once per
    /// row otherwise), after its loads are read into registers.
    fn row_value(&mut self, value: ExprId, g: RowGeom, tile: bool) {
        let k = self.k;
        match row_loads(k, value, g, tile) {
            Err((sp, m)) => self.unsupported(sp, m),
            Ok(loads) => {
                for (l, _) in loads {
                    match &k.exprs[l].kind {
                        ExprKind::Load { coords, .. } => {
                            for c in coords {
                                self.ix(*c);
                            }
                        }
                        ExprKind::ViewLoad { view, .. } => {
                            for i in view
                                .rows
                                .map(|(start, _)| start)
                                .into_iter()
                                .chain(view.stage)
                            {
                                self.ix(i);
                            }
                        }
                        _ => {}
                    }
                    self.row_loaded.insert(l);
                }
                let site = if tile { Site::Row(g) } else { Site::RowVal(g) };
                self.elem(value, site);
                self.row_loaded.clear();
            }
        }
    }

    fn replica_sync(&mut self, sp: Span) {
        let (role, _) = self.role.expect("role");
        if let Err(m) = replica_barrier(self.k, self.kf, role)
            .and(replica_sync_under_vote(self.warp_branches, SYNCED_WORK))
        {
            self.unsupported(sp, m);
        }
    }

    fn op(&mut self, op: &Op, sp: Span) {
        let k = self.k;
        let (role, issue_only) = self.role.expect("inside a role");
        let backend = self.backend;
        match op {
            Op::Wait { .. } | Op::Arrive { .. } | Op::FenceProxyAsync => {}
            Op::StreamFixup { frag } => {
                if let Err(m) =
                    stream_fixup_registers(k, role, issue_only, *frag, self.layout(*frag))
                {
                    self.unsupported(sp, m);
                }
            }
            Op::TmaLoad {
                dst,
                src,
                coords,
                multicast,
                ..
            } => match tma_load(k, self.target, dst, *src, *multicast) {
                Err(m) => self.unsupported(sp, m),
                Ok(()) => {
                    self.view_base(dst);
                    self.rows_start(dst);
                    for c in coords {
                        self.ix(*c);
                    }
                }
            },
            Op::Mma {
                acc,
                a,
                b,
                accumulate,
                release,
                turns,
                ..
            } => {
                let call = MmaCall {
                    acc,
                    a,
                    b,
                    accumulate: *accumulate,
                    release: *release,
                    turns: *turns,
                    sp,
                };
                backend.check_mma(self, &call);
                if *turns {
                    let lowered = if backend.lowers_mma_scheduling() {
                        let (role, _) = self.role.expect("walking a role");
                        super::turn_barriers(self.k, self.kf, role).err()
                    } else {
                        Some(super::mma_scheduling_not_lowered("turns"))
                    };
                    if let Some(m) = lowered {
                        self.unsupported(sp, m);
                    }
                }
                if let Operand::Frag(f) = acc {
                    self.invalidate(*f);
                }
            }
            Op::Store {
                dst,
                value,
                coords,
                transposed,
                evict,
            } => self.store(*dst, *value, coords, *transposed, *evict, sp),
            Op::Assign { dst, value } => self.assign(*dst, *value, sp),
            Op::AssignMany { pairs } => self.assign_many(pairs, sp),
            Op::GlobalScatterAdd {
                dst,
                value,
                index,
                coords,
                ..
            } => {
                let ParamKind::Tensor { dims, .. } = &k.params[*dst].kind else {
                    return;
                };
                self.precompute_reductions(*value);
                self.precompute_reductions(*index);
                match global_scatter_add(self.tile_of(*value), dims, coords) {
                    Err(m) => self.unsupported(sp, m),
                    Ok(g) => {
                        for c in coords {
                            self.ix(*c);
                        }
                        self.row_value(*value, g, true);
                        self.row_value(*index, g, false);
                    }
                }
            }
            Op::SmemStore { dst, value } if k.const_number(*value).is_some() => {
                match replica_threads(k, role, issue_only, "view.store of a constant")
                    .and_then(|_| smem_fill(k, dst, *value))
                {
                    Err(m) => self.unsupported(sp, m),
                    Ok(_) => {
                        self.view_base(dst);
                        self.rows_start(dst);
                        self.replica_sync(sp);
                    }
                }
            }
            Op::SmemStore { dst, value } => {
                match smem_store(k, dst, *value, self.tile_of(*value)) {
                    Err(m) => self.unsupported(sp, m),
                    Ok(kind) => {
                        let (inner, site) = match kind {
                            SmemStore::Swizzled16 { inner, .. }
                            | SmemStore::Swizzled16T { inner, .. } => (inner, Site::Tile),
                            SmemStore::F32 { .. } => (*value, Site::Tile),
                            SmemStore::Rows => (*value, Site::Rows),
                        };
                        self.precompute_reductions(*value);
                        self.elem(inner, site);
                        self.view_base(dst);
                        self.rows_start(dst);
                        self.replica_sync(sp);
                    }
                }
            }
            Op::ScatterAdd {
                dst,
                src,
                index,
                offset,
                valid_rows,
                counts,
            } => match replica_threads(k, role, issue_only, "scatter_add")
                .and_then(|_| scatter_add(k, dst, src))
            {
                Err(m) => self.unsupported(sp, m),
                Ok(()) => {
                    if let Some(e) = valid_rows {
                        self.ix(*e);
                    }
                    self.ix(*offset);
                    for v in [Some(index), Some(src), Some(dst), counts.as_ref()]
                        .into_iter()
                        .flatten()
                    {
                        self.view_base(v);
                        self.rows_start(v);
                    }
                }
            },
            Op::Sync { barrier } => {
                if let Err(m) = named_sync(*barrier, issue_only) {
                    self.unsupported(sp, m);
                }
            }
            // Copies out of a view: the replica's threads meet around them.
            Op::TmaStore {
                dst, src, coords, ..
            }
            | Op::CopyTo {
                dst, src, coords, ..
            } => {
                let legal = match op {
                    Op::TmaStore { .. } => tma_store(k, *dst, src),
                    _ => replica_threads(k, role, issue_only, "copy_to")
                        .and_then(|_| copy_to(k, *dst, src)),
                };
                match legal {
                    Err(m) => self.unsupported(sp, m),
                    Ok(()) => {
                        self.view_base(src);
                        self.rows_start(src);
                        for c in coords {
                            self.ix(*c);
                        }
                        self.replica_sync(sp);
                    }
                }
            }
            Op::CpAsync { evict: Some(e), .. } => {
                self.unsupported(sp, super::cp_async_evict_not_lowered(*e))
            }
            Op::CpAsync {
                dst, src, coords, ..
            } => match cp_async(k, dst, *src) {
                Err(m) => self.unsupported(sp, m),
                Ok(_) => {
                    for c in coords {
                        self.ix(*c);
                    }
                    self.view_base(dst);
                    self.rows_start(dst);
                }
            },
            Op::Ldmatrix { .. }
            | Op::Commit { .. }
            | Op::TmemLoad { .. }
            | Op::TmemStore { .. }
            | Op::TmemCopy { .. } => match super::family_op(backend, op, self.target) {
                Err(m) => self.unsupported(sp, m),
                Ok(()) => backend.check_family_op(self, op, sp),
            },
        }
    }

    fn store(
        &mut self,
        dst: ParamId,
        value: ExprId,
        coords: &[ExprId],
        transposed: bool,
        evict: Option<Evict>,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = &k.params[dst].kind else {
            return;
        };
        self.precompute_reductions(value);
        let kind = store_kind(self.tile_of(value), transposed);
        if let (Some(e), Ok(kind)) = (evict, &kind) {
            if !matches!(kind, StoreKind::RowLayout(_)) {
                self.unsupported(sp, super::evict_not_lowered("lm.store", e));
            }
        }
        let others = |me: &mut Self, axis: usize| {
            for i in (0..dims.len()).filter(|i| *i != axis) {
                me.ix(coords[i]);
            }
        };
        match kind {
            Err(m) => self.unsupported(sp, m),
            Ok(StoreKind::RowLayout(layout)) => {
                match row_store(k, value, layout, *dtype, dims, coords) {
                    Err(m) => self.unsupported(sp, m),
                    Ok(inner) => {
                        for c in coords {
                            self.ix(*c);
                        }
                        match layout {
                            FragLayout::RowTile(g) => self.row_value(inner, g, true),
                            FragLayout::RowVals(g) => self.row_value(inner, g, false),
                            _ => {}
                        }
                    }
                }
            }
            Ok(StoreKind::Rows) => {
                let last = dims.len() - 1;
                self.ix(coords[last]);
                self.elem(value, Site::Rows);
                others(self, last);
            }
            Ok(StoreKind::TmemRows(_)) => {
                match store_tmem_rows(k, value, *dtype, dims, coords, |e| self.row_elementwise(e)) {
                    Err(m) => self.unsupported(sp, m),
                    Ok((inner, _)) => {
                        let (ra, ca) = (dims.len() - 2, dims.len() - 1);
                        self.ix(coords[ra]);
                        self.ix(coords[ca]);
                        self.precompute_reductions(inner);
                        self.elem(inner, Site::Lane);
                        others(self, ra);
                    }
                }
            }
            Ok(StoreKind::Tile(_)) => {
                if let Err(m) = store_tile_shape(dims, coords) {
                    return self.unsupported(sp, m);
                }
                for c in coords {
                    self.ix(*c);
                }
                match store_tile_value(k, value, *dtype) {
                    Err(m) => self.unsupported(sp, m),
                    Ok((inner, _)) => self.elem(inner, Site::Tile),
                }
            }
        }
    }

    fn assign_many(&mut self, pairs: &[(FragId, ExprId)], sp: Span) {
        for (_, value) in pairs {
            self.precompute_reductions(*value);
        }
        match assign_many_layout(self.k, pairs, |f| self.layout(f)) {
            Err(m) => self.unsupported(sp, m),
            Ok(layout) => {
                for (_, value) in pairs {
                    match layout {
                        FragLayout::RowVals(g) => self.row_value(*value, g, false),
                        FragLayout::RowTile(g) => self.row_value(*value, g, true),
                        _ => {}
                    }
                }
            }
        }
        for (dst, _) in pairs {
            self.invalidate(*dst);
        }
    }

    fn assign(&mut self, dst: FragId, value: ExprId, sp: Span) {
        let k = self.k;
        self.precompute_reductions(value);
        match assign_layout(k, dst, self.layout(dst)) {
            Err(m) => self.unsupported(sp, m),
            Ok(FragLayout::AccRows) => self.elem(value, Site::Rows),
            Ok(FragLayout::RowTile(g)) => self.row_value(value, g, true),
            Ok(FragLayout::RowVals(g)) => self.row_value(value, g, false),
            Ok(FragLayout::WgmmaA { k: kdim }) => {
                match wgmma_a_value(k, dst, value, kdim, |e| self.tile_of(e)) {
                    Err(m) => return self.unsupported(sp, m),
                    Ok((inner, _)) => self.elem(inner, Site::Tile),
                }
            }
            Ok(FragLayout::TmemRow { .. } | FragLayout::LaneScalar) => {
                match lanes_value(self.row_elementwise(value)) {
                    Err(m) => self.unsupported(sp, m),
                    Ok(()) => {
                        self.precompute_reductions(value);
                        self.elem(value, Site::Lane);
                        self.invalidate(dst);
                    }
                }
            }
            Ok(_) => self.elem(value, Site::Tile),
        }
        self.invalidate(dst);
    }
}
