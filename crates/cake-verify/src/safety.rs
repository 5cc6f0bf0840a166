//! Program safety: arrival counts, transaction bytes, waits that can never complete, stage
//! binding, write-after-read and read-after-write on pipeline stages, releases before async
//! readers retire, proxy fences, and shared-memory alignment and aliasing.

use crate::ctx::{place_uses, Ctx, OpSite};
use cake_diag::catalog::safety::*;
use cake_diag::{Finding, Span};
use cake_ir::layout::view_alignment;
use cake_ir::sync::{ArriveKind, Memory};
use cake_ir::*;
use cake_target::MmaFamily;

/// Largest transaction count one mbarrier phase can track (PTX ISA, mbarrier tx-count range).
const TX_LIMIT: u64 = (1 << 20) - 1;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    counts(cx, out);
    stage_binding(cx, out);
    stage_hazards(cx, out);
    release_before_retire(cx, out);
    proxy_fence(cx, out);
    placement(cx, out);
    tmem_read_before_ready(cx, out);
    oob_fill(cx, out);
    coord_alignment(cx, out);
    rows_in_range(cx, out);
    multicast_guard(cx, out);
    cluster_divergence(cx, out);
    tmem_overwrite(cx, out);
    tile_overwrite(cx, out);
    warp_branches(cx, out);
    peer_reads(cx, out);
    stream_partials(cx, out);
}

/// Stream-K: each run of a tile's K steps holds only its own steps' sum. The fix-up pairs every
/// run's warps with the same warps of other CTAs, so it must run on every path; after it, only
/// the run that ends the tile (`k1 == KB`) holds the whole sum, so only that run may write an
/// output, and an accumulator the runs store must have been fixed up.
fn stream_partials(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let Some((steps, _, stop)) = k.stream_k() else {
        return;
    };
    let stop_name = k
        .loops
        .iter()
        .find_map(|(_, l)| match &l.kind {
            LoopKind::Tiles { names, .. } => names.get(stop).cloned(),
            LoopKind::Range { .. } => None,
        })
        .unwrap_or_default();
    let steps_text = cx.k.exprs.span(steps);
    // The fragments holding only this run's K steps, each with the accumulator it came from:
    // an MMA's accumulator until its fix-up, and any fragment assigned from one before that.
    let mut partial: Vec<(FragId, FragId)> = Vec::new();
    let origin_in = |partial: &[(FragId, FragId)], e: ExprId| {
        partial
            .iter()
            .find(|(f, _)| k.expr_reads_fragment(e, *f))
            .map(|&(_, origin)| origin)
    };
    let mut fixed: Vec<FragId> = Vec::new();
    for site in &cx.ops {
        match &site.op {
            Op::StreamFixup { frag } => {
                if let Some(g) = site.guards.first() {
                    out.push(
                        Finding::new(
                            &STREAM_PARTIAL,
                            cx.span(site.stmt),
                            format!(
                                "the fix-up of `{}` runs only on some paths: a run that skips it neither publishes its partial nor adds the others', and the run waiting for it never finishes",
                                k.fragments[*frag].name
                            ),
                        )
                        .label(k.exprs.span(g.cond), "only where this holds")
                        .role(cx.role_name(site.role))
                        .help("call `lm.stream_fixup(acc)` unconditionally, once per run, after the run's K loop"),
                    );
                }
                if fixed.contains(frag) {
                    out.push(
                        Finding::new(
                            &STREAM_PARTIAL,
                            cx.span(site.stmt),
                            format!(
                                "`{}` is fixed up twice in a run: the first fix-up takes the partials the other runs published, and the second waits for partials nobody publishes again",
                                k.fragments[*frag].name
                            ),
                        )
                        .role(cx.role_name(site.role))
                        .help("fix each accumulator up once per run"),
                    );
                }
                fixed.push(*frag);
                partial.retain(|(f, _)| f != frag);
            }
            Op::Mma {
                acc: Operand::Frag(a),
                ..
            } if !partial.iter().any(|(f, _)| f == a) => partial.push((*a, *a)),
            Op::Assign { dst, value } => {
                let origin = origin_in(&partial, *value);
                partial.retain(|(f, _)| f != dst);
                partial.extend(origin.map(|o| (*dst, o)));
            }
            // Every value reads the fragments as they were before the statement.
            Op::AssignMany { pairs } => {
                let origins: Vec<_> = pairs
                    .iter()
                    .map(|(dst, value)| (*dst, origin_in(&partial, *value)))
                    .collect();
                for (dst, origin) in origins {
                    partial.retain(|(f, _)| *f != dst);
                    partial.extend(origin.map(|o| (dst, o)));
                }
            }
            // A shared-memory store of the accumulator feeds a TMA store or a copy out.
            Op::Store { .. }
            | Op::TmaStore { .. }
            | Op::CopyTo { .. }
            | Op::GlobalScatterAdd { .. }
            | Op::SmemStore { .. } => {
                let to_shared = matches!(site.op, Op::SmemStore { .. });
                let ends_tile = site
                    .guards
                    .iter()
                    .any(|g| !g.negated && k.is_stream_end(g.cond));
                let held = partial.iter().copied().find(|(f, _)| {
                    site.effects
                        .exprs
                        .iter()
                        .any(|&e| k.expr_reads_fragment(e, *f))
                });
                if let Some((f, origin)) = held {
                    let (name, acc) = (&k.fragments[f].name, &k.fragments[origin].name);
                    let message = if f == origin {
                        format!("accumulator `{name}` holds only this run's K steps: no `lm.stream_fixup({name})` adds the other runs' partials before it is stored")
                    } else {
                        format!("`{name}` was assigned from accumulator `{acc}` before `lm.stream_fixup({acc})`: it holds only this run's K steps, and the fix-up does not reach a copy")
                    };
                    let help = if f == origin {
                        format!("after the run's K loop: `lm.stream_fixup({name})`, then store under `if {stop_name} == KB:`")
                    } else {
                        format!("fix `{acc}` up before `{name}` reads it, or fix `{name}` up in its place")
                    };
                    out.push(
                        Finding::new(&STREAM_PARTIAL, cx.span(site.stmt), message)
                            .role(cx.role_name(site.role))
                            .help(help),
                    );
                } else if !ends_tile && !to_shared {
                    out.push(
                        Finding::new(
                            &STREAM_PARTIAL,
                            cx.span(site.stmt),
                            format!(
                                "this write runs on every run of the stream-K tile loop, but only the run that ends its tile (`{stop_name}` equal to the steps per tile) holds the tile's sum"
                            ),
                        )
                        .label(steps_text, "the steps per tile")
                        .role(cx.role_name(site.role))
                        .help(format!("write the tile under `if {stop_name} == KB:`, with KB the loop's `stream=` count")),
                    );
                }
            }
            _ => {}
        }
    }
}

/// The reads of cluster peers' views in an operation's expressions: (view, rank expression).
pub(crate) fn peer_loads(k: &Kernel, site: &OpSite) -> Vec<(ExprId, ViewId, ExprId)> {
    let mut found = Vec::new();
    for &e in &site.effects.exprs {
        k.visit_expr(e, |x, kind| {
            if let ExprKind::ViewLoad { view, cta: Some(c) } = kind {
                found.push((x, view.view, *c));
            }
            true
        });
    }
    found
}

