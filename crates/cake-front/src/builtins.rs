//! The `lm` vocabulary: declarations, operations and element-wise functions, each checking its
//! arguments and emitting IR.

use crate::args::{bind, CallArgs};
use crate::codes;
use crate::interp::{Interp, Reported, R};
use crate::value::{Builtin, Value};
use cake_diag::{Finding, Span};
use cake_ir::*;

type Slot = Option<(Value, Span)>;

impl Interp<'_> {
    fn bind_args(&mut self, func: &str, params: &[&str], args: CallArgs) -> R<Vec<Slot>> {
        bind(func, params, args).map_err(|e| {
            let mut f = Finding::new(&codes::BAD_ARGUMENTS, e.span, e.message);
            if let Some(h) = e.help {
                f = f.help(h);
            }
            self.report(f)
        })
    }

    fn opt_int(&mut self, slot: &Slot, what: &str) -> R<Option<i64>> {
        match slot {
            None | Some((Value::None, _)) => Ok(None),
            Some((v, s)) => self.const_int(v, *s, what).map(Some),
        }
    }

    fn positive(&mut self, slot: &Slot, what: &str, default: Option<i64>) -> R<u32> {
        let v = self.opt_int(slot, what)?;
        let span = slot.as_ref().map_or(Span::default(), |s| s.1);
        match v.or(default) {
            Some(n) if n >= 1 && n <= u32::MAX as i64 => Ok(n as u32),
            Some(n) => self.err(
                &codes::INVALID_VALUE,
                span,
                format!("{what} must be a positive integer, got {n}"),
            ),
            None => self.err(&codes::BAD_ARGUMENTS, span, format!("{what} is required")),
        }
    }

    fn shape(&mut self, slot: &Slot, what: &str) -> R<Vec<u32>> {
        let Some((v, s)) = slot else {
            unreachable!("required argument")
        };
        let items = match v {
            Value::Tuple(items) => items.clone(),
            Value::Int(_) => vec![v.clone()],
            Value::Poison => return Err(Reported),
            other => {
                let msg = format!(
                    "{what} must be a tuple of integers, found {}",
                    other.kind_name()
                );
                return self.err(&codes::TYPE_MISMATCH, *s, msg);
            }
        };
        let mut out = Vec::new();
        for item in items {
            let n = self.const_int(&item, *s, what)?;
            if !(1..=1 << 20).contains(&n) {
                return self.err(
                    &codes::INVALID_VALUE,
                    *s,
                    format!("every extent of {what} must be in 1..=1048576, got {n}"),
                );
            }
            out.push(n as u32);
        }
        if out.is_empty() {
            return self.err(
                &codes::INVALID_VALUE,
                *s,
                format!("{what} must have at least one extent"),
            );
        }
        Ok(out)
    }

    fn dtype(&mut self, slot: &Slot, what: &str) -> R<DType> {
        match slot {
            Some((Value::DType(d), _)) => Ok(*d),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a dtype such as lm.bf16, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn roles(&mut self, slot: &Slot, what: &str) -> R<Vec<RoleId>> {
        let Some((v, s)) = slot else {
            return Ok(Vec::new());
        };
        let items = match v {
            Value::Tuple(items) => items.clone(),
            Value::Role(_) => vec![v.clone()],
            Value::Poison => return Err(Reported),
            other => {
                let msg = format!(
                    "{what} must be a list of roles, found {}",
                    other.kind_name()
                );
                return self.err(&codes::TYPE_MISMATCH, *s, msg);
            }
        };
        let mut out = Vec::new();
        if items.iter().any(|v| matches!(v, Value::Poison)) {
            return Err(Reported);
        }
        for item in items {
            match item {
                Value::Role(r) => out.push(r),
                other => {
                    let msg = format!("{what} must contain roles, found {}", other.kind_name());
                    return self.err(&codes::TYPE_MISMATCH, *s, msg);
                }
            }
        }
        Ok(out)
    }

    fn barrier_arg(&mut self, slot: &Slot, what: &str) -> R<BarrierId> {
        match slot {
            Some((Value::Barrier(b), _)) => Ok(*b),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!("{what} must be a barrier, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn tensor_arg(&mut self, slot: &Slot, what: &str) -> R<ParamId> {
        match slot {
            Some((Value::Tensor(p), _)) => Ok(*p),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a tensor parameter, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn view_arg(&mut self, slot: &Slot, what: &str) -> R<ViewRef> {
        match slot {
            Some((Value::View(v), _)) => Ok(v.clone()),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a shared-memory view, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn frag_arg(&mut self, slot: &Slot, what: &str) -> R<FragId> {
        match slot {
            Some((Value::Frag(f), _)) => Ok(*f),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!("{what} must be a fragment, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    fn tmem_arg(&mut self, slot: &Slot, what: &str) -> R<TmemId> {
        match slot {
            Some((Value::Tmem(t), _)) => Ok(*t),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!("{what} must be a TMEM region, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required argument"),
        }
    }

    /// Coordinates into `tensor`: one integer index per dimension.
    fn coords(&mut self, slot: &Slot, tensor: ParamId, what: &str) -> R<Vec<ExprId>> {
        let Some((v, s)) = slot else {
            unreachable!("required argument")
        };
        let items = match v {
            Value::Tuple(items) => items.clone(),
            other => vec![other.clone()],
        };
        let rank = self.tensor_rank(tensor);
        if items.len() != rank {
            let name = self.k.params[tensor].name.clone();
            let f = Finding::new(
                &codes::SHAPE_MISMATCH,
                *s,
                format!(
                    "{what} has {} coordinates but `{name}` has {rank} dimensions",
                    items.len()
                ),
            )
            .expected(rank)
            .actual(items.len());
            return Err(self.report(f));
        }
        let mut out = Vec::new();
        for item in items {
            out.push(self.index_of(item, *s)?);
        }
        Ok(out)
    }

    pub fn tensor_rank(&self, p: ParamId) -> usize {
        match &self.k.params[p].kind {
            ParamKind::Tensor { dims, .. } => dims.len(),
            ParamKind::Scalar { .. } => 0,
        }
    }

    fn tensor_dtype(&self, p: ParamId) -> DType {
        match &self.k.params[p].kind {
            ParamKind::Tensor { dtype, .. } | ParamKind::Scalar { dtype } => *dtype,
        }
    }

    fn current_role(&mut self, sp: Span, what: &str) -> R<RoleId> {
        match self.role {
            Some((r, _)) => Ok(r),
            None if self.in_poisoned_role => Err(Reported),
            None => self
                .err(
                    &codes::MISPLACED_OPERATION,
                    sp,
                    format!("{what} must be inside a role region"),
                )
                .map_err(|r| self.help_last(r, "wrap it in `with <role>:`")),
        }
    }

    // -----------------------------------------------------------------------------------------

    pub fn call_builtin(&mut self, b: Builtin, args: CallArgs) -> R<Value> {
        use Builtin::*;
        let sp = args.span;
        match b {
            Range | Len | PyMin | PyMax => self.builtin_value_call(b, args),
            Schedule => self.err(
                &codes::MISPLACED_OPERATION,
                sp,
                "`cake.schedule` is a decorator",
            ),
            Smem => {
                let a = self.bind_args("lm.smem", &["size?"], args)?;
                let size = self.opt_int(&a[0], "pool size")?;
                if let Some(s) = size {
                    if !(1..=1 << 24).contains(&s) {
                        return self.err(
                            &codes::INVALID_VALUE,
                            a[0].as_ref().map_or(sp, |x| x.1),
                            format!("pool size {s} is out of range"),
                        );
                    }
                }
                let name = self.take_name("pool");
                let id = self.k.pools.push(
                    Pool {
                        name,
                        size: size.map(|s| s as u32),
                    },
                    sp,
                );
                Ok(Value::Pool(id))
            }
            Tmem => {
                let a = self.bind_args("lm.tmem", &["cols", "shape", "dtype", "lanes?"], args)?;
                let cols = self.positive(&a[0], "cols", None)?;
                let shape = self.shape(&a[1], "shape")?;
                let dtype = self.dtype(&a[2], "dtype")?;
                let lanes = self.positive(&a[3], "lanes", Some(128))?;
                let name = self.take_name("tmem");
                Ok(Value::Tmem(self.k.tmems.push(
                    cake_ir::Tmem {
                        name,
                        cols,
                        lanes,
                        dtype,
                        shape,
                    },
                    sp,
                )))
            }
            RoleDecl => self.role_decl(args),
            PipelineDecl => {
                let a = self.bind_args("lm.pipeline", &["stages"], args)?;
                let stages = self.positive(&a[0], "stages", None)?;
                let name = self.take_name("pipeline");
                Ok(Value::Pipeline(
                    self.k.pipelines.push(Pipeline { name, stages }, sp),
                ))
            }
            BarrierDecl => {
                let a = self.bind_args(
                    "lm.barrier",
                    &["pipeline?", "producers", "consumers", "count?", "cluster?"],
                    args,
                )?;
                let pipeline = match &a[0] {
                    None | Some((Value::None, _)) => None,
                    Some((Value::Pipeline(p), _)) => Some(*p),
                    Some((Value::Poison, _)) => return Err(Reported),
                    Some((other, s)) => {
                        let msg = format!(
                            "the first argument of lm.barrier is a pipeline, found {}",
                            other.kind_name()
                        );
                        return self.err(&codes::TYPE_MISMATCH, *s, msg);
                    }
                };
                let producers = self.roles(&a[1], "producers")?;
                let consumers = self.roles(&a[2], "consumers")?;
                let count = match self.opt_int(&a[3], "count")? {
                    None => None,
                    Some(c) if (1..1 << 20).contains(&c) => Some(c as u32),
                    Some(c) => {
                        let s = a[3].as_ref().map_or(sp, |x| x.1);
                        return self.err(
                            &codes::INVALID_VALUE,
                            s,
                            format!("an mbarrier count must be in 1..=1048575, got {c}"),
                        );
                    }
                };
                let cluster = match &a[4] {
                    None => false,
                    Some((Value::Bool(c), _)) => *c,
                    Some((_, csp)) => {
                        return self.err(
                            &codes::TYPE_MISMATCH,
                            *csp,
                            "`cluster` is a compile-time bool (True or False)",
                        )
                    }
                };
                let name = self.take_name("barrier");
                let id = self.k.barriers.push(
                    Barrier {
                        name,
                        pipeline,
                        producers,
                        consumers,
                        count,
                        cluster,
                    },
                    sp,
                );
                Ok(Value::Barrier(id))
            }
            NamedBarrierDecl => {
                let a = self.bind_args("lm.named_barrier", &["roles"], args)?;
                let roles = self.roles(&a[0], "roles")?;
                let name = self.take_name("named_barrier");
                Ok(Value::NamedBarrier(
                    self.k.named_barriers.push(NamedBarrier { name, roles }, sp),
                ))
            }
            Tiles => {
                let mut group = None;
                for (name, v, s) in &args.keywords {
                    if name != "group" {
                        return self
                            .err(
                                &codes::BAD_ARGUMENTS,
                                *s,
                                format!("`lm.tiles` has no parameter `{name}`"),
                            )
                            .map_err(|r| {
                                self.help_last(r, "lm.tiles(count0, count1, ..., group=G)")
                            });
                    }
                    let g = self.const_int(v, *s, "group")?;
                    if !(1..=65535).contains(&g) {
                        return self.err(
                            &codes::INVALID_VALUE,
                            *s,
                            format!("group must be in 1..=65535, got {g}"),
                        );
                    }
                    if args.positional.len() != 2 {
                        return self.err(
                            &codes::BAD_ARGUMENTS,
                            *s,
                            "group= applies to two-axis tile loops",
                        );
                    }
                    group = Some(g as u32);
                }
                if args.positional.is_empty() || args.positional.len() > 3 {
                    return self.err(
                        &codes::BAD_ARGUMENTS,
                        sp,
                        "`lm.tiles` takes 1 to 3 tile counts",
                    );
                }
                Ok(Value::TilesIter(
                    args.positional.into_iter().map(|(v, _)| v).collect(),
                    group,
                ))
            }
            LmRange => {
                let a =
                    self.bind_args("lm.range", &["start_or_stop", "stop?", "pipeline?"], args)?;
                let first = a[0].clone().expect("required");
                let (start, stop) = match &a[1] {
                    Some((v, _)) => (first.0, v.clone()),
                    None => (Value::Int(0), first.0),
                };
                let pipeline = match &a[2] {
                    None | Some((Value::None, _)) => None,
                    Some((Value::Pipeline(p), _)) => Some(*p),
                    Some((other, s)) => {
                        let msg =
                            format!("`pipeline=` takes a pipeline, found {}", other.kind_name());
                        return self.err(&codes::TYPE_MISMATCH, *s, msg);
                    }
                };
                Ok(Value::RangeIter {
                    start: Box::new(start),
                    stop: Box::new(stop),
                    pipeline,
                })
            }
            Cdiv => {
                let a = self.bind_args("lm.cdiv", &["a", "b"], args)?;
                let (x, y) = (
                    a[0].clone().expect("required"),
                    a[1].clone().expect("required"),
                );
                self.arith(BinOp::CeilDiv, x, y, sp)
            }
            Wait | Arrive | Commit => {
                let name = match b {
                    Wait => "lm.wait",
                    Arrive => "lm.arrive",
                    _ => "lm.commit",
                };
                let a = self.bind_args(name, &["barrier"], args)?;
                let barrier = self.barrier_arg(&a[0], "the argument")?;
                let op = match b {
                    Wait => Op::Wait { barrier },
                    Arrive => Op::Arrive { barrier },
                    _ => Op::Commit { barrier },
                };
                self.emit_op(op, sp)?;
                Ok(Value::None)
            }
            FenceProxyAsync => {
                self.bind_args("lm.fence_proxy_async", &[], args)?;
                self.emit_op(Op::FenceProxyAsync, sp)?;
                Ok(Value::None)
            }
            Sync => {
                let a = self.bind_args("lm.sync", &["barrier"], args)?;
                match &a[0] {
                    Some((Value::NamedBarrier(nb), _)) => {
                        self.emit_op(Op::Sync { barrier: *nb }, sp)?;
                        Ok(Value::None)
                    }
                    Some((other, s)) => {
                        let msg =
                            format!("lm.sync takes a named barrier, found {}", other.kind_name());
                        self.err(&codes::TYPE_MISMATCH, *s, msg)
                    }
                    None => unreachable!(),
                }
            }
            Mma => self.mma(args),
            Store => {
                let a = self.bind_args("lm.store", &["dst", "value", "coords"], args)?;
                let dst = self.tensor_arg(&a[0], "the destination")?;
                let coords = self.coords(&a[2], dst, "`coords`")?;
                let (v, vsp) = a[1].clone().expect("required");
                let value = self.expr_of(v, vsp, None)?;
                let want = self.tensor_dtype(dst);
                match self.k.exprs[value].ty.clone() {
                    Ty::Frag { dtype, shape, .. } => {
                        if dtype != want {
                            let name = self.k.params[dst].name.clone();
                            let f = Finding::new(
                                &codes::DTYPE_MISMATCH,
                                vsp,
                                format!("`{name}` holds {want}, but the value is {dtype}"),
                            )
                            .expected(want)
                            .actual(dtype)
                            .help(format!("convert explicitly: lm.cast(value, lm.{want})"));
                            return Err(self.report(f));
                        }
                        if shape.len() > coords.len() {
                            return self.err(
                                &codes::SHAPE_MISMATCH,
                                vsp,
                                "the value has more axes than the tensor",
                            );
                        }
                    }
                    _ => {
                        return self.err(
                            &codes::TYPE_MISMATCH,
                            vsp,
                            "lm.store writes a register value (fragment)",
                        )
                    }
                }
                self.emit_op(Op::Store { dst, value, coords }, sp)?;
                Ok(Value::None)
            }
            Load => {
                let a = self.bind_args("lm.load", &["src", "coords", "shape", "fill?"], args)?;
                let src = self.tensor_arg(&a[0], "the source")?;
                let coords = self.coords(&a[1], src, "`coords`")?;
                let shape = self.shape(&a[2], "shape")?;
                let fill = match &a[3] {
                    None => 0.0,
                    Some((Value::Int(i), _)) => *i as f64,
                    Some((Value::Float(f), _)) => *f,
                    Some((other, s)) => {
                        let msg = format!("`fill` must be a number, found {}", other.kind_name());
                        return self.err(&codes::TYPE_MISMATCH, *s, msg);
                    }
                };
                if shape.len() > coords.len() {
                    return self.err(
                        &codes::SHAPE_MISMATCH,
                        sp,
                        "the loaded tile has more axes than the tensor",
                    );
                }
                let role = self.current_role(sp, "lm.load")?;
                let dtype = self.tensor_dtype(src);
                let e = self.mk(
                    ExprKind::Load {
                        tensor: src,
                        coords,
                        shape: shape.clone(),
                        fill,
                    },
                    Ty::Frag { dtype, shape, role },
                    sp,
                );
                Ok(Value::Expr(e))
            }
            Ldmatrix => {
                let a = self.bind_args("lm.ldmatrix", &["dst", "src"], args)?;
                let dst = self.frag_arg(&a[0], "the destination")?;
                let src = self.view_arg(&a[1], "the source")?;
                self.check_same_shape_dtype_frag_view(dst, &src, sp)?;
                self.emit_op(Op::Ldmatrix { dst, src }, sp)?;
                Ok(Value::None)
            }
            TmemLoad => {
                let a = self.bind_args("lm.tmem_load", &["dst", "src"], args)?;
                let dst = self.frag_arg(&a[0], "the destination")?;
                let src = self.tmem_arg(&a[1], "the source")?;
                let (t, f) = (self.k.tmems[src].clone(), self.k.fragments[dst].clone());
                if t.shape != f.shape || t.dtype != f.dtype {
                    let fd = Finding::new(
                        &codes::SHAPE_MISMATCH,
                        sp,
                        format!(
                            "TMEM region `{}` is {:?} {}, but fragment `{}` is {:?} {}",
                            t.name, t.shape, t.dtype, f.name, f.shape, f.dtype
                        ),
                    )
                    .expected(format!("{:?} {}", t.shape, t.dtype))
                    .actual(format!("{:?} {}", f.shape, f.dtype));
                    return Err(self.report(fd));
                }
                self.emit_op(Op::TmemLoad { dst, src }, sp)?;
                Ok(Value::None)
            }
            TmemStore => {
                let a = self.bind_args("lm.tmem_store", &["dst", "value"], args)?;
                let dst = self.tmem_arg(&a[0], "the destination")?;
                let (v, vsp) = a[1].clone().expect("required");
                let src = self.expr_of(v, vsp, None)?;
                let t = self.k.tmems[dst].clone();
                self.check_into(
                    src,
                    &t.shape,
                    t.dtype,
                    vsp,
                    &format!("TMEM region `{}`", t.name),
                )?;
                self.emit_op(Op::TmemStore { dst, src }, sp)?;
                Ok(Value::None)
            }
            TmemCopy => {
                let a = self.bind_args("lm.tmem_copy", &["dst", "src"], args)?;
                let dst = self.tmem_arg(&a[0], "the destination")?;
                let src = self.view_arg(&a[1], "the source")?;
                let (t, vshape) = (self.k.tmems[dst].clone(), self.view_ref_shape(&src));
                let vd = self.k.views[src.view].dtype;
                if t.shape != vshape || t.dtype != vd {
                    let fd = Finding::new(
                        &codes::SHAPE_MISMATCH,
                        sp,
                        format!(
                            "TMEM region `{}` is {:?} {}, but the view is {:?} {}",
                            t.name, t.shape, t.dtype, vshape, vd
                        ),
                    )
                    .expected(format!("{:?} {}", t.shape, t.dtype))
                    .actual(format!("{vshape:?} {vd}"));
                    return Err(self.report(fd));
                }
                self.emit_op(Op::TmemCopy { dst, src }, sp)?;
                Ok(Value::None)
            }
            Cast => {
                let a = self.bind_args("lm.cast", &["value", "dtype"], args)?;
                let (v, vsp) = a[0].clone().expect("required");
                let d = self.dtype(&a[1], "dtype")?;
                let e = self.expr_of(v, vsp, None)?;
                let ty = match self.k.exprs[e].ty.clone() {
                    Ty::Frag { shape, role, .. } => Ty::Frag {
                        dtype: d,
                        shape,
                        role,
                    },
                    Ty::Scalar(_) | Ty::Index => Ty::Scalar(d),
                    Ty::Bool => {
                        return self.err(
                            &codes::TYPE_MISMATCH,
                            vsp,
                            "cast a number, not a condition",
                        )
                    }
                };
                Ok(Value::Expr(self.mk(ExprKind::Cast(d, e), ty, sp)))
            }
            Select => {
                let a = self.bind_args("lm.select", &["cond", "a", "b"], args)?;
                let (c, csp) = a[0].clone().expect("required");
                let (x, xsp) = a[1].clone().expect("required");
                let (y, ysp) = a[2].clone().expect("required");
                self.select(c, csp, (x, xsp), (y, ysp), sp)
            }
            Maximum | Minimum => {
                let a = self.bind_args(
                    if b == Maximum {
                        "lm.maximum"
                    } else {
                        "lm.minimum"
                    },
                    &["a", "b"],
                    args,
                )?;
                let op = if b == Maximum { BinOp::Max } else { BinOp::Min };
                self.arith(
                    op,
                    a[0].clone().expect("required"),
                    a[1].clone().expect("required"),
                    sp,
                )
            }
            Exp2 | Log2 | Sqrt | Rsqrt | Abs => {
                let op = match b {
                    Exp2 => UnOp::Exp2,
                    Log2 => UnOp::Log2,
                    Sqrt => UnOp::Sqrt,
                    Rsqrt => UnOp::Rsqrt,
                    _ => UnOp::Abs,
                };
                let a = self.bind_args(&format!("lm.{}", b.lm_name()), &["x"], args)?;
                let (v, vsp) = a[0].clone().expect("required");
                self.math_fn(op, v, vsp, sp)
            }
            Sum | Max | Min | ArgMin | ArgMax => {
                let op = match b {
                    Sum => ReduceOp::Sum,
                    Max => ReduceOp::Max,
                    Min => ReduceOp::Min,
                    ArgMin => ReduceOp::ArgMin,
                    _ => ReduceOp::ArgMax,
                };
                let a = self.bind_args(
                    &format!("lm.{}", b.lm_name()),
                    &["x", "axis", "packed?"],
                    args,
                )?;
                let (v, vsp) = a[0].clone().expect("required");
                let (axv, axsp) = a[1].clone().expect("required");
                let axis = self.const_int(&axv, axsp, "axis")?;
                let packed = match &a[2] {
                    None => false,
                    Some((Value::Bool(p), _)) if op != ReduceOp::Sum => *p,
                    Some((Value::Bool(_), psp)) => {
                        return self.err(
                            &codes::INVALID_VALUE,
                            *psp,
                            "`packed` applies to min, max, argmin and argmax: a sum has no index to pack",
                        )
                    }
                    Some((_, psp)) => {
                        return self.err(
                            &codes::TYPE_MISMATCH,
                            *psp,
                            "`packed` is a compile-time bool (True or False)",
                        )
                    }
                };
                let e = self.expr_of(v, vsp, None)?;
                let Ty::Frag { dtype, shape, role } = self.k.exprs[e].ty.clone() else {
                    return self.err(
                        &codes::TYPE_MISMATCH,
                        vsp,
                        "reductions take a register value (fragment)",
                    );
                };
                let rank = shape.len() as i64;
                let ax = if axis < 0 { axis + rank } else { axis };
                if ax < 0 || ax >= rank {
                    return self.err(
                        &codes::INVALID_VALUE,
                        axsp,
                        format!("axis {axis} is out of range for a value of rank {rank}"),
                    );
                }
                let mut out_shape = shape.clone();
                out_shape.remove(ax as usize);
                if out_shape.is_empty() {
                    out_shape.push(1);
                }
                let out_dtype = if matches!(op, ReduceOp::ArgMin | ReduceOp::ArgMax) {
                    DType::I32
                } else {
                    dtype
                };
                let ty = Ty::Frag {
                    dtype: out_dtype,
                    shape: out_shape,
                    role,
                };
                Ok(Value::Expr(self.mk(
                    ExprKind::Reduce {
                        op,
                        axis: ax as usize,
                        arg: e,
                        packed,
                    },
                    ty,
                    sp,
                )))
            }
        }
    }

    fn select(
        &mut self,
        c: Value,
        csp: Span,
        (x, xsp): (Value, Span),
        (y, ysp): (Value, Span),
        sp: Span,
    ) -> R<Value> {
        let cond = match c {
            Value::Bool(b) => return Ok(if b { x } else { y }),
            other => self.expr_of(other, csp, None)?,
        };
        match self.k.exprs[cond].ty.clone() {
            Ty::Bool => {}
            Ty::Frag {
                dtype: DType::Bool, ..
            } => {}
            other => {
                let msg = format!(
                    "the condition of lm.select must be a comparison, found {}",
                    crate::expr::describe_ty(&self.k, &other)
                );
                return self.err(&codes::TYPE_MISMATCH, csp, msg);
            }
        }
        // Type the two branches like an arithmetic pair, then the condition against the result.
        let probe = self.arith(BinOp::Max, (x.clone(), xsp), (y.clone(), ysp), sp)?;
        let Value::Expr(probe) = probe else {
            return Ok(probe);
        };
        let ty = self.k.exprs[probe].ty.clone();
        let (xe, ye) = match &self.k.exprs[probe].kind {
            ExprKind::Binary(_, a, b) => (*a, *b),
            _ => unreachable!("arith builds a binary expression"),
        };
        let ty = match (ty, self.k.exprs[cond].ty.clone()) {
            (Ty::Frag { dtype, shape, role }, Ty::Frag { shape: cs, .. }) => {
                match crate::expr::broadcast(&shape, &cs) {
                    Some(s) => Ty::Frag {
                        dtype,
                        shape: s,
                        role,
                    },
                    None => {
                        return self.err(
                            &codes::SHAPE_MISMATCH,
                            csp,
                            format!("condition shape {cs:?} does not broadcast with {shape:?}"),
                        )
                    }
                }
            }
            (Ty::Index | Ty::Scalar(_), Ty::Frag { .. }) => {
                return self.err(&codes::TYPE_MISMATCH, sp, "selecting between scalars with a per-element condition: make one branch a fragment");
            }
            (t, _) => t,
        };
        Ok(Value::Expr(self.mk(ExprKind::Select(cond, xe, ye), ty, sp)))
    }

    fn check_same_shape_dtype_frag_view(&mut self, dst: FragId, src: &ViewRef, sp: Span) -> R<()> {
        let fshape = self.k.fragments[dst].shape.clone();
        let vshape = self.view_ref_shape(src);
        if fshape != vshape {
            let f = Finding::new(
                &codes::SHAPE_MISMATCH,
                sp,
                format!("fragment shape {fshape:?} differs from view shape {vshape:?}"),
            )
            .expected(format!("{vshape:?}"))
            .actual(format!("{fshape:?}"));
            return Err(self.report(f));
        }
        let (fd, vd) = (self.k.fragments[dst].dtype, self.k.views[src.view].dtype);
        if fd != vd {
            return self.dtype_err(fd, vd, sp);
        }
        Ok(())
    }

    /// A value written into a buffer of `shape` and `dtype` must have that dtype and a shape
    /// that broadcasts to it.
    fn check_into(
        &mut self,
        value: ExprId,
        shape: &[u32],
        dtype: DType,
        vsp: Span,
        what: &str,
    ) -> R<()> {
        match self.k.exprs[value].ty.clone() {
            Ty::Frag {
                dtype: d, shape: s, ..
            } => {
                if d != dtype {
                    let f = Finding::new(
                        &codes::DTYPE_MISMATCH,
                        vsp,
                        format!("{what} holds {dtype}, but the value is {d}"),
                    )
                    .expected(dtype)
                    .actual(d)
                    .help(format!("convert explicitly: lm.cast(value, lm.{dtype})"));
                    return Err(self.report(f));
                }
                if crate::expr::broadcast(&s, shape).as_deref() != Some(shape) {
                    let f = Finding::new(
                        &codes::SHAPE_MISMATCH,
                        vsp,
                        format!("{what} is {shape:?}, but the value is {s:?}"),
                    )
                    .expected(format!("{shape:?}"))
                    .actual(format!("{s:?}"));
                    return Err(self.report(f));
                }
                Ok(())
            }
            Ty::Scalar(d) if d.is_float() != dtype.is_float() => self.dtype_err(dtype, d, vsp),
            Ty::Bool => self.err(
                &codes::TYPE_MISMATCH,
                vsp,
                format!("a condition cannot be stored in {what}"),
            ),
            _ => Ok(()),
        }
    }

    fn dtype_err<T>(&mut self, expected: DType, actual: DType, sp: Span) -> R<T> {
        let f = Finding::new(
            &codes::DTYPE_MISMATCH,
            sp,
            format!("expected {expected}, found {actual}"),
        )
        .expected(expected)
        .actual(actual);
        Err(self.report(f))
    }

    fn role_decl(&mut self, args: CallArgs) -> R<Value> {
        let sp = args.span;
        let a = self.bind_args(
            "lm.role",
            &["warp?", "warps?", "warpgroup?", "warpgroups?", "regs?"],
            args,
        )?;
        let given: Vec<usize> = (0..4).filter(|i| a[*i].is_some()).collect();
        if given.len() != 1 {
            return self
                .err(
                    &codes::BAD_ARGUMENTS,
                    sp,
                    "a role is declared with exactly one of warp=, warps=, warpgroup=, warpgroups=",
                )
                .map_err(|r| {
                    self.help_last(
                        r,
                        "e.g. lm.role(warpgroup=0, regs=40) or lm.role(warps=[0, 1, 2, 3])",
                    )
                });
        }
        let i = given[0];
        let unit = if i < 2 {
            RoleUnit::Warp
        } else {
            RoleUnit::Warpgroup
        };
        let (v, s) = a[i].clone().expect("given");
        let items = match v {
            Value::Tuple(items) => items,
            other => vec![other],
        };
        let mut units = Vec::new();
        for item in items {
            let n = self.const_int(&item, s, "a warp index")?;
            if !(0..32).contains(&n) {
                return self.err(
                    &codes::INVALID_VALUE,
                    s,
                    format!("warp and warpgroup indices must be in 0..32, got {n}"),
                );
            }
            units.push(n as u32);
        }
        if units.is_empty() {
            return self.err(&codes::INVALID_VALUE, s, "a role needs at least one warp");
        }
        let regs = match self.opt_int(&a[4], "regs")? {
            None => None,
            Some(r) if (1..=255).contains(&r) => Some(r as u32),
            Some(r) => {
                let s = a[4].as_ref().map_or(sp, |x| x.1);
                return self.err(
                    &codes::INVALID_VALUE,
                    s,
                    format!("a register budget must be in 1..=255 per thread, got {r}"),
                );
            }
        };
        let name = self.take_name("role");
        Ok(Value::Role(self.k.roles.push(
            Role {
                name,
                unit,
                units,
                regs,
            },
            sp,
        )))
    }

    fn mma(&mut self, args: CallArgs) -> R<Value> {
        let sp = args.span;
        let a = self.bind_args(
            "lm.mma",
            &["acc", "a", "b", "accumulate?", "release?"],
            args,
        )?;
        let acc = self.operand(&a[0], "the accumulator")?;
        let lhs = self.operand(&a[1], "operand `a`")?;
        let rhs = self.operand(&a[2], "operand `b`")?;
        let accumulate = match &a[3] {
            None => self.mk(ExprKind::Bool(true), Ty::Bool, sp),
            Some((v, s)) => self.condition_of(v.clone(), *s)?,
        };
        let release = match &a[4] {
            None | Some((Value::None, _)) => None,
            Some(_) => Some(self.barrier_arg(&a[4], "`release`")?),
        };
        // Shapes: acc (M, N) += a (M, K) · b (K, N).
        let (acc_shape, acc_dtype) = self.operand_shape(&acc);
        let (a_shape, a_dtype) = self.operand_shape(&lhs);
        let (b_shape, b_dtype) = self.operand_shape(&rhs);
        let span_of = |i: usize| a[i].as_ref().map_or(sp, |x| x.1);
        if matches!(acc, Operand::Smem(_)) {
            return self.err(
                &codes::TYPE_MISMATCH,
                span_of(0),
                "the accumulator lives in registers (a fragment) or TMEM",
            );
        }
        if matches!(rhs, Operand::Frag(_)) {
            return self.err(
                &codes::TYPE_MISMATCH,
                span_of(2),
                "operand `b` is read from shared memory or TMEM, not registers",
            );
        }
        if acc_shape.len() != 2 || a_shape.len() != 2 || b_shape.len() != 2 {
            return self.err(
                &codes::SHAPE_MISMATCH,
                sp,
                "mma operands are two-dimensional tiles",
            );
        }
        let (m, n) = (acc_shape[0], acc_shape[1]);
        let mut problems = Vec::new();
        if a_shape[0] != m {
            problems.push((
                span_of(1),
                format!("`a` has {} rows but the accumulator has {m}", a_shape[0]),
                m,
                a_shape[0],
            ));
        }
        if b_shape[1] != n {
            problems.push((
                span_of(2),
                format!("`b` has {} columns but the accumulator has {n}", b_shape[1]),
                n,
                b_shape[1],
            ));
        }
        if a_shape[1] != b_shape[0] {
            problems.push((
                span_of(2),
                format!(
                    "`a` is {}-deep in K but `b` is {}-deep",
                    a_shape[1], b_shape[0]
                ),
                a_shape[1],
                b_shape[0],
            ));
        }
        let failed = !problems.is_empty();
        for (s, msg, e, act) in problems {
            let f = Finding::new(&codes::SHAPE_MISMATCH, s, msg)
                .expected(e)
                .actual(act)
                .note(format!(
                    "acc {acc_shape:?} += a {a_shape:?} · b {b_shape:?}"
                ))
                .help("`b` is (K, N): for a B stored as (N, K), pass its transpose `view.T`");
            self.report(f);
        }
        if a_dtype != b_dtype && !(is_fp8(a_dtype) && is_fp8(b_dtype)) {
            let f = Finding::new(
                &codes::DTYPE_MISMATCH,
                span_of(2),
                format!("mma inputs differ: `a` is {a_dtype}, `b` is {b_dtype}"),
            )
            .expected(a_dtype)
            .actual(b_dtype);
            self.report(f);
            return Err(Reported);
        }
        let _ = acc_dtype;
        if failed {
            return Err(Reported);
        }
        self.emit_op(
            Op::Mma {
                acc,
                a: lhs,
                b: rhs,
                accumulate,
                release,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    fn operand(&mut self, slot: &Slot, what: &str) -> R<Operand> {
        match slot {
            Some((Value::View(v), _)) => Ok(Operand::Smem(v.clone())),
            Some((Value::Frag(f), _)) => Ok(Operand::Frag(*f)),
            Some((Value::Tmem(t), _)) => Ok(Operand::Tmem(*t)),
            Some((Value::Poison, _)) => Err(Reported),
            Some((other, s)) => {
                let msg = format!(
                    "{what} must be a view, a fragment or a TMEM region, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!("required"),
        }
    }

    fn operand_shape(&self, o: &Operand) -> (Vec<u32>, DType) {
        match o {
            Operand::Smem(v) => (self.view_ref_shape(v), self.k.views[v.view].dtype),
            Operand::Frag(f) => (
                self.k.fragments[*f].shape.clone(),
                self.k.fragments[*f].dtype,
            ),
            Operand::Tmem(t) => (self.k.tmems[*t].shape.clone(), self.k.tmems[*t].dtype),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Methods

    pub fn call_method(&mut self, recv: Value, name: &'static str, args: CallArgs) -> R<Value> {
        let sp = args.span;
        match (recv, name) {
            (Value::Pool(pool), "view") => {
                let a = self.bind_args(
                    "view",
                    &["shape", "dtype", "stages?", "swizzle?", "offset?"],
                    args,
                )?;
                let shape = self.shape(&a[0], "shape")?;
                let dtype = self.dtype(&a[1], "dtype")?;
                let stages = self.positive(&a[2], "stages", Some(1))?;
                let swizzle = self.opt_int(&a[3], "swizzle")?.unwrap_or(0);
                if ![0, 32, 64, 128].contains(&swizzle) {
                    let s = a[3].as_ref().map_or(sp, |x| x.1);
                    return self.err(
                        &codes::INVALID_VALUE,
                        s,
                        format!("swizzle must be 0, 32, 64 or 128 (bytes), got {swizzle}"),
                    );
                }
                let offset = match self.opt_int(&a[4], "offset")? {
                    None => None,
                    Some(o) if (0..1 << 24).contains(&o) => Some(o as u32),
                    Some(o) => {
                        let s = a[4].as_ref().map_or(sp, |x| x.1);
                        return self.err(
                            &codes::INVALID_VALUE,
                            s,
                            format!("offset {o} is out of range"),
                        );
                    }
                };
                let vname = self.take_name("view");
                let view = View {
                    name: vname,
                    pool,
                    offset,
                    shape,
                    dtype,
                    stages,
                    swizzle: swizzle as u32,
                };
                let id = self.k.views.push(view, sp);
                Ok(Value::View(ViewRef {
                    view: id,
                    rows: None,
                    transposed: false,
                    stage: None,
                }))
            }
            (Value::View(v), "rows") => {
                let a = self.bind_args("rows", &["start", "count"], args)?;
                let (start, ssp) = a[0].clone().expect("required");
                let start = self.index_of(start, ssp)?;
                let (cnt, csp) = a[1].clone().expect("required");
                let count = self.const_int(&cnt, csp, "the row count")?;
                let rows = self.view_ref_shape(&ViewRef {
                    rows: None,
                    transposed: false,
                    ..v.clone()
                })[0] as i64;
                if v.rows.is_some() || v.transposed {
                    return self.err(
                        &codes::UNSUPPORTED_PYTHON,
                        sp,
                        "take `.rows(...)` of the view itself, before `.T`",
                    );
                }
                if count < 1 || count > rows {
                    return self.err(
                        &codes::INVALID_VALUE,
                        csp,
                        format!("row count must be in 1..={rows}, got {count}"),
                    );
                }
                if let Some(s) = self.k.const_int(start) {
                    if s < 0 || s.saturating_add(count) > rows {
                        let f = Finding::new(
                            &codes::SHAPE_MISMATCH,
                            ssp,
                            format!(
                                "rows {s}..{} are outside the view's {rows} rows",
                                s.saturating_add(count)
                            ),
                        )
                        .expected(format!("start in 0..={}", rows - count))
                        .actual(s);
                        return Err(self.report(f));
                    }
                }
                Ok(Value::View(ViewRef {
                    rows: Some((start, count as u32)),
                    ..v
                }))
            }
            (Value::View(v), "stage") => {
                let a = self.bind_args("stage", &["index"], args)?;
                let (i, isp) = a[0].clone().expect("required");
                let i = self.index_of(i, isp)?;
                Ok(Value::View(ViewRef {
                    stage: Some(i),
                    ..v
                }))
            }
            (Value::View(v), "tma_load") => {
                let a = self.bind_args(
                    "tma_load",
                    &["src", "coords", "barrier", "multicast?"],
                    args,
                )?;
                let src = self.tensor_arg(&a[0], "the source")?;
                let coords = self.coords(&a[1], src, "`coords`")?;
                let barrier = self.barrier_arg(&a[2], "`barrier`")?;
                let multicast = self.positive(&a[3], "multicast", Some(1))?;
                self.check_view_tensor(&v, src, sp)?;
                self.emit_op(
                    Op::TmaLoad {
                        dst: v,
                        src,
                        coords,
                        barrier,
                        multicast,
                    },
                    sp,
                )?;
                Ok(Value::None)
            }
            (Value::View(v), "tma_store") => {
                let a = self.bind_args("tma_store", &["dst", "coords"], args)?;
                let dst = self.tensor_arg(&a[0], "the destination")?;
                let coords = self.coords(&a[1], dst, "`coords`")?;
                self.check_view_tensor(&v, dst, sp)?;
                self.emit_op(
                    Op::TmaStore {
                        dst,
                        src: v,
                        coords,
                    },
                    sp,
                )?;
                Ok(Value::None)
            }
            (Value::View(v), "cp_async") => {
                let a = self.bind_args("cp_async", &["src", "coords", "barrier"], args)?;
                let src = self.tensor_arg(&a[0], "the source")?;
                let coords = self.coords(&a[1], src, "`coords`")?;
                let barrier = self.barrier_arg(&a[2], "`barrier`")?;
                self.check_view_tensor(&v, src, sp)?;
                self.emit_op(
                    Op::CpAsync {
                        dst: v,
                        src,
                        coords,
                        barrier,
                    },
                    sp,
                )?;
                Ok(Value::None)
            }
            (Value::View(v), "store") => {
                let a = self.bind_args("store", &["value"], args)?;
                let (x, xsp) = a[0].clone().expect("required");
                let value = self.expr_of(x, xsp, Some(self.k.views[v.view].dtype))?;
                let shape = self.view_ref_shape(&v);
                self.check_into(
                    value,
                    &shape,
                    self.k.views[v.view].dtype,
                    xsp,
                    &format!("view `{}`", self.k.views[v.view].name),
                )?;
                self.emit_op(Op::SmemStore { dst: v, value }, sp)?;
                Ok(Value::None)
            }
            (Value::View(v), "scatter_add") => {
                self.scatter_add(v, args)?;
                Ok(Value::None)
            }
            (Value::Role(r), "fragment") => {
                let a = self.bind_args("fragment", &["shape", "dtype", "buffers?"], args)?;
                let shape = self.shape(&a[0], "shape")?;
                let dtype = self.dtype(&a[1], "dtype")?;
                let buffers = self.positive(&a[2], "buffers", Some(1))?;
                if buffers > 2 {
                    let s = a[2].as_ref().map_or(sp, |x| x.1);
                    return self.err(
                        &codes::INVALID_VALUE,
                        s,
                        format!("a fragment has 1 or 2 buffers, got {buffers}"),
                    );
                }
                let name = self.take_name("fragment");
                Ok(Value::Frag(self.k.fragments.push(
                    Fragment {
                        name,
                        role: r,
                        shape,
                        dtype,
                        buffers,
                    },
                    sp,
                )))
            }
            (recv, m) => {
                let msg = format!("{} has no method `{m}`", recv.kind_name());
                self.err(&codes::UNKNOWN_NAME, sp, msg)
            }
        }
    }

    /// `dst.scatter_add(src, index, offset=0, valid_rows=None, counts=None)`: rows of `src` added
    /// to the rows of `dst` that a 1-D index view names.
    fn scatter_add(&mut self, dst: ViewRef, args: CallArgs) -> R<()> {
        let sp = args.span;
        let a = self.bind_args(
            "scatter_add",
            &["src", "index", "offset?", "valid_rows?", "counts?"],
            args,
        )?;
        let span_of = |i: usize| a[i].as_ref().map_or(sp, |x| x.1);
        let src = self.view_arg(&a[0], "`src`")?;
        let index = self.view_arg(&a[1], "`index`")?;
        let offset = match &a[2] {
            None => self.mk(ExprKind::Int(0), Ty::Index, sp),
            Some((v, s)) => self.index_of(v.clone(), *s)?,
        };
        let valid_rows = match &a[3] {
            None | Some((Value::None, _)) => None,
            Some((v, s)) => Some(self.index_of(v.clone(), *s)?),
        };
        let counts = match &a[4] {
            None | Some((Value::None, _)) => None,
            Some(_) => Some(self.view_arg(&a[4], "`counts`")?),
        };
        let (dshape, sshape) = (self.view_ref_shape(&dst), self.view_ref_shape(&src));
        let (dname, sname) = (
            self.k.views[dst.view].name.clone(),
            self.k.views[src.view].name.clone(),
        );
        if dshape.len() != 2 || sshape.len() != 2 || dst.transposed || src.transposed {
            return self.err(
                &codes::SHAPE_MISMATCH,
                sp,
                format!("scatter_add adds rows of a 2-D view to rows of a 2-D view; `{dname}` is {dshape:?} and `{sname}` is {sshape:?}"),
            );
        }
        if dshape[1] != sshape[1] {
            let f = Finding::new(
                &codes::SHAPE_MISMATCH,
                span_of(0),
                format!(
                    "`{sname}` rows have {} columns, `{dname}` rows {}",
                    sshape[1], dshape[1]
                ),
            )
            .expected(dshape[1])
            .actual(sshape[1]);
            return Err(self.report(f));
        }
        if self.k.views[dst.view].dtype != DType::F32 {
            return self.err(
                &codes::DTYPE_MISMATCH,
                sp,
                format!(
                    "scatter_add accumulates in f32; `{dname}` is {}",
                    self.k.views[dst.view].dtype
                ),
            );
        }
        if !matches!(
            self.k.views[src.view].dtype,
            DType::F32 | DType::BF16 | DType::F16
        ) {
            return self.err(
                &codes::DTYPE_MISMATCH,
                span_of(0),
                format!(
                    "scatter_add adds f32, bf16 or f16 rows; `{sname}` is {}",
                    self.k.views[src.view].dtype
                ),
            );
        }
        // One i32 per row: of `src` for the index, of `dst` for the counts.
        let mut per_row = |v: &ViewRef, rows: u32, what: &str, i: usize| -> R<()> {
            let shape = self.view_ref_shape(v);
            let view = &self.k.views[v.view];
            if view.dtype == DType::I32 && shape == [rows] {
                return Ok(());
            }
            let f = Finding::new(
                &codes::SHAPE_MISMATCH,
                span_of(i),
                format!("{what} `{}` is {shape:?} {}", view.name, view.dtype),
            )
            .expected(format!("[{rows}] i32"))
            .actual(format!("{shape:?} {}", view.dtype));
            Err(self.report(f))
        };
        per_row(
            &index,
            sshape[0],
            &format!("the index holds one i32 per row of `{sname}`;"),
            1,
        )?;
        if let Some(c) = &counts {
            per_row(
                c,
                dshape[0],
                &format!("`counts` holds one i32 per row of `{dname}`;"),
                4,
            )?;
        }
        self.emit_op(
            Op::ScatterAdd {
                dst,
                src,
                index,
                offset,
                valid_rows,
                counts,
            },
            sp,
        )
    }

    /// A copy between a view and a tensor moves elements of one dtype.
    fn check_view_tensor(&mut self, v: &ViewRef, t: ParamId, sp: Span) -> R<()> {
        let (vd, td) = (self.k.views[v.view].dtype, self.tensor_dtype(t));
        if vd != td {
            let (vn, tn) = (
                self.k.views[v.view].name.clone(),
                self.k.params[t].name.clone(),
            );
            let f = Finding::new(
                &codes::DTYPE_MISMATCH,
                sp,
                format!("view `{vn}` holds {vd} but tensor `{tn}` holds {td}"),
            )
            .expected(td)
            .actual(vd)
            .label(
                self.k.views.span(v.view),
                format!("`{vn}` declared as {vd} here"),
            );
            return Err(self.report(f));
        }
        let rank = self.tensor_rank(t);
        let vrank = self.k.views[v.view].shape.len();
        if vrank > rank {
            return self.err(
                &codes::SHAPE_MISMATCH,
                sp,
                format!("a {vrank}-D view cannot be copied to or from a {rank}-D tensor"),
            );
        }
        Ok(())
    }
}

fn is_fp8(d: DType) -> bool {
    matches!(d, DType::E4M3 | DType::E5M2)
}
