//! Operators that misplace synchronisation against a role's own copies and reads: a release
//! moved above the releasing role's last read of what it frees, a wait on a "full" barrier
//! hoisted above the copies that complete it, and an arrival wrapped in a run-time `if`.

use super::*;
use cake_ir::sync::{freed_by, Memory};
use cake_ir::{BarrierId, BarrierUse, LoopKind, StmtId};

/// Index just past the statement's nested block (a compound statement's body).
fn block_end(src: &Source, i: usize) -> usize {
    let ind = src.stmts[i].indent;
    let mut j = i + 1;
    while j < src.stmts.len() && src.stmts[j].indent > ind {
        j += 1;
    }
    j
}

/// IR ops (kernel, statement) inside statements `a..b`.
fn ops_in(src: &Source, f: &Facts, a: usize, b: usize) -> Vec<(usize, StmtId)> {
    src.stmts[a..b]
        .iter()
        .flat_map(|st| ir_ops(f, st))
        .collect()
}

/// Earlier statements of statement `i`'s block, nearest first: (index, end of its body).
fn earlier_in_block(src: &Source, i: usize) -> Vec<(usize, usize)> {
    let ind = src.stmts[i].indent;
    let mut out = Vec::new();
    let mut j = i;
    while j > 0 {
        j -= 1;
        let s = &src.stmts[j];
        if s.indent < ind {
            break;
        }
        if s.indent == ind {
            out.push((j, block_end(src, j)));
        }
    }
    out
}

/// Move statement `i` (its whole lines) to just before statement `to`.
fn move_stmt(src: &Source, i: usize, to: usize) -> Vec<Edit> {
    move_stmts(src, i, i + 1, to)
}

/// Move statements `a..b` (their whole lines) to just before statement `to`.
fn move_stmts(src: &Source, a: usize, b: usize, to: usize) -> Vec<Edit> {
    let (start, end) = (
        src.line_starts[src.stmts[a].first],
        src.line_end(src.stmts[b - 1].last),
    );
    let mut text = src.text[start..end].to_string();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let at = src.line_starts[src.stmts[to].first];
    vec![
        Edit {
            start,
            end,
            text: String::new(),
        },
        Edit {
            start: at,
            end: at,
            text,
        },
    ]
}

/// The `if` whose whole body is statement `i`, when it has no `elif` or `else`: moving it moves
/// the statement with its condition.
fn sole_body_of_if(src: &Source, i: usize) -> Option<usize> {
    let p = i.checked_sub(1)?;
    let (parent, st) = (&src.stmts[p], &src.stmts[i]);
    let first = |s: &Stmt| s.toks.first().map(|t| src.tok_text(t).to_string());
    if parent.indent >= st.indent || first(parent).as_deref() != Some("if") {
        return None;
    }
    let end = block_end(src, p);
    let follows = src.stmts.get(end).filter(|n| n.indent == parent.indent);
    if end != i + 1 || follows.is_some_and(|n| matches!(first(n).as_deref(), Some("elif" | "else")))
    {
        return None;
    }
    Some(p)
}

/// The barrier statement `st` arrives on in the IR with a use of `kind`, with its kernel.
fn arrived(f: &Facts, st: &Stmt, kind: BarrierUse) -> Option<(usize, StmtId, BarrierId)> {
    ir_ops(f, st).into_iter().find_map(|(ki, sid)| {
        let site = f.first(ki)?.site(sid)?;
        let b = site
            .effects
            .barriers
            .iter()
            .find(|(_, u)| *u == kind)
            .map(|(b, _)| *b)?;
        Some((ki, sid, b))
    })
}

/// Whether an op among `ops` of kernel `ki` reads one of `freed`.
fn reads_freed(f: &Facts, ops: &[(usize, StmtId)], ki: usize, freed: &[Memory]) -> bool {
    let Some(kf) = f.first(ki) else { return false };
    ops.iter().filter(|(k, _)| *k == ki).any(|(_, sid)| {
        kf.site(*sid).is_some_and(|s| {
            s.effects
                .smem_reads
                .iter()
                .map(|v| Memory::View(v.view))
                .chain(s.effects.tmem_reads.iter().map(|t| Memory::Tmem(t.region)))
                .any(|m| freed.contains(&m))
        })
    })
}