/// A read of a peer CTA's view must follow, in its role, a wait on a cluster barrier that a
/// role storing into the view arrives on after the store: that arrival (release, cluster scope)
/// and wait (acquire, cluster scope) publish every CTA's stores to the others.
fn peer_reads(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (i, site) in cx.ops.iter().enumerate() {
        for (x, v, _) in peer_loads(k, site) {
            let stored_then_arrived = |b: BarrierId| {
                cx.ops.iter().enumerate().any(|(a, arrive)| {
                    matches!(arrive.op, Op::Arrive { barrier } if barrier == b)
                        && cx.ops[..a].iter().any(|st| {
                            st.role == arrive.role
                                && matches!(&st.op, Op::SmemStore { dst, .. } if dst.view == v)
                        })
                })
            };
            let published = cx.ops[..i].iter().any(|w| {
                w.role == site.role
                    && matches!(w.op, Op::Wait { barrier } if k.barriers[barrier].cluster && stored_then_arrived(barrier))
            });
            if published {
                continue;
            }
            let name = &k.views[v].name;
            // A wait on a CTA barrier the writers arrive on orders this CTA's stores only.
            let local = cx.ops[..i].iter().find_map(|w| match w.op {
                Op::Wait { barrier }
                    if w.role == site.role
                        && !k.barriers[barrier].cluster
                        && stored_then_arrived(barrier) =>
                {
                    Some(barrier)
                }
                _ => None,
            });
            if let Some(b) = local {
                let bname = &k.barriers[b].name;
                out.push(
                    Finding::new(
                        &PEER_READ_UNPUBLISHED,
                        k.exprs.span(x),
                        format!("this reads a peer CTA's `{name}`, but `{bname}` publishes stores within one CTA only: its arrivals count in the arriving CTA, so the wait does not order the peer's `{name}.store` before the read"),
                    )
                    .subject("view", name)
                    .role(cx.role_name(site.role))
                    .label(k.barriers.span(b), format!("`{bname}` is a CTA barrier"))
                    .expected(format!("`{bname}` declared with cluster=True"))
                    .actual("a CTA barrier")
                    .help(format!("declare `{bname}` with cluster=True: its arrivals then reach every CTA of the cluster and release at cluster scope")),
                );
                continue;
            }
            out.push(
                Finding::new(
                    &PEER_READ_UNPUBLISHED,
                    k.exprs.span(x),
                    format!("this reads a peer CTA's `{name}` without waiting for its stores to be published: nothing orders the read after the peer's `{name}.store`"),
                )
                .subject("view", name)
                .role(cx.role_name(site.role))
                .expected(format!("a wait, earlier in this role, on a cluster barrier the writers of `{name}` arrive on after storing it"))
                .actual("no such wait")
                .help(format!("declare `b = lm.barrier(producers=[writer], consumers=[reader], cluster=True)`; `lm.arrive(b)` after `{name}.store(...)`, `lm.wait(b)` before this read")),
            );
        }
    }
}

/// In a persistent kernel a copy into a shared-memory view outside any pipelined loop runs once
/// per tile: the next tile's copy overwrites what another role may still be reading of this
/// tile's, unless the copying role first waits on a barrier those readers arrive on (a "view
/// empty" barrier; it starts free). Staged views in pipelined loops are `CAKE-S005`'s.
fn tile_overwrite(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    if !k.persistent {
        return;
    }
    let in_tiles = |site: &OpSite| {
        site.loops
            .iter()
            .any(|l| matches!(k.loops[*l].kind, LoopKind::Tiles { .. }))
    };
    let pipelined = |site: &OpSite| {
        site.loops.iter().any(|l| {
            matches!(
                k.loops[*l].kind,
                LoopKind::Range {
                    pipeline: Some(_),
                    ..
                }
            )
        })
    };
    let mut reported: Vec<ViewId> = Vec::new();
    for (i, site) in cx.ops.iter().enumerate() {
        let (Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. }) = &site.op else {
            continue;
        };
        let v = dst.view;
        if reported.contains(&v) || !in_tiles(site) || pipelined(site) {
            continue;
        }
        let readers: Vec<RoleId> = cx
            .memory
            .readers(Memory::View(v))
            .into_iter()
            .filter(|r| Some(*r) != site.role)
            .collect();
        let Some(&reader) = readers.first() else {
            continue;
        };
        // A wait of the copying role, earlier in the same tile, on a barrier only readers of the
        // view arrive on.
        let guarded = cx.ops[..i].iter().any(|w| {
            w.role == site.role
                && in_tiles(w)
                && matches!(&w.op, Op::Wait { barrier } if {
                    let f = &cx.barriers[barrier.index()];
                    !f.arrivals.is_empty() && f.arrivals.iter().all(|a| readers.contains(&a.role))
                })
        });
        if guarded {
            continue;
        }
        reported.push(v);
        let name = &k.views[v].name;
        out.push(
            Finding::new(
                &TILE_OVERWRITE,
                cx.span(site.stmt),
                format!("in a persistent kernel the next tile's copy overwrites `{name}` while `{}` may still be reading the previous tile's", k.roles[reader].name),
            )
            .subject("view", name)
            .role(cx.role_name(site.role))
            .help(format!("wait, before this copy, on a barrier that `{}` arrives on once it has read `{name}` (it starts free)", k.roles[reader].name)),
        );
    }
}

/// Inside a branch on a warp vote (`lm.any`, `lm.all`) each warp goes its own way: what needs
/// more than the warp — a warpgroup MMA, an arrival counted per phase, a wait or a named-barrier
/// sync the other warps must reach, a copy issued by one elected thread — would run for some
/// warps of the replica and not others.
fn warp_branches(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Some(vote) = site.guards.iter().find(|g| k.expr_votes(g.cond)) else {
            continue;
        };
        let what = match &site.op {
            // Per-thread work. A global store of registers is per thread too; where its
            // lowering synchronises the replica, the lowering refuses it under a vote.
            Op::Assign { .. }
            | Op::AssignMany { .. }
            | Op::Ldmatrix { .. }
            | Op::Store { .. }
            | Op::GlobalScatterAdd { .. } => continue,
            Op::Mma { acc, .. } if cx.mma_family(acc) == MmaFamily::MmaSync => continue,
            Op::Mma { acc, .. } => format!(
                "a {} MMA, which every warp of the warpgroup issues together",
                cx.mma_family(acc)
            ),
            Op::Wait { .. } | Op::Arrive { .. } | Op::Commit { .. } => {
                "a barrier operation, whose arrivals are counted per phase".into()
            }
            Op::Sync { .. } => {
                "a named-barrier sync, which waits for every warp of its roles".into()
            }
            Op::TmaLoad { .. } | Op::TmaStore { .. } | Op::CpAsync { .. } | Op::TmemCopy { .. } => {
                "a copy the role's elected thread issues for all its warps".into()
            }
            Op::SmemStore { .. } | Op::ScatterAdd { .. } => {
                "a shared-memory store the replica's warps synchronise around".into()
            }
            Op::CopyTo { .. } => {
                "a copy out of shared memory the replica's warps synchronise around".into()
            }
            Op::TmemLoad { .. } | Op::TmemStore { .. } | Op::FenceProxyAsync => {
                "an operation ordered for the whole role".into()
            }
            Op::StreamFixup { .. } => {
                "a stream-K fix-up, which pairs each warp with the same warp of other CTAs".into()
            }
        };
        out.push(
            Finding::new(
                &DIVERGENT_COLLECTIVE,
                cx.span(site.stmt),
                format!("this is {what}, but it sits in a branch on a warp vote, which each warp takes on its own"),
            )
            .label(k.exprs.span(vote.cond), "decided per warp")
            .role(cx.role_name(site.role))
            .help("keep only per-thread work under the vote (fragment updates, global stores, ldmatrix, mma.sync); move the rest out of the branch"),
        );
    }
}

