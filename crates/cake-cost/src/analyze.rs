//! What a schedule does per tile, read from the IR: per role, the work outside loops and the
//! work of one iteration of each run-time loop (TMA bytes, MMA work, element-wise operations,
//! stores, waits), the tile loop's counts and raster, and which tile axes each loaded tensor
//! depends on (for L2 reuse).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use cake_ir::{
    BinOp, ExprId, ExprKind, Kernel, LoopId, LoopKind, Op, Operand, PipelineId, ReduceOp, RoleId,
    RoleUnit, Stmt, Ty, UnOp, ViewRef,
};

/// Work of one role in one place (one loop iteration, or once per tile).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Work {
    /// Bytes copied global → shared (TMA, cp.async), all replicas.
    pub load_bytes: f64,
    /// Of which, per source tensor (parameter index).
    pub load_by_tensor: BTreeMap<usize, f64>,
    /// Whether a copy in this place completes on a barrier someone waits for.
    pub copies: u32,
    /// Rows of TMA boxes whose source rows start inside 32-byte sectors at this shape (a
    /// multicast box counts the share each CTA requests), all replicas: an SM's TMA serves such
    /// rows at `tma_misaligned_rows_per_us`, whatever their bytes.
    pub misaligned_rows: f64,
    /// Tensor-core work in FLOPs, by input width (16-bit, 8-bit).
    pub mma_flops_16: f64,
    pub mma_flops_8: f64,
    /// The 16-bit MMA FLOPs by the accumulator's N (the per-N rate table's key).
    pub mma_flops_16_by_n: BTreeMap<i64, f64>,
    /// MMA instructions (wgmma: one per 64 rows × 16-K step; mma.sync: per 16×8×16).
    pub mma_instrs: f64,
    /// Element-wise thread operations (register math, reductions, conversions, shuffles,
    /// register loads and stores): what the warp schedulers issue.
    pub alu_ops: f64,
    /// Of which, operations on the half-rate integer/ALU pipe (compares, selects, min/max,
    /// integer math, conversions).
    pub int_ops: f64,
    /// Of `alu_ops` and `int_ops`, those of indexed reductions (argmin, argmax) and per-column
    /// vector loads in accumulator layouts: the lowering issues key, index, bounds and address
    /// instructions around each, which `acc_issue_ratio` charges.
    pub acc_alu_ops: f64,
    pub acc_int_ops: f64,
    /// Bytes read from global memory into registers (`lm.load`) that L2 serves: per-row and
    /// per-column vectors of row-layout values, read by every tile.
    pub reg_load_bytes: f64,
    /// Bytes a row-layout value (`rows=`) loads or stores as a tile: coalesced 16-byte accesses
    /// of whole rows, which stream at the DRAM rate.
    pub row_bytes: f64,
    /// Bytes stored register → global, and shared → global by TMA.
    pub store_bytes: f64,
    pub tma_store_bytes: f64,
    /// Global atomic adds (`red.global`) by destination tensor (parameter index): one per
    /// 16-byte vector of an f32 row, one per count.
    pub reds_by_tensor: BTreeMap<usize, f64>,
    /// Barrier waits and named-barrier syncs.
    pub waits: f64,
    pub syncs: f64,
    /// Bytes of partial accumulators a stream-K fix-up moves, all replicas, each way (published
    /// by one run, read by another): charged per CTA, not per tile (`lm.stream_fixup`).
    pub fixup_bytes: f64,
}

impl Work {
    /// The thread operations of `o` (plus `extra` counted outside it, e.g. a store per element),
    /// on `r` replicas.
    fn set_ops(&mut self, o: Ops, extra: f64, r: f64) {
        self.alu_ops = (o.all + extra) * r;
        self.int_ops = o.int * r;
        self.acc_alu_ops = o.acc_all * r;
        self.acc_int_ops = o.acc_int * r;
    }

    pub fn add(&mut self, o: &Work, k: f64) {
        self.load_bytes += o.load_bytes * k;
        for (t, b) in &o.load_by_tensor {
            *self.load_by_tensor.entry(*t).or_default() += b * k;
        }
        self.copies += o.copies;
        self.misaligned_rows += o.misaligned_rows * k;
        self.mma_flops_16 += o.mma_flops_16 * k;
        self.mma_flops_8 += o.mma_flops_8 * k;
        for (n, f) in &o.mma_flops_16_by_n {
            *self.mma_flops_16_by_n.entry(*n).or_default() += f * k;
        }
        self.mma_instrs += o.mma_instrs * k;
        self.alu_ops += o.alu_ops * k;
        self.int_ops += o.int_ops * k;
        self.acc_alu_ops += o.acc_alu_ops * k;
        self.acc_int_ops += o.acc_int_ops * k;
        self.reg_load_bytes += o.reg_load_bytes * k;
        self.row_bytes += o.row_bytes * k;
        self.store_bytes += o.store_bytes * k;
        self.tma_store_bytes += o.tma_store_bytes * k;
        for (t, n) in &o.reds_by_tensor {
            *self.reds_by_tensor.entry(*t).or_default() += n * k;
        }
        self.waits += o.waits * k;
        self.syncs += o.syncs * k;
        self.fixup_bytes += o.fixup_bytes * k;
    }
    pub fn has_mma(&self) -> bool {
        self.mma_flops_16 + self.mma_flops_8 > 0.0
    }
}

/// The distance between a row-major tensor's rows at a shape, and the extent that sets it.
pub(crate) struct RowPitch {
    pub bytes: i64,
    pub elem_bytes: i64,
    /// The innermost extent's name: a dimension, or the number.
    pub extent: String,
}

impl RowPitch {
    /// Rows that start inside 32-byte L2 sectors (`CAKE-P008`).
    pub fn misaligned(&self) -> bool {
        self.bytes > 0 && self.bytes % 32 != 0
    }
}

