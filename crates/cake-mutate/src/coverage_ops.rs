//! Operators that plant coverage and size hazards: copies that fill less than is read or step
//! past their boxes, outputs left unwritten, an operand loaded from the wrong tensor, TMEM
//! regions narrower than their accumulators, fragments beyond what a thread can hold.

use std::collections::BTreeSet;

use super::*;
use crate::knobs;

/// The IR operation of the statement, in the first kernel that has one there.
fn op_at<'f>(f: &'f Facts, st: &Stmt) -> Option<(usize, &'f Kernel, &'f Op, cake_ir::StmtId)> {
    let (ki, sid) = *ir_ops(f, st).first()?;
    let k = &f.kernels[ki];
    match &k.stmts[sid] {
        IrStmt::Op(op) => Some((ki, k, op, sid)),
        _ => None,
    }
}

/// Token index of the name `method` in `.method(` within the statement.
fn method_name(src: &Source, st: &Stmt, method: &str) -> Option<usize> {
    method_open(src, st, method).map(|open| open - 1)
}

/// Halve the rows a view reference covers: the second argument of its `.rows(start, n)`, or a
/// `.rows(0, n / 2)` inserted before `method`. `None` when there is nothing to halve.
fn halve_rows(
    src: &Source,
    st: &Stmt,
    k: &Kernel,
    v: &cake_ir::ViewRef,
    method: &str,
) -> Option<(Edit, String)> {
    let view = &k.views[v.view];
    match v.rows {
        Some((_, n)) if n >= 2 => {
            let open = method_open(src, st, "rows")?;
            let call = parse_call(src, st, open)?;
            let a = call.args.get(1)?;
            Some((
                replace_value(st, a, (n / 2).to_string()),
                format!("`{}`: {} of its {n} rows", view.name, n / 2),
            ))
        }
        Some(_) => None,
        None => {
            let rows = *view.shape.first()?;
            if rows < 2 {
                return None;
            }
            let name = method_name(src, st, method)?;
            let at = st.toks[name - 1].start;
            Some((
                Edit {
                    start: at,
                    end: at,
                    text: format!(".rows(0, {})", rows / 2),
                },
                format!("`{}`: {} of its {rows} rows", view.name, rows / 2),
            ))
        }
    }
}

pub(super) fn shrink_box(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for st in &src.stmts {
        for method in ["tma_load", "cp_async"] {
            if method_open(src, st, method).is_none() {
                continue;
            }
            let Some((_, k, op, _)) = op_at(f, st) else {
                continue;
            };
            let (Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. }) = op else {
                continue;
            };
            let Some((edit, what)) = halve_rows(src, st, k, dst, method) else {
                continue;
            };
            out.push(plan(
                "shrink-box",
                st.first,
                format!("halve the box of the copy into {what}"),
                (vec![edit], Site::Edited),
                f.names_in(src, st),
                &[Category::Consistency],
            ));
        }
    }
}

/// Names of the loop variables of every kernel (`k`, `tm`, `tn`, ...).
fn loop_var_names(f: &Facts) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for k in &f.kernels {
        for (_, l) in k.loops.iter() {
            match &l.kind {
                cake_ir::LoopKind::Range { .. } => {
                    out.insert(l.var_name.clone());
                }
                cake_ir::LoopKind::Tiles { names, .. } => out.extend(names.iter().cloned()),
            }
        }
    }
    out
}

pub(super) fn skew_coords(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let vars = loop_var_names(f);
    let ks = knobs::knobs(&src.text);
    for st in &src.stmts {
        for method in ["tma_load", "cp_async"] {
            let Some(open) = method_open(src, st, method) else {
                continue;
            };
            let Some(call) = parse_call(src, st, open) else {
                continue;
            };
            let Some(coords) = kwarg(&call, "coords") else {
                continue;
            };
            let t = |i: usize| src.tok_text(&st.toks[i]);
            for i in coords.value_first..coords.last.saturating_sub(1) {
                // `var * FACTOR` or `FACTOR * var`.
                let factor = if vars.contains(t(i)) && t(i + 1) == "*" {
                    i + 2
                } else if i + 2 <= coords.last && t(i + 1) == "*" && vars.contains(t(i + 2)) {
                    i
                } else {
                    continue;
                };
                let ft = &st.toks[factor];
                if !matches!(ft.kind, Kind::Name | Kind::Number) || vars.contains(t(factor)) {
                    continue;
                }
                let old = t(factor).to_string();
                let value = ks
                    .iter()
                    .find(|k| k.name == old)
                    .map(|k| k.value)
                    .or_else(|| old.parse().ok());
                // Another tile constant of a different size (`k * BM` for `k * BK`), else double.
                let new = ks
                    .iter()
                    .find(|k| Some(k.value) != value && k.value > 8 && k.name != old)
                    .map_or(format!("{old} * 2"), |k| k.name.clone());
                let var = if factor == i { t(i + 2) } else { t(i) };
                out.push(plan(
                    "skew-coords",
                    ft.line,
                    format!(
                        "step `{var}` by `{new}` instead of `{old}` in the coordinates of a copy"
                    ),
                    (
                        vec![Edit {
                            start: ft.start,
                            end: ft.end,
                            text: new,
                        }],
                        Site::Edited,
                    ),
                    f.names_in(src, st),
                    &[Category::Consistency],
                ));
            }
        }
    }
}

