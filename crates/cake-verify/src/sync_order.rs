//! The order of a role's synchronisation against its own copies and reads: releases placed
//! before the releasing role's last read (`CAKE-S020`), waits on a "full" barrier placed before
//! the copies that complete it (`CAKE-S021`), and arrivals that only some paths of a run-time
//! `if` make (`CAKE-S022`).

use crate::ctx::{Ctx, OpSite};
use cake_diag::catalog::safety::{CONDITIONAL_ARRIVAL, RELEASE_BEFORE_READ, WAIT_BEFORE_COPY};
use cake_diag::Finding;
use cake_ir::sync::{freed_by, ArriveKind, Memory};
use cake_ir::*;
use cake_target::MmaFamily;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    release_before_read(cx, out);
    wait_before_copy(cx, out);
    conditional_arrival(cx, out);
}

/// How an operation releases `b`, as the author wrote it.
fn release_text(cx: &Ctx, op: &Op, u: BarrierUse, b: BarrierId) -> Option<String> {
    let name = &cx.k.barriers[b].name;
    match (op, u) {
        (Op::Arrive { .. }, BarrierUse::Arrive) => Some(format!("lm.arrive({name})")),
        (Op::Commit { .. }, BarrierUse::Commit) => Some(format!("lm.commit({name})")),
        (Op::Mma { .. }, BarrierUse::Release) => Some(format!("release={name}")),
        _ => None,
    }
}

/// A wgmma release the lowering defers by one iteration arrives after everything the iteration
/// issued has retired: no later read of the iteration can race with it.
fn deferred(cx: &Ctx, site: &OpSite) -> bool {
    let Op::Mma { acc, .. } = &site.op else {
        return false;
    };
    if cx.mma_family(acc) != MmaFamily::Wgmma {
        return false;
    }
    let Some((l, _)) = cx.loop_pipeline(&site.loops) else {
        return false;
    };
    cx.k.loop_body(l)
        .is_some_and(|body| cake_ir::sync::defers_release(cx.k, cx.facts, body, site.stmt))
}

fn memory_name(k: &Kernel, m: Memory) -> String {
    match m {
        Memory::View(v) => k.views[v].name.clone(),
        Memory::Tmem(t) => k.tmems[t].name.clone(),
    }
}

/// The two sites sit in different branches of one `if`: never both in one iteration.
fn exclusive(a: &OpSite, b: &OpSite) -> bool {
    a.guards
        .iter()
        .zip(&b.guards)
        .any(|(x, y)| x.cond == y.cond && x.negated != y.negated)
}

/// What a site reads of `freed`.
fn reads_of(site: &OpSite, freed: &[Memory]) -> Option<Memory> {
    let e = &site.effects;
    e.smem_reads
        .iter()
        .map(|v| Memory::View(v.view))
        .chain(e.tmem_reads.iter().map(|t| Memory::Tmem(t.region)))
        .find(|m| freed.contains(m))
}

/// CAKE-S020: a release of an "empty" barrier followed, in the same role and iteration, by a read
/// of what the barrier frees.
fn release_before_read(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (i, rel) in cx.ops.iter().enumerate() {
        let Some(role) = rel.role else { continue };
        for &(b, u) in &rel.effects.barriers {
            let Some(what) = release_text(cx, &rel.op, u, b) else {
                continue;
            };
            let freed = freed_by(cx.facts, b);
            if freed.is_empty() || (u == BarrierUse::Release && deferred(cx, rel)) {
                continue;
            }
            // Later operations of the role, while still inside the release's iteration.
            let later = cx.ops[i + 1..]
                .iter()
                .filter(|s| s.role == Some(role) && s.loops.starts_with(&rel.loops))
                .filter(|s| !exclusive(rel, s));
            let Some((read, m)) = later.filter_map(|s| Some((s, reads_of(s, &freed)?))).next()
            else {
                continue;
            };
            let bname = &k.barriers[b].name;
            let mname = memory_name(k, m);
            let rname = &k.roles[role].name;
            let (thing, overwrite) = match m {
                Memory::View(_) => match k.barriers[b].pipeline {
                    Some(p) => (
                        format!("the `{}` stage of `{mname}`", k.pipelines[p].name),
                        "copy into it",
                    ),
                    None => (format!("`{mname}`"), "copy into it"),
                },
                Memory::Tmem(_) => (format!("the accumulator `{mname}`"), "MMAs into it"),
            };
            out.push(
                Finding::new(
                    &RELEASE_BEFORE_READ,
                    cx.span(rel.stmt),
                    format!("`{what}` releases {thing} while role `{rname}` still reads it later in the same iteration: the next {overwrite} may overwrite what it reads"),
                )
                .subject("barrier", bname)
                .role(rname)
                .label(cx.span(read.stmt), format!("`{mname}` is still read here, after the release"))
                .help(match u {
                    BarrierUse::Release => format!("put release={bname} on the last MMA that reads `{mname}` in the iteration"),
                    _ => format!("move `{what}` after the last read of `{mname}`"),
                }),
            );
        }
    }
}