/// In a persistent kernel, MMAs into a TMEM accumulator that another role reads must wait on an
/// "accumulator empty" barrier the readers release (it starts free, `cake_ir::sync`).
fn tmem_overwrite(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    if !k.persistent {
        return;
    }
    let memory = &cx.memory;
    let mut reported: Vec<TmemId> = Vec::new();
    for site in &cx.ops {
        let Op::Mma {
            acc: Operand::Tmem(TmemRef { region: t, .. }),
            ..
        } = &site.op
        else {
            continue;
        };
        let readers = memory.readers(Memory::Tmem(*t));
        if reported.contains(t) || readers.iter().all(|r| Some(*r) == site.role) {
            continue;
        }
        if cx.barriers.iter().any(|f| f.releases_tmem.contains(t)) {
            continue;
        }
        reported.push(*t);
        let name = &k.tmems[*t].name;
        let reader = cx.role_name(readers.iter().copied().find(|r| Some(*r) != site.role));
        out.push(
            Finding::new(
                &TMEM_OVERWRITE,
                cx.span(site.stmt),
                format!("in a persistent kernel the next tile's MMAs overwrite `{name}` while `{reader}` may still be reading the previous tile's values"),
            )
            .subject("tmem", name)
            .role(cx.role_name(site.role))
            .help(format!("wait, before the tile's MMAs, on a barrier that `{reader}` arrives on after its lm.tmem_load of `{name}` (it starts free)")),
        );
    }
}

/// A multicast load writes the view in every CTA of the cluster: the wait before it must be on a
/// cluster barrier, which counts the releases of all of them.
fn multicast_guard(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    if k.cluster_size() < 2 {
        return;
    }
    for (i, site) in cx.ops.iter().enumerate() {
        let Op::TmaLoad { dst, multicast, .. } = &site.op else {
            continue;
        };
        if *multicast <= 1 {
            continue;
        }
        // Waits of the same role earlier in the same loop body.
        let waits: Vec<BarrierId> = cx.ops[..i]
            .iter()
            .filter(|s| s.role == site.role && s.loops == site.loops)
            .filter_map(waits_on)
            .collect();
        if waits.iter().any(|b| k.barriers[*b].cluster) {
            continue;
        }
        let view = &k.views[dst.view].name;
        let mut f = Finding::new(
            &MULTICAST_UNGUARDED,
            cx.span(site.stmt),
            match waits.last() {
                Some(b) => format!(
                    "this load writes `{view}` in every CTA of the cluster, but `{}` counts only this CTA's releases: a peer's readers may still be reading the stage",
                    k.barriers[*b].name
                ),
                None => format!(
                    "this load writes `{view}` in every CTA of the cluster without waiting for a cluster barrier that says the stage is free in all of them"
                ),
            },
        )
        .subject("view", view)
        .role(cx.role_name(site.role));
        f = match waits.last() {
            Some(b) => f
                .label(k.barriers.span(*b), "a CTA barrier")
                .help(format!("declare `{}` with cluster=True", k.barriers[*b].name)),
            None => f.help("wait on a cluster barrier (lm.barrier(..., cluster=True)) released by the view's readers first"),
        };
        out.push(f);
    }
}

/// The CTAs of a cluster differ only in the first tile coordinate: a multicast box must not
/// depend on it, nor may the trip counts and conditions around cluster-wide synchronisation.
fn cluster_divergence(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    if k.cluster_size() < 2 {
        return;
    }
    let varies = |e: ExprId| k.expr_reads_tile_coord(e, 0);
    let mut reported: Vec<Span> = Vec::new();
    for site in &cx.ops {
        let what = match &site.op {
            Op::TmaLoad {
                multicast, coords, ..
            } if *multicast > 1 => {
                if let Some(&c) = coords.iter().find(|&&c| varies(c)) {
                    out.push(
                        Finding::new(
                            &CLUSTER_DIVERGENCE,
                            cx.span(site.stmt),
                            "the coordinates of this multicast load follow the first tile index, which differs between the CTAs of a cluster: each would deliver a share of a different box",
                        )
                        .label(k.exprs.span(c), "differs between the cluster's CTAs")
                        .role(cx.role_name(site.role))
                        .help("multicast the operand the cluster's tiles share (indexed by the other tile axes)"),
                    );
                }
                "a multicast load"
            }
            Op::Wait { barrier } | Op::Arrive { barrier } | Op::Commit { barrier }
                if k.barriers[*barrier].cluster =>
            {
                "an operation on a cluster barrier"
            }
            Op::Mma {
                release: Some(b), ..
            } if k.barriers[*b].cluster => "a release of a cluster barrier",
            _ => continue,
        };
        let loop_bounds = site.loops.iter().filter_map(|&l| match &k.loops[l].kind {
            LoopKind::Range { start, stop, .. } if varies(*start) || varies(*stop) => {
                Some(k.loops.span(l))
            }
            _ => None,
        });
        let conds = site
            .guards
            .iter()
            .filter(|g| varies(g.cond))
            .map(|g| k.exprs.span(g.cond));
        for sp in loop_bounds.chain(conds).collect::<Vec<_>>() {
            if reported.contains(&sp) {
                continue;
            }
            reported.push(sp);
            out.push(
                Finding::new(
                    &CLUSTER_DIVERGENCE,
                    sp,
                    format!("this runs a different number of times in each CTA of the cluster (it follows the first tile index), but it holds {what}: a CTA would wait for shares or arrivals its peers never send"),
                )
                .label(cx.span(site.stmt), what)
                .role(cx.role_name(site.role))
                .help("keep trip counts and conditions around cluster synchronisation independent of the first tile index"),
            );
        }
    }
}

