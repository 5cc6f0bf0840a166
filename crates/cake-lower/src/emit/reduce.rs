//! Row reductions of register tiles, computed once per block into per-thread arrays and reused
//! by structurally equal reductions: across the quad of a wgmma-layout tile, or along the row a
//! thread owns in a TMEM-row tile. Also the early issue of their per-column loads.

use super::*;

impl Emitter<'_> {
    /// Compute every row reduction inside `e` into per-thread arrays (both rows of the thread),
    /// reusing results already computed in this block. Min/argmin (max/argmax) of one argument
    /// share one pass; ties keep the lowest column, as torch.argmin does.
    pub(crate) fn precompute_reductions(&mut self, e: ExprId) {
        let k = self.k;
        for c in legal::reduction_operands(k, e) {
            self.precompute_reductions(c);
        }
        if let ExprKind::Vote { op, arg } = k.exprs[e].kind {
            return self.vote(e, op, arg);
        }
        let ExprKind::Reduce {
            op,
            axis,
            arg,
            packed,
        } = k.exprs[e].kind.clone()
        else {
            return;
        };
        // Computed already, or a structurally equal reduction was (same op, same argument).
        if self.reductions.contains(e) || self.reductions.reuse_twin(e, arg, op, packed) {
            return;
        }
        let tile = match self.reduction_tile(arg, axis) {
            Ok(tile) => tile,
            Err(m) => {
                self.unsupported(k.exprs.span(e), m);
                self.reductions
                    .computed(e, (arg, op, packed), "0".to_string(), None);
                return;
            }
        };
        let index = legal::reduction_tracks_index(k, (arg, op, axis, packed));
        if let legal::ReductionTile::Rows(g) = tile {
            if let Err(m) = legal::row_reduction(k, arg, op, index) {
                // Recorded as computed: its readers are not reported again.
                self.unsupported(k.exprs.span(e), m);
                self.reductions
                    .computed(e, (arg, op, packed), "0".to_string(), None);
                return;
            }
            let pass = self.reduction_pass(op, false);
            self.row_reduction(e, &pass, op, arg, g);
            self.reductions
                .computed(e, (arg, op, packed), pass.vname, None);
            return;
        }
        let pass = self.reduction_pass(op, index);
        match tile {
            legal::ReductionTile::Lanes(n) => self.lane_reduction(e, &pass, op, arg, n),
            legal::ReductionTile::Quad(n) => self.quad_reduction(e, &pass, op, arg, n, packed),
            legal::ReductionTile::Rows(_) => {}
        }
        // Record the arrays for `e` and for the other reductions the same pass computes:
        // min/argmin (max/argmax) of one argument share it.
        let iname = pass.index.then(|| pass.iname.clone());
        self.reductions
            .computed(e, (arg, op, packed), pass.vname, iname);
    }

    /// The row reductions (sum, max, min along the columns) that the values of one statement
    /// (`a[:], b[:] = lm.sum(x * u, axis=1), lm.sum(x * w, axis=1)`) read, computed together
    /// where two or more reduce tiles of one geometry: one pass over the chunks, every load of
    /// every argument (shared ones once) in one batch. The rest are left to
    /// `precompute_reductions`. Only reductions whose argument holds no reduction of its own.
    pub(crate) fn fuse_row_reductions(&mut self, values: &[ExprId]) {
        let k = self.k;
        let mut candidates: Vec<(ExprId, ReduceOp, ExprId)> = Vec::new();
        for &v in values {
            k.visit_expr(v, |e, kind| {
                let ExprKind::Reduce {
                    op,
                    axis: 1,
                    arg,
                    packed: false,
                } = *kind
                else {
                    return true;
                };
                let mut nested = false;
                k.visit_expr(arg, |_, kind| {
                    nested |= matches!(kind, ExprKind::Reduce { .. });
                    !nested
                });
                if !nested
                    && matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min)
                    && candidates.iter().all(|c| c.0 != e)
                {
                    candidates.push((e, op, arg));
                }
                false
            });
        }
        let mut found: Vec<(ExprId, ReduceOp, ExprId, legal::RowGeom)> = Vec::new();
        for (e, op, arg) in candidates {
            if self.reductions.contains(e) {
                continue;
            }
            let Ok(legal::ReductionTile::Rows(g)) = self.reduction_tile(arg, 1) else {
                continue;
            };
            let index = legal::reduction_tracks_index(k, (arg, op, 1, false));
            if !index && legal::row_reduction(k, arg, op, index).is_ok() {
                found.push((e, op, arg, g));
            }
        }
        while let Some(&(_, _, _, g)) = found.first() {
            let (group, rest): (Vec<_>, Vec<_>) = found.into_iter().partition(|f| f.3 == g);
            found = rest;
            if group.len() < 2 {
                continue;
            }
            let passes: Vec<Pass> = group
                .iter()
                .map(|&(_, op, _, _)| self.reduction_pass(op, false))
                .collect();
            let items: Vec<_> = group
                .iter()
                .zip(&passes)
                .map(|(&(e, op, arg, _), pass)| (e, pass, op, arg))
                .collect();
            self.row_reductions(&items, g);
            for ((e, op, arg, _), pass) in group.into_iter().zip(passes) {
                self.reductions
                    .computed(e, (arg, op, false), pass.vname, None);
            }
        }
    }

    /// Warp vote `e` (`lm.any` / `lm.all` of `arg`): each thread combines the elements it
    /// holds, then `__any_sync` / `__all_sync` gives every thread of the warp the same answer.
    /// Computed afresh wherever the condition is evaluated (its registers may have changed).
    fn vote(&mut self, e: ExprId, op: VoteOp, arg: ExprId) {
        let k = self.k;
        let sp = k.exprs.span(e);
        let layout = self.tile_of(arg);
        let site = match legal::vote_site(layout) {
            Ok(site) => site,
            Err(m) => return self.unsupported(sp, m),
        };
        let value = self.elem(arg, site);
        let name = format!("vote{}", self.reduction_counter);
        self.reduction_counter += 1;
        let (init, combine, intrinsic) = match op {
            VoteOp::Any => ("false", "|=", "__any_sync"),
            VoteOp::All => ("true", "&=", "__all_sync"),
        };
        let elements = match layout {
            Some(FragLayout::WgmmaAcc { n }) => format!(
                "for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j)",
                n / 8
            ),
            Some(FragLayout::MmaAcc { m, n }) => format!(
                "for (int mt = 0; mt < {}; ++mt) for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j)",
                m / 16,
                n / 8
            ),
            _ => "for (int h = 0; h < 2; ++h)".into(),
        };
        self.line(&format!(
            "bool {name} = {init};  // lm.{}: one answer per warp ({})",
            op.name(),
            self.loc(sp)
        ));
        self.line("#pragma unroll");
        self.line(&format!("{elements} {name} {combine} ({value});"));
        self.line(&format!("{name} = {intrinsic}(0xffffffffu, {name});"));
        self.votes.insert(e, name);
    }

    /// A fresh reduction: its value and index arrays, and how its operator compares, starts
    /// and is named in comments.
    /// `index`: whether the pass also tracks the column (an arg-reduction uses it).
    fn reduction_pass(&mut self, op: ReduceOp, index: bool) -> Pass {
        let id = self.reduction_counter;
        self.reduction_counter += 1;
        let (better, init, combine) = match op {
            ReduceOp::Min | ReduceOp::ArgMin => ("<", "__int_as_float(0x7f800000)", "min"),
            ReduceOp::Max | ReduceOp::ArgMax => (">", "__int_as_float(0xff800000)", "max"),
            ReduceOp::Sum => ("", "0.0f", "sum"),
        };
        Pass {
            id,
            vname: format!("red{id}_v"),
            iname: format!("red{id}_i"),
            index,
            better,
            init,
            combine,
        }
    }

    /// A row reduction of a wgmma-layout tile of `layout` columns: both rows of the thread in one
    /// pass over its columns, then combined across the four threads of its quad.
    fn quad_reduction(
        &mut self,
        e: ExprId,
        pass: &Pass,
        op: ReduceOp,
        arg: ExprId,
        layout: u32,
        packed: bool,
    ) {
        let k = self.k;
        let Pass {
            id,
            ref vname,
            ref iname,
            index,
            better,
            init,
            combine,
        } = *pass;
        let mut loads = Vec::new();
        self.column_loads(arg, &mut loads);
        // A thread holds layout/4 columns of each of its rows: that many slots to pack.
        let mask = packed_slot_mask(layout / 4);
        let packed = packed && index;
        let how = if packed {
            ", packed (value, column) keys"
        } else if index {
            ", with its column"
        } else {
            ""
        };
        // The pass's temporaries are named after it: two reductions in one block must not
        // declare the same names.
        let (bv, bi) = (format!("red{id}_bv"), format!("red{id}_bi"));
        if index {
            // An arg-reduction whose value nothing reads (an argmin alone) still sets it:
            // `maybe_unused` keeps nvcc from warning about the value array.
            self.line(&format!(
                "[[maybe_unused]] float {vname}[2]; int {iname}[2];  // row {combine} over {layout} columns{how} ({})",
                self.loc(k.exprs.span(e))
            ));
            // Both rows of the thread in one pass over its columns, so each column's operands
            // (e.g. a per-column vector load) are fetched once.
            self.line(&format!(
                "float {bv}[2] = {{{init}, {init}}}; int {bi}[2] = {{0, 0}};"
            ));
        } else {
            self.line(&format!(
                "float {vname}[2];  // row {combine} over {layout} columns ({})",
                self.loc(k.exprs.span(e))
            ));
            self.line(&format!("float {bv}[2] = {{{init}, {init}}};"));
        }
        let element = if op == ReduceOp::Sum {
            format!("{bv}[h] += v;")
        } else if !index {
            format!("{bv}[h] = f{combine}f({bv}[h], v);")
        } else if packed {
            // The thread's column slot 2i + j replaces the value's low mantissa bits: one
            // LOP3 and one FMNMX per element instead of FSETP and two SELs (the ALU pipe is the
            // limit of an argmin epilogue). ptxas folds a constant mask into an immediate, and
            // LOP3 takes one immediate, so the mask is a value it cannot fold (blockDim.x >> 31
            // is 0). An infinite value becomes a NaN key, which fminf/fmaxf skip, so it never
            // wins — as with the exact compare.
            self.line(&format!(
                "const int red{id}_keymask = ~{mask} | ((int)blockDim.x >> 31);"
            ));
            format!(
                "{bv}[h] = f{combine}f({bv}[h], __int_as_float((__float_as_int(v) & red{id}_keymask) | (2 * i + j)));"
            )
        } else {
            format!("if (v {better} {bv}[h]) {{ {bv}[h] = v; {bi}[h] = 8 * i + j; }}")
        };
        self.reduction_columns(id, arg, layout, &loads, &element);
        // The four threads of a quad hold the same two rows: combine across them.
        self.unrolled("for (int h = 0; h < 2; ++h) {", |e| {
            if packed {
                // Unpack: the slot gives the column, the value keeps its truncated bits.
                e.line(&format!(
                    "{{ const int slot = __float_as_int({bv}[h]) & {mask}; {bi}[h] = 8 * (slot >> 1) + (slot & 1); {bv}[h] = __int_as_float(__float_as_int({bv}[h]) & ~{mask}); }}"
                ));
            }
            // The column offset of this thread is added once, not per element: inside the
            // unrolled loop the index stays a constant.
            if index {
                e.line(&format!("{bi}[h] += lane_col;"));
            }
            e.unrolled("for (int off = 1; off < 4; off <<= 1) {", |e| {
                e.line(&format!(
                    "const float ov = __shfl_xor_sync(0xffffffffu, {bv}[h], off);"
                ));
                if op == ReduceOp::Sum {
                    e.line(&format!("{bv}[h] += ov;"));
                } else if !index {
                    e.line(&format!("{bv}[h] = f{combine}f({bv}[h], ov);"));
                } else {
                    e.line(&format!(
                        "const int oi = __shfl_xor_sync(0xffffffffu, {bi}[h], off);"
                    ));
                    e.line(&format!("if (ov {better} {bv}[h] || (ov == {bv}[h] && oi < {bi}[h])) {{ {bv}[h] = ov; {bi}[h] = oi; }}"));
                }
            });
            if index {
                e.line(&format!("{vname}[h] = {bv}[h]; {iname}[h] = {bi}[h];"));
            } else {
                e.line(&format!("{vname}[h] = {bv}[h];"));
            }
        });
    }

    /// A row reduction (axis 1) of a one-row-per-thread tile: the thread owns its whole row, so
    /// it is a loop over the row's columns, with no exchange between threads. Ties of arg-min /
    /// arg-max keep the lowest column.
    ///
    /// `packed` is a permission, not an obligation: here the exact compare is kept (the key's
    /// cost is in the ALU-bound quad layout of wgmma, not measured for TMEM rows).
    fn lane_reduction(&mut self, e: ExprId, pass: &Pass, op: ReduceOp, arg: ExprId, n: u32) {
        let k = self.k;
        let Pass {
            ref vname,
            ref iname,
            index,
            better,
            init,
            combine,
            ..
        } = *pass;
        let value = self.elem(arg, Site::Lane);
        let decl = if index {
            format!("[[maybe_unused]] float {vname}[1] = {{{init}}}; int {iname}[1] = {{0}};")
        } else {
            format!("float {vname}[1] = {{{init}}};")
        };
        self.line(&format!(
            "{decl}  // row {combine} over {n} columns, one row per thread ({})",
            self.loc(k.exprs.span(e))
        ));
        self.unrolled(&format!("for (int c = 0; c < {n}; ++c) {{"), |e| {
            e.line(&format!("const float v = {value};"));
            if op == ReduceOp::Sum {
                e.line(&format!("{vname}[0] += v;"));
            } else if !index {
                e.line(&format!("{vname}[0] = f{combine}f({vname}[0], v);"));
            } else {
                e.line(&format!(
                    "if (v {better} {vname}[0]) {{ {vname}[0] = v; {iname}[0] = c; }}"
                ));
            }
        });
        if index {
            self.line(&format!("(void){iname};"));
        }
    }

    /// One pass of a row reduction over the thread's columns of a `layout`-column tile, both
    /// rows at once, applying `element` to each value `v`.
    pub(crate) fn reduction_columns(
        &mut self,
        id: u32,
        arg: ExprId,
        layout: u32,
        loads: &[ExprId],
        element: &str,
    ) {
        self.unrolled(
            &format!("for (int i = 0; i < {}; ++i) {{", layout / 8),
            |e| {
                e.unrolled("for (int j = 0; j < 2; ++j) {", |e| {
                    // Per-column operands do not depend on the row: load each once for both rows.
                    for (n, l) in loads.iter().enumerate() {
                        let code = match e.prefetched.get(l) {
                            Some(array) => format!("{array}[i][j]"),
                            None => e.elem(*l, Site::Tile),
                        };
                        let name = format!("col{id}_{n}");
                        e.line(&format!("const float {name} = {code};"));
                        e.col_loads.insert(*l, name);
                    }
                    let value = e.elem(arg, Site::Tile);
                    e.col_loads.clear();
                    e.unrolled("for (int h = 0; h < 2; ++h) {", |e| {
                        e.line(&format!("const float v = {value};"));
                        e.line(element);
                    });
                })
            },
        );
    }

    /// Issue the per-column vector loads of this loop body's row reductions into registers
    /// ahead of the reductions (where: `plain_range_loop`), so their latency overlaps the MMA:
    /// the wgmma wait before the reduction is an asm barrier that nothing moves across, so
    /// loads written after it would wait out their whole latency there. Only loads of tensors
    /// the kernel never writes, in the current role's statements. The caller restores
    /// `prefetched` after the body (the arrays live in its scope).
    pub(crate) fn prefetch_column_loads(&mut self, body: &[StmtId]) {
        if !self.in_role_region() {
            return;
        }
        let k = self.k;
        let loads = self.loads_to_prefetch(self.kf, body, &|l| self.prefetched.contains_key(&l));
        for (l, n) in loads {
            let ExprKind::Load {
                tensor,
                ref coords,
                fill,
                ..
            } = k.exprs[l].kind
            else {
                continue;
            };
            let array = format!("pre{}", self.reduction_counter);
            self.reduction_counter += 1;
            self.line(&format!(
                    "float {array}[{}][2];  // lm.load({}) for this iteration's row reductions, issued early ({})",
                    n / 8,
                    k.params[tensor].name,
                    self.loc(k.exprs.span(l))
                ));
            // The thread's first column's address and the columns left from it, once: each
            // element is then a compare with a constant and a load at a constant offset.
            // Measured on k-means assign (bench/results/2026-12-03-lowering-loads/): the
            // per-element address of 7c9dcd9 (9 instructions a column) 4.2 % slower over 72
            // points; a branch that skips the compares on whole tiles 2 % slower than this,
            // 5-7 % on some schedules.
            let ParamKind::Tensor { dims, .. } = k.params[tensor].kind.clone() else {
                continue;
            };
            // What cannot be lowered in the load is reported here, as it would be inline.
            let mut problems = Vec::new();
            self.elem_problems(l, Site::Tile, &mut problems);
            self.report(problems);
            let last = dims.len() - 1;
            let c0 = self.ix_text(coords[last]);
            let extent = self.extent_text(&dims[last]);
            let first = self.offset_text(&dims, coords, last, &format!("({c0} + lane_col)"));
            let tname = c_ident(&k.params[tensor].name);
            self.line(&format!("const auto* {array}_at = {tname} + {first};"));
            self.line(&format!(
                "const int {array}_left = {extent} - ({c0} + lane_col);"
            ));
            let fill = Self::float_lit(fill);
            self.unrolled(&format!("for (int i = 0; i < {}; ++i) {{", n / 8), |e| {
                e.line("#pragma unroll");
                e.line(&format!(
                    "for (int j = 0; j < 2; ++j) {array}[i][j] = 8 * i + j < {array}_left ? __ldg({array}_at + 8 * i + j) : {fill};"
                ));
            });
            self.prefetched.insert(l, array);
        }
    }

    /// Forget cached reductions that read `f` (it is about to change) — or all of them.
    pub(crate) fn invalidate_reductions(&mut self, f: Option<FragId>) {
        self.reductions.invalidate(self.k, f);
    }
}

/// The low-bit mask that holds a column slot in a packed (value, column) key when a thread
/// ranks `slots` columns of a row: ⌈log2 slots⌉ bits of the value's mantissa.
pub(crate) fn packed_slot_mask(slots: u32) -> u32 {
    slots.max(1).next_power_of_two() - 1
}

/// The arrays and operator text of one row reduction (see `reduction_pass`).
pub(crate) struct Pass {
    id: u32,
    pub(crate) vname: String,
    iname: String,
    /// Whether the column is tracked (min/argmin, max/argmax); a plain min, max or sum does not.
    index: bool,
    better: &'static str,
    pub(crate) init: &'static str,
    pub(crate) combine: &'static str,
}
