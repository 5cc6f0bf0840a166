//! Canonical text form of a kernel (`cake ir`). Deterministic: the same IR always prints the
//! same bytes, so golden files can pin the front-end's output.

use crate::kernel::*;
use std::fmt::Write;

pub fn print(k: &Kernel) -> String {
    let mut p = Printer {
        k,
        out: String::new(),
    };
    p.kernel();
    p.out
}

struct Printer<'a> {
    k: &'a Kernel,
    out: String,
}

fn list<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

impl Printer<'_> {
    fn line(&mut self, depth: usize, text: &str) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn kernel(&mut self) {
        let k = self.k;
        let head = format!(
            "kernel {} targets=[{}] grid={} cluster=({}, {}, {}) threads={}{}",
            k.name,
            k.targets.join(", "),
            if k.persistent { "persistent" } else { "tiles" },
            k.cluster[0],
            k.cluster[1],
            k.cluster[2],
            k.block_threads(),
            match k.ctas_per_sm() {
                1 => String::new(),
                n => format!(" ctas_per_sm={n}"),
            }
        );
        self.line(0, &head);
        for (id, p) in k.params.iter() {
            let text = match &p.kind {
                ParamKind::Tensor { dtype, dims } => format!(
                    "param {}: tensor<{}>[{}]",
                    p.name,
                    dtype,
                    list(dims, |d| match d {
                        Extent::Fixed(n) => n.to_string(),
                        Extent::Sym(s) => k.dims[*s].name.clone(),
                    })
                ),
                ParamKind::Scalar { dtype } => format!("param {}: {}", p.name, dtype),
            };
            let zeroed = if k.zeroed.contains(&id) {
                " zeroed"
            } else {
                ""
            };
            self.line(1, &format!("{text}{zeroed}"));
        }
        for (_, pool) in k.pools.iter() {
            let size = pool.size.map_or("auto".to_string(), |s| s.to_string());
            self.line(1, &format!("pool {} size={}", pool.name, size));
        }
        for (_, v) in k.views.iter() {
            let offset = v.offset.map_or("packed".to_string(), |o| o.to_string());
            let text = format!(
                "view {}: pool={} offset={} shape=[{}] dtype={} stages={} swizzle={}",
                v.name,
                k.pools[v.pool].name,
                offset,
                list(&v.shape, |d| d.to_string()),
                v.dtype,
                v.stages,
                v.swizzle
            );
            self.line(1, &text);
        }
        for (_, t) in k.tmems.iter() {
            let mut text = format!(
                "tmem {}: cols={} lanes={} shape=[{}] dtype={}",
                t.name,
                t.cols,
                t.lanes,
                list(&t.shape, |d| d.to_string()),
                t.dtype
            );
            if t.stages > 1 {
                let _ = write!(text, " stages={}", t.stages);
            }
            self.line(1, &text);
        }
        for (_, r) in k.roles.iter() {
            let unit = match r.unit {
                RoleUnit::Warp => "warps",
                RoleUnit::Warpgroup => "warpgroups",
            };
            let regs = r.regs.map_or(String::new(), |n| format!(" regs={n}"));
            let text = format!(
                "role {}: {}=[{}]{}",
                r.name,
                unit,
                list(&r.units, |u| u.to_string()),
                regs
            );
            self.line(1, &text);
        }
        for (_, f) in k.fragments.iter() {
            let text = format!(
                "fragment {}: role={} shape=[{}] dtype={}{}",
                f.name,
                k.roles[f.role].name,
                list(&f.shape, |d| d.to_string()),
                f.dtype,
                if f.buffers > 1 {
                    format!(" buffers={}", f.buffers)
                } else {
                    String::new()
                } + &f
                    .rows
                    .map_or(String::new(), |o| format!(" rows={}", o.name()))
            );
            self.line(1, &text);
        }
        for (_, p) in k.pipelines.iter() {
            self.line(1, &format!("pipeline {}: stages={}", p.name, p.stages));
        }
        for (_, b) in k.barriers.iter() {
            let pipe = b
                .pipeline
                .map_or("none".to_string(), |p| k.pipelines[p].name.clone());
            let count = b.count.map_or(String::new(), |c| format!(" count={c}"));
            let scope = if b.cluster { " cluster" } else { "" };
            let text = format!(
                "barrier {}: pipeline={} producers=[{}] consumers=[{}]{}{}",
                b.name,
                pipe,
                list(&b.producers, |r| k.roles[*r].name.clone()),
                list(&b.consumers, |r| k.roles[*r].name.clone()),
                count,
                scope
            );
            self.line(1, &text);
        }
        for (_, n) in k.named_barriers.iter() {
            let roles = list(&n.roles, |r| k.roles[*r].name.clone());
            self.line(1, &format!("named_barrier {}: roles=[{}]", n.name, roles));
        }
        self.line(0, "body:");
        let body = k.body.clone();
        self.block(1, &body);
    }

    fn block(&mut self, depth: usize, block: &Block) {
        for &s in block {
            self.stmt(depth, s);
        }
    }

    fn stmt(&mut self, depth: usize, s: StmtId) {
        let k = self.k;
        match &k.stmts[s] {
            Stmt::Role { role, body } => {
                self.line(depth, &format!("role {}:", k.roles[*role].name));
                self.block(depth + 1, body);
            }
            Stmt::Loop { id, body } => {
                let l = &k.loops[*id];
                let head = match &l.kind {
                    LoopKind::Range {
                        start,
                        stop,
                        pipeline,
                    } => {
                        let pipe = pipeline.map_or(String::new(), |p| {
                            format!(" pipeline={}", k.pipelines[p].name)
                        });
                        format!(
                            "range %{} {} in [{}, {}){}:",
                            id.index(),
                            l.var_name,
                            self.expr(*start),
                            self.expr(*stop),
                            pipe
                        )
                    }
                    LoopKind::Tiles {
                        counts,
                        names,
                        group,
                        stream,
                        dynamic,
                    } => format!(
                        "tiles %{} ({}) in [{}]{}{}{}:",
                        id.index(),
                        names.join(", "),
                        list(counts, |e| self.expr(*e)),
                        group.map_or(String::new(), |g| format!(" group={g}")),
                        stream.map_or(String::new(), |s| format!(" stream={}", self.expr(s))),
                        if *dynamic { " dynamic" } else { "" }
                    ),
                };
                self.line(depth, &head);
                self.block(depth + 1, body);
            }
            Stmt::Ahead { steps, body } => {
                self.line(depth, &format!("ahead {steps}:"));
                self.block(depth + 1, body);
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                self.line(depth, &format!("if {}:", self.expr(*cond)));
                self.block(depth + 1, then_body);
                if !else_body.is_empty() {
                    self.line(depth, "else:");
                    self.block(depth + 1, else_body);
                }
            }
            Stmt::Op(op) => {
                let text = self.op(op);
                self.line(depth, &text);
            }
        }
    }

    fn coords(&self, coords: &[ExprId]) -> String {
        list(coords, |e| self.expr(*e))
    }

    fn view_ref(&self, v: &ViewRef) -> String {
        let mut s = self.k.views[v.view].name.clone();
        if let Some(st) = v.stage {
            let _ = write!(s, ".stage({})", self.expr(st));
        }
        if let Some((start, n)) = v.rows {
            let _ = write!(s, ".rows({}, {})", self.expr(start), n);
        }
        if v.transposed {
            s.push_str(".T");
        }
        s
    }

    fn tmem_ref(&self, t: &TmemRef) -> String {
        let mut s = self.k.tmems[t.region].name.clone();
        if let Some(st) = t.stage {
            let _ = write!(s, ".stage({})", self.expr(st));
        }
        if let Some(c) = t.cols {
            let _ = write!(s, ".cols({}, {})", c.start, c.count);
        }
        s
    }

    fn operand(&self, o: &Operand) -> String {
        match o {
            Operand::Smem(v) => format!("smem {}", self.view_ref(v)),
            Operand::Frag(f) => format!("reg {}", self.k.fragments[*f].name),
            Operand::Tmem(t) => format!("tmem {}", self.tmem_ref(t)),
        }
    }

    fn op(&self, op: &Op) -> String {
        let k = self.k;
        let bar = |b: &BarrierId| k.barriers[*b].name.clone();
        let param = |p: &ParamId| k.params[*p].name.clone();
        match op {
            Op::TmaLoad {
                dst,
                src,
                coords,
                barrier,
                multicast,
                evict,
            } => {
                let mc = if *multicast > 1 {
                    format!(" multicast={multicast}")
                } else {
                    String::new()
                };
                let ev = evict.map_or(String::new(), |e| format!(" evict={}", e.as_str()));
                format!(
                    "tma_load {} <- {}[{}] barrier={}{}{}",
                    self.view_ref(dst),
                    param(src),
                    self.coords(coords),
                    bar(barrier),
                    mc,
                    ev
                )
            }
            Op::TmaStore {
                dst,
                src,
                coords,
                add,
            } => {
                format!(
                    "tma_store {}[{}] {} {}",
                    param(dst),
                    self.coords(coords),
                    if *add { "+=" } else { "<-" },
                    self.view_ref(src)
                )
            }
            Op::CopyTo {
                dst,
                src,
                coords,
                add,
            } => format!(
                "copy_to {}[{}] {} {}",
                param(dst),
                self.coords(coords),
                if *add { "+=" } else { "<-" },
                self.view_ref(src)
            ),
            Op::CpAsync {
                dst,
                src,
                coords,
                barrier,
                evict,
            } => format!(
                "cp_async {} <- {}[{}] barrier={}{}",
                self.view_ref(dst),
                param(src),
                self.coords(coords),
                bar(barrier),
                evict.map_or(String::new(), |e| format!(" evict={}", e.as_str()))
            ),
            Op::Ldmatrix { dst, src } => {
                format!(
                    "ldmatrix {} <- {}",
                    k.fragments[*dst].name,
                    self.view_ref(src)
                )
            }
            Op::Mma {
                acc,
                a,
                b,
                accumulate,
                release,
                defer,
                turns,
            } => {
                let rel = release
                    .as_ref()
                    .map_or(String::new(), |b| format!(" release={}", bar(b)));
                format!(
                    "mma {} += {} * {} accumulate={}{}{}{}",
                    self.operand(acc),
                    self.operand(a),
                    self.operand(b),
                    self.expr(*accumulate),
                    rel,
                    if *defer { " defer" } else { "" },
                    if *turns { " turns" } else { "" }
                )
            }
            Op::TmemLoad { dst, src } => {
                format!(
                    "tmem_load {} <- {}",
                    k.fragments[*dst].name,
                    self.tmem_ref(src)
                )
            }
            Op::TmemStore { dst, src } => {
                format!("tmem_store {} <- {}", self.tmem_ref(dst), self.expr(*src))
            }
            Op::TmemCopy { dst, src } => {
                format!("tmem_copy {} <- {}", self.tmem_ref(dst), self.view_ref(src))
            }
            Op::Store {
                dst,
                value,
                coords,
                transposed,
                evict,
            } => {
                format!(
                    "store {}[{}] <- {}{}{}",
                    param(dst),
                    self.coords(coords),
                    self.expr(*value),
                    if *transposed { " transposed" } else { "" },
                    evict.map_or(String::new(), |e| format!(" evict={}", e.as_str()))
                )
            }
            Op::GlobalScatterAdd {
                dst,
                value,
                index,
                coords,
                counts,
            } => {
                format!(
                    "scatter_add {}[{}] <- {} rows by {}{}",
                    param(dst),
                    self.coords(coords),
                    self.expr(*value),
                    self.expr(*index),
                    counts
                        .map(|c| format!(", counting into {}", param(&c)))
                        .unwrap_or_default()
                )
            }
            Op::SmemStore { dst, value } => {
                format!("smem_store {} <- {}", self.view_ref(dst), self.expr(*value))
            }
            Op::Assign { dst, value } => {
                format!("assign {} <- {}", k.fragments[*dst].name, self.expr(*value))
            }
            Op::AssignMany { pairs } => {
                let dsts: Vec<&str> = pairs
                    .iter()
                    .map(|(d, _)| k.fragments[*d].name.as_str())
                    .collect();
                let values: Vec<String> = pairs.iter().map(|(_, v)| self.expr(*v)).collect();
                format!("assign {} <- {}", dsts.join(", "), values.join(", "))
            }
            Op::ScatterAdd {
                dst,
                src,
                index,
                offset,
                valid_rows,
                counts,
            } => {
                let valid =
                    valid_rows.map_or(String::new(), |e| format!(" valid_rows={}", self.expr(e)));
                let counts = counts
                    .as_ref()
                    .map_or(String::new(), |c| format!(" counts={}", self.view_ref(c)));
                format!(
                    "scatter_add {} <- {} rows by {} - {}{}{}",
                    self.view_ref(dst),
                    self.view_ref(src),
                    self.view_ref(index),
                    self.expr(*offset),
                    valid,
                    counts
                )
            }
            Op::Wait { barrier } => format!("wait {}", bar(barrier)),
            Op::Arrive { barrier } => format!("arrive {}", bar(barrier)),
            Op::Commit { barrier } => format!("commit {}", bar(barrier)),
            Op::FenceProxyAsync => "fence_proxy_async".to_string(),
            Op::Sync { barrier } => format!("sync {}", k.named_barriers[*barrier].name),
            Op::StreamFixup { frag } => format!("stream_fixup {}", k.fragments[*frag].name),
        }
    }

    fn expr(&self, e: ExprId) -> String {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Float(v) => {
                if v.is_infinite() {
                    if *v > 0.0 {
                        "inf".into()
                    } else {
                        "-inf".into()
                    }
                } else {
                    format!("{v:?}")
                }
            }
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Dim(d) => k.dims[*d].name.clone(),
            ExprKind::Scalar(p) => k.params[*p].name.clone(),
            ExprKind::LoopVar(l) => k.loops[*l].var_name.clone(),
            ExprKind::TileCoord { tiles, axis } => match &k.loops[*tiles].kind {
                LoopKind::Tiles { names, .. } => names[*axis].clone(),
                LoopKind::Range { .. } => format!("%{}.{}", tiles.index(), axis),
            },
            ExprKind::RoleIndex(r) => format!("{}.index", k.roles[*r].name),
            ExprKind::PipelineStage(p) => format!("{}.stage", k.pipelines[*p].name),
            ExprKind::Frag(f) => k.fragments[*f].name.clone(),
            ExprKind::Binary(op, a, b) => op.python(&self.expr(*a), &self.expr(*b)),
            ExprKind::Unary(op, a) => {
                let a = self.expr(*a);
                match op {
                    UnOp::Neg => format!("(-{a})"),
                    UnOp::Not => format!("(not {a})"),
                    UnOp::Exp2 => format!("exp2({a})"),
                    UnOp::Exp2Ftz => format!("exp2({a}, ftz=True)"),
                    UnOp::Log2 => format!("log2({a})"),
                    UnOp::Sqrt => format!("sqrt({a})"),
                    UnOp::Rsqrt => format!("rsqrt({a})"),
                    UnOp::Abs => format!("abs({a})"),
                }
            }
            ExprKind::Cmp(op, a, b) => {
                format!("({} {} {})", self.expr(*a), op.symbol(), self.expr(*b))
            }
            ExprKind::Select(c, a, b) => {
                format!(
                    "select({}, {}, {})",
                    self.expr(*c),
                    self.expr(*a),
                    self.expr(*b)
                )
            }
            ExprKind::Cast(d, a) => format!("cast({}, {})", self.expr(*a), d),
            ExprKind::Reduce {
                op,
                axis,
                arg,
                packed,
            } => {
                let name = match op {
                    ReduceOp::Sum => "sum",
                    ReduceOp::Max => "max",
                    ReduceOp::Min => "min",
                    ReduceOp::ArgMin => "argmin",
                    ReduceOp::ArgMax => "argmax",
                };
                let packed = if *packed { ", packed=True" } else { "" };
                format!("{}({}, axis={}{})", name, self.expr(*arg), axis, packed)
            }
            ExprKind::Vote { op, arg } => format!("{}({})", op.name(), self.expr(*arg)),
            ExprKind::Expand { arg, axis } => format!("expand({}, axis={})", self.expr(*arg), axis),
            ExprKind::Iota { shape, axis } => {
                format!(
                    "iota(shape=[{}], axis={axis})",
                    list(shape, |d| d.to_string())
                )
            }
            ExprKind::Load {
                tensor,
                coords,
                shape,
                fill,
                evict,
            } => format!(
                "load({}[{}], shape=[{}], fill={:?}{})",
                k.params[*tensor].name,
                self.coords(coords),
                list(shape, |d| d.to_string()),
                fill,
                evict.map_or(String::new(), |e| format!(", evict={}", e.as_str()))
            ),
            ExprKind::ViewLoad { view, cta } => match cta {
                Some(c) => format!("{}.load(cta={})", self.view_ref(view), self.expr(*c)),
                None => format!("{}.load()", self.view_ref(view)),
            },
        }
    }
}