/// `view.rows(start, n)` with a start that is not a constant: in range for every replica when it
/// follows `role.index` alone, and for every value the start can take where it is used otherwise
/// ([`bounds::bounds_under`]): the lowering adds the start to the view's address as written, so rows
/// past the view are another place's.
fn rows_in_range(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut reported = std::collections::BTreeSet::new();
    for site in &cx.ops {
        let Some(role) = site.role else { continue };
        let replicas = k.roles[role].replicas() as i64;
        let (writes, reads) = (&site.effects.smem_writes, &site.effects.smem_reads);
        for v in writes.iter().chain(reads) {
            let Some((start, n)) = v.rows else { continue };
            if k.const_int(start).is_some() || !reported.insert((site.stmt, v.view)) {
                continue;
            }
            let view = &k.views[v.view];
            let rows = view.shape[0] as i64;
            let finding = |msg: String, actual: String| {
                Finding::new(&ROWS_OUT_OF_RANGE, cx.span(site.stmt), msg)
                    .subject("view", &view.name)
                    .role(&k.roles[role].name)
                    .actual(actual)
                    .label(k.views.span(v.view), format!("{rows} rows"))
            };
            let per_replica = (0..replicas).find_map(|i| {
                let s = eval_with_index(k, start, role, i)?;
                (s < 0 || s + n as i64 > rows).then_some((i, s))
            });
            if let Some((i, s)) = per_replica {
                out.push(
                    finding(
                        format!(
                            "replica {i} of role `{}` reads or writes rows {s}..{} of `{}`, which has {rows}",
                            k.roles[role].name,
                            s + n as i64,
                            view.name
                        ),
                        format!("{s}..{}", s + n as i64),
                    )
                    .expected(format!("rows within 0..{rows} for replicas 0..{replicas}"))
                    .label(k.roles.span(role), format!("{replicas} replicas")),
                );
                continue;
            }
            let b = bounds::bounds_under(k, start, &site.guards);
            if b.within(rows - n as i64 + 1) {
                continue;
            }
            let text = cx.index_text(start);
            out.push(
                finding(
                    format!(
                        "the first row `{text}` of these {n} rows of `{}` can be any of {b}, but the view has {rows} rows",
                        view.name
                    ),
                    format!("`{text}`, in {b}"),
                )
                .expected(format!("a first row in 0..={}", rows - n as i64))
                .help("bound the start by what its variables run over (a loop's count, `% n`), or use a staged view and its `.stage(...)`"),
            );
        }
    }
}

