//! Row-layout values (`rows=` fragments): register math without an MMA. A replica's threads
//! form row groups; each thread holds 8-element chunks of its rows (`legal::RowGeom`). Loads
//! and stores move a chunk at a time (16 bytes of a 16-bit tensor) when it is in bounds and
//! aligned; row reductions combine a thread's chunks, then the group's lanes with butterfly
//! shuffles, then (rows held by a warpgroup) the four warps' partials through shared memory.

use super::*;
use crate::legal::{RowGeom, RowLoad, ROW_CHUNK};

/// A load read chunk by chunk inside the loop nest: the expression, how it is read, its
/// coordinates as C text and the register array that holds one chunk.
pub(crate) struct ChunkLoad {
    load: ExprId,
    how: RowLoad,
    coords: Vec<String>,
    array: String,
}

/// How a row-layout access handles an element type: the register type values are computed in,
/// and the name the prelude's helpers use for it (`cake_row_ld8_<name>`, `cake_row_st8_<name>`,
/// `cake_<name>_to_f32`, `cake_f32_to_<name>`).
fn row_elem(d: DType) -> (&'static str, &'static str) {
    match d {
        DType::BF16 => ("float", "bf16"),
        DType::F16 => ("float", "f16"),
        DType::E4M3 => ("float", "e4m3"),
        DType::E5M2 => ("float", "e5m2"),
        DType::I32 => ("int", "i32"),
        _ => ("float", "f32"),
    }
}

/// The conversion of one element between its storage type and the f32 it is computed in:
/// nothing for f32 and i32, which are stored as computed.
fn storage_conversion(d: DType, to_f32: bool) -> String {
    let (_, name) = row_elem(d);
    match (d, to_f32) {
        (DType::F32 | DType::TF32 | DType::I32, _) => String::new(),
        (_, true) => format!("cake_{name}_to_f32"),
        (_, false) => format!("cake_f32_to_{name}"),
    }
}