/// Tensor `t`'s row pitch at `shape`; `None` for a scalar, a vector or an unbound dimension.
pub(crate) fn row_pitch(
    k: &Kernel,
    t: cake_ir::ParamId,
    shape: &BTreeMap<String, i64>,
) -> Option<RowPitch> {
    let cake_ir::ParamKind::Tensor { dtype, dims } = &k.params[t].kind else {
        return None;
    };
    if dims.len() < 2 {
        return None;
    }
    let (inner, extent) = match dims.last()? {
        cake_ir::Extent::Fixed(v) => (i64::from(*v), v.to_string()),
        cake_ir::Extent::Sym(d) => {
            let name = &k.dims[*d].name;
            (*shape.get(name)?, name.clone())
        }
    };
    let elem_bytes = dtype.bytes() as i64;
    Some(RowPitch {
        bytes: inner * elem_bytes,
        elem_bytes,
        extent,
    })
}

/// One run-time loop of one role: its trip count and one iteration's work (inner non-pipelined
/// loops folded in).
#[derive(Clone, Debug)]
pub struct LoopWork {
    pub id: LoopId,
    pub pipeline: Option<PipelineId>,
    pub trips: f64,
    pub work: Work,
    /// The loop of its own it runs inside (an index into the role's loops): its iterations are
    /// part of that loop's, not after them.
    pub parent: Option<usize>,
    /// The loop's statement, for findings.
    pub stmt: cake_diag::Span,
}

#[derive(Clone, Debug)]
pub struct RoleWork {
    pub role: Option<RoleId>,
    pub name: String,
    pub replicas: u32,
    pub threads: u32,
    /// Once per tile, outside any run-time loop, in program order before / after the loops.
    pub before: Work,
    pub after: Work,
    pub loops: Vec<LoopWork>,
}

/// The tile loop.
#[derive(Clone, Debug)]
pub struct Tiles {
    pub counts: Vec<i64>,
    /// For each axis whose count is `cdiv(DIM, c)`: (DIM's extent, c).
    pub divisors: Vec<Option<(i64, i64)>>,
    pub group: Option<u32>,
    /// Stream-K: the K steps of each tile, shared out evenly over the persistent grid.
    pub stream: Option<i64>,
    pub span: cake_diag::Span,
}

#[derive(Clone, Debug)]
pub struct Analysis {
    pub roles: Vec<RoleWork>,
    pub tiles: Option<Tiles>,
    /// Per loaded tensor (parameter index): bitmask of the tile axes its coordinates read.
    pub tensor_axes: BTreeMap<usize, u32>,
    /// Tensors (parameter indices) whose copies ask L2 to evict their lines first.
    pub evict_first: BTreeSet<usize>,
    /// Sizes in bytes of every tensor parameter at this shape.
    pub tensor_bytes: BTreeMap<usize, f64>,
    /// Per tensor that takes global atomic adds: one slice of it.
    pub red_slices: BTreeMap<usize, RedSlice>,
    /// Things the analysis had to guess, one sentence each.
    pub assumptions: Vec<String>,
}

pub fn analyze(k: &Kernel, shape: &BTreeMap<String, i64>) -> Analysis {
    let mut a = Analyzer {
        k,
        shape,
        assumptions: Vec::new(),
        tensor_axes: BTreeMap::new(),
        evict_first: BTreeSet::new(),
        row_context: false,
        red_layout: BTreeMap::new(),
        stream_stop: k.stream_k().map(|(steps, _, stop)| (steps, stop)),
        open_loops: Vec::new(),
    };
    let mut tiles = None;
    let mut roles: Vec<RoleWork> = Vec::new();
    // The tile loop's body (or the whole kernel when there is none).
    let mut body: &[cake_ir::StmtId] = &k.body;
    for &s in &k.body {
        if let Stmt::Loop { id, body: b } = &k.stmts[s] {
            if let LoopKind::Tiles {
                counts,
                group,
                stream,
                ..
            } = &k.loops[*id].kind
            {
                let c: Vec<i64> = counts
                    .iter()
                    .map(|&e| a.eval(e).unwrap_or(1).max(0))
                    .collect();
                let divisors = counts.iter().map(|&e| a.cdiv_of(e)).collect();
                tiles = Some(Tiles {
                    counts: c,
                    divisors,
                    group: *group,
                    stream: stream.map(|e| a.eval(e).unwrap_or(1).max(1)),
                    span: k.stmts.span(s),
                });
                body = b;
                break;
            }
        }
    }
    for &s in body {
        match &k.stmts[s] {
            Stmt::Role { role, body } => {
                let r = &k.roles[*role];
                let idx = match roles.iter().position(|w| w.role == Some(*role)) {
                    Some(i) => i,
                    None => {
                        roles.push(RoleWork {
                            role: Some(*role),
                            name: r.name.clone(),
                            replicas: r.replicas(),
                            threads: r.threads(),
                            before: Work::default(),
                            after: Work::default(),
                            loops: Vec::new(),
                        });
                        roles.len() - 1
                    }
                };
                let mut rw = roles[idx].clone();
                a.block(body, &mut rw, Sink::Outside, 1.0, &mut HashSet::new());
                roles[idx] = rw;
            }
            _ => {
                let idx = match roles.iter().position(|w| w.role.is_none()) {
                    Some(i) => i,
                    None => {
                        let threads = k.block_threads();
                        roles.push(RoleWork {
                            role: None,
                            name: "(all threads)".into(),
                            replicas: 1,
                            threads,
                            before: Work::default(),
                            after: Work::default(),
                            loops: Vec::new(),
                        });
                        roles.len() - 1
                    }
                };
                let mut rw = roles[idx].clone();
                a.block(
                    std::slice::from_ref(&s),
                    &mut rw,
                    Sink::Outside,
                    1.0,
                    &mut HashSet::new(),
                );
                roles[idx] = rw;
            }
        }
    }
    let mut tensor_bytes = BTreeMap::new();
    for (i, (_, p)) in k.params.iter().enumerate() {
        if let cake_ir::ParamKind::Tensor { dtype, dims } = &p.kind {
            let mut n = dtype.bytes() as f64;
            for d in dims {
                n *= match d {
                    cake_ir::Extent::Fixed(v) => *v as f64,
                    cake_ir::Extent::Sym(id) => *shape.get(&k.dims[*id].name).unwrap_or(&1) as f64,
                };
            }
            tensor_bytes.insert(i, n);
        }
    }
    // One slice of each atomically added tensor: its innermost axes.
    let mut red_slices = BTreeMap::new();
    for (&t, &(axes, per_add)) in &a.red_layout {
        if let cake_ir::ParamKind::Tensor { dtype, dims } =
            &k.params[cake_ir::ParamId::from_index(t)].kind
        {
            let mut bytes = dtype.bytes() as f64;
            for d in dims.iter().rev().take(axes) {
                bytes *= match d {
                    cake_ir::Extent::Fixed(v) => *v as f64,
                    cake_ir::Extent::Sym(id) => *shape.get(&k.dims[*id].name).unwrap_or(&1) as f64,
                };
            }
            red_slices.insert(
                t,
                RedSlice {
                    targets: (bytes / per_add).max(1.0),
                    bytes,
                },
            );
        }
    }
    Analysis {
        roles,
        tiles,
        tensor_axes: a.tensor_axes,
        evict_first: a.evict_first,
        tensor_bytes,
        red_slices,
        assumptions: a.assumptions,
    }
}