/// The value of an index expression made of constants and `role.index` (= `index`).
fn eval_with_index(k: &Kernel, e: ExprId, role: RoleId, index: i64) -> Option<i64> {
    let ev = |x: ExprId| eval_with_index(k, x, role, index);
    match &k.exprs[e].kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::RoleIndex(r) if *r == role => Some(index),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (ev(*a)?, ev(*b)?);
            match op {
                BinOp::Add => a.checked_add(b),
                BinOp::Sub => a.checked_sub(b),
                BinOp::Mul => a.checked_mul(b),
                BinOp::FloorDiv if b != 0 => Some(a.div_euclid(b)),
                BinOp::Mod if b != 0 => Some(a.rem_euclid(b)),
                BinOp::Min => Some(a.min(b)),
                BinOp::Max => Some(a.max(b)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A TMEM region written by MMAs of one role is read by another only after a wait on a barrier
/// the MMA role commits.
fn tmem_read_before_ready(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::TmemLoad { src, .. } = &site.op else {
            continue;
        };
        let src = src.region;
        let writers: Vec<RoleId> = cx
            .ops
            .iter()
            .filter_map(|s| match &s.op {
                Op::Mma {
                    acc: Operand::Tmem(t),
                    ..
                } if t.region == src => s.role,
                _ => None,
            })
            .collect();
        if writers.is_empty() || writers.iter().all(|w| Some(*w) == site.role) {
            continue;
        }
        // Only a commit issued after an MMA that writes the region covers it: tcgen05.commit
        // tracks the MMAs its thread issued before it.
        let mut committed: Vec<BarrierId> = Vec::new();
        for (n, w) in cx.ops.iter().enumerate() {
            let Op::Mma {
                acc: Operand::Tmem(t),
                ..
            } = &w.op
            else {
                continue;
            };
            if t.region != src {
                continue;
            }
            for later in &cx.ops[n + 1..] {
                if later.role != w.role {
                    continue;
                }
                match &later.op {
                    Op::Commit { barrier } if !committed.contains(barrier) => {
                        committed.push(*barrier)
                    }
                    // The next MMA into the region starts a new set of writes.
                    Op::Mma {
                        acc: Operand::Tmem(t2),
                        ..
                    } if t2.region == src => break,
                    _ => {}
                }
            }
        }
        // A read guarded by a run-time `if` on a loop's variable, inside that loop (the `if j > 0`
        // of a loop-carried handoff), may rely on a wait at the end of the loop's previous
        // iteration.
        let carried = waited_in_previous_iteration(cx, site, &committed);
        if !waited_before(cx, site, &committed) && !carried {
            let t = &k.tmems[src];
            let mut f = Finding::new(
                &TMEM_READ_BEFORE_READY,
                cx.span(site.stmt),
                format!(
                    "`{}` is loaded before waiting for the commit of the MMAs that write it",
                    t.name
                ),
            )
            .subject("tmem", &t.name)
            .role(cx.role_name(site.role));
            f = match committed.first() {
                Some(b) => f.help(format!("add `lm.wait({})` before the load", k.barriers[*b].name)),
                None => f.help("commit a barrier after the MMAs (`lm.commit(done)`) and wait on it before the load"),
            };
            out.push(point_at_last_wait(cx, site, &committed, f));
        }
    }
}

/// Fixed tensor extents that a TMA box does not divide: the last box is zero-filled.
fn oob_fill(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut seen = Vec::new();
    for site in &cx.ops {
        let Op::TmaLoad { dst, src, .. } = &site.op else {
            continue;
        };
        let ParamKind::Tensor { dims, .. } = &k.params[*src].kind else {
            continue;
        };
        let v = &k.views[dst.view];
        // Box extents aligned to the tensor's trailing dimensions (innermost: one panel).
        let mut box_dims: Vec<u32> = v.shape.clone();
        if let Some(last) = box_dims.last_mut() {
            *last = v.shape[v.shape.len() - 1];
        }
        let offset = dims.len().saturating_sub(box_dims.len());
        for (i, b) in box_dims.iter().enumerate() {
            if let Some(Extent::Fixed(n)) = dims.get(offset + i) {
                if *b > 1
                    && n % b != 0
                    && !seen.contains(&(*src, offset + i))
                    && zeros_can_reach_results(cx, dst.view)
                {
                    seen.push((*src, offset + i));
                    out.push(
                        Finding::new(
                            &TMA_OOB_FILL,
                            cx.span(site.stmt),
                            format!("dimension {} of `{}` is {n}, not a multiple of the {b}-wide box: the last box is zero-filled", offset + i, k.params[*src].name),
                        )
                        .subject("tensor", &k.params[*src].name)
                        .expected(format!("a multiple of {b}"))
                        .actual(n)
                        .help("mask the zero-filled tail before a min, max or softmax uses it"),
                    );
                }
            }
        }
    }
}

/// Whether the zeros a TMA copy fills into `view` can reach a result as if they were data. They
/// cannot when every read of the view is an MMA operand (zeros along K add nothing to a sum;
/// zero rows fill accumulator rows or columns of their own) and everything computed from those
/// accumulators is element-wise on its way to stores, which skip elements past their tensor:
/// no reduction or vote across the filled entries, no MMA that contracts them, no run-time `if`
/// on them, no other reader. Shared-memory views written from such values are followed like
/// the values.
fn zeros_can_reach_results(cx: &Ctx, view: ViewId) -> bool {
    let k = cx.k;
    // Every op's effects with the views its expressions load, once (the walk below repeats).
    let all_effects: Vec<OpEffects> = cx.ops.iter().map(|s| k.op_effects(&s.op)).collect();
    let mut frags: Vec<FragId> = Vec::new();
    let mut views: Vec<ViewId> = vec![view];
    // The accumulators fed by the view, and whether anything else reads it.
    for (site, effects) in cx.ops.iter().zip(&all_effects) {
        if !effects.smem_reads.iter().any(|r| r.view == view) {
            continue;
        }
        let Op::Mma { acc, a, b, .. } = &site.op else {
            return true;
        };
        let reads_view = |o: &Operand| matches!(o, Operand::Smem(r) if r.view == view);
        let in_exprs = effects.exprs.iter().any(|&e| {
            k.expr_any(
                e,
                |kind| matches!(kind, ExprKind::ViewLoad { view: r, .. } if r.view == view),
            )
        });
        match acc {
            Operand::Frag(f) if (reads_view(a) || reads_view(b)) && !in_exprs => {
                if !frags.contains(f) {
                    frags.push(*f);
                }
            }
            _ => return true,
        }
    }
    // Follow the values computed from them until nothing new is reached.
    let tainted_expr = |e: ExprId, frags: &[FragId], views: &[ViewId]| {
        k.expr_any(e, |kind| match kind {
            ExprKind::Frag(f) => frags.contains(f),
            ExprKind::ViewLoad { view: r, .. } => views.contains(&r.view),
            _ => false,
        })
    };
    let mut grew = true;
    while grew {
        grew = false;
        for (site, effects) in cx.ops.iter().zip(&all_effects) {
            let reads = effects.frag_reads.iter().any(|f| frags.contains(f))
                || effects.smem_reads.iter().any(|r| views.contains(&r.view))
                || effects
                    .exprs
                    .iter()
                    .any(|&e| tainted_expr(e, &frags, &views));
            // A run-time `if` on such a value decides by the zeros too.
            if site
                .guards
                .iter()
                .any(|g| tainted_expr(g.cond, &frags, &views))
            {
                return true;
            }
            if !reads {
                continue;
            }
            // A value that mixes elements (a reduction, a warp vote) can carry the zeros into
            // real ones.
            let mixes = effects.exprs.iter().any(|&e| {
                tainted_expr(e, &frags, &views)
                    && k.expr_any(e, |kind| {
                        matches!(kind, ExprKind::Reduce { .. } | ExprKind::Vote { .. })
                    })
            });
            if mixes {
                return true;
            }
            match &site.op {
                Op::Mma { acc, a, b, .. } => {
                    // Accumulating into itself is element-wise; contracting a value computed
                    // from the zeros is not (the filled view itself is what the MMAs above read).
                    let operand = |o: &Operand| match o {
                        Operand::Frag(f) => frags.contains(f),
                        Operand::Smem(r) => r.view != view && views.contains(&r.view),
                        Operand::Tmem(_) => false,
                    };
                    if operand(a)
                        || operand(b)
                        || !matches!(acc, Operand::Frag(f) if frags.contains(f))
                    {
                        return true;
                    }
                }
                Op::Assign { dst, .. } => grew |= add(&mut frags, *dst),
                Op::AssignMany { pairs } => {
                    for (dst, value) in pairs {
                        if tainted_expr(*value, &frags, &views) {
                            grew |= add(&mut frags, *dst);
                        }
                    }
                }
                Op::SmemStore { dst, .. } => grew |= add(&mut views, dst.view),
                // Stores to global memory skip what lies past the tensor; the fix-up adds partial
                // sums element by element.
                Op::Store { .. }
                | Op::TmaStore { .. }
                | Op::CopyTo { .. }
                | Op::StreamFixup { .. } => {}
                _ => return true,
            }
        }
    }
    false
}

fn add<T: PartialEq>(set: &mut Vec<T>, x: T) -> bool {
    if set.contains(&x) {
        false
    } else {
        set.push(x);
        true
    }
}

/// A TMA copy's box starts 16-byte aligned along the tensor's innermost dimension: the hardware
/// stops the kernel (illegal instruction) at a box that starts between two 16-byte boundaries.
/// The innermost coordinate's derived multiple ([`known_multiple`]) times the element size must
/// be a multiple of 16; the tensor's base and its row pitch are checked at launch.
fn coord_alignment(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let (t, coords, what) = match &site.op {
            Op::TmaLoad { src, coords, .. } => (*src, coords, "load"),
            Op::TmaStore { dst, coords, .. } => (*dst, coords, "store"),
            _ => continue,
        };
        let (ParamKind::Tensor { dtype, .. }, Some(&c)) = (&k.params[t].kind, coords.last()) else {
            continue;
        };
        let elem = u64::from(dtype.bytes());
        let multiple = known_multiple(k, c);
        // A coordinate always 0, or elements of no whole byte (elem 0), start aligned.
        if multiple == 0 || (multiple * elem).is_multiple_of(16) {
            continue;
        }
        let name = &k.params[t].name;
        out.push(
            Finding::new(
                &TMA_COORD_MISALIGNED,
                cx.span(site.stmt),
                format!(
                    "the innermost coordinate of this TMA {what} of `{name}` is known to be a multiple of only {multiple} element(s) ({} bytes): a box that starts off a 16-byte boundary stops the kernel",
                    multiple * elem
                ),
            )
            .label(k.exprs.span(c), "the innermost coordinate")
            .subject("tensor", name)
            .expected(format!("a multiple of {} elements", 16 / elem))
            .actual(format!("a multiple of {multiple}"))
            .help("start boxes at multiples of the box width (`k * BK`), or copy them with `view.cp_async` (the role's threads; 4- and 8-byte elements at any alignment)"),
        );
    }
}

/// A number that `e` is always a multiple of (0: `e` is always 0), from its constants, sums and
/// products; 1 where nothing is known (dimensions, tile and loop indices, divisions).
fn known_multiple(k: &Kernel, e: ExprId) -> u64 {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    match &k.exprs[e].kind {
        ExprKind::Int(v) => v.unsigned_abs(),
        ExprKind::Binary(BinOp::Add | BinOp::Sub, a, b) => {
            gcd(known_multiple(k, *a), known_multiple(k, *b))
        }
        ExprKind::Binary(BinOp::Mul, a, b) => {
            known_multiple(k, *a).saturating_mul(known_multiple(k, *b))
        }
        _ => 1,
    }
}

fn counts(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for f in &cx.barriers {
        let b = &k.barriers[f.barrier];
        let bspan = k.barriers.span(f.barrier);
        let derived = f.arrival_count();
        if let Some(declared) = b.count {
            if declared != derived && derived > 0 {
                let mut fd = Finding::new(
                    &ARRIVAL_COUNT,
                    bspan,
                    format!("barrier `{}` is declared with {declared} arrivals per phase, but the schedule makes {derived}", b.name),
                )
                .subject("barrier", &b.name)
                .expected(derived)
                .actual(declared)
                .help("drop count= and let the compiler derive it, or change the arrivals");
                for a in &f.arrivals {
                    let what = match a.kind {
                        ArriveKind::Tma => "TMA completion (one expect_tx per replica)",
                        ArriveKind::CpAsync => "cp.async completion (one per thread)",
                        ArriveKind::Arrive => "lm.arrive",
                        ArriveKind::Release => "release= after the MMA retires",
                        ArriveKind::Commit => "tcgen05.commit",
                    };
                    fd = fd.label(
                        cx.span(a.stmt),
                        format!(
                            "{} arrival(s) from role `{}`: {what}",
                            a.count, k.roles[a.role].name
                        ),
                    );
                }
                out.push(fd);
            }
        }
        let tx = f.tx_bytes();
        if tx > TX_LIMIT {
            let mut fd = Finding::new(
                &TX_LIMIT_CODE,
                bspan,
                format!(
                    "one phase of `{}` expects {tx} transaction bytes; the limit is {TX_LIMIT}",
                    b.name
                ),
            )
            .subject("barrier", &b.name)
            .expected(format!("<= {TX_LIMIT} B"))
            .actual(format!("{tx} B"));
            for a in f.arrivals.iter().filter(|a| a.kind == ArriveKind::Tma) {
                fd = fd.label(
                    cx.span(a.stmt),
                    format!(
                        "{} B per phase from role `{}`",
                        a.tx_bytes, k.roles[a.role].name
                    ),
                );
            }
            out.push(fd);
        }
        if f.arrivals.is_empty() {
            for (s, r) in &f.waits {
                out.push(
                    Finding::new(&WAIT_WITHOUT_ARRIVALS, cx.span(*s), format!("role `{}` waits on `{}`, but nothing ever arrives on it: the wait never returns", k.roles[*r].name, b.name))
                        .subject("barrier", &b.name)
                        .role(&k.roles[*r].name)
                        .label(bspan, "declared here")
                        .help("signal it: barrier= on a TMA load, release= on an MMA, or lm.arrive"),
                );
            }
        }
    }
}

use cake_diag::catalog::safety::TX_LIMIT as TX_LIMIT_CODE;

fn stage_binding(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let pipe = cx.loop_pipeline(&site.loops).map(|(_, p)| p);
        let sp = cx.span(site.stmt);
        for u in place_uses(k, &site.effects) {
            if u.stages > 1 && u.stage.is_none() && pipe.is_none() {
                // A staged TMEM region is usually a per-tile ring (language.md §7.4).
                let per_tile = if u.kind == "tmem" {
                    " (one iteration per tile)"
                } else {
                    ""
                };
                out.push(
                    Finding::new(&STAGE_UNBOUND, sp, format!("{} has {} stages, but this use is not inside a pipelined loop", u.what(), u.stages))
                        .subject(u.kind, &u.name)
                        .label(u.decl, "declared here")
                        .help(format!("move it into `lm.range(..., pipeline=...)`{per_tile}, or pick a stage with `{}.stage(i)`", u.name)),
                );
            }
        }
        let bars: Vec<BarrierId> = match &site.op {
            Op::Wait { barrier }
            | Op::Arrive { barrier }
            | Op::Commit { barrier }
            | Op::TmaLoad { barrier, .. }
            | Op::CpAsync { barrier, .. } => vec![*barrier],
            Op::Mma {
                release: Some(b), ..
            } => vec![*b],
            _ => vec![],
        };
        for b in bars {
            let bar = &k.barriers[b];
            if let Some(p) = bar.pipeline {
                if k.pipelines[p].stages > 1 && !site.loops.iter().any(|l| matches!(k.loops[*l].kind, LoopKind::Range { pipeline: Some(q), .. } if q == p)) {
                    out.push(
                        Finding::new(&STAGE_UNBOUND, sp, format!("barrier `{}` has one slot per stage of `{}`, but this use is outside any loop over that pipeline", bar.name, k.pipelines[p].name))
                            .subject("barrier", &bar.name)
                            .label(k.barriers.span(b), "declared here")
                            .help("use it inside `lm.range(..., pipeline=...)` so the stage and phase are known"),
                    );
                }
            }
        }
    }
}