/// CAKE-S021: a wait on a barrier that copies complete, before (in the same role and iteration) a
/// copy that completes on it, or a copy that makes the derivation take it for a release barrier.
fn wait_before_copy(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (i, w) in cx.ops.iter().enumerate() {
        let Op::Wait { barrier: b } = w.op else {
            continue;
        };
        let f = &cx.barriers[b.index()];
        let filled_by_copies = f
            .arrivals
            .iter()
            .any(|a| matches!(a.kind, ArriveKind::Tma | ArriveKind::CpAsync));
        if !filled_by_copies || w.role.is_none() {
            continue;
        }
        let copy = cx.ops[i + 1..]
            .iter()
            .filter(|s| s.role == w.role && s.loops.starts_with(&w.loops))
            .find(|s| match &s.op {
                Op::TmaLoad { barrier, .. } | Op::CpAsync { barrier, .. } => {
                    *barrier == b || (f.starts_free() && s.loops == w.loops)
                }
                _ => false,
            });
        let Some(copy) = copy else { continue };
        let bname = &k.barriers[b].name;
        let own = matches!(&copy.op, Op::TmaLoad { barrier, .. } | Op::CpAsync { barrier, .. } if *barrier == b);
        let consequence = if f.starts_free() {
            format!("Cake derives that `{bname}` starts free (the wait precedes a copy), so the wait passes on each stage's first round and the reads after it are unprotected")
        } else {
            format!("the wait needs a phase of `{bname}` that only copies issued after it complete")
        };
        out.push(
            Finding::new(
                &WAIT_BEFORE_COPY,
                cx.span(w.stmt),
                format!("role `{}` waits on `{bname}`, which copies complete, before the copies of the same iteration: {consequence}", cx.role_name(w.role)),
            )
            .subject("barrier", bname)
            .role(cx.role_name(w.role))
            .label(
                cx.span(copy.stmt),
                if own {
                    format!("this copy completes on `{bname}` after the wait")
                } else {
                    "the copy the wait is taken to guard".to_string()
                },
            )
            .help(format!("move `lm.wait({bname})` below the copies that signal it, just before the first read")),
        );
    }
}

/// A canonical text of a run-time condition, equal for the same condition written in two roles
/// (a loop variable is named by the range it runs over, not by its loop).
fn cond_key(k: &Kernel, e: ExprId) -> String {
    let key = |x: ExprId| cond_key(k, x);
    match &k.exprs[e].kind {
        ExprKind::Int(v) => v.to_string(),
        ExprKind::Float(v) => format!("{v:?}"),
        ExprKind::Bool(v) => v.to_string(),
        ExprKind::Dim(d) => format!("dim:{}", k.dims[*d].name),
        ExprKind::Scalar(p) => format!("param:{}", k.params[*p].name),
        ExprKind::LoopVar(l) => match &k.loops[*l].kind {
            LoopKind::Range { start, stop, .. } => format!("iter[{}, {})", key(*start), key(*stop)),
            LoopKind::Tiles { .. } => format!("loop#{}", l.index()),
        },
        ExprKind::TileCoord { axis, .. } => format!("tile[{axis}]"),
        ExprKind::RoleIndex(r) => format!("{}.index", k.roles[*r].name),
        ExprKind::PipelineStage(p) => format!("{}.stage", k.pipelines[*p].name),
        ExprKind::Binary(op, a, b) => format!("({} {op:?} {})", key(*a), key(*b)),
        ExprKind::Cmp(op, a, b) => format!("({} {op:?} {})", key(*a), key(*b)),
        ExprKind::Unary(op, a) => format!("{op:?}({})", key(*a)),
        // Register values differ per role and per site: never the same condition.
        _ => format!("expr#{}", e.index()),
    }
}

/// The run-time conditions a site runs under, as (condition, else-branch).
fn path(cx: &Ctx, site: &OpSite) -> Vec<(String, bool)> {
    site.guards
        .iter()
        .map(|g| (cond_key(cx.k, g.cond), g.negated))
        .collect()
}

fn describe(site: &OpSite) -> &'static str {
    if site.guards.is_empty() {
        "on every iteration"
    } else {
        "under other conditions"
    }
}

/// CAKE-S022: an arrival site whose run-time conditions differ from those of the barrier's waits
/// or of its other arrival sites.
fn conditional_arrival(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for f in &cx.barriers {
        // Every site that contributes arrivals or bytes (a TMA load merged into the role's
        // expect_tx is a site of its own here: its bytes are counted per phase too).
        let arrivals: Vec<&OpSite> = cx
            .ops
            .iter()
            .filter(|s| {
                s.effects
                    .barriers
                    .iter()
                    .any(|(b, u)| *b == f.barrier && *u != BarrierUse::Wait)
            })
            .collect();
        let Some(cond) = arrivals.iter().find(|s| !s.guards.is_empty()) else {
            continue;
        };
        let p = path(cx, cond);
        let waits = f.waits.iter().filter_map(|(s, _)| cx.site(*s));
        let other = waits
            .map(|w| (w, true))
            .chain(arrivals.iter().map(|a| (*a, false)))
            .find(|(s, _)| path(cx, s) != p);
        let Some((other, is_wait)) = other else {
            continue;
        };
        let bname = &k.barriers[f.barrier].name;
        let g = cond.guards.last().expect("guarded");
        let mut fd = Finding::new(
            &CONDITIONAL_ARRIVAL,
            cx.span(cond.stmt),
            format!(
                "this arrival on `{bname}` in role `{}` runs only on the paths of a run-time `if`, but {} runs on others: the phases it skips never complete (a deadlock), or complete with the wrong count",
                cx.role_name(cond.role),
                if is_wait {
                    format!("the wait on it in role `{}`", cx.role_name(other.role))
                } else {
                    format!("another arrival on it in role `{}`", cx.role_name(other.role))
                }
            ),
        )
        .subject("barrier", bname)
        .role(cx.role_name(cond.role))
        .label(k.exprs.span(g.cond), if g.negated { "the arrival runs when this is false" } else { "the arrival runs when this holds" })
        .label(
            cx.span(other.stmt),
            format!("{} {}", if is_wait { "waits" } else { "arrives" }, describe(other)),
        )
        .help(format!("make the arrival unconditional, or put every wait on `{bname}` (and its other arrivals) under the same condition"));
        fd = fd.note("Cake counts each arrival site once per phase (docs/language.md §11.4)");
        out.push(fd);
    }
}
