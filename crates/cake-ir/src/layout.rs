//! Shared-memory placement, computed once from the declarations so that the verifier (which
//! checks it against the target's limit) and the lowering (which emits the offsets) agree.

use crate::kernel::{BarrierId, ExprKind, Kernel, Op, RoleId, RowOwner, Stmt, ViewId};

/// Bytes reserved per mbarrier (`.b64`).
pub const MBARRIER_BYTES: u64 = 8;

/// Alignment a view's base must have: the swizzle pattern repeats every 8 rows of the span
/// (1024 B for 128B swizzle), and TMA destinations need 128 B in any case.
pub fn view_alignment(swizzle: u32) -> u64 {
    match swizzle {
        0 => 128,
        s => 8 * s as u64,
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ViewPlacement {
    pub view: ViewId,
    /// Byte offset from the start of dynamic shared memory.
    pub offset: u64,
    /// Distance between consecutive stages (one stage rounded up to the alignment).
    pub stage_stride: u64,
    pub bytes: u64,
    pub align: u64,
}

/// A role's row-reduction scratch: `floats_per_warp` f32 per warp per replica (its widest
/// per-row fragment's rows, times the reductions one statement exchanges at once).
#[derive(Clone, Debug, PartialEq)]
pub struct RowScratch {
    pub role: RoleId,
    /// Byte offset from the start of dynamic shared memory.
    pub offset: u64,
    pub floats_per_warp: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BarrierPlacement {
    pub barrier: BarrierId,
    pub offset: u64,
    /// One mbarrier per pipeline stage.
    pub slots: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TileRing {
    /// Byte offset of the full barriers; the empty barriers follow them, then the indices.
    pub offset: u64,
    pub slots: u32,
}

impl TileRing {
    pub fn empty_offset(&self) -> u64 {
        self.offset + MBARRIER_BYTES * u64::from(self.slots)
    }
    pub fn index_offset(&self) -> u64 {
        self.offset + 2 * MBARRIER_BYTES * u64::from(self.slots)
    }
    fn bytes(&self) -> u64 {
        (2 * MBARRIER_BYTES + 4) * u64::from(self.slots)
    }
}

/// Slots of a dynamic tile loop's ring: a role may run as many tiles ahead of another as its
/// deepest pipeline has stages (a producer filling one stage per tile), so the ring holds one
/// more than that, and at least two (the next tile is handed over while this one runs).
pub fn tile_ring_slots(k: &Kernel) -> u32 {
    let deepest = k.pipelines.iter().map(|(_, p)| p.stages).max().unwrap_or(1);
    deepest.saturating_add(1).clamp(2, 64)
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct SmemLayout {
    pub views: Vec<ViewPlacement>,
    /// Byte offset of each pool's base, in declaration order.
    pub pool_bases: Vec<u64>,
    pub barriers: Vec<BarrierPlacement>,
    /// Where `tcgen05.alloc` writes the TMEM base address, when the kernel uses TMEM.
    pub tmem_slot: Option<u64>,
    /// Per role whose rows a whole warpgroup holds (`rows="warpgroup"`), the scratch its row
    /// reductions combine the four warps' partials in, shared by all of the role's reductions
    /// (each exchange is fenced by barriers before its writes and after them).
    pub row_scratch: Vec<RowScratch>,
    /// A 4-byte word the lowering stores into before a wgmma wait inside a loop with a deferred
    /// MMA (`defer=True`): ptxas keeps a `wgmma.wait_group` after earlier shared-memory stores,
    /// so a store of a value the middle computed keeps that work ahead of the wait. Present when
    /// the kernel defers an MMA.
    pub order_slot: Option<u64>,
    /// The ring that hands a dynamic tile loop's tiles (`lm.tiles(..., dynamic=True)`) from the
    /// thread that takes them to every role: `slots` full and `slots` empty mbarriers, then
    /// `slots` 4-byte tile indices.
    pub tile_ring: Option<TileRing>,
    /// Total dynamic shared memory, alignment padding included. The runtime aligns the base to
    /// 1024 B, so no slack is needed for that.
    pub total: u64,
}

impl SmemLayout {
    pub fn view(&self, v: ViewId) -> &ViewPlacement {
        self.views
            .iter()
            .find(|p| p.view == v)
            .expect("every view is placed")
    }
    pub fn row_scratch(&self, role: RoleId) -> Option<&RowScratch> {
        self.row_scratch.iter().find(|s| s.role == role)
    }
    pub fn barrier(&self, b: BarrierId) -> &BarrierPlacement {
        self.barriers
            .iter()
            .find(|p| p.barrier == b)
            .expect("every barrier is placed")
    }
}

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

/// Place every view (pool by pool, in declaration order, at its explicit offset or packed after
/// the previous one), then the barriers, then a dynamic tile loop's ring, then the TMEM address
/// slot, then the row-reduction
/// scratch of roles whose rows a warpgroup holds, then the ordering word of deferred MMAs.
pub fn smem_layout(k: &Kernel) -> SmemLayout {
    let mut layout = SmemLayout::default();
    let mut cursor = 0u64;
    for (pool_id, pool) in k.pools.iter() {
        let pool_base = align_up(cursor, 1024);
        layout.pool_bases.push(pool_base);
        let mut end = pool_base;
        let mut packed = pool_base;
        for (vid, view) in k.views.iter().filter(|(_, v)| v.pool == pool_id) {
            let align = view_alignment(view.swizzle);
            let stage_stride = align_up(view.stage_bytes().max(1), align);
            let offset = match view.offset {
                Some(o) => pool_base + o as u64,
                None => align_up(packed, align),
            };
            let bytes = stage_stride * view.stages.max(1) as u64;
            packed = packed.max(offset + bytes);
            end = end.max(offset + bytes);
            layout.views.push(ViewPlacement {
                view: vid,
                offset,
                stage_stride,
                bytes,
                align,
            });
        }
        if let Some(size) = pool.size {
            end = end.max(pool_base + size as u64);
        }
        cursor = end;
    }
    cursor = align_up(cursor, MBARRIER_BYTES);
    for (bid, b) in k.barriers.iter() {
        let slots = b.pipeline.map_or(1, |p| k.pipelines[p].stages.max(1));
        layout.barriers.push(BarrierPlacement {
            barrier: bid,
            offset: cursor,
            slots,
        });
        cursor += MBARRIER_BYTES * slots as u64;
    }
    if k.dynamic_tiles() {
        let ring = TileRing {
            offset: cursor,
            slots: tile_ring_slots(k),
        };
        cursor += ring.bytes();
        cursor = align_up(cursor, MBARRIER_BYTES);
        layout.tile_ring = Some(ring);
    }
    if !k.tmems.is_empty() {
        layout.tmem_slot = Some(cursor);
        cursor += 8;
    }
    for (rid, role) in k.roles.iter() {
        if let Some(rows) = warpgroup_rows(k, rid) {
            cursor = align_up(cursor, 16);
            let floats_per_warp = rows * exchanged_reductions(k, rid);
            layout.row_scratch.push(RowScratch {
                role: rid,
                offset: cursor,
                floats_per_warp,
            });
            cursor += role.replicas() as u64 * 4 * u64::from(floats_per_warp) * 4;
        }
    }
    let defers = k
        .stmts
        .iter()
        .any(|(_, s)| matches!(s, Stmt::Op(Op::Mma { defer: true, .. })));
    if defers {
        cursor = align_up(cursor, 16);
        layout.order_slot = Some(cursor);
        cursor += 16;
    }
    layout.total = align_up(cursor, 16);
    layout
}

/// The most rows a fragment of `role` held by whole warpgroups (`rows="warpgroup"`) has: its
/// row reductions combine the four warps' partials in a scratch of that many rows per warp.
/// Per-row values count too: a reduction assigned to one may read only loads.
pub fn warpgroup_rows(k: &Kernel, role: RoleId) -> Option<u32> {
    k.fragments
        .iter()
        .filter(|(_, f)| f.role == role && f.rows == Some(RowOwner::Warpgroup))
        .map(|(_, f)| f.shape[0])
        .max()
}

/// The most row reductions of `role` whose partials cross its warps in one exchange: those of
/// one statement assigning several per-row values (`a[:], b[:] = lm.sum(x * u, axis=1),
/// lm.sum(x * w, axis=1)`), computed in one pass, meet in the scratch together (every reduction
/// along the rows in the statement's values is counted, a bound on what the lowering fuses).
/// At least 1: any other reduction crosses alone.
pub fn exchanged_reductions(k: &Kernel, role: RoleId) -> u32 {
    let counts = k.stmts.iter().filter_map(|(_, s)| {
        let Stmt::Op(Op::AssignMany { pairs }) = s else {
            return None;
        };
        if !pairs.iter().any(|(f, _)| k.fragments[*f].role == role) {
            return None;
        }
        let mut n = 0u32;
        for (_, value) in pairs {
            k.visit_expr(*value, |_, kind| {
                if matches!(kind, ExprKind::Reduce { axis: 1, .. }) {
                    n += 1;
                }
                true
            });
        }
        Some(n)
    });
    counts.max().unwrap_or(1).max(1)
}