/// Ops of one pipelined loop body (directly inside it), in program order.
fn loop_bodies<'c>(cx: &'c Ctx) -> Vec<(LoopId, PipelineId, Vec<&'c OpSite>)> {
    let mut out: Vec<(LoopId, PipelineId, Vec<&'c OpSite>)> = Vec::new();
    for site in &cx.ops {
        let Some((l, p)) = cx.loop_pipeline(&site.loops) else {
            continue;
        };
        match out.iter_mut().find(|(x, _, _)| *x == l) {
            Some(entry) => entry.2.push(site),
            None => out.push((l, p, vec![site])),
        }
    }
    out
}

/// A read that no wait on one of `wanted` orders, in a role that does wait just before it — in
/// the same loop body or an enclosing one — on another barrier: that wait most likely names the
/// wrong barrier. The finding gets a label on it and a help that says which one was meant.
fn point_at_last_wait(cx: &Ctx, site: &OpSite, wanted: &[BarrierId], f: Finding) -> Finding {
    let (Some(&meant), Some(pos)) = (
        wanted.first(),
        cx.ops.iter().position(|s| s.stmt == site.stmt),
    ) else {
        return f;
    };
    // Only a wait on a barrier of the same ring as the one meant (or, like it, of none) can be
    // the mistaken one: a wait on another pipeline's barrier orders something else.
    let ring = cx.k.barriers[meant].pipeline;
    let last = cx.ops[..pos]
        .iter()
        .rev()
        .filter(|s| s.role == site.role && site.loops.starts_with(&s.loops))
        .filter_map(|s| waits_on(s).map(|b| (s, b)))
        .find(|(_, b)| cx.k.barriers[*b].pipeline == ring);
    let Some((w, other)) = last.filter(|(_, b)| !wanted.contains(b)) else {
        return f;
    };
    let (other, meant) = (&cx.k.barriers[other].name, &cx.k.barriers[meant].name);
    f.label(
        cx.span(w.stmt),
        format!("the last wait before this read is on `{other}`, which does not order it"),
    )
    .help(format!(
        "wait on `{meant}` before this read (is this `lm.wait({other})` meant to be `lm.wait({meant})`?)"
    ))
}

fn waits_on(site: &OpSite) -> Option<BarrierId> {
    match site.op {
        Op::Wait { barrier } => Some(barrier),
        _ => None,
    }
}

fn stage_hazards(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (_, p, body) in loop_bodies(cx) {
        for (i, site) in body.iter().enumerate() {
            let before = &body[..i];
            let (writes, reads) = (&site.effects.smem_writes, &site.effects.smem_reads);
            // Write-after-read: the producer must first wait for the stage to be released.
            for v in writes.iter().filter(|v| k.views[v.view].stages > 1) {
                let released = before.iter().filter_map(|s| waits_on(s)).any(|b| {
                    let f = &cx.barriers[b.index()];
                    k.barriers[b].pipeline == Some(p) && f.starts_free()
                });
                let has_release_barrier = cx
                    .barriers
                    .iter()
                    .any(|f| k.barriers[f.barrier].pipeline == Some(p) && f.starts_free());
                if !released {
                    let view = &k.views[v.view];
                    let mut f = Finding::new(
                        &STAGE_OVERWRITE,
                        cx.span(site.stmt),
                        format!("this copy overwrites a stage of `{}` without first waiting until its readers released it", view.name),
                    )
                    .subject("view", &view.name)
                    .role(cx.role_name(site.role));
                    f = if has_release_barrier {
                        let name = cx
                            .barriers
                            .iter()
                            .find(|f| k.barriers[f.barrier].pipeline == Some(p) && f.starts_free())
                            .map(|f| k.barriers[f.barrier].name.clone())
                            .unwrap_or_default();
                        f.help(format!("add `lm.wait({name})` before the copy"))
                    } else {
                        f.help("declare a release barrier for the pipeline (consumers pass release= to lm.mma) and wait on it before the copy")
                    };
                    out.push(f);
                }
            }
            // Read-after-write: readers wait for the copy that fills the view.
            for v in reads {
                let writers = cx.writer_barriers(v.view);
                if writers.is_empty() {
                    continue;
                }
                let view = &k.views[v.view];
                let staged = view.stages > 1;
                // A view staged by this loop's pipeline is waited for in this loop's body; one
                // filled through another pipeline (an outer loop's: `view.stage(outer.stage)`) is
                // waited for before, in program order, like an unstaged one.
                let this_loops = writers.iter().any(|b| k.barriers[*b].pipeline == Some(p));
                let ok = if staged && this_loops {
                    before
                        .iter()
                        .filter_map(|s| waits_on(s))
                        .any(|b| writers.contains(&b))
                } else {
                    waited_before(cx, site, &writers)
                };
                if !ok {
                    let bname = k.barriers[writers[0]].name.clone();
                    let mut f = Finding::new(
                        &READ_BEFORE_READY,
                        cx.span(site.stmt),
                        format!(
                            "`{}` is read before waiting for the copy that fills it (`{bname}`)",
                            view.name
                        ),
                    )
                    .subject("view", &view.name)
                    .role(cx.role_name(site.role))
                    .help(format!("add `lm.wait({bname})` before this read"));
                    f = point_at_last_wait(cx, site, &writers, f);
                    out.push(f);
                }
            }
        }
    }
    // Reads outside pipelined loops.
    for site in cx
        .ops
        .iter()
        .filter(|s| cx.loop_pipeline(&s.loops).is_none())
    {
        let (_, reads) = (&site.effects.smem_writes, &site.effects.smem_reads);
        for v in reads {
            let writers = cx.writer_barriers(v.view);
            if writers.is_empty() || waited_before(cx, site, &writers) {
                continue;
            }
            let view = &k.views[v.view];
            let bname = k.barriers[writers[0]].name.clone();
            let f = Finding::new(
                &READ_BEFORE_READY,
                cx.span(site.stmt),
                format!(
                    "`{}` is read before waiting for the copy that fills it (`{bname}`)",
                    view.name
                ),
            )
            .subject("view", &view.name)
            .role(cx.role_name(site.role))
            .help(format!("add `lm.wait({bname})` before this read"));
            out.push(point_at_last_wait(cx, site, &writers, f));
        }
    }
}

/// Whether a wait on one of `barriers` follows the site in the body of a loop enclosing it, and
/// the site sits under an `if` on that loop's variable inside the loop: the wait of iteration j
/// then precedes the site's execution in iteration j + 1 (a loop-carried handoff), and the guard
/// (`if j > 0`) is what keeps the first iteration from reading early. Whether the guard is
/// false on the first iteration is the author's (a run-time condition).
fn waited_in_previous_iteration(cx: &Ctx, site: &OpSite, barriers: &[BarrierId]) -> bool {
    let Some(pos) = cx.ops.iter().position(|s| s.stmt == site.stmt) else {
        return false;
    };
    let guarded_by_iteration = |l: LoopId| {
        site.guards
            .iter()
            .any(|g| site.loops[..g.loop_depth].contains(&l) && cx.k.expr_reads_loop_var(g.cond, l))
    };
    site.loops
        .iter()
        .filter(|l| guarded_by_iteration(**l))
        .any(|l| {
            cx.ops[pos + 1..]
                .iter()
                .take_while(|s| s.loops.contains(l))
                .any(|s| {
                    s.role == site.role
                        && matches!(s.op, Op::Wait { barrier } if barriers.contains(&barrier))
                })
        })
}

/// Whether the site's role waits on one of `barriers` earlier in program order.
fn waited_before(cx: &Ctx, site: &OpSite, barriers: &[BarrierId]) -> bool {
    for s in &cx.ops {
        if s.stmt == site.stmt {
            return false;
        }
        if s.role == site.role {
            if let Op::Wait { barrier } = s.op {
                if barriers.contains(&barrier) {
                    return true;
                }
            }
        }
    }
    false
}

fn release_before_retire(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (_, _, body) in loop_bodies(cx) {
        for (i, site) in body.iter().enumerate() {
            let Op::Arrive { barrier } = site.op else {
                continue;
            };
            if !cx.barriers[barrier.index()]
                .arrivals
                .iter()
                .all(|a| matches!(a.kind, ArriveKind::Arrive | ArriveKind::Release))
            {
                continue;
            }
            let async_mma = body[..i].iter().any(|s| s.role == site.role && matches!(&s.op, Op::Mma { acc, .. } if cx.mma_family(acc) != MmaFamily::MmaSync))
                || tcgen05_in_inner_loop(cx, site);
            // A barrier that a producer waits on before overwriting is a release barrier.
            let guards_writes = body
                .iter()
                .any(|s| matches!(s.op, Op::Wait { barrier: b } if b == barrier))
                || guards_copies(cx, barrier);
            if async_mma && guards_writes {
                out.push(
                    Finding::new(
                        &RELEASE_BEFORE_RETIRE,
                        cx.span(site.stmt),
                        format!("`lm.arrive({})` releases the stage while the asynchronous MMAs above may still be reading it", k.barriers[barrier].name),
                    )
                    .subject("barrier", &k.barriers[barrier].name)
                    .role(cx.role_name(site.role))
                    .help(format!("pass release={} to lm.mma instead: it arrives only after the MMA retires", k.barriers[barrier].name)),
                );
            }
        }
    }
}

/// Whether a tcgen05 MMA of `arrive`'s role runs in a loop nested in `arrive`'s innermost loop,
/// before it in the same iteration. A wgmma loop retires its MMAs when it ends (the lowering
/// waits for them there), so an arrive after it releases what they read; a tcgen05 MMA
/// completes only through a commit, so the loop's end does not order it before the arrive.
fn tcgen05_in_inner_loop(cx: &Ctx, arrive: &OpSite) -> bool {
    let Some(pos) = cx.ops.iter().position(|s| s.stmt == arrive.stmt) else {
        return false;
    };
    let Some(&innermost) = arrive.loops.last() else {
        return false;
    };
    for s in cx.ops[..pos].iter().rev() {
        if s.role != arrive.role || !s.loops.contains(&innermost) {
            continue;
        }
        // A wait of the role in between on a barrier its own commit arrives on has ordered
        // them (a commit completes once every tcgen05 op its thread issued before it has);
        // a wait on any other barrier orders nothing about them.
        if let Op::Wait { barrier } = s.op {
            let committed = cx.barriers[barrier.index()]
                .arrivals
                .iter()
                .any(|a| a.kind == ArriveKind::Commit && Some(a.role) == arrive.role);
            if committed && s.loops == arrive.loops {
                return false;
            }
        }
        if s.loops.len() > arrive.loops.len()
            && s.loops.starts_with(&arrive.loops)
            && matches!(&s.op, Op::Mma { acc, .. } if cx.mma_family(acc) == MmaFamily::Tcgen05)
        {
            return true;
        }
    }
    false
}

/// Whether some role waits on `barrier` before a copy into a staged view.
fn guards_copies(cx: &Ctx, barrier: BarrierId) -> bool {
    for (_, _, body) in loop_bodies(cx) {
        let mut waited = false;
        for s in body {
            if matches!(s.op, Op::Wait { barrier: b } if b == barrier) {
                waited = true;
            }
            if waited && matches!(s.op, Op::TmaLoad { .. } | Op::CpAsync { .. }) {
                return true;
            }
        }
    }
    false
}

/// Shared memory written through the generic proxy and not yet fenced for the async proxy.
struct Unfenced {
    view: ViewId,
    written: StmtId,
    fencer: Fencer,
}

/// Who fences an unfenced write.
enum Fencer {
    /// Stores by a role's own threads: that role fences them, after the writes.
    Writer(Option<RoleId>),
    /// Per-thread `cp.async` copies completing on a barrier: their writes land after the issuing
    /// thread has moved on, so each reading role fences them itself, after waiting on that
    /// barrier. `fenced`: the roles that have.
    Readers {
        barrier: BarrierId,
        fenced: Vec<Option<RoleId>>,
    },
}

fn proxy_fence(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut dirty: Vec<Unfenced> = Vec::new();
    // The barriers each role has waited on since its last proxy fence.
    let mut waited: Vec<(Option<RoleId>, BarrierId)> = Vec::new();
    let stores = |view, site: &OpSite| Unfenced {
        view,
        written: site.stmt,
        fencer: Fencer::Writer(site.role),
    };
    for site in &cx.ops {
        match &site.op {
            Op::SmemStore { dst, .. } => dirty.push(stores(dst.view, site)),
            Op::ScatterAdd { dst, counts, .. } => {
                dirty.push(stores(dst.view, site));
                if let Some(c) = counts {
                    dirty.push(stores(c.view, site));
                }
            }
            Op::CpAsync { dst, barrier, .. } => dirty.push(Unfenced {
                view: dst.view,
                written: site.stmt,
                fencer: Fencer::Readers {
                    barrier: *barrier,
                    fenced: Vec::new(),
                },
            }),
            Op::Wait { barrier } => waited.push((site.role, *barrier)),
            Op::FenceProxyAsync => {
                dirty.retain_mut(|d| match &mut d.fencer {
                    Fencer::Writer(r) => *r != site.role,
                    Fencer::Readers { barrier, fenced } => {
                        if waited.contains(&(site.role, *barrier)) && !fenced.contains(&site.role) {
                            fenced.push(site.role);
                        }
                        true
                    }
                });
                waited.retain(|(r, _)| *r != site.role);
            }
            op => {
                let async_reads: Vec<ViewId> = match op {
                    Op::TmaStore { src, .. } => vec![src.view],
                    Op::Mma { acc, .. } if cx.mma_family(acc) != MmaFamily::MmaSync => {
                        site.effects.smem_reads.iter().map(|v| v.view).collect()
                    }
                    Op::TmemCopy { src, .. } => vec![src.view],
                    _ => vec![],
                };
                for v in async_reads {
                    let unfenced = dirty.iter().find(|d| {
                        d.view == v
                            && match &d.fencer {
                                Fencer::Writer(_) => true,
                                Fencer::Readers { fenced, .. } => !fenced.contains(&site.role),
                            }
                    });
                    let Some(d) = unfenced else { continue };
                    let name = &k.views[v].name;
                    let f = match &d.fencer {
                        Fencer::Writer(_) => Finding::new(
                            &PROXY_FENCE,
                            cx.span(site.stmt),
                            format!("`{name}` was written with ordinary stores and is now read by the async proxy without a proxy fence"),
                        )
                        .label(cx.span(d.written), "written here (generic proxy)")
                        .help("add lm.fence_proxy_async() after the writes, before the handoff"),
                        Fencer::Readers { barrier, .. } => {
                            let b = &k.barriers[*barrier].name;
                            Finding::new(
                                &PROXY_FENCE,
                                cx.span(site.stmt),
                                format!("`{name}` was written by cp.async (generic proxy) and is now read by the async proxy without a proxy fence"),
                            )
                            .label(cx.span(d.written), format!("written here, completing on `{b}`"))
                            .help(format!("add lm.fence_proxy_async() in role `{}` after lm.wait({b}), before this read", cx.role_name(site.role)))
                        }
                    };
                    out.push(f.subject("view", name));
                }
            }
        }
    }
}

fn placement(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (pid, pool) in k.pools.iter() {
        let Some(size) = pool.size else { continue };
        let placed: Vec<_> = cx
            .layout
            .views
            .iter()
            .filter(|p| k.views[p.view].pool == pid)
            .collect();
        let Some(base) = placed.iter().map(|p| p.offset - p.offset % 1024).min() else {
            continue;
        };
        let need = placed
            .iter()
            .map(|p| p.offset + p.bytes)
            .max()
            .unwrap_or(base)
            - base;
        if need > size as u64 {
            let mut f = Finding::new(
                &POOL_OVERFLOW,
                k.pools.span(pid),
                format!(
                    "pool `{}` is declared with {size} B, but its views need {need} B",
                    pool.name
                ),
            )
            .subject("pool", &pool.name)
            .expected(format!(">= {need} B"))
            .actual(format!("{size} B"))
            .help("drop the size (`lm.smem()`) to let the compiler size the pool");
            for p in placed {
                f = f.label(
                    k.views.span(p.view),
                    format!("`{}`: {} B", k.views[p.view].name, p.bytes),
                );
            }
            out.push(f);
        }
    }
    for p in &cx.layout.views {
        let v = &k.views[p.view];
        if let Some(off) = v.offset {
            let align = view_alignment(v.swizzle);
            if !(off as u64).is_multiple_of(align) {
                out.push(
                    Finding::new(&SMEM_ALIGNMENT, k.views.span(p.view), format!("view `{}` starts at offset {off}, which is not a multiple of {align} B", v.name))
                        .subject("view", &v.name)
                        .expected(format!("a multiple of {align}"))
                        .actual(off)
                        .help(format!("use offset={}", (off as u64).div_ceil(align) * align)),
                );
            }
        }
    }
    for (i, a) in cx.layout.views.iter().enumerate() {
        for b in &cx.layout.views[i + 1..] {
            if a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes {
                let (va, vb) = (&k.views[a.view], &k.views[b.view]);
                out.push(
                    Finding::new(
                        &VIEW_OVERLAP,
                        k.views.span(b.view),
                        format!(
                            "view `{}` [{}, {}) overlaps view `{}` [{}, {})",
                            vb.name,
                            b.offset,
                            b.offset + b.bytes,
                            va.name,
                            a.offset,
                            a.offset + a.bytes
                        ),
                    )
                    .subject("view", &vb.name)
                    .label(k.views.span(a.view), format!("`{}` declared here", va.name)),
                );
            }
        }
    }
}
