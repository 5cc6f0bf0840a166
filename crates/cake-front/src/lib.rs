//! Cake front-end: a schedule file (ordinary Python syntax) → typed Cake IR.
//!
//! The file is parsed with Ruff's Python parser and then *interpreted*: module-level constants
//! and helpers are collected, each `@cake.schedule` function is evaluated into a `Kernel`, and
//! nothing is ever executed on the host. Every problem becomes a located finding; the walk
//! continues after each one so a single run reports them all.

mod args;
mod builtins;
pub mod codes;
mod expr;
mod interp;
pub mod limits;
mod suggest;
mod typing;
mod value;
mod vocab;

use cake_diag::{Finding, Findings, SourceFile, Span};
use cake_ir::*;
use interp::{span, Interp, Reported, R};
use ruff_python_ast as ast;
use ruff_text_size::Ranged;
use std::collections::HashMap;
use value::{Namespace, Value};

/// The result of checking one file: the kernels that were built (possibly partially, when
/// findings were reported) and every finding.
pub struct Checked {
    pub kernels: Vec<Kernel>,
    pub findings: Findings,
}

/// Read `bytes` as a schedule file named `name`.
pub fn check_bytes(name: &str, bytes: &[u8]) -> (SourceFile, Checked) {
    limits::on_big_stack(|| check_bytes_here(name, bytes))
}

fn check_bytes_here(name: &str, bytes: &[u8]) -> (SourceFile, Checked) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            let file = SourceFile::new(name, text);
            let checked = check_here(&file);
            (file, checked)
        }
        Err(e) => {
            // Report at the first invalid byte; the text shown is the lossy decoding (invalid bytes
            // become U+FFFD), so the excerpt never prints raw garbage.
            let file = SourceFile::new(name, String::from_utf8_lossy(bytes).into_owned());
            let at = e.valid_up_to() as u32;
            let mut findings = Findings::default();
            findings.push(
                Finding::new(
                    &codes::NOT_TEXT,
                    Span::new(at, at),
                    format!("the file is not UTF-8 text (invalid byte at offset {at})"),
                )
                .help("Cake schedules are Python source files"),
            );
            (
                file,
                Checked {
                    kernels: Vec::new(),
                    findings,
                },
            )
        }
    }
}

/// Parse and interpret one file.
pub fn check(file: &SourceFile) -> Checked {
    limits::on_big_stack(|| check_here(file))
}

fn check_here(file: &SourceFile) -> Checked {
    let mut findings = Findings::default();
    // Nesting is bounded before parsing (the parser's memory grows with it) and after (the
    // interpreter recurses over the tree).
    if let Some(f) = limits::prescan(&file.text) {
        findings.push(f);
        return Checked {
            kernels: Vec::new(),
            findings,
        };
    }
    let parsed = ruff_python_parser::parse_unchecked_source(&file.text, ast::PySourceType::Python);
    if !parsed.errors().is_empty() {
        for e in parsed.errors() {
            findings.push(Finding::new(
                &codes::SYNTAX_ERROR,
                span(e.location),
                format!("syntax error: {}", e.error),
            ));
        }
        return Checked {
            kernels: Vec::new(),
            findings,
        };
    }
    for e in parsed.unsupported_syntax_errors() {
        findings.push(Finding::new(
            &codes::SYNTAX_ERROR,
            span(e.range),
            format!("syntax error: {e}"),
        ));
    }
    let module = parsed.syntax();
    if let Some(f) = limits::too_deep(module) {
        findings.push(f);
        return Checked {
            kernels: Vec::new(),
            findings,
        };
    }
    let mut globals: HashMap<String, Value> = HashMap::new();
    let mut funcs: HashMap<String, &ast::StmtFunctionDef> = HashMap::new();
    let mut schedules: Vec<&ast::StmtFunctionDef> = Vec::new();

    // Compile-time work done so far in the file (see `limits::WORK_BUDGET`).
    let mut work = 0;
    for (i, stmt) in module.body.iter().enumerate() {
        if let ast::Stmt::Assign(_) = stmt {
            work = module_constant(file, stmt, &mut globals, &mut findings, work);
            continue;
        }
        collect_top_level(
            stmt,
            i,
            &mut globals,
            &mut funcs,
            &mut schedules,
            &mut findings,
        );
    }
    if schedules.is_empty() {
        let end = file.text.len() as u32;
        let msg = if file.text.trim().is_empty() {
            "the file is empty: it defines no schedule".to_string()
        } else {
            "the file defines no `@cake.schedule` function".to_string()
        };
        findings.push(
            Finding::new(&codes::NO_SCHEDULE, Span::new(0, end.min(1)), msg)
                .help("decorate the kernel function with @cake.schedule(targets=[\"sm_90a\"])"),
        );
    }
    let mut kernels = Vec::new();
    for def in schedules {
        let mut it = Interp::new(file, &mut findings, &globals, &funcs).with_work(work);
        if it.exhausted() {
            // The budget was reported where it ran out; nothing more is evaluated.
            break;
        }
        let _ = build_kernel(&mut it, def);
        work = it.work();
        kernels.push(it.k);
    }
    Checked {
        kernels,
        findings: dedup(findings),
    }
}

