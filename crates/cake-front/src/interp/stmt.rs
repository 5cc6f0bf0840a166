//! Statements: interpreted in order; a statement that fails reports a finding and the walk
//! continues with the next, so one run reports every independent mistake. Run-time loops,
//! role regions and helper inlining live here too: they are what gives statements scope.

use super::{span, Frame, Interp, LoopLog, Reported, R};
use crate::args::{bind, CallArgs};
use crate::codes;
use crate::expr::is_full_slice;
use crate::limits::MAX_INLINE_DEPTH;
use crate::typing::broadcast;
use crate::value::{TilesArgs, Value};
use crate::vocab::Param;
use cake_diag::{Finding, Span};
use cake_ir::*;
use ruff_python_ast as ast;
use ruff_text_size::Ranged;
use std::collections::{HashMap, HashSet};

pub(crate) enum Flow {
    Normal,
    Return(Value, Span),
}

/// Whether two bindings of a name are the same value, so rebinding one to the other changes
/// nothing (`x = x` in a loop body).
fn same_binding(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Poison, _) | (_, Value::Poison) => true,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x.to_bits() == y.to_bits(),
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Expr(x), Value::Expr(y)) => x == y,
        (Value::Tuple(xs), Value::Tuple(ys)) => {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same_binding(x, y))
        }
        // Handles, strings and the like: equal when they print the same.
        _ => format!("{a:?}") == format!("{b:?}"),
    }
}

