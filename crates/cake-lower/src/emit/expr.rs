//! Expressions: index arithmetic (`ix`), register values evaluated at one element of a
//! fragment layout (`elem`), and `frag[:] = value` in each layout.

use super::*;

impl Emitter<'_> {
    /// Index expression `e` as C. What it cannot evaluate (`Scope::scalar_problems`) is
    /// recorded.
    pub(crate) fn ix(&mut self, e: ExprId) -> String {
        let mut problems = Vec::new();
        self.scalar_problems(e, &mut problems);
        self.report(problems);
        self.ix_text(e)
    }

    pub(crate) fn ix_text(&self, e: ExprId) -> String {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Float(f) => format!("{f:?}f"),
            ExprKind::Dim(d) => format!("dim_{}", c_ident_stem(&k.dims[*d].name)),
            ExprKind::Scalar(p) => c_ident(&k.params[*p].name),
            ExprKind::LoopVar(l) => {
                format!("{}_{}", c_ident_stem(&k.loops[*l].var_name), l.index())
            }
            ExprKind::TileCoord { axis, .. } => format!("tile_{axis}"),
            ExprKind::RoleIndex(r) => format!("{}_index", c_ident(&k.roles[*r].name)),
            ExprKind::PipelineStage(p) => self.pipe_var(*p, "stage"),
            ExprKind::Binary(op, a, b) => {
                let (x, y) = (self.ix_text(*a), self.ix_text(*b));
                floor_division(k, *op, *a, *b, &x, &y)
                    .unwrap_or_else(|| c_binary(*op, &x, &y, false))
            }
            ExprKind::Cmp(op, a, b) => {
                let sym = op.symbol();
                format!("({} {} {})", self.ix_text(*a), sym, self.ix_text(*b))
            }
            ExprKind::Unary(UnOp::Neg, a) => format!("(-{})", self.ix_text(*a)),
            ExprKind::Unary(UnOp::Not, a) => format!("(!{})", self.ix_text(*a)),
            ExprKind::Vote { .. } => self.votes.get(&e).cloned().unwrap_or("false".into()),
            // Not lowered (`scalar_problems` records it).
            _ => "0".into(),
        }
    }

    /// The C array of a fragment (the current buffer of a double-buffered one).
    pub(crate) fn frag_name(&self, f: FragId) -> String {
        self.frag_alias
            .get(&f)
            .cloned()
            .unwrap_or_else(|| c_ident(&self.k.fragments[f].name))
    }

    pub(crate) fn float_lit(v: f64) -> String {
        if v.is_infinite() {
            if v > 0.0 {
                "__int_as_float(0x7f800000)".into()
            } else {
                "__int_as_float(0xff800000)".into()
            }
        } else {
            format!("{v:?}f")
        }
    }

    /// One element of a register expression, at `site` (loop variables i, h, j in scope).
    /// What it cannot evaluate (`Scope::elem_problems`) is recorded.
    pub(crate) fn elem(&mut self, e: ExprId, site: Site) -> String {
        let mut problems = Vec::new();
        self.elem_problems(e, site, &mut problems);
        // As the legality pass does (`legal::walk`): a `view.load` outside a wgmma accumulator
        // tile (or one value per row of one) would be addressed in that layout.
        self.view_load_problems(e, site, &mut problems);
        self.report(problems);
        if self.k.expr_any(e, |x| {
            matches!(x, ExprKind::Unary(UnOp::Exp2 | UnOp::Exp2Ftz, _))
        }) {
            self.needs_ex2 = true;
        }
        if self
            .k
            .expr_any(e, |x| matches!(x, ExprKind::ViewLoad { .. }))
        {
            self.needs_shared_ops = true;
        }
        self.elem_text(e, site)
    }

    /// Read every peer tile (`view.load(cta=r)`) that `value` uses into registers, in one
    /// unrolled loop before the statement's own, and have `elem` read them from there. Each
    /// remote load is an asm statement the compiler keeps in order with the global stores
    /// around it, so loaded element by element inside the statement each pair of elements
    /// waited out a round trip through distributed shared memory (64 per thread for a
    /// 64 × 128 split-K tile); issued together they overlap. Returns the previous map, to
    /// restore once the statement is emitted (the arrays live in its scope).
    pub(crate) fn prefetch_peer_tiles(&mut self, value: ExprId) -> HashMap<ExprId, String> {
        let saved = self.peer_loads.clone();
        let k = self.k;
        // Elsewhere `view.load` is refused (`view_load_problems`, by `elem`).
        if !matches!(self.tile_of(value), Some(FragLayout::WgmmaAcc { .. })) {
            return saved;
        }
        let mut peers = Vec::new();
        k.visit_expr(value, |x, kind| {
            if matches!(kind, ExprKind::ViewLoad { cta: Some(_), .. }) {
                peers.push(x);
            }
            true
        });
        for e in peers {
            let ExprKind::ViewLoad {
                view,
                cta: Some(cta),
            } = &k.exprs[e].kind
            else {
                continue;
            };
            let cols = k.views[view.view].shape.get(1).copied().unwrap_or(1);
            let array = format!("peer{}", self.reduction_counter);
            self.reduction_counter += 1;
            // A column pair is 8 contiguous bytes in every f32 view layout: one remote load.
            let at = self.view_load_at(view, "lane_col + 8 * i");
            let cta = self.ix_text(*cta);
            self.line(&format!(
                "float {array}[{}];  // {}.load(cta=...): every element in flight before the first is used ({})",
                cols / 2,
                k.views[view.view].name,
                self.loc(k.exprs.span(e))
            ));
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) cake_ld_cluster_v2_f32({at}, (uint32_t)({cta}), {array}[4 * i + 2 * h], {array}[4 * i + 2 * h + 1]);",
                cols / 8
            ));
            self.peer_loads.insert(e, array);
        }
        saved
    }

    /// The shared-memory address of this thread's element at column `col` (row `lane_row + 8 *
    /// h`, in the accumulator layout) of the f32 tile `view.load` reads.
    fn view_load_at(&self, view: &ViewRef, col: &str) -> String {
        let decl = &self.k.views[view.view];
        let cols = decl.shape.get(1).copied().unwrap_or(1);
        let rows = decl.shape.first().copied().unwrap_or(1);
        let base = self.view_base_text(&ViewRef {
            rows: None,
            ..view.clone()
        });
        let row0 = match view.rows {
            Some((start, _)) => self.ix_text(start),
            None => "0".into(),
        };
        let row = format!("({row0}) + lane_row + 8 * h");
        let offset = legal::f32_view_offset(decl.swizzle, rows, cols, &row, col);
        format!("{base} + {offset}")
    }

    /// `elem` without the checks: what is not lowered reads as 0.
    fn elem_text(&self, e: ExprId, site: Site) -> String {
        let k = self.k;
        if k.exprs[e].ty == Ty::Index || k.exprs[e].ty == Ty::Bool {
            return self.ix_text(e);
        }
        if let Some(text) = self.row_loads.get(&e) {
            return text.clone();
        }
        match &k.exprs[e].kind {
            ExprKind::Frag(f) => {
                let name = self.frag_name(*f);
                match (self.frag_layouts.get(f).copied(), site) {
                    (Some(FragLayout::RowTile(g)), Site::Row(_)) => {
                        format!("{name}[(r * {} + c) * {} + v]", g.cpt(), legal::ROW_CHUNK)
                    }
                    (Some(FragLayout::RowVals(_)), Site::Row(_) | Site::RowVal(_)) => {
                        format!("{name}[r]")
                    }
                    (Some(FragLayout::WgmmaAcc { .. }), Site::Tile) => {
                        format!("{name}[4 * i + 2 * h + j]")
                    }
                    (Some(FragLayout::MmaAcc { n, .. }), Site::Tile) => {
                        format!("{name}[4 * (mt * {} + i) + 2 * h + j]", n / 8)
                    }
                    (Some(FragLayout::AccRows), _) => format!("{name}[h]"),
                    (Some(FragLayout::TmemRow { .. }), Site::Lane) => format!("{name}[c]"),
                    (Some(FragLayout::LaneScalar), _) => format!("{name}[0]"),
                    _ => "0".into(),
                }
            }
            ExprKind::Int(v) => format!("{v}"),
            ExprKind::Float(v) => Self::float_lit(*v),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Scalar(p) => c_ident(&k.params[*p].name),
            ExprKind::Cast(d, a) => {
                let inner = self.elem_text(*a, site);
                match d {
                    DType::F32 => format!("static_cast<float>({inner})"),
                    DType::I32 => format!("static_cast<int32_t>({inner})"),
                    _ => inner,
                }
            }
            ExprKind::Binary(op, a, b) => {
                let float = matches!(&k.exprs[e].ty, Ty::Frag { dtype, .. } | Ty::Scalar(dtype) if dtype.is_float());
                let (x, y) = (self.elem_text(*a, site), self.elem_text(*b, site));
                let floored = (!float)
                    .then(|| floor_division(k, *op, *a, *b, &x, &y))
                    .flatten();
                floored.unwrap_or_else(|| c_binary(*op, &x, &y, float))
            }
            ExprKind::Cmp(op, a, b) => {
                let sym = op.symbol();
                format!(
                    "({} {sym} {})",
                    self.elem_text(*a, site),
                    self.elem_text(*b, site)
                )
            }
            ExprKind::Select(c, a, b) => format!(
                "({} ? {} : {})",
                self.elem_text(*c, site),
                self.elem_text(*a, site),
                self.elem_text(*b, site)
            ),
            ExprKind::Unary(op, a) => {
                let a = self.elem_text(*a, site);
                match op {
                    UnOp::Neg => format!("(-{a})"),
                    UnOp::Exp2 => format!("cake_ex2({a})"),
                    UnOp::Exp2Ftz => format!("cake_ex2_ftz({a})"),
                    UnOp::Log2 => format!("log2f({a})"),
                    UnOp::Sqrt => format!("sqrtf({a})"),
                    UnOp::Rsqrt => format!("rsqrtf({a})"),
                    UnOp::Abs => format!("fabsf({a})"),
                    UnOp::Not => format!("(!{a})"),
                }
            }
            // Row-layout broadcasts: a per-row value along the columns, a per-column vector
            // along the rows.
            ExprKind::Expand { arg, axis } if matches!(site, Site::Row(_)) => {
                let Site::Row(g) = site else { unreachable!() };
                let inner = if *axis == 1 {
                    Site::RowVal(g)
                } else {
                    Site::RowCol(g)
                };
                self.elem_text(*arg, inner)
            }
            // A per-row value broadcast along the columns, read at the row of this site.
            ExprKind::Expand { arg, axis: 1 } if site == Site::Lane => self.elem_text(*arg, site),
            ExprKind::Expand { arg, axis: 1 } => self.elem_text(*arg, Site::Rows),
            // A per-column vector broadcast along the rows.
            ExprKind::Expand { arg, axis: 0 } => self.elem_text(*arg, site),
            ExprKind::Reduce { .. } => match self.reductions.get(e) {
                Some(name) if site == Site::Lane => format!("{name}[0]"),
                Some(name) if matches!(site, Site::Row(_) | Site::RowVal(_)) => {
                    format!("{name}[r]")
                }
                Some(name) => format!("{name}[h]"),
                None => "0".into(),
            },
            ExprKind::Iota { shape, axis } => match legal::iota_index(shape, *axis, site) {
                Ok(which) => self.iota_text(which, site),
                Err(_) => "0".into(),
            },
            ExprKind::Load { .. } if self.col_loads.contains_key(&e) => self.col_loads[&e].clone(),
            ExprKind::Load {
                tensor,
                coords,
                shape,
                fill,
                ..
            } if shape.is_empty() => self.scalar_load_text(*tensor, coords, *fill),
            ExprKind::Load {
                tensor,
                coords,
                shape,
                fill,
                ..
            } if shape.len() == 1 && matches!(site, Site::Tile | Site::Rows) => {
                // A vector along the tile's columns (this thread's column of it) or, broadcast
                // with `[:, None]`, along its rows (this thread's row).
                let index = if site == Site::Rows {
                    self.iota_text(legal::IotaIndex::Row, site)
                } else {
                    "(lane_col + 8 * i + j)".into()
                };
                self.vector_load_text(*tensor, coords, *fill, &index)
            }
            // This thread's element of a row-major f32 tile in shared memory (a peer CTA's
            // copy through the cluster's shared-memory window with `cta`).
            ExprKind::ViewLoad { .. } if site == Site::Tile && self.peer_loads.contains_key(&e) => {
                format!("{}[4 * i + 2 * h + j]", self.peer_loads[&e])
            }
            // This thread's rows of a 1-D view of one value per row (a peer CTA's with `cta`).
            ExprKind::ViewLoad { view, cta } if site == Site::Rows => {
                let decl = &k.views[view.view];
                let base = self.view_base_text(&ViewRef {
                    rows: None,
                    ..view.clone()
                });
                let row0 = match view.rows {
                    Some((start, _)) => self.ix_text(start),
                    None => "0".into(),
                };
                let at = format!("{base} + 4 * (({row0}) + lane_row + 8 * h)");
                let suffix = if decl.dtype == DType::I32 {
                    "s32"
                } else {
                    "f32"
                };
                match cta {
                    Some(c) => format!(
                        "cake_ld_cluster_{suffix}({at}, (uint32_t)({}))",
                        self.ix_text(*c)
                    ),
                    None => format!("cake_ld_shared_{suffix}({at})"),
                }
            }
            ExprKind::ViewLoad { view, cta } if site == Site::Tile => {
                let at = self.view_load_at(view, "lane_col + 8 * i + j");
                match cta {
                    Some(c) => format!(
                        "cake_ld_cluster_f32({at}, (uint32_t)({}))",
                        self.ix_text(*c)
                    ),
                    None => format!("cake_ld_shared_f32({at})"),
                }
            }
            // Not lowered (`elem_problems` records it).
            _ => "0".into(),
        }
    }

    /// The row or column (within the tile) of the element `site` evaluates.
    fn iota_text(&self, which: legal::IotaIndex, site: Site) -> String {
        let row = which == legal::IotaIndex::Row;
        let thread = || {
            let (role, _) = self.role.expect("role");
            format!("{}_thread", c_ident(&self.k.roles[role].name))
        };
        let mma_sync = self.target.mma == cake_target::MmaFamily::MmaSync;
        match site {
            Site::Tile | Site::Rows if row && mma_sync => "(16 * mt + lane_row + 8 * h)".into(),
            Site::Tile | Site::Rows if row => "(lane_row + 8 * h)".into(),
            Site::Tile => "(lane_col + 8 * i + j)".into(),
            Site::Lane if row => thread(),
            Site::Lane => "c".into(),
            Site::Row(g) | Site::RowVal(g) if row => self.row_text(g).0,
            Site::Row(_) | Site::RowCol(_) | Site::RowVal(_) | Site::Rows => "(lc + v)".into(),
        }
    }

    /// A one-element `lm.load` (`shape=()`): every coordinate checked against its extent, `fill`
    /// outside; every thread reads the same address, which the L1 broadcasts.
    fn scalar_load_text(&self, tensor: ParamId, coords: &[ExprId], fill: f64) -> String {
        let k = self.k;
        let ParamKind::Tensor { dims, .. } = k.params[tensor].kind.clone() else {
            return "0".into();
        };
        let last = dims.len() - 1;
        let inside: Vec<String> = coords
            .iter()
            .zip(&dims)
            .map(|(c, d)| {
                let c = self.ix_text(*c);
                format!("({c}) >= 0 && ({c}) < {}", self.extent_text(d))
            })
            .collect();
        let offset = self.offset_text(&dims, coords, last, &self.ix_text(coords[last]));
        format!(
            "(({}) ? __ldg({} + {offset}) : {})",
            inside.join(" && "),
            c_ident(&k.params[tensor].name),
            Self::float_lit(fill)
        )
    }

    /// Element `index` (a C expression, offset from the last coordinate) of a 1-D `lm.load`
    /// along a tensor's innermost axis, `fill` past its extent.
    fn vector_load_text(
        &self,
        tensor: ParamId,
        coords: &[ExprId],
        fill: f64,
        index: &str,
    ) -> String {
        let k = self.k;
        let ParamKind::Tensor { dims, .. } = k.params[tensor].kind.clone() else {
            return "0".into();
        };
        let last = dims.len() - 1;
        let extent = self.extent_text(&dims[last]);
        let c0 = self.ix_text(coords[last]);
        let at = format!("({c0} + {index})");
        let offset = self.offset_text(&dims, coords, last, &at);
        format!(
            "({at} < {extent} ? __ldg({} + {offset}) : {})",
            c_ident(&k.params[tensor].name),
            Self::float_lit(fill)
        )
    }

    pub(crate) fn extent_text(&self, d: &Extent) -> String {
        match d {
            Extent::Fixed(v) => v.to_string(),
            Extent::Sym(s) => format!("dim_{}", c_ident_stem(&self.k.dims[*s].name)),
        }
    }

    /// Row-major element offset of `coords` in a tensor with `dims`, with coordinate `axis`
    /// replaced by `at`.
    pub(crate) fn linear_offset(
        &mut self,
        dims: &[Extent],
        coords: &[ExprId],
        axis: usize,
        at: &str,
    ) -> String {
        for (i, c) in coords.iter().enumerate().take(dims.len()) {
            if i != axis {
                self.ix(*c);
            }
        }
        self.offset_text(dims, coords, axis, at)
    }

    pub(crate) fn offset_text(
        &self,
        dims: &[Extent],
        coords: &[ExprId],
        axis: usize,
        at: &str,
    ) -> String {
        let at: Vec<String> = (0..dims.len())
            .map(|i| {
                if i == axis {
                    at.to_string()
                } else {
                    self.ix_text(coords[i])
                }
            })
            .collect();
        self.offset_of(dims, &at)
    }

    /// Row-major element offset of the coordinates `at` (C text, one per axis of `dims`).
    pub(crate) fn offset_of(&self, dims: &[Extent], at: &[String]) -> String {
        let mut off = String::new();
        for (d, c) in dims.iter().zip(at) {
            off = if off.is_empty() {
                format!("(size_t)({c})")
            } else {
                format!("({off} * {} + ({c}))", self.extent_text(d))
            };
        }
        off
    }

    /// `frag[:] = value`, element by element in the fragment's layout.
    pub(crate) fn assign(&mut self, dst: FragId, value: ExprId, sp: Span) {
        let k = self.k;
        // The current buffer of a double-buffered fragment.
        let name = self.frag_name(dst);
        self.precompute_reductions(value);
        let ty = storage_type(k.fragments[dst].dtype);
        let header = format!(
            "#pragma unroll  // {} <- ... ({})",
            k.fragments[dst].name,
            self.loc(sp)
        );
        let layout = match legal::assign_layout(k, dst, self.layout(dst)) {
            Ok(l) => l,
            Err(m) => {
                self.unsupported(sp, m);
                self.invalidate_reductions(Some(dst));
                return;
            }
        };
        match layout {
            FragLayout::AccRows => {
                let v = self.elem(value, Site::Rows);
                self.line(&header);
                self.line(&format!(
                    "for (int h = 0; h < 2; ++h) {name}[h] = ({ty})({v});"
                ));
            }
            FragLayout::WgmmaAcc { n } => {
                let saved = self.prefetch_peer_tiles(value);
                let v = self.elem(value, Site::Tile);
                self.line(&header);
                self.line(&format!(
                    "for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j) {name}[4 * i + 2 * h + j] = ({ty})({v});",
                    n / 8
                ));
                self.peer_loads = saved;
            }
            FragLayout::WgmmaA { k: kdim } => {
                // A cast to 16 bits of an accumulator-layout tile of the same width: element
                // pairs (j = 0, 1) pack into one register, 2i + h.
                let (inner, pack) =
                    match legal::wgmma_a_value(k, dst, value, kdim, |e| self.tile_of(e)) {
                        Ok((inner, d)) => (inner, pack_fn(d)),
                        Err(m) => return self.unsupported(sp, m),
                    };
                let v = self.elem(inner, Site::Tile);
                self.line(&header);
                self.line(&format!(
                    "for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) {{ float e[2]; for (int j = 0; j < 2; ++j) e[j] = {v}; {name}[2 * i + h] = {pack}(e[0], e[1]); }}",
                    kdim / 8
                ));
            }
            FragLayout::MmaAcc { m, n } => {
                let v = self.elem(value, Site::Tile);
                self.line(&header);
                self.line(&format!(
                    "for (int mt = 0; mt < {}; ++mt) for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j) {name}[4 * (mt * {} + i) + 2 * h + j] = ({ty})({v});",
                    m / 16,
                    n / 8,
                    n / 8
                ));
            }
            FragLayout::RowTile(_) | FragLayout::RowVals(_) => {
                self.assign_rows(&[(dst, value)], layout, sp)
            }
            FragLayout::TmemRow { n } => self.assign_lanes(dst, value, n, sp),
            FragLayout::LaneScalar => self.assign_lanes(dst, value, 1, sp),
            // `assign_layout` refuses them.
            FragLayout::MmaA { .. } | FragLayout::MmaB { .. } => {}
        }
        self.invalidate_reductions(Some(dst));
    }

    /// `a[:], b[:] = x, y`: row-layout tiles of one geometry, assigned in one loop nest.
    pub(crate) fn assign_many(&mut self, pairs: &[(FragId, ExprId)], sp: Span) {
        let layout = legal::assign_many_layout(self.k, pairs, |f| self.layout(f));
        if let Ok(FragLayout::RowVals(_)) = layout {
            let values: Vec<ExprId> = pairs.iter().map(|(_, v)| *v).collect();
            self.fuse_row_reductions(&values);
        }
        for (_, value) in pairs {
            self.precompute_reductions(*value);
        }
        match layout {
            Ok(layout) => self.assign_rows(pairs, layout, sp),
            Err(m) => self.unsupported(sp, m),
        }
        for (dst, _) in pairs {
            self.invalidate_reductions(Some(*dst));
        }
    }

    /// `frag[:] = value` for a one-row-per-thread tile (`n` columns) or a per-row value (`n` = 1).
    pub(crate) fn assign_lanes(&mut self, dst: FragId, value: ExprId, n: u32, sp: Span) {
        let k = self.k;
        if let Err(m) = legal::lanes_value(self.row_elementwise(value)) {
            return self.unsupported(sp, m);
        }
        self.precompute_reductions(value);
        let name = self.frag_name(dst);
        let ty = storage_type(k.fragments[dst].dtype);
        let v = self.elem(value, Site::Lane);
        self.line(&format!(
            "#pragma unroll  // {} <- ... ({})",
            k.fragments[dst].name,
            self.loc(sp)
        ));
        self.line(&format!(
            "for (int c = 0; c < {n}; ++c) {name}[c] = ({ty})({v});"
        ));
        self.invalidate_reductions(Some(dst));
    }
}

