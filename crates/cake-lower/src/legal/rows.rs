//! Row-layout values (`rows=` fragments, docs/language.md §9.8a): the conditions the legality
//! pass and the emitter share — which loads a value reads and how, what a store of one writes,
//! and which reductions of one are lowered.

use super::layout::{FragLayout, RowGeom};
use cake_diag::Span;
use cake_ir::*;

/// How a `lm.load` inside a row-layout value is read: chunk by chunk like the tile, once per
/// thread column (a per-column vector broadcast along the rows: `w[None, :]`), or once per row
/// (a per-row vector broadcast along the columns: `s[:, None]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum RowLoad {
    Tile,
    Column,
    Row,
}

/// The loads value `e` reads when evaluated over a row-layout tile `g` (`tile`: element by
/// element; otherwise once per row), each once, with how it is read. Reductions are not entered:
/// their passes read their own argument. A load whose shape does not match where it is read is
/// an error at the load.
pub(crate) fn row_loads(
    k: &Kernel,
    e: ExprId,
    g: RowGeom,
    tile: bool,
) -> Result<Vec<(ExprId, RowLoad)>, (Span, String)> {
    let mut out = Vec::new();
    let start = if tile { RowLoad::Tile } else { RowLoad::Row };
    walk(k, e, g, start, &mut out)?;
    Ok(out)
}

fn walk(
    k: &Kernel,
    e: ExprId,
    g: RowGeom,
    how: RowLoad,
    out: &mut Vec<(ExprId, RowLoad)>,
) -> Result<(), (Span, String)> {
    match &k.exprs[e].kind {
        ExprKind::Reduce { .. } => Ok(()),
        // One element for every thread (`shape=()`): read where it is used, not batched.
        ExprKind::Load { shape, .. } if shape.is_empty() => Ok(()),
        ExprKind::Load {
            tensor,
            shape,
            coords,
            ..
        } => {
            let want: Vec<u32> = match how {
                RowLoad::Tile => vec![g.rows(), g.cols],
                RowLoad::Column => vec![g.cols],
                RowLoad::Row => vec![g.rows()],
            };
            let rank = super::rank(k, *tensor);
            let fits = *shape == want && coords.len() == rank && rank >= want.len();
            if !fits {
                let what = match how {
                    RowLoad::Tile => "the tile",
                    RowLoad::Column => "a per-column vector of the tile (w[None, :])",
                    RowLoad::Row => "a per-row vector of the tile (v[:, None])",
                };
                return Err((
                    k.exprs.span(e),
                    format!(
                        "this lm.load is read as {what}, which has shape {want:?}; it loads {shape:?} of `{}`",
                        k.params[*tensor].name
                    ),
                ));
            }
            let ParamKind::Tensor { dtype, .. } = k.params[*tensor].kind else {
                return Ok(());
            };
            if !matches!(dtype, DType::BF16 | DType::F16 | DType::F32 | DType::I32) {
                return Err((
                    k.exprs.span(e),
                    format!("loading {dtype} into a row-layout value is not lowered yet (bf16, f16, f32 and i32 are)"),
                ));
            }
            if !out.iter().any(|(x, _)| *x == e) {
                out.push((e, how));
            }
            Ok(())
        }
        ExprKind::ViewLoad { view, cta } => {
            row_view_read(k, view, *cta, g, how).map_err(|m| (k.exprs.span(e), m))?;
            if !out.iter().any(|(x, _)| *x == e) {
                out.push((e, how));
            }
            Ok(())
        }
        ExprKind::Expand { arg, axis } => {
            let inner = match (how, axis) {
                (RowLoad::Tile, 1) => RowLoad::Row,
                (RowLoad::Tile, 0) => RowLoad::Column,
                _ => {
                    return Err((
                        k.exprs.span(e),
                        "a broadcast inside a row-layout value adds the column axis to a per-row value (v[:, None]) or the row axis to a per-column vector (w[None, :]) of a 2-D tile".into(),
                    ))
                }
            };
            walk(k, *arg, g, inner, out)
        }
        kind => {
            let mut result = Ok(());
            kind.for_each_child(|c| {
                if result.is_ok() {
                    result = walk(k, c, g, how, out);
                }
            });
            result
        }
    }
}