/// The part of an atomically added tensor one slice of its leading coordinates spans.
#[derive(Clone, Debug)]
pub struct RedSlice {
    /// Distinct destinations of one add each (16-byte vectors of a row, or counts).
    pub targets: f64,
    pub bytes: f64,
}

#[derive(Clone, Copy)]
enum Sink {
    Outside,
    Loop(usize),
}

struct Analyzer<'a> {
    k: &'a Kernel,
    shape: &'a BTreeMap<String, i64>,
    assumptions: Vec<String>,
    tensor_axes: BTreeMap<usize, u32>,
    evict_first: BTreeSet<usize>,
    /// Evaluating a row-layout value: a per-column vector is read once per chunk by the one
    /// thread that holds the column, not by every thread of an accumulator's column.
    row_context: bool,
    /// Tensors that take global atomic adds: (innermost axes one slice spans, bytes per add).
    red_layout: BTreeMap<usize, (usize, f64)>,
    /// A stream-K tile loop's steps per tile and the axis of a run's stop step.
    stream_stop: Option<(ExprId, usize)>,
    /// The run-time range loops around the statement being analysed, outermost first.
    open_loops: Vec<LoopId>,
}

/// Values of an index expression's run-time names: tile coordinates by axis, loop variables and
/// replica indices; a name not given reads 0.
#[derive(Clone, Copy, Default)]
struct At<'a> {
    tile: &'a [(usize, i64)],
    loop_var: Option<(LoopId, i64)>,
    role_index: Option<(RoleId, i64)>,
}

