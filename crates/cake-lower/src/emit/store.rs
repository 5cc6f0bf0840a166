//! Results out of registers and shared memory: `lm.store` of tiles and per-row values to global
//! memory, `view.store` into shared memory (values or a constant), `scatter_add`, and TMA stores,
//! with the per-replica synchronisation around them.

use super::*;

impl Emitter<'_> {
    pub(crate) fn store(
        &mut self,
        dst: ParamId,
        value: ExprId,
        coords: &[ExprId],
        transposed: bool,
        evict: Option<Evict>,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        let tname = c_ident(&k.params[dst].name);
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        self.precompute_reductions(value);
        let kind = match legal::store_kind(self.tile_of(value), transposed) {
            Ok(kind) => kind,
            Err(m) => return self.unsupported(sp, m),
        };
        if let Some(e) = evict.filter(|_| !matches!(kind, legal::StoreKind::RowLayout(_))) {
            self.unsupported(sp, legal::evict_not_lowered("lm.store", e));
        }
        match kind {
            legal::StoreKind::Rows => {
                // One value per row: the first thread of each quad writes the quad's two rows.
                let last = dims.len() - 1;
                let r0 = self.ix(coords[last]);
                let rows = self.extent_text(&dims[last]);
                let v = self.elem(value, Site::Rows);
                let offset = self.linear_offset(&dims, coords, last, "row");
                let ty = storage_type(dtype);
                let open = format!(
                    "if ({rname}_thread % 4 == 0) {{  // store {} <- per-row values ({})",
                    k.params[dst].name,
                    self.loc(sp)
                );
                self.braced(&open, |e| {
                    e.unrolled("for (int h = 0; h < 2; ++h) {", |e| {
                        e.line(&format!("const int row = {r0} + lane_row + 8 * h;"));
                        e.line(&format!(
                            "if (row < {rows}) {tname}[{offset}] = ({ty})({v});"
                        ));
                    })
                });
            }
            legal::StoreKind::TmemRows(n) => self.store_tmem_rows(dst, value, coords, n, sp),
            legal::StoreKind::RowLayout(l) => self.store_rows(dst, value, coords, l, evict, sp),
            legal::StoreKind::Tile(l) => self.store_tile(dst, value, coords, l, transposed, sp),
        }
    }

    /// `lm.store` of an accumulator tile into the two innermost axes at `coords` (leading
    /// coordinates pick the slice). `transposed`: element (i, j) of the tile goes to
    /// (m0 + j, n0 + i) of those axes, `coords` = (.., m0, n0); a thread's column pair then lands
    /// in two rows of the tensor, so each element is its own store (a swapped-operand GEMM's
    /// result tile is small: M ≤ 128 rows).
    pub(crate) fn store_tile(
        &mut self,
        dst: ParamId,
        value: ExprId,
        coords: &[ExprId],
        layout: FragLayout,
        transposed: bool,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        if let Err(m) = legal::store_tile_shape(&dims, coords) {
            return self.unsupported(sp, m);
        }
        let (ra, ca) = (dims.len() - 2, dims.len() - 1);
        let (rows, cols) = (self.extent_text(&dims[ra]), self.extent_text(&dims[ca]));
        let texts: Vec<String> = coords.iter().map(|c| self.ix(*c)).collect();
        let (r0, c0) = (texts[ra].clone(), texts[ca].clone());
        // The element of the tensor at (tensor row, tensor column).
        let offset = |row: &str, col: &str| {
            let mut at = texts.clone();
            at[ra] = row.to_string();
            at[ca] = col.to_string();
            self.offset_of(&dims, &at)
        };
        // Transposed, each element of a pair is a store of its own: tensor rows col, col + 1.
        let (at, first, second) = (
            offset("row", "col"),
            offset("col", "row"),
            offset("col + 1", "row"),
        );
        let tname = c_ident(&k.params[dst].name);
        // A cast to a 16-bit float is done by the store itself: two floats pack into one word.
        let (inner, pack) = match legal::store_tile_value(k, value, dtype) {
            Ok((inner, packed)) => (inner, packed.map(pack_fn)),
            Err(m) => return self.unsupported(sp, m),
        };
        let saved = self.prefetch_peer_tiles(inner);
        let v = self.elem(inner, Site::Tile);
        self.peer_loads = saved;
        let ct = storage_type(dtype);
        let open = format!(
            "{{  // store {} <- accumulator tile{} ({})",
            k.params[dst].name,
            if transposed { ", transposed" } else { "" },
            self.loc(sp)
        );
        if transposed {
            // The tile's rows run along the tensor's columns (from n0), its columns along the
            // tensor's rows (from m0): `row` is a tensor column, `col` a tensor row.
            return self.braced(&open, |e| {
                e.accumulator_pairs(layout, &c0, Some(&r0), &v, |e| {
                    e.braced(&format!("if (row < {cols}) {{"), |e| {
                        let (lo, hi) = match pack {
                            Some(f) => {
                                e.line(&format!("const uint32_t both = {f}(v[0], v[1]);"));
                                (
                                    "(uint16_t)(both & 0xFFFFu)".to_string(),
                                    "(uint16_t)(both >> 16)".to_string(),
                                )
                            }
                            None => (format!("({ct})(v[0])"), format!("({ct})(v[1])")),
                        };
                        e.line(&format!("if (col < {rows}) {tname}[{first}] = {lo};"));
                        e.line(&format!("if (col + 1 < {rows}) {tname}[{second}] = {hi};"));
                    })
                })
            });
        }
        self.braced(&open, |e| {
            e.accumulator_pairs(layout, &r0, Some(&c0), &v, |e| {
                e.braced(&format!("if (row < {rows}) {{"), |e| {
                    e.line(&format!("{ct}* out = {tname} + {at};"));
                    match pack {
                        Some(f) => {
                            e.line(&format!("const uint32_t both = {f}(v[0], v[1]);"));
                            e.braced_else(
                                &format!("if (col + 1 < {cols} && ({cols} % 2) == 0) {{"),
                                |e| e.line("*reinterpret_cast<uint32_t*>(out) = both;  // 4-byte aligned: col and the row pitch are even"),
                                |e| {
                                    e.line(&format!(
                                        "if (col < {cols}) out[0] = (uint16_t)(both & 0xFFFFu);"
                                    ));
                                    e.line(&format!(
                                        "if (col + 1 < {cols}) out[1] = (uint16_t)(both >> 16);"
                                    ));
                                },
                            );
                        }
                        None => {
                            e.line(&format!("if (col < {cols}) out[0] = ({ct})(v[0]);"));
                            e.line(&format!("if (col + 1 < {cols}) out[1] = ({ct})(v[1]);"));
                        }
                    }
                })
            })
        });
    }

    /// `lm.store` of a value computed element-wise from a one-row-per-thread TMEM tile: thread t
    /// of the warpgroup writes row t, eight columns (16 bytes of bf16/f16) at a time when the row
    /// is in bounds and aligned, element by element otherwise.
    pub(crate) fn store_tmem_rows(
        &mut self,
        dst: ParamId,
        value: ExprId,
        coords: &[ExprId],
        n: u32,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        let (inner, pack) = match legal::store_tmem_rows(k, value, dtype, &dims, coords, |e| {
            self.row_elementwise(e)
        }) {
            Ok((inner, d)) => (inner, pack_fn(d)),
            Err(m) => return self.unsupported(sp, m),
        };
        let (ra, ca) = (dims.len() - 2, dims.len() - 1);
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        let (rows, cols) = (self.extent_text(&dims[ra]), self.extent_text(&dims[ca]));
        let r0 = self.ix(coords[ra]);
        let c0 = self.ix(coords[ca]);
        let tname = c_ident(&k.params[dst].name);
        self.precompute_reductions(inner);
        let v = self.elem(inner, Site::Lane);
        let open = format!(
            "{{  // store {} <- TMEM tile, one row per thread ({})",
            k.params[dst].name,
            self.loc(sp)
        );
        self.braced(&open, |e| {
            e.line(&format!("const int row = {r0} + {rname}_thread;"));
            e.braced(&format!("if (row < {rows}) {{"), |e| {
                let offset = e.linear_offset(&dims, coords, ra, "row");
                e.line(&format!(
                    "uint16_t* cake_row = {tname} + {offset};  // element (row, {c0})"
                ));
                e.unrolled(&format!("for (int cc = 0; cc < {n}; cc += 8) {{"), |e| {
                    e.line(&format!("const int col = {c0} + cc;"));
                    e.line("uint32_t w[4];");
                    e.unrolled("for (int q = 0; q < 4; ++q) {", |e| {
                        e.line("float v[2];");
                        e.line("#pragma unroll");
                        e.line(&format!(
                            "for (int j = 0; j < 2; ++j) {{ const int c = cc + 2 * q + j; v[j] = {v}; }}"
                        ));
                        e.line(&format!("w[q] = {pack}(v[0], v[1]);"));
                    });
                    e.braced_else(
                        &format!(
                            "if (col + 8 <= {cols} && (reinterpret_cast<uintptr_t>(cake_row + cc) & 15) == 0) {{"
                        ),
                        |e| e.line("*reinterpret_cast<uint4*>(cake_row + cc) = make_uint4(w[0], w[1], w[2], w[3]);"),
                        |e| {
                            e.line("#pragma unroll");
                            e.line(&format!(
                                "for (int e = 0; e < 8; ++e) if (col + e < {cols}) cake_row[cc + e] = (uint16_t)(w[e / 2] >> (16 * (e % 2)));"
                            ));
                        },
                    );
                });
            });
        });
    }

    /// The loops over the register pairs of an accumulator tile, around `body`: `i` walks the
    /// 8-column groups, `h` the two rows a thread holds (and, for an mma.sync tile, `mt` its
    /// 16-row tiles). Inside, `row` and `col` (offset by `row0` / `col0`) name the pair's first
    /// element and `v[2]` holds its two values, `value` evaluated at `j`.
    pub(crate) fn accumulator_pairs(
        &mut self,
        layout: FragLayout,
        row0: &str,
        col0: Option<&str>,
        value: &str,
        body: impl FnOnce(&mut Self),
    ) {
        let pairs = move |e: &mut Self, n: u32, first_row: &str| {
            e.unrolled(&format!("for (int i = 0; i < {}; ++i) {{", n / 8), |e| {
                e.unrolled("for (int h = 0; h < 2; ++h) {", |e| {
                    e.line(&format!("const int row = {first_row} + lane_row + 8 * h;"));
                    match col0 {
                        Some(c0) => e.line(&format!("const int col = {c0} + lane_col + 8 * i;")),
                        None => e.line("const int col = lane_col + 8 * i;"),
                    }
                    e.line("float v[2];");
                    e.line("#pragma unroll");
                    e.line(&format!("for (int j = 0; j < 2; ++j) v[j] = {value};"));
                    body(e);
                })
            })
        };
        match layout {
            FragLayout::MmaAcc { m, n } => {
                let first_row = format!("{row0} + 16 * mt");
                self.unrolled(
                    &format!("for (int mt = 0; mt < {}; ++mt) {{", m / 16),
                    |e| pairs(e, n, &first_row),
                )
            }
            FragLayout::WgmmaAcc { n } => pairs(self, n, row0),
            _ => unreachable!("accumulator layouts only"),
        }
    }

    /// `view.store(value)`: an accumulator tile (or a cast of one) written into a 128B-swizzled
    /// view in the layout TMA reads, 4 bytes (two 16-bit elements) per store; or an f32 tile
    /// into an unswizzled f32 view, row-major, 8 bytes per store (the layout `view.load` reads).
    pub(crate) fn smem_store(&mut self, dst: &ViewRef, value: ExprId, sp: Span) {
        let k = self.k;
        let view = k.views[dst.view].clone();
        let kind = match legal::smem_store(k, dst, value, self.tile_of(value)) {
            Ok(kind) => kind,
            Err(m) => return self.unsupported(sp, m),
        };
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        self.precompute_reductions(value);
        let base = self.view_base(&ViewRef {
            rows: None,
            ..dst.clone()
        });
        let row0 = match dst.rows {
            Some((start, _)) => self.ix(start),
            None => "0".into(),
        };
        self.line(&format!(
            "// {}{}.store(...) ({})",
            view.name,
            if dst.transposed { ".T" } else { "" },
            self.loc(sp)
        ));
        // Peer tiles are read before the wait and the sync, so their round trips overlap them.
        let saved = self.prefetch_peer_tiles(value);
        // The buffer may still be read by this replica's previous TMA store.
        self.line(&format!("if ({rname}_thread == 0) cake_bulk_wait_read();"));
        self.replica_sync(sp);
        match kind {
            legal::SmemStore::Swizzled16 { n, inner, dtype } => {
                let pack = pack_fn(dtype);
                let v = self.elem(inner, Site::Tile);
                let panel_bytes = view.shape[0] as u64 * 128;
                self.accumulator_pairs(FragLayout::WgmmaAcc { n }, &row0, None, &v, |e| {
                    // 128B swizzle: the 16-byte chunk index within a 128-byte row is XORed with
                    // row % 8.
                    e.line(&format!(
                        "const uint32_t addr = {base} + (col / 64) * {panel_bytes} + row * 128 + ((((col % 64) * 2 / 16) ^ (row % 8)) * 16) + ((col % 64) * 2) % 16;"
                    ));
                    e.line(&format!("cake_st_shared_b32(addr, {pack}(v[0], v[1]));"));
                });
            }
            legal::SmemStore::Swizzled16T { n, inner, dtype } => {
                self.needs_stmatrix = true;
                let pack = pack_fn(dtype);
                let v = self.elem(inner, Site::Tile);
                self.stmatrix_transposed(&rname, &base, &row0, n, pack, &v);
            }
            legal::SmemStore::Rows => {
                let v = self.elem(value, Site::Rows);
                let bits = match view.dtype {
                    DType::F32 => "__float_as_uint",
                    _ => "(uint32_t)",
                };
                // Every thread of a quad holds the row's value: its first thread writes it.
                self.line(&format!("if ({rname}_thread % 4 == 0) {{"));
                self.line("#pragma unroll");
                self.line(&format!(
                    "for (int h = 0; h < 2; ++h) cake_st_shared_b32({base} + 4 * (({row0}) + lane_row + 8 * h), {bits}({v}));"
                ));
                self.line("}");
            }
            legal::SmemStore::F32 { n } => {
                self.needs_shared_ops = true;
                let v = self.elem(value, Site::Tile);
                let at = legal::f32_view_offset(view.swizzle, view.shape[0], n, "row", "col");
                self.accumulator_pairs(FragLayout::WgmmaAcc { n }, &row0, None, &v, |e| {
                    e.line(&format!(
                        "cake_st_shared_v2_f32({base} + {at}, v[0], v[1]);"
                    ));
                });
            }
        }
        self.peer_loads = saved;
    }

    /// `view.T.store(value)` of a 64 × n accumulator tile: `stmatrix .trans` writes the tile's
    /// 8 × 8 blocks, four per instruction (two for an odd last column group), so that view row
    /// `row0 + c` holds tile column c: 64 elements, 128 bytes, the 16-byte chunk index XORed with
    /// the view row mod 8 (the 128B swizzle TMA reads). Block (h, i) of warp w covers tile rows
    /// 16w + 8h.. and columns 8i..; lane L addresses row L % 8 of the instruction's block L / 8.
    /// `value` is evaluated at `i`, `h`, `j`, `row` and `col` as in `accumulator_pairs`.
    fn stmatrix_transposed(
        &mut self,
        rname: &str,
        base: &str,
        row0: &str,
        n: u32,
        pack: &str,
        value: &str,
    ) {
        let groups = n / 8;
        let block = |e: &mut Self, first: &str, count: u32| {
            e.line(&format!("uint32_t r[{count}];"));
            e.unrolled(&format!("for (int q = 0; q < {count}; ++q) {{"), |e| {
                e.line(&format!("const int i = {first} + q / 2, h = q % 2;"));
                e.line("const int row = lane_row + 8 * h;");
                e.line("const int col = lane_col + 8 * i;");
                e.line("(void)row; (void)col;");
                e.line("float v[2];");
                e.line("#pragma unroll");
                e.line(&format!("for (int j = 0; j < 2; ++j) v[j] = {value};"));
                e.line(&format!("r[q] = {pack}(v[0], v[1]);"));
            });
            // Lanes past the blocks of an x2 address the same rows again: stmatrix ignores them.
            e.line(&format!(
                "const int lane = {rname}_thread % 32, q = (lane / 8) % {count};"
            ));
            e.line(&format!(
                "const int vrow = ({row0}) + 8 * ({first} + q / 2) + lane % 8;  // the tile column"
            ));
            e.line(&format!(
                "const uint32_t addr = {base} + vrow * 128 + (((2 * ({rname}_thread / 32) + q % 2) ^ (vrow % 8)) * 16);"
            ));
            e.line(&format!("cake_stmatrix_x{count}_trans(addr, r);"));
        };
        if groups >= 2 {
            self.unrolled(
                &format!("for (int i2 = 0; i2 + 1 < {groups}; i2 += 2) {{"),
                |e| block(e, "i2", 4),
            );
        }
        if groups % 2 == 1 {
            let last = (groups - 1).to_string();
            self.braced("{  // the last, odd column group", |e| block(e, &last, 2));
        }
    }

    /// `view.store(constant)`: the replica's threads fill the view with 16-byte stores (the
    /// value is the same everywhere, so the swizzle does not matter), after the view's last
    /// TMA store has read it, then synchronise so every later access sees the fill.
    pub(crate) fn smem_fill(&mut self, dst: &ViewRef, value: ExprId, sp: Span) {
        let k = self.k;
        let view = k.views[dst.view].clone();
        let Some((role, threads)) = self.replica_threads(sp, "view.store of a constant") else {
            return;
        };
        let (bits, bytes) = match legal::smem_fill(k, dst, value) {
            Ok(fill) => fill,
            Err(m) => return self.unsupported(sp, m),
        };
        self.needs_shared_ops = true;
        let rname = c_ident(&k.roles[role].name);
        let base = self.row_range_base(dst);
        let number = k.const_number(value).expect("a constant");
        self.line(&format!(
            "// {}.store({number}) ({})",
            view.name,
            self.loc(sp)
        ));
        // The buffer may still be read by this replica's previous TMA store.
        self.line(&format!("if ({rname}_thread == 0) cake_bulk_wait_read();"));
        self.replica_sync(sp);
        self.line(&format!(
            "for (int chunk = {rname}_thread; chunk < {}; chunk += {threads}) cake_st_shared_v4({base} + 16 * chunk, 0x{bits:08x}u);",
            bytes / 16
        ));
        self.replica_sync(sp);
    }

    /// `dst.scatter_add(src, index, offset, valid_rows, counts)`: warp w of the replica owns the
    /// rows of `dst` whose index is w modulo the warps, so every element has one writer and
    /// plain loads and stores suffice (shared memory has no native float atomic add). Each warp
    /// reads the indices of 32 rows at a time, and adds the rows it owns, lane l taking columns
    /// l, l + 32, ...: up to eight rows side by side when their indices are distinct, else row
    /// by row. The counts use native integer atomics.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn scatter_add(
        &mut self,
        dst: &ViewRef,
        src: &ViewRef,
        index: &ViewRef,
        offset: ExprId,
        valid_rows: Option<ExprId>,
        counts: Option<&ViewRef>,
        sp: Span,
    ) {
        let k = self.k;
        let Some((role, threads)) = self.replica_threads(sp, "scatter_add") else {
            return;
        };
        let (dview, sview) = (k.views[dst.view].clone(), k.views[src.view].clone());
        if let Err(m) = legal::scatter_add(k, dst, src) {
            return self.unsupported(sp, m);
        }
        let load = match sview.dtype {
            DType::BF16 => "cake_ld_shared_bf16",
            DType::F16 => "cake_ld_shared_f16",
            _ => "cake_ld_shared_f32",
        };
        self.needs_shared_ops = true;
        let rname = c_ident(&k.roles[role].name);
        let rows = src.rows.map_or(sview.shape[0], |(_, n)| n);
        let dst_rows = dst.rows.map_or(dview.shape[0], |(_, n)| n);
        let cols = sview.shape[1];
        let esize = sview.dtype.bytes();
        let valid = match valid_rows {
            Some(e) => format!(" && r0 + lane < ({})", self.ix(e)),
            None => String::new(),
        };
        let off = self.ix(offset);
        let ibase = self.row_range_base(index);
        let (sbase, dbase) = (self.row_range_base(src), self.row_range_base(dst));
        let cbase = counts.map(|c| self.row_range_base(c));
        let warps = threads / 32;
        let per_lane = cols.div_ceil(32);
        let guard = if cols % 32 == 0 {
            String::new()
        } else {
            format!("if (lane + 32 * cc < {cols}) ")
        };
        let x_at =
            |row: &str| format!("{load}({sbase} + {esize} * (({row}) * {cols} + lane + 32 * cc))");
        let sum_at = |i: &str| format!("{dbase} + 4 * (({i}) * {cols} + lane + 32 * cc)");
        self.line(&format!(
            "// {}.scatter_add({} rows by {}) ({})",
            dview.name,
            sview.name,
            k.views[index.view].name,
            self.loc(sp)
        ));
        self.line(&format!(
            "// Warp w of the {warps} owns the rows i of `{}` with i % {warps} == w: each sum is updated by one warp, in row order, with plain loads and stores (no float atomics, which shared memory lacks: they would be compare-and-swap loops)."
        , dview.name));
        self.braced("{", |e| {
            e.line(&format!(
                "const int lane = {rname}_thread % 32, owner = {rname}_thread / 32;"
            ));
            e.braced(&format!("for (int r0 = 0; r0 < {rows}; r0 += 32) {{"), |e| {
                e.line(&format!(
                    "const int mine = (r0 + lane < {rows}{valid}) ? cake_ld_shared_s32({ibase} + 4 * (r0 + lane)) - ({off}) : -1;"
                ));
                e.line(&format!(
                    "const bool owned = (unsigned)mine < {dst_rows}u && mine % {warps} == owner;"
                ));
                if let Some(cb) = &cbase {
                    e.line(&format!(
                        "if (owned) cake_red_shared_add_u32({cb} + 4 * mine, 1u);"
                    ));
                }
                e.line("unsigned todo = __ballot_sync(0xffffffffu, owned);");
                e.line("// Rows with distinct indices can be added side by side; a repeated index is added row by row.");
                e.line("const unsigned peers = __match_any_sync(0xffffffffu, owned ? mine : ~lane);");
                e.braced_else(
                    "if (!__any_sync(0xffffffffu, owned && __popc(peers) > 1)) {",
                    |e| {
                        e.braced("while (todo) {  // up to eight rows at a time: their loads are issued before their stores", |e| {
                            e.line(&format!(
                                "int row[8], at[8], n = 0; float x[8][{per_lane}], acc[8][{per_lane}];"
                            ));
                            e.unrolled("for (int u = 0; u < 8; ++u) {", |e| {
                                e.line("if (!todo) break;  // the same for the whole warp");
                                e.line("row[u] = __ffs(todo) - 1;");
                                e.line("todo &= todo - 1;");
                                e.line("n = u + 1;");
                                e.line("at[u] = __shfl_sync(0xffffffffu, mine, row[u]);");
                                e.line("#pragma unroll");
                                e.line(&format!(
                                    "for (int cc = 0; cc < {per_lane}; ++cc) {guard}{{ x[u][cc] = {}; acc[u][cc] = cake_ld_shared_f32({}); }}",
                                    x_at("r0 + row[u]"),
                                    sum_at("at[u]")
                                ));
                            });
                            e.unrolled("for (int u = 0; u < 8; ++u) {", |e| {
                                e.line("if (u == n) break;");
                                e.line("#pragma unroll");
                                e.line(&format!(
                                    "for (int cc = 0; cc < {per_lane}; ++cc) {guard}cake_st_shared_f32({}, acc[u][cc] + x[u][cc]);",
                                    sum_at("at[u]")
                                ));
                            });
                        })
                    },
                    |e| {
                        e.braced("for (; todo; todo &= todo - 1) {", |e| {
                            e.line("const int r = __ffs(todo) - 1;");
                            e.line("const int i = __shfl_sync(0xffffffffu, mine, r);");
                            e.line("#pragma unroll");
                            e.line(&format!(
                                "for (int cc = 0; cc < {per_lane}; ++cc) {guard}cake_st_shared_f32({}, cake_ld_shared_f32({}) + {});",
                                sum_at("i"),
                                sum_at("i"),
                                x_at("r0 + r")
                            ));
                        })
                    },
                );
            })
        });
    }

    /// The current role and the thread count of one replica, for the shared-memory fills and
    /// scatter-adds (each replica's threads share its work and synchronise on its own barrier).
    pub(crate) fn replica_threads(&mut self, sp: Span, what: &str) -> Option<(RoleId, u32)> {
        let (role, issue_only) = self.role.expect("role");
        match legal::replica_threads(self.k, role, issue_only, what) {
            Ok(threads) => Some((role, threads)),
            Err(m) => {
                self.unsupported(sp, m);
                None
            }
        }
    }

    /// The shared address of a view reference, with `.rows(start, n)` applied (unswizzled
    /// layout: a row is the last axis's elements, or one element of a 1-D view).
    pub(crate) fn row_range_base(&mut self, v: &ViewRef) -> String {
        let view = self.k.views[v.view].clone();
        let base = self.view_base(&ViewRef {
            rows: None,
            ..v.clone()
        });
        match v.rows {
            None => base,
            Some((start, _)) => {
                let row_bytes = view.shape[1..].iter().product::<u32>() * view.dtype.bytes();
                format!("({base} + ({}) * {row_bytes})", self.ix(start))
            }
        }
    }

    /// `view.tma_store(tensor, coords)`: every thread of the replica has written and fenced; one
    /// thread issues one bulk store per swizzle panel and commits them as a group.
    pub(crate) fn tma_store(
        &mut self,
        dst: ParamId,
        src: &ViewRef,
        coords: &[ExprId],
        add: bool,
        sp: Span,
    ) {
        let k = self.k;
        let view = k.views[src.view].clone();
        let rank = self.rank(dst);
        if let Err(m) = legal::tma_store(k, dst, src) {
            return self.unsupported(sp, m);
        }
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        let box_dims = self.tma_box(&view, src.rows.map(|(_, n)| n), rank);
        let tmap = self.tmap_name(dst, &box_dims, view.swizzle);
        let mut base = self.view_base(&ViewRef {
            rows: None,
            ..src.clone()
        });
        if let Some((start, _)) = src.rows {
            // A row of a 1-D view is one element.
            let row_bytes = if view.shape.len() == 1 {
                view.dtype.bytes()
            } else {
                view.panel_cols() * view.dtype.bytes()
            };
            base = format!("({base} + ({}) * {row_bytes})", self.ix(start));
        }
        // Innermost first, as the tensor map orders them.
        let mut c: Vec<String> = coords.iter().map(|e| self.ix(*e)).collect();
        c.reverse();
        if rank != 2 || add {
            self.tma_store_ranks.insert((rank, add));
        }
        let store = if add { "store_add" } else { "store" };
        let panel_bytes =
            view.shape[0] as u64 * view.panel_cols() as u64 * view.dtype.bytes() as u64;
        self.line(&format!(
            "// tma_store {} -> {}{} ({})",
            view.name,
            k.params[dst].name,
            if add { ", adding" } else { "" },
            self.loc(sp)
        ));
        self.replica_sync(sp);
        self.braced(&format!("if ({rname}_thread == 0) {{"), |e| {
            for p in 0..view.panels() {
                let addr = if p == 0 {
                    base.clone()
                } else {
                    format!("{base} + {}", p as u64 * panel_bytes)
                };
                let mut cc = c.clone();
                if p > 0 {
                    cc[0] = format!("{} + {}", c[0], p * view.panel_cols());
                }
                e.line(&format!(
                    "cake_tma_{store}_{rank}d(&{tmap}, {addr}, {});",
                    cc.join(", ")
                ));
            }
            e.line("cake_bulk_commit();");
        });
    }
}
