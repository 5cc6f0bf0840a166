//! Schedule semantics: roles partition the warps, barriers are used as declared, pipelines agree
//! on stages and trip counts, and declared resources are used.

use crate::ctx::{place_uses, rings_around, unparen, Ctx};
use cake_diag::catalog::semantics::*;
use cake_diag::Finding;
use cake_ir::sync::Memory;
use cake_ir::*;
use std::collections::BTreeMap;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    role_overlap(cx, out);
    barrier_roles(cx, out);
    stage_mismatch(cx, out);
    single_stage_ring(cx, out);
    explicit_stages(cx, out);
    mixed_stages(cx, out);
    trip_counts(cx, out);
    unused(cx, out);
    named_barriers(cx, out);
    buffered_fragments(cx, out);
    replicated_scatter(cx, out);
    deferred_mmas(cx, out);
    mma_turns(cx, out);
    ahead_regions(cx, out);
}

/// `with lm.ahead(steps):` regions. The program as written is what every other check sees;
/// issuing a region's waits and copies `steps` iterations early keeps it the same when the
/// region opens a pipelined loop's body (so the waits that guard its copies are in it), holds
/// only waits and copies on that pipeline, computes its addresses from no register, and stays
/// within the ring: the copy of iteration k + steps then fills a stage iterations k to
/// k + steps − 1 do not read. Whether the early waits can pass is the explorer's
/// (`CAKE-S012`), which runs the regions where the lowering issues them.
fn ahead_regions(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut opening: BTreeMap<StmtId, PipelineId> = BTreeMap::new();
    k.walk(|_, s, _| {
        if let Stmt::Loop { id, body } = s {
            if let LoopKind::Range {
                pipeline: Some(p), ..
            } = k.loops[*id].kind
            {
                if let Some((a, _, _)) = k.leading_ahead(body) {
                    opening.insert(a, p);
                }
            }
        }
    });
    let help = "open the body of `for k in lm.range(..., pipeline=p):` with the region, and put in it only that iteration's `lm.wait`s and the copies they guard";
    k.walk(|s, stmt, _| {
        let Stmt::Ahead { steps, body } = stmt else {
            return;
        };
        let Some(&p) = opening.get(&s) else {
            out.push(
                Finding::new(
                    &AHEAD_REGION,
                    cx.span(s),
                    "`with lm.ahead(...)` does not open the body of a pipelined `lm.range` loop",
                )
                .expected("the first statement of `for ... in lm.range(..., pipeline=p):`")
                .help(help),
            );
            return;
        };
        let pipe = &k.pipelines[p];
        if *steps >= pipe.stages {
            out.push(
                Finding::new(
                    &AHEAD_REGION,
                    cx.span(s),
                    format!(
                        "the region is issued {steps} iterations early, but pipeline `{}` has {} stages: the copy of iteration k + {steps} would fill a stage iteration k still reads",
                        pipe.name, pipe.stages
                    ),
                )
                .subject("pipeline", &pipe.name)
                .expected(format!("at most {} (stages − 1)", pipe.stages - 1))
                .actual(steps.to_string())
                .label(k.pipelines.span(p), "the pipeline is declared here")
                .help("issue fewer iterations early, or give the pipeline more stages"),
            );
        }
        for &inner in body {
            if let Some(why) = ahead_statement(k, p, pipe.stages, &k.stmts[inner]) {
                out.push(
                    Finding::new(&AHEAD_REGION, cx.span(inner), why)
                        .subject("pipeline", &pipe.name)
                        .label(cx.span(s), "the region issued early starts here")
                        .help(help),
                );
            }
        }
    });
}