impl Analyzer<'_> {
    /// The value of an index expression at this shape; loop variables, tile coordinates and
    /// `role.index` read 0 (trip counts that depend on them are the first tile's).
    fn eval(&self, e: ExprId) -> Option<i64> {
        self.eval_in(e, At::default())
    }

    /// As `eval`, with the tile coordinates of `tile` ((axis, value) pairs) set.
    fn eval_at(&self, e: ExprId, tile: &[(usize, i64)]) -> Option<i64> {
        self.eval_in(
            e,
            At {
                tile,
                ..At::default()
            },
        )
    }

    /// As `eval`, with the names `at` gives set.
    fn eval_in(&self, e: ExprId, at: At) -> Option<i64> {
        let k = self.k;
        Some(match &k.exprs[e].kind {
            ExprKind::Int(v) => *v,
            ExprKind::Dim(d) => *self.shape.get(&k.dims[*d].name)?,
            // A stream-K run is costed as a whole tile: its stop step is the tile's last.
            ExprKind::TileCoord { axis, .. } => match self.stream_stop {
                Some((steps, stop)) if *axis == stop => self.eval_in(steps, at)?,
                _ => at
                    .tile
                    .iter()
                    .find(|(a, _)| a == axis)
                    .map_or(0, |(_, v)| *v),
            },
            ExprKind::LoopVar(l) => at.loop_var.filter(|(v, _)| v == l).map_or(0, |(_, i)| i),
            ExprKind::RoleIndex(r) => at.role_index.filter(|(q, _)| q == r).map_or(0, |(_, i)| i),
            ExprKind::PipelineStage(_) => 0,
            ExprKind::Binary(op, a, b) => {
                let (a, b) = (self.eval_in(*a, at)?, self.eval_in(*b, at)?);
                // Overflow is no value (an assumption), never a wrapped one.
                match op {
                    BinOp::Add => a.checked_add(b)?,
                    BinOp::Sub => a.checked_sub(b)?,
                    BinOp::Mul => a.checked_mul(b)?,
                    BinOp::Div | BinOp::FloorDiv if b != 0 => a.checked_div_euclid(b)?,
                    BinOp::Mod if b != 0 => a.checked_rem_euclid(b)?,
                    BinOp::CeilDiv if b > 0 => a.checked_add(b - 1)?.div_euclid(b),
                    BinOp::Min => a.min(b),
                    BinOp::Max => a.max(b),
                    _ => return None,
                }
            }
            _ => return None,
        })
    }

    /// `cdiv(DIM, c)` with a constant `c`: (DIM's value, c).
    fn cdiv_of(&self, e: ExprId) -> Option<(i64, i64)> {
        if let ExprKind::Binary(BinOp::CeilDiv, a, b) = &self.k.exprs[e].kind {
            if let (ExprKind::Dim(_), Some(c)) = (&self.k.exprs[*a].kind, self.k.const_int(*b)) {
                return Some((self.eval(*a)?, c));
            }
        }
        None
    }

    /// The tile loop's count per axis, where the kernel has a tile loop.
    fn tile_counts(&self) -> Option<&[ExprId]> {
        self.k.loops.iter().find_map(|(_, lp)| match &lp.kind {
            LoopKind::Tiles { counts, .. } => Some(&counts[..]),
            _ => None,
        })
    }

    /// The trip count of a range loop whose bounds read one tile coordinate (a causal
    /// attention's key tiles, up to the query tile's diagonal), averaged over that axis's tiles
    /// (at most 1024 of them, evenly spaced): the work of every tile, not the first one's.
    fn tile_averaged_trips(&self, start: ExprId, stop: ExprId) -> Option<f64> {
        let k = self.k;
        let counts = self.tile_counts()?;
        let axes: Vec<usize> = (0..counts.len())
            .filter(|&a| k.expr_reads_tile_coord(start, a) || k.expr_reads_tile_coord(stop, a))
            .collect();
        let [axis] = axes[..] else { return None };
        let n = self.eval(counts[axis])?.max(1);
        let step = (n / 1024).max(1);
        let (mut sum, mut samples) = (0.0, 0.0);
        let mut t = 0;
        while t < n {
            let at = [(axis, t)];
            sum += (self.eval_at(stop, &at)? - self.eval_at(start, &at)?).max(0) as f64;
            samples += 1.0;
            t += step;
        }
        Some(sum / samples)
    }

    /// Whether an index condition (comparisons of index expressions joined by `&`, `|`, `~`)
    /// holds with the names `at` gives; `None` for any other condition.
    fn holds_in(&self, cond: ExprId, at: At) -> Option<bool> {
        Some(match &self.k.exprs[cond].kind {
            ExprKind::Bool(b) => *b,
            ExprKind::Cmp(op, a, b) => op.holds(self.eval_in(*a, at)?, self.eval_in(*b, at)?),
            ExprKind::Binary(BinOp::And, a, b) => {
                self.holds_in(*a, at)? && self.holds_in(*b, at)?
            }
            ExprKind::Binary(BinOp::Or, a, b) => self.holds_in(*a, at)? || self.holds_in(*b, at)?,
            ExprKind::Unary(UnOp::Not, a) => !self.holds_in(*a, at)?,
            _ => return None,
        })
    }

    /// The share of a role's executions of a run-time `if` in which its index condition holds:
    /// over the tiles (up to 64, evenly spaced, on the one tile axis the condition or the loop
    /// bounds read), the innermost enclosing range loop's iterations (up to 64 per tile, evenly
    /// spaced) and the role's replicas, each tile weighted by its trip count. A causal mask that
    /// only the diagonal's key tiles take is then charged on those tiles. `None` (both branches
    /// charged in full) where the condition is not an index condition or reads a loop
    /// variable of another loop.
    fn branch_share(&self, cond: ExprId, role: Option<RoleId>, replicas: u32) -> Option<f64> {
        const SAMPLES: i64 = 64;
        let k = self.k;
        let inner = self.open_loops.last().copied();
        let other_loop = self
            .open_loops
            .iter()
            .any(|&l| Some(l) != inner && k.expr_reads_loop_var(cond, l));
        if other_loop || k.expr_votes(cond) {
            return None;
        }
        let (start, stop) = match inner.map(|l| &k.loops[l].kind) {
            Some(LoopKind::Range { start, stop, .. }) => (Some(*start), Some(*stop)),
            _ => (None, None),
        };
        let reads = |axis| {
            k.expr_reads_tile_coord(cond, axis)
                || [start, stop]
                    .iter()
                    .flatten()
                    .any(|&e| k.expr_reads_tile_coord(e, axis))
        };
        let counts = self.tile_counts();
        let axes: Vec<usize> = counts
            .iter()
            .flat_map(|c| 0..c.len())
            .filter(|&a| reads(a))
            .collect();
        let (axis, tiles) = match (&axes[..], counts) {
            ([], _) => (None, 1),
            ([a], Some(c)) => (Some(*a), self.eval(c[*a])?.max(1)),
            _ => return None,
        };
        let replicas = match role {
            Some(r) if k.expr_reads_role_index(cond, r) => replicas.max(1) as i64,
            _ => 1,
        };
        let (mut held, mut all) = (0.0, 0.0);
        for t in spread(tiles, SAMPLES) {
            let tile = axis.map(|a| [(a, t)]);
            let tile: &[(usize, i64)] = tile.as_ref().map_or(&[], |t| &t[..]);
            let at = At {
                tile,
                ..At::default()
            };
            let (lo, hi) = match (start, stop) {
                (Some(a), Some(b)) => (self.eval_in(a, at)?, self.eval_in(b, at)?),
                _ => (0, 1),
            };
            let trips = (hi - lo).max(0);
            if trips == 0 {
                continue;
            }
            let (mut yes, mut n) = (0.0, 0.0);
            for j in spread(trips, SAMPLES).map(|j| lo + j) {
                for r in 0..replicas {
                    let at = At {
                        tile,
                        loop_var: inner.map(|l| (l, j)),
                        role_index: role.map(|q| (q, r)),
                    };
                    yes += f64::from(u8::from(self.holds_in(cond, at)?));
                    n += 1.0;
                }
            }
            held += trips as f64 * yes / n;
            all += trips as f64;
        }
        (all > 0.0).then(|| held / all)
    }

    fn trips(&mut self, l: LoopId) -> f64 {
        match &self.k.loops[l].kind {
            LoopKind::Range { start, stop, .. } => match (self.eval(*start), self.eval(*stop)) {
                (Some(a), Some(b)) => self
                    .tile_averaged_trips(*start, *stop)
                    .unwrap_or((b - a).max(0) as f64),
                _ => {
                    self.assumptions.push(format!(
                        "the trip count of loop `{}` is not a function of the shape; counted as 1",
                        self.k.loops[l].var_name
                    ));
                    1.0
                }
            },
            LoopKind::Tiles { counts, .. } => counts
                .iter()
                .map(|&c| self.eval(c).unwrap_or(1) as f64)
                .product(),
        }
    }

    fn block(
        &mut self,
        body: &[cake_ir::StmtId],
        rw: &mut RoleWork,
        sink: Sink,
        mult: f64,
        seen: &mut HashSet<ExprId>,
    ) {
        let k = self.k;
        for &s in body {
            match &k.stmts[s] {
                Stmt::Role { body, .. } | Stmt::Ahead { body, .. } => {
                    self.block(body, rw, sink, mult, seen)
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    // A warp vote's register work is done by every thread (index conditions
                    // are a few scalar instructions, not counted).
                    if k.expr_votes(*cond) {
                        let o = self.ops(*cond, rw, seen);
                        let r = rw.replicas as f64;
                        let w = Work {
                            alu_ops: o.all * r,
                            int_ops: o.int * r,
                            ..Work::default()
                        };
                        sink_work(rw, sink, &w, mult);
                    }
                    // Each branch charged for the share of executions that take it, where the
                    // condition is an index condition; else both in full (an upper bound).
                    let (then_share, else_share) =
                        match self.branch_share(*cond, rw.role, rw.replicas) {
                            Some(p) => (p, 1.0 - p),
                            None => (1.0, 1.0),
                        };
                    self.block(then_body, rw, sink, mult * then_share, seen);
                    self.block(else_body, rw, sink, mult * else_share, seen);
                }
                Stmt::Loop { id, body } => {
                    self.open_loops.push(*id);
                    self.analyse_loop(s, *id, body, rw, sink, mult, seen);
                    self.open_loops.pop();
                }
                Stmt::Op(op) => {
                    let w = self.op(op, rw, seen);
                    sink_work(rw, sink, &w, mult);
                }
            }
        }
    }

    /// A loop statement `s` of loop `id`: folded into the enclosing loop's iteration, or a loop
    /// of its own in the role's work.
    #[allow(clippy::too_many_arguments)]
    fn analyse_loop(
        &mut self,
        s: cake_ir::StmtId,
        id: LoopId,
        body: &[cake_ir::StmtId],
        rw: &mut RoleWork,
        sink: Sink,
        mult: f64,
        seen: &mut HashSet<ExprId>,
    ) {
        let k = self.k;
        let trips = self.trips(id);
        let pipeline = match &k.loops[id].kind {
            LoopKind::Range { pipeline, .. } => *pipeline,
            LoopKind::Tiles { .. } => None,
        };
        match sink {
            Sink::Loop(i) if pipeline.is_none() => {
                self.block(body, rw, Sink::Loop(i), mult * trips, seen)
            }
            _ => {
                // A loop of its own inside another runs once per iteration of it.
                let parent = match sink {
                    Sink::Loop(i) => Some(i),
                    _ => None,
                };
                let enclosing = parent.map_or(1.0, |i| rw.loops[i].trips);
                rw.loops.push(LoopWork {
                    id,
                    pipeline,
                    trips: trips * mult * enclosing,
                    work: Work::default(),
                    parent,
                    stmt: k.stmts.span(s),
                });
                let i = rw.loops.len() - 1;
                self.block(body, rw, Sink::Loop(i), 1.0, &mut HashSet::new());
            }
        }
    }

    /// Rows of a view (or of its `rows(...)` slice): its elements over its innermost extent.
    fn view_ref_rows(&self, v: &ViewRef) -> f64 {
        let view = &self.k.views[v.view];
        match v.rows {
            Some((_, count)) => count as f64,
            None => {
                let inner = view.shape.last().copied().unwrap_or(1).max(1) as u64;
                (view.elements() / inner) as f64
            }
        }
    }

    fn view_ref_bytes(&self, v: &ViewRef) -> f64 {
        let view = &self.k.views[v.view];
        match v.rows {
            Some((_, count)) => {
                let per_row = view.elements() / view.shape.first().copied().unwrap_or(1) as u64;
                (count as u64 * per_row * view.dtype.bytes() as u64) as f64
            }
            None => view.stage_bytes() as f64,
        }
    }

    /// Whether `e` is computed from a row-layout fragment (`rows=`).
    fn row_layout(&self, e: ExprId) -> bool {
        let k = self.k;
        let mut found = false;
        k.visit_expr(e, |_, kind| {
            if let ExprKind::Frag(f) = kind {
                found |= k.fragments[*f].rows.is_some();
            }
            true
        });
        found
    }

    /// The global loads of a row-layout value: 2-D tiles stream from DRAM (`row_bytes`),
    /// vectors broadcast along a tile come from L2 (`reg_load_bytes`). Reductions' loads count
    /// too: their pass reads them.
    fn row_loads(&self, e: ExprId, w: &mut Work, r: f64) {
        self.row_loads_once(e, w, r, &mut HashSet::new());
    }

    /// `row_loads`, less the loads in `counted` (a load shared by the values of one statement
    /// is read once), which it extends.
    fn row_loads_once(&self, e: ExprId, w: &mut Work, r: f64, counted: &mut HashSet<ExprId>) {
        let k = self.k;
        k.visit_expr(e, |l, kind| {
            if !counted.insert(l) {
                return true;
            }
            if let ExprKind::Load { tensor, shape, .. } = kind {
                let bytes = match &k.params[*tensor].kind {
                    cake_ir::ParamKind::Tensor { dtype, .. } => dtype.bytes() as f64,
                    _ => 4.0,
                };
                let el: f64 = shape.iter().map(|&d| d as f64).product();
                if shape.len() >= 2 {
                    w.row_bytes += el * bytes * r;
                } else {
                    w.reg_load_bytes += el * bytes * r;
                }
            }
            true
        });
    }

    fn tile_axes(&self, e: ExprId) -> u32 {
        let mut mask = 0;
        self.k.visit_expr(e, |_, kind| {
            if let ExprKind::TileCoord { axis, .. } = kind {
                mask |= 1 << axis;
            }
            true
        });
        mask
    }

    fn op(&mut self, op: &Op, rw: &RoleWork, seen: &mut HashSet<ExprId>) -> Work {
        let k = self.k;
        let r = rw.replicas as f64;
        let mut w = Work::default();
        match op {
            Op::TmaLoad {
                dst, src, coords, ..
            }
            | Op::CpAsync {
                dst, src, coords, ..
            } => {
                let bytes = self.view_ref_bytes(dst) * r;
                // A multicast load fetches 1/n of the box per CTA from L2; the cluster's network
                // delivers the rest. DRAM traffic is unchanged: L2 reuse already counts the
                // tiles the cluster's CTAs share.
                let share = match op {
                    Op::TmaLoad { multicast, .. } => f64::from((*multicast).max(1)),
                    _ => 1.0,
                };
                w.load_bytes = bytes / share;
                w.load_by_tensor.insert(src.index(), bytes);
                let misaligned = row_pitch(k, *src, self.shape).is_some_and(|p| p.misaligned());
                if matches!(op, Op::TmaLoad { .. }) && misaligned {
                    w.misaligned_rows = self.view_ref_rows(dst) * r / share;
                }
                w.copies = 1;
                if let Op::TmaLoad {
                    evict: Some(cake_ir::Evict::First),
                    ..
                }
                | Op::CpAsync {
                    evict: Some(cake_ir::Evict::First),
                    ..
                } = op
                {
                    self.evict_first.insert(src.index());
                }
                let mask = coords.iter().fold(0, |m, &c| m | self.tile_axes(c));
                *self.tensor_axes.entry(src.index()).or_default() |= mask;
            }
            Op::TmaStore { src, .. } => w.tma_store_bytes = self.view_ref_bytes(src) * r,
            // Per-thread stores (or reductions at L2) of the view's elements.
            Op::CopyTo { src, .. } => w.store_bytes = self.view_ref_bytes(src) * r,
            Op::Mma { acc, a, .. } => {
                let (m, n) = match acc {
                    Operand::Frag(f) => {
                        let s = &k.fragments[*f].shape;
                        (
                            s.first().copied().unwrap_or(1),
                            s.get(1).copied().unwrap_or(1),
                        )
                    }
                    Operand::Tmem(t) => {
                        let s = &k.tmems[t.region].shape;
                        (
                            s.first().copied().unwrap_or(1),
                            s.get(1).copied().unwrap_or(1),
                        )
                    }
                    Operand::Smem(v) => {
                        let s = &k.views[v.view].shape;
                        (
                            s.first().copied().unwrap_or(1),
                            s.get(1).copied().unwrap_or(1),
                        )
                    }
                };
                let (kk, dtype) = match a {
                    Operand::Smem(v) => {
                        let view = &k.views[v.view];
                        // An M-major `a` (`.T`) runs K along the view's rows: its `.rows` slice's.
                        let kk = if v.transposed {
                            v.rows
                                .map(|(_, count)| count)
                                .unwrap_or(view.shape.first().copied().unwrap_or(1))
                        } else {
                            view.shape.last().copied().unwrap_or(1)
                        };
                        (kk, view.dtype)
                    }
                    Operand::Frag(f) => {
                        let fr = &k.fragments[*f];
                        (fr.shape.last().copied().unwrap_or(1), fr.dtype)
                    }
                    Operand::Tmem(t) => {
                        let tm = &k.tmems[t.region];
                        (tm.shape.last().copied().unwrap_or(1), tm.dtype)
                    }
                };
                let flops = 2.0 * m as f64 * n as f64 * kk as f64 * r;
                if dtype.bits() <= 8 {
                    w.mma_flops_8 = flops;
                } else {
                    w.mma_flops_16 = flops;
                    w.mma_flops_16_by_n.insert(n as i64, flops);
                }
                let k_step = if dtype.bits() <= 8 { 32.0 } else { 16.0 };
                w.mma_instrs = (m as f64 / 64.0).max(1.0) * (kk as f64 / k_step).max(1.0) * r;
            }
            Op::Store { dst, value, .. } => {
                let el = elements(&k.exprs[*value].ty);
                let bytes = match &k.params[*dst].kind {
                    cake_ir::ParamKind::Tensor { dtype, .. } => dtype.bytes() as f64,
                    _ => 4.0,
                };
                self.row_context = self.row_layout(*value);
                if self.row_context {
                    w.row_bytes = el * bytes * r;
                    self.row_loads(*value, &mut w, r);
                } else {
                    w.store_bytes = el * bytes * r;
                }
                let o = self.ops(*value, rw, seen);
                self.row_context = false;
                w.set_ops(o, el, r);
            }
            Op::GlobalScatterAdd {
                dst,
                value,
                index,
                counts,
                ..
            } => {
                // The adds are done at L2 (`red.global.add.v4.f32`, one per 16 bytes of a row,
                // and one count per row): their rate, and how it falls when many rows meet on
                // few destinations, is the estimate's atomic term. The registers' reads of the
                // index and the value are row-layout loads.
                let el = elements(&k.exprs[*value].ty);
                let rows = match &k.exprs[*value].ty {
                    Ty::Frag { shape, .. } => shape.first().map_or(1.0, |&d| d as f64),
                    _ => 1.0,
                };
                *w.reds_by_tensor.entry(dst.index()).or_default() += el / 4.0 * r;
                // Rows land in the destination's two innermost axes, counts in the counts'
                // innermost one; leading coordinates pick the slice.
                self.red_layout.insert(dst.index(), (2, 16.0));
                if let Some(c) = counts {
                    *w.reds_by_tensor.entry(c.index()).or_default() += rows * r;
                    self.red_layout.insert(c.index(), (1, 4.0));
                }
                self.row_context = true;
                self.row_loads(*value, &mut w, r);
                self.row_loads(*index, &mut w, r);
                let o = self.ops(*value, rw, seen);
                self.row_context = false;
                w.set_ops(o, el, r);
            }
            Op::ScatterAdd { src, .. } => {
                // Per element: a shared load, a conversion and a shared-memory atomic add (the
                // model has no atomic pipe: charged as thread operations, the add on the ALU).
                let el: f64 = k.views[src.view].shape.iter().map(|&d| d as f64).product();
                w.alu_ops = 3.0 * el * r;
                w.int_ops = el * r;
            }
            Op::SmemStore { dst, value } => {
                let ty = &k.exprs[*value].ty;
                let stores = elements(ty) * smem_stores_per_element(ty, dst.transposed);
                let o = self.ops(*value, rw, seen);
                w.set_ops(o, stores, r);
            }
            Op::Assign { value: e, dst } if k.fragments[*dst].rows.is_some() => {
                self.row_loads(*e, &mut w, r);
                self.row_context = true;
                let o = self.ops(*e, rw, seen);
                self.row_context = false;
                w.set_ops(o, 0.0, r);
            }
            Op::AssignMany { pairs } => {
                let mut counted = HashSet::new();
                let mut o = Ops::default();
                for (_, e) in pairs {
                    self.row_loads_once(*e, &mut w, r, &mut counted);
                    self.row_context = true;
                    o = o + self.ops(*e, rw, seen);
                    self.row_context = false;
                }
                w.set_ops(o, 0.0, r);
            }
            Op::Assign { value: e, .. } | Op::TmemStore { src: e, .. } => {
                let o = self.ops(*e, rw, seen);
                w.set_ops(o, 0.0, r);
            }
            Op::Wait { .. } => w.waits = 1.0,
            Op::Sync { .. } => w.syncs = 1.0,
            Op::Ldmatrix { .. }
            | Op::TmemLoad { .. }
            | Op::TmemCopy { .. }
            | Op::Arrive { .. }
            | Op::Commit { .. }
            | Op::FenceProxyAsync => {}
            Op::StreamFixup { frag } => {
                let f = &k.fragments[*frag];
                let el: f64 = f.shape.iter().map(|&d| d as f64).product();
                w.fixup_bytes = el * f.dtype.bytes() as f64 * r;
            }
        }
        w
    }

    /// Element-wise thread operations to evaluate `e` once on one replica, counting each
    /// sub-expression once per place (`seen`: what this loop iteration already computed).
    fn ops(&mut self, e: ExprId, rw: &RoleWork, seen: &mut HashSet<ExprId>) -> Ops {
        if !seen.insert(e) {
            return Ops::default();
        }
        let k = self.k;
        let ex = &k.exprs[e];
        let n = elements(&ex.ty);
        let float = match &ex.ty {
            Ty::Frag { dtype, .. } | Ty::Scalar(dtype) => dtype.is_float(),
            _ => false,
        };
        // FP add/sub/mul run on the full-rate FMA pipe; compares, selects, min/max, integer
        // math and conversions on the half-rate ALU pipe.
        let fma = Ops::new(n, 0.0);
        let int = Ops::new(n, n);
        match &ex.kind {
            ExprKind::Binary(op, a, b) => {
                let own = match op {
                    BinOp::Add | BinOp::Sub | BinOp::Mul if float => fma,
                    BinOp::Div if float => Ops::new(2.0 * n, 0.0),
                    _ => int,
                };
                own + self.ops(*a, rw, seen) + self.ops(*b, rw, seen)
            }
            ExprKind::Cmp(_, a, b) => int + self.ops(*a, rw, seen) + self.ops(*b, rw, seen),
            ExprKind::Select(c, a, b) => {
                int + self.ops(*c, rw, seen) + self.ops(*a, rw, seen) + self.ops(*b, rw, seen)
            }
            ExprKind::Unary(op, a) => {
                // Transcendentals run on the quarter-rate special-function unit.
                let own = match op {
                    UnOp::Exp2 | UnOp::Exp2Ftz | UnOp::Log2 | UnOp::Sqrt | UnOp::Rsqrt => {
                        Ops::new(4.0 * n, 0.0)
                    }
                    UnOp::Not => int,
                    UnOp::Neg | UnOp::Abs => fma,
                };
                own + self.ops(*a, rw, seen)
            }
            ExprKind::Cast(_, a) => int + self.ops(*a, rw, seen),
            ExprKind::Reduce {
                op, arg, packed, ..
            } => {
                let inner = elements(&k.exprs[*arg].ty);
                // Min and argmin (max and argmax) of one argument share one pass in the
                // lowering: charge the pass once, to whichever is met first.
                let family = |o: ReduceOp| match o {
                    ReduceOp::Min | ReduceOp::ArgMin => Some(true),
                    ReduceOp::Max | ReduceOp::ArgMax => Some(false),
                    ReduceOp::Sum => None,
                };
                let mut with_index = matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax);
                for (other, ox) in k.exprs.iter() {
                    if let ExprKind::Reduce {
                        op: o,
                        arg: a,
                        packed: p,
                        ..
                    } = &ox.kind
                    {
                        if other != e && a == arg && p == packed && family(*o) == family(*op) {
                            seen.insert(other);
                            with_index |= matches!(o, ReduceOp::ArgMin | ReduceOp::ArgMax);
                        }
                    }
                }
                // Per element on the ALU pipe: a sum is one FADD (FMA pipe); a min alone one
                // FMNMX; with its index, a compare and two selects (FSETP, SEL, SEL), or with
                // packed keys one LOP3 and one FMNMX.
                let alu: f64 = match (op, with_index, packed) {
                    (ReduceOp::Sum, _, _) => 0.0,
                    (_, false, _) => 1.0,
                    (_, true, false) => 3.0,
                    (_, true, true) => 2.0,
                };
                let own = Ops {
                    all: inner * alu.max(1.0),
                    int: inner * alu,
                    ..Ops::default()
                };
                let own = if with_index && !self.row_context {
                    own.acc()
                } else {
                    own
                };
                // Then two rounds of quad shuffles (shuffle + combine) per result.
                own + Ops::new(4.0 * n, 2.0 * n) + self.ops(*arg, rw, seen)
            }
            ExprKind::Expand { arg, .. } => self.ops(*arg, rw, seen),
            // An OR (AND) per element on the ALU pipe, then one vote per warp.
            ExprKind::Vote { arg, .. } => {
                let inner = elements(&k.exprs[*arg].ty);
                Ops::new(inner, inner) + self.ops(*arg, rw, seen)
            }
            // One integer operation per element: the thread's index plus its offset.
            ExprKind::Iota { .. } => Ops::new(n, n),
            ExprKind::Load { shape, .. } => {
                let el: f64 = shape.iter().map(|&d| d as f64).product();
                // A per-column vector is read by every thread that holds one of its columns:
                // in a warpgroup accumulator layout, each column by 32 threads.
                let spread = match rw.role.map(|r| k.roles[r].unit) {
                    Some(RoleUnit::Warpgroup) if shape.len() == 1 && !self.row_context => 32.0,
                    _ => 1.0,
                };
                let own = Ops {
                    all: el * spread,
                    ..Ops::default()
                };
                if spread > 1.0 {
                    own.acc()
                } else {
                    own
                }
            }
            // One shared-memory load per element (a peer CTA's through the cluster's network:
            // its latency is in the wait that publishes the view, not here).
            ExprKind::ViewLoad { view, cta } => {
                let own = Ops::new(n, 0.0);
                let index = view
                    .rows
                    .map(|(s, _)| s)
                    .into_iter()
                    .chain(view.stage)
                    .chain(*cta);
                index.fold(own, |acc, i| acc + self.ops(i, rw, seen))
            }
            // Constants, indices and fragment reads are operands, not operations.
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Bool(_)
            | ExprKind::Dim(_)
            | ExprKind::Scalar(_)
            | ExprKind::LoopVar(_)
            | ExprKind::TileCoord { .. }
            | ExprKind::RoleIndex(_)
            | ExprKind::PipelineStage(_)
            | ExprKind::Frag(_) => Ops::default(),
        }
    }
}