/// `early-consumer-release`: a release of an "empty" barrier moved above the releasing role's
/// last read, in the same block, of what the barrier frees.
pub(super) fn early_consumer_release(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        let simple = ["arrive", "commit"]
            .into_iter()
            .find_map(|m| simple_call(src, st, m).map(|b| (m, b)));
        let kind = match simple {
            Some(("arrive", _)) => BarrierUse::Arrive,
            Some(_) => BarrierUse::Commit,
            None if is_mma(src, st) => BarrierUse::Release,
            None => continue,
        };
        let Some((ki, _, b)) = arrived(f, st, kind) else {
            continue;
        };
        let Some(kf) = f.first(ki) else { continue };
        let freed = freed_by(kf, b);
        if freed.is_empty() {
            continue;
        }
        let bname = f.kernels[ki].barriers[b].name.clone();
        // The nearest earlier statement of statement `at`'s block that reads what the barrier
        // frees.
        let last_read_before = |at: usize| {
            earlier_in_block(src, at)
                .into_iter()
                .find(|&(j, e)| reads_freed(f, &ops_in(src, f, j, e), ki, &freed))
                .map(|(j, _)| j)
        };
        let last_read = last_read_before(i);
        let names = f.names_in(src, st);
        if let Some((method, _)) = simple {
            // An arrival alone in an `if` (on the last of several reads, say) moves with it.
            let (moved, j) = match (last_read, sole_body_of_if(src, i)) {
                (Some(j), _) => ((i, i + 1), j),
                (None, Some(p)) => match last_read_before(p) {
                    Some(j) => ((p, i + 1), j),
                    None => continue,
                },
                (None, None) => continue,
            };
            out.push(plan(
                "early-consumer-release",
                st.first,
                format!(
                    "move `lm.{method}({bname})` above the statement on line {} that still reads what it frees",
                    src.stmts[j].first + 1
                ),
                (move_stmts(src, moved.0, moved.1, j), Site::Edited),
                names,
                &[Category::Safety],
            ));
            continue;
        }
        let Some(call) = parse_call(src, st, 3) else {
            continue;
        };
        let Some(idx) = call
            .args
            .iter()
            .position(|a| a.kw.as_deref() == Some("release"))
        else {
            continue;
        };
        let line = tok(st, call.args[idx].first).line;
        let remove = remove_arg(src, st, &call, idx);
        match last_read.filter(|&j| is_mma(src, &src.stmts[j])) {
            // An earlier MMA of the iteration that reads the stage takes the release.
            Some(j) => {
                let earlier = &src.stmts[j];
                let Some(c2) = parse_call(src, earlier, 3) else {
                    continue;
                };
                if kwarg(&c2, "release").is_some() {
                    continue;
                }
                out.push(plan(
                    "early-consumer-release",
                    line,
                    format!(
                        "move `release={bname}` to the earlier `lm.mma` on line {}",
                        earlier.first + 1
                    ),
                    (
                        vec![
                            remove,
                            insert_arg(src, earlier, &c2, &format!("release={bname}")),
                        ],
                        Site::Edited,
                    ),
                    names,
                    &[Category::Safety],
                ));
            }
            // Otherwise the stage is released by an arrive just before the MMA reads it.
            None => {
                let at = src.line_starts[st.first];
                let insert = Edit {
                    start: at,
                    end: at,
                    text: format!("{}lm.arrive({bname})\n", src.indent_text(st.first)),
                };
                out.push(plan(
                    "early-consumer-release",
                    line,
                    format!(
                        "replace `release={bname}` on `lm.mma` by `lm.arrive({bname})` before it"
                    ),
                    (vec![remove, insert], Site::Edited),
                    names,
                    &[Category::Safety],
                ));
            }
        }
    }
}

fn copy_barrier(f: &Facts, st: &Stmt) -> Option<(usize, BarrierId)> {
    ir_ops(f, st).into_iter().find_map(|(ki, sid)| {
        let site = f.first(ki)?.site(sid)?;
        site.effects
            .barriers
            .iter()
            .find(|(_, u)| matches!(u, BarrierUse::Tma | BarrierUse::CpAsync))
            .map(|(b, _)| (ki, *b))
    })
}