/// Why `stmt` cannot be issued early in an `lm.ahead` region on pipeline `p` (of `stages`).
fn ahead_statement(k: &Kernel, p: PipelineId, stages: u32, stmt: &Stmt) -> Option<String> {
    let on_pipeline = |b: BarrierId| k.barriers[b].pipeline == Some(p);
    let reads_registers = |e: ExprId| {
        k.expr_any(e, |x| {
            matches!(
                x,
                ExprKind::Frag(_)
                    | ExprKind::Reduce { .. }
                    | ExprKind::Vote { .. }
                    | ExprKind::Expand { .. }
                    | ExprKind::Iota { .. }
                    | ExprKind::Load { .. }
                    | ExprKind::ViewLoad { .. }
            )
        })
    };
    let pname = &k.pipelines[p].name;
    match stmt {
        Stmt::Op(Op::Wait { barrier }) if !on_pipeline(*barrier) => Some(format!(
            "`lm.wait({})` in a region issued early waits on a barrier that is not bound to pipeline `{pname}`",
            k.barriers[*barrier].name
        )),
        Stmt::Op(Op::Wait { .. }) => None,
        Stmt::Op(
            Op::CpAsync {
                dst,
                coords,
                barrier,
                ..
            }
            | Op::TmaLoad {
                dst,
                coords,
                barrier,
                ..
            },
        ) => {
            let view = &k.views[dst.view];
            if !on_pipeline(*barrier) {
                Some(format!(
                    "a copy in a region issued early signals `{}`, which is not bound to pipeline `{pname}`",
                    k.barriers[*barrier].name
                ))
            } else if view.stages != stages || dst.stage.is_some() {
                Some(format!(
                    "a copy in a region issued early fills `{}` at a stage of its own: it needs the pipeline's stage ({stages} stages, no `.stage(...)`)",
                    view.name
                ))
            } else if coords
                .iter()
                .chain(dst.rows.as_ref().map(|(first, _)| first))
                .any(|&e| reads_registers(e))
            {
                Some(format!(
                    "a copy into `{}` in a region issued early computes its address from registers, which iterations in between may change",
                    view.name
                ))
            } else {
                None
            }
        }
        _ => Some(
            "a region issued early holds only `lm.wait` on the pipeline's barriers and the copies (`cp_async`, `tma_load`) into its stages"
                .into(),
        ),
    }
}

/// Every replica of a role runs its operations: a scatter_add in a role of several replicas
/// adds each row once per replica, unless each replica adds into its own rows of the view
/// (`view.rows(f(role.index), n)`).
fn replicated_scatter(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let (Op::ScatterAdd { dst, .. }, Some(role)) = (&site.op, site.role) else {
            continue;
        };
        let r = &k.roles[role];
        let partitioned = dst
            .rows
            .is_some_and(|(start, _)| k.expr_reads_role_index(start, role));
        if r.replicas() > 1 && !partitioned {
            out.push(
                Finding::new(
                    &REPLICATED_SCATTER,
                    cx.span(site.stmt),
                    format!(
                        "role `{}` has {} replicas, and each would add every row into `{}`",
                        r.name,
                        r.replicas(),
                        k.views[dst.view].name
                    ),
                )
                .subject("role", &r.name)
                .expected("a role of one replica, or each replica's own rows: view.rows(f(role.index), n)")
                .actual(format!("{} replicas", r.replicas()))
                .label(k.roles.span(role), "the role is declared here"),
            );
        }
    }
}

/// `defer=True` MMAs: each the last statement of a pipelined loop body that
/// `cake_ir::sync::deferred_mma` accepts.
fn deferred_mmas(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut placed = Vec::new();
    k.walk(|_, s, _| {
        let Stmt::Loop { id, body } = s else { return };
        let pipeline = match &k.loops[*id].kind {
            LoopKind::Range { pipeline, .. } => *pipeline,
            LoopKind::Tiles { .. } => None,
        };
        match cake_ir::sync::deferred_mma(k, body, pipeline) {
            Ok(Some(_)) => placed.extend(body.last().copied()),
            Ok(None) => {}
            Err((at, why)) => {
                placed.extend(body.iter().copied());
                out.push(
                    Finding::new(&DEFERRED_MMA, cx.span(at), why)
                        .help("end the loop body with the deferred MMA (after its wait), start it with its waits and the MMA to overlap, or drop defer=True"),
                );
            }
        }
    });
    for site in &cx.ops {
        if matches!(site.op, Op::Mma { defer: true, .. }) && !placed.contains(&site.stmt) {
            out.push(
                Finding::new(&DEFERRED_MMA, cx.span(site.stmt), "a deferred MMA is the last statement of a pipelined loop's body, outside any `if`")
                    .help("move it to the end of the loop body, or drop defer=True"),
            );
        }
    }
}

