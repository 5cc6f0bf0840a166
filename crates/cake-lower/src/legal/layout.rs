//! Register layouts of fragments, and the inference shared by the warpgroup families (wgmma and
//! tcgen05): accumulators, register A operands and per-row vectors of 64-row tiles. Each
//! backend's `plan_layouts` decides which inference runs; it runs once per lowering, in the
//! legality pass, and the emitter reads the result from the [`Plan`](super::Plan).

use super::Planner;
use cake_ir::*;

/// How a fragment's elements are spread over a warpgroup's registers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum FragLayout {
    /// The wgmma accumulator of an m64nN tile: thread t holds rows 16·(t/32) + (t%32)/4 (+8)
    /// and column pairs 8i + 2·(t%4).
    WgmmaAcc { n: u32 },
    /// One value per row of a 64-row accumulator tile: each thread holds its two rows (+0, +8),
    /// replicated across the four threads of a quad — what a row reduction of the tile yields.
    AccRows,
    /// An mma.sync accumulator of an (m, n) tile held by one warp: m/16 × n/8 tiles of
    /// m16n8, four registers each. Lane t holds rows 16·mt + t/4 (+8) and columns
    /// 8·nt + 2·(t%4) (+1); register 4·(mt·n/8 + nt) + 2h + j.
    MmaAcc { m: u32, n: u32 },
    /// A wgmma A operand in registers: a 16-bit (64, k) tile of a warpgroup, in the
    /// accumulator's element order (row +8h, column 8i + 2·(t%4) + j), two elements per 32-bit
    /// register: register 2i + h holds elements j = 0, 1. k/16 k-steps of four registers each.
    WgmmaA { k: u32 },
    /// An mma.sync A operand of an (m, k) tile held by one warp, loaded by ldmatrix.x4: m/16
    /// row tiles × (k bytes)/32 k-steps, four 32-bit registers each, in the order ldmatrix
    /// returns them (rows +0/+8 of the first 16 bytes, then of the second 16 bytes).
    MmaA { m: u32, k_bytes: u32 },
    /// An mma.sync B operand of a (k, n) tile held by one warp, loaded by ldmatrix.x4: (k
    /// bytes)/32 k-steps × n/16 pairs of 8-column tiles, four 32-bit registers each: the two B
    /// registers of column tile 2·np, then of 2·np + 1 (register 4·(kt·n/16 + np) + 2·j + h).
    MmaB { n: u32, k_bytes: u32 },
    /// One TMEM lane (a row of `n` columns) per thread of a warpgroup: what `tcgen05.ld` of the
    /// 32x32b shape gives, thread t holding row t (sm_100a family).
    TmemRow { n: u32 },
    /// One value per TMEM lane (row), held by that lane's thread: a row reduction of a
    /// `TmemRow` tile, or a `(128,)` fragment of the same warpgroup role.
    LaneScalar,
    /// A row-layout tile (`rows=`, no MMA): see [`RowGeom`].
    RowTile(RowGeom),
    /// One value per row of a row-layout tile, held by every thread of the row's group: a row
    /// reduction of a `RowTile`, or a `(rows,)` fragment declared with `rows=`.
    RowVals(RowGeom),
}

/// Where the elements of a row-layout value live. The `replica` threads of a role replica form
/// `replica / t` row groups of `t` consecutive threads; group g holds rows g, g + groups, ...
/// (`rpt` of them). Within a group, thread l holds the 8-element chunks l, l + t, l + 2t, ... of
/// each of its rows: columns 8·(l + t·c) + v, so each chunk is one 16-byte access of a 16-bit
/// tensor and the group's accesses to a row are contiguous.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RowGeom {
    /// Threads of a replica: 32 (warp role) or 128 (warpgroup role).
    pub(crate) replica: u32,
    /// Threads that share one row: 1, 32 or 128.
    pub(crate) t: u32,
    /// Rows each thread holds.
    pub(crate) rpt: u32,
    /// Columns of the tile (0 for per-row values).
    pub(crate) cols: u32,
}

