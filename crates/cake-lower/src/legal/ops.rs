//! The legality conditions of roles, fragments and operations common to every MMA family. Each
//! returns what the emitter needs when the construct is lowered, or the not-lowered message; the
//! emitter and the pass call the same function (what one family decides is a method of its
//! backend in `crate::mma`).

use super::layout::FragLayout;
use cake_ir::*;
use cake_target::{Feature, Target};

/// The CTA's 16 hardware barriers (`bar.sync id`): 0 is `__syncthreads`, named barriers
/// (`lm.named_barrier`) take ids in declaration order from the first range, and the per-replica
/// barriers around TMA stores take the second.
pub(crate) const NAMED_BARRIER_IDS: std::ops::RangeInclusive<u32> = 1..=7;
pub(crate) const TMA_STORE_BARRIER_IDS: std::ops::RangeInclusive<u32> = 8..=15;

/// CTAs per cluster when the kernel runs in clusters (1 otherwise).
pub(crate) fn cluster_ctas(k: &Kernel, target: &Target) -> u32 {
    if target.has(Feature::Clusters) {
        k.cluster_size()
    } else {
        1
    }
}

/// The operations of `role`, in program order.
pub(crate) fn role_ops(kf: &KernelFacts, role: RoleId) -> impl Iterator<Item = &OpSite> + '_ {
    kf.ops.iter().filter(move |s| s.role == Some(role))
}

/// The rank of a tensor parameter (0 for a scalar).
pub(crate) fn rank(k: &Kernel, p: ParamId) -> usize {
    match &k.params[p].kind {
        ParamKind::Tensor { dims, .. } => dims.len(),
        ParamKind::Scalar { .. } => 0,
    }
}

