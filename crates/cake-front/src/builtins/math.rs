//! Element-wise and reduction handlers (`lm.cast`, `lm.select`, `lm.exp2`, `lm.sum`, ...),
//! and the Python builtins folded at compile time (`range`, `len`, `min`, `max`).

use super::Slot;
use crate::args::CallArgs;
use crate::codes;
use crate::interp::{Interp, R};
use crate::typing::{broadcast, describe_ty};
use crate::value::Value;
use crate::vocab::Builtin;
use cake_diag::Span;
use cake_ir::*;

impl Interp<'_> {
    /// `lm.cdiv(a, b)`
    pub(super) fn cdiv(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let (x, y) = (
            a[0].clone().expect("required"),
            a[1].clone().expect("required"),
        );
        self.arith(BinOp::CeilDiv, x, y, sp)
    }

    /// `lm.cast(value, dtype)`
    pub(super) fn cast(&mut self, a: &[Slot], sp: Span) -> R<Value> {
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
                return self.err(&codes::TYPE_MISMATCH, vsp, "cast a number, not a condition")
            }
        };
        Ok(Value::Expr(self.mk(ExprKind::Cast(d, e), ty, sp)))
    }

    /// `lm.select(cond, a, b)`
    pub(super) fn select_call(&mut self, a: &[Slot], sp: Span) -> R<Value> {
        let (c, csp) = a[0].clone().expect("required");
        let (x, xsp) = a[1].clone().expect("required");
        let (y, ysp) = a[2].clone().expect("required");
        self.select(c, csp, (x, xsp), (y, ysp), sp)
    }

    /// `lm.maximum(a, b)`, `lm.minimum(a, b)`
    pub(super) fn min_max(&mut self, b: Builtin, a: &[Slot], sp: Span) -> R<Value> {
        use Builtin::*;
        let op = if b == Maximum { BinOp::Max } else { BinOp::Min };
        self.arith(
            op,
            a[0].clone().expect("required"),
            a[1].clone().expect("required"),
            sp,
        )
    }

    /// `lm.exp2(x)` and the other one-argument functions.
    pub(super) fn unary_math(&mut self, b: Builtin, a: &[Slot], sp: Span) -> R<Value> {
        use Builtin::*;
        let ftz = match a.get(1).cloned().flatten() {
            None => false,
            Some((Value::Bool(f), _)) => f,
            Some((_, s)) => {
                return self.err(
                    &codes::TYPE_MISMATCH,
                    s,
                    "`ftz` is a compile-time bool (True or False)",
                )
            }
        };
        let op = match b {
            Exp2 if ftz => UnOp::Exp2Ftz,
            Exp2 => UnOp::Exp2,
            Log2 => UnOp::Log2,
            Sqrt => UnOp::Sqrt,
            Rsqrt => UnOp::Rsqrt,
            _ => UnOp::Abs,
        };
        let (v, vsp) = a[0].clone().expect("required");
        self.math_fn(op, v, vsp, sp)
    }

    /// `lm.sum(x, axis, packed=False)` and the other reductions.
    pub(super) fn reduce(&mut self, b: Builtin, a: &[Slot], sp: Span) -> R<Value> {
        use Builtin::*;
        let op = match b {
            Sum => ReduceOp::Sum,
            Max => ReduceOp::Max,
            Min => ReduceOp::Min,
            ArgMin => ReduceOp::ArgMin,
            _ => ReduceOp::ArgMax,
        };
        let (v, vsp) = a[0].clone().expect("required");
        let (axv, axsp) = a[1].clone().expect("required");
        let axis = self.const_int(&axv, axsp, "axis")?;
        let packed =
            match &a[2] {
                None => false,
                Some((Value::Bool(p), _)) if op != ReduceOp::Sum => *p,
                Some((Value::Bool(_), psp)) => return self.err(
                    &codes::INVALID_VALUE,
                    *psp,
                    "`packed` applies to min, max, argmin and argmax: a sum has no index to pack",
                ),
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

    /// `lm.any(cond)` / `lm.all(cond)`: a warp vote over a bool register value of the current
    /// role. The result is a run-time condition, the same on every thread of a warp.
    pub(super) fn vote(&mut self, b: Builtin, a: &[Slot], sp: Span) -> R<Value> {
        let op = if b == Builtin::Any {
            VoteOp::Any
        } else {
            VoteOp::All
        };
        let (v, vsp) = a[0].clone().expect("required");
        // A compile-time condition is the same everywhere: the vote is the condition itself.
        if let Value::Bool(c) = v {
            return Ok(Value::Bool(c));
        }
        let e = self.expr_of(v, vsp, None)?;
        let role = self.current_role(sp, &format!("lm.{}", op.name()))?;
        match &self.k.exprs[e].ty {
            Ty::Frag {
                dtype: DType::Bool,
                role: owner,
                ..
            } if *owner == role => {}
            Ty::Frag {
                dtype: DType::Bool,
                role: owner,
                ..
            } => {
                let owner = self.k.roles[*owner].name.clone();
                let here = self.k.roles[role].name.clone();
                return self.err(
                    &codes::MISPLACED_OPERATION,
                    vsp,
                    format!(
                        "lm.{} votes over role `{owner}`'s registers inside role `{here}`'s region",
                        op.name()
                    ),
                );
            }
            Ty::Bool | Ty::Index => {
                return self
                    .err(
                        &codes::TYPE_MISMATCH,
                        vsp,
                        format!("lm.{} votes over a per-element condition; this condition is already one value", op.name()),
                    )
                    .map_err(|r| self.help_last(r, "use the condition itself"));
            }
            ty => {
                let what = describe_ty(&self.k, ty);
                return self
                    .err(
                        &codes::TYPE_MISMATCH,
                        vsp,
                        format!("lm.{} takes a per-element condition (a bool register value), found {what}", op.name()),
                    )
                    .map_err(|r| self.help_last(r, "compare register values, e.g. `lm.any(m_new - m_old > 8.0)`"));
            }
        }
        Ok(Value::Expr(self.mk(
            ExprKind::Vote { op, arg: e },
            Ty::Bool,
            sp,
        )))
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
                    describe_ty(&self.k, &other)
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
                match broadcast(&shape, &cs) {
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

    /// `lm.exp2(x)` etc.: float fragments and scalars only.
    fn math_fn(&mut self, op: UnOp, v: Value, vsp: Span, sp: Span) -> R<Value> {
        if let Value::Float(x) = v {
            let r = match op {
                UnOp::Exp2 | UnOp::Exp2Ftz => x.exp2(),
                UnOp::Log2 => x.log2(),
                UnOp::Sqrt => x.sqrt(),
                UnOp::Rsqrt => 1.0 / x.sqrt(),
                UnOp::Abs => x.abs(),
                UnOp::Neg => -x,
                UnOp::Not => return self.err(&codes::TYPE_MISMATCH, sp, "`not` needs a condition"),
            };
            return Ok(Value::Float(r));
        }
        if let (Value::Int(x), UnOp::Abs) = (&v, op) {
            return match x.checked_abs() {
                Some(a) => Ok(Value::Int(a)),
                None => self.err(&codes::INVALID_VALUE, sp, "compile-time integer overflow"),
            };
        }
        let e = self.expr_of(v, vsp, None)?;
        let ty = self.k.exprs[e].ty.clone();
        let ok = match &ty {
            Ty::Frag { dtype, .. } | Ty::Scalar(dtype) => {
                dtype.is_float() || (op == UnOp::Abs && dtype.is_int())
            }
            _ => false,
        };
        if !ok {
            let msg = format!(
                "this function needs a float value, found {}",
                describe_ty(&self.k, &ty)
            );
            return self.err(&codes::TYPE_MISMATCH, vsp, msg);
        }
        Ok(Value::Expr(self.mk(ExprKind::Unary(op, e), ty, sp)))
    }

    /// `range`, `len`, `min`, `max`: Python builtins folded at compile time. Variadic, so they
    /// check their own arguments.
    pub(super) fn python_builtin(&mut self, b: Builtin, args: CallArgs) -> R<Value> {
        let sp = args.span;
        let mut vals = Vec::new();
        for (v, s) in &args.positional {
            vals.push((v.clone(), *s));
        }
        match b {
            Builtin::Range => {
                if !args.keywords.is_empty() || vals.is_empty() || vals.len() > 3 {
                    return self.err(
                        &codes::BAD_ARGUMENTS,
                        sp,
                        "`range` takes 1 to 3 positional integers",
                    );
                }
                let mut ints = Vec::new();
                for (v, s) in &vals {
                    match v {
                        Value::Int(i) => ints.push(*i),
                        Value::Expr(_) => {
                            return self.err(&codes::NOT_CONSTANT, *s, "`range(...)` is unrolled at compile time; its bounds must be constants")
                                .map_err(|r| self.help_last(r, "use `lm.range(...)` for a loop with run-time bounds"));
                        }
                        other => {
                            let msg =
                                format!("`range` takes integers, found {}", other.kind_name());
                            return self.err(&codes::TYPE_MISMATCH, *s, msg);
                        }
                    }
                }
                let (start, stop, step) = match ints[..] {
                    [stop] => (0, stop, 1),
                    [start, stop] => (start, stop, 1),
                    [start, stop, step] => (start, stop, step),
                    _ => unreachable!(),
                };
                if step == 0 {
                    return self.err(&codes::INVALID_VALUE, sp, "`range` step must not be zero");
                }
                // i128: the span of two i64 bounds does not fit in an i64.
                let (start128, stop128, step128) = (start as i128, stop as i128, step as i128);
                let count = if step > 0 {
                    (stop128 - start128).max(0) / step128
                } else {
                    (start128 - stop128).max(0) / -step128
                };
                if count > 4096 {
                    return self
                        .err(
                            &codes::INVALID_VALUE,
                            sp,
                            format!("`range` would unroll {count} iterations (limit 4096)"),
                        )
                        .map_err(|r| self.help_last(r, "use `lm.range(...)` for a run-time loop"));
                }
                // Every `range(...)` evaluated builds its list: count it as work.
                self.charge(count as u64, sp)?;
                // count <= 4096, so every element fits between the bounds.
                let out = (0..count)
                    .map(|n| (start128 + n * step128) as i64)
                    .collect();
                Ok(Value::PyRange(out))
            }
            Builtin::Len => match vals.as_slice() {
                [(Value::Tuple(t), _)] => Ok(Value::Int(t.len() as i64)),
                [(Value::PyRange(r), _)] => Ok(Value::Int(r.len() as i64)),
                _ => self.err(&codes::BAD_ARGUMENTS, sp, "`len` takes one tuple"),
            },
            Builtin::PyMin | Builtin::PyMax => {
                if vals.len() < 2 {
                    return self.err(
                        &codes::BAD_ARGUMENTS,
                        sp,
                        "`min`/`max` take two or more values",
                    );
                }
                let op = if b == Builtin::PyMin {
                    BinOp::Min
                } else {
                    BinOp::Max
                };
                let mut it = vals.into_iter();
                let mut acc = it.next().expect("checked above");
                for next in it {
                    let v = self.arith(op, acc, next, sp)?;
                    acc = (v, sp);
                }
                Ok(acc.0)
            }
            _ => unreachable!("only Python builtins here"),
        }
    }
}
