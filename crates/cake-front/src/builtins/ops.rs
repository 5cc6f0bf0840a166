//! Operation handlers: synchronization, copies between memories, and `lm.mma`. Each checks
//! its operands and emits one IR operation.

use super::Slot;
use crate::codes;
use crate::interp::{Interp, Reported, R};
use crate::typing::broadcast;
use crate::value::Value;
use crate::vocab::Builtin;
use cake_diag::{Finding, Span};
use cake_ir::*;

impl Interp<'_> {
    /// `lm.wait`, `lm.arrive`, `lm.commit` on one barrier.
    pub(super) fn barrier_op(&mut self, b: Builtin, a: &[Slot], sp: Span) -> R<Value> {
        use Builtin::*;
        let barrier = self.barrier_arg(&a[0], "the argument")?;
        let op = match b {
            Wait => Op::Wait { barrier },
            Arrive => Op::Arrive { barrier },
            _ => Op::Commit { barrier },
        };
        self.emit_op(op, sp)?;
        Ok(Value::None)
    }

    pub(super) fn fence_proxy_async(&mut self, _a: &[Slot], sp: Span) -> R<Value> {
        self.emit_op(Op::FenceProxyAsync, sp)?;
        Ok(Value::None)
    }

    /// `lm.stream_fixup(acc)`: once per run of a stream-K tile loop, after its K steps.
    pub(super) fn stream_fixup(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let frag = self.frag_arg(&a[0], "the accumulator")?;
        if !self.has_tile_loop() {
            // Outside any tile loop: the tile loop's own finding (a failed `lm.tiles`, or none
            // declared) says what is wrong.
            return Err(Reported);
        }
        if !self.directly_in_stream_tiles() {
            return self
                .err(
                    &codes::MISPLACED_OPERATION,
                    sp,
                    "`lm.stream_fixup` runs once per run of a stream-K tile loop: directly in its body (in a role region), outside every `lm.range` loop",
                )
                .map_err(|r| {
                    self.help_last(r, "declare the tile loop with `stream=`: `for tn, k0, k1 in lm.tiles(n, stream=KB)`")
                });
        }
        let f = &self.k.fragments[frag];
        if f.dtype != cake_target::DType::F32 {
            let msg = format!(
                "`lm.stream_fixup` adds f32 partial sums; fragment `{}` is {}",
                f.name, f.dtype
            );
            return self.err(
                &codes::TYPE_MISMATCH,
                a[0].as_ref().map_or(sp, |s| s.1),
                msg,
            );
        }
        self.emit_op(Op::StreamFixup { frag }, sp)?;
        Ok(Value::None)
    }

    /// `lm.sync(barrier)` on a named barrier.
    pub(super) fn sync(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        match &a[0] {
            Some((Value::NamedBarrier(nb), _)) => {
                self.emit_op(Op::Sync { barrier: *nb }, sp)?;
                Ok(Value::None)
            }
            Some((other, s)) => {
                let msg = format!("lm.sync takes a named barrier, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, *s, msg)
            }
            None => unreachable!(),
        }
    }

    /// `lm.store(dst, value, coords, transpose=False, evict=None)`
    pub(super) fn store(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.tensor_arg(&a[0], "the destination")?;
        let coords = self.coords(&a[2], dst, "`coords`")?;
        let evict = self.evict_arg(a.get(4))?;
        let transposed = match a.get(3).cloned().flatten() {
            None => false,
            Some((Value::Bool(t), _)) => t,
            Some((_, s)) => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    s,
                    "`transpose` is a compile-time bool (True or False)",
                )
            }
        };
        let (v, vsp) = a[1].clone().expect("required");
        let value = self.expr_of(v, vsp, None)?;
        let want = self.tensor_dtype(dst);
        match self.k.exprs[value].ty.clone() {
            Ty::Frag { dtype, shape, .. } => {
                if dtype != want {
                    return Err(self.value_dtype_mismatch(dst, dtype, vsp));
                }
                if shape.len() > coords.len() {
                    return self.err(
                        &codes::SHAPE_MISMATCH,
                        vsp,
                        "the value has more axes than the tensor",
                    );
                }
                if transposed && shape.len() != 2 {
                    let f = Finding::new(
                        &codes::SHAPE_MISMATCH,
                        vsp,
                        format!(
                            "`transpose=True` writes a 2-D value into the two innermost axes; the value has {} {}",
                            shape.len(),
                            if shape.len() == 1 { "axis" } else { "axes" }
                        ),
                    )
                    .expected(2)
                    .actual(shape.len());
                    return Err(self.report(f));
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
        self.emit_op(
            Op::Store {
                dst,
                value,
                coords,
                transposed,
                evict,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    /// `lm.scatter_add(dst, value, index, coords, counts=None)`: row r of the 2-D register
    /// value added (atomically) to row `coords[-2] + index[r]` of `dst`, `index` one i32 per row.
    pub(super) fn scatter_add_global(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let span_of = |i: usize| a[i].as_ref().map_or(sp, |x| x.1);
        let dst = self.tensor_arg(&a[0], "the destination")?;
        let coords = self.coords(&a[3], dst, "`coords`")?;
        let counts = match &a[4] {
            None | Some((Value::None, _)) => None,
            Some(_) => Some(self.tensor_arg(&a[4], "`counts`")?),
        };
        let (v, vsp) = a[1].clone().expect("required");
        let value = self.expr_of(v, vsp, None)?;
        let (i, isp) = a[2].clone().expect("required");
        let index = self.expr_of(i, isp, None)?;
        let dname = self.k.params[dst].name.clone();
        let rank = coords.len();
        if rank < 2 {
            return self.err(
                &codes::SHAPE_MISMATCH,
                span_of(0),
                format!(
                    "scatter_add adds rows into a tensor of 2 or more axes; `{dname}` has {rank}"
                ),
            );
        }
        let want = self.tensor_dtype(dst);
        if want != DType::F32 {
            return self.err(
                &codes::DTYPE_MISMATCH,
                span_of(0),
                format!("scatter_add accumulates in f32; `{dname}` holds {want}"),
            );
        }
        let rows = match self.k.exprs[value].ty.clone() {
            Ty::Frag { dtype, shape, .. } => {
                if dtype != want {
                    return Err(self.value_dtype_mismatch(dst, dtype, vsp));
                }
                if shape.len() != 2 {
                    let f = Finding::new(
                        &codes::SHAPE_MISMATCH,
                        vsp,
                        format!("scatter_add adds the rows of a 2-D value; the value has shape {shape:?}"),
                    )
                    .expected(2)
                    .actual(shape.len());
                    return Err(self.report(f));
                }
                shape[0]
            }
            _ => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    vsp,
                    "scatter_add adds a register value (fragment)",
                )
            }
        };
        match self.k.exprs[index].ty.clone() {
            Ty::Frag { dtype: DType::I32, shape, .. } if shape == [rows] => {}
            Ty::Frag { dtype, shape, .. } => {
                let f = Finding::new(
                    &codes::SHAPE_MISMATCH,
                    isp,
                    format!("the index holds one i32 per row of the value; it is {shape:?} {dtype}"),
                )
                .expected(format!("[{rows}] i32"))
                .actual(format!("{shape:?} {dtype}"));
                return Err(self.report(f));
            }
            _ => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    isp,
                    "the index is a register value of one i32 per row, e.g. lm.load(IDS, coords=(b, n0), shape=(ROWS,), fill=-1)",
                )
            }
        }
        if let Some(c) = counts {
            let cname = self.k.params[c].name.clone();
            let (cd, crank) = (self.tensor_dtype(c), self.tensor_rank(c));
            if cd != DType::I32 || crank + 1 != rank {
                let f = Finding::new(
                    &codes::SHAPE_MISMATCH,
                    span_of(4),
                    format!("`counts` holds one i32 per row of `{dname}`: `{cname}` is a {crank}-D {cd} tensor"),
                )
                .expected(format!("{}-D i32", rank - 1))
                .actual(format!("{crank}-D {cd}"));
                return Err(self.report(f));
            }
        }
        self.emit_op(
            Op::GlobalScatterAdd {
                dst,
                value,
                index,
                coords,
                counts,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    /// `lm.load(src, coords, shape, fill=0, evict=None)`
    pub(super) fn load(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let src = self.tensor_arg(&a[0], "the source")?;
        let coords = self.coords(&a[1], src, "`coords`")?;
        // `shape=()`: one element, a scalar that broadcasts to any register value.
        let shape = match &a[2] {
            Some((Value::Tuple(items), _)) if items.is_empty() => Vec::new(),
            _ => self.shape(&a[2], "shape")?,
        };
        let evict = self.evict_arg(a.get(4))?;
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
                evict,
            },
            Ty::Frag { dtype, shape, role },
            sp,
        );
        Ok(Value::Expr(e))
    }

    /// `lm.iota(shape, axis)`: each element's index along `axis`, within the tile.
    pub(super) fn iota(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let shape = self.shape(&a[0], "shape")?;
        let (v, s) = a[1].clone().expect("required");
        let n = self.const_int(&v, s, "the axis")?;
        let rank = shape.len() as i64;
        let axis = if n < 0 { n + rank } else { n };
        if !(0..rank).contains(&axis) {
            return self.err(
                &codes::INVALID_VALUE,
                s,
                format!("axis {n} is out of range for a shape of {rank} axes"),
            );
        }
        let role = self.current_role(sp, "lm.iota")?;
        let e = self.mk(
            ExprKind::Iota {
                shape: shape.clone(),
                axis: axis as usize,
            },
            Ty::Frag {
                dtype: DType::I32,
                shape,
                role,
            },
            sp,
        );
        Ok(Value::Expr(e))
    }

    /// `lm.ldmatrix(dst, src)`
    pub(super) fn ldmatrix(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.frag_arg(&a[0], "the destination")?;
        let src = self.view_arg(&a[1], "the source")?;
        self.check_same_shape_dtype_frag_view(dst, &src, sp)?;
        self.emit_op(Op::Ldmatrix { dst, src }, sp)?;
        Ok(Value::None)
    }

    /// `lm.tmem_load(dst, src)`
    pub(super) fn tmem_load(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.frag_arg(&a[0], "the destination")?;
        let src = self.tmem_cols_arg(&a[1], "the source")?;
        let cols = src.cols;
        let (t, f) = (
            self.k.tmems[src.region].clone(),
            self.k.fragments[dst].clone(),
        );
        let shape = tmem_shape(&t.shape, cols);
        if shape != f.shape || t.dtype != f.dtype {
            let what = tmem_operand(&t.name, cols);
            let fd = Finding::new(
                &codes::SHAPE_MISMATCH,
                sp,
                format!(
                    "{what} {} {:?} {}, but fragment `{}` is {:?} {}",
                    if cols.is_some() { "are" } else { "is" },
                    shape,
                    t.dtype,
                    f.name,
                    f.shape,
                    f.dtype
                ),
            )
            .expected(format!("{:?} {}", shape, t.dtype))
            .actual(format!("{:?} {}", f.shape, f.dtype));
            return Err(self.report(fd));
        }
        self.emit_op(Op::TmemLoad { dst, src }, sp)?;
        Ok(Value::None)
    }

    /// `lm.tmem_store(dst, value)`
    pub(super) fn tmem_store(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.tmem_cols_arg(&a[0], "the destination")?;
        let (v, vsp) = a[1].clone().expect("required");
        let src = self.expr_of(v, vsp, None)?;
        let t = self.k.tmems[dst.region].clone();
        let what = tmem_operand(&t.name, dst.cols);
        self.check_into(src, &tmem_shape(&t.shape, dst.cols), t.dtype, vsp, &what)?;
        self.emit_op(Op::TmemStore { dst, src }, sp)?;
        Ok(Value::None)
    }

    /// `lm.tmem_copy(dst, src)`
    pub(super) fn tmem_copy(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.tmem_arg(&a[0], "the destination")?;
        let src = self.view_arg(&a[1], "the source")?;
        let (t, vshape) = (self.k.tmems[dst.region].clone(), self.view_ref_shape(&src));
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

    /// `view.tma_load(src, coords, barrier, multicast=1, evict=None)`; `evict="first"` or
    /// `"last"` sets the L2 eviction priority of the lines the copy brings in.
    pub(super) fn tma_load(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
        let src = self.tensor_arg(&a[0], "the source")?;
        let coords = self.coords(&a[1], src, "`coords`")?;
        let barrier = self.barrier_arg(&a[2], "`barrier`")?;
        let multicast = self.positive(&a[3], "multicast", Some(1))?;
        let evict = self.evict_arg(a.get(4))?;
        self.check_view_tensor(&v, src, sp)?;
        self.emit_op(
            Op::TmaLoad {
                dst: v,
                src,
                coords,
                barrier,
                multicast,
                evict,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    /// An `evict=` argument: an L2 eviction priority or None.
    fn evict_arg(&mut self, slot: Option<&Slot>) -> R<Option<Evict>> {
        self.str_choice(
            slot,
            &[("first", Evict::First), ("last", Evict::Last)],
            "`evict` is \"first\" (lines read once: evicted before others), \"last\" (lines many CTAs reread) or None",
        )
    }

    /// An optional string argument: absent or `None` gives `None`, one of `choices` its value;
    /// anything else is `CAKE-L010` at the argument, `expected` followed by what was found.
    fn str_choice<T: Copy>(
        &mut self,
        slot: Option<&Slot>,
        choices: &[(&str, T)],
        expected: &str,
    ) -> R<Option<T>> {
        let Some(Some((value, s))) = slot else {
            return Ok(None);
        };
        let shown = match value {
            Value::None => return Ok(None),
            Value::Str(x) => match choices.iter().find(|(name, _)| name == x) {
                Some((_, t)) => return Ok(Some(*t)),
                None => format!("\"{x}\""),
            },
            o => o.kind_name().to_string(),
        };
        self.err(
            &codes::INVALID_VALUE,
            *s,
            format!("{expected}; found {shown}"),
        )
    }

    /// `view.tma_store(dst, coords, reduce=None)`; `reduce="add"` adds the tile into the tensor.
    pub(super) fn tma_store(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.tensor_arg(&a[0], "the destination")?;
        let coords = self.coords(&a[1], dst, "`coords`")?;
        self.check_view_tensor(&v, dst, sp)?;
        let add = self.reduce_add(a.get(2), "the tile")?;
        if add {
            let dtype = self.tensor_dtype(dst);
            if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16 | DType::I32) {
                let name = self.k.params[dst].name.clone();
                return self.err(
                    &codes::DTYPE_MISMATCH,
                    sp,
                    format!("a TMA store with reduce=\"add\" adds f32, f16, bf16 or i32 elements; `{name}` holds {dtype}"),
                );
            }
        }
        self.emit_op(
            Op::TmaStore {
                dst,
                src: v,
                coords,
                add,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    /// A store's `reduce=`: `"add"` (true: `what` is added into the tensor) or None.
    fn reduce_add(&mut self, slot: Option<&Slot>, what: &str) -> R<bool> {
        let message = format!("`reduce` is \"add\" ({what} is added into the tensor) or None");
        Ok(self.str_choice(slot, &[("add", ())], &message)?.is_some())
    }

    /// `view.cp_async(src, coords, barrier, evict=None)`
    pub(super) fn cp_async(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
        let src = self.tensor_arg(&a[0], "the source")?;
        let coords = self.coords(&a[1], src, "`coords`")?;
        let barrier = self.barrier_arg(&a[2], "`barrier`")?;
        let evict = self.evict_arg(a.get(3))?;
        self.check_view_tensor(&v, src, sp)?;
        self.emit_op(
            Op::CpAsync {
                dst: v,
                src,
                coords,
                barrier,
                evict,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    /// `view.copy_to(dst, coords, reduce=None)`: the view's elements stored (or, with
    /// `reduce="add"`, atomically added) into a tensor tile by the role's threads.
    pub(super) fn copy_to(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
        let dst = self.tensor_arg(&a[0], "the destination")?;
        let coords = self.coords(&a[1], dst, "`coords`")?;
        self.check_view_tensor(&v, dst, sp)?;
        let add = self.reduce_add(a.get(2), "the view")?;
        let dtype = self.tensor_dtype(dst);
        if add && !matches!(dtype, DType::F32 | DType::I32) {
            let name = self.k.params[dst].name.clone();
            return self.err(
                &codes::DTYPE_MISMATCH,
                sp,
                format!(
                    "copy_to with reduce=\"add\" adds f32 or i32 elements; `{name}` holds {dtype}"
                ),
            );
        }
        self.emit_op(
            Op::CopyTo {
                dst,
                src: v,
                coords,
                add,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    /// `view.store(value)`
    pub(super) fn view_store(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
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

    /// `view.load(cta=None)`: the view's contents as a register value of the current role; with
    /// `cta`, those of the same view in that CTA of the cluster (the verifier checks the rank
    /// against the cluster and the synchronisation that publishes the view).
    pub(super) fn view_load(&mut self, v: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
        let cta = match a[0].clone() {
            None | Some((Value::None, _)) => None,
            Some((x, xsp)) => {
                if let Value::Int(i) = x {
                    if i < 0 {
                        return self.err(
                            &codes::INVALID_VALUE,
                            xsp,
                            format!("`cta` is a CTA's rank in the cluster (0 or more), got {i}"),
                        );
                    }
                }
                Some(self.index_of(x, xsp)?)
            }
        };
        let role = self.current_role(sp, "view.load")?;
        let ty = Ty::Frag {
            dtype: self.k.views[v.view].dtype,
            shape: self.view_ref_shape(&v),
            role,
        };
        Ok(Value::Expr(self.mk(
            ExprKind::ViewLoad { view: v, cta },
            ty,
            sp,
        )))
    }

    /// `lm.mma(acc, a, b, accumulate=True, release=None)`
    pub(super) fn mma(&mut self, a: &[Slot], sp: Span) -> R<Value> {
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
        let defer = match a.get(5).cloned().flatten() {
            None => false,
            Some((Value::Bool(d), _)) => d,
            Some((_, s)) => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    s,
                    "`defer` is a compile-time bool (True or False)",
                )
            }
        };
        let turns = match a.get(6).cloned().flatten() {
            None => false,
            Some((Value::Bool(t), _)) => t,
            Some((_, s)) => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    s,
                    "`turns` is a compile-time bool (True or False)",
                )
            }
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
                defer,
                turns,
            },
            sp,
        )?;
        Ok(Value::None)
    }

    pub(super) fn operand(&mut self, slot: &Slot, what: &str) -> R<Operand> {
        match slot {
            Some((Value::View(v), _)) => Ok(Operand::Smem(v.clone())),
            Some((Value::Frag(f), _)) => Ok(Operand::Frag(*f)),
            Some((Value::Tmem(t), s)) if t.cols.is_some() => self.err(
                &codes::TYPE_MISMATCH,
                *s,
                format!("{what} must be a whole TMEM region: an MMA reads and writes whole regions (`.cols(...)` is for lm.tmem_load and lm.tmem_store)"),
            ),
            Some((Value::Tmem(t), _)) => Ok(Operand::Tmem(t.clone())),
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

    pub(super) fn operand_shape(&self, o: &Operand) -> (Vec<u32>, DType) {
        match o {
            Operand::Smem(v) => (self.view_ref_shape(v), self.k.views[v.view].dtype),
            Operand::Frag(f) => (
                self.k.fragments[*f].shape.clone(),
                self.k.fragments[*f].dtype,
            ),
            Operand::Tmem(t) => {
                let region = &self.k.tmems[t.region];
                (region.shape.clone(), region.dtype)
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Methods

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
                if broadcast(&s, shape).as_deref() != Some(shape) {
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

    /// `dst.scatter_add(src, index, offset=0, valid_rows=None, counts=None)`: rows of `src` added
    /// to the rows of `dst` that a 1-D index view names.
    pub(super) fn scatter_add(&mut self, dst: ViewRef, a: &[Slot], sp: Span) -> R<Value> {
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
        )?;
        Ok(Value::None)
    }

    /// A register value written into tensor `dst` must have its dtype exactly: the finding says
    /// which cast to write.
    fn value_dtype_mismatch(&mut self, dst: ParamId, dtype: DType, vsp: Span) -> Reported {
        let want = self.tensor_dtype(dst);
        let name = self.k.params[dst].name.clone();
        let f = Finding::new(
            &codes::DTYPE_MISMATCH,
            vsp,
            format!("`{name}` holds {want}, but the value is {dtype}"),
        )
        .expected(want)
        .actual(dtype)
        .help(format!("convert explicitly: lm.cast(value, lm.{want})"));
        self.report(f)
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

/// The shape a TMEM operand moves: the region's, or `count` of its columns.
fn tmem_shape(region: &[u32], cols: Option<TmemCols>) -> Vec<u32> {
    let mut shape = region.to_vec();
    if let (Some(c), Some(last)) = (cols, shape.last_mut()) {
        *last = c.count;
    }
    shape
}

/// How a finding names a TMEM operand: the region, or a column range of it.
fn tmem_operand(region: &str, cols: Option<TmemCols>) -> String {
    match cols {
        Some(c) => format!(
            "columns {}..{} of TMEM region `{region}`",
            c.start,
            c.start + c.count
        ),
        None => format!("TMEM region `{region}`"),
    }
}