impl Emitter<'_> {
    /// The C text of a row-layout geometry's per-thread coordinates, in the current role.
    pub(crate) fn row_text(&self, g: RowGeom) -> (String, String) {
        let (role, _) = self.role.expect("role");
        let t = format!("{}_thread", c_ident(&self.k.roles[role].name));
        // Row of the thread's r-th row, local column of chunk c.
        let row = if g.t == g.replica {
            "r".to_string()
        } else {
            format!("({t} / {} + {} * r)", g.t, g.groups())
        };
        let col = if g.t == 1 {
            format!("{ROW_CHUNK} * c")
        } else {
            format!("{ROW_CHUNK} * ({t} % {} + {} * c)", g.t, g.t)
        };
        (row, col)
    }

    /// The loads of `value` (evaluated over tile `g`, element-wise when `tile`), planned: the
    /// per-row ones are read here into registers; the per-column and tile ones are returned, to
    /// be read chunk by chunk inside the loops (`chunk_loads`), so only one chunk of each is
    /// live at a time. None when the value reads a load it cannot (reported).
    fn row_value_loads(&mut self, value: ExprId, g: RowGeom, tile: bool) -> Option<Vec<ChunkLoad>> {
        let k = self.k;
        let loads = match legal::row_loads(k, value, g, tile) {
            Ok(l) => l,
            Err((sp, m)) => {
                self.unsupported(sp, m);
                return None;
            }
        };
        self.needs_row_ops = true;
        let (row, _) = self.row_text(g);
        let mut chunked = Vec::new();
        for (l, how) in loads {
            let ExprKind::Load {
                tensor,
                coords,
                fill,
                ..
            } = k.exprs[l].kind.clone()
            else {
                continue;
            };
            let ParamKind::Tensor { dtype, dims } = k.params[tensor].kind.clone() else {
                continue;
            };
            let texts: Vec<String> = coords.iter().map(|c| self.ix(*c)).collect();
            let id = self.reduction_counter;
            self.reduction_counter += 1;
            let array = format!("ld{id}");
            if how != RowLoad::Row {
                self.row_loads.insert(l, format!("{array}[v]"));
                chunked.push(ChunkLoad {
                    load: l,
                    how,
                    coords: texts,
                    array,
                });
                continue;
            }
            let (vty, _) = row_elem(dtype);
            let conv = storage_conversion(dtype, true);
            let fill = Self::load_fill(dtype, fill);
            let ca = dims.len() - 1;
            let cext = self.extent_text(&dims[ca]);
            let c0 = texts[ca].clone();
            let offset = self.texts_offset(&dims, &texts, ca, "row");
            let tname = c_ident(&k.params[tensor].name);
            self.line(&format!(
                "{vty} {array}[{}];  // lm.load({}): one value per row ({})",
                g.rpt,
                k.params[tensor].name,
                self.loc(k.exprs.span(l))
            ));
            self.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                e.line(&format!("const int row = {c0} + {row};"));
                e.line(&format!(
                    "{array}[r] = row < {cext} ? {conv}(__ldg({tname} + {offset})) : {fill};"
                ));
            });
            self.row_loads.insert(l, format!("{array}[r]"));
        }
        Some(chunked)
    }

    fn load_fill(dtype: DType, fill: f64) -> String {
        if dtype == DType::I32 {
            format!("{}", fill as i64)
        } else {
            Self::float_lit(fill)
        }
    }

    /// Read chunk (r, c) of the loads `how` (per-column loads in the chunk loop, tile loads in
    /// the row loop inside it) into eight registers each; `row`, `col` and `lc` are in scope.
    fn chunk_loads(&mut self, loads: &[ChunkLoad], g: RowGeom, how: RowLoad) {
        let k = self.k;
        for ChunkLoad {
            load: l,
            how: kind,
            coords: texts,
            array,
        } in loads
        {
            if *kind != how {
                continue;
            }
            let ExprKind::Load { tensor, fill, .. } = k.exprs[*l].kind.clone() else {
                continue;
            };
            let ParamKind::Tensor { dtype, dims } = k.params[tensor].kind.clone() else {
                continue;
            };
            let (vty, suffix) = row_elem(dtype);
            let tname = c_ident(&k.params[tensor].name);
            let rank = dims.len();
            let ca = rank - 1;
            let cext = self.extent_text(&dims[ca]);
            let c0 = &texts[ca];
            let fill = Self::load_fill(dtype, fill);
            let (offset, row_ok, col) = if how == RowLoad::Tile {
                let ra = rank - 2;
                let rext = self.extent_text(&dims[ra]);
                let r0 = &texts[ra];
                let at = self.tile_offset(
                    &dims,
                    texts,
                    ra,
                    &format!("{r0} + row"),
                    &format!("{c0} + lc"),
                );
                (at, format!("{r0} + row < {rext}"), format!("{c0} + lc"))
            } else {
                let at = self.texts_offset(&dims, texts, ca, &format!("{c0} + lc"));
                (at, "true".to_string(), format!("{c0} + lc"))
            };
            self.line(&format!(
                "{vty} {array}[{ROW_CHUNK}];  // lm.load({}) ({})",
                k.params[tensor].name,
                self.loc(k.exprs.span(*l))
            ));
            self.line(&format!(
                "cake_row_ld8_{suffix}({array}, {tname} + {offset}, {row_ok}, min({cext} - ({col}), {} - lc), {fill});",
                g.cols
            ));
        }
    }

    /// The loop nest over a thread's chunks of a row-layout tile: chunk c (outer, its
    /// per-column loads read once for all rows), row r (its tile loads), then `body` with `row`
    /// (the tile row), `lc` (the tile column of the chunk's first element) in scope.
    fn row_chunks(&mut self, g: RowGeom, loads: &[ChunkLoad], body: impl FnOnce(&mut Self)) {
        let (row, col) = self.row_text(g);
        self.unrolled(&format!("for (int c = 0; c < {}; ++c) {{", g.cpt()), |e| {
            e.line(&format!("const int lc = {col};"));
            e.chunk_loads(loads, g, RowLoad::Column);
            e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                e.line(&format!("const int row = {row};"));
                e.chunk_loads(loads, g, RowLoad::Tile);
                body(e);
            });
        });
    }

    /// Row-major offset of element (`row`, `col`) of the two innermost axes at `ra`, `ra + 1`,
    /// the other axes at the coordinates `texts`.
    fn tile_offset(
        &self,
        dims: &[Extent],
        texts: &[String],
        ra: usize,
        row: &str,
        col: &str,
    ) -> String {
        let mut at: Vec<String> = texts.to_vec();
        at[ra] = row.to_string();
        at[ra + 1] = col.to_string();
        self.offset_of(dims, &at)
    }

    /// Row-major offset at the coordinates `texts`, axis `axis` replaced by `at`.
    fn texts_offset(&self, dims: &[Extent], texts: &[String], axis: usize, at: &str) -> String {
        let mut all: Vec<String> = texts.to_vec();
        all[axis] = at.to_string();
        self.offset_of(dims, &all)
    }

    /// `frag[:] = value` into a row-layout tile or per-row fragment.
    pub(crate) fn assign_rows(&mut self, dst: FragId, value: ExprId, layout: FragLayout, sp: Span) {
        let name = self.frag_name(dst);
        let header = format!(
            "{{  // {} <- ... ({})",
            self.k.fragments[dst].name,
            self.loc(sp)
        );
        self.braced(&header, |e| match layout {
            FragLayout::RowTile(g) => {
                let Some(loads) = e.row_value_loads(value, g, true) else {
                    return;
                };
                let v = e.elem(value, Site::Row(g));
                let cpt = g.cpt();
                e.row_chunks(g, &loads, |e| {
                    e.line("#pragma unroll");
                    e.line(&format!(
                        "for (int v = 0; v < {ROW_CHUNK}; ++v) {name}[(r * {cpt} + c) * {ROW_CHUNK} + v] = {v};"
                    ));
                });
            }
            FragLayout::RowVals(g) => {
                if e.row_value_loads(value, g, false).is_none() {
                    return;
                }
                let v = e.elem(value, Site::RowVal(g));
                e.line("#pragma unroll");
                e.line(&format!("for (int r = 0; r < {}; ++r) {name}[r] = {v};", g.rpt));
            }
            _ => {}
        });
        self.row_loads.clear();
    }

    /// `lm.store` of a row-layout tile (its two innermost axes, a chunk at a time) or of
    /// per-row values (the innermost axis, written by the first thread of each row group).
    pub(crate) fn store_rows(
        &mut self,
        dst: ParamId,
        value: ExprId,
        coords: &[ExprId],
        layout: FragLayout,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        let inner = match legal::row_store(k, value, layout, dtype, &dims, coords) {
            Ok(i) => i,
            Err(m) => return self.unsupported(sp, m),
        };
        let tname = c_ident(&k.params[dst].name);
        let rank = dims.len();
        let ca = rank - 1;
        let cext = self.extent_text(&dims[ca]);
        let texts: Vec<String> = coords.iter().map(|c| self.ix(*c)).collect();
        self.needs_row_ops = true;
        if matches!(dtype, DType::E4M3 | DType::E5M2) {
            self.needs_row_fp8 = true;
        }
        let header = format!(
            "{{  // store {} <- row-layout value ({})",
            k.params[dst].name,
            self.loc(sp)
        );
        self.braced(&header, |e| match layout {
            FragLayout::RowTile(g) => {
                let Some(loads) = e.row_value_loads(inner, g, true) else {
                    return;
                };
                let v = e.elem(inner, Site::Row(g));
                let ra = rank - 2;
                let rext = e.extent_text(&dims[ra]);
                let (r0, c0) = (texts[ra].clone(), texts[ca].clone());
                let offset = e.tile_offset(&dims, &texts, ra, &format!("{r0} + row"), &format!("{c0} + lc"));
                let (_, suffix) = row_elem(dtype);
                e.row_chunks(g, &loads, |e| {
                    e.line(&format!("float out[{ROW_CHUNK}];"));
                    e.line("#pragma unroll");
                    e.line(&format!("for (int v = 0; v < {ROW_CHUNK}; ++v) out[v] = {v};"));
                    e.line(&format!(
                        "cake_row_st8_{suffix}({tname} + {offset}, out, {r0} + row < {rext}, min({cext} - ({c0} + lc), {} - lc));",
                        g.cols
                    ));
                });
            }
            FragLayout::RowVals(g) => {
                if e.row_value_loads(inner, g, false).is_none() {
                    return;
                }
                let v = e.elem(inner, Site::RowVal(g));
                let (row, _) = e.row_text(g);
                let (role, _) = e.role.expect("role");
                let t = format!("{}_thread", c_ident(&k.roles[role].name));
                let c0 = texts[ca].clone();
                let offset = e.texts_offset(&dims, &texts, ca, &format!("{c0} + row"));
                let conv = storage_conversion(dtype, false);
                let ty = storage_type(dtype);
                e.braced(&format!("if ({t} % {} == 0) {{", g.t), |e| {
                    e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                        e.line(&format!("const int row = {row};"));
                        e.line(&format!(
                            "if ({c0} + row < {cext}) {tname}[{offset}] = ({ty}){conv}({v});"
                        ));
                    });
                });
            }
            _ => {}
        });
        self.row_loads.clear();
    }

    /// A row reduction (sum, max or min) of a row-layout tile into `red<N>_v[rpt]`, every
    /// thread of a row group ending with the row's value.
    pub(crate) fn row_reduction(
        &mut self,
        e: ExprId,
        pass: &super::reduce::Pass,
        op: ReduceOp,
        arg: ExprId,
        g: RowGeom,
    ) {
        let k = self.k;
        let vname = pass.vname.clone();
        let init = pass.init;
        let combine = match op {
            ReduceOp::Sum => "cake_sum",
            ReduceOp::Max | ReduceOp::ArgMax => "fmaxf",
            ReduceOp::Min | ReduceOp::ArgMin => "fminf",
        };
        self.line(&format!(
            "float {vname}[{}];  // row {} over {} columns, rows held by {} thread(s) ({})",
            g.rpt,
            pass.combine,
            g.cols,
            g.t,
            self.loc(k.exprs.span(e))
        ));
        self.braced("{", |em| {
            let Some(loads) = em.row_value_loads(arg, g, true) else {
                return;
            };
            let value = em.elem(arg, Site::Row(g));
            em.line(&format!("float acc[{}];", g.rpt));
            em.line("#pragma unroll");
            em.line(&format!("for (int r = 0; r < {}; ++r) acc[r] = {init};", g.rpt));
            // Elements past the tile's columns do not exist.
            let guard = if g.ragged() {
                format!("if (lc + v < {}) ", g.cols)
            } else {
                String::new()
            };
            em.row_chunks(g, &loads, |em| {
                em.line("#pragma unroll");
                em.line(&format!(
                    "for (int v = 0; v < {ROW_CHUNK}; ++v) {{ {guard}acc[r] = {combine}(acc[r], {value}); }}"
                ));
            });
            em.line("#pragma unroll");
            em.line(&format!("for (int r = 0; r < {}; ++r) {vname}[r] = acc[r];", g.rpt));
        });
        self.row_loads.clear();
        // Across the lanes of a row group (consecutive lanes of one warp).
        let lanes = g.t.min(32);
        if lanes > 1 {
            self.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |em| {
                let mut off = lanes / 2;
                while off >= 1 {
                    em.line(&format!(
                        "{vname}[r] = {combine}({vname}[r], __shfl_xor_sync(0xffffffffu, {vname}[r], {off}));"
                    ));
                    off /= 2;
                }
            });
        }
        if g.t > 32 {
            // Across the warps of the warpgroup: each warp's partial through shared memory,
            // combined in warp order by every thread (so all agree bit for bit). The first
            // barrier keeps the previous use's readers ahead of these writes.
            let (role, issue_only) = self.role.expect("role");
            let rname = c_ident(&k.roles[role].name);
            let warps = g.t / 32;
            let sp = k.exprs.span(e);
            let what = "a row reduction across the warps of a warpgroup";
            if let Err(m) = legal::replica_threads(k, role, issue_only, what) {
                self.unsupported(sp, m);
            }
            let Some(scratch) = self.layout.row_scratch(role) else {
                return self.unsupported(sp, "no row-reduction scratch was placed for this role");
            };
            self.needs_shared_ops = true;
            // Partial (replica, warp, r) at a float of its own in the role's scratch.
            let slot = |w: &str| {
                format!(
                    "cake_smem + {scratch}u + 4u * (({rname}_index * {warps} + {w}) * {} + r)",
                    g.rpt
                )
            };
            self.replica_sync(sp);
            self.line(&format!(
                "if ({rname}_thread % 32 == 0) for (int r = 0; r < {}; ++r) cake_st_shared_f32({}, {vname}[r]);",
                g.rpt,
                slot(&format!("{rname}_thread / 32"))
            ));
            self.replica_sync(sp);
            self.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |em| {
                em.line(&format!("float acc = cake_ld_shared_f32({});", slot("0")));
                em.line(&format!(
                    "for (int w = 1; w < {warps}; ++w) acc = {combine}(acc, cake_ld_shared_f32({}));",
                    slot("w")
                ));
                em.line(&format!("{vname}[r] = acc;"));
            });
        }
    }
}