/// The tile counts of the kernel's tile loop (none without one).
pub(crate) fn tile_counts(k: &Kernel) -> Vec<ExprId> {
    k.loops
        .iter()
        .find_map(|(_, l)| match &l.kind {
            LoopKind::Tiles { counts, .. } => Some(counts.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The warps `[first, last)` of a role, which must be contiguous.
pub(crate) fn role_warp_range(k: &Kernel, rid: RoleId) -> Result<(u32, u32), String> {
    let warps = k.roles[rid].warps();
    let (first, last) = (
        *warps.iter().min().unwrap_or(&0),
        *warps.iter().max().unwrap_or(&0) + 1,
    );
    if (last - first) as usize != warps.len() {
        return Err("roles with non-contiguous warps are not lowered yet".into());
    }
    Ok((first, last))
}

/// A fragment's declaration needs a register layout.
pub(crate) fn declared_layout(
    k: &Kernel,
    f: FragId,
    layout: Option<FragLayout>,
) -> Result<FragLayout, String> {
    layout.ok_or_else(|| {
        format!(
            "fragment `{}` is not an MMA accumulator; other register layouts are not lowered yet",
            k.fragments[f].name
        )
    })
}

/// Where a `with lm.ahead(...)` region is lowered.
pub(crate) const AHEAD_PLACES: &str = "`with lm.ahead(...)` is lowered as the first statement of a pipelined `lm.range` loop's body, in a loop without a deferred or double-buffered MMA";

/// Whether `block` holds anything `role` runs (`inside`: the block is in one of its `with`
/// regions).
pub(crate) fn has_role_work(k: &Kernel, role: RoleId, block: &Block, inside: bool) -> bool {
    block.iter().any(|&s| match &k.stmts[s] {
        Stmt::Role { role: r, body } => *r == role && !body.is_empty(),
        Stmt::Loop { body, .. } | Stmt::Ahead { body, .. } => has_role_work(k, role, body, inside),
        Stmt::If {
            then_body,
            else_body,
            ..
        } => has_role_work(k, role, then_body, inside) || has_role_work(k, role, else_body, inside),
        Stmt::Op(_) => inside,
    })
}

/// An operation only some MMA families have an instruction for, as the IR spells it.
pub(crate) fn family_op_name(op: &Op) -> Option<&'static str> {
    Some(match op {
        Op::Ldmatrix { .. } => "Ldmatrix",
        Op::Commit { .. } => "Commit",
        Op::TmemLoad { .. } => "TmemLoad",
        Op::TmemStore { .. } => "TmemStore",
        Op::TmemCopy { .. } => "TmemCopy",
        _ => return None,
    })
}

/// `view.tma_load(tensor, coords, barrier, multicast)`.
pub(crate) fn tma_load(
    k: &Kernel,
    target: &Target,
    dst: &ViewRef,
    src: ParamId,
    multicast: u32,
) -> Result<(), String> {
    let mc = multicast;
    // `CAKE-C013` reports these; a verified schedule never gets here.
    if mc > 1 && (mc != cluster_ctas(k, target) || k.multicast_problem(dst, mc).is_some()) {
        return Err(
            "a multicast TMA load is lowered into a whole 2-D view whose rows split \
                 evenly over a cluster of exactly `multicast` CTAs"
                .into(),
        );
    }
    if dst.transposed || (dst.rows.is_some() && k.views[dst.view].shape.len() != 2) {
        return Err("a TMA load writes a 2-D view or a row range of one (no .T)".into());
    }
    if !(2..=5).contains(&rank(k, src)) {
        return Err("TMA loads are lowered from tensors of rank 2 to 5 (the hardware's)".into());
    }
    Ok(())
}

/// `view.tma_store(tensor, coords)`.
pub(crate) fn tma_store(k: &Kernel, dst: ParamId, src: &ViewRef) -> Result<(), String> {
    let view = &k.views[src.view];
    let rank = rank(k, dst);
    if !(1..=3).contains(&rank)
        || view.shape.len() > rank
        || src.transposed
        || (view.shape.len() != 2 && view.panels() != 1)
    {
        return Err(
            "TMA stores are lowered for 2-D views (or whole 1-D views) into tensors of rank 1 to 3"
                .into(),
        );
    }
    Ok(())
}

/// How `view.cp_async` copies a tile of (rows, columns) elements: in 16-byte pieces when the
/// source is 16-byte aligned (`wide`), element by element when it is not (`narrow`); with both,
/// the alignment is tested at run time.
pub(crate) struct CpAsyncForm {
    pub(crate) tile: (u32, u32),
    pub(crate) wide: bool,
    pub(crate) narrow: bool,
}

/// `view.cp_async(tensor, coords, barrier)`: a 1-D or 2-D view, or `.rows` of a 2-D one (no `.T`),
/// from the trailing axes of a tensor of at least its rank. cp.async moves 4, 8 or 16 bytes, so
/// elements of 1 or 2 bytes need rows of whole 16-byte chunks, 16-byte aligned (the contract
/// says so, as for TMA); 4- and 8-byte elements may be copied one by one.
pub(crate) fn cp_async(k: &Kernel, dst: &ViewRef, src: ParamId) -> Result<CpAsyncForm, String> {
    let view = &k.views[dst.view];
    if !(1..=2).contains(&view.shape.len()) || dst.transposed {
        return Err(
            "cp_async is lowered for a 1-D or 2-D view or `.rows` of a 2-D one (no .T)".into(),
        );
    }
    if view.shape.len() > rank(k, src) {
        return Err(
            "cp_async reads the view from the tensor's trailing axes; the tensor has fewer".into(),
        );
    }
    // `.rows(start, count)`: a box of `count` rows into those rows of the view (blocks of a
    // wider tile stacked along the rows: one MN-major operand block per warp).
    let tile = match (view.shape.as_slice(), dst.rows) {
        ([n], _) => (1, *n),
        ([_, n], Some((_, count))) => (count, *n),
        ([m, n], None) => (*m, *n),
        _ => unreachable!("checked above"),
    };
    let eb = view.dtype.bytes();
    let wide = (tile.1 * eb).is_multiple_of(16);
    let narrow = matches!(eb, 4 | 8);
    if !wide && !narrow {
        return Err(format!(
            "cp_async copies {eb}-byte elements in 16-byte chunks; a row of `{}` is {} bytes",
            view.name,
            tile.1 * eb
        ));
    }
    Ok(CpAsyncForm { tile, wide, narrow })
}

/// `view.copy_to(tensor, coords, reduce)`: an unswizzled 1-D or 2-D view (or a `.rows` range)
/// of 4-byte elements, no `.T`, into the trailing axes of a tensor of at least its rank.
pub(crate) fn copy_to(k: &Kernel, dst: ParamId, src: &ViewRef) -> Result<(), String> {
    let view = &k.views[src.view];
    if src.transposed || view.swizzle != 0 || !(1..=2).contains(&view.shape.len()) {
        return Err("copy_to is lowered for unswizzled 1-D and 2-D views (no .T)".into());
    }
    if view.shape.len() > rank(k, dst) {
        return Err(
            "copy_to writes the view into the tensor's trailing axes; the tensor has fewer".into(),
        );
    }
    if view.dtype.bytes() != 4 {
        return Err(format!(
            "copy_to is lowered for 4-byte elements (f32, i32); `{}` holds {}",
            view.name, view.dtype
        ));
    }
    Ok(())
}

/// Whether the role's replicas synchronise their own threads (`replica_sync`): around TMA
/// stores, per-thread copies out of shared memory, shared-memory fills and scatter-adds.
pub(crate) fn role_syncs_replicas(k: &Kernel, kf: &KernelFacts, role: RoleId) -> bool {
    role_ops(kf, role).any(|s| match &s.op {
        Op::TmaStore { .. } | Op::CopyTo { .. } | Op::ScatterAdd { .. } => true,
        Op::SmemStore { value, .. } => k.const_number(*value).is_some(),
        _ => false,
    })
}

/// The first hardware barrier id of `role`'s per-replica barriers: one per replica of each role
/// that synchronises its replicas (TMA stores, fills, scatter-adds, row reductions across the
/// warps of a warpgroup), from 8 up (clear of the ids libraries reserve) to 15.
pub(crate) fn replica_barrier(k: &Kernel, kf: &KernelFacts, role: RoleId) -> Result<u32, String> {
    let (lowest, highest) = (*TMA_STORE_BARRIER_IDS.start(), *TMA_STORE_BARRIER_IDS.end());
    let replicas = k.roles[role].replicas();
    let first_id = lowest
        + k.roles
            .iter()
            .map(|(h, _)| h)
            .take_while(|h| *h != role)
            .filter(|h| role_syncs_replicas(k, kf, *h) || super::role_reduces_across_warps(k, *h))
            .map(|h| k.roles[h].replicas())
            .sum::<u32>();
    if first_id + replicas - 1 > highest {
        return Err(format!(
            "the roles that synchronise their replicas (TMA stores, fills, scatter-adds, warpgroup row reductions) need {} named barriers (ids {lowest}..={}); the hardware has ids up to {highest}",
            first_id + replicas - lowest,
            first_id + replicas - 1
        ));
    }
    Ok(first_id)
}

/// `evict=` on an `lm.load` or `lm.store` (`what`) whose value is not in a row layout: the
/// message.
pub(crate) fn evict_not_lowered(what: &str, evict: Evict) -> String {
    format!(
        "`evict=\"{}\"` on {what} is lowered for row-layout values (a `rows=` fragment's tile, its per-row and per-column vectors); this value is in an accumulator's layout",
        evict.as_str()
    )
}

/// `evict=` on `view.cp_async`: the message. ptxas 13.0 compiles the tinygemm's hinted copies
/// (`cp.async ... .L2::cache_hint`) into LDGSTS instructions whose uniform address and
/// descriptor registers no instruction writes, whether the policy comes from `createpolicy` or
/// is the descriptor's value as a constant (its SASS, and an illegal instruction on the GPU:
/// bench/results/2026-12-06-grid/, call 3); small kernels compile correctly, so a schedule cannot
/// tell beforehand, and the lowering does not emit the hint.
pub(crate) fn cp_async_evict_not_lowered(evict: Evict) -> String {
    format!(
        "`evict=\"{}\"` on cp_async is not lowered: ptxas 13.0 can compile the hinted per-thread copies into instructions that read descriptor registers nothing writes (an illegal instruction on the GPU; bench/results/2026-12-06-grid/); a TMA load takes `evict=` (tma_load), or leave the copy's lines to L2's default priority",
        evict.as_str()
    )
}

/// `defer=True` and `turns=True` on a family that does not lower them: the message.
pub(crate) fn mma_scheduling_not_lowered(option: &str) -> String {
    format!("`{option}=True` is lowered for wgmma (sm_90a) only")
}

/// Whether `role` issues an MMA with `turns=True`.
pub(crate) fn role_takes_turns(kf: &KernelFacts, role: RoleId) -> bool {
    role_ops(kf, role).any(|s| matches!(s.op, Op::Mma { turns: true, .. }))
}

/// The hardware barriers of a role whose replicas take turns at an MMA (`turns=True`): the
/// first id (replica r waits on `first + r`, and arrives on the next replica's), and the thread
/// count of each (a replica's threads wait, the previous replica's arrive). They follow the
/// named barriers in ids 1–7; one role per kernel takes turns.
pub(crate) fn turn_barriers(
    k: &Kernel,
    kf: &KernelFacts,
    role: RoleId,
) -> Result<(u32, u32), String> {
    let first_role = k
        .roles
        .iter()
        .map(|(r, _)| r)
        .find(|r| role_takes_turns(kf, *r));
    if first_role != Some(role) {
        return Err("MMAs with `turns=True` in two roles are not lowered yet: one role per kernel takes turns".into());
    }
    let replicas = k.roles[role].replicas();
    let first = NAMED_BARRIER_IDS.start() + k.named_barriers.len() as u32;
    if first + replicas - 1 > *NAMED_BARRIER_IDS.end() {
        return Err(format!(
            "the {} named barriers and the {replicas} turn barriers of role `{}` need ids up to {}; ids {NAMED_BARRIER_IDS:?} are theirs",
            k.named_barriers.len(),
            k.roles[role].name,
            first + replicas - 1
        ));
    }
    Ok((first, 2 * k.roles[role].unit.threads()))
}

/// `lm.sync(nb)` from a role (`issue_only`: one thread runs its body): the hardware id.
pub(crate) fn named_sync(nb: NamedBarrierId, issue_only: bool) -> Result<u32, String> {
    let id = NAMED_BARRIER_IDS.start() + nb.index() as u32;
    if !NAMED_BARRIER_IDS.contains(&id) {
        return Err(format!(
            "more than {} named barriers: hardware ids {NAMED_BARRIER_IDS:?} are theirs ({TMA_STORE_BARRIER_IDS:?} belong to TMA stores)",
            NAMED_BARRIER_IDS.end()
        ));
    }
    if issue_only {
        return Err("lm.sync in a role whose body one thread issues is not lowered yet: every warp of the role must reach bar.sync".into());
    }
    Ok(id)
}

/// Work every thread of a role replica shares (`what`: shared-memory fills, scatter-adds): the
/// replica's thread count.
pub(crate) fn replica_threads(
    k: &Kernel,
    role: RoleId,
    issue_only: bool,
    what: &str,
) -> Result<u32, String> {
    if issue_only {
        return Err(format!(
            "{what} needs every thread of role `{}`, whose body one thread issues",
            k.roles[role].name
        ));
    }
    Ok(k.roles[role].unit.threads())
}

/// `view.store(constant)`: the 32-bit pattern to fill with and the bytes to fill.
pub(crate) fn smem_fill(k: &Kernel, dst: &ViewRef, value: ExprId) -> Result<(u32, u64), String> {
    let view = &k.views[dst.view];
    if dst.transposed || (dst.rows.is_some() && view.swizzle != 0) {
        return Err(
            "view.store of a constant is lowered for a whole view, or rows of an unswizzled one"
                .into(),
        );
    }
    let bits = match (k.const_number(value), view.dtype) {
        (Some(v), DType::F32) => (v as f32).to_bits(),
        (Some(v), DType::I32) => v as i32 as u32,
        (Some(v), DType::BF16) => {
            let h = u32::from(cake_target::f32_to_bf16_bits(v as f32));
            h | (h << 16)
        }
        _ => {
            return Err(format!(
                "view.store of a constant is lowered into f32, i32 and bf16 views; `{}` is {}",
                view.name, view.dtype
            ))
        }
    };
    let rows = dst.rows.map_or(view.shape[0], |(_, n)| n);
    let bytes: u64 = rows as u64
        * view.shape[1..].iter().map(|&d| d as u64).product::<u64>()
        * view.dtype.bytes() as u64;
    if !bytes.is_multiple_of(16) {
        return Err(format!(
            "view.store of a constant fills whole 16-byte chunks; `{}` is {bytes} bytes",
            view.name
        ));
    }
    Ok((bits, bytes))
}

/// `dst.scatter_add(src, ...)`: views without `.T`, unswizzled.
pub(crate) fn scatter_add(k: &Kernel, dst: &ViewRef, src: &ViewRef) -> Result<(), String> {
    let (dview, sview) = (&k.views[dst.view], &k.views[src.view]);
    if dst.transposed || src.transposed {
        return Err("scatter_add is lowered for views without .T".into());
    }
    if dview.swizzle != 0 || sview.swizzle != 0 {
        return Err(format!(
            "scatter_add is lowered for unswizzled views; `{}` has swizzle {} and `{}` swizzle {}",
            dview.name, dview.swizzle, sview.name, sview.swizzle
        ));
    }
    Ok(())
}

/// How `lm.store` writes a value, from the tile layout it is computed over.
#[derive(Clone, Copy)]
pub(crate) enum StoreKind {
    /// One value per row of a 64-row tile.
    Rows,
    /// A one-row-per-thread TMEM tile of `n` columns.
    TmemRows(u32),
    /// An accumulator tile.
    Tile(FragLayout),
    /// A row-layout tile or per-row value (`rows=`).
    RowLayout(FragLayout),
}

pub(crate) fn store_kind(
    layout: Option<FragLayout>,
    transposed: bool,
) -> Result<StoreKind, String> {
    if transposed {
        return match layout {
            Some(l) if l.is_accumulator() && !matches!(l, FragLayout::TmemRow { .. }) => {
                Ok(StoreKind::Tile(l))
            }
            _ => Err("lm.store with `transpose=True` is lowered for values computed element-wise from an accumulator tile in registers (wgmma or mma.sync)".into()),
        };
    }
    match layout {
        Some(l @ (FragLayout::RowTile(_) | FragLayout::RowVals(_))) => Ok(StoreKind::RowLayout(l)),
        Some(FragLayout::AccRows) => Ok(StoreKind::Rows),
        Some(FragLayout::TmemRow { n }) => Ok(StoreKind::TmemRows(n)),
        Some(FragLayout::LaneScalar) => {
            Err("lm.store of per-row values of a TMEM tile is not lowered yet".into())
        }
        Some(l) if l.is_accumulator() => Ok(StoreKind::Tile(l)),
        _ => Err(
            "lm.store is lowered for values computed from an accumulator tile, a row-layout fragment (rows=) or their row reductions"
                .into(),
        ),
    }
}

/// `lm.store` of an accumulator tile: into the two innermost axes of a tensor, one coordinate
/// per axis (the leading ones pick the slice)...
pub(crate) fn store_tile_shape(dims: &[Extent], coords: &[ExprId]) -> Result<(), String> {
    if dims.len() < 2 || coords.len() != dims.len() {
        return Err("lm.store of an accumulator tile writes the two innermost axes of a tensor of rank 2 or more, with one coordinate per axis".into());
    }
    Ok(())
}

/// ... of f32 or i32 values, or of a cast to the tensor's 16-bit type (packed by the store):
/// the value to evaluate and the packed type.
pub(crate) fn store_tile_value(
    k: &Kernel,
    value: ExprId,
    dtype: DType,
) -> Result<(ExprId, Option<DType>), String> {
    match super::cast_to_16bit(k, value, dtype) {
        Some((inner, d)) => Ok((inner, Some(d))),
        None if dtype == DType::F32 || dtype == DType::I32 => Ok((value, None)),
        None => Err(format!("storing {dtype} values is lowered through lm.cast(..., lm.{dtype}) of an f32 accumulator")),
    }
}

/// `lm.store` of a one-row-per-thread TMEM tile: the two innermost axes of a tensor, written as
/// a 16-bit cast of an element-wise value of the tile (`row_elementwise` of the inner value).
pub(crate) fn store_tmem_rows(
    k: &Kernel,
    value: ExprId,
    dtype: DType,
    dims: &[Extent],
    coords: &[ExprId],
    row_elementwise: impl Fn(ExprId) -> bool,
) -> Result<(ExprId, DType), String> {
    if dims.len() < 2 || coords.len() != dims.len() {
        return Err("lm.store of a TMEM tile writes the two innermost axes of a tensor".into());
    }
    let Some((inner, d)) = super::cast_to_16bit(k, value, dtype) else {
        return Err("lm.store of a TMEM tile is lowered for lm.cast(value, lm.bf16 / lm.f16) into a tensor of that dtype".into());
    };
    if !row_elementwise(inner) {
        return Err("lm.store of a TMEM tile is lowered for element-wise values of the tile (no reductions, broadcasts or loads yet)".into());
    }
    Ok((inner, d))
}

/// `view.store(value)` of a wgmma accumulator tile (a cast of one to the view's 16-bit type)
/// into a 2-D view with 128B swizzle: the tile's columns, the value to evaluate and its type.
pub(crate) fn smem_store(
    k: &Kernel,
    dst: &ViewRef,
    value: ExprId,
    tile: Option<FragLayout>,
) -> Result<SmemStore, String> {
    let view = &k.views[dst.view];
    // One value per row of a 64-row tile (a row reduction's result, a running best): a 4-byte
    // word per row of a 1-D view, what `view.load` of that view reads back.
    if tile == Some(FragLayout::AccRows) {
        if view.shape.len() != 1
            || view.swizzle != 0
            || !matches!(view.dtype, DType::F32 | DType::I32)
        {
            return Err(
                "a per-row value is stored into a 1-D f32 or i32 view without swizzle".into(),
            );
        }
        return Ok(SmemStore::Rows);
    }
    let Some(FragLayout::WgmmaAcc { n }) = tile else {
        return Err("view.store is lowered for values computed from an accumulator tile, or for one value per row of one".into());
    };
    if view.shape.len() != 2 {
        return Err("view.store is lowered into 2-D views".into());
    }
    if dst.transposed {
        return smem_store_transposed(k, dst, value, n);
    }
    // An f32 tile kept in f32 (a partial sum another CTA adds up): row-major, unswizzled or in
    // 128B-swizzled panels.
    if view.dtype == DType::F32 && matches!(view.swizzle, 0 | 128) {
        if view.shape[1] != n {
            return Err(format!(
                "an f32 view.store writes a whole accumulator tile: the view has {} columns, the tile {n}",
                view.shape[1]
            ));
        }
        if view.swizzle == 128 && n % 32 != 0 {
            return Err(format!(
                "a 128B-swizzled f32 view is stored in panels of 32 columns: the tile has {n}"
            ));
        }
        return Ok(SmemStore::F32 { n });
    }
    let Some((inner, d)) = super::cast_to_16bit(k, value, view.dtype) else {
        return Err(
            "view.store is lowered for lm.cast(..., bf16 or f16) of an f32 accumulator into a 128B-swizzled view, or for an f32 value into an f32 view (unswizzled or 128B-swizzled)".into(),
        );
    };
    if view.swizzle != 128 {
        return Err("a 16-bit view.store is lowered into views with 128B swizzle".into());
    }
    Ok(SmemStore::Swizzled16 { n, inner, dtype: d })
}

/// `view.T.store(value)`: the 64 × n accumulator tile, cast to the view's 16-bit type, into a
/// view of n rows of 64 elements (one 128-byte swizzle row each), so that row r of the view holds
/// column r of the tile: a swapped-operand GEMM's result tile in the layout of C, for a TMA store.
fn smem_store_transposed(
    k: &Kernel,
    dst: &ViewRef,
    value: ExprId,
    n: u32,
) -> Result<SmemStore, String> {
    let view = &k.views[dst.view];
    let Some((inner, d)) = super::cast_to_16bit(k, value, view.dtype) else {
        return Err("a transposed view.store is lowered for lm.cast(..., bf16 or f16) of an f32 accumulator into a 16-bit view".into());
    };
    let rows = dst.rows.map_or(view.shape[0], |(_, r)| r);
    if view.swizzle != 128 || view.shape[1] != 64 {
        return Err(format!(
            "a transposed view.store writes the tile's 64 rows as the view's columns, one 128-byte swizzle row per tile column: the view must be ({n}, 64) with swizzle=128, not {:?} with swizzle={}",
            view.shape, view.swizzle
        ));
    }
    if rows != n {
        return Err(format!(
            "a transposed view.store writes the tile's {n} columns as {n} rows of the view; the view (or its .rows range) has {rows}"
        ));
    }
    Ok(SmemStore::Swizzled16T { n, inner, dtype: d })
}

/// How `view.store` of an accumulator tile is written.
pub(crate) enum SmemStore {
    /// A 16-bit cast of the tile (`inner` is what is cast), pairs packed into 4-byte stores at
    /// the 128B-swizzled address TMA reads.
    Swizzled16 { n: u32, inner: ExprId, dtype: DType },
    /// The same cast written transposed (`view.T.store`): `stmatrix .trans` puts 8 × 8 blocks
    /// of the tile into the view with the tile's columns as its rows, 128B-swizzled.
    Swizzled16T { n: u32, inner: ExprId, dtype: DType },
    /// The f32 tile itself, row-major, a pair per 8-byte store.
    F32 { n: u32 },
    /// One f32 or i32 per row of a 64-row tile, a 4-byte store per row by one thread of the
    /// quad that holds it.
    Rows,
}

/// `view.load(cta=...)` read element-wise in a wgmma accumulator layout: the view is the f32
/// tile that an f32 `view.store` writes (row-major, unswizzled or in 128B-swizzled panels).
pub(crate) fn view_load(k: &Kernel, v: &ViewRef) -> Result<(), String> {
    let view = &k.views[v.view];
    if view.shape.len() == 1 {
        if view.swizzle != 0 || !matches!(view.dtype, DType::F32 | DType::I32) {
            return Err(
                "view.load of a 1-D view is lowered for f32 and i32 views without swizzle (what view.store of a per-row value writes)".into(),
            );
        }
        return Ok(());
    }
    let swizzle_ok = match view.swizzle {
        0 => true,
        128 => view.shape.get(1).is_some_and(|c| c % 32 == 0),
        _ => false,
    };
    if view.shape.len() != 2 || v.transposed || view.dtype != DType::F32 || !swizzle_ok {
        return Err(
            "view.load is lowered for 2-D f32 views, unswizzled or 128B-swizzled with a multiple of 32 columns (what an f32 view.store of an accumulator writes), and for 1-D f32 and i32 views".into(),
        );
    }
    Ok(())
}

/// The byte offset, from the view's base, of element (`row`, `col`) of a 2-D f32 view of
/// `rows` × `cols`, as an f32 `view.store` lays it out and `view.load` reads it. Unswizzled:
/// row-major. 128B swizzle: panels of 32 columns (128 bytes a row), the 16-byte chunk index
/// within a row XORed with row % 8, as TMA would write it; the accumulator's pair stores, 4
/// lanes along a row and 8 rows down, then spread over every bank (2 wavefronts, not 8).
pub(crate) fn f32_view_offset(swizzle: u32, rows: u32, cols: u32, row: &str, col: &str) -> String {
    if swizzle == 128 {
        format!(
            "((({col}) / 32) * {} + ({row}) * 128 + (((({col}) % 32) / 4) ^ (({row}) % 8)) * 16 + (({col}) % 4) * 4)",
            rows * 128
        )
    } else {
        format!("((({row}) * {cols} + ({col})) * 4)")
    }
}

/// `frag[:] = value` into a wgmma A fragment of `kdim` columns: a 16-bit cast of a value over a
/// (64, kdim) accumulator tile. The value to evaluate and its type.
pub(crate) fn wgmma_a_value(
    k: &Kernel,
    dst: FragId,
    value: ExprId,
    kdim: u32,
    tile_of: impl Fn(ExprId) -> Option<FragLayout>,
) -> Result<(ExprId, DType), String> {
    let Some((inner, d)) = super::cast_to_16bit(k, value, k.fragments[dst].dtype) else {
        return Err("a wgmma A fragment is written as lm.cast(value, bf16 or f16) of an f32 accumulator-layout value".into());
    };
    if tile_of(inner) != Some(FragLayout::WgmmaAcc { n: kdim }) {
        return Err(format!(
            "a wgmma A fragment of {kdim} columns is computed from a (64, {kdim}) accumulator tile"
        ));
    }
    Ok((inner, d))
}

/// `frag[:] = value` writes the fragment in its register layout; an ldmatrix (mma.sync `a` or
/// `b`) layout is not written element by element.
pub(crate) fn assign_layout(
    k: &Kernel,
    dst: FragId,
    layout: Option<FragLayout>,
) -> Result<FragLayout, String> {
    match layout {
        Some(FragLayout::MmaA { .. } | FragLayout::MmaB { .. }) => Err(format!(
            "fragment `{}` holds an mma.sync operand as lm.ldmatrix loads it; it is not written element by element",
            k.fragments[dst].name
        )),
        None => Err(format!(
            "fragment `{}` has no register layout the lowering knows",
            k.fragments[dst].name
        )),
        Some(l) => Ok(l),
    }
}

/// `a[:], b[:] = x, y`: the fragments' common row layout. Only row-layout tiles, or per-row
/// values, of one shape and holder are assigned together: the statement is one loop nest, its
/// loads issued in one batch (and, for per-row values, the row reductions it reads computed in
/// one pass).
pub(crate) fn assign_many_layout(
    k: &Kernel,
    pairs: &[(FragId, ExprId)],
    layout: impl Fn(FragId) -> Option<FragLayout>,
) -> Result<FragLayout, String> {
    let mut common: Option<FragLayout> = None;
    for (dst, _) in pairs {
        let name = &k.fragments[*dst].name;
        let l = match layout(*dst) {
            Some(l @ (FragLayout::RowTile(_) | FragLayout::RowVals(_))) => l,
            _ => {
                return Err(format!(
                    "fragments are assigned together only as row-layout tiles or per-row values (`rows=`, docs/language.md §9.8a); `{name}` is neither: assign it in a statement of its own"
                ))
            }
        };
        match common {
            Some(first) if first != l => {
                return Err(format!(
                    "fragments assigned together must have one shape and row holder; `{name}` differs from `{}`",
                    k.fragments[pairs[0].0].name
                ))
            }
            _ => common = Some(l),
        }
    }
    common.ok_or_else(|| "no fragment is assigned".into())
}

/// `frag[:] = value` into a one-row-per-thread tile or per-row value.
pub(crate) fn lanes_value(row_elementwise: bool) -> Result<(), String> {
    if !row_elementwise {
        return Err("this value is not lowered for a TMEM tile yet".into());
    }
    Ok(())
}

/// A K-major operand tile read through a wgmma / tcgen05 shared-memory descriptor: a 2-D view
/// with 128B swizzle.
pub(crate) fn sw128_operand(view: &View) -> Result<(), String> {
    if view.shape.len() != 2 || view.swizzle != 128 {
        return Err(format!(
            "wgmma operands are lowered from 2-D views with 128B swizzle; `{}` has swizzle {}",
            view.name, view.swizzle
        ));
    }
    Ok(())
}

/// Per tensor parameter: (read, written) by the kernel.
pub(crate) fn tensor_access(
    k: &Kernel,
    kf: &KernelFacts,
) -> std::collections::HashMap<ParamId, (bool, bool)> {
    let mut access: std::collections::HashMap<ParamId, (bool, bool)> =
        std::collections::HashMap::new();
    for site in &kf.ops {
        for p in &site.effects.global_reads {
            access.entry(*p).or_default().0 = true;
        }
        for p in &site.effects.global_writes {
            access.entry(*p).or_default().1 = true;
        }
    }
    for (_, e) in k.exprs.iter() {
        if let ExprKind::Load { tensor, .. } = e.kind {
            access.entry(tensor).or_default().0 = true;
        }
    }
    access
}

/// CTAs a stream-K kernel splits its tiles' K steps over at most: its fix-up workspace (in the
/// launch's workspace, `emit/state.rs`) holds one partial per CTA and replica. A larger
/// grid's extra CTAs find no steps.
pub(crate) const STREAM_CTAS: u32 = 256;

/// `lm.stream_fixup(frag)` in `role`: the registers per thread of the partial it moves, or why
/// it is not lowered. Every thread of each replica publishes and adds its own registers, so the
/// layout only has to be the same in the run that publishes and the one that adds.
pub(crate) fn stream_fixup_registers(
    k: &Kernel,
    role: RoleId,
    issue_only: bool,
    frag: FragId,
    layout: Option<FragLayout>,
) -> Result<u32, String> {
    let f = &k.fragments[frag];
    if f.role != role {
        return Err(format!(
            "fragment `{}` belongs to role `{}`: `lm.stream_fixup` runs in its owner's region",
            f.name, k.roles[f.role].name
        ));
    }
    if issue_only {
        return Err("`lm.stream_fixup` needs every thread of the role: it moves each thread's registers, but this role only issues (one thread per replica runs it)".into());
    }
    if f.buffers != 1 {
        return Err(format!(
            "fragment `{}` is double-buffered; `lm.stream_fixup` takes a single accumulator",
            f.name
        ));
    }
    match declared_layout(k, frag, layout)? {
        l if l.is_mma_operand() => Err(format!(
            "fragment `{}` is an MMA's operand; `lm.stream_fixup` takes an accumulator",
            f.name
        )),
        l => Ok(l.registers()),
    }
}

#[cfg(test)]
mod tests {
    use super::f32_view_offset;

    /// Evaluates the integer C expression `f32_view_offset` writes (`+ * / % ^`, parentheses,
    /// the variables `row` and `col`), with C's precedence: `* / %`, then `+`, then `^`.
    fn eval(text: &str, row: i64, col: i64) -> i64 {
        fn xor(t: &[char], i: &mut usize, v: (i64, i64)) -> i64 {
            let mut x = sum(t, i, v);
            while t.get(*i) == Some(&'^') {
                *i += 1;
                x ^= sum(t, i, v);
            }
            x
        }
        fn sum(t: &[char], i: &mut usize, v: (i64, i64)) -> i64 {
            let mut x = product(t, i, v);
            while t.get(*i) == Some(&'+') {
                *i += 1;
                x += product(t, i, v);
            }
            x
        }
        fn product(t: &[char], i: &mut usize, v: (i64, i64)) -> i64 {
            let mut x = atom(t, i, v);
            while let Some(&op @ ('*' | '/' | '%')) = t.get(*i) {
                *i += 1;
                let y = atom(t, i, v);
                x = match op {
                    '*' => x * y,
                    '/' => x / y,
                    _ => x % y,
                };
            }
            x
        }
        fn atom(t: &[char], i: &mut usize, v: (i64, i64)) -> i64 {
            if t[*i] == '(' {
                *i += 1;
                let x = xor(t, i, v);
                assert_eq!(t[*i], ')');
                *i += 1;
                return x;
            }
            let start = *i;
            while *i < t.len() && t[*i].is_ascii_alphanumeric() {
                *i += 1;
            }
            match t[start..*i].iter().collect::<String>().as_str() {
                "row" => v.0,
                "col" => v.1,
                n => n.parse().expect("a number"),
            }
        }
        let t: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
        let mut i = 0;
        let x = xor(&t, &mut i, (row, col));
        assert_eq!(i, t.len(), "trailing text in {text}");
        x
    }

    #[test]
    fn every_f32_view_layout_places_each_element_once_and_keeps_pairs_together() {
        for swizzle in [0, 128] {
            let (rows, cols) = (128, 128);
            let text = f32_view_offset(swizzle, rows, cols, "row", "col");
            let mut seen = vec![false; (rows * cols) as usize];
            for row in 0..rows as i64 {
                for col in 0..cols as i64 {
                    let at = eval(&text, row, col);
                    assert!(at % 4 == 0 && at >= 0 && at < (rows * cols * 4) as i64);
                    assert!(!std::mem::replace(&mut seen[at as usize / 4], true));
                    // An accumulator's column pair is one 8-byte store.
                    if col % 2 == 1 {
                        assert_eq!(at, eval(&text, row, col - 1) + 4, "{text}");
                    }
                }
            }
        }
    }

    #[test]
    fn the_swizzled_layout_spreads_a_warps_pair_stores_over_every_bank() {
        // Lane l of a warp stores the pair at row l / 4, column 2 * (l % 4) (+ 8 i): 256 bytes,
        // which fill the 32 banks exactly twice when swizzled and 8 times one eighth of them not.
        for (swizzle, wavefronts) in [(128, 2), (0, 8)] {
            let text = f32_view_offset(swizzle, 128, 128, "row", "col");
            for i in 0..16 {
                let mut per_bank = [0; 32];
                for lane in 0..32 {
                    let at = eval(&text, lane / 4, 2 * (lane % 4) + 8 * i);
                    per_bank[(at / 4 % 32) as usize] += 1;
                    per_bank[(at / 4 % 32 + 1) as usize % 32] += 1;
                }
                assert_eq!(
                    per_bank.iter().max(),
                    Some(&wavefronts),
                    "swizzle {swizzle}, i {i}"
                );
            }
        }
    }
}