/// `turns=True` MMAs: every replica of the role takes every turn, in the same order.
fn mma_turns(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let (Op::Mma { turns: true, .. }, Some(role)) = (&site.op, site.role) else {
            continue;
        };
        let r = &k.roles[role];
        let why = if r.replicas() < 2 {
            Some(format!(
                "role `{}` has one replica: there is no one to take turns with",
                r.name
            ))
        } else if site
            .guards
            .iter()
            .any(|g| k.expr_reads_role_index(g.cond, role))
        {
            Some(format!("it is under an `if` whose condition reads `{}.index`: a replica that skips its turn leaves the next one waiting", r.name))
        } else {
            site.loops.iter().find_map(|&l| match &k.loops[l].kind {
                LoopKind::Range { start, stop, .. }
                    if k.expr_reads_role_index(*start, role) || k.expr_reads_role_index(*stop, role) =>
                {
                    Some(format!("the loop over `{}` runs a different number of times per replica (its bounds read `{}.index`)", k.loops[l].var_name, r.name))
                }
                _ => None,
            })
        };
        if let Some(why) = why {
            out.push(
                Finding::new(&MMA_TURNS, cx.span(site.stmt), format!("`turns=True`: {why}"))
                    .role(&r.name)
                    .help("give every replica of the role the same conditions and trip counts around the MMA, or drop turns=True"),
            );
        }
    }
}

/// A `buffers=2` fragment must be the accumulator of exactly the double-buffered pattern.
fn buffered_fragments(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (f, frag) in k.fragments.iter().filter(|(_, f)| f.buffers > 1) {
        let mmas: Vec<&crate::ctx::OpSite> = cx
            .ops
            .iter()
            .filter(|s| matches!(&s.op, Op::Mma { acc: Operand::Frag(g), .. } if *g == f))
            .collect();
        let mut why = None;
        let mut at = k.fragments.span(f);
        if mmas.len() != 1 {
            why = Some(format!(
                "it is the accumulator of {} MMAs; it must be of exactly one",
                mmas.len()
            ));
        } else {
            let site = mmas[0];
            at = cx.span(site.stmt);
            let pattern = cx.loop_pipeline(&site.loops).and_then(|(l, p)| {
                cake_ir::sync::double_buffered_mma(k, k.loop_body(l)?, p)
                    .filter(|(_, m)| *m == site.stmt)
                    .map(|_| l)
            });
            match pattern {
                None => {
                    why = Some("the MMA must be the second statement of a pipelined loop (right after its wait on the loop's pipeline of two or more stages) with accumulate=False".into())
                }
                Some(l) => {
                    // Every read of the fragment sits inside that loop.
                    for s in &cx.ops {
                        if s.effects.fragments_read(cx.k).contains(&f) && !s.loops.contains(&l) {
                            why = Some("it is read outside the loop whose MMA writes it".into());
                            at = cx.span(s.stmt);
                        }
                    }
                }
            }
        }
        if let Some(why) = why {
            out.push(
                Finding::new(&BUFFERED_FRAGMENT, at, format!("fragment `{}` has buffers=2, but {why}", frag.name))
                    .subject("fragment", &frag.name)
                    .label(k.fragments.span(f), "declared with buffers=2 here")
                    .help("use buffers=1, or write the loop as: wait; mma(frag, ..., accumulate=False); then the reads"),
            );
        }
    }
}

fn named_barriers(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (nb, b) in k.named_barriers.iter() {
        let syncing: Vec<(StmtId, Option<RoleId>)> = cx
            .ops
            .iter()
            .filter(|s| matches!(s.op, Op::Sync { barrier } if barrier == nb))
            .map(|s| (s.stmt, s.role))
            .collect();
        for (stmt, role) in &syncing {
            if let Some(r) = role {
                if !b.roles.contains(r) {
                    out.push(
                        Finding::new(&NAMED_BARRIER_ROLES, cx.span(*stmt), format!("role `{}` syncs on `{}` but is not one of its roles", k.roles[*r].name, b.name))
                            .subject("named_barrier", &b.name)
                            .label(k.named_barriers.span(nb), "declared here")
                            .help("the thread count is derived from the declared roles: add the role to roles=[...]"),
                    );
                }
            }
        }
        for r in &b.roles {
            if !syncing.iter().any(|(_, s)| s == &Some(*r)) {
                out.push(
                    Finding::new(&NAMED_BARRIER_ROLES, k.named_barriers.span(nb), format!("role `{}` is declared on `{}` but never syncs on it: the others would wait forever", k.roles[*r].name, b.name))
                        .subject("named_barrier", &b.name),
                );
            }
        }
    }
}