/// Elements per chunk: one 16-byte access of a 16-bit tensor.
pub(crate) const ROW_CHUNK: u32 = 8;

impl RowGeom {
    pub(crate) fn groups(self) -> u32 {
        self.replica / self.t
    }
    /// Rows of the tile.
    pub(crate) fn rows(self) -> u32 {
        self.rpt * self.groups()
    }
    /// Chunks of each of its rows one thread holds.
    pub(crate) fn cpt(self) -> u32 {
        self.cols.div_ceil(ROW_CHUNK * self.t)
    }
    /// Whether the last chunk of some thread runs past the tile's columns (those elements do not
    /// exist: reductions and stores skip them).
    pub(crate) fn ragged(self) -> bool {
        !self.cols.is_multiple_of(ROW_CHUNK * self.t)
    }
    /// Same rows held by the same threads (a per-row value broadcasts along such a tile).
    pub(crate) fn same_rows(self, other: RowGeom) -> bool {
        (self.replica, self.t, self.rpt) == (other.replica, other.t, other.rpt)
    }
}

impl FragLayout {
    /// 32-bit registers one thread holds.
    pub(crate) fn registers(self) -> u32 {
        match self {
            FragLayout::WgmmaAcc { n } => n / 2,
            FragLayout::AccRows => 2,
            FragLayout::MmaAcc { m, n } => m * n / 32,
            FragLayout::MmaA { m, k_bytes } => m * k_bytes / 128,
            FragLayout::MmaB { n, k_bytes } => n * k_bytes / 128,
            FragLayout::WgmmaA { k } => k / 4,
            FragLayout::TmemRow { n } => n,
            FragLayout::LaneScalar => 1,
            FragLayout::RowTile(g) => g.rpt * g.cpt() * ROW_CHUNK,
            FragLayout::RowVals(g) => g.rpt,
        }
    }
    /// An MMA operand loaded whole (ldmatrix), never written element by element.
    pub(crate) fn is_mma_operand(self) -> bool {
        matches!(
            self,
            FragLayout::MmaA { .. } | FragLayout::MmaB { .. } | FragLayout::WgmmaA { .. }
        )
    }
    pub(crate) fn is_accumulator(self) -> bool {
        matches!(
            self,
            FragLayout::WgmmaAcc { .. } | FragLayout::MmaAcc { .. }
        )
    }
}

