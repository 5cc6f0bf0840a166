//! Typing of values: compile-time values folded, run-time values converted to typed IR
//! expressions, and every operator checking its operand types with a located error. Used by
//! expressions, statements and builtin handlers alike.

use crate::codes;
use crate::interp::{Interp, Reported, R};
use crate::value::Value;
use cake_diag::{Finding, Span};
use cake_ir::*;
use ruff_python_ast as ast;

/// NumPy broadcasting of two shapes (right-aligned; equal or 1).
pub fn broadcast(a: &[u32], b: &[u32]) -> Option<Vec<u32>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i < n - a.len() {
            1
        } else {
            a[i - (n - a.len())]
        };
        let db = if i < n - b.len() {
            1
        } else {
            b[i - (n - b.len())]
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => return None,
        };
    }
    Some(out)
}

fn py_binop(op: ast::Operator) -> Option<BinOp> {
    use ast::Operator as O;
    Some(match op {
        O::Add => BinOp::Add,
        O::Sub => BinOp::Sub,
        O::Mult => BinOp::Mul,
        O::Div => BinOp::Div,
        O::FloorDiv => BinOp::FloorDiv,
        O::Mod => BinOp::Mod,
        _ => return None,
    })
}

fn fold_int(op: BinOp, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        BinOp::Add => a.checked_add(b)?,
        BinOp::Sub => a.checked_sub(b)?,
        BinOp::Mul => a.checked_mul(b)?,
        BinOp::FloorDiv => {
            if b == 0 {
                return None;
            }
            a.checked_div_euclid(b)?
        }
        BinOp::Mod => {
            if b == 0 {
                return None;
            }
            a.checked_rem_euclid(b)?
        }
        BinOp::CeilDiv => {
            if b == 0 {
                return None;
            }
            a.checked_add(b)?.checked_sub(1)?.checked_div_euclid(b)?
        }
        BinOp::Min => a.min(b),
        BinOp::Max => a.max(b),
        BinOp::Div | BinOp::And | BinOp::Or => return None,
    })
}

fn fold_float(op: BinOp, a: f64, b: f64) -> Option<f64> {
    Some(match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
        BinOp::Min => a.min(b),
        BinOp::Max => a.max(b),
        _ => return None,
    })
}