fn is_schedule_decorator(d: &ast::Decorator) -> bool {
    let e = match &d.expression {
        ast::Expr::Call(c) => &*c.func,
        other => other,
    };
    matches!(e, ast::Expr::Attribute(a) if a.attr.as_str() == "schedule" && matches!(&*a.value, ast::Expr::Name(n) if n.id.as_str() == "cake"))
}

fn collect_top_level<'a>(
    stmt: &'a ast::Stmt,
    index: usize,
    globals: &mut HashMap<String, Value>,
    funcs: &mut HashMap<String, &'a ast::StmtFunctionDef>,
    schedules: &mut Vec<&'a ast::StmtFunctionDef>,
    findings: &mut Findings,
) {
    let sp = span(stmt.range());
    match stmt {
        ast::Stmt::Import(imp) => {
            for alias in &imp.names {
                let name = alias.name.as_str();
                if name == "cake" && alias.asname.is_none() {
                    globals.insert("cake".into(), Value::Namespace(Namespace::Cake));
                } else if name == "cake" {
                    let alias_name = alias.asname.as_ref().map_or("", |a| a.as_str());
                    findings.push(
                        Finding::new(
                            &codes::UNSUPPORTED_PYTHON,
                            span(alias.range),
                            format!("`import cake as {alias_name}`: the module keeps its name in schedules"),
                        )
                            .help("write `import cake` and `from cake import lm`"),
                    );
                } else {
                    findings.push(
                        Finding::new(
                            &codes::UNSUPPORTED_PYTHON,
                            span(alias.range),
                            format!("`import {name}`: schedules import only `cake`"),
                        )
                        .help("write `import cake` and `from cake import lm`"),
                    );
                }
            }
        }
        ast::Stmt::ImportFrom(imp) => {
            let module = imp.module.as_ref().map(|m| m.as_str()).unwrap_or("");
            for alias in &imp.names {
                let name = alias.name.as_str();
                if module == "cake" && name == "lm" {
                    let bound = alias.asname.as_ref().map_or("lm", |a| a.as_str());
                    globals.insert(bound.into(), Value::Namespace(Namespace::Lm));
                } else {
                    findings.push(
                        Finding::new(
                            &codes::UNSUPPORTED_PYTHON,
                            span(alias.range),
                            format!("`from {module} import {name}`: schedules import only `lm` from `cake`"),
                        )
                        .help("write `from cake import lm`"),
                    );
                }
            }
        }
        ast::Stmt::FunctionDef(def) => {
            let name = def.name.as_str().to_string();
            let prev =
                funcs.contains_key(&name) || schedules.iter().any(|s| s.name.as_str() == name);
            if prev {
                findings.push(Finding::new(
                    &codes::DUPLICATE_DEFINITION,
                    span(def.name.range),
                    format!("`{name}` is defined twice"),
                ));
                return;
            }
            if def.decorator_list.iter().any(is_schedule_decorator) {
                schedules.push(def);
            } else if let Some(d) = def.decorator_list.first() {
                findings.push(
                    Finding::new(
                        &codes::UNSUPPORTED_PYTHON,
                        span(d.range),
                        "helpers take no decorators",
                    )
                    .help("only `@cake.schedule(...)` marks a kernel"),
                );
            } else {
                funcs.insert(name, def);
            }
        }
        // Read by `module_constant`.
        ast::Stmt::Assign(_) => {}
        ast::Stmt::Expr(e) if index == 0 && e.value.is_string_literal_expr() => {}
        ast::Stmt::Pass(_) => {}
        other => {
            let what = match other {
                ast::Stmt::ClassDef(_) => "`class`",
                ast::Stmt::While(_) | ast::Stmt::For(_) | ast::Stmt::If(_) => "control flow",
                ast::Stmt::Expr(_) => "a module-level expression",
                _ => "this statement",
            };
            findings.push(
                Finding::new(
                    &codes::UNSUPPORTED_PYTHON,
                    sp,
                    format!("{what} is not allowed at module level"),
                )
                .help("a schedule file holds imports, constants, helper functions and schedules"),
            );
        }
    }
}