/// Integer `//`, `%` and `lm.cdiv` of `a` and `b` (as C text `x`, `y`) with Python's floor
/// semantics, where C's truncating forms could differ (either operand not shown non-negative:
/// [`cake_ir::bounds`]); `None` where `c_binary` is exact.
fn floor_division(k: &Kernel, op: BinOp, a: ExprId, b: ExprId, x: &str, y: &str) -> Option<String> {
    if !matches!(op, BinOp::FloorDiv | BinOp::Mod | BinOp::CeilDiv)
        || cake_ir::bounds::c_division_floors(k, a, b)
    {
        return None;
    }
    Some(match op {
        BinOp::FloorDiv => format!("cake_floordiv({x}, {y})"),
        BinOp::Mod => format!("cake_floormod({x}, {y})"),
        _ => format!("(-cake_floordiv(-({x}), {y}))"),
    })
}

/// A binary operation in CUDA C++: `float` picks the float forms of `//`, `%`, min and max.
pub(crate) fn c_binary(op: BinOp, a: &str, b: &str, float: bool) -> String {
    match op {
        BinOp::Add => format!("({a} + {b})"),
        BinOp::Sub => format!("({a} - {b})"),
        BinOp::Mul => format!("({a} * {b})"),
        // Python's float `//` and `%` floor (the index forms: `floor_division`).
        BinOp::FloorDiv if float => format!("floorf({a} / {b})"),
        BinOp::Mod if float => format!("cake_floormodf({a}, {b})"),
        BinOp::Div | BinOp::FloorDiv => format!("({a} / {b})"),
        BinOp::Mod => format!("({a} % {b})"),
        BinOp::CeilDiv => format!("cake_cdiv({a}, {b})"),
        BinOp::Min if float => format!("fminf({a}, {b})"),
        BinOp::Max if float => format!("fmaxf({a}, {b})"),
        BinOp::Min => format!("min({a}, {b})"),
        BinOp::Max => format!("max({a}, {b})"),
        BinOp::And => format!("({a} && {b})"),
        BinOp::Or => format!("({a} || {b})"),
    }
}