/// Whether `view.load()` of `view` can be read in row layout `g` as `how`: this CTA's copy, a
/// 2-D view of the tile's rows and columns (or a 1-D view of its columns or rows, broadcast
/// along the other axis), unswizzled and row-major, of 16-bit floats or f32, a tile's rows
/// whole 16-byte chunks — what `cp_async` writes, read 16 bytes at a time (a per-row vector
/// one value at a time).
pub(crate) fn row_view_read(
    k: &Kernel,
    view: &ViewRef,
    cta: Option<ExprId>,
    g: RowGeom,
    how: RowLoad,
) -> Result<(), String> {
    let decl = &k.views[view.view];
    if cta.is_some() {
        return Err("a peer CTA's view is read in the wgmma accumulator's layout only (§9.4b), not in a row layout".into());
    }
    let shape: Vec<u32> = match (decl.shape.as_slice(), view.rows) {
        ([_, cols], Some((_, count))) => vec![count, *cols],
        ([_], Some((_, count))) => vec![count],
        (dims, _) => dims.to_vec(),
    };
    let want: Vec<u32> = match how {
        RowLoad::Tile => vec![g.rows(), g.cols],
        RowLoad::Column => vec![g.cols],
        RowLoad::Row => vec![g.rows()],
    };
    if shape != want || view.transposed {
        let what = match how {
            RowLoad::Tile => "the tile",
            RowLoad::Column => "a per-column vector of the tile (w[None, :])",
            RowLoad::Row => "a per-row vector of the tile (v[:, None])",
        };
        return Err(format!(
            "this view.load is read as {what}, which has shape {want:?}; `{}` reads {shape:?}{}",
            decl.name,
            if view.transposed { " transposed" } else { "" }
        ));
    }
    if !matches!(decl.dtype, DType::BF16 | DType::F16 | DType::F32) {
        return Err(format!(
            "reading a {} view into a row-layout value is not lowered yet (bf16, f16 and f32 are)",
            decl.dtype
        ));
    }
    if how == RowLoad::Row {
        // One value per row, read one at a time.
        return if decl.swizzle == 0 {
            Ok(())
        } else {
            Err(format!(
                "a per-row vector is read from an unswizzled view; `{}` has swizzle={}",
                decl.name, decl.swizzle
            ))
        };
    }
    let row_bytes = u64::from(g.cols) * decl.dtype.bytes() as u64;
    if decl.swizzle != 0
        || !g.cols.is_multiple_of(super::ROW_CHUNK)
        || !row_bytes.is_multiple_of(16)
    {
        return Err(format!(
            "a view is read in row layout when it is unswizzled with rows of whole 8-element chunks (what cp_async writes); `{}` has swizzle={} and {} columns",
            decl.name, decl.swizzle, g.cols
        ));
    }
    Ok(())
}

/// What `lm.store` of a row-layout value writes: the inner value to evaluate and the element
/// type it is converted to. A tile writes the two innermost axes of a tensor (leading
/// coordinates pick the slice), a per-row value the innermost axis. The value is `lm.cast(x, D)`
/// into a tensor of a 16-bit or FP8 float type D, or a value of the tensor's own dtype (f32, i32).
pub(crate) fn row_store(
    k: &Kernel,
    value: ExprId,
    layout: FragLayout,
    dtype: DType,
    dims: &[Extent],
    coords: &[ExprId],
) -> Result<ExprId, String> {
    let axes = match layout {
        FragLayout::RowTile(_) => 2,
        _ => 1,
    };
    if dims.len() < axes || coords.len() != dims.len() {
        return Err(format!(
            "lm.store of a row-layout {} writes the {} of a tensor with one coordinate per axis",
            if axes == 2 { "tile" } else { "per-row value" },
            if axes == 2 {
                "two innermost axes"
            } else {
                "innermost axis"
            }
        ));
    }
    let inner = match &k.exprs[value].kind {
        ExprKind::Cast(d, x)
            if *d == dtype
                && matches!(d, DType::BF16 | DType::F16 | DType::E4M3 | DType::E5M2) =>
        {
            *x
        }
        _ if matches!(dtype, DType::F32 | DType::I32) => value,
        _ => {
            return Err(format!(
                "storing {dtype} values from a row-layout value is lowered for lm.cast(value, lm.{dtype}) (bf16, f16, e4m3, e5m2) or an f32 / i32 value"
            ))
        }
    };
    if dtype == DType::I32 && axes == 2 {
        return Err("lm.store of an i32 row-layout tile is not lowered yet".into());
    }
    Ok(inner)
}

/// `lm.scatter_add` of a row-layout tile into rows of a tensor (its two innermost axes, one
/// coordinate per axis): the tile's geometry, which the per-row index is read in too.
pub(crate) fn global_scatter_add(
    layout: Option<FragLayout>,
    dims: &[Extent],
    coords: &[ExprId],
) -> Result<RowGeom, String> {
    match layout {
        Some(FragLayout::RowTile(g)) if dims.len() >= 2 && coords.len() == dims.len() => Ok(g),
        Some(FragLayout::RowTile(_)) => Err(
            "lm.scatter_add adds rows into the two innermost axes of a tensor, with one coordinate per axis".into(),
        ),
        _ => Err(
            "lm.scatter_add is lowered for row-layout tiles: a fragment declared with rows= (or a value computed from one)".into(),
        ),
    }
}

/// A row reduction of a row-layout tile: sum, max or min of float values, without the column.
pub(crate) fn row_reduction(
    k: &Kernel,
    arg: ExprId,
    op: ReduceOp,
    index: bool,
) -> Result<(), String> {
    if index || matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax) {
        return Err("lm.argmin / lm.argmax of a row-layout tile are not lowered yet".into());
    }
    match k.exprs[arg].ty {
        Ty::Frag { dtype, .. } if dtype.is_float() => Ok(()),
        _ => Err("row reductions of a row-layout tile are lowered for float values".into()),
    }
}

/// Whether `role` reduces rows held by a whole warpgroup: its replicas meet on a hardware barrier
/// of their own (`super::replica_barrier`) to combine the four warps' partial results.
pub(crate) fn role_reduces_across_warps(k: &Kernel, role: RoleId) -> bool {
    cake_ir::layout::warpgroup_rows(k, role).is_some()
}