impl Interp<'_> {
    pub fn view_ref_shape(&self, v: &ViewRef) -> Vec<u32> {
        let mut shape = self.k.views[v.view].shape.clone();
        if let Some((_, n)) = v.rows {
            if let Some(first) = shape.first_mut() {
                *first = n;
            }
        }
        if v.transposed && shape.len() == 2 {
            shape.swap(0, 1);
        }
        shape
    }

    pub fn frag_expr(&mut self, f: FragId, sp: Span) -> ExprId {
        let d = &self.k.fragments[f];
        let ty = Ty::Frag {
            dtype: d.dtype,
            shape: d.shape.clone(),
            role: d.role,
        };
        self.mk(ExprKind::Frag(f), ty, sp)
    }

    // -----------------------------------------------------------------------------------------
    // Conversions

    /// A run-time integer index (or a constant folded into one).
    pub fn index_of(&mut self, v: Value, sp: Span) -> R<ExprId> {
        match v {
            Value::Int(i) => self.int_expr(i, sp),
            Value::Bool(b) => Ok(self.mk(ExprKind::Int(b as i64), Ty::Index, sp)),
            Value::Expr(e) if self.k.exprs[e].ty == Ty::Index => Ok(e),
            Value::Poison => Err(Reported),
            other => {
                let what = match &other {
                    Value::Expr(e) => describe_ty(&self.k, &self.k.exprs[*e].ty),
                    o => o.kind_name().to_string(),
                };
                self.err(
                    &codes::TYPE_MISMATCH,
                    sp,
                    format!("expected an integer index, found {what}"),
                )
            }
        }
    }

    pub fn condition_of(&mut self, v: Value, sp: Span) -> R<ExprId> {
        match v {
            Value::Bool(b) => Ok(self.mk(ExprKind::Bool(b), Ty::Bool, sp)),
            Value::Expr(e) if self.k.exprs[e].ty == Ty::Bool => Ok(e),
            Value::Expr(e) if self.k.exprs[e].ty == Ty::Index => {
                let zero = self.mk(ExprKind::Int(0), Ty::Index, sp);
                Ok(self.mk(ExprKind::Cmp(CmpOp::Ne, e, zero), Ty::Bool, sp))
            }
            Value::Poison => Err(Reported),
            other => {
                let what = match &other {
                    Value::Expr(e) => describe_ty(&self.k, &self.k.exprs[*e].ty),
                    o => o.kind_name().to_string(),
                };
                self.err(
                    &codes::TYPE_MISMATCH,
                    sp,
                    format!("expected a condition, found {what}"),
                )
                .map_err(|r| {
                    self.help_last(r, "a per-element condition selects values with lm.select, combines with `&`, `|` and `~`, and becomes one decision per warp with lm.any or lm.all")
                })
            }
        }
    }

    /// An integer constant entering the IR: the generated code computes indices, coordinates
    /// and extents in 32-bit `int`, so the constant must fit one.
    fn int_expr(&mut self, i: i64, sp: Span) -> R<ExprId> {
        if i32::try_from(i).is_err() {
            return self
                .err(
                    &codes::INVALID_VALUE,
                    sp,
                    format!("{i} does not fit in a 32-bit int, the type of indices, coordinates and extents in the generated code"),
                )
                .map_err(|r| self.help_last(r, "keep compile-time values used at run time within -2147483648..=2147483647"));
        }
        Ok(self.mk(ExprKind::Int(i), Ty::Index, sp))
    }

    pub fn const_int(&mut self, v: &Value, sp: Span, what: &str) -> R<i64> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Bool(b) => Ok(*b as i64),
            Value::Poison => Err(Reported),
            Value::Expr(_) => self.err(
                &codes::NOT_CONSTANT,
                sp,
                format!("{what} must be known at compile time"),
            ),
            other => {
                let msg = format!("{what} must be an integer, found {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, sp, msg)
            }
        }
    }

    /// A value usable in element-wise arithmetic. Literals take `hint` as their dtype.
    pub fn expr_of(&mut self, v: Value, sp: Span, hint: Option<DType>) -> R<ExprId> {
        match v {
            Value::Int(i) => Ok(match hint {
                Some(d) if d.is_float() => self.mk(ExprKind::Float(i as f64), Ty::Scalar(d), sp),
                _ => self.int_expr(i, sp)?,
            }),
            Value::Float(f) => {
                let d = hint.filter(|d| d.is_float()).unwrap_or(DType::F32);
                Ok(self.mk(ExprKind::Float(f), Ty::Scalar(d), sp))
            }
            Value::Bool(b) => Ok(self.mk(ExprKind::Bool(b), Ty::Bool, sp)),
            Value::Expr(e) => Ok(e),
            Value::Frag(f) => Ok(self.frag_expr(f, sp)),
            Value::Poison => Err(Reported),
            other => {
                let msg = format!(
                    "expected a number or register value, found {}",
                    other.kind_name()
                );
                self.err(&codes::TYPE_MISMATCH, sp, msg)
            }
        }
    }

    fn frag_dtype_of(&self, v: &Value) -> Option<DType> {
        match v {
            Value::Frag(f) => Some(self.k.fragments[*f].dtype),
            Value::Expr(e) => match &self.k.exprs[*e].ty {
                Ty::Frag { dtype, .. } | Ty::Scalar(dtype) => Some(*dtype),
                _ => None,
            },
            _ => None,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Operators

    pub fn binary(
        &mut self,
        op: ast::Operator,
        a: (Value, Span),
        b: (Value, Span),
        sp: Span,
    ) -> R<Value> {
        match op {
            ast::Operator::BitAnd => return self.elementwise_logical(BinOp::And, a, b, sp),
            ast::Operator::BitOr => return self.elementwise_logical(BinOp::Or, a, b, sp),
            _ => {}
        }
        let Some(op) = py_binop(op) else {
            return self
                .err(
                    &codes::UNSUPPORTED_PYTHON,
                    sp,
                    "this operator is not supported",
                )
                .map_err(|r| self.help_last(r, "supported: + - * / // %, and & | on conditions"));
        };
        self.arith(op, a, b, sp)
    }

    /// Element-wise or index arithmetic with constant folding.
    pub fn arith(
        &mut self,
        op: BinOp,
        (a, asp): (Value, Span),
        (b, bsp): (Value, Span),
        sp: Span,
    ) -> R<Value> {
        if matches!(a, Value::Poison) || matches!(b, Value::Poison) {
            return Err(Reported);
        }
        let divides = matches!(
            op,
            BinOp::Div | BinOp::FloorDiv | BinOp::Mod | BinOp::CeilDiv
        );
        let zero = match &b {
            Value::Int(0) | Value::Bool(false) => true,
            Value::Float(f) => *f == 0.0,
            Value::Expr(e) => self.k.const_number(*e) == Some(0.0),
            _ => false,
        };
        if divides && zero {
            // Folded or not: a zero divisor known at compile time is never what was meant, and
            // on the GPU it is undefined for integers.
            return self.err(
                &codes::INVALID_VALUE,
                bsp,
                "division by zero: this divisor is 0 at compile time",
            );
        }
        match (&a, &b) {
            (Value::Poison, _) | (_, Value::Poison) => return Err(Reported),
            (Value::Int(x), Value::Int(y)) => {
                if op == BinOp::Div {
                    return Ok(Value::Float(*x as f64 / *y as f64));
                }
                return match fold_int(op, *x, *y) {
                    Some(v) => Ok(Value::Int(v)),
                    None => self.err(&codes::INVALID_VALUE, sp, "compile-time integer overflow"),
                };
            }
            (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
                let x = num(&a);
                let y = num(&b);
                return match fold_float(op, x, y) {
                    Some(v) => Ok(Value::Float(v)),
                    None => self.err(&codes::TYPE_MISMATCH, sp, "this operator needs integers"),
                };
            }
            (Value::Tuple(_), _) | (_, Value::Tuple(_)) if op == BinOp::Add => {
                if let (Value::Tuple(x), Value::Tuple(y)) = (&a, &b) {
                    // `t = t + t` doubles a tuple each time: count what is built.
                    self.charge((x.len() + y.len()) as u64, sp)?;
                    return Ok(Value::Tuple(x.iter().chain(y).cloned().collect()));
                }
            }
            _ => {}
        }
        let hint = self.frag_dtype_of(&a).or(self.frag_dtype_of(&b));
        let x = self.expr_of(a, asp, hint)?;
        let y = self.expr_of(b, bsp, hint)?;
        let tx = self.k.exprs[x].ty.clone();
        let ty_y = self.k.exprs[y].ty.clone();
        let ty = self.result_type(op, &tx, &ty_y, asp, bsp, sp)?;
        Ok(Value::Expr(self.mk(ExprKind::Binary(op, x, y), ty, sp)))
    }

    fn result_type(&mut self, op: BinOp, a: &Ty, b: &Ty, asp: Span, bsp: Span, sp: Span) -> R<Ty> {
        use Ty::*;
        let integer = |t: &Ty| match t {
            Index | Bool => true,
            Scalar(d) | Frag { dtype: d, .. } => !d.is_float(),
        };
        if op == BinOp::Div && integer(a) && integer(b) {
            // Python's `/` gives a float; C's truncates. Neither is silently picked.
            let what = if matches!((a, b), (Index, Index)) {
                "integer indices"
            } else {
                "integer values"
            };
            return self
                .err(
                    &codes::TYPE_MISMATCH,
                    sp,
                    format!("`/` on {what} is ambiguous"),
                )
                .map_err(|r| {
                    self.help_last(
                        r,
                        "use `//` (floor) or lm.cdiv (ceiling), or lm.cast one side to a float",
                    )
                });
        }
        match (a, b) {
            (Index, Index) => Ok(Index),
            (Bool, Bool) if matches!(op, BinOp::And | BinOp::Or) => Ok(Bool),
            (Scalar(x), Scalar(y)) if x == y => Ok(Scalar(*x)),
            (Scalar(x), Index) | (Index, Scalar(x)) => Ok(Scalar(*x)),
            (Frag { dtype, shape, role }, Index | Scalar(_))
            | (Index | Scalar(_), Frag { dtype, shape, role }) => {
                if let (Scalar(s), _) | (_, Scalar(s)) = (a, b) {
                    if s != dtype && !(s.is_float() && dtype.is_float()) {
                        return self.dtype_mismatch(*dtype, *s, asp, bsp);
                    }
                }
                Ok(Frag {
                    dtype: *dtype,
                    shape: shape.clone(),
                    role: *role,
                })
            }
            (
                Frag {
                    dtype: da,
                    shape: sa,
                    role: ra,
                },
                Frag {
                    dtype: db,
                    shape: sb,
                    role: rb,
                },
            ) => {
                if da != db {
                    return self.dtype_mismatch(*da, *db, asp, bsp);
                }
                if ra != rb {
                    let f = Finding::new(
                        &codes::TYPE_MISMATCH,
                        sp,
                        format!(
                            "operands belong to different roles (`{}` and `{}`); registers are private to a role",
                            self.k.roles[*ra].name, self.k.roles[*rb].name
                        ),
                    )
                    .help("pass data between roles through shared memory and a barrier");
                    return Err(self.report(f));
                }
                match broadcast(sa, sb) {
                    Some(shape)
                        if shape
                            .iter()
                            .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
                            .is_none_or(|n| n > i32::MAX as u64) =>
                    {
                        let msg = format!(
                            "shapes {sa:?} and {sb:?} broadcast to {shape:?}, more than {} elements",
                            i32::MAX
                        );
                        self.err(&codes::INVALID_VALUE, sp, msg)
                    }
                    Some(shape) => Ok(Frag {
                        dtype: *da,
                        shape,
                        role: *ra,
                    }),
                    None => {
                        let f = Finding::new(
                            &codes::SHAPE_MISMATCH,
                            sp,
                            format!("shapes {sa:?} and {sb:?} do not broadcast"),
                        )
                        .label(asp, format!("shape {sa:?}"))
                        .label(bsp, format!("shape {sb:?}"))
                        .help("broadcasting aligns trailing axes; add an axis with `v[:, None]`");
                        Err(self.report(f))
                    }
                }
            }
            _ => {
                let msg = format!(
                    "operator cannot combine {} and {}",
                    describe_ty(&self.k, a),
                    describe_ty(&self.k, b)
                );
                self.err(&codes::TYPE_MISMATCH, sp, msg)
            }
        }
    }

    fn dtype_mismatch<T>(&mut self, a: DType, b: DType, asp: Span, bsp: Span) -> R<T> {
        let f = Finding::new(
            &codes::DTYPE_MISMATCH,
            asp.to(bsp),
            format!("operands have different dtypes: {a} and {b}"),
        )
        .label(asp, a.to_string())
        .label(bsp, b.to_string())
        .expected(a)
        .actual(b)
        .help(format!("convert one side with lm.cast(x, lm.{a})"));
        Err(self.report(f))
    }

    pub fn compare(
        &mut self,
        op: CmpOp,
        (a, asp): (Value, Span),
        (b, bsp): (Value, Span),
        sp: Span,
    ) -> R<Value> {
        match (&a, &b) {
            (Value::Poison, _) | (_, Value::Poison) => return Err(Reported),
            (
                Value::Int(_) | Value::Float(_) | Value::Bool(_),
                Value::Int(_) | Value::Float(_) | Value::Bool(_),
            ) => {
                let (x, y) = (num(&a), num(&b));
                return Ok(Value::Bool(op.holds(x, y)));
            }
            (Value::Str(x), Value::Str(y)) if matches!(op, CmpOp::Eq | CmpOp::Ne) => {
                return Ok(Value::Bool((x == y) == (op == CmpOp::Eq)));
            }
            _ => {}
        }
        let hint = self.frag_dtype_of(&a).or(self.frag_dtype_of(&b));
        let x = self.expr_of(a, asp, hint)?;
        let y = self.expr_of(b, bsp, hint)?;
        let (tx, ty_y) = (self.k.exprs[x].ty.clone(), self.k.exprs[y].ty.clone());
        let operand = self.result_type(BinOp::Sub, &tx, &ty_y, asp, bsp, sp)?;
        let ty = match operand {
            Ty::Frag { shape, role, .. } => Ty::Frag {
                dtype: DType::Bool,
                shape,
                role,
            },
            _ => Ty::Bool,
        };
        Ok(Value::Expr(self.mk(ExprKind::Cmp(op, x, y), ty, sp)))
    }

    pub fn logical(
        &mut self,
        op: BinOp,
        (a, asp): (Value, Span),
        (b, bsp): (Value, Span),
        sp: Span,
    ) -> R<Value> {
        if let (Value::Bool(x), Value::Bool(y)) = (&a, &b) {
            return Ok(Value::Bool(if op == BinOp::And {
                *x && *y
            } else {
                *x || *y
            }));
        }
        let x = self.condition_of(a, asp)?;
        let y = self.condition_of(b, bsp)?;
        Ok(Value::Expr(self.mk(
            ExprKind::Binary(op, x, y),
            Ty::Bool,
            sp,
        )))
    }

    /// Whether `v` is a per-element condition: a bool register value (a comparison of register
    /// values, or `&` / `|` / `~` of such).
    fn is_bool_frag(&self, v: &Value) -> bool {
        match v {
            Value::Expr(e) => matches!(
                self.k.exprs[*e].ty,
                Ty::Frag {
                    dtype: DType::Bool,
                    ..
                }
            ),
            Value::Frag(f) => self.k.fragments[*f].dtype == DType::Bool,
            _ => false,
        }
    }

    /// `a & b`, `a | b`: per element when either side is a per-element condition (a scalar
    /// condition broadcasts), otherwise `a and b` / `a or b`.
    fn elementwise_logical(
        &mut self,
        op: BinOp,
        (a, asp): (Value, Span),
        (b, bsp): (Value, Span),
        sp: Span,
    ) -> R<Value> {
        if !self.is_bool_frag(&a) && !self.is_bool_frag(&b) {
            return self.logical(op, (a, asp), (b, bsp), sp);
        }
        let x = self.bool_operand(a, asp)?;
        let y = self.bool_operand(b, bsp)?;
        let (tx, ty_y) = (self.k.exprs[x].ty.clone(), self.k.exprs[y].ty.clone());
        let ty = match (&tx, &ty_y) {
            (Ty::Frag { .. }, Ty::Frag { .. }) => self.result_type(op, &tx, &ty_y, asp, bsp, sp)?,
            (Ty::Frag { .. }, _) => tx,
            _ => ty_y,
        };
        Ok(Value::Expr(self.mk(ExprKind::Binary(op, x, y), ty, sp)))
    }

    /// An operand of `&`, `|` or `~`: a per-element condition, or a condition.
    fn bool_operand(&mut self, v: Value, vsp: Span) -> R<ExprId> {
        let v = match v {
            Value::Frag(_) => Value::Expr(self.expr_of(v, vsp, None)?),
            v => v,
        };
        match v {
            Value::Expr(e) if self.is_bool_frag(&v) => Ok(e),
            Value::Expr(e) if matches!(self.k.exprs[e].ty, Ty::Frag { .. }) => {
                let what = describe_ty(&self.k, &self.k.exprs[e].ty);
                self.err(
                    &codes::TYPE_MISMATCH,
                    vsp,
                    format!(
                        "`&`, `|` and `~` combine conditions, per element or not; this is {what}"
                    ),
                )
                .map_err(|r| self.help_last(r, "compare it first: `(s > 0.0) & (cols < n)`"))
            }
            other => self.condition_of(other, vsp),
        }
    }

    pub fn unary(&mut self, op: ast::UnaryOp, v: Value, vsp: Span, sp: Span) -> R<Value> {
        match (op, &v) {
            (_, Value::Poison) => Err(Reported),
            (ast::UnaryOp::Invert, _) if self.is_bool_frag(&v) => {
                let e = self.expr_of(v, vsp, None)?;
                let ty = self.k.exprs[e].ty.clone();
                Ok(Value::Expr(self.mk(ExprKind::Unary(UnOp::Not, e), ty, sp)))
            }
            (ast::UnaryOp::Invert, Value::Bool(b)) => Ok(Value::Bool(!b)),
            (ast::UnaryOp::Invert, Value::Expr(e)) if self.k.exprs[*e].ty == Ty::Bool => Ok(
                Value::Expr(self.mk(ExprKind::Unary(UnOp::Not, *e), Ty::Bool, sp)),
            ),
            (ast::UnaryOp::USub, Value::Int(i)) => match i.checked_neg() {
                Some(n) => Ok(Value::Int(n)),
                None => self.err(&codes::INVALID_VALUE, sp, "compile-time integer overflow"),
            },
            (ast::UnaryOp::USub, Value::Float(f)) => Ok(Value::Float(-f)),
            (ast::UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => Ok(v),
            (ast::UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
            // Python's truth of an integer, folded like `if N:` (a compile-time switch).
            (ast::UnaryOp::Not, Value::Int(i)) => Ok(Value::Bool(*i == 0)),
            (ast::UnaryOp::USub, _) => {
                let e = self.expr_of(v, vsp, None)?;
                let ty = self.k.exprs[e].ty.clone();
                if ty == Ty::Bool {
                    return self.err(&codes::TYPE_MISMATCH, sp, "cannot negate a condition");
                }
                Ok(Value::Expr(self.mk(ExprKind::Unary(UnOp::Neg, e), ty, sp)))
            }
            (ast::UnaryOp::Not, _) => {
                let e = self.condition_of(v, vsp)?;
                Ok(Value::Expr(self.mk(
                    ExprKind::Unary(UnOp::Not, e),
                    Ty::Bool,
                    sp,
                )))
            }
            _ => self.err(
                &codes::UNSUPPORTED_PYTHON,
                sp,
                "this unary operator is not supported",
            ),
        }
    }
}

fn num(v: &Value) -> f64 {
    match v {
        Value::Int(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => *b as i64 as f64,
        _ => f64::NAN,
    }
}

pub fn describe_ty(k: &Kernel, t: &Ty) -> String {
    match t {
        Ty::Index => "an integer index".into(),
        Ty::Bool => "a condition".into(),
        Ty::Scalar(d) => format!("a scalar {d}"),
        Ty::Frag { dtype, shape, role } => format!(
            "a {dtype} register value of shape {shape:?} owned by role `{}`",
            k.roles[*role].name
        ),
    }
}
