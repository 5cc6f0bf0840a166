//! The walk: the kernel's prologue, one branch per role, and inside it the role's statements in
//! program order — `with` regions, tile loops, range loops, conditionals — down to the dispatch
//! of each operation to the file that emits it, or to the backend where families differ.

use super::*;
use crate::mma::MmaCall;

/// A range loop as the backend sees it: the loop, its C variable and bounds, where it is.
#[derive(Clone, Copy)]
pub(crate) struct RangeLoop<'s> {
    pub(crate) id: LoopId,
    pub(crate) var: &'s str,
    pub(crate) start: &'s str,
    pub(crate) stop: &'s str,
    pub(crate) sp: Span,
}

impl Emitter<'_> {
    pub(crate) fn kernel_body(&mut self) -> String {
        let saved = std::mem::take(&mut self.out);
        self.indent = 1;
        let k = self.k;
        self.line("// Dynamic shared memory, rounded up to 1024 B: swizzled views repeat every 8 rows of 128 B.");
        self.line("extern __shared__ __align__(16) uint8_t cake_smem_raw[];");
        self.line("const uint32_t cake_smem = (cake_smem_addr(cake_smem_raw) + 1023u) & ~1023u;");
        for p in self.layout.views.clone() {
            let v = &k.views[p.view];
            let line = format!(
                "const uint32_t {} = cake_smem + {};  // view {}: {} x {:?}, {} stage(s) of {} B, swizzle {}",
                c_ident(&v.name),
                p.offset,
                v.name,
                v.dtype,
                v.shape,
                v.stages,
                p.stage_stride,
                v.swizzle
            );
            self.line(&line);
        }
        for p in self.layout.barriers.clone() {
            let b = &k.barriers[p.barrier];
            let count = self.facts[p.barrier.index()].arrival_count().max(1);
            let line = format!(
                "const uint32_t {} = cake_smem + {};  // mbarrier {}: {} slot(s), {} arrival(s) per phase",
                c_ident(&b.name),
                p.offset,
                b.name,
                p.slots,
                count
            );
            self.line(&line);
        }
        self.line("const int warp = __shfl_sync(0xffffffffu, (int)threadIdx.x / 32, 0);");
        self.line(&format!(
            "CAKE_STAMP(threadIdx.x == 0, {});  // timeline: the CTA starts",
            timeline::SLOT_START
        ));
        self.line(&format!(
            "CAKE_STAMP_SM(threadIdx.x == 0, {});  // timeline: on this SM",
            timeline::SLOT_SM
        ));
        let counts = self.tile_counts();
        for (i, c) in counts.iter().enumerate() {
            let text = format!("const int tiles_{i} = {};", self.ix(*c));
            self.line(&text);
        }
        let n = self.cluster_ctas();
        if n > 1 && !counts.is_empty() {
            // The CTAs of a cluster take `n` neighbouring tiles of axis 0 together.
            self.line(&format!(
                "const int cluster_rows = cake_cdiv(tiles_0, {n});  // tiles of axis 0, in clusters"
            ));
        }
        let total = if counts.is_empty() {
            "1".to_string()
        } else {
            (0..counts.len())
                .map(|i| self.tile_rows(i))
                .collect::<Vec<_>>()
                .join(" * ")
        };
        self.line(&format!("const int tiles_total = {total};"));
        self.tile_ring_names();
        if let Some((steps, _, _)) = k.stream_k() {
            self.stream_prologue(steps);
        }
        self.tmem_alloc_prologue();
        if !self.tmaps.is_empty() {
            // A TMA's first use of a tensor map fetches the descriptor from parameter memory;
            // start every fetch now, under the barrier setup, not in the first load's latency.
            let maps: Vec<String> = (0..self.tmaps.len())
                .map(|i| self.tmap_name_at(i))
                .collect();
            self.braced("if (threadIdx.x == 0) {", |e| {
                for m in &maps {
                    e.line(&format!("cake_prefetch_tensormap(&{m});"));
                }
            });
        }
        let ring = self.layout.tile_ring.is_some();
        if !self.layout.barriers.is_empty() || ring {
            self.braced("if (threadIdx.x == 0) {", |e| {
                for p in e.layout.barriers.clone() {
                    let b = &k.barriers[p.barrier];
                    let count = e.facts[p.barrier.index()].arrival_count().max(1);
                    let line = format!(
                        "for (int s = 0; s < {}; ++s) cake_mbar_init({} + 8 * s, {count});",
                        p.slots,
                        c_ident(&b.name)
                    );
                    e.line(&line);
                }
                e.tile_ring_init();
                if e.target.has(Feature::Clusters) {
                    // Visible to the async proxy and the cluster; without clusters (sm_80, sm_89)
                    // the __syncthreads below is the whole publication.
                    e.line("cake_fence_barrier_init();");
                }
            });
        }
        if self.clustered() {
            // Peers multicast into this CTA's shared memory and arrive on its barriers: not
            // before every CTA of the cluster has initialised them. The CTA's own threads need
            // only its own barriers; each waits for the peers' just before it first reaches
            // one (`cake_cluster_wait_once`), so a split's loads start without a cluster round
            // trip (0.7 us of every CTA's start on an H100, bench/results/2026-12-06-timeline/).
            self.line("__syncthreads();");
            self.line("cake_cluster_arrive_relaxed();");
            self.line("bool cluster_waited = false;  // this thread has seen every peer start");
            self.line("const uint32_t cta_rank = cake_cluster_ctarank();");
            self.line("(void)cta_rank;");
        } else if !self.layout.barriers.is_empty() || ring || self.layout.tmem_slot.is_some() {
            self.line("__syncthreads();");
        }
        self.tmem_base_after_sync();
        self.line(&format!(
            "CAKE_STAMP(threadIdx.x == 0, {});  // timeline: prologue done",
            timeline::SLOT_PROLOGUE
        ));
        let threads = k.block_threads();
        // Every thread starts with its share of the register file under the launch bounds.
        let default_regs = ((65536 / (threads * k.ctas_per_sm()).max(1)) / 8 * 8).min(255);
        for (rid, role) in k.roles.iter() {
            let (first, last) = match legal::role_warp_range(k, rid) {
                Ok(range) => range,
                Err(m) => {
                    self.unsupported(k.roles.span(rid), m);
                    continue;
                }
            };
            let issue_only = self.kf.issue_only[rid.index()];
            let name = c_ident(&role.name);
            let header = format!(
                "if (warp >= {first} && warp < {last}) {{  // role {} ({})",
                role.name,
                self.loc(k.roles.span(rid))
            );
            self.braced(&header, |e| {
                if let Some(r) = role.regs {
                    if r < default_regs {
                        e.line(&format!("cake_setmaxnreg_dec<{r}>();"));
                    } else if r > default_regs {
                        e.line(&format!("cake_setmaxnreg_inc<{r}>();"));
                    }
                }
                let unit_warps = role.unit.warps();
                e.line(&format!(
                    "const int {name}_index = (warp - {first}) / {unit_warps};"
                ));
                e.line(&format!(
                    "const int {name}_thread = (int)threadIdx.x - {} - {name}_index * {};",
                    first * 32,
                    unit_warps * 32
                ));
                e.stamp_role_start(rid);
                if legal::role_takes_turns(e.kf, rid) {
                    if let Ok((first, count)) = legal::turn_barriers(e.k, e.kf, rid) {
                        let last = role.replicas() - 1;
                        e.line(&format!(
                            "if ({name}_index == {last}) cake_named_arrive({first}, {count});  // replica 0 takes the first turn"
                        ));
                    }
                }
                if role.unit == RoleUnit::Warpgroup {
                    // Where this thread's accumulator registers sit in a 64-row tile.
                    e.line(&format!("const int lane_row = 16 * ({name}_thread / 32) + ({name}_thread % 32) / 4;  // and +8"));
                    e.line(&format!(
                        "const int lane_col = 2 * ({name}_thread % 4);  // and +1, every 8 columns"
                    ));
                    e.line("(void)lane_row; (void)lane_col;");
                } else {
                    let backend = e.backend;
                    backend.warp_role_lanes(e);
                }
                for (fid, f) in k.fragments.iter() {
                    if f.role == rid {
                        let n: u32 = match legal::declared_layout(k, fid, e.layout(fid)) {
                            Ok(l) if l.is_mma_operand() => {
                                let what = match l {
                                    FragLayout::WgmmaA { .. } => "wgmma A registers",
                                    FragLayout::MmaB { .. } => "mma.sync B registers",
                                    _ => "mma.sync A registers",
                                };
                                e.line(&format!(
                                    "uint32_t {}[{}];  // fragment {} {:?} {}: {what}, {} per register",
                                    c_ident(&f.name),
                                    l.registers(),
                                    f.name,
                                    f.shape,
                                    f.dtype,
                                    4 / f.dtype.bytes()
                                ));
                                continue;
                            }
                            Ok(l) => l.registers(),
                            Err(m) => {
                                e.unsupported(k.fragments.span(fid), m);
                                continue;
                            }
                        };
                        if f.buffers == 2 {
                            let name = c_ident(&f.name);
                            e.line(&format!(
                                "{} {name}_b0[{n}], {name}_b1[{n}];  // fragment {} {:?} {}, double-buffered",
                                storage_type(f.dtype),
                                f.name,
                                f.shape,
                                f.dtype
                            ));
                            continue;
                        }
                        e.line(&format!(
                            "{} {}[{n}];  // fragment {} {:?} {}",
                            storage_type(f.dtype),
                            c_ident(&f.name),
                            f.name,
                            f.shape,
                            f.dtype
                        ));
                    }
                }
                for (pid, p) in k.pipelines.iter() {
                    let _ = pid;
                    e.line(&format!(
                        "uint32_t {}_it = 0;  // iterations of pipeline {} completed by this role",
                        c_ident(&p.name),
                        p.name
                    ));
                }
                for (bid, b) in k.barriers.iter() {
                    if b.pipeline.is_none()
                        && e.facts[bid.index()].waits.iter().any(|(_, r)| *r == rid)
                    {
                        e.line(&format!("uint32_t {}_waits = 0;", c_ident(&b.name)));
                    }
                }
                let role_body = |e: &mut Self| {
                    e.role = Some((rid, issue_only));
                    let body = k.body.clone();
                    e.block(&body);
                    e.role = None;
                    if e.role_syncs_replicas(rid) {
                        // Shared memory must outlive the bulk stores still reading it; their
                        // writes need no wait (the grid completes only once they land), so the
                        // CTA does not hold its SM for the write round trip.
                        e.line(&format!("if ({name}_thread == 0) cake_bulk_wait_read();"));
                    }
                };
                if issue_only {
                    let guard =
                        format!("if ({name}_thread == 0) {{  // issue-only role: one thread per replica");
                    e.braced(&guard, role_body);
                } else {
                    role_body(e);
                }
                e.stamp_role_end(rid);
            });
        }
        self.tmem_dealloc_epilogue();
        if self.clustered() {
            self.line("// No CTA leaves while a peer may still arrive on its barriers or write its shared memory.");
            self.line("cake_cluster_wait_once(cluster_waited);");
            self.line("cake_cluster_sync();");
        }
        std::mem::replace(&mut self.out, saved)
    }

    /// Whether `block` holds anything the current role runs.
    pub(crate) fn has_role_work(&self, block: &Block, inside: bool) -> bool {
        let (role, _) = self.role.expect("emitting a role");
        legal::has_role_work(self.k, role, block, inside)
    }

    pub(crate) fn block(&mut self, block: &[StmtId]) {
        for &s in block {
            self.stmt(s);
        }
    }

    pub(crate) fn in_role_region(&self) -> bool {
        // Ops are emitted only inside the current role's `with` region; `stmt` tracks entry.
        self.indent_role_depth > 0
    }

    pub(crate) fn stmt(&mut self, s: StmtId) {
        let k = self.k;
        let sp = k.stmts.span(s);
        // Cached reductions live in the C scope of the block that computed them.
        if !matches!(k.stmts[s], Stmt::Op(_)) {
            self.invalidate_reductions(None);
        }
        match &k.stmts[s] {
            Stmt::Role { role, body } => {
                if Some(*role) == self.role.map(|r| r.0) {
                    self.line(&format!(
                        "// with {}: ({})",
                        k.roles[*role].name,
                        self.loc(sp)
                    ));
                    let entering = !self.in_role_region();
                    self.indent_role_depth += 1;
                    if entering {
                        // A role's region in the tile loop runs once per tile: its row
                        // reductions' column loads go out before its first wait, after the
                        // copies issued ahead of it, so their latency overlaps the tile's
                        // copies and MMAs (a short-lived CTA has nothing else to hide it
                        // under). Loops inside prefetch for their own iterations.
                        let saved = self.prefetched.clone();
                        let at = legal::first_wait(k, body);
                        self.block(&body[..at]);
                        self.prefetch_column_loads(body);
                        self.block(&body[at..]);
                        self.prefetched = saved;
                    } else {
                        self.block(body);
                    }
                    self.indent_role_depth -= 1;
                }
            }
            Stmt::Loop { id, body } => {
                let inside = self.in_role_region();
                if !self.has_role_work(body, inside) {
                    return;
                }
                let backend = self.backend;
                if inside {
                    backend.before_control(self, s);
                }
                // The body may run no iteration: after it, what was in flight before may still be.
                let entry = self.mma.clone();
                match k.loops[*id].kind.clone() {
                    LoopKind::Tiles {
                        counts,
                        names,
                        group,
                        stream: Some(_),
                        ..
                    } => self.stream_tile_loop(&counts, &names, group, body, sp),
                    LoopKind::Tiles {
                        counts,
                        names,
                        group,
                        stream: None,
                        dynamic: true,
                    } => self.dynamic_tile_loop(&counts, &names, group, body, sp),
                    LoopKind::Tiles {
                        counts,
                        names,
                        group,
                        stream: None,
                        dynamic: false,
                    } => self.tile_loop(&counts, &names, group, body, sp),
                    LoopKind::Range {
                        start,
                        stop,
                        pipeline,
                    } => self.range_loop(*id, start, stop, pipeline, body, sp),
                }
                self.mma.join(entry);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let inside = self.in_role_region();
                if !self.has_role_work(then_body, inside) && !self.has_role_work(else_body, inside)
                {
                    return;
                }
                let backend = self.backend;
                if inside {
                    backend.before_control(self, s);
                }
                // Row reductions and warp votes the condition reads are computed before it.
                self.precompute_reductions(*cond);
                let c = self.ix(*cond);
                let voted = k.expr_votes(*cond);
                self.warp_branches += u32::from(voted);
                let open = format!("if ({c}) {{  // {}", self.loc(sp));
                // Each path starts from the state before the `if`; after it, either may have run.
                let entry = self.mma.clone();
                let mut after_then = None;
                if else_body.is_empty() {
                    self.braced(&open, |e| {
                        e.block(then_body);
                        after_then = Some(std::mem::replace(&mut e.mma, entry));
                    });
                } else {
                    self.braced_else(
                        &open,
                        |e| {
                            e.block(then_body);
                            after_then = Some(std::mem::replace(&mut e.mma, entry));
                        },
                        |e| e.block(else_body),
                    );
                }
                self.warp_branches -= u32::from(voted);
                if let Some(t) = after_then {
                    self.mma.join(t);
                }
            }
            // Issued early where it opens a plain pipelined loop (`plain_range_loop`); anywhere
            // else it is not lowered, as the legality pass reports.
            Stmt::Ahead { body, .. } => {
                if self.has_role_work(body, self.in_role_region()) {
                    self.unsupported(sp, legal::AHEAD_PLACES);
                }
                self.block(body);
            }
            Stmt::Op(op) => {
                if self.in_role_region() {
                    let outer = self.op_stmt.replace(s);
                    self.op(op, sp);
                    self.op_stmt = outer;
                }
            }
        }
    }

    pub(crate) fn tile_loop(
        &mut self,
        counts: &[ExprId],
        names: &[String],
        group: Option<u32>,
        body: &Block,
        sp: Span,
    ) {
        let names_text = names.join(", ");
        // With a cluster of n CTAs, `tile` counts cluster tiles: n neighbouring tiles of axis 0,
        // one per CTA, so every CTA of a cluster runs the same iterations and the tiles of a
        // cluster differ in axis 0 only.
        let n = self.cluster_ctas();
        let (first, per_cluster) = if n > 1 {
            (format!("blockIdx.x / {n}"), format!(", {n} per cluster"))
        } else {
            ("blockIdx.x".to_string(), String::new())
        };
        let (step, what) = if self.k.persistent {
            let grid = if n > 1 {
                format!("gridDim.x / {n}")
            } else {
                "gridDim.x".into()
            };
            (grid, format!("tiles ({names_text}){per_cluster}"))
        } else {
            (
                "tiles_total".to_string(),
                format!("one tile ({names_text}) per CTA{per_cluster}"),
            )
        };
        let open = format!(
            "for (int tile = {first}; tile < tiles_total; tile += {step}) {{  // {what} ({})",
            self.loc(sp)
        );
        self.braced(&open, |me| {
            me.tile_coords(counts, group);
            me.block(body);
        });
    }

    /// Decode the loop's `tile` into one coordinate per tile axis (`tile_0`, `tile_1`, …).
    pub(crate) fn tile_coords(&mut self, counts: &[ExprId], group: Option<u32>) {
        let n = self.cluster_ctas();
        let rows0 = self.tile_rows(0);
        // Axis 0 is decoded into `tile_row` when the CTA's rank within the cluster completes it.
        let axis0 = if n > 1 { "tile_row" } else { "tile_0" };
        match group {
            Some(g) if counts.len() == 2 => {
                // Groups of `g` rows of axis 0, walked column by column, so the CTAs in flight
                // share A and B tiles in L2.
                let g = if n > 1 { g.div_ceil(n) } else { g };
                self.line(&format!("const int group_tiles = {g} * tiles_1;"));
                self.line(&format!(
                    "const int group_first = (tile / group_tiles) * {g};"
                ));
                self.line(&format!(
                    "const int group_rows = min({rows0} - group_first, {g});"
                ));
                self.line(&format!(
                    "const int {axis0} = group_first + (tile % group_tiles) % group_rows;"
                ));
                self.line("const int tile_1 = (tile % group_tiles) / group_rows;");
            }
            _ => {
                // Row-major over the tile axes: the last axis varies fastest.
                self.line("int tile_rest = tile;");
                for axis in (0..counts.len()).rev() {
                    let rows = self.tile_rows(axis);
                    let var = if axis == 0 {
                        axis0.to_string()
                    } else {
                        format!("tile_{axis}")
                    };
                    self.line(&format!("const int {var} = tile_rest % {rows};"));
                    self.line(&format!("tile_rest /= {rows};"));
                }
                self.line("(void)tile_rest;");
            }
        }
        if n > 1 {
            self.line(&format!(
                "const int tile_0 = tile_row * {n} + (int)cta_rank;  // may pass tiles_0: loads fill zeros, stores clip"
            ));
        }
    }

    pub(crate) fn range_loop(
        &mut self,
        id: LoopId,
        start: ExprId,
        stop: ExprId,
        pipeline: Option<PipelineId>,
        body: &Block,
        sp: Span,
    ) {
        let var = format!(
            "{}_{}",
            c_ident_stem(&self.k.loops[id].var_name),
            id.index()
        );
        let (a, b) = (self.ix(start), self.ix(stop));
        let backend = self.backend;
        let lp = RangeLoop {
            id,
            var: &var,
            start: &a,
            stop: &b,
            sp,
        };
        if let Some(p) = pipeline {
            if let Ok(Some(parts)) = cake_ir::sync::deferred_mma(self.k, body, pipeline) {
                if backend.lowers_mma_scheduling() {
                    return backend.deferred_loop(self, &lp, p, parts, body);
                }
                // What the legality pass reports (`legal::walk`), at the same place.
                let deferred = body[body.len() - 1];
                self.unsupported(
                    self.k.stmts.span(deferred),
                    legal::mma_scheduling_not_lowered("defer"),
                );
            }
            if let Some(pair) = backend.double_buffered(self.k, body, p) {
                return backend.double_buffered_loop(self, &lp, p, pair, body);
            }
        }
        backend.range_loop(self, pipeline, body, &mut |e| {
            e.plain_range_loop(&lp, pipeline, body)
        });
    }

    /// The loop itself: one iteration per value of the loop variable, the pipeline's stage and
    /// phase derived from its iteration count.
    fn plain_range_loop(&mut self, lp: &RangeLoop, pipeline: Option<PipelineId>, body: &Block) {
        let RangeLoop {
            id,
            var,
            start: a,
            stop: b,
            sp,
        } = *lp;
        let ahead = pipeline.and_then(|p| {
            let (s, steps, early) = self.k.leading_ahead(body)?;
            Some((p, s, steps, early))
        });
        if let Some((p, s, steps, early)) = ahead.filter(|a| a.2 > 0) {
            self.ahead_prologue(lp, p, s, steps, early);
        }
        let body = match ahead {
            Some(_) => &body[1..],
            None => &body[..],
        };
        let open = format!(
            "for (int {var} = {a}; {var} < {b}; ++{var}) {{  // {}",
            self.loc(sp)
        );
        self.braced(&open, |me| {
            if let Some(p) = pipeline {
                let pn = c_ident(&me.k.pipelines[p].name);
                me.stage_lines(p, &format!("{pn}_it"));
                me.pipes.push((id, p));
            }
            if let Some((p, s, steps, early)) = ahead {
                me.ahead_in_loop(lp, p, s, steps, early);
            }
            // The row reductions' column loads go out once the iteration's last MMA is
            // issued, to land while it runs: before the wait a release puts right after it,
            // else after its statement. At the top of the iteration (before the stage's
            // wait) k-means assign's one-accumulator schedules measured 8-10 % slower at
            // D = 96 and 128 (bench/results/2026-12-03-lowering-loads/, calls 1-2).
            let k = me.k;
            let last_mma = body
                .iter()
                .rposition(|&s| matches!(k.stmts[s], Stmt::Op(Op::Mma { .. })));
            let saved_prefetch = me.prefetched.clone();
            match last_mma {
                Some(i) => {
                    me.block(&body[..i]);
                    me.prefetch_at_wait = Some(body.to_vec());
                    me.stmt(body[i]);
                    if let Some(b) = me.prefetch_at_wait.take() {
                        me.prefetch_column_loads(&b);
                    }
                    me.block(&body[i + 1..]);
                }
                None => {
                    me.prefetch_column_loads(body);
                    me.block(body);
                }
            }
            me.prefetched = saved_prefetch;
            if let Some(p) = pipeline {
                me.pipes.pop();
                me.line(&format!("++{}_it;", c_ident(&me.k.pipelines[p].name)));
            }
        });
    }

    /// `with lm.ahead(steps):` opening a pipelined loop: the region of the loop's first `steps`
    /// iterations, issued before the loop at those iterations' stages and phases.
    fn ahead_prologue(
        &mut self,
        lp: &RangeLoop,
        p: PipelineId,
        s: StmtId,
        steps: u32,
        early: &Block,
    ) {
        let RangeLoop {
            id,
            var,
            start: a,
            stop: b,
            ..
        } = *lp;
        let pn = c_ident(&self.k.pipelines[p].name);
        let open = format!(
            "for (int {var}_ahead = 0; {var}_ahead < {steps} && {a} + {var}_ahead < {b}; ++{var}_ahead) {{  // lm.ahead({steps}): the first iterations' region ({})",
            self.loc(self.k.stmts.span(s))
        );
        self.braced(&open, |me| {
            let (value, it) = (
                format!("{a} + {var}_ahead"),
                format!("({pn}_it + {var}_ahead)"),
            );
            me.early_region(id, p, var, &value, &it, early);
        });
    }

    /// In iteration `var` of the loop: the region of iteration `var + steps`, at its stage and
    /// phase (the names shadow the iteration's own in a scope of their own).
    fn ahead_in_loop(
        &mut self,
        lp: &RangeLoop,
        p: PipelineId,
        s: StmtId,
        steps: u32,
        early: &Block,
    ) {
        let RangeLoop {
            id, var, stop: b, ..
        } = *lp;
        if steps == 0 {
            self.block(early);
            return;
        }
        let pn = c_ident(&self.k.pipelines[p].name);
        let open = format!(
            "if ({var} + {steps} < {b}) {{  // lm.ahead({steps}): iteration {var} + {steps}'s region ({})",
            self.loc(self.k.stmts.span(s))
        );
        self.braced(&open, |me| {
            me.line(&format!("const int {var}_early = {var} + {steps};"));
            me.line(&format!(
                "const uint32_t {pn}_it_early = {pn}_it + {steps};"
            ));
            me.braced("{", |me| {
                let (value, it) = (format!("{var}_early"), format!("{pn}_it_early"));
                me.early_region(id, p, var, &value, &it, early);
            });
        });
    }

    /// The region `early` as iteration `it` of pipeline `p` (C expressions), its loop's variable
    /// `var` bound to `value`: the names shadow those of the loop's own iteration.
    fn early_region(
        &mut self,
        id: LoopId,
        p: PipelineId,
        var: &str,
        value: &str,
        it: &str,
        early: &Block,
    ) {
        self.line(&format!("const int {var} = {value};"));
        self.stage_lines(p, it);
        self.pipes.push((id, p));
        self.block(early);
        self.pipes.pop();
    }

    pub(crate) fn op(&mut self, op: &Op, sp: Span) {
        let k = self.k;
        let backend = self.backend;
        if self.clustered() && k.reaches_peers(op) {
            self.line("cake_cluster_wait_once(cluster_waited);");
        }
        backend.before_op(self, op, sp);
        let (role, _) = self.role.expect("inside a role");
        match op {
            Op::Wait { barrier } => {
                let facts = &self.facts[barrier.index()];
                let flip = if facts.starts_free() { " ^ 1" } else { "" };
                let bar = &k.barriers[*barrier];
                let slot = self.barrier_slot(*barrier);
                let parity = match bar.pipeline {
                    Some(p) if self.pipes.iter().any(|(_, q)| *q == p) => {
                        format!("{}{flip}", self.pipe_var(p, "phase"))
                    }
                    _ => {
                        let n = c_ident(&bar.name);
                        format!("({n}_waits++ & 1){flip}")
                    }
                };
                let wait = if self.clustered() && k.publishes_to_cluster(*barrier) {
                    "cake_mbar_wait_cluster"
                } else {
                    "cake_mbar_wait"
                };
                self.line(&format!(
                    "{wait}({slot}, {parity});  // wait {} ({})",
                    bar.name,
                    self.loc(sp)
                ));
                self.stamp_first_wait(role);
                backend.after_wait(self, role);
            }
            Op::Arrive { barrier } => {
                let slot = self.barrier_slot(*barrier);
                backend.before_arrive(self, role);
                let arrive = self.arrive(*barrier, &slot);
                self.line(&format!(
                    "{arrive}  // arrive {} ({})",
                    k.barriers[*barrier].name,
                    self.loc(sp)
                ));
            }
            Op::TmaLoad { .. } => self.tma_load(op, sp),
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
                backend.mma(self, &call);
                if *turns && !backend.lowers_mma_scheduling() {
                    self.unsupported(sp, legal::mma_scheduling_not_lowered("turns"));
                }
                // Cached reductions of a register accumulator the MMA wrote are stale.
                if let Operand::Frag(f) = acc {
                    self.invalidate_reductions(Some(*f));
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
            Op::SmemStore { dst, value } if self.k.const_number(*value).is_some() => {
                self.smem_fill(dst, *value, sp)
            }
            Op::SmemStore { dst, value } => self.smem_store(dst, *value, sp),
            Op::GlobalScatterAdd {
                dst,
                value,
                index,
                coords,
                counts,
            } => self.scatter_add_rows(*dst, *value, *index, coords, *counts, sp),
            Op::ScatterAdd {
                dst,
                src,
                index,
                offset,
                valid_rows,
                counts,
            } => self.scatter_add(dst, src, index, *offset, *valid_rows, counts.as_ref(), sp),
            Op::Sync { barrier } => self.named_sync(*barrier, sp),
            Op::StreamFixup { frag } => self.stream_fixup(*frag, sp),
            Op::FenceProxyAsync => {
                self.line(&format!("cake_fence_proxy_async();  // ({})", self.loc(sp)))
            }
            Op::TmaStore {
                dst,
                src,
                coords,
                add,
            } => self.tma_store(*dst, src, coords, *add, sp),
            Op::CopyTo {
                dst,
                src,
                coords,
                add,
            } => self.copy_to(*dst, src, coords, *add, sp),
            Op::CpAsync {
                dst,
                src,
                coords,
                barrier,
                evict,
            } => match evict {
                Some(e) => self.unsupported(sp, legal::cp_async_evict_not_lowered(*e)),
                None => self.cp_async(dst, *src, coords, *barrier, sp),
            },
            // Operations only some families have an instruction for.
            Op::Ldmatrix { .. }
            | Op::Commit { .. }
            | Op::TmemLoad { .. }
            | Op::TmemStore { .. }
            | Op::TmemCopy { .. } => match legal::family_op(backend, op, self.target) {
                Err(m) => self.unsupported(sp, m),
                Ok(()) => self.family_op(op, sp),
            },
        }
    }

    /// An operation the backend lists in `family_ops`.
    fn family_op(&mut self, op: &Op, sp: Span) {
        let backend = self.backend;
        match op {
            Op::Ldmatrix { dst, src } => backend.ldmatrix(self, *dst, src, sp),
            Op::Commit { barrier } => backend.commit(self, *barrier, sp),
            Op::TmemLoad { dst, src } => backend.tmem_load(self, *dst, src, sp),
            Op::TmemStore { dst, src } => backend.tmem_store(self, dst, *src, sp),
            Op::TmemCopy { dst, src } => backend.tmem_copy(self, dst, src, sp),
            _ => {}
        }
    }
}