/// A store to global memory: its tensor and the statement's IR coordinates.
fn store_at<'f>(
    f: &'f Facts,
    st: &Stmt,
) -> Option<(
    &'f Kernel,
    cake_ir::ParamId,
    &'f [cake_ir::ExprId],
    cake_ir::StmtId,
)> {
    let (_, k, op, sid) = op_at(f, st)?;
    match op {
        Op::Store { dst, coords, .. }
        | Op::TmaStore { dst, coords, .. }
        | Op::CopyTo { dst, coords, .. } => Some((k, *dst, coords.as_slice(), sid)),
        _ => None,
    }
}

fn store_sites(k: &Kernel, p: cake_ir::ParamId) -> usize {
    let mut n = 0;
    k.walk(|_, s, _| {
        if let IrStmt::Op(
            Op::Store { dst, .. } | Op::TmaStore { dst, .. } | Op::CopyTo { dst, .. },
        ) = s
        {
            n += (*dst == p) as usize;
        }
    });
    n
}

pub(super) fn drop_store(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        let Some((k, p, coords, _)) = store_at(f, st) else {
            continue;
        };
        let tensor = k.params[p].name.clone();
        let mut names = f.names_in(src, st);
        names.insert(tensor.clone());
        let only = store_sites(k, p) == 1;
        let mut p1 = plan(
            "drop-store",
            st.first,
            format!("delete a store to `{tensor}`"),
            delete_stmt(src, i),
            names.clone(),
            &[Category::Semantics],
        );
        // The last store of a tensor leaves it untouched: the verifier can only warn about an
        // untouched parameter (it may be an input kept for an API) unless nothing else is stored.
        p1.accept_warnings = only;
        out.push(p1);
        // The same store on some tiles only: `if tm > 0:` around it.
        let tile = k.loops.iter().find_map(|(_, l)| match &l.kind {
            cake_ir::LoopKind::Tiles { names, .. } => names
                .iter()
                .enumerate()
                .find(|(axis, _)| coords.iter().any(|c| k.expr_reads_tile_coord(*c, *axis)))
                .map(|(_, n)| n.clone()),
            _ => None,
        });
        let Some(var) = tile else { continue };
        let indent = src.indent_text(st.first).to_string();
        let mut edits = vec![Edit {
            start: src.line_starts[st.first],
            end: src.line_starts[st.first],
            text: format!("{indent}if {var} > 0:\n    "),
        }];
        for l in st.first + 1..=st.last {
            let at = src.line_starts[l];
            edits.push(Edit {
                start: at,
                end: at,
                text: "    ".into(),
            });
        }
        out.push(plan(
            "drop-store",
            st.first,
            format!("store to `{tensor}` only when `{var} > 0`"),
            (edits, Site::Edited),
            names,
            &[Category::Semantics],
        ));
    }
}