/// Which register element of a warpgroup tile an element-wise expression is evaluated for.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Site {
    /// Element (i, h, j) of an accumulator tile: register 4i + 2h + j, row +8h, column 8i + j.
    Tile,
    /// Row h of the tile (h in 0..2).
    Rows,
    /// Column `c` (a C variable in scope) of a one-row-per-thread TMEM tile
    /// (`FragLayout::TmemRow`).
    Lane,
    /// Element (r, c, v) of a row-layout tile: the thread's row r, chunk c, element v of it.
    Row(RowGeom),
    /// The thread's row r of a row-layout tile (a per-row value).
    RowVal(RowGeom),
    /// Chunk c, element v of the thread's columns (a per-column vector broadcast along rows).
    RowCol(RowGeom),
}
impl Planner<'_> {
    /// Fragments declared with `rows=` take the row layout; what the MMA inference placed
    /// already is an MMA operand, which a row-layout fragment cannot be.
    pub(crate) fn infer_row_layouts(&mut self) {
        for (f, frag) in self.k.fragments.iter() {
            let Some(owner) = frag.rows else { continue };
            let sp = self.k.fragments.span(f);
            // Reported, then placed all the same: its uses are not reported again.
            if !matches!(frag.dtype, DType::F32 | DType::I32) {
                self.unsupported(sp, format!("a row-layout fragment holds f32 or i32 values; `{}` is {} (keep 16-bit data as f32 in registers: lm.cast(lm.load(...), lm.f32))", frag.name, frag.dtype));
            }
            let replica = self.k.roles[frag.role].unit.threads();
            let t = owner.threads();
            let rows = frag.shape[0];
            let geom = RowGeom {
                replica,
                t,
                rpt: rows / (replica / t),
                cols: frag.shape.get(1).copied().unwrap_or(0),
            };
            let layout = if frag.shape.len() == 2 {
                FragLayout::RowTile(geom)
            } else {
                FragLayout::RowVals(geom)
            };
            self.frag_layouts.insert(f, layout);
        }
    }

    /// A row reduction whose argument reads no fragment (`lm.sum(lm.load(B, shape=(R, K)) *
    /// a[None, :], axis=1)`) has no tile to take a layout from; assigned to a per-row fragment,
    /// its argument's tile loads take that fragment's rows and their own columns. A load of other
    /// rows is left unplaced, and the reduction is reported where it is checked.
    pub(crate) fn infer_reduced_load_layouts(&mut self) {
        let k = self.k;
        for (_, stmt) in k.stmts.iter() {
            let pairs: Vec<(FragId, ExprId)> = match stmt {
                Stmt::Op(Op::Assign { dst, value }) => vec![(*dst, *value)],
                Stmt::Op(Op::AssignMany { pairs }) => pairs.clone(),
                _ => continue,
            };
            for (dst, value) in pairs {
                let Some(FragLayout::RowVals(g)) = self.frag_layouts.get(&dst).copied() else {
                    continue;
                };
                let mut args = Vec::new();
                k.visit_expr(value, |_, kind| {
                    if let ExprKind::Reduce { arg, axis: 1, .. } = kind {
                        args.push(*arg);
                    }
                    true
                });
                for arg in args {
                    for load in unplaced_tile_loads(k, arg) {
                        let ExprKind::Load { shape, .. } = &k.exprs[load].kind else {
                            continue;
                        };
                        if shape[0] == g.rows() {
                            let tile = RowGeom {
                                cols: shape[1],
                                ..g
                            };
                            self.load_layouts
                                .entry(load)
                                .or_insert(FragLayout::RowTile(tile));
                        }
                    }
                }
            }
        }
    }

    /// An f32 fragment that no MMA places, assigned from a value that reads an accumulator of
    /// its own role and shape (`out[:] = acc * scale`), holds that value register for register:
    /// it takes the accumulator's layout (and a copy of a copy too).
    pub(crate) fn infer_accumulator_copies(&mut self) {
        let k = self.k;
        loop {
            let mut placed = Vec::new();
            for (_, stmt) in k.stmts.iter() {
                let pairs: &[(FragId, ExprId)] = match stmt {
                    Stmt::Op(Op::Assign { dst, value }) => &[(*dst, *value)],
                    Stmt::Op(Op::AssignMany { pairs }) => pairs,
                    _ => continue,
                };
                for &(dst, value) in pairs {
                    let frag = &k.fragments[dst];
                    if self.frag_layouts.contains_key(&dst)
                        || frag.rows.is_some()
                        || frag.dtype != DType::F32
                        || placed.iter().any(|&(f, _)| f == dst)
                    {
                        continue;
                    }
                    let mut source = None;
                    k.visit_expr(value, |_, kind| {
                        if let ExprKind::Frag(f) = kind {
                            let src = &k.fragments[*f];
                            match self.frag_layouts.get(f) {
                                Some(l)
                                    if l.is_accumulator()
                                        && src.role == frag.role
                                        && src.shape == frag.shape =>
                                {
                                    source.get_or_insert(*l);
                                }
                                _ => {}
                            }
                        }
                        true
                    });
                    if let Some(layout) = source {
                        placed.push((dst, layout));
                    }
                }
            }
            if placed.is_empty() {
                return;
            }
            self.frag_layouts.extend(placed);
        }
    }

    /// A fragment declared with `rows=` that an MMA family's inference placed is an MMA operand.
    pub(crate) fn check_row_layouts_kept(&mut self) {
        for (f, frag) in self.k.fragments.iter() {
            let kept = matches!(
                self.frag_layouts.get(&f),
                None | Some(FragLayout::RowTile(_) | FragLayout::RowVals(_))
            );
            if frag.rows.is_some() && !kept {
                let sp = self.k.fragments.span(f);
                self.unsupported(sp, format!("fragment `{}` is declared with rows=, a layout for register math without an MMA; an MMA operand or accumulator takes the MMA's layout (drop rows=)", frag.name));
                self.frag_layouts.remove(&f);
            }
        }
    }

    pub(crate) fn infer_warpgroup_layouts(&mut self) {
        let kf = self.kf;
        for (sid, op) in kf.ops.iter().map(|s| (s.stmt, &s.op)) {
            if let Op::Mma {
                acc: Operand::Frag(f),
                ..
            } = op
            {
                let frag = &self.k.fragments[*f];
                let role = &self.k.roles[frag.role];
                if role.unit != RoleUnit::Warpgroup || frag.shape.len() != 2 || frag.shape[0] != 64
                {
                    let sp = self.k.stmts.span(sid);
                    self.unsupported(sp, format!("a wgmma accumulator is a (64, N) fragment of a warpgroup role; `{}` is {:?} on role `{}`", frag.name, frag.shape, role.name));
                    continue;
                }
                self.frag_layouts
                    .insert(*f, FragLayout::WgmmaAcc { n: frag.shape[1] });
            }
        }
        // Register A operands: a 16-bit (64, K) tile of a warpgroup role.
        let kf = self.kf;
        for (sid, op) in kf.ops.iter().map(|s| (s.stmt, &s.op)) {
            let Op::Mma {
                a: Operand::Frag(f),
                ..
            } = op
            else {
                continue;
            };
            let frag = &self.k.fragments[*f];
            let role = &self.k.roles[frag.role];
            let ok = role.unit == RoleUnit::Warpgroup
                && frag.shape.len() == 2
                && frag.shape[0] == 64
                && frag.shape[1].is_multiple_of(16)
                && matches!(frag.dtype, DType::BF16 | DType::F16);
            if !ok {
                let sp = self.k.stmts.span(sid);
                self.unsupported(sp, format!("a wgmma A operand in registers is a bf16 or f16 (64, K) fragment of a warpgroup role, K a multiple of 16; `{}` is {:?} {} on role `{}`", frag.name, frag.shape, frag.dtype, role.name));
                continue;
            }
            self.frag_layouts
                .insert(*f, FragLayout::WgmmaA { k: frag.shape[1] });
        }
        // Per-row vectors of a warpgroup role take the row layout of its 64-row tiles.
        for (f, frag) in self.k.fragments.iter() {
            let role = &self.k.roles[frag.role];
            if !self.frag_layouts.contains_key(&f)
                && role.unit == RoleUnit::Warpgroup
                && frag.shape == [64]
            {
                self.frag_layouts.insert(f, FragLayout::AccRows);
            }
        }
    }
}

/// The 2-D loads a reduction's argument reads element by element when it reads no fragment:
/// not under a broadcast (those are per-row or per-column vectors) or a nested reduction. Empty
/// when the argument reads a fragment, whose layout it takes.
fn unplaced_tile_loads(k: &Kernel, arg: ExprId) -> Vec<ExprId> {
    let mut loads = Vec::new();
    let mut reads_fragment = false;
    k.visit_expr(arg, |e, kind| match kind {
        ExprKind::Frag(_) | ExprKind::ViewLoad { .. } => {
            reads_fragment = true;
            false
        }
        ExprKind::Load { shape, .. } => {
            if shape.len() == 2 {
                loads.push(e);
            }
            false
        }
        ExprKind::Expand { .. } | ExprKind::Reduce { .. } => false,
        _ => true,
    });
    if reads_fragment {
        Vec::new()
    } else {
        loads
    }
}