/// A module-level constant (`stmt` is an assignment): evaluated once, in order, with `work`
/// units of the file's budget already spent; returns the work spent after it.
fn module_constant(
    file: &SourceFile,
    stmt: &ast::Stmt,
    globals: &mut HashMap<String, Value>,
    findings: &mut Findings,
    work: u64,
) -> u64 {
    let sp = span(stmt.range());
    let empty_funcs = HashMap::new();
    let mut local = Findings::default();
    // Read the globals in place (copying them for every constant was quadratic).
    let mut it = Interp::new(file, &mut local, globals, &empty_funcs).with_work(work);
    let ok = it.exec_block(std::slice::from_ref(stmt)).is_ok();
    let work = it.work();
    for (k, v) in it.into_top_level_names() {
        // A constant whose value failed (its finding is reported) stays bound, poisoned, so
        // its uses fail quietly instead of reporting it as undefined.
        if is_constant(&v) || matches!(v, Value::Poison) {
            globals.insert(k, v);
        } else if ok {
            local.push(
                Finding::new(
                    &codes::NOT_CONSTANT,
                    sp,
                    format!("module-level `{k}` must be a compile-time constant"),
                )
                .help("declare resources inside the schedule function"),
            );
        }
    }
    findings.extend(local.into_sorted());
    work
}

/// One mistake reached several times (an unrolled `range`, a helper called twice) is one
/// finding.
fn dedup(findings: Findings) -> Findings {
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<Finding> = Vec::new();
    for f in findings.into_sorted() {
        if seen.insert((f.code, f.span, f.message.clone())) {
            out.push(f);
        }
    }
    out.into_iter().collect()
}

fn is_constant(v: &Value) -> bool {
    match v {
        Value::Int(_)
        | Value::Float(_)
        | Value::Bool(_)
        | Value::Str(_)
        | Value::None
        | Value::DType(_) => true,
        Value::Tuple(items) => items.iter().all(is_constant),
        _ => false,
    }
}

fn build_kernel(it: &mut Interp<'_>, def: &ast::StmtFunctionDef) -> R<()> {
    it.k.name = def.name.as_str().to_string();
    it.k.span = span(def.name.range);
    it.k.cluster = [1, 1, 1];
    let deco = def
        .decorator_list
        .iter()
        .find(|d| is_schedule_decorator(d))
        .expect("filtered by caller");
    let (deco, zero) = decorator(it, deco);
    let params_ok = params(it, def).is_ok();
    let zero_ok = !params_ok || zeroed(it, &zero).is_ok();
    let deco_ok = deco.is_ok() && zero_ok;
    let body_ok = it.exec_block(&def.body).is_ok();
    it.finish_body();
    if !it.has_tile_loop() && body_ok {
        it.report(
            Finding::new(&codes::MISPLACED_OPERATION, span(def.name.range), "the schedule has no tile loop")
                .help("wrap the role regions in `for tm, tn in lm.tiles(...)`: the grid is derived from it"),
        );
    }
    if deco_ok && params_ok && body_ok {
        Ok(())
    } else {
        Err(Reported)
    }
}