fn role_overlap(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let roles: Vec<(RoleId, &Role)> = k.roles.iter().collect();
    for (i, (ra, a)) in roles.iter().enumerate() {
        for (rb, b) in &roles[i + 1..] {
            let shared: Vec<u32> = a
                .warps()
                .into_iter()
                .filter(|w| b.warps().contains(w))
                .collect();
            if let Some(w) = shared.first() {
                out.push(
                    Finding::new(
                        &ROLE_OVERLAP,
                        k.roles.span(*rb),
                        format!("roles `{}` and `{}` both claim warp {w}", a.name, b.name),
                    )
                    .subject("role", &b.name)
                    .label(
                        k.roles.span(*ra),
                        format!("`{}` claims warps {:?}", a.name, a.warps()),
                    )
                    .note(format!("shared warps: {shared:?}"))
                    .help("give each role its own warps; warpgroup=i means warps 4i..4i+3"),
                );
            }
        }
    }
}

/// The one other barrier of `b`'s pipeline (or, for a barrier without one, the one other
/// barrier without a pipeline) that `fits` — the barrier a wait or arrival on `b` most likely
/// meant. None when there is no such barrier or more than one.
pub(crate) fn sibling(
    k: &Kernel,
    b: BarrierId,
    fits: impl Fn(&Barrier) -> bool,
) -> Option<BarrierId> {
    let pipeline = k.barriers[b].pipeline;
    let mut found = k
        .barriers
        .iter()
        .filter(|(o, ob)| *o != b && ob.pipeline == pipeline && fits(ob))
        .map(|(o, _)| o);
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

fn barrier_roles(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for f in &cx.barriers {
        let b = &k.barriers[f.barrier];
        let bspan = k.barriers.span(f.barrier);
        for a in &f.arrivals {
            if !b.producers.contains(&a.role) {
                let rn = &k.roles[a.role].name;
                let mut finding = Finding::new(
                    &BARRIER_ROLES,
                    cx.span(a.stmt),
                    format!(
                        "role `{rn}` arrives on `{}` but is not one of its producers",
                        b.name
                    ),
                )
                .subject("barrier", &b.name)
                .role(rn)
                .label(bspan, "declared here");
                finding = match sibling(k, f.barrier, |o| o.producers.contains(&a.role)) {
                    // The role signals a barrier of the same ring: the arrival most likely names
                    // the wrong one, and declaring the role a producer here would keep the bug.
                    Some(o) => finding
                        .label(k.barriers.span(o), format!("`{rn}` is declared a producer of `{}`", k.barriers[o].name))
                        .help(format!(
                            "did you mean to signal `{}`? Adding `{rn}` to the producers of `{}` would make the wrong handoff legal",
                            k.barriers[o].name, b.name
                        )),
                    None => finding.help(format!(
                        "add `{rn}` to producers=[...], or signal another barrier"
                    )),
                };
                out.push(finding);
            }
        }
        for (s, r) in &f.waits {
            if !b.consumers.contains(r) {
                let rn = &k.roles[*r].name;
                let mut finding = Finding::new(
                    &BARRIER_ROLES,
                    cx.span(*s),
                    format!(
                        "role `{rn}` waits on `{}` but is not one of its consumers",
                        b.name
                    ),
                )
                .subject("barrier", &b.name)
                .role(rn)
                .label(bspan, "declared here");
                finding = match sibling(k, f.barrier, |o| o.consumers.contains(r)) {
                    Some(o) => {
                        let own = if b.producers.contains(r) {
                            format!(" (`{rn}` itself signals `{}`: this wait would wait for its own arrivals)", b.name)
                        } else {
                            String::new()
                        };
                        finding
                            .label(k.barriers.span(o), format!("`{rn}` is declared a consumer of `{}`", k.barriers[o].name))
                            .help(format!(
                                "did you mean `lm.wait({})`?{own} Adding `{rn}` to the consumers of `{}` would make the wrong handoff legal",
                                k.barriers[o].name, b.name
                            ))
                    }
                    None => finding.help(format!("add `{rn}` to consumers=[...]")),
                };
                out.push(finding);
            }
        }
        for p in &b.producers {
            if !f.arrivals.iter().any(|a| a.role == *p) && !f.arrivals.is_empty() {
                out.push(
                    Finding::new(
                        &BARRIER_ROLES,
                        bspan,
                        format!(
                            "role `{}` is declared a producer of `{}` but never arrives on it",
                            k.roles[*p].name, b.name
                        ),
                    )
                    .subject("barrier", &b.name)
                    .severity(cake_diag::Severity::Warning),
                );
            }
        }
        for c in &b.consumers {
            if !f.waits.iter().any(|(_, r)| r == c) {
                out.push(
                    Finding::new(
                        &BARRIER_ROLES,
                        bspan,
                        format!(
                            "role `{}` is declared a consumer of `{}` but never waits on it",
                            k.roles[*c].name, b.name
                        ),
                    )
                    .subject("barrier", &b.name)
                    .severity(cake_diag::Severity::Warning),
                );
            }
        }
    }
}

fn stage_mismatch(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Some((l, p)) = cx.loop_pipeline(&site.loops) else {
            continue;
        };
        let pipe = &k.pipelines[p];
        for u in place_uses(k, &site.effects) {
            if u.stage.is_some() || u.stages <= 1 || u.stages == pipe.stages {
                continue;
            }
            // An outer loop over a pipeline of the place's depth: it is that ring's (two rings,
            // docs/language.md §7.6; a TMEM stage per tile, §7.4), and wants its stage named.
            let outer = site
                .loops
                .iter()
                .rev()
                .find_map(|&o| match k.loops[o].kind {
                    LoopKind::Range {
                        pipeline: Some(q), ..
                    } if q != p && k.pipelines[q].stages == u.stages => Some(q),
                    _ => None,
                });
            let help = match outer {
                Some(q) => format!(
                    "`{}` follows the loop over `{}` around this one ({} stages): name its stage, `{}.stage({}.stage)`",
                    u.name, k.pipelines[q].name, u.stages, u.name, k.pipelines[q].name
                ),
                None => format!("declare `{}` with stages={}", u.name, pipe.stages),
            };
            let noun = if u.kind == "view" { "view" } else { "region" };
            out.push(
                Finding::new(
                    &STAGE_MISMATCH,
                    cx.span(site.stmt),
                    format!(
                        "{} has {} stages but pipeline `{}` has {}",
                        u.what(),
                        u.stages,
                        pipe.name,
                        pipe.stages
                    ),
                )
                .subject(u.kind, &u.name)
                .expected(pipe.stages)
                .actual(u.stages)
                .label(u.decl, format!("{noun} declared here"))
                .label(k.loops.span(l), format!("loop bound to `{}`", pipe.name))
                .help(help),
            );
        }
        let barrier = match &site.op {
            Op::Wait { barrier } | Op::Arrive { barrier } | Op::Commit { barrier } => {
                Some(*barrier)
            }
            Op::TmaLoad { barrier, .. } | Op::CpAsync { barrier, .. } => Some(*barrier),
            Op::Mma { release, .. } => *release,
            _ => None,
        };
        if let Some(b) = barrier {
            let bar = &k.barriers[b];
            if let Some(q) = bar.pipeline {
                if q != p {
                    out.push(
                        Finding::new(
                            &STAGE_MISMATCH,
                            cx.span(site.stmt),
                            format!("barrier `{}` is bound to pipeline `{}` but used in a loop over `{}`", bar.name, k.pipelines[q].name, pipe.name),
                        )
                        .subject("barrier", &bar.name)
                        .label(k.barriers.span(b), "declared here"),
                    );
                }
            }
        }
    }
}