/// `hoist-wait`: a wait on a barrier that copies complete, moved above the copies of its own
/// block that complete on it (above the first, and above the last when there are several).
pub(super) fn hoist_wait(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        let Some(bname) = simple_call(src, st, "wait") else {
            continue;
        };
        let Some((ki, _, b)) = arrived(f, st, BarrierUse::Wait) else {
            continue;
        };
        let copies: Vec<usize> = earlier_in_block(src, i)
            .into_iter()
            .map(|(j, _)| j)
            .filter(|&j| copy_barrier(f, &src.stmts[j]) == Some((ki, b)))
            .collect();
        // `copies` is nearest first: its last entry is the block's first copy.
        let Some(&first) = copies.last() else {
            continue;
        };
        let mut targets = vec![(first, "the first")];
        if copies.len() > 1 {
            targets.push((copies[0], "the last"));
        }
        for (to, which) in targets {
            out.push(plan(
                "hoist-wait",
                st.first,
                format!(
                    "move `lm.wait({bname})` above {which} copy that completes on it (line {})",
                    src.stmts[to].first + 1
                ),
                (move_stmt(src, i, to), Site::Edited),
                f.names_in(src, st),
                &[Category::Safety],
            ));
        }
    }
}

/// `conditional-arrive`: an arrival (`lm.arrive`, `lm.commit`, an MMA with `release=`, a copy
/// with `barrier=`) wrapped in `if <v> > 0:` on the innermost enclosing loop's variable, so the
/// first iteration (or tile) skips it.
pub(super) fn conditional_arrive(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for st in &src.stmts {
        let found = ir_ops(f, st).into_iter().find_map(|(ki, sid)| {
            let site = f.first(ki)?.site(sid)?;
            let (b, u) = site
                .effects
                .barriers
                .iter()
                .find(|(_, u)| *u != BarrierUse::Wait)?;
            Some((ki, site.loops.clone(), *b, *u))
        });
        let Some((ki, loops, b, u)) = found else {
            continue;
        };
        // A simple statement only (not a compound header), whose lines we can indent.
        if texts(src, st).last() == Some(&":") {
            continue;
        }
        let k = &f.kernels[ki];
        let Some(var) = loops.last().map(|l| match &k.loops[*l].kind {
            LoopKind::Range { .. } => k.loops[*l].var_name.clone(),
            LoopKind::Tiles { names, .. } => names.first().cloned().unwrap_or_default(),
        }) else {
            continue;
        };
        if var.is_empty() {
            continue;
        }
        let ind = src.indent_text(st.first).to_string();
        let mut edits = vec![Edit {
            start: src.line_starts[st.first],
            end: src.line_starts[st.first],
            text: format!("{ind}if {var} > 0:\n"),
        }];
        for l in st.first..=st.last {
            let at = src.line_starts[l];
            edits.push(Edit {
                start: at,
                end: at,
                text: "    ".into(),
            });
        }
        let what = match u {
            BarrierUse::Arrive => "the arrival",
            BarrierUse::Commit => "the commit",
            BarrierUse::Release => "the MMA that releases",
            _ => "the copy that completes on",
        };
        out.push(plan(
            "conditional-arrive",
            st.first,
            format!("wrap {what} `{}` in `if {var} > 0:`", k.barriers[b].name),
            (edits, Site::Edited),
            f.names_in(src, st),
            &[Category::Safety],
        ));
    }
}

/// `pin-stage`: a copy into a staged view fills stage 0 (`view.stage(0)`) instead of the ring's
/// stage, so the readers of every other stage read what no copy wrote, and the copies land in a
/// stage the ring's barriers do not hand over.
pub(super) fn pin_stage(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for st in &src.stmts {
        let Some(open) =
            method_open(src, st, "tma_load").or_else(|| method_open(src, st, "cp_async"))
        else {
            continue;
        };
        // `name.tma_load(`: the view is the name before the dot, with no `.rows` or `.stage`.
        let Some(view_tok) = open.checked_sub(3).map(|i| tok(st, i)) else {
            continue;
        };
        if view_tok.kind != Kind::Name || (open >= 4 && src.tok_text(tok(st, open - 4)) == ".") {
            continue;
        }
        let staged = ir_ops(f, st).into_iter().find_map(|(ki, sid)| {
            let k = &f.kernels[ki];
            match &k.stmts[sid] {
                IrStmt::Op(Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. })
                    if dst.stage.is_none() && dst.rows.is_none() =>
                {
                    let view = &k.views[dst.view];
                    (view.stages > 1 && view.name == src.tok_text(view_tok))
                        .then(|| (view.name.clone(), view.stages))
                }
                _ => None,
            }
        });
        let Some((name, stages)) = staged else {
            continue;
        };
        out.push(plan(
            "pin-stage",
            view_tok.line,
            format!("copy into stage 0 of `{name}` ({stages} stages) on every iteration"),
            (
                vec![Edit {
                    start: view_tok.end,
                    end: view_tok.end,
                    text: ".stage(0)".into(),
                }],
                Site::Edited,
            ),
            f.names_in(src, st),
            &[Category::Semantics],
        ));
    }
}