/// Resolve `zero=[...]`'s names against the signature: each a tensor parameter, once.
fn zeroed(it: &mut Interp<'_>, names: &[(String, Span)]) -> R<()> {
    let mut failed = false;
    for (name, sp) in names {
        let found =
            it.k.params
                .iter()
                .find(|(_, p)| &p.name == name)
                .map(|(id, p)| (id, p.kind.clone()));
        match found {
            Some((id, ParamKind::Tensor { .. })) if !it.k.zeroed.contains(&id) => {
                it.k.zeroed.push(id)
            }
            Some((_, ParamKind::Tensor { .. })) => {
                failed = true;
                it.report(Finding::new(
                    &codes::INVALID_VALUE,
                    *sp,
                    format!("`{name}` is named twice in `zero`"),
                ));
            }
            Some(_) => {
                failed = true;
                it.report(Finding::new(
                    &codes::TYPE_MISMATCH,
                    *sp,
                    format!(
                        "`zero` names tensors the launcher fills with zeros; `{name}` is a scalar"
                    ),
                ));
            }
            None => {
                failed = true;
                let names: Vec<String> = it.k.params.iter().map(|(_, p)| p.name.clone()).collect();
                let mut f = Finding::new(
                    &codes::UNKNOWN_NAME,
                    *sp,
                    format!("`zero` names `{name}`, which is not a parameter of the schedule"),
                );
                if let Some(c) = crate::suggest::closest(name, names.iter().map(String::as_str)) {
                    f = f.help(format!("did you mean \"{c}\"?"));
                }
                it.report(f);
            }
        }
    }
    if failed {
        Err(Reported)
    } else {
        Ok(())
    }
}

/// The decorator's settings into the kernel, and `zero=`'s names (resolved once the parameters
/// are known, whatever else failed, so that every finding is reported in one run).
fn decorator(it: &mut Interp<'_>, d: &ast::Decorator) -> (R<()>, Vec<(String, Span)>) {
    let mut zero: Vec<(String, Span)> = Vec::new();
    let r = decorator_settings(it, d, &mut zero);
    (r, zero)
}