/// A buffer of one stage that one role writes and another reads inside loops over the same ring
/// of several stages: the ring lets the writer run a stage ahead, so it refills the buffer for the
/// next iteration while the reader may still read this one.
fn single_stage_ring(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    // (use, role, its rings of several stages, statement) of every single-stage use that names
    // no stage.
    let mut uses = Vec::new();
    for site in &cx.ops {
        let Some(role) = site.role else { continue };
        let mut rings = rings_around(k, &site.loops);
        rings.retain(|&p| k.pipelines[p].stages > 1);
        for u in place_uses(k, &site.effects) {
            if u.stages == 1 && u.stage.is_none() {
                uses.push((u, role, rings.clone(), site.stmt));
            }
        }
    }
    let mut reported: Vec<Memory> = Vec::new();
    for (w, writer, rings, stmt) in uses.iter().filter(|x| x.0.write) {
        if reported.contains(&w.place) {
            continue;
        }
        let Some((p, (_, reader, _, read_at))) = uses.iter().find_map(|r| {
            let ring = rings.iter().find(|p| r.2.contains(p))?;
            (!r.0.write && r.0.place == w.place && r.1 != *writer).then_some((*ring, r))
        }) else {
            continue;
        };
        reported.push(w.place);
        let pipe = &k.pipelines[p];
        let (writer, reader) = (&k.roles[*writer].name, &k.roles[*reader].name);
        out.push(
            Finding::new(
                &STAGE_MISMATCH,
                cx.span(*stmt),
                format!(
                    "{} has one stage, but `{writer}` writes it and `{reader}` reads it in loops over pipeline `{}` ({} stages): the write for the next stage can land while this one is read",
                    w.what(), pipe.name, pipe.stages
                ),
            )
            .subject(w.kind, &w.name)
            .role(writer)
            .expected(pipe.stages)
            .actual(1)
            .label(w.decl, "declared here")
            .label(cx.span(*read_at), format!("`{reader}` reads it here"))
            .help(format!("declare it with stages={}", pipe.stages)),
        );
    }
}