pub(super) fn narrow_store(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let expected = [Category::Semantics, Category::Consistency];
    for st in &src.stmts {
        if method_open(src, st, "tma_store").is_none() {
            continue;
        }
        let Some((_, k, op, _)) = op_at(f, st) else {
            continue;
        };
        let Op::TmaStore { src: v, dst, .. } = op else {
            continue;
        };
        let Some((edit, what)) = halve_rows(src, st, k, v, "tma_store") else {
            continue;
        };
        let mut names = f.names_in(src, st);
        names.insert(k.params[*dst].name.clone());
        out.push(plan(
            "narrow-store",
            st.first,
            format!("halve the box of the TMA store from {what}"),
            (vec![edit], Site::Edited),
            names,
            &expected,
        ));
    }
    // Tiles counted in twice the step the stores cover: `lm.cdiv(M, BM)` -> `lm.cdiv(M, BM * 2)`.
    for st in &src.stmts {
        let Some(open) = method_open(src, st, "tiles") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(k) = f.kernels.iter().find(|k| {
            k.loops.iter().any(|(l, x)| {
                matches!(x.kind, cake_ir::LoopKind::Tiles { .. })
                    && (st.first..=st.last).contains(&f.line0(k.loops.span(l)))
            })
        }) else {
            continue;
        };
        let stored: BTreeSet<usize> = {
            let mut s = BTreeSet::new();
            k.walk(|_, x, _| {
                if let IrStmt::Op(
                    Op::Store { coords, .. }
                    | Op::TmaStore { coords, .. }
                    | Op::CopyTo { coords, .. },
                ) = x
                {
                    for axis in 0..8 {
                        if coords.iter().any(|c| k.expr_reads_tile_coord(*c, axis)) {
                            s.insert(axis);
                        }
                    }
                }
            });
            s
        };
        for (axis, a) in call.args.iter().filter(|a| a.kw.is_none()).enumerate() {
            if !stored.contains(&axis) {
                continue;
            }
            let t = |i: usize| src.tok_text(&st.toks[i]);
            if a.last < a.first + 3 || t(a.first + 2) != "cdiv" || t(a.first + 3) != "(" {
                continue;
            }
            let Some(inner) = parse_call(src, st, a.first + 3) else {
                continue;
            };
            let Some(y) = inner.args.get(1) else { continue };
            let (s, e) = span_of(st, y.first, y.last);
            let old = src.text[s..e].to_string();
            let mut names = f.names_in(src, st);
            names.extend(
                k.params
                    .iter()
                    .filter(|(p, _)| store_sites(k, *p) > 0)
                    .map(|(_, x)| x.name.clone()),
            );
            out.push(plan(
                "narrow-store",
                tok(st, y.first).line,
                format!(
                    "count tile axis {axis} in steps of `({old}) * 2`: twice what one tile stores"
                ),
                (
                    vec![Edit {
                        start: s,
                        end: e,
                        text: format!("({old}) * 2"),
                    }],
                    Site::Edited,
                ),
                names,
                &expected,
            ));
        }
    }
}

pub(super) fn swap_operand(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let mut seen = BTreeSet::new();
    for k in &f.kernels {
        // The copy statements into each view, with their tensors.
        let mut fills: Vec<(cake_ir::ViewId, cake_ir::ParamId, usize)> = Vec::new();
        k.walk(|sid, s, _| {
            if let IrStmt::Op(Op::TmaLoad { dst, src: p, .. } | Op::CpAsync { dst, src: p, .. }) = s
            {
                if let Some(si) = src.stmt_at_line(f.line0(k.stmts.span(sid))) {
                    fills.push((dst.view, *p, si));
                }
            }
        });
        let sources = |v: cake_ir::ViewId| -> Vec<(cake_ir::ParamId, usize)> {
            fills
                .iter()
                .filter(|x| x.0 == v)
                .map(|x| (x.1, x.2))
                .collect()
        };
        let mut pairs = Vec::new();
        k.walk(|_, s, _| {
            if let IrStmt::Op(Op::Mma {
                a: cake_ir::Operand::Smem(a),
                b: cake_ir::Operand::Smem(b),
                ..
            }) = s
            {
                pairs.push((a.view, b.view));
            }
        });
        let ty = |p: cake_ir::ParamId| match &k.params[p].kind {
            cake_ir::ParamKind::Tensor { dtype, dims } => Some((*dtype, dims.len())),
            cake_ir::ParamKind::Scalar { .. } => None,
        };
        for (va, vb) in pairs {
            let (sa, sb) = (sources(va), sources(vb));
            let (Some(&(ta, _)), Some(&(tb, _))) = (sa.first(), sb.first()) else {
                continue;
            };
            if ta == tb || ty(ta).is_none() || ty(ta) != ty(tb) {
                continue;
            }
            // Fill b's view from a's tensor, and a's view from b's.
            for (copies, from, to) in [(&sb, tb, ta), (&sa, ta, tb)] {
                for &(_, si) in copies {
                    if !seen.insert((si, to)) {
                        continue;
                    }
                    let st = &src.stmts[si];
                    let Some(open) = method_open(src, st, "tma_load")
                        .or_else(|| method_open(src, st, "cp_async"))
                    else {
                        continue;
                    };
                    let Some(call) = parse_call(src, st, open) else {
                        continue;
                    };
                    let Some(a) = call
                        .args
                        .iter()
                        .find(|a| a.kw.is_none() || a.kw.as_deref() == Some("src"))
                    else {
                        continue;
                    };
                    if src.text
                        [span_of(st, a.value_first, a.last).0..span_of(st, a.value_first, a.last).1]
                        != k.params[from].name
                    {
                        continue;
                    }
                    let mut names = f.names_in(src, st);
                    names.insert(k.params[from].name.clone());
                    names.insert(k.params[to].name.clone());
                    let mut p = plan(
                        "swap-operand",
                        tok(st, a.value_first).line,
                        format!(
                            "copy `{}` instead of `{}` into an MMA operand",
                            k.params[to].name, k.params[from].name
                        ),
                        (
                            vec![replace_value(st, a, k.params[to].name.clone())],
                            Site::Edited,
                        ),
                        names,
                        // Tensors with other dimension names are caught for sure (the loops walk
                        // the wrong dimensions); the same shape only by the heuristic.
                        &[Category::Semantics, Category::Consistency],
                    );
                    // A heuristic class: the verifier warns (CAKE-M010, CAKE-M005).
                    p.accept_warnings = true;
                    out.push(p);
                }
            }
        }
    }
}