/// Thread operations: all of them, and those on the half-rate ALU pipe.
#[derive(Clone, Copy, Debug, Default)]
struct Ops {
    all: f64,
    int: f64,
    /// Of which, indexed reductions and per-column loads in accumulator layouts
    /// (`Work::acc_alu_ops`).
    acc_all: f64,
    acc_int: f64,
}

impl Ops {
    fn new(all: f64, int: f64) -> Ops {
        Ops {
            all,
            int,
            ..Ops::default()
        }
    }

    /// These operations, counted as accumulator-layout bookkeeping too.
    fn acc(self) -> Ops {
        Ops {
            acc_all: self.all,
            acc_int: self.int,
            ..self
        }
    }
}

impl std::ops::Add for Ops {
    type Output = Ops;
    fn add(self, o: Ops) -> Ops {
        Ops {
            all: self.all + o.all,
            int: self.int + o.int,
            acc_all: self.acc_all + o.acc_all,
            acc_int: self.acc_int + o.acc_int,
        }
    }
}

/// Store instructions (thread operations, as issued) per element of a value `view.store` writes,
/// by the form the lowering picks for it (cake-lower's `legal::SmemStore`): a tile goes in a
/// pair of elements a store, or eight a `stmatrix .x4 .trans` when transposed (`view.T.store`);
/// one value per row of a 64-row tile (a 1-D fragment) is held by the four threads of a quad,
/// and every thread issues the predicated store of each of its two rows: four per element.
fn smem_stores_per_element(ty: &Ty, transposed: bool) -> f64 {
    match ty {
        Ty::Frag { shape, .. } if shape.len() == 1 => 4.0,
        _ if transposed => 1.0 / 8.0,
        _ => 1.0 / 2.0,
    }
}

/// Elements of a register value (0 for indices, conditions and scalars).
fn elements(ty: &Ty) -> f64 {
    match ty {
        Ty::Frag { shape, .. } => shape.iter().map(|&d| d as f64).product(),
        _ => 0.0,
    }
}

/// Adds `w`, `mult` times, where `sink` says: the loop being analysed, or the work before or
/// after the role's loops.
fn sink_work(rw: &mut RoleWork, sink: Sink, w: &Work, mult: f64) {
    match sink {
        Sink::Loop(i) => rw.loops[i].work.add(w, mult),
        Sink::Outside if rw.loops.is_empty() => rw.before.add(w, mult),
        Sink::Outside => rw.after.add(w, mult),
    }
}

/// Up to `most` values of `0..n`, evenly spaced, the first and the last among them.
fn spread(n: i64, most: i64) -> impl Iterator<Item = i64> {
    let count = n.clamp(0, most.max(2));
    (0..count).map(move |i| {
        if count <= 1 {
            0
        } else {
            i * (n - 1) / (count - 1)
        }
    })
}