/// How an explicit stage can run past a place's stages.
enum Reach {
    /// A constant out of range.
    Fixed(i64),
    /// A pipeline's `.stage` (its text) over a ring of this many stages.
    Ring(String, u32),
    /// Another index (its text), with what it can evaluate to.
    Computed(String, bounds::Bounds),
}

/// An explicit stage (`view.stage(i)`, `region.stage(i)`) that can name a stage the place does
/// not have: a constant past its stages, a pipeline's stage (`p.stage`) of a ring deeper or
/// shallower than the place's, or any other index not shown to stay in `0..stages` where it is
/// used ([`bounds::bounds_under`]: the `if`s around it narrow its variables).
fn explicit_stages(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let bad = place_uses(k, &site.effects).into_iter().find_map(|u| {
            let stage = u.stage?;
            let reach = match k.exprs[stage].kind {
                ExprKind::Int(i) if i < 0 || i >= u.stages as i64 => Reach::Fixed(i),
                ExprKind::Int(_) => return None,
                ExprKind::PipelineStage(p) if k.pipelines[p].stages != u.stages => {
                    let pipe = &k.pipelines[p];
                    Reach::Ring(format!("`{}.stage`", pipe.name), pipe.stages)
                }
                ExprKind::PipelineStage(_) => return None,
                // Any other index must be shown to stay in range: the lowering adds it to the
                // place's address as it is, so a stage past either end writes another place.
                _ => {
                    let b = bounds::bounds_under(k, stage, &site.guards);
                    if b.within(u.stages as i64) {
                        return None;
                    }
                    Reach::Computed(cx.index_text(stage), b)
                }
            };
            Some((u, reach))
        });
        let Some((u, reach)) = bad else {
            continue;
        };
        let (what, has) = (u.what(), stages_text(u.stages));
        let (msg, named, help) = match reach {
            Reach::Ring(named, n) => (
                format!("{what} has {has}, but its stage is {named}, which runs over {n}"),
                named,
                format!("declare it with stages={n}"),
            ),
            Reach::Fixed(i) => (
                format!("{what} has {has}, but this use names stage {i}"),
                i.to_string(),
                format!("name a stage in 0..{}", u.stages),
            ),
            Reach::Computed(named, b) => {
                let range = b.to_string();
                // Index `%` floors, so a negative index wraps too.
                let help = format!(
                    "take it modulo the stages (`({named}) % {}`), or name a pipeline's `.stage`",
                    u.stages
                );
                (
                    format!(
                        "{what} has {has}, but this use's stage `{named}` can be any of {range}"
                    ),
                    format!("`{named}`, in {range}"),
                    help,
                )
            }
        };
        out.push(
            Finding::new(&STAGE_MISMATCH, cx.span(site.stmt), msg)
                .subject(u.kind, &u.name)
                .expected(format!("a stage in 0..{}", u.stages))
                .actual(named)
                .label(u.decl, "declared here")
                .help(help),
        );
    }
}

