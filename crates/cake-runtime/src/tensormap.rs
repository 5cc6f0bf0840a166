//! The `cuTensorMapEncodeTiled` arguments for a tensormap parameter, with every rule of the
//! driver's documentation checked first so a bad tensor fails with its name and the field.

use serde::Serialize;

use crate::bind::{row_major_strides, BoundTensor};
use crate::error::{launch, Result};
use crate::spec::{ArgSpec, Interleave, TmaSpec, MAX_TMA_RANK};

pub const MAX_GLOBAL_DIM: u64 = 1 << 32;
pub const MAX_GLOBAL_STRIDE: u64 = 1 << 40;

/// The arguments of one `cuTensorMapEncodeTiled` call, as the enum codes cuda.h defines.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct TensorMapFields {
    /// `CUtensorMapDataType`.
    pub data_type: u32,
    pub rank: u32,
    pub global_address: u64,
    /// The shape, innermost first.
    pub global_dim: Vec<u64>,
    /// Byte strides of the outer dimensions, innermost first (rank − 1 entries).
    pub global_strides: Vec<u64>,
    pub box_dim: Vec<u32>,
    pub element_strides: Vec<u32>,
    pub interleave: u32,
    pub swizzle: u32,
    pub l2_promotion: u32,
    pub oob_fill: u32,
}

/// TMA box rules that depend only on the box, element size, swizzle and interleave.
pub fn check_box(tma: &TmaSpec, elem_bytes: u32, place: &str) -> Result<()> {
    let b0 = tma.box_dims.first().copied().unwrap_or(0);
    let inner = u64::from(b0) * u64::from(elem_bytes);
    match tma.interleave {
        Interleave::None => {
            if !inner.is_multiple_of(16) {
                return Err(launch(format!(
                    "{place}: box[0]*elem_bytes must be a multiple of 16, got {b0}*{elem_bytes} = {inner}"
                )));
            }
            if tma.swizzle != 0 && inner > u64::from(tma.swizzle) {
                return Err(launch(format!(
                    "{place}: with swizzle {s} the inner box extent must be <= {s} bytes, got box[0]*elem_bytes = {b0}*{elem_bytes} = {inner}",
                    s = tma.swizzle
                )));
            }
        }
        Interleave::B32 if ![0, 32].contains(&tma.swizzle) => {
            return Err(launch(format!(
                "{place}: interleave 32B requires swizzle 0 or 32, got {}",
                tma.swizzle
            )));
        }
        _ => {}
    }
    Ok(())
}

/// The encode arguments for tensormap `arg` over the bound tensor `t`.
///
/// globalDim is the shape innermost first; globalStrides (bytes) are the strides of the outer
/// dimensions innermost first (the innermost stride is implicitly the element size). For a
/// row-major (M, K) tensor: globalDim = [K, M], globalStrides = [K * elem].
pub fn fields(arg: &ArgSpec, tma: &TmaSpec, t: &BoundTensor) -> Result<TensorMapFields> {
    let place = format!("{} for tensor `{}`", arg.label(), t.name);
    let rank = t.shape.len();
    if !(1..=MAX_TMA_RANK).contains(&rank) {
        return Err(launch(format!(
            "{place}: rank must be in [1, {MAX_TMA_RANK}], got {rank}"
        )));
    }
    if tma.box_dims.len() != rank {
        return Err(launch(format!(
            "{place}: box has {} entries, tensor rank is {rank}",
            tma.box_dims.len()
        )));
    }
    let elem = u64::from(t.dtype.bytes);
    let align: u64 = if tma.interleave == Interleave::B32 {
        32
    } else {
        16
    };
    if !t.data_ptr.is_multiple_of(align) {
        return Err(launch(format!(
            "{place}: globalAddress must be {align}-byte aligned, got {:#x}",
            t.data_ptr
        )));
    }
    let global_dim: Vec<u64> = t.shape.iter().rev().copied().collect();
    for (j, &g) in global_dim.iter().enumerate() {
        if !(1..=MAX_GLOBAL_DIM).contains(&g) {
            return Err(launch(format!(
                "{place}: globalDim[{j}] (tensor dim {}) must be in [1, 2^32], got {g}",
                rank - 1 - j
            )));
        }
    }
    // The tensor is contiguous (checked at bind), so use the canonical row-major strides: torch
    // may report any stride for a size-1 dimension, which TMA would then reject.
    let strides = row_major_strides(&t.shape);
    let mut global_strides = Vec::with_capacity(rank - 1);
    for j in 0..rank - 1 {
        let s = u128::from(strides[rank - 2 - j]) * u128::from(elem);
        if !s.is_multiple_of(u128::from(align)) {
            return Err(launch(format!(
                "{place}: globalStrides[{j}] (stride of tensor dim {}) must be a multiple of {align} bytes, got {s} (shape {:?}, {})",
                rank - 2 - j,
                t.shape,
                t.dtype.name
            )));
        }
        if s >= u128::from(MAX_GLOBAL_STRIDE) {
            return Err(launch(format!(
                "{place}: globalStrides[{j}] must be < 2^40, got {s}"
            )));
        }
        global_strides.push(s as u64);
    }
    check_box(tma, t.dtype.bytes, &place)?;
    Ok(TensorMapFields {
        data_type: t.dtype.tma,
        rank: rank as u32,
        global_address: t.data_ptr,
        global_dim,
        global_strides,
        box_dim: tma.box_dims.clone(),
        element_strides: vec![1; rank],
        interleave: tma.interleave.code(),
        swizzle: tma.swizzle_code(),
        l2_promotion: tma.l2_code(),
        oob_fill: u32::from(tma.oob_nan),
    })
}