pub(super) fn shrink_tmem(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (si, ki, ti) in decls(src, f, |k| {
        k.tmems.handles().map(|h| k.tmems.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let region = f.kernels[ki].tmems.iter().nth(ti).expect("tmem").1;
        let Some(open) = method_open(src, st, "tmem") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(a) = kwarg(&call, "cols").or(call.args.first().filter(|a| a.kw.is_none())) else {
            continue;
        };
        if region.cols < 2 {
            continue;
        }
        let new = region.cols / 2;
        out.push(plan(
            "shrink-tmem",
            tok(st, a.value_first).line,
            format!(
                "declare `{}` with cols={new} (it was {})",
                region.name, region.cols
            ),
            (vec![replace_value(st, a, new.to_string())], Site::Edited),
            f.names_in(src, st),
            &[Category::Consistency, Category::Conformance],
        ));
    }
}

pub(super) fn grow_fragment(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let ks = knobs::knobs(&src.text);
    let mut seen = BTreeSet::new();
    for (si, ki, fi) in decls(src, f, |k| {
        k.fragments.handles().map(|h| k.fragments.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let fid = k.fragments.handles().nth(fi).expect("fragment");
        let frag = &k.fragments[fid];
        let Some(target) = k.targets.first().and_then(|t| cake_target::lookup(t).ok()) else {
            continue;
        };
        let max = target.limits.regs_per_thread as u64;
        let demand = k.role_fragment_registers(frag.role);
        let regs = k.fragment_registers(fid);
        let names = texts(src, st);
        // A knob that sizes this fragment once (the tile width a head dimension or BN sets).
        let Some(knob) = ks
            .iter()
            .find(|kn| names.iter().filter(|n| **n == kn.name).count() == 1)
        else {
            continue;
        };
        let Some(m) = [2u64, 4, 8, 16]
            .into_iter()
            .find(|m| demand - regs + regs * m > max)
        else {
            continue;
        };
        let value = knob.value * m as i64;
        let text = knobs::apply(&src.text, &[(knob, value)]);
        if !seen.insert(text.clone()) {
            continue;
        }
        // Only schedules the front-end still reads: the hazard is the size, not a type error.
        let checked = cake_driver::check("grown.py", text.as_bytes(), None);
        if checked
            .findings
            .iter()
            .any(|x| x.is_error() && x.category == Category::Language)
        {
            continue;
        }
        let line = src.line_of(knob.start);
        let mut names = f.names_in(src, st);
        names.insert(k.roles[frag.role].name.clone());
        out.push(plan(
            "grow-fragment",
            line,
            format!(
                "set `{}` to {value}: fragment `{}` grows to {} registers per thread and role `{}` to {}",
                knob.name,
                frag.name,
                regs * m,
                k.roles[frag.role].name,
                demand - regs + regs * m
            ),
            (
                vec![Edit {
                    start: knob.start,
                    end: knob.end,
                    text: value.to_string(),
                }],
                Site::Edited,
            ),
            names,
            &[Category::Consistency],
        ));
    }
}