/// A staged view or region reached at a ring's stage by one access and at a fixed stage by
/// another, at least one a write, both in loops over that ring: the ring's barriers order the
/// writes and reads of one stage, so the fixed-stage access meets the others unordered (and
/// reads what they did not write).
fn mixed_stages(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    // (use, role, rings around it, statement, the ring whose stage it takes) of every use of a
    // staged place inside a pipelined loop.
    let mut uses = Vec::new();
    for site in &cx.ops {
        let Some(role) = site.role else { continue };
        let rings = rings_around(k, &site.loops);
        let innermost = cx.loop_pipeline(&site.loops).map(|(_, p)| p);
        for u in place_uses(k, &site.effects) {
            if u.stages == 1 {
                continue;
            }
            let ring = match u.stage.map(|e| &k.exprs[e].kind) {
                None => innermost,
                Some(ExprKind::PipelineStage(p)) => Some(*p),
                Some(_) => None,
            };
            if ring.is_some() || u.stage.is_some() {
                uses.push((u, role, rings.clone(), site.stmt, ring));
            }
        }
    }
    let mut reported: Vec<Memory> = Vec::new();
    for (fixed, role, rings, stmt, _) in uses.iter().filter(|x| x.4.is_none()) {
        if reported.contains(&fixed.place) {
            continue;
        }
        let Some((other, other_role, _, other_stmt, Some(p))) = uses.iter().find(|o| {
            o.4.is_some_and(|p| {
                o.0.place == fixed.place
                    && (o.0.write || fixed.write)
                    && o.2.contains(&p)
                    && rings.contains(&p)
            })
        }) else {
            continue;
        };
        reported.push(fixed.place);
        let verb = |w: bool| if w { "writes" } else { "reads" };
        let (who, whom) = (&k.roles[*role].name, &k.roles[*other_role].name);
        let stage = fixed.stage.map(|e| cx.expr_text(e)).unwrap_or_default();
        let which = match fixed.stage.map(|e| &k.exprs[e].kind) {
            Some(ExprKind::Int(_)) => "a fixed stage",
            _ => "a stage of its own",
        };
        out.push(
            Finding::new(
                &STAGE_MISMATCH,
                cx.span(*stmt),
                format!(
                    "`{who}` {} {} at {which} (`.stage({})`), but `{whom}` {} it at the stage of pipeline `{}`: its barriers order one stage's accesses, not these",
                    verb(fixed.write),
                    fixed.what(),
                    unparen(&stage),
                    verb(other.write),
                    k.pipelines[*p].name
                ),
            )
            .subject(fixed.kind, &fixed.name)
            .role(who)
            .label(cx.span(*other_stmt), format!("`{whom}` {} it here", verb(other.write)))
            .help(format!(
                "take the ring's stage here too (no `.stage`, or `.stage({}.stage)`)",
                k.pipelines[*p].name
            )),
        );
    }
}

fn stages_text(n: u32) -> String {
    match n {
        1 => "one stage".into(),
        n => format!("{n} stages"),
    }
}

