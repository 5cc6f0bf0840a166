//! The kernel's parameters (tensor maps, pointers, dimensions, scalars), the TMA boxes its
//! copies need, and the launch metadata a runtime reads.

use super::*;

impl Emitter<'_> {
    pub(crate) fn tma_box(&self, view: &View, rows: Option<u32>, rank: usize) -> Vec<u32> {
        // Innermost first: one swizzle panel wide, then the view's other extents (the row range
        // when the copy fills only `.rows(...)`), then 1s for the tensor's leading dimensions the
        // view does not cover.
        if view.shape.len() == 1 {
            // A 1-D view (or a range of it) is one box row.
            let mut b = vec![rows.unwrap_or(view.shape[0])];
            b.resize(rank.max(1), 1);
            return b;
        }
        let mut b = vec![view.panel_cols()];
        let outer = view.shape.len().saturating_sub(1);
        for (axis, d) in view.shape.iter().enumerate().rev().skip(1) {
            b.push(if axis == 0 && outer > 0 {
                rows.unwrap_or(*d)
            } else {
                *d
            });
        }
        while b.len() < rank {
            b.push(1);
        }
        b
    }

    pub(crate) fn collect_tensor_maps(&mut self) {
        let kf = self.kf;
        for op in kf.ops.iter().map(|s| &s.op) {
            let (v, t, multicast) = match &op {
                Op::TmaLoad {
                    dst,
                    src,
                    multicast,
                    ..
                } => (dst, *src, *multicast),
                Op::TmaStore { src, dst, .. } => (src, *dst, 1),
                _ => continue,
            };
            let view = &self.k.views[v.view];
            let rank = self.rank(t);
            let key = (
                t,
                self.tma_box(view, self.box_rows(v, multicast), rank),
                view.swizzle,
            );
            if !self.tmaps.contains(&key) {
                self.tmaps.push(key);
            }
        }
    }

    /// Rows of the box one TMA copy into `v` moves: the row range, or the view's rows, split
    /// over the CTAs a multicast load delivers to (each issues its share).
    pub(crate) fn box_rows(&self, v: &ViewRef, multicast: u32) -> Option<u32> {
        let rows = v.rows.map(|(_, n)| n);
        if multicast > 1 {
            let all = rows.unwrap_or(self.k.views[v.view].shape[0]);
            Some(all / multicast)
        } else {
            rows
        }
    }

    pub(crate) fn tmap_name(&self, p: ParamId, box_dims: &[u32], swizzle: u32) -> String {
        let i = self
            .tmaps
            .iter()
            .position(|(q, b, s)| *q == p && b == box_dims && *s == swizzle)
            .expect("collected");
        self.tmap_name_at(i)
    }

    /// The kernel parameter holding the `i`-th collected tensor map.
    pub(crate) fn tmap_name_at(&self, i: usize) -> String {
        format!(
            "tmap_{}_{}",
            c_ident(&self.k.params[self.tmaps[i].0].name),
            i
        )
    }

    pub(crate) fn rank(&self, p: ParamId) -> usize {
        legal::rank(self.k, p)
    }

    pub(crate) fn args(&self) -> Vec<Arg> {
        let mut args = Vec::new();
        for (p, b, s) in &self.tmaps {
            args.push(Arg::Tensormap {
                tensor: self.k.params[*p].name.clone(),
                box_dims: b.clone(),
                swizzle: *s,
                interleave: "none".into(),
                oob_fill: "zero".into(),
                l2_promotion: 256,
            });
        }
        for (_, p) in self.k.params.iter() {
            if let ParamKind::Tensor { .. } = p.kind {
                args.push(Arg::Ptr {
                    tensor: p.name.clone(),
                });
            }
        }
        for (_, d) in self.k.dims.iter() {
            args.push(Arg::Dim {
                name: d.name.clone(),
            });
        }
        for (_, p) in self.k.params.iter() {
            if let ParamKind::Scalar { .. } = p.kind {
                args.push(Arg::Scalar {
                    name: p.name.clone(),
                });
            }
        }
        if !self.state.is_empty() {
            args.push(Arg::State);
        }
        args
    }

    pub(crate) fn param_decl(&self, a: &Arg) -> String {
        match a {
            Arg::Tensormap {
                tensor,
                box_dims,
                swizzle,
                ..
            } => {
                let p = self
                    .k
                    .params
                    .iter()
                    .find(|(_, q)| &q.name == tensor)
                    .map(|(h, _)| h)
                    .expect("param");
                format!(
                    "const __grid_constant__ CakeTensorMap {}",
                    self.tmap_name(p, box_dims, *swizzle)
                )
            }
            Arg::Ptr { tensor } => {
                let (_, p) = self
                    .k
                    .params
                    .iter()
                    .find(|(_, q)| &q.name == tensor)
                    .expect("param");
                let ParamKind::Tensor { dtype, .. } = p.kind else {
                    unreachable!()
                };
                format!("{}* __restrict__ {}", storage_type(dtype), c_ident(tensor))
            }
            Arg::Dim { name } => format!("const int dim_{}", c_ident_stem(name)),
            Arg::Scalar { name } => {
                let (_, p) = self
                    .k
                    .params
                    .iter()
                    .find(|(_, q)| &q.name == name)
                    .expect("param");
                let ParamKind::Scalar { dtype } = p.kind else {
                    unreachable!()
                };
                format!("const {} {}", storage_type(dtype), c_ident(name))
            }
            Arg::State => "unsigned char* __restrict__ cake_state".into(),
        }
    }

    pub(crate) fn tile_counts(&self) -> Vec<ExprId> {
        legal::tile_counts(self.k)
    }

    pub(crate) fn launch_meta(&self, symbol: String, args: Vec<Arg>) -> LaunchMeta {
        let mut tiles: Vec<serde_json::Value> = self
            .tile_counts()
            .iter()
            .map(|e| self.json_expr(*e))
            .collect();
        let n = self.cluster_ctas();
        if let (true, Some(first)) = (n > 1, tiles.first_mut()) {
            // A cluster takes n tiles of axis 0 together: the grid counts whole clusters.
            *first = serde_json::json!(["mul", ["cdiv", first.take(), n], n]);
        }
        if let Some((steps, _, _)) = self.k.stream_k() {
            // Stream-K shares the tiles' K steps out: as many CTAs as steps, up to the SMs.
            tiles.push(self.json_expr(steps));
        }
        let grid = if self.k.persistent {
            Grid::Persistent { tiles }
        } else {
            Grid::Tiles { tiles }
        };
        let access = self.tensor_access();
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        for (pid, p) in self.k.params.iter() {
            match &p.kind {
                ParamKind::Tensor { dtype, dims } => {
                    let dims = dims
                        .iter()
                        .map(|d| match d {
                            Extent::Fixed(n) => serde_json::json!(n),
                            Extent::Sym(s) => serde_json::json!(self.k.dims[*s].name),
                        })
                        .collect();
                    let a = access.get(&pid).copied().unwrap_or_default();
                    let acc = match a {
                        (true, true) => "readwrite",
                        (false, true) => "write",
                        _ => "read",
                    };
                    tensors.push(TensorMeta {
                        name: p.name.clone(),
                        dtype: dtype.to_string(),
                        dims,
                        access: acc.into(),
                    });
                }
                ParamKind::Scalar { dtype } => scalars.push(ScalarMeta {
                    name: p.name.clone(),
                    dtype: dtype.to_string(),
                }),
            }
        }
        LaunchMeta {
            schema: "cake.launch/v0".into(),
            kernel: self.k.name.clone(),
            symbol,
            target: self.target.name.to_string(),
            cubin: format!("{}.cubin", crate::file_stem(&self.k.name)),
            block: [self.k.block_threads(), 1, 1],
            cluster: self.k.cluster,
            dynamic_smem: self.layout.total + SMEM_ALIGN_SLACK,
            grid,
            tensors,
            scalars,
            args,
            zero: self
                .k
                .zeroed
                .iter()
                .map(|p| self.k.params[*p].name.clone())
                .collect(),
            timeline: Some(super::timeline::timeline_meta(self.k)),
            state: self.state.meta(),
        }
    }

    /// Per tensor parameter: (read, written) by the kernel.
    pub(crate) fn tensor_access(&self) -> HashMap<ParamId, (bool, bool)> {
        legal::tensor_access(self.k, self.kf)
    }

    pub(crate) fn json_expr(&self, e: ExprId) -> serde_json::Value {
        let k = self.k;
        let bin = |op: &str, a: ExprId, b: ExprId| {
            serde_json::json!([op, self.json_expr(a), self.json_expr(b)])
        };
        match &k.exprs[e].kind {
            ExprKind::Int(v) => serde_json::json!(v),
            ExprKind::Dim(d) => serde_json::json!(k.dims[*d].name),
            ExprKind::Scalar(p) => serde_json::json!(k.params[*p].name),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Add => bin("add", *a, *b),
                BinOp::Sub => bin("sub", *a, *b),
                BinOp::Mul => bin("mul", *a, *b),
                BinOp::FloorDiv => bin("div", *a, *b),
                BinOp::Mod => bin("mod", *a, *b),
                BinOp::CeilDiv => bin("cdiv", *a, *b),
                BinOp::Min => bin("min", *a, *b),
                BinOp::Max => bin("max", *a, *b),
                _ => serde_json::Value::Null,
            },
            _ => serde_json::Value::Null,
        }
    }
}