fn decorator_settings(
    it: &mut Interp<'_>,
    d: &ast::Decorator,
    zero: &mut Vec<(String, Span)>,
) -> R<()> {
    let ast::Expr::Call(call) = &d.expression else {
        return it.err(
            &codes::BAD_ARGUMENTS,
            span(d.range),
            "`@cake.schedule` needs its targets: @cake.schedule(targets=[\"sm_90a\"])",
        );
    };
    let sp = span(call.range());
    if !call.arguments.args.is_empty() {
        return it
            .err(
                &codes::BAD_ARGUMENTS,
                span(call.arguments.range),
                "`@cake.schedule` takes keyword arguments only",
            )
            .map_err(|r| {
                it.help_last(
                    r,
                    "e.g. @cake.schedule(targets=[\"sm_90a\"], persistent=True)",
                )
            });
    }
    let vocab::Kind::Decorator(params) = vocab::entry(vocab::Builtin::Schedule).kind else {
        unreachable!("cake.schedule is a decorator")
    };
    let keywords: Vec<&str> = params.iter().map(|p| p.name).collect();
    let mut saw_targets = false;
    let mut failed = false;
    for kw in call.arguments.keywords.iter() {
        let Some(name) = &kw.arg else {
            failed = true;
            it.report(Finding::new(
                &codes::UNSUPPORTED_PYTHON,
                span(kw.range),
                "`**kwargs` is not supported",
            ));
            continue;
        };
        let vsp = span(kw.value.range());
        let Ok(v) = it.eval(&kw.value) else {
            failed = true;
            continue;
        };
        match name.as_str() {
            "targets" => {
                saw_targets = true;
                let items = match v {
                    Value::Tuple(items) => items,
                    Value::Str(s) => vec![Value::Str(s)],
                    other => {
                        failed = true;
                        let msg = format!(
                            "`targets` is a list of target names, found {}",
                            other.kind_name()
                        );
                        it.report(Finding::new(&codes::TYPE_MISMATCH, vsp, msg));
                        continue;
                    }
                };
                for item in items {
                    let Value::Str(s) = item else {
                        failed = true;
                        it.report(Finding::new(
                            &codes::TYPE_MISMATCH,
                            vsp,
                            "target names are strings such as \"sm_90a\"",
                        ));
                        continue;
                    };
                    match cake_target::lookup(&s) {
                        Ok(t) => it.k.targets.push(t.name.to_string()),
                        Err(e) => {
                            failed = true;
                            let mut f = Finding::new(&codes::UNKNOWN_TARGET, vsp, e.to_string());
                            if let Some(s) = e.suggestion() {
                                f = f.help(format!(
                                    "did you mean \"{s}\"? Cake compiles for exact targets only"
                                ));
                            }
                            it.report(f);
                        }
                    }
                }
                if it.k.targets.is_empty() && !failed {
                    failed = true;
                    it.report(Finding::new(
                        &codes::INVALID_VALUE,
                        vsp,
                        "`targets` must name at least one target",
                    ));
                }
            }
            "persistent" => match v {
                Value::Bool(b) => it.k.persistent = b,
                other => {
                    failed = true;
                    let msg = format!("`persistent` is True or False, found {}", other.kind_name());
                    it.report(Finding::new(&codes::TYPE_MISMATCH, vsp, msg));
                }
            },
            "zero" => {
                let items = match v {
                    Value::Tuple(items) => items,
                    other => vec![other],
                };
                // Each name's own span where the list is written out.
                let spans: Vec<Span> = match &kw.value {
                    ast::Expr::List(l) => l.elts.iter().map(|e| span(e.range())).collect(),
                    ast::Expr::Tuple(t) => t.elts.iter().map(|e| span(e.range())).collect(),
                    _ => Vec::new(),
                };
                for (i, item) in items.into_iter().enumerate() {
                    let vsp = spans.get(i).copied().unwrap_or(vsp);
                    match item {
                        Value::Str(s) => zero.push((s, vsp)),
                        other => {
                            failed = true;
                            let msg = format!(
                                "`zero` lists tensor parameters by name (strings such as \"SUMS\"), found {}",
                                other.kind_name()
                            );
                            it.report(Finding::new(&codes::TYPE_MISMATCH, vsp, msg));
                        }
                    }
                }
            }
            "ctas_per_sm" => match it.const_int(&v, vsp, "`ctas_per_sm`") {
                Ok(n) if (1..=32).contains(&n) => it.k.min_ctas_per_sm = n as u32,
                Ok(n) => {
                    failed = true;
                    it.report(Finding::new(
                        &codes::INVALID_VALUE,
                        vsp,
                        format!("`ctas_per_sm` (the CTAs each SM must hold at once) is in 1..=32, got {n}"),
                    ));
                }
                Err(_) => failed = true,
            },
            "cluster" => {
                let items = match v {
                    Value::Tuple(items) => items,
                    other => vec![other],
                };
                if items.is_empty() || items.len() > 3 {
                    failed = true;
                    it.report(Finding::new(
                        &codes::INVALID_VALUE,
                        vsp,
                        "`cluster` has 1 to 3 extents",
                    ));
                    continue;
                }
                for (i, item) in items.iter().enumerate() {
                    match it.const_int(item, vsp, "a cluster extent") {
                        Ok(n) if (1..=16).contains(&n) => it.k.cluster[i] = n as u32,
                        Ok(n) => {
                            failed = true;
                            it.report(Finding::new(
                                &codes::INVALID_VALUE,
                                vsp,
                                format!("cluster extents are in 1..=16, got {n}"),
                            ));
                        }
                        Err(_) => failed = true,
                    }
                }
            }
            other => {
                failed = true;
                let mut f = Finding::new(
                    &codes::BAD_ARGUMENTS,
                    span(kw.range),
                    format!("`@cake.schedule` has no parameter `{other}`"),
                )
                .help(
                    match crate::suggest::closest(other, keywords.iter().copied()) {
                        Some(c) => {
                            format!("did you mean `{c}`? it accepts: {}", keywords.join(", "))
                        }
                        None => format!("it accepts: {}", keywords.join(", ")),
                    },
                );
                if other == "target" {
                    f = f.help("write `targets=[\"sm_90a\"]` (a list, even for one target)");
                }
                it.report(f);
            }
        }
    }
    if !saw_targets {
        failed = true;
        it.report(
            Finding::new(
                &codes::BAD_ARGUMENTS,
                sp,
                "`@cake.schedule` must name the targets the schedule supports",
            )
            .help("e.g. @cake.schedule(targets=[\"sm_90a\"])"),
        );
    }
    if failed {
        Err(Reported)
    } else {
        Ok(())
    }
}

