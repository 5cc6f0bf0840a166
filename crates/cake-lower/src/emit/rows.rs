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

/// A chunked load's access, as `Emitter::chunk_access` derives it.
struct ChunkAccess {
    ptr: String,
    name: String,
    span: Span,
    dtype: DType,
    row_ok: String,
    n: String,
    fill: String,
    /// The batched path's condition: the tile's columns inside the tensor and each of the
    /// thread's rows starting aligned (rows past the tensor are predicated, not excluded);
    /// None when the element type has no batched read.
    batched: Option<String>,
    /// The helpers' name suffix of the load's L2 eviction priority (`_evict_first`), or empty.
    hint: String,
    /// A view of this CTA's shared memory (`view.load()`), not a tensor: `ptr` is its 32-bit
    /// shared address, and its chunks are always whole.
    shared: bool,
}

/// The batched path's raw chunk of an element type: its register type and the prelude's read.
/// FP8 loads are not lowered at all.
fn raw_read(d: DType) -> Option<(&'static str, &'static str)> {
    match d {
        DType::BF16 | DType::F16 => Some(("uint4", "cake_row_raw_b16")),
        DType::F32 | DType::I32 => Some(("cake_raw_b32", "cake_row_raw_b32")),
        _ => None,
    }
}

impl ChunkAccess {
    /// How the schedule reads it, for the generated code's comments.
    fn source(&self) -> String {
        if self.shared {
            format!("{}.load()", self.name)
        } else {
            format!("lm.load({})", self.name)
        }
    }
}

/// The raw chunk read of a shared-memory view's element type (`ld.shared.v4`, two for f32).
fn raw_read_shared(d: DType) -> &'static str {
    match d {
        DType::F32 | DType::I32 => "cake_row_lds_b32",
        _ => "cake_row_lds_b16",
    }
}

/// The batched path's unchecked store of an element type and the alignment a chunk needs.
fn raw_store(d: DType) -> Option<&'static str> {
    match d {
        DType::BF16 | DType::F16 | DType::F32 => Some("cake_aligned16"),
        DType::E4M3 | DType::E5M2 => Some("cake_aligned8"),
        _ => None,
    }
}