fn trip_counts(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    // pipeline -> role -> (loop, trip text)
    let mut seen: BTreeMap<usize, Vec<(RoleId, LoopId, String)>> = BTreeMap::new();
    k.walk(|_, stmt, ctx| {
        if let Stmt::Loop { id, .. } = stmt {
            if let LoopKind::Range {
                start,
                stop,
                pipeline: Some(p),
            } = &k.loops[*id].kind
            {
                if let Some(r) = ctx.role {
                    let text = format!("[{}, {})", cx.expr_text(*start), cx.expr_text(*stop));
                    seen.entry(p.index()).or_default().push((r, *id, text));
                }
            }
        }
    });
    for (p, uses) in seen {
        let Some((r0, l0, t0)) = uses.first().cloned() else {
            continue;
        };
        for (r, l, t) in &uses[1..] {
            if *r != r0 && *t != t0 {
                let pname = &k.pipelines[PipelineId::from_index(p)].name;
                out.push(
                    Finding::new(
                        &TRIP_COUNT_MISMATCH,
                        k.loops.span(*l),
                        format!(
                            "roles `{}` and `{}` run pipeline `{pname}` over different ranges",
                            k.roles[r0].name, k.roles[*r].name
                        ),
                    )
                    .subject("pipeline", pname)
                    .role(&k.roles[*r].name)
                    .expected(&t0)
                    .actual(t)
                    .label(
                        k.loops.span(l0),
                        format!("`{}` iterates {t0}", k.roles[r0].name),
                    )
                    .help("use the same bounds in every loop bound to one pipeline"),
                );
            }
        }
    }
}

fn unused(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut views = vec![false; k.views.len()];
    let mut barriers = vec![false; k.barriers.len()];
    let mut frags = vec![false; k.fragments.len()];
    let mut tmems = vec![false; k.tmems.len()];
    let mut pipes = vec![false; k.pipelines.len()];
    let mut roles = vec![false; k.roles.len()];
    for (_, b) in k.barriers.iter() {
        if let Some(p) = b.pipeline {
            pipes[p.index()] = true;
        }
    }
    k.walk(|_, stmt, _| match stmt {
        Stmt::Role { role, .. } => roles[role.index()] = true,
        Stmt::Loop { id, .. } => {
            if let LoopKind::Range {
                pipeline: Some(p), ..
            } = k.loops[*id].kind
            {
                pipes[p.index()] = true;
            }
        }
        Stmt::Op(_) | Stmt::If { .. } | Stmt::Ahead { .. } => {}
    });
    for site in &cx.ops {
        let e = &site.effects;
        for v in e.smem_writes.iter().chain(&e.smem_reads) {
            views[v.view.index()] = true;
        }
        for (b, _) in &e.barriers {
            barriers[b.index()] = true;
        }
        for f in e.frag_writes.iter().chain(&e.frag_reads) {
            frags[f.index()] = true;
        }
        for t in e.tmem_writes.iter().chain(&e.tmem_reads) {
            tmems[t.region.index()] = true;
        }
    }
    for (_, e) in k.exprs.iter() {
        if let ExprKind::Frag(f) = e.kind {
            frags[f.index()] = true;
        }
    }
    let mut report = |kind: &str, name: &str, span| {
        out.push(
            Finding::new(
                &UNUSED_RESOURCE,
                span,
                format!("{kind} `{name}` is declared but never used"),
            )
            .subject(kind, name),
        );
    };
    for (h, v) in k.views.iter() {
        if !views[h.index()] {
            report("view", &v.name, k.views.span(h));
        }
    }
    for (h, b) in k.barriers.iter() {
        if !barriers[h.index()] {
            report("barrier", &b.name, k.barriers.span(h));
        }
    }
    for (h, f) in k.fragments.iter() {
        if !frags[h.index()] {
            report("fragment", &f.name, k.fragments.span(h));
        }
    }
    for (h, t) in k.tmems.iter() {
        if !tmems[h.index()] {
            report("tmem", &t.name, k.tmems.span(h));
        }
    }
    for (h, p) in k.pipelines.iter() {
        if !pipes[h.index()] {
            report("pipeline", &p.name, k.pipelines.span(h));
        }
    }
    for (h, r) in k.roles.iter() {
        if !roles[h.index()] {
            report("role", &r.name, k.roles.span(h));
        }
    }
}