fn params(it: &mut Interp<'_>, def: &ast::StmtFunctionDef) -> R<()> {
    let p = &def.parameters;
    let mut failed = false;
    if !p.posonlyargs.is_empty()
        || p.vararg.is_some()
        || !p.kwonlyargs.is_empty()
        || p.kwarg.is_some()
    {
        failed = true;
        it.report(Finding::new(
            &codes::UNSUPPORTED_PYTHON,
            span(p.range),
            "schedule parameters are plain `name: type` pairs",
        ));
    }
    let mut dims: HashMap<String, DimId> = HashMap::new();
    for pd in p.args.iter() {
        let name = pd.name().as_str().to_string();
        let psp = span(pd.range);
        if pd.default.is_some() {
            failed = true;
            it.report(Finding::new(
                &codes::UNSUPPORTED_PYTHON,
                psp,
                "schedule parameters have no defaults",
            ));
            continue;
        }
        if it.k.params.iter().any(|(_, q)| q.name == name) || dims.contains_key(&name) {
            failed = true;
            it.report(Finding::new(
                &codes::DUPLICATE_DEFINITION,
                psp,
                format!("`{name}` is defined twice"),
            ));
            continue;
        }
        let Some(ann) = pd.annotation() else {
            failed = true;
            it.report(
                Finding::new(
                    &codes::TYPE_MISMATCH,
                    psp,
                    format!("parameter `{name}` needs a type"),
                )
                .help("annotate it: `A: lm.tensor[lm.bf16, \"M\", \"K\"]` or `alpha: lm.f32`"),
            );
            continue;
        };
        // The handle the parameter will get (duplicates and failures are skipped or pushed as
        // placeholders below, so count from the arena, not from the position).
        let pid = ParamId::from_index(it.k.params.len());
        match annotation(it, ann, pid, &mut dims) {
            Ok(kind) => {
                let is_tensor = matches!(kind, ParamKind::Tensor { .. });
                let id = it.k.params.push(
                    Param {
                        name: name.clone(),
                        kind: kind.clone(),
                    },
                    psp,
                );
                if is_tensor {
                    it.bind(&name, Value::Tensor(id));
                } else if let ParamKind::Scalar { dtype } = kind {
                    let e = it.mk(ExprKind::Scalar(id), Ty::Scalar(dtype), psp);
                    it.bind(&name, Value::Expr(e));
                }
            }
            Err(_) => {
                failed = true;
                // Keep handles aligned with positions.
                let id = it.k.params.push(
                    Param {
                        name: name.clone(),
                        kind: ParamKind::Scalar { dtype: DType::I32 },
                    },
                    psp,
                );
                let _ = id;
                it.bind(&name, Value::Poison);
            }
        }
    }
    for (name, d) in dims {
        if it.k.params.iter().any(|(_, q)| q.name == name) {
            failed = true;
            let (pid, _) = it.k.dims[d].first_use;
            let sp = it.k.params.span(pid);
            it.report(Finding::new(
                &codes::DUPLICATE_DEFINITION,
                sp,
                format!("dimension `{name}` has the name of a parameter"),
            ));
            continue;
        }
        let sp = it.k.params.span(it.k.dims[d].first_use.0);
        let e = it.mk(ExprKind::Dim(d), Ty::Index, sp);
        it.bind(&name, Value::Expr(e));
    }
    if failed {
        Err(Reported)
    } else {
        Ok(())
    }
}