impl Interp<'_> {
    /// Interprets a run-time loop's body with a [`LoopLog`], then reports the names it read
    /// that the body's own fragment writes make stale from the second iteration on.
    fn run_loop_body<T>(&mut self, at: Span, body: impl FnOnce(&mut Self) -> T) -> (T, bool) {
        let before = self.frames.last().expect("a frame").vars.clone();
        // Copying the names is work too: a loop in an unrolled loop copies them every time.
        let _ = self.charge(before.len() as u64, at);
        self.frames
            .last_mut()
            .expect("a frame")
            .loop_logs
            .push(LoopLog {
                before,
                ..LoopLog::default()
            });
        let out = body(self);
        let log = self
            .frames
            .last_mut()
            .expect("a frame")
            .loop_logs
            .pop()
            .expect("the log pushed above");
        let mut reported_names = HashSet::new();
        // Names found innocent: an unrolled body reads a name many times, and the answer is the
        // same for every read.
        let mut cleared: HashSet<&str> = HashSet::new();
        let mut any = false;
        // Names read in the body with their binding from before the loop, then bound again
        // later in the body to something else: Python's next iteration reads the new binding.
        for (name, at) in &log.reads {
            if !log.rebound.contains(name)
                || reported_names.contains(name)
                || !cleared.insert(name.as_str())
            {
                continue;
            }
            let (Some(old), Some(new)) = (
                log.before.get(name),
                self.frames.last().expect("a frame").vars.get(name),
            ) else {
                continue;
            };
            if same_binding(old, new) {
                continue;
            }
            reported_names.insert(name.clone());
            self.reported_loop_reads.insert(*at);
            any = true;
            let f = Finding::new(
                &codes::LOOP_CARRIED_NAME,
                *at,
                format!("`{name}` is bound again later in this loop's body, but the body is written once: every iteration reads `{name}` as bound before the loop"),
            )
            .note(format!("Python would carry the new `{name}` into the next iteration; Cake does not"))
            .help("compute the value from the loop variable, or keep run-time state in a fragment (`frag[:] = ...`)");
            self.report(f);
        }
        cleared.clear();
        for (name, at) in &log.reads {
            if reported_names.contains(name)
                || self.reported_loop_reads.contains(at)
                || cleared.contains(name.as_str())
            {
                continue;
            }
            let Some(value) = log.before.get(name) else {
                continue;
            };
            let Some(&(frag, written)) = log
                .overwrites
                .iter()
                .find(|(frag, _)| self.value_reads_fragment(value, *frag))
            else {
                cleared.insert(name.as_str());
                continue;
            };
            reported_names.insert(name.clone());
            self.reported_loop_reads.insert(*at);
            any = true;
            let fname = self.k.fragments[frag].name.clone();
            let line = self.file.line_of(written.start);
            let f = Finding::new(
                &codes::STALE_VALUE,
                *at,
                format!("`{name}` was computed from `{fname}` before the loop, and the loop overwrites `{fname}` on line {line}"),
            )
            .label(written, format!("`{fname}` overwritten here, in the same loop"))
            .note(format!("Cake evaluates `{name}` where it is used, so from the second iteration on it would read the new `{fname}`; Python would read the value from before the loop"))
            .help(format!("to keep the value from before the loop, declare a fragment and assign it once (`frag[:] = {name}`) before the loop"));
            self.report(f);
        }
        (out, any)
    }

    /// After `frag` is overwritten at `at`, names bound to values computed from it go stale,
    /// and every run-time loop being interpreted records the overwrite.
    fn mark_stale(&mut self, frag: FragId, at: Span) {
        let frame = self.frames.last().expect("a frame");
        let _ = self.charge(frame.vars.len() as u64, at);
        let frame = self.frames.last().expect("a frame");
        let names: Vec<String> = frame
            .vars
            .iter()
            .filter(|(_, v)| self.value_reads_fragment(v, frag))
            .map(|(n, _)| n.clone())
            .collect();
        let frame = self.frames.last_mut().expect("a frame");
        for n in names {
            frame.stale.entry(n).or_insert((frag, at));
        }
        for log in self.frames.iter_mut().flat_map(|f| f.loop_logs.iter_mut()) {
            // The first overwrite of each fragment is the one reported.
            if !log.overwrites.iter().any(|(f, _)| *f == frag) {
                log.overwrites.push((frag, at));
            }
        }
    }

    fn with_block(&mut self, f: impl FnOnce(&mut Self) -> R<Flow>) -> (Block, R<Flow>) {
        self.blocks.push(Vec::new());
        let r = f(self);
        (self.blocks.pop().expect("pushed above"), r)
    }

    // -----------------------------------------------------------------------------------------
    // Statements

    pub fn exec_block(&mut self, body: &[ast::Stmt]) -> R<Flow> {
        let mut failed = false;
        for (i, s) in body.iter().enumerate() {
            // A docstring is the first statement and a bare string: skip it.
            if i == 0 {
                if let ast::Stmt::Expr(e) = s {
                    if e.value.is_string_literal_expr() {
                        continue;
                    }
                }
            }
            match self.exec(s) {
                Ok(Flow::Normal) => {}
                Ok(ret @ Flow::Return(..)) => return Ok(ret),
                Err(Reported) => failed = true,
            }
        }
        if failed {
            Err(Reported)
        } else {
            Ok(Flow::Normal)
        }
    }

    fn exec(&mut self, s: &ast::Stmt) -> R<Flow> {
        self.enter(span(s.range()))?;
        let r = self.exec_here(s);
        self.leave();
        r
    }

    fn exec_here(&mut self, s: &ast::Stmt) -> R<Flow> {
        use ast::Stmt as S;
        let sp = span(s.range());
        match s {
            S::Assign(a) => self.exec_assign(a).map(|_| Flow::Normal),
            S::AugAssign(a) => self.exec_aug_assign(a).map(|_| Flow::Normal),
            S::Expr(e) => {
                let v = self.eval(&e.value)?;
                match v {
                    Value::None | Value::Poison => {}
                    other => {
                        let f = Finding::new(
                            &codes::UNUSED_VALUE,
                            sp,
                            format!(
                                "this expression computes {} that is never used",
                                other.kind_name()
                            ),
                        )
                        .help("assign it to a name, or remove the line");
                        self.report(f);
                    }
                }
                Ok(Flow::Normal)
            }
            S::For(f) => self.exec_for(f),
            S::If(i) => self.exec_if(i),
            S::With(w) => self.exec_with(w),
            S::Return(r) => self.exec_return(r, sp),
            S::Pass(_) => Ok(Flow::Normal),
            // `del X` of a tensor parameter: the Python idiom for an argument left unused on
            // purpose; it tells the unused-parameter check (CAKE-M005) so.
            S::Delete(d)
                if d.targets.iter().all(|t| {
                    matches!(t, ast::Expr::Name(n)
                        if matches!(self.lookup(n.id.as_str()), Some(Value::Tensor(_))))
                }) =>
            {
                for t in &d.targets {
                    if let ast::Expr::Name(n) = t {
                        if let Some(Value::Tensor(p)) = self.lookup(n.id.as_str()) {
                            if !self.k.unused_params.contains(&p) {
                                self.k.unused_params.push(p);
                            }
                        }
                    }
                }
                Ok(Flow::Normal)
            }
            S::Assert(a) => self.exec_assert(a).map(|_| Flow::Normal),
            other => {
                let (what, instead) = unsupported_stmt(other);
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

    fn exec_assign(&mut self, a: &ast::StmtAssign) -> R<()> {
        if a.targets.len() != 1 {
            return self
                .err(
                    &codes::UNSUPPORTED_PYTHON,
                    span(a.range),
                    "chained assignment (`a = b = ...`) is not supported",
                )
                .map_err(|r| self.help_last(r, "assign each name on its own line"));
        }
        let target = &a.targets[0];
        // `frag[:] = value` overwrites a fragment in place.
        if let ast::Expr::Subscript(sub) = target {
            return self.assign_fragment(sub, &a.value, span(a.range));
        }
        // `a[:], b[:] = x, y` overwrites several fragments in one statement.
        if let ast::Expr::Tuple(t) = target {
            if t.elts.iter().any(|e| matches!(e, ast::Expr::Subscript(_))) {
                return self.assign_fragments(t, &a.value, span(a.range));
            }
        }
        self.current_decl_span = span(a.value.range());
        self.pending_name = match target {
            ast::Expr::Name(n) => Some(n.id.as_str().to_string()),
            _ => None,
        };
        let v = self.eval(&a.value);
        self.pending_name = None;
        let v = v.unwrap_or(Value::Poison);
        let failed = matches!(v, Value::Poison);
        self.bind_target(target, v, span(a.value.range()))?;
        if failed {
            Err(Reported)
        } else {
            Ok(())
        }
    }

    fn assign_fragment(&mut self, sub: &ast::ExprSubscript, value: &ast::Expr, sp: Span) -> R<()> {
        let frag = self.fragment_target(sub)?;
        let vspan = span(value.range());
        let v = self.eval(value)?;
        let value = self.fragment_value(frag, v, vspan)?;
        self.emit_op(Op::Assign { dst: frag, value }, sp)?;
        self.mark_stale(frag, sp);
        Ok(())
    }

    /// `a[:], b[:] = x, y`: several fragments overwritten by one statement, every value
    /// computed before any fragment is written (a row-layout statement's loads go out in one
    /// batch, docs/language.md §9.8a).
    fn assign_fragments(&mut self, targets: &ast::ExprTuple, value: &ast::Expr, sp: Span) -> R<()> {
        let ast::Expr::Tuple(values) = value else {
            return self
                .err(
                    &codes::UNSUPPORTED_PYTHON,
                    span(value.range()),
                    "fragments assigned together take a tuple of values",
                )
                .map_err(|r| {
                    self.help_last(r, "write `a[:], b[:] = x, y`, one value per fragment")
                });
        };
        if values.elts.len() != targets.elts.len() {
            return self.err(
                &codes::SHAPE_MISMATCH,
                span(targets.range),
                format!(
                    "{} fragments but {} values",
                    targets.elts.len(),
                    values.elts.len()
                ),
            );
        }
        // Every target is resolved and every value checked before the first error returns, so
        // one run reports them all.
        let mut pairs: Vec<(FragId, ExprId)> = Vec::new();
        let mut failed = false;
        for (t, v) in targets.elts.iter().zip(&values.elts) {
            let ast::Expr::Subscript(sub) = t else {
                failed = true;
                let r = self.err::<()>(
                    &codes::UNSUPPORTED_PYTHON,
                    span(t.range()),
                    "fragments are assigned together only with other fragments (`frag[:]`)",
                );
                let _ = r.map_err(|r| {
                    self.help_last(r, "assign names and nested targets on lines of their own")
                });
                continue;
            };
            let Ok(frag) = self.fragment_target(sub) else {
                failed = true;
                continue;
            };
            if pairs.iter().any(|(f, _)| *f == frag) {
                failed = true;
                let _ = self.err::<()>(
                    &codes::UNSUPPORTED_PYTHON,
                    span(t.range()),
                    format!(
                        "fragment `{}` is assigned twice in one statement",
                        self.k.fragments[frag].name
                    ),
                );
                continue;
            }
            let vspan = span(v.range());
            match self
                .eval(v)
                .and_then(|x| self.fragment_value(frag, x, vspan))
            {
                Ok(e) => pairs.push((frag, e)),
                Err(_) => failed = true,
            }
        }
        if failed {
            return Err(Reported);
        }
        let frags: Vec<FragId> = pairs.iter().map(|(f, _)| *f).collect();
        self.emit_op(Op::AssignMany { pairs }, sp)?;
        for f in frags {
            self.mark_stale(f, sp);
        }
        Ok(())
    }

    /// The fragment a `frag[:]` target names.
    fn fragment_target(&mut self, sub: &ast::ExprSubscript) -> R<FragId> {
        let base = self.eval(&sub.value)?;
        // A fragment whose declaration failed is already reported: assigning to it is not a
        // second finding.
        if let Value::Poison = base {
            return Err(Reported);
        }
        let Value::Frag(frag) = base else {
            return self.err(
                &codes::TYPE_MISMATCH,
                span(sub.value.range()),
                format!(
                    "only fragments can be assigned in place; this is {}",
                    base.kind_name()
                ),
            );
        };
        if !is_full_slice(&sub.slice) {
            return self
                .err(
                    &codes::UNSUPPORTED_PYTHON,
                    span(sub.slice.range()),
                    "fragments are assigned whole",
                )
                .map_err(|r| {
                    self.help_last(
                        r,
                        "write `frag[:] = value`; use lm.select to update part of it",
                    )
                });
        }
        Ok(frag)
    }

    /// Check that `v` can be stored into `frag` (same dtype, broadcastable shape, same role).
    fn fragment_value(&mut self, frag: FragId, v: Value, vspan: Span) -> R<ExprId> {
        let decl = self.k.fragments[frag].clone();
        let e = self.expr_of(v, vspan, Some(decl.dtype))?;
        match self.k.exprs[e].ty.clone() {
            Ty::Frag { dtype, shape, .. } => {
                if dtype != decl.dtype {
                    let f = Finding::new(
                        &codes::DTYPE_MISMATCH,
                        vspan,
                        format!(
                            "fragment `{}` holds {}, but the value is {}",
                            decl.name, decl.dtype, dtype
                        ),
                    )
                    .expected(decl.dtype)
                    .actual(dtype)
                    .help(format!("convert with lm.cast(value, lm.{})", decl.dtype));
                    return Err(self.report(f));
                }
                if broadcast(&shape, &decl.shape).as_deref() != Some(&decl.shape[..]) {
                    let f = Finding::new(
                        &codes::SHAPE_MISMATCH,
                        vspan,
                        format!(
                            "fragment `{}` has shape {:?}, but the value has shape {:?}",
                            decl.name, decl.shape, shape
                        ),
                    )
                    .expected(format!("{:?}", decl.shape))
                    .actual(format!("{shape:?}"));
                    return Err(self.report(f));
                }
                Ok(e)
            }
            Ty::Scalar(d) if d.is_float() && !decl.dtype.is_float() => {
                let f = Finding::new(
                    &codes::DTYPE_MISMATCH,
                    vspan,
                    format!(
                        "fragment `{}` holds {}, but the value is a {d} scalar",
                        decl.name, decl.dtype
                    ),
                )
                .expected(decl.dtype)
                .actual(d)
                .help("use an integer value, or lm.cast(value, lm.i32)");
                Err(self.report(f))
            }
            Ty::Index | Ty::Scalar(_) => Ok(e),
            Ty::Bool => self.err(
                &codes::TYPE_MISMATCH,
                vspan,
                "a bool cannot be stored in a numeric fragment",
            ),
        }
    }

    fn bind_target(&mut self, target: &ast::Expr, v: Value, vspan: Span) -> R<()> {
        match target {
            ast::Expr::Name(n) => {
                self.bind(n.id.as_str(), v);
                Ok(())
            }
            ast::Expr::Tuple(t) => {
                let items = match v {
                    Value::Tuple(items) => items,
                    Value::Poison => vec![Value::Poison; t.elts.len()],
                    other => {
                        for e in &t.elts {
                            let _ = self.bind_target(e, Value::Poison, vspan);
                        }
                        return self.err(
                            &codes::TYPE_MISMATCH,
                            vspan,
                            format!(
                                "cannot unpack {} into {} names",
                                other.kind_name(),
                                t.elts.len()
                            ),
                        );
                    }
                };
                if items.len() != t.elts.len() {
                    for e in &t.elts {
                        let _ = self.bind_target(e, Value::Poison, vspan);
                    }
                    return self.err(
                        &codes::SHAPE_MISMATCH,
                        span(t.range),
                        format!(
                            "{} names but {} values to unpack",
                            t.elts.len(),
                            items.len()
                        ),
                    );
                }
                let mut ok = true;
                for (e, item) in t.elts.iter().zip(items) {
                    ok &= self.bind_target(e, item, vspan).is_ok();
                }
                if ok {
                    Ok(())
                } else {
                    Err(Reported)
                }
            }
            other => self.err(
                &codes::UNSUPPORTED_PYTHON,
                span(other.range()),
                "only names, tuples of names and `fragment[:]` can be assigned",
            ),
        }
    }

    fn exec_aug_assign(&mut self, a: &ast::StmtAugAssign) -> R<()> {
        let sp = span(a.range);
        match &*a.target {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                let Some(cur) = self.lookup(name) else {
                    return self.err(
                        &codes::UNKNOWN_NAME,
                        span(n.range),
                        format!("`{name}` is not defined"),
                    );
                };
                let rhs = self.eval(&a.value)?;
                let v =
                    self.binary(a.op, (cur, span(n.range)), (rhs, span(a.value.range())), sp)?;
                self.bind(name, v);
                Ok(())
            }
            ast::Expr::Subscript(sub) => {
                let base = self.eval(&sub.value)?;
                let Value::Frag(frag) = base else {
                    return self.err(
                        &codes::TYPE_MISMATCH,
                        span(sub.value.range()),
                        "only fragments can be updated in place",
                    );
                };
                if !is_full_slice(&sub.slice) {
                    return self
                        .err(
                            &codes::UNSUPPORTED_PYTHON,
                            span(sub.slice.range()),
                            "fragments are updated whole",
                        )
                        .map_err(|r| {
                            self.help_last(
                                r,
                                "write `frag[:] += value`; use lm.select to update part of it",
                            )
                        });
                }
                let rhs = self.eval(&a.value)?;
                let v = self.binary(
                    a.op,
                    (Value::Frag(frag), span(sub.range)),
                    (rhs, span(a.value.range())),
                    sp,
                )?;
                let value = self.fragment_value(frag, v, sp)?;
                self.emit_op(Op::Assign { dst: frag, value }, sp)?;
                self.mark_stale(frag, sp);
                Ok(())
            }
            other => self.err(
                &codes::UNSUPPORTED_PYTHON,
                span(other.range()),
                "only names and `fragment[:]` can be updated",
            ),
        }
    }

    fn exec_assert(&mut self, a: &ast::StmtAssert) -> R<()> {
        let tspan = span(a.test.range());
        let v = self.eval(&a.test)?;
        let ok = match v {
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Poison => return Err(Reported),
            _ => {
                return self.err(&codes::NOT_CONSTANT, tspan, "`assert` checks compile-time conditions only")
                    .map_err(|r| self.help_last(r, "assert on constants such as tile sizes; run-time values are checked by the verifier"));
            }
        };
        if !ok {
            let msg = match a.msg.as_deref() {
                Some(ast::Expr::StringLiteral(s)) => s.value.to_str().to_string(),
                _ => "compile-time assertion failed".to_string(),
            };
            return self.err(&codes::INVALID_VALUE, tspan, msg);
        }
        Ok(())
    }

    fn exec_return(&mut self, r: &ast::StmtReturn, sp: Span) -> R<Flow> {
        let is_helper = self.frames.last().is_some_and(|f| f.is_helper);
        if !is_helper {
            return self
                .err(
                    &codes::MISPLACED_OPERATION,
                    sp,
                    "a schedule does not return a value",
                )
                .map_err(|r| self.help_last(r, "write results with lm.store or a TMA store"));
        }
        if self.runtime_ifs > 0 {
            return self
                .err(
                    &codes::MISPLACED_OPERATION,
                    sp,
                    "a helper cannot return from inside a run-time `if`",
                )
                .map_err(|r| self.help_last(r, "compute both values and pick one with lm.select"));
        }
        let v = match &r.value {
            Some(e) => self.eval(e)?,
            None => Value::None,
        };
        Ok(Flow::Return(v, sp))
    }

    fn exec_for(&mut self, f: &ast::StmtFor) -> R<Flow> {
        let sp = span(f.range);
        if f.is_async || !f.orelse.is_empty() {
            return self.err(
                &codes::UNSUPPORTED_PYTHON,
                sp,
                "`async for` and `for ... else` are not part of Cake IR",
            );
        }
        let iter_span = span(f.iter.range());
        let it = match self.eval(&f.iter) {
            Ok(it) => it,
            Err(r) => {
                // Still check the body (with the loop names unusable), emitting none of it.
                let _ = self.bind_target(&f.target, Value::Poison, iter_span);
                let poisoned = self.role.is_none() || self.in_poisoned_role;
                let saved = std::mem::replace(&mut self.in_poisoned_role, poisoned);
                let _ = self.with_block(|me| me.exec_block(&f.body));
                self.in_poisoned_role = saved;
                return Err(r);
            }
        };
        match it {
            Value::PyRange(values) => {
                // Compile-time loop: unrolled.
                let mut failed = false;
                for v in values {
                    self.charge(1, iter_span)?;
                    self.bind_target(&f.target, Value::Int(v), iter_span)?;
                    match self.exec_block(&f.body) {
                        Ok(Flow::Normal) => {}
                        Ok(ret) => return Ok(ret),
                        Err(Reported) => failed = true,
                    }
                }
                if failed {
                    Err(Reported)
                } else {
                    Ok(Flow::Normal)
                }
            }
            Value::RangeIter {
                start,
                stop,
                pipeline,
            } => {
                let var = match &*f.target {
                    ast::Expr::Name(n) => n.id.as_str().to_string(),
                    other => {
                        return self.err(
                            &codes::UNSUPPORTED_PYTHON,
                            span(other.range()),
                            "an `lm.range` loop binds one name",
                        )
                    }
                };
                let start = self.index_of(*start, iter_span)?;
                let stop = self.index_of(*stop, iter_span)?;
                let id = self.k.loops.push(
                    Loop {
                        var_name: var.clone(),
                        kind: LoopKind::Range {
                            start,
                            stop,
                            pipeline,
                        },
                    },
                    iter_span,
                );
                let var_expr = self.mk(ExprKind::LoopVar(id), Ty::Index, span(f.target.range()));
                self.bind(&var, Value::Expr(var_expr));
                self.loops.push(id);
                let ((body, r), stale) =
                    self.run_loop_body(iter_span, |me| me.with_block(|me| me.exec_block(&f.body)));
                self.loops.pop();
                self.emit(Stmt::Loop { id, body }, sp);
                let r = if stale { Err(Reported) } else { r };
                self.no_return_inside(r, "an `lm.range` loop")
            }
            Value::TilesIter(args) => self.exec_tiles(f, *args, sp, iter_span),
            Value::Poison => Err(Reported),
            other => {
                let msg = format!("cannot loop over {}", other.kind_name());
                self.err(&codes::TYPE_MISMATCH, iter_span, msg).map_err(|r| {
                    self.help_last(r, "loop over `range(n)` (unrolled at compile time), `lm.range(...)` or `lm.tiles(...)`")
                })
            }
        }
    }

    /// A tile-loop keyword that needs a persistent grid without clusters (`stream=`,
    /// `dynamic=True`), at its span `s`.
    fn persistent_without_clusters(
        &mut self,
        s: Span,
        not_persistent: &str,
        clustered: &str,
    ) -> R<()> {
        if !self.k.persistent {
            return self
                .err(&codes::BAD_ARGUMENTS, s, not_persistent)
                .map_err(|r| self.help_last(r, "add `persistent=True` to `@cake.schedule(...)`"));
        }
        if self.k.cluster.iter().product::<u32>() > 1 {
            return self.err(&codes::BAD_ARGUMENTS, s, clustered);
        }
        Ok(())
    }

    fn no_return_inside(&mut self, r: R<Flow>, what: &str) -> R<Flow> {
        match r {
            Ok(Flow::Return(_, sp)) => self.err(
                &codes::MISPLACED_OPERATION,
                sp,
                format!("cannot return from inside {what}"),
            ),
            other => other.map(|_| Flow::Normal),
        }
    }

    fn exec_tiles(
        &mut self,
        f: &ast::StmtFor,
        args: TilesArgs,
        sp: Span,
        iter_span: Span,
    ) -> R<Flow> {
        let TilesArgs {
            counts,
            group,
            stream,
            dynamic,
        } = args;
        if let Some(prev) = self.tiles_loop {
            let prev_span = self.k.loops.span(prev);
            let f = Finding::new(
                &codes::MISPLACED_OPERATION,
                iter_span,
                "a schedule has exactly one tile loop",
            )
            .label(prev_span, "the tile loop is declared here");
            return Err(self.report(f));
        }
        if self.role.is_some() || !self.loops.is_empty() {
            return self.err(
                &codes::MISPLACED_OPERATION,
                iter_span,
                "the tile loop must be at the top level of the schedule, enclosing the role regions",
            );
        }
        let names: Vec<(String, Span)> = match &*f.target {
            ast::Expr::Name(n) => vec![(n.id.as_str().to_string(), span(n.range))],
            ast::Expr::Tuple(t) => {
                let mut names = Vec::new();
                for e in &t.elts {
                    match e {
                        ast::Expr::Name(n) => {
                            names.push((n.id.as_str().to_string(), span(n.range)))
                        }
                        other => {
                            return self.err(
                                &codes::UNSUPPORTED_PYTHON,
                                span(other.range()),
                                "tile coordinates bind plain names",
                            )
                        }
                    }
                }
                names
            }
            other => {
                return self.err(
                    &codes::UNSUPPORTED_PYTHON,
                    span(other.range()),
                    "tile coordinates bind plain names",
                )
            }
        };
        // A stream-K loop binds each axis and then its run's first and stop K steps.
        let bound = counts.len() + if stream.is_some() { 2 } else { 0 };
        if (names.len() != 1 || stream.is_some()) && names.len() != bound {
            let msg = if stream.is_some() {
                format!(
                    "a stream-K `lm.tiles` over {} binds {} names: one per axis, then the run's first and stop K steps (`for tn, k0, k1 in lm.tiles(n, stream=KB)`), but the loop binds {}",
                    if counts.len() == 1 { "1 axis".to_string() } else { format!("{} axes", counts.len()) },
                    bound,
                    names.len()
                )
            } else {
                format!(
                    "`lm.tiles` has {} axes but the loop binds {} names",
                    counts.len(),
                    names.len()
                )
            };
            return self.err(&codes::SHAPE_MISMATCH, span(f.target.range()), msg);
        }
        let stream = match stream {
            None => None,
            Some((v, s)) => Some((self.index_of(v, s)?, s)),
        };
        if let Some((_, s)) = stream {
            self.persistent_without_clusters(
                s,
                "stream-K splits the tiles' K steps over a persistent grid: the schedule must be `persistent=True`",
                "a stream-K tile loop runs without clusters: each CTA's share of the K steps is its own",
            )?;
        }
        if let Some(s) = dynamic {
            self.persistent_without_clusters(
                s,
                "dynamic tiles are taken by a persistent grid's CTAs as each comes to its next tile: the schedule must be `persistent=True`",
                "dynamic tiles are taken per CTA: a cluster's CTAs would take different tiles",
            )?;
            if stream.is_some() {
                return self.err(
                    &codes::BAD_ARGUMENTS,
                    s,
                    "a stream-K tile loop shares out its steps in advance: it cannot also take its tiles dynamically",
                );
            }
        }
        let mut count_exprs = Vec::new();
        for c in counts {
            count_exprs.push(self.index_of(c, iter_span)?);
        }
        let axis_names: Vec<String> = if names.len() == bound {
            names.iter().map(|(n, _)| n.clone()).collect()
        } else {
            (0..count_exprs.len())
                .map(|i| format!("{}[{}]", names[0].0, i))
                .collect()
        };
        let id = self.k.loops.push(
            Loop {
                var_name: names[0].0.clone(),
                kind: LoopKind::Tiles {
                    counts: count_exprs.clone(),
                    names: axis_names,
                    group,
                    stream: stream.map(|(e, _)| e),
                    dynamic: dynamic.is_some(),
                },
            },
            iter_span,
        );
        let coords: Vec<Value> = (0..bound)
            .map(|axis| {
                let s = names.get(axis).map_or(names[0].1, |n| n.1);
                Value::Expr(self.mk(ExprKind::TileCoord { tiles: id, axis }, Ty::Index, s))
            })
            .collect();
        if names.len() == coords.len() {
            for ((n, _), c) in names.iter().zip(coords) {
                self.bind(n, c);
            }
        } else {
            self.bind(&names[0].0, Value::Tuple(coords));
        }
        self.tiles_loop = Some(id);
        self.loops.push(id);
        let ((body, r), stale) =
            self.run_loop_body(iter_span, |me| me.with_block(|me| me.exec_block(&f.body)));
        self.loops.pop();
        self.emit(Stmt::Loop { id, body }, sp);
        let r = if stale { Err(Reported) } else { r };
        self.no_return_inside(r, "the tile loop")
    }

    fn exec_if(&mut self, i: &ast::StmtIf) -> R<Flow> {
        self.exec_if_chain(&i.test, &i.body, &i.elif_else_clauses, i.range)
    }

    /// `if test: body` followed by `clauses` (`elif`s and an `else`). Compile-time conditions
    /// are followed in a loop; a run-time one nests the rest of the chain in its `else`.
    fn exec_if_chain<'s>(
        &mut self,
        mut test: &'s ast::Expr,
        mut body: &'s [ast::Stmt],
        mut clauses: &'s [ast::ElifElseClause],
        mut range: ruff_text_size::TextRange,
    ) -> R<Flow> {
        loop {
            let cond_span = span(test.range());
            let cond = self.eval(test)?;
            let Some(taken) = cond.compile_time_truth() else {
                let c = self.condition_of(cond, cond_span)?;
                self.runtime_ifs += 1;
                let (then_body, r1) = self.with_block(|me| me.exec_block(body));
                let (else_body, r2) = self.with_block(|me| me.exec_else(clauses));
                self.runtime_ifs -= 1;
                self.emit(
                    Stmt::If {
                        cond: c,
                        then_body,
                        else_body,
                    },
                    span(range),
                );
                return r1.and(r2).map(|_| Flow::Normal);
            };
            // Compile-time `if`: only the taken branch is interpreted.
            if taken {
                return self.exec_block(body);
            }
            let Some((first, rest)) = clauses.split_first() else {
                return Ok(Flow::Normal);
            };
            let Some(next) = &first.test else {
                return self.exec_block(&first.body);
            };
            (test, body, clauses, range) = (next, &first.body, rest, first.range);
        }
    }

    /// The `elif`/`else` clauses after a run-time condition.
    fn exec_else(&mut self, clauses: &[ast::ElifElseClause]) -> R<Flow> {
        let Some((first, rest)) = clauses.split_first() else {
            return Ok(Flow::Normal);
        };
        match &first.test {
            None => self.exec_block(&first.body),
            Some(test) => {
                // Each run-time `elif` nests one level deeper, like the `if` it stands for.
                self.enter(span(first.range))?;
                let r = self.exec_if_chain(test, &first.body, rest, first.range);
                self.leave();
                r
            }
        }
    }

    fn exec_with(&mut self, w: &ast::StmtWith) -> R<Flow> {
        let sp = span(w.range);
        if w.is_async || w.items.len() != 1 || w.items[0].optional_vars.is_some() {
            return self.err(
                &codes::UNSUPPORTED_PYTHON,
                sp,
                "`with` takes exactly one role or `lm.ahead(n)`: `with <role>:`",
            );
        }
        let item = &w.items[0];
        let ispan = span(item.context_expr.range());
        let v = self.eval(&item.context_expr)?;
        if let Value::Poison = v {
            // The role's declaration already failed: still check the region's body, but report
            // nothing about its missing role and emit none of it.
            let saved = std::mem::replace(&mut self.in_poisoned_role, true);
            let _ = self.with_block(|me| me.exec_block(&w.body));
            self.in_poisoned_role = saved;
            return Err(Reported);
        }
        if let Value::Ahead(steps) = v {
            return self.exec_ahead(steps, w, ispan, sp);
        }
        let Value::Role(role) = v else {
            let msg = format!("`with` expects a role, found {}", v.kind_name());
            return self
                .err(&codes::TYPE_MISMATCH, ispan, msg)
                .map_err(|r| self.help_last(r, "write `with <role>:` or `with lm.ahead(n):`"));
        };
        if let Some((outer, outer_span)) = self.role {
            let f = Finding::new(
                &codes::MISPLACED_OPERATION,
                ispan,
                format!(
                    "role region `{}` is nested inside role region `{}`",
                    self.k.roles[role].name, self.k.roles[outer].name
                ),
            )
            .label(outer_span, "the enclosing role region starts here")
            .help("role regions partition the warps; place them side by side");
            return Err(self.report(f));
        }
        self.role = Some((role, ispan));
        let (body, r) = self.with_block(|me| me.exec_block(&w.body));
        self.role = None;
        self.emit(Stmt::Role { role, body }, sp);
        self.no_return_inside(r, "a role region")
    }

    /// `with lm.ahead(steps):`: its statements, issued `steps` iterations early. Where it may
    /// stand and what it may hold is the verifier's (`CAKE-M013`); here, only that a role runs it.
    fn exec_ahead(&mut self, steps: u32, w: &ast::StmtWith, ispan: Span, sp: Span) -> R<Flow> {
        self.current_role(ispan, "`with lm.ahead(...)`")?;
        let (body, r) = self.with_block(|me| me.exec_block(&w.body));
        self.emit(Stmt::Ahead { steps, body }, sp);
        self.no_return_inside(r, "an `lm.ahead` region")
    }

    // -----------------------------------------------------------------------------------------
    // Helper inlining

    pub fn call_helper(&mut self, name: &str, args: CallArgs) -> R<Value> {
        let def = *self.funcs.get(name).expect("Value::Func names a helper");
        self.charge(1, args.span)?;
        if self.frames.len() > MAX_INLINE_DEPTH {
            return self.err(
                &codes::INLINE_DEPTH,
                args.span,
                format!("helper `{name}` is inlined more than {MAX_INLINE_DEPTH} levels deep (recursion?)"),
            );
        }
        let inlined = Inlined {
            helper: name.to_string(),
            body: span(def.range),
            call: args.span,
        };
        if !self.k.inlined.contains(&inlined) {
            self.k.inlined.push(inlined);
        }
        let params: Vec<&ast::ParameterWithDefault> = def.parameters.args.iter().collect();
        let names: Vec<String> = params
            .iter()
            .map(|p| p.name().as_str().to_string())
            .collect();
        let sig: Vec<Param<'_>> = params
            .iter()
            .map(|p| Param {
                name: p.name().as_str(),
                required: p.default.is_none(),
            })
            .collect();
        let slots = bind(name, &sig, args).map_err(|e| {
            let mut f = Finding::new(&codes::BAD_ARGUMENTS, e.span, e.message)
                .label(span(def.name.range), "helper defined here");
            if let Some(h) = e.help {
                f = f.help(h);
            }
            self.report(f)
        })?;
        let mut vars = HashMap::new();
        for ((n, slot), p) in names.iter().zip(slots).zip(&params) {
            let v = match slot {
                Some((v, _)) => v,
                None => {
                    // Defaults are evaluated in the module scope, at each call.
                    let d = p
                        .default
                        .as_deref()
                        .expect("slot filled or default present");
                    self.frames.push(Frame {
                        vars: HashMap::new(),
                        is_helper: true,
                        stale: HashMap::new(),
                        loop_logs: Vec::new(),
                    });
                    let v = self.eval(d);
                    self.frames.pop();
                    v?
                }
            };
            vars.insert(n.clone(), v);
        }
        self.frames.push(Frame {
            vars,
            is_helper: true,
            stale: HashMap::new(),
            loop_logs: Vec::new(),
        });
        let saved_ifs = std::mem::take(&mut self.runtime_ifs);
        let r = self.exec_block(&def.body);
        self.runtime_ifs = saved_ifs;
        self.frames.pop();
        match r {
            Ok(Flow::Return(v, _)) => Ok(v),
            Ok(Flow::Normal) => Ok(Value::None),
            Err(Reported) => Err(Reported),
        }
    }
}

