//! Expression evaluation: names and attributes are resolved (builtins through the vocabulary
//! table), calls dispatched, and operators handed to `typing`.

use crate::args::CallArgs;
use crate::codes;
use crate::interp::{span, Interp, Reported, R};
use crate::value::{Namespace, Value};
use crate::vocab::{self, Builtin, Kind, Recv};
use cake_diag::{Finding, Span};
use cake_ir::*;
use ruff_python_ast as ast;
use ruff_text_size::Ranged;

impl Interp<'_> {
    pub fn eval(&mut self, e: &ast::Expr) -> R<Value> {
        self.enter(span(e.range()))?;
        let r = self.eval_here(e);
        self.leave();
        r
    }

    fn eval_here(&mut self, e: &ast::Expr) -> R<Value> {
        use ast::Expr as E;
        let sp = span(e.range());
        match e {
            E::Name(n) => {
                let name = n.id.as_str();
                match name {
                    "True" => return Ok(Value::Bool(true)),
                    "False" => return Ok(Value::Bool(false)),
                    "None" => return Ok(Value::None),
                    _ => {}
                }
                // Python builtins shadow the schedule's own names, as they always have here.
                if let Some(e) = vocab::lookup(Recv::Python, name) {
                    return Ok(Value::Builtin(e.id));
                }
                if let Some((frag, at)) = self.stale(name) {
                    let fname = self.k.fragments[frag].name.clone();
                    let line = self.line_of(at.start);
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
                match c.compile_time_truth() {
                    Some(true) => self.eval(&i.body),
                    Some(false) => self.eval(&i.orelse),
                    None if matches!(c, Value::Poison) => Err(Reported),
                    None => self
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
        let pending = self.take_pending_name();
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
        self.set_pending_name(pending);
        let args = CallArgs {
            span: sp,
            positional,
            keywords,
        };
        let r = match callee? {
            Value::Builtin(b) => self.call_builtin(b, None, args),
            Value::Method(recv, b) => self.call_builtin(b, Some(*recv), args),
            // Upward into the statement layer: a helper's body is statements.
            Value::Func(name) => self.call_helper(&name, args),
            Value::Poison => Err(Reported),
            other => {
                let msg = format!("{} is not callable", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, span(c.func.range()), msg)
            }
        };
        self.set_pending_name(None);
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
        let full = parts.iter().filter(|p| is_full_slice(p)).count();
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
        let recv = match &base {
            Value::Namespace(ns) => return self.namespace_attr(*ns, attr, sp),
            Value::Poison => return Err(Reported),
            other => other.recv(),
        };
        if let Some(e) = recv.and_then(|r| vocab::lookup(r, attr)) {
            return match e.kind {
                Kind::Read => self.property(e.id, base, sp),
                _ => Ok(Value::Method(Box::new(base), e.id)),
            };
        }
        // Only methods are offered, not properties: the help has always read that way.
        let methods = recv.map(vocab::methods).unwrap_or_default();
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

    /// A property row of the vocabulary read on `base`.
    fn property(&mut self, id: Builtin, base: Value, sp: Span) -> R<Value> {
        let ints = |shape: Vec<u32>| {
            Value::Tuple(shape.into_iter().map(|d| Value::Int(d as i64)).collect())
        };
        Ok(match (id, base) {
            (Builtin::ViewT, Value::View(mut v)) => {
                v.transposed = !v.transposed;
                Value::View(v)
            }
            (Builtin::ViewShape, Value::View(v)) => ints(self.view_ref_shape(&v)),
            (Builtin::ViewDType, Value::View(v)) => Value::DType(self.k.views[v.view].dtype),
            (Builtin::PipelineStage, Value::Pipeline(p)) => {
                if !self.in_loop_over(p) {
                    let name = self.k.pipelines[p].name.clone();
                    let f = Finding::new(
                        &codes::MISPLACED_OPERATION,
                        sp,
                        format!("`{name}.stage` names the stage of a loop over `{name}`, and no enclosing loop runs over it"),
                    )
                    .help(format!("read it inside `for ... in lm.range(..., pipeline={name})`"));
                    return Err(self.report(f));
                }
                Value::Expr(self.mk(ExprKind::PipelineStage(p), Ty::Index, sp))
            }
            (Builtin::RoleIndex, Value::Role(r)) => {
                Value::Expr(self.mk(ExprKind::RoleIndex(r), Ty::Index, sp))
            }
            (Builtin::RoleSize, Value::Role(r)) => Value::Int(self.k.roles[r].replicas() as i64),
            (Builtin::FragShape, Value::Frag(f)) => ints(self.k.fragments[f].shape.clone()),
            (Builtin::FragDType, Value::Frag(f)) => Value::DType(self.k.fragments[f].dtype),
            (Builtin::TensorShape, Value::Tensor(p)) => {
                let ParamKind::Tensor { dims, .. } = self.k.params[p].kind.clone() else {
                    unreachable!()
                };
                let mut out = Vec::new();
                for d in dims {
                    out.push(match d {
                        Extent::Fixed(n) => Value::Int(n as i64),
                        Extent::Sym(s) => Value::Expr(self.mk(ExprKind::Dim(s), Ty::Index, sp)),
                    });
                }
                Value::Tuple(out)
            }
            (Builtin::TensorDType, Value::Tensor(p)) => {
                let ParamKind::Tensor { dtype, .. } = self.k.params[p].kind else {
                    unreachable!()
                };
                Value::DType(dtype)
            }
            (id, base) => unreachable!("{id:?} is not a property of {}", base.kind_name()),
        })
    }

    pub fn namespace_attr(&mut self, ns: Namespace, attr: &str, sp: Span) -> R<Value> {
        let recv = match ns {
            Namespace::Cake => Recv::Cake,
            Namespace::Lm => Recv::Lm,
        };
        if ns == Namespace::Lm {
            if let Some(d) = DType::from_name(attr) {
                return Ok(Value::DType(d));
            }
        }
        match vocab::lookup(recv, attr) {
            Some(e) => match e.id {
                Builtin::LmModule => Ok(Value::Namespace(Namespace::Lm)),
                Builtin::Inf => Ok(Value::Float(f64::INFINITY)),
                Builtin::TensorAnnotation => {
                    let f = Finding::new(
                        &codes::TYPE_MISMATCH,
                        sp,
                        "`lm.tensor[...]` is a parameter annotation, not a value",
                    )
                    .help("annotate a schedule parameter: `A: lm.tensor[lm.bf16, \"M\", \"K\"]`");
                    Err(self.report(f))
                }
                id => Ok(Value::Builtin(id)),
            },
            None if ns == Namespace::Cake => self.err(
                &codes::UNKNOWN_NAME,
                sp,
                format!("`cake.{attr}` does not exist"),
            ),
            None => {
                let mut f = Finding::new(
                    &codes::UNKNOWN_NAME,
                    sp,
                    format!("`lm.{attr}` does not exist"),
                );
                if let Some(c) = crate::suggest::closest(attr, vocab::lm_names()) {
                    f = f.help(format!("did you mean `lm.{c}`?"));
                }
                Err(self.report(f))
            }
        }
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

pub fn is_full_slice(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Slice(s) if s.lower.is_none() && s.upper.is_none() && s.step.is_none())
}