/// `lm.tensor[dtype, dims...]` or a scalar dtype.
fn annotation(
    it: &mut Interp<'_>,
    ann: &ast::Expr,
    pid: ParamId,
    dims: &mut HashMap<String, DimId>,
) -> R<ParamKind> {
    let asp = span(ann.range());
    if let ast::Expr::Subscript(s) = ann {
        // `lm.tensor[...]`, with `lm` really the Cake namespace.
        let is_tensor = match &*s.value {
            ast::Expr::Attribute(a) if a.attr.as_str() == "tensor" => {
                matches!(it.eval(&a.value)?, Value::Namespace(Namespace::Lm))
            }
            _ => false,
        };
        if !is_tensor {
            return it.err(
                &codes::TYPE_MISMATCH,
                asp,
                "tensor parameters are annotated `lm.tensor[dtype, dims...]`",
            );
        }
        let parts: Vec<&ast::Expr> = match &*s.slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        let Some(first) = parts.first() else {
            return it.err(
                &codes::BAD_ARGUMENTS,
                asp,
                "lm.tensor[...] needs a dtype and at least one dimension",
            );
        };
        let dtype = match it.eval(first)? {
            Value::DType(d) => d,
            other => {
                let msg = format!(
                    "the first entry of lm.tensor[...] is the dtype, found {}",
                    other.kind_name()
                );
                return it.err(&codes::TYPE_MISMATCH, span(parts[0].range()), msg);
            }
        };
        if parts.len() < 2 || parts.len() > 6 {
            return it.err(&codes::INVALID_VALUE, asp, "a tensor has 1 to 5 dimensions");
        }
        let mut extents = Vec::new();
        for (axis, p) in parts[1..].iter().enumerate() {
            let psp = span(p.range());
            match it.eval(p)? {
                Value::Str(name) => {
                    if !is_identifier(&name) {
                        return it.err(
                            &codes::INVALID_VALUE,
                            psp,
                            format!("`{name}` is not a valid dimension name"),
                        );
                    }
                    let id = *dims.entry(name.clone()).or_insert_with(|| {
                        it.k.dims.push(
                            Dim {
                                name,
                                first_use: (pid, axis),
                            },
                            psp,
                        )
                    });
                    extents.push(Extent::Sym(id));
                }
                // Extents are 32-bit `int`s in the generated code.
                Value::Int(n) if n >= 1 && n <= i32::MAX as i64 => {
                    extents.push(Extent::Fixed(n as u32))
                }
                Value::Int(n) => {
                    return it.err(
                        &codes::INVALID_VALUE,
                        psp,
                        if n < 1 {
                            format!("a fixed extent must be positive, got {n}")
                        } else {
                            format!("a fixed extent must be at most {}, got {n}", i32::MAX)
                        },
                    )
                }
                other => {
                    let msg = format!(
                        "a dimension is a name (\"M\") or an integer, found {}",
                        other.kind_name()
                    );
                    return it.err(&codes::TYPE_MISMATCH, psp, msg);
                }
            }
        }
        return Ok(ParamKind::Tensor {
            dtype,
            dims: extents,
        });
    }
    match it.eval(ann)? {
        Value::DType(d) => Ok(ParamKind::Scalar { dtype: d }),
        other => {
            let msg = format!(
                "a parameter type is `lm.tensor[...]` or a dtype, found {}",
                other.kind_name()
            );
            it.err(&codes::TYPE_MISMATCH, asp, msg)
        }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