/// What an unsupported statement is and what to write instead.
fn unsupported_stmt(s: &ast::Stmt) -> (&'static str, &'static str) {
    use ast::Stmt as S;
    match s {
        S::While(_) => (
            "`while`",
            "use `lm.range(...)` for a run-time loop or `range(n)` for an unrolled one",
        ),
        S::FunctionDef(_) => (
            "a nested function",
            "define helpers at module level; they are inlined at each call",
        ),
        S::ClassDef(_) => (
            "`class`",
            "declare resources with lm.smem, lm.role, lm.barrier, ...",
        ),
        S::Import(_) | S::ImportFrom(_) => (
            "an import inside a function",
            "import `cake` at the top of the file",
        ),
        S::Try(_) | S::Raise(_) => ("exceptions", "use `assert` for compile-time checks"),
        S::Break(_) | S::Continue(_) => (
            "`break`/`continue`",
            "loops run to completion; guard the body with `if`",
        ),
        S::Delete(_) => (
            "`del` of anything but a tensor parameter",
            "names go out of use on their own; `del` only marks a tensor parameter as unused on purpose",
        ),
        S::Global(_) | S::Nonlocal(_) => {
            ("`global`/`nonlocal`", "pass values to helpers as arguments")
        }
        S::AnnAssign(_) => (
            "an annotated assignment",
            "drop the annotation: types are inferred",
        ),
        S::Match(_) => ("`match`", "use `if`/`elif`"),
        S::TypeAlias(_) => ("`type` aliases", "use a module-level constant"),
        _ => (
            "this statement",
            "see docs/language.md for the supported subset",
        ),
    }
}