impl Emitter<'_> {
    /// The C text of a row-layout geometry's per-thread coordinates, in the current role: the
    /// tile row of the thread's r-th row, and the tile column of chunk c's first element.
    pub(crate) fn row_text(&self, g: RowGeom) -> (String, String) {
        (self.row_at(g, "r"), self.col_at(g, "c"))
    }

    /// The tile row of the thread's row `r` (C text).
    fn row_at(&self, g: RowGeom, r: &str) -> String {
        let t = self.role_thread();
        if g.t == g.replica {
            r.to_string()
        } else {
            format!("({t} / {} + {} * {r})", g.t, g.groups())
        }
    }

    /// The tile column of the first element of the thread's chunk `c` (C text).
    fn col_at(&self, g: RowGeom, c: &str) -> String {
        let t = self.role_thread();
        if g.t == 1 {
            format!("{ROW_CHUNK} * {c}")
        } else {
            format!("{ROW_CHUNK} * ({t} % {} + {} * {c})", g.t, g.t)
        }
    }

    /// A row access with L2 eviction priority `evict`: its helpers join the prelude, and the
    /// name is `base` with the priority's suffix (`cake_ldg_evict_first`).
    fn row_hint(&mut self, evict: Evict, base: &str) -> String {
        self.row_hints.insert(evict);
        format!("{base}_evict_{}", evict.as_str())
    }

    fn role_thread(&self) -> String {
        let (role, _) = self.role.expect("role");
        format!("{}_thread", c_ident(&self.k.roles[role].name))
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
            // Read already for another value of the statement (`a[:], b[:] = x, y`).
            if self.row_loads.contains_key(&l) {
                continue;
            }
            // A shared view (`legal::row_view_read`): chunk by chunk, as the tile or per column;
            // one value per row, each thread its rows'.
            if let ExprKind::ViewLoad { view, .. } = &k.exprs[l].kind {
                let array = format!("ld{}", self.reduction_counter);
                self.reduction_counter += 1;
                if how == RowLoad::Row {
                    self.view_row_values(l, view, g, &array);
                    self.row_loads.insert(l, format!("{array}[r]"));
                    continue;
                }
                self.row_loads.insert(l, format!("{array}[v]"));
                chunked.push(ChunkLoad {
                    load: l,
                    how,
                    coords: Vec::new(),
                    array,
                });
                continue;
            }
            let ExprKind::Load {
                tensor,
                coords,
                fill,
                evict,
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
            let read = match evict {
                Some(ev) => self.row_hint(ev, "cake_ldg"),
                None => "__ldg".to_string(),
            };
            self.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                e.line(&format!("const int row = {c0} + {row};"));
                e.line(&format!(
                    "{array}[r] = row < {cext} ? {conv}({read}({tname} + {offset})) : {fill};"
                ));
            });
            self.row_loads.insert(l, format!("{array}[r]"));
        }
        Some(chunked)
    }

    /// Where a row-layout read of `view` starts: the shared address of its stage, and the
    /// `start + ` that `.rows(start, n)` adds to the row (2-D) or element (1-D) index, or nothing.
    fn view_origin(&mut self, view: &ViewRef) -> (String, String) {
        let base = self.view_base_text(&ViewRef {
            rows: None,
            ..view.clone()
        });
        let first = match view.rows {
            Some((start, _)) => format!("({}) + ", self.ix(start)),
            None => String::new(),
        };
        (base, first)
    }

    /// A 1-D view of one value per row of the tile, read into `array[r]` for the thread's rows
    /// (`ld.shared`, converted to f32).
    fn view_row_values(&mut self, l: ExprId, view: &ViewRef, g: RowGeom, array: &str) {
        let k = self.k;
        let decl = &k.views[view.view];
        self.needs_shared_ops = true;
        let (base, first) = self.view_origin(view);
        let (row, _) = self.row_text(g);
        let (esize, read) = match decl.dtype {
            DType::BF16 => (2, "cake_ld_shared_bf16"),
            DType::F16 => (2, "cake_ld_shared_f16"),
            _ => (4, "cake_ld_shared_f32"),
        };
        self.line(&format!(
            "float {array}[{}];  // {}.load(): one value per row ({})",
            g.rpt,
            decl.name,
            self.loc(k.exprs.span(l))
        ));
        self.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
            e.line(&format!("const int row = {row};"));
            e.line(&format!(
                "{array}[r] = {read}({base} + ({first}row) * {esize}u);"
            ));
        });
    }

    fn load_fill(dtype: DType, fill: f64) -> String {
        if dtype == DType::I32 {
            format!("{}", fill as i64)
        } else {
            Self::float_lit(fill)
        }
    }

    /// The batched path's condition for a tile access at `texts` of tensor `tname`: the tile's
    /// columns inside the tensor and each of the thread's rows starting `aligned` (the
    /// prelude's check; a chunk's offset in its row is a multiple of 8 elements, so the row
    /// start decides). Rows past the tensor are predicated on each access, not excluded here.
    fn tile_batched_cond(
        &self,
        g: RowGeom,
        dims: &[Extent],
        texts: &[String],
        tname: &str,
        aligned: &str,
    ) -> String {
        let (ra, ca) = (dims.len() - 2, dims.len() - 1);
        let (r0, c0) = (&texts[ra], &texts[ca]);
        let in_cols = format!("{c0} + {} <= {}", g.cols, self.extent_text(&dims[ca]));
        let starts = (0..g.rpt).map(|r| {
            let row = format!("{r0} + {}", self.row_at(g, &r.to_string()));
            format!(
                "{aligned}({tname} + {})",
                self.tile_offset(dims, texts, ra, &row, c0)
            )
        });
        std::iter::once(in_cols)
            .chain(starts)
            .collect::<Vec<_>>()
            .join(" && ")
    }

    /// Where chunk (r, c) of a chunked load lies: its tensor's C name and element type, the
    /// offset of its first element (with `row` and `lc` in scope), whether its row exists, how
    /// many of its elements exist, and the batched path's condition.
    fn chunk_access(&mut self, load: &ChunkLoad, g: RowGeom) -> Option<ChunkAccess> {
        let k = self.k;
        if let ExprKind::ViewLoad { view, .. } = &k.exprs[load.load].kind {
            return Some(self.view_chunk_access(load, view, g));
        }
        let ExprKind::Load {
            tensor,
            fill,
            evict,
            ..
        } = k.exprs[load.load].kind.clone()
        else {
            return None;
        };
        let hint = evict.map_or(String::new(), |ev| self.row_hint(ev, ""));
        let ParamKind::Tensor { dtype, dims } = k.params[tensor].kind.clone() else {
            return None;
        };
        let texts = &load.coords;
        let rank = dims.len();
        let ca = rank - 1;
        let cext = self.extent_text(&dims[ca]);
        let c0 = texts[ca].clone();
        let tname = c_ident(&k.params[tensor].name);
        let in_cols = format!("{c0} + {} <= {cext}", g.cols);
        let (offset, row_ok, batched) = if load.how == RowLoad::Tile {
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
            let cond = self.tile_batched_cond(g, &dims, texts, &tname, "cake_aligned16");
            (at, format!("{r0} + row < {rext}"), cond)
        } else {
            let at = self.texts_offset(&dims, texts, ca, &format!("{c0} + lc"));
            let start = self.texts_offset(&dims, texts, ca, &c0);
            (
                at,
                "true".to_string(),
                format!("{in_cols} && cake_aligned16({tname} + {start})"),
            )
        };
        Some(ChunkAccess {
            ptr: format!("{tname} + {offset}"),
            name: k.params[tensor].name.clone(),
            span: k.exprs.span(load.load),
            dtype,
            row_ok,
            n: format!("min({cext} - ({c0} + lc), {} - lc)", g.cols),
            fill: Self::load_fill(dtype, fill),
            batched: raw_read(dtype).map(|_| batched),
            hint,
            shared: false,
        })
    }

    /// `chunk_access` of a row-major view in this CTA's shared memory: chunk (r, c) at row
    /// `row0 + row`, column `lc` of the view's stage; always whole (`legal::row_view_read`).
    fn view_chunk_access(&mut self, load: &ChunkLoad, view: &ViewRef, g: RowGeom) -> ChunkAccess {
        let k = self.k;
        self.needs_row_shared = true;
        let decl = &k.views[view.view];
        let esize = decl.dtype.bytes();
        let (base, first) = self.view_origin(view);
        let at = if load.how == RowLoad::Tile {
            let pitch = decl.shape.last().copied().unwrap_or(1) * esize;
            format!("{base} + ({first}row) * {pitch}u + lc * {esize}u")
        } else {
            format!("{base} + ({first}lc) * {esize}u")
        };
        ChunkAccess {
            ptr: at,
            name: decl.name.clone(),
            span: k.exprs.span(load.load),
            dtype: decl.dtype,
            row_ok: "true".into(),
            n: format!("{} - lc", g.cols),
            fill: Self::load_fill(decl.dtype, 0.0),
            batched: Some("true".into()),
            hint: String::new(),
            shared: true,
        }
    }

    /// Read chunk (r, c) of the loads `how` (per-column loads in the chunk loop, tile loads in
    /// the row loop inside it) into eight registers each, element by element where the chunk
    /// is not whole, in bounds and aligned; `row`, `col` and `lc` are in scope.
    fn chunk_loads(&mut self, loads: &[ChunkLoad], g: RowGeom, how: RowLoad) {
        for load in loads.iter().filter(|l| l.how == how) {
            let Some(a) = self.chunk_access(load, g) else {
                continue;
            };
            let (vty, suffix) = row_elem(a.dtype);
            self.line(&format!(
                "{vty} {}[{ROW_CHUNK}];  // {} ({})",
                load.array,
                a.source(),
                self.loc(a.span)
            ));
            if a.shared {
                self.line(&format!(
                    "cake_row_lds8_{suffix}({}, {}, {}, {});",
                    load.array, a.ptr, a.n, a.fill
                ));
            } else {
                self.line(&format!(
                    "cake_row_ld8_{suffix}{}({}, {}, {}, {}, {});",
                    a.hint, load.array, a.ptr, a.row_ok, a.n, a.fill
                ));
            }
        }
    }

    /// The loop nest over a thread's chunks of a row-layout tile: chunk c (outer, its
    /// per-column loads read once for all rows), row r (its tile loads), then `body` with `row`
    /// (the tile row), `lc` (the tile column of the chunk's first element) in scope.
    ///
    /// Where every chunk of the statement can be whole, in bounds and aligned (`store`: the
    /// condition for the stored tensor, when the statement stores), the nest is emitted twice:
    /// under that run-time condition, all loads of all chunks are issued first with no branch
    /// between them and unpacked after (`body(true)`: the batched path, whose stores need no
    /// checks); otherwise chunk by chunk with every check (`body(false)`). Without batching,
    /// each chunk's load would be consumed before the next is issued, and a row would cost one
    /// memory latency per chunk.
    fn row_chunks(
        &mut self,
        g: RowGeom,
        loads: &[ChunkLoad],
        store: Option<Option<String>>,
        body: impl Fn(&mut Self, bool),
    ) {
        let accesses: Vec<Option<ChunkAccess>> =
            loads.iter().map(|l| self.chunk_access(l, g)).collect();
        let mut conds: Vec<Option<String>> = accesses
            .iter()
            .map(|a| a.as_ref().and_then(|a| a.batched.clone()))
            .collect();
        if let Some(s) = store.clone() {
            conds.push(s);
        }
        let batched = !conds.is_empty()
            && g.cols.is_multiple_of(ROW_CHUNK)
            && conds.iter().all(Option::is_some);
        let (row, col) = self.row_text(g);
        let checked = |e: &mut Self| {
            e.unrolled(&format!("for (int c = 0; c < {}; ++c) {{", g.cpt()), |e| {
                e.line(&format!("const int lc = {col};"));
                e.chunk_loads(loads, g, RowLoad::Column);
                e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                    e.line(&format!("const int row = {row};"));
                    e.chunk_loads(loads, g, RowLoad::Tile);
                    body(e, false);
                });
            });
        };
        if !batched {
            return checked(self);
        }
        // Shared views' chunks are always whole: their condition is `true`.
        let cond: Vec<String> = conds
            .into_iter()
            .flatten()
            .filter(|c| c != "true")
            .collect();
        let cpt = g.cpt();
        // A thread's last chunk may lie past the tile's columns, and a tile row past the
        // tensor's rows: neither is read (its registers hold zeros, never stored).
        let exists = |row_ok: &str| {
            let mut terms: Vec<String> = Vec::new();
            if row_ok != "true" {
                terms.push(row_ok.to_string());
            }
            if g.ragged() {
                terms.push(format!("lc < {}", g.cols));
            }
            if terms.is_empty() {
                String::new()
            } else {
                format!("if ({}) ", terms.join(" && "))
            }
        };
        let raw_index = |how: RowLoad| {
            if how == RowLoad::Tile {
                format!("[r * {cpt} + c]")
            } else {
                "[c]".into()
            }
        };
        let batch = |e: &mut Self| {
            for (l, a) in loads.iter().zip(&accesses) {
                let Some(a) = a else { continue };
                let (ty, _) = raw_read(a.dtype).expect("batched");
                let n = if l.how == RowLoad::Tile {
                    g.rpt * cpt
                } else {
                    cpt
                };
                let init = if exists(&a.row_ok).is_empty() {
                    ""
                } else {
                    " = {}"
                };
                e.line(&format!(
                    "{ty} {}_raw[{n}]{init};  // {} ({})",
                    l.array,
                    a.source(),
                    e.loc(a.span)
                ));
            }
            let issue = |e: &mut Self, how: RowLoad| {
                for (l, a) in loads.iter().zip(&accesses) {
                    let Some(a) = a.as_ref().filter(|_| l.how == how) else {
                        continue;
                    };
                    let read = if a.shared {
                        raw_read_shared(a.dtype)
                    } else {
                        raw_read(a.dtype).expect("batched").1
                    };
                    e.line(&format!(
                        "{}{}_raw{} = {read}{}({});",
                        exists(&a.row_ok),
                        l.array,
                        raw_index(how),
                        a.hint,
                        a.ptr
                    ));
                }
            };
            let unpack = |e: &mut Self, how: RowLoad| {
                for (l, a) in loads.iter().zip(&accesses) {
                    let Some(a) = a.as_ref().filter(|_| l.how == how) else {
                        continue;
                    };
                    let (vty, suffix) = row_elem(a.dtype);
                    e.line(&format!(
                        "{vty} {}[{ROW_CHUNK}]; cake_row_unpack_{suffix}({}, {}_raw{});",
                        l.array,
                        l.array,
                        l.array,
                        raw_index(how)
                    ));
                }
            };
            e.line("// every load issued before the first is used");
            e.unrolled(&format!("for (int c = 0; c < {cpt}; ++c) {{"), |e| {
                e.line(&format!("const int lc = {col};"));
                issue(e, RowLoad::Column);
                e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                    e.line(&format!("const int row = {row};"));
                    issue(e, RowLoad::Tile);
                });
            });
            e.unrolled(&format!("for (int c = 0; c < {cpt}; ++c) {{"), |e| {
                e.line(&format!("const int lc = {col};"));
                unpack(e, RowLoad::Column);
                e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                    e.line(&format!("const int row = {row};"));
                    unpack(e, RowLoad::Tile);
                    body(e, true);
                });
            });
        };
        if cond.is_empty() {
            return self.braced("{  // whole chunks of shared views: batched", batch);
        }
        self.braced_else(
            &format!(
                "if ({}) {{  // whole, in bounds and aligned: batched",
                cond.join(" && ")
            ),
            batch,
            checked,
        );
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

    /// `frag[:] = value`, or `a[:], b[:] = x, y`, into row-layout tiles or per-row values of one
    /// layout: one loop nest, every load of every value (a load the values share, once) issued
    /// in one batch. The row reductions the values read are computed before (for per-row
    /// values assigned together, in one pass: `fuse_row_reductions`).
    pub(crate) fn assign_rows(&mut self, pairs: &[(FragId, ExprId)], layout: FragLayout, sp: Span) {
        let (g, tile) = match layout {
            FragLayout::RowTile(g) => (g, true),
            FragLayout::RowVals(g) => (g, false),
            _ => return,
        };
        let k = self.k;
        let header = format!(
            "{{  // {} <- ... ({})",
            pairs
                .iter()
                .map(|(d, _)| k.fragments[*d].name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            self.loc(sp)
        );
        let names: Vec<String> = pairs.iter().map(|(d, _)| self.frag_name(*d)).collect();
        self.braced(&header, |e| {
            let mut loads = Vec::new();
            for (_, value) in pairs {
                let Some(l) = e.row_value_loads(*value, g, tile) else {
                    return;
                };
                loads.extend(l);
            }
            let site = if tile { Site::Row(g) } else { Site::RowVal(g) };
            let values: Vec<String> = pairs.iter().map(|(_, v)| e.elem(*v, site)).collect();
            let at = if tile {
                format!("(r * {} + c) * {ROW_CHUNK} + v", g.cpt())
            } else {
                "r".to_string()
            };
            let body = if let ([name], [value]) = (names.as_slice(), values.as_slice()) {
                format!("{name}[{at}] = {value};")
            } else {
                // Every value is computed before any fragment is written: a value may read a
                // fragment the statement assigns, and reads it as it was.
                let computed = values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("const auto cake_val{i} = {v};"));
                let written = names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("{n}[{at}] = cake_val{i};"));
                format!(
                    "{{ {} }}",
                    computed.chain(written).collect::<Vec<_>>().join(" ")
                )
            };
            if tile {
                e.row_chunks(g, &loads, None, |e, _| {
                    e.line("#pragma unroll");
                    e.line(&format!("for (int v = 0; v < {ROW_CHUNK}; ++v) {body}"));
                });
            } else {
                e.line("#pragma unroll");
                e.line(&format!("for (int r = 0; r < {}; ++r) {body}", g.rpt));
            }
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
        evict: Option<Evict>,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        let hint = evict.map_or(String::new(), |ev| self.row_hint(ev, ""));
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
                let store = raw_store(dtype)
                    .map(|aligned| e.tile_batched_cond(g, &dims, &texts, &tname, aligned));
                let exists = if g.ragged() {
                    format!("if ({r0} + row < {rext} && lc < {}) ", g.cols)
                } else {
                    format!("if ({r0} + row < {rext}) ")
                };
                e.row_chunks(g, &loads, Some(store), |e, batched| {
                    e.line(&format!("float out[{ROW_CHUNK}];"));
                    e.line("#pragma unroll");
                    e.line(&format!("for (int v = 0; v < {ROW_CHUNK}; ++v) out[v] = {v};"));
                    if batched {
                        e.line(&format!("{exists}cake_row_st8v_{suffix}{hint}({tname} + {offset}, out);"));
                    } else {
                        e.line(&format!(
                            "cake_row_st8_{suffix}{hint}({tname} + {offset}, out, {r0} + row < {rext}, min({cext} - ({c0} + lc), {} - lc));",
                            g.cols
                        ));
                    }
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
                        if hint.is_empty() {
                            e.line(&format!(
                                "if ({c0} + row < {cext}) {tname}[{offset}] = ({ty}){conv}({v});"
                            ));
                        } else {
                            e.line(&format!(
                                "if ({c0} + row < {cext}) cake_st{hint}({tname} + {offset}, ({ty}){conv}({v}));"
                            ));
                        }
                    });
                });
            }
            _ => {}
        });
        self.row_loads.clear();
    }

    /// `lm.scatter_add(dst, value, index, coords, counts)` of a row-layout tile: each of the
    /// thread's rows goes to destination row `coords[-2] + index[row]` (skipped outside `dst`),
    /// its chunks added with `red.global.add` (two 16-byte adds per chunk where the chunk is
    /// whole and aligned, one per element otherwise); the first thread of each row group adds 1
    /// to the row's count.
    pub(crate) fn scatter_add_rows(
        &mut self,
        dst: ParamId,
        value: ExprId,
        index: ExprId,
        coords: &[ExprId],
        counts: Option<ParamId>,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dims, .. } = k.params[dst].kind.clone() else {
            return;
        };
        self.precompute_reductions(value);
        self.precompute_reductions(index);
        let g = match legal::global_scatter_add(self.tile_of(value), &dims, coords) {
            Ok(g) => g,
            Err(m) => return self.unsupported(sp, m),
        };
        let tname = c_ident(&k.params[dst].name);
        let rank = dims.len();
        let (ra, ca) = (rank - 2, rank - 1);
        let (rext, cext) = (self.extent_text(&dims[ra]), self.extent_text(&dims[ca]));
        let texts: Vec<String> = coords.iter().map(|c| self.ix(*c)).collect();
        let (r0, c0) = (texts[ra].clone(), texts[ca].clone());
        self.needs_row_ops = true;
        self.needs_row_red = true;
        let header = format!(
            "{{  // scatter_add {} <- row-layout value by index ({})",
            k.params[dst].name,
            self.loc(sp)
        );
        self.braced(&header, |e| {
            if e.row_value_loads(index, g, false).is_none() {
                return;
            }
            let at = e.elem(index, Site::RowVal(g));
            let (row, _) = e.row_text(g);
            e.line(&format!(
                "int dest[{}];  // each row's destination row, -1 outside {}",
                g.rpt, k.params[dst].name
            ));
            e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                e.line(&format!("const int row = {row};"));
                e.line(&format!("const int d = {r0} + ({at});"));
                e.line(&format!("dest[r] = (d >= 0 && d < {rext}) ? d : -1;"));
            });
            let Some(loads) = e.row_value_loads(value, g, true) else {
                return;
            };
            let v = e.elem(value, Site::Row(g));
            let offset = e.tile_offset(&dims, &texts, ra, "dest[r]", &format!("{c0} + lc"));
            // Every destination row starts 16-byte aligned when the first does and a row is a
            // whole number of 16-byte units.
            let first = e.tile_offset(&dims, &texts, ra, "0", &c0);
            let whole = format!(
                "{c0} + {} <= {cext} && ({cext}) % 4 == 0 && cake_aligned16({tname} + {first})",
                g.cols
            );
            let ragged = if g.ragged() {
                format!(" && lc < {}", g.cols)
            } else {
                String::new()
            };
            e.row_chunks(g, &loads, Some(Some(whole)), |e, batched| {
                e.line(&format!("float out[{ROW_CHUNK}];"));
                e.line("#pragma unroll");
                e.line(&format!("for (int v = 0; v < {ROW_CHUNK}; ++v) out[v] = {v};"));
                if batched {
                    e.line(&format!(
                        "if (dest[r] >= 0{ragged}) cake_red_add8v_f32({tname} + {offset}, out);"
                    ));
                } else {
                    e.line(&format!(
                        "if (dest[r] >= 0) cake_red_add8_f32({tname} + {offset}, out, min({cext} - ({c0} + lc), {} - lc));",
                        g.cols
                    ));
                }
            });
            let Some(c) = counts else { return };
            let ParamKind::Tensor { dims: cdims, .. } = k.params[c].kind.clone() else {
                return;
            };
            let cname = c_ident(&k.params[c].name);
            let crows = e.extent_text(&cdims[cdims.len() - 1]);
            let mut at: Vec<String> = texts[..ca].to_vec();
            at[ra] = "dest[r]".into();
            let coffset = e.offset_of(&cdims, &at);
            let t = e.role_thread();
            e.braced(&format!("if ({t} % {} == 0) {{  // one count per row", g.t), |e| {
                e.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |e| {
                    e.line(&format!(
                        "if (dest[r] >= 0 && dest[r] < {crows}) cake_red_add_i32({cname} + {coffset}, 1);"
                    ));
                });
            });
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
        self.row_reductions(&[(e, pass, op, arg)], g);
    }

    /// Row reductions of tiles of one geometry in one pass over the chunks: every load of
    /// every argument (shared ones once) in one batch, a partial per reduction, then each
    /// combined across its row group in turn.
    pub(crate) fn row_reductions(
        &mut self,
        items: &[(ExprId, &super::reduce::Pass, ReduceOp, ExprId)],
        g: RowGeom,
    ) {
        let k = self.k;
        let combine_of = |op: ReduceOp| match op {
            ReduceOp::Sum => "cake_sum",
            ReduceOp::Max | ReduceOp::ArgMax => "fmaxf",
            ReduceOp::Min | ReduceOp::ArgMin => "fminf",
        };
        // One reduction keeps the name it always had; several number theirs.
        let part = |i: usize| {
            if items.len() == 1 {
                "cake_part".to_string()
            } else {
                format!("cake_part{i}")
            }
        };
        for (e, pass, _, _) in items {
            self.line(&format!(
                "float {}[{}];  // row {} over {} columns, rows held by {} thread(s) ({})",
                pass.vname,
                g.rpt,
                pass.combine,
                g.cols,
                g.t,
                self.loc(k.exprs.span(*e))
            ));
        }
        self.braced("{", |em| {
            let mut loads = Vec::new();
            for (_, _, _, arg) in items {
                let Some(l) = em.row_value_loads(*arg, g, true) else {
                    return;
                };
                loads.extend(l);
            }
            let values: Vec<String> = items
                .iter()
                .map(|(_, _, _, arg)| em.elem(*arg, Site::Row(g)))
                .collect();
            for (i, (_, pass, _, _)) in items.iter().enumerate() {
                // `cake_` names are the lowering's own (c_ident renames a fragment called so).
                em.line(&format!("float {}[{}];", part(i), g.rpt));
                em.line("#pragma unroll");
                em.line(&format!(
                    "for (int r = 0; r < {}; ++r) {}[r] = {};",
                    g.rpt,
                    part(i),
                    pass.init
                ));
            }
            // Elements past the tile's columns do not exist.
            let guard = if g.ragged() {
                format!("if (lc + v < {}) ", g.cols)
            } else {
                String::new()
            };
            let folds: Vec<String> = items
                .iter()
                .zip(&values)
                .enumerate()
                .map(|(i, ((_, _, op, _), value))| {
                    let (p, c) = (part(i), combine_of(*op));
                    format!("{p}[r] = {c}({p}[r], {value});")
                })
                .collect();
            let body = if items.len() == 1 {
                format!("{guard}{}", folds[0])
            } else {
                format!("{guard}{{ {} }}", folds.join(" "))
            };
            em.row_chunks(g, &loads, None, |em, _| {
                em.line("#pragma unroll");
                em.line(&format!(
                    "for (int v = 0; v < {ROW_CHUNK}; ++v) {{ {body} }}"
                ));
            });
            for (i, (_, pass, _, _)) in items.iter().enumerate() {
                em.line("#pragma unroll");
                em.line(&format!(
                    "for (int r = 0; r < {}; ++r) {}[r] = {}[r];",
                    g.rpt,
                    pass.vname,
                    part(i)
                ));
            }
        });
        self.row_loads.clear();
        let combines: Vec<(ExprId, &str, &str)> = items
            .iter()
            .map(|(e, pass, op, _)| (*e, pass.vname.as_str(), combine_of(*op)))
            .collect();
        self.row_combine(&combines, g);
    }

    /// Combine row reductions' per-thread partials (each `(expr, vname, combine)`) across their
    /// row group: the lanes of a warp by shuffles, the warps of a warpgroup through the role's
    /// scratch — the partials of every reduction in one exchange (two `bar.sync` in all, not
    /// two per reduction), as many as the scratch holds (`exchanged_reductions`).
    fn row_combine(&mut self, items: &[(ExprId, &str, &str)], g: RowGeom) {
        let k = self.k;
        // Across the lanes of a row group (consecutive lanes of one warp).
        let lanes = g.t.min(32);
        if lanes > 1 {
            for &(_, vname, combine) in items {
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
        }
        if g.t <= 32 || items.is_empty() {
            return;
        }
        // Across the warps of the warpgroup: each warp's partials through shared memory,
        // combined in warp order by every thread (so all agree bit for bit). The first barrier
        // keeps the previous exchange's readers ahead of these writes.
        let (role, issue_only) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        let warps = g.t / 32;
        let sp = k.exprs.span(items[0].0);
        let what = "a row reduction across the warps of a warpgroup";
        if let Err(m) = legal::replica_threads(k, role, issue_only, what) {
            self.unsupported(sp, m);
        }
        let Some(placed) = self.layout.row_scratch(role) else {
            return self.unsupported(sp, "no row-reduction scratch was placed for this role");
        };
        let (scratch, per_warp) = (placed.offset, placed.floats_per_warp);
        self.needs_shared_ops = true;
        let batch = (per_warp / g.rpt.max(1)).max(1) as usize;
        for group in items.chunks(batch) {
            let width = group.len() as u32 * g.rpt;
            // Partial (replica, warp, reduction i, r) at a float of its own in the scratch.
            let slot = |w: &str, i: usize| {
                let at = if i == 0 {
                    "r".to_string()
                } else {
                    format!("{} + r", i as u32 * g.rpt)
                };
                format!("cake_smem + {scratch}u + 4u * (({rname}_index * {warps} + {w}) * {width} + {at})")
            };
            self.replica_sync(sp);
            let lane0 = format!("{rname}_thread / 32");
            let stores: Vec<String> = group
                .iter()
                .enumerate()
                .map(|(i, &(_, vname, _))| {
                    format!("cake_st_shared_f32({}, {vname}[r]);", slot(&lane0, i))
                })
                .collect();
            let stores = match stores.as_slice() {
                [one] => one.clone(),
                many => format!("{{ {} }}", many.join(" ")),
            };
            self.line(&format!(
                "if ({rname}_thread % 32 == 0) for (int r = 0; r < {}; ++r) {stores}",
                g.rpt
            ));
            self.replica_sync(sp);
            for (i, &(_, vname, combine)) in group.iter().enumerate() {
                self.unrolled(&format!("for (int r = 0; r < {}; ++r) {{", g.rpt), |em| {
                    em.line(&format!("float acc = cake_ld_shared_f32({});", slot("0", i)));
                    em.line(&format!(
                        "for (int w = 1; w < {warps}; ++w) acc = {combine}(acc, cake_ld_shared_f32({}));",
                        slot("w", i)
                    ));
                    em.line(&format!("{vname}[r] = acc;"));
                });
            }
        }
    }
}
