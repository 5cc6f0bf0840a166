//! Expression evaluation and typing: constants fold, run-time values become typed IR
//! expressions, and every operator checks its operand types with a located error.

use crate::args::CallArgs;
use crate::codes;
use crate::interp::{span, Interp, Reported, R};
use crate::value::{Builtin, Value};
use cake_diag::{Finding, Span};
use cake_ir::*;
use ruff_python_ast as ast;
use ruff_text_size::Ranged;

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
    pub fn eval(&mut self, e: &ast::Expr) -> R<Value> {
        use ast::Expr as E;
        let sp = span(e.range());
        match e {
            E::Name(n) => {
                let name = n.id.as_str();
                match name {
                    "True" => return Ok(Value::Bool(true)),
                    "False" => return Ok(Value::Bool(false)),
                    "None" => return Ok(Value::None),
                    "range" => return Ok(Value::Builtin(Builtin::Range)),
                    "len" => return Ok(Value::Builtin(Builtin::Len)),
                    "min" => return Ok(Value::Builtin(Builtin::PyMin)),
                    "max" => return Ok(Value::Builtin(Builtin::PyMax)),
                    _ => {}
                }
                if let Some((frag, at)) = self.stale(name) {
                    let fname = self.k.fragments[frag].name.clone();
                    let line = self.file.line_of(at.start);
                    let f = Finding::new(
                        &codes::STALE_VALUE,
                        sp,
                        format!("`{name}` was computed from `{fname}`, which was overwritten on line {line} after `{name}` was bound"),
                    )
                    .label(at, format!("`{fname}` overwritten here"))
                    .note(format!("Cake evaluates `{name}` where it is used, so it would read the new `{fname}`; Python would read the old one"))
                    .help(format!("compute `{name}` again after the update, or use it before `{fname}` changes"));
                    return Err(self.report(f));
                }
                self.note_read(name, sp);
                match self.lookup(name) {
                    Some(v) => Ok(v),
                    None => {
                        let names = self.visible_names();
                        let mut f = Finding::new(
                            &codes::UNKNOWN_NAME,
                            sp,
                            format!("`{name}` is not defined"),
                        );
                        if let Some(c) =
                            crate::suggest::closest(name, names.iter().map(|s| s.as_str()))
                        {
                            f = f.help(format!("did you mean `{c}`?"));
                        }
                        Err(self.report(f))
                    }
                }
            }
            E::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64() {
                    Some(v) => Ok(Value::Int(v)),
                    None => self.err(
                        &codes::INVALID_VALUE,
                        sp,
                        "integer literal does not fit in 64 bits",
                    ),
                },
                ast::Number::Float(f) => Ok(Value::Float(*f)),
                ast::Number::Complex { .. } => self.err(
                    &codes::UNSUPPORTED_PYTHON,
                    sp,
                    "complex numbers are not part of Cake IR",
                ),
            },
            E::BooleanLiteral(b) => Ok(Value::Bool(b.value)),
            E::NoneLiteral(_) => Ok(Value::None),
            E::StringLiteral(s) => Ok(Value::Str(s.value.to_str().to_string())),
            E::Tuple(t) => self.eval_items(&t.elts).map(Value::Tuple),
            E::List(l) => self.eval_items(&l.elts).map(Value::Tuple),
            E::Attribute(a) => {
                let base = self.eval(&a.value)?;
                self.attribute(base, a.attr.as_str(), sp)
            }
            E::Call(c) => self.eval_call(c, sp),
            E::Subscript(s) => self.eval_subscript(s, sp),
            E::BinOp(b) => {
                let l = self.eval(&b.left);
                let r = self.eval(&b.right);
                let (l, r) = (l?, r?);
                self.binary(
                    b.op,
                    (l, span(b.left.range())),
                    (r, span(b.right.range())),
                    sp,
                )
            }
            E::UnaryOp(u) => {
                let v = self.eval(&u.operand)?;
                self.unary(u.op, v, span(u.operand.range()), sp)
            }
            E::Compare(c) => {
                if c.ops.len() != 1 {
                    return self
                        .err(
                            &codes::UNSUPPORTED_PYTHON,
                            sp,
                            "chained comparisons are not supported",
                        )
                        .map_err(|r| self.help_last(r, "split it: `a < b and b < c`"));
                }
                let l = self.eval(&c.left)?;
                let r = self.eval(&c.comparators[0])?;
                let op = match c.ops[0] {
                    ast::CmpOp::Lt => CmpOp::Lt,
                    ast::CmpOp::LtE => CmpOp::Le,
                    ast::CmpOp::Gt => CmpOp::Gt,
                    ast::CmpOp::GtE => CmpOp::Ge,
                    ast::CmpOp::Eq => CmpOp::Eq,
                    ast::CmpOp::NotEq => CmpOp::Ne,
                    _ => {
                        return self.err(
                            &codes::UNSUPPORTED_PYTHON,
                            sp,
                            "`in`, `not in`, `is` and `is not` are not supported",
                        )
                    }
                };
                self.compare(
                    op,
                    (l, span(c.left.range())),
                    (r, span(c.comparators[0].range())),
                    sp,
                )
            }
            E::BoolOp(b) => {
                let op = match b.op {
                    ast::BoolOp::And => BinOp::And,
                    ast::BoolOp::Or => BinOp::Or,
                };
                let mut acc = self.eval(&b.values[0])?;
                let mut acc_span = span(b.values[0].range());
                for v in &b.values[1..] {
                    let rhs = self.eval(v)?;
                    acc = self.logical(op, (acc, acc_span), (rhs, span(v.range())), sp)?;
                    acc_span = sp;
                }
                Ok(acc)
            }
            E::If(i) => {
                let c = self.eval(&i.test)?;
                match c {
                    Value::Bool(true) => self.eval(&i.body),
                    Value::Bool(false) => self.eval(&i.orelse),
                    Value::Poison => Err(Reported),
                    _ => self
                        .err(
                            &codes::NOT_CONSTANT,
                            span(i.test.range()),
                            "a conditional expression needs a compile-time condition",
                        )
                        .map_err(|r| {
                            self.help_last(r, "use lm.select(cond, a, b) for a run-time choice")
                        }),
                }
            }
            other => {
                let (what, instead) = unsupported_expr(other);
                let f = Finding::new(
                    &codes::UNSUPPORTED_PYTHON,
                    sp,
                    format!("{what}: not part of Cake IR"),
                )
                .help(instead);
                Err(self.report(f))
            }
        }
    }

    pub fn help_last(&mut self, r: Reported, help: &str) -> Reported {
        if let Some(last) = self.findings.last_mut() {
            last.help = Some(help.to_string());
        }
        r
    }

    fn eval_items(&mut self, items: &[ast::Expr]) -> R<Vec<Value>> {
        let mut out = Vec::with_capacity(items.len());
        let mut failed = false;
        for e in items {
            match self.eval(e) {
                Ok(v) => out.push(v),
                Err(_) => {
                    failed = true;
                    out.push(Value::Poison)
                }
            }
        }
        if failed {
            Err(Reported)
        } else {
            Ok(out)
        }
    }

    fn eval_call(&mut self, c: &ast::ExprCall, sp: Span) -> R<Value> {
        // The resource name belongs to the outermost call of the assignment only.
        let pending = self.pending_name.take();
        let callee = self.eval(&c.func);
        let mut positional = Vec::new();
        let mut keywords = Vec::new();
        let mut failed = callee.is_err();
        for a in c.arguments.args.iter() {
            if let ast::Expr::Starred(s) = a {
                self.report(Finding::new(
                    &codes::UNSUPPORTED_PYTHON,
                    span(s.range),
                    "`*args` unpacking is not supported",
                ));
                failed = true;
                continue;
            }
            match self.eval(a) {
                Ok(v) => positional.push((v, span(a.range()))),
                Err(_) => failed = true,
            }
        }
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                self.report(Finding::new(
                    &codes::UNSUPPORTED_PYTHON,
                    span(k.range),
                    "`**kwargs` unpacking is not supported",
                ));
                failed = true;
                continue;
            };
            match self.eval(&k.value) {
                Ok(v) => keywords.push((name.as_str().to_string(), v, span(k.range))),
                Err(_) => failed = true,
            }
        }
        if failed {
            return Err(Reported);
        }
        if positional.iter().any(|(v, _)| matches!(v, Value::Poison))
            || keywords.iter().any(|(_, v, _)| matches!(v, Value::Poison))
        {
            return Err(Reported);
        }
        self.pending_name = pending;
        let args = CallArgs {
            span: sp,
            positional,
            keywords,
        };
        let r = match callee? {
            Value::Builtin(b) => self.call_builtin(b, args),
            Value::Method(recv, name) => self.call_method(*recv, name, args),
            Value::Func(name) => self.call_helper(&name, args),
            Value::Poison => Err(Reported),
            other => {
                let msg = format!("{} is not callable", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, span(c.func.range()), msg)
            }
        };
        self.pending_name = None;
        r
    }

    fn eval_subscript(&mut self, s: &ast::ExprSubscript, sp: Span) -> R<Value> {
        let base = self.eval(&s.value)?;
        match base {
            Value::Tuple(items) => {
                let idx = self.eval(&s.slice)?;
                let Value::Int(i) = idx else {
                    return self.err(
                        &codes::NOT_CONSTANT,
                        span(s.slice.range()),
                        "tuples are indexed with compile-time integers",
                    );
                };
                let n = items.len() as i64;
                let j = if i < 0 { i + n } else { i };
                if j < 0 || j >= n {
                    return self.err(
                        &codes::INVALID_VALUE,
                        span(s.slice.range()),
                        format!("index {i} out of range for a tuple of {n}"),
                    );
                }
                Ok(items[j as usize].clone())
            }
            Value::Expr(e) if matches!(self.k.exprs[e].ty, Ty::Frag { .. }) => {
                self.expand(e, &s.slice, sp)
            }
            Value::Frag(f) => {
                let e = self.frag_expr(f, span(s.value.range()));
                self.expand(e, &s.slice, sp)
            }
            Value::Poison => Err(Reported),
            other => {
                let msg = format!("{} cannot be indexed", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, sp, msg)
            }
        }
    }

    /// `v[:, None]`: insert unit axes where `None` stands.
    fn expand(&mut self, e: ExprId, slice: &ast::Expr, sp: Span) -> R<Value> {
        let Ty::Frag { dtype, shape, role } = self.k.exprs[e].ty.clone() else {
            unreachable!("checked by caller")
        };
        let parts: Vec<&ast::Expr> = match slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let full = parts
            .iter()
            .filter(|p| crate::interp::is_full_slice(p))
            .count();
        let nones = parts.iter().filter(|p| p.is_none_literal_expr()).count();
        if full + nones != parts.len() || full != shape.len() || nones == 0 {
            return self
                .err(
                    &codes::UNSUPPORTED_PYTHON,
                    span(slice.range()),
                    "fragments are indexed only to add broadcast axes",
                )
                .map_err(|r| {
                    self.help_last(
                        r,
                        "write `v[:, None]` to broadcast a per-row vector along columns",
                    )
                });
        }
        let mut cur = e;
        let mut cur_shape = shape;
        for (axis, p) in parts.iter().enumerate() {
            if p.is_none_literal_expr() {
                cur_shape.insert(axis, 1);
                cur = self.mk(
                    ExprKind::Expand { arg: cur, axis },
                    Ty::Frag {
                        dtype,
                        shape: cur_shape.clone(),
                        role,
                    },
                    sp,
                );
            }
        }
        Ok(Value::Expr(cur))
    }

    pub fn attribute(&mut self, base: Value, attr: &str, sp: Span) -> R<Value> {
        let methods: &[&'static str] = match &base {
            Value::Namespace(ns) => return self.namespace_attr(*ns, attr, sp),
            Value::Pool(_) => &["view"],
            Value::View(v) => match attr {
                "T" => {
                    let mut v = v.clone();
                    v.transposed = !v.transposed;
                    return Ok(Value::View(v));
                }
                "shape" => {
                    let shape = self.view_ref_shape(v);
                    return Ok(Value::Tuple(
                        shape.into_iter().map(|d| Value::Int(d as i64)).collect(),
                    ));
                }
                "dtype" => return Ok(Value::DType(self.k.views[v.view].dtype)),
                _ => &[
                    "tma_load",
                    "tma_store",
                    "cp_async",
                    "rows",
                    "stage",
                    "store",
                    "scatter_add",
                ],
            },
            Value::Pipeline(p) => match attr {
                "stage" => {
                    let p = *p;
                    let inside = self.loops.iter().any(|l| {
                        matches!(
                            self.k.loops[*l].kind,
                            LoopKind::Range { pipeline: Some(q), .. } if q == p
                        )
                    });
                    if !inside {
                        let name = self.k.pipelines[p].name.clone();
                        let f = Finding::new(
                            &codes::MISPLACED_OPERATION,
                            sp,
                            format!("`{name}.stage` names the stage of a loop over `{name}`, and no enclosing loop runs over it"),
                        )
                        .help(format!("read it inside `for ... in lm.range(..., pipeline={name})`"));
                        return Err(self.report(f));
                    }
                    let e = self.mk(ExprKind::PipelineStage(p), Ty::Index, sp);
                    return Ok(Value::Expr(e));
                }
                _ => &[],
            },
            Value::Role(r) => match attr {
                "index" => {
                    let e = self.mk(ExprKind::RoleIndex(*r), Ty::Index, sp);
                    return Ok(Value::Expr(e));
                }
                "size" => return Ok(Value::Int(self.k.roles[*r].replicas() as i64)),
                _ => &["fragment"],
            },
            Value::Frag(f) => match attr {
                "shape" => {
                    let shape = self.k.fragments[*f].shape.clone();
                    return Ok(Value::Tuple(
                        shape.into_iter().map(|d| Value::Int(d as i64)).collect(),
                    ));
                }
                "dtype" => return Ok(Value::DType(self.k.fragments[*f].dtype)),
                _ => &[],
            },
            Value::Tensor(p) => match attr {
                "shape" => {
                    let ParamKind::Tensor { dims, .. } = self.k.params[*p].kind.clone() else {
                        unreachable!()
                    };
                    let mut out = Vec::new();
                    for d in dims {
                        out.push(match d {
                            Extent::Fixed(n) => Value::Int(n as i64),
                            Extent::Sym(s) => Value::Expr(self.mk(ExprKind::Dim(s), Ty::Index, sp)),
                        });
                    }
                    return Ok(Value::Tuple(out));
                }
                "dtype" => {
                    let ParamKind::Tensor { dtype, .. } = self.k.params[*p].kind else {
                        unreachable!()
                    };
                    return Ok(Value::DType(dtype));
                }
                _ => &[],
            },
            Value::Poison => return Err(Reported),
            _ => &[],
        };
        if let Some(m) = methods.iter().find(|m| **m == attr) {
            return Ok(Value::Method(Box::new(base), m));
        }
        let mut f = Finding::new(
            &codes::UNKNOWN_NAME,
            sp,
            format!("{} has no attribute `{attr}`", base.kind_name()),
        );
        if let Some(c) = crate::suggest::closest(attr, methods.iter().copied()) {
            f = f.help(format!("did you mean `{c}`?"));
        } else if !methods.is_empty() {
            f = f.help(format!("available: {}", methods.join(", ")));
        }
        Err(self.report(f))
    }

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
            Value::Int(i) => Ok(self.mk(ExprKind::Int(i), Ty::Index, sp)),
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
                    self.help_last(r, "a per-element condition selects values with lm.select")
                })
            }
        }
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
                _ => self.mk(ExprKind::Int(i), Ty::Index, sp),
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
        let Some(op) = py_binop(op) else {
            return self
                .err(
                    &codes::UNSUPPORTED_PYTHON,
                    sp,
                    "this operator is not supported",
                )
                .map_err(|r| self.help_last(r, "supported: + - * / // %"));
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
        match (&a, &b) {
            (Value::Poison, _) | (_, Value::Poison) => return Err(Reported),
            (Value::Int(x), Value::Int(y)) => {
                if op == BinOp::Div {
                    return Ok(Value::Float(*x as f64 / *y as f64));
                }
                return match fold_int(op, *x, *y) {
                    Some(v) => Ok(Value::Int(v)),
                    None if *y == 0 => self.err(
                        &codes::INVALID_VALUE,
                        bsp,
                        "division by zero in a compile-time expression",
                    ),
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
        match (a, b) {
            (Index, Index) => {
                if op == BinOp::Div {
                    return self
                        .err(
                            &codes::TYPE_MISMATCH,
                            sp,
                            "`/` on integer indices is ambiguous",
                        )
                        .map_err(|r| self.help_last(r, "use `//` (floor) or lm.cdiv (ceiling)"));
                }
                Ok(Index)
            }
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
                return Ok(Value::Bool(match op {
                    CmpOp::Lt => x < y,
                    CmpOp::Le => x <= y,
                    CmpOp::Gt => x > y,
                    CmpOp::Ge => x >= y,
                    CmpOp::Eq => x == y,
                    CmpOp::Ne => x != y,
                }));
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

    fn logical(
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

    fn unary(&mut self, op: ast::UnaryOp, v: Value, vsp: Span, sp: Span) -> R<Value> {
        match (op, &v) {
            (_, Value::Poison) => Err(Reported),
            (ast::UnaryOp::USub, Value::Int(i)) => match i.checked_neg() {
                Some(n) => Ok(Value::Int(n)),
                None => self.err(&codes::INVALID_VALUE, sp, "compile-time integer overflow"),
            },
            (ast::UnaryOp::USub, Value::Float(f)) => Ok(Value::Float(-f)),
            (ast::UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => Ok(v),
            (ast::UnaryOp::Not, Value::Bool(b)) => Ok(Value::Bool(!b)),
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

    /// `lm.exp2(x)` etc.: float fragments and scalars only.
    pub fn math_fn(&mut self, op: UnOp, v: Value, vsp: Span, sp: Span) -> R<Value> {
        if let Value::Float(x) = v {
            let r = match op {
                UnOp::Exp2 => x.exp2(),
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

fn unsupported_expr(e: &ast::Expr) -> (&'static str, &'static str) {
    use ast::Expr as E;
    match e {
        E::Lambda(_) => ("`lambda`", "define a helper function at module level"),
        E::ListComp(_) | E::SetComp(_) | E::DictComp(_) | E::Generator(_) => (
            "a comprehension",
            "write the values out, or unroll with `for i in range(n)`",
        ),
        E::Dict(_) | E::Set(_) => ("dicts and sets", "use tuples and named constants"),
        E::FString(_) | E::TString(_) => ("f-strings", "use a plain string"),
        E::Await(_) | E::Yield(_) | E::YieldFrom(_) => (
            "`await`/`yield`",
            "schedules are straight-line programs over roles and loops",
        ),
        E::Named(_) => ("the walrus operator", "assign on its own line"),
        E::Starred(_) => ("`*` unpacking", "pass arguments explicitly"),
        E::BytesLiteral(_) => ("bytes literals", "use integers and strings"),
        E::Slice(_) => (
            "a slice here",
            "use view.rows(start, count) for a row range",
        ),
        _ => (
            "this expression",
            "see docs/language.md for the supported subset",
        ),
    }
}

impl Interp<'_> {
    pub fn builtin_value_call(&mut self, b: Builtin, args: CallArgs) -> R<Value> {
        // Python builtins folded at compile time.
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
