//! Copy coverage (`CAKE-D006`): what the TMA boxes and cp.async copies write into a view covers
//! what its readers read, and each copy's coordinates step by the extent its boxes fill.

use std::collections::BTreeMap;

use crate::ctx::Ctx;
use crate::index::*;
use cake_diag::catalog::consistency::COPY_COVERAGE;
use cake_diag::Finding;
use cake_ir::*;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    rows(cx, out);
    strides(cx, out);
}

/// The rows of `v`'s view that one operation touches over every replica of its role; `None`
/// when the row start moves with a loop or cannot be evaluated.
pub fn rows_of(k: &Kernel, site: &OpSite, v: &ViewRef) -> Option<Ranges> {
    let total = k.views[v.view].shape.first().copied().unwrap_or(1) as i64;
    let mut r = Ranges::default();
    match v.rows {
        None => r.add(0, total),
        Some((start, n)) => {
            for (var, _, _) in loop_vars(k, &site.loops) {
                if step(k, start, var, &|_| 0)? != 0 {
                    return None;
                }
            }
            for (role, i) in replicas(k, site.role) {
                let s = eval(k, start, &at_replica(role, i))?;
                r.add(s.max(0), s.saturating_add(n as i64).min(total));
            }
        }
    }
    Some(r)
}

/// The view operands an operation reads from shared memory, with a word for the reader.
fn reads(op: &Op) -> Vec<(&ViewRef, &'static str)> {
    match op {
        Op::Mma { a, b, .. } => [a, b]
            .into_iter()
            .filter_map(|o| match o {
                Operand::Smem(v) => Some((v, "the MMA")),
                _ => None,
            })
            .collect(),
        Op::Ldmatrix { src, .. } => vec![(src, "ldmatrix")],
        Op::TmemCopy { src, .. } => vec![(src, "tcgen05.cp")],
        Op::TmaStore { src, .. } => vec![(src, "the TMA store")],
        Op::ScatterAdd { src, index, .. } => vec![(src, "scatter_add"), (index, "scatter_add")],
        _ => Vec::new(),
    }
}

fn rows(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    'views: for (vid, view) in k.views.iter() {
        let mut written = Ranges::default();
        let mut writers: Vec<(&OpSite, Ranges)> = Vec::new();
        for site in &cx.ops {
            match &site.op {
                Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. } | Op::SmemStore { dst, .. }
                    if dst.view == vid =>
                {
                    let Some(r) = rows_of(k, site, dst) else {
                        continue 'views;
                    };
                    for &(a, b) in &r.0 {
                        written.add(a, b);
                    }
                    writers.push((site, r));
                }
                // Atomic adds into a view: whatever it held before counts; not a copy.
                Op::ScatterAdd { dst, counts, .. }
                    if dst.view == vid || counts.as_ref().is_some_and(|c| c.view == vid) =>
                {
                    continue 'views;
                }
                _ => {}
            }
        }
        let Some((first, _)) = writers.first() else {
            continue;
        };
        // Rows the copies bring in that no MMA or ldmatrix reads: the readers' slices were
        // meant to cover the box (a replica's rows computed wrong), or the box is too tall.
        let mut all_read = Some(Ranges::default());
        let mut tensor_core = Vec::new();
        for site in &cx.ops {
            for (v, _) in reads(&site.op) {
                if v.view != vid {
                    continue;
                }
                // Only slices that follow the replica index are meant to partition the box (a
                // probe may read a fixed corner of what it copies).
                let per_replica = v.rows.is_some_and(|(start, _)| {
                    site.role.is_some_and(|r| k.expr_reads_role_index(start, r))
                });
                if matches!(site.op, Op::Mma { .. } | Op::Ldmatrix { .. }) && per_replica {
                    tensor_core.push(site);
                } else if !matches!(site.op, Op::Mma { .. } | Op::Ldmatrix { .. }) {
                    all_read = None;
                }
                match (rows_of(k, site, v), all_read.as_mut()) {
                    (Some(r), Some(a)) => r.0.iter().for_each(|&(lo, hi)| a.add(lo, hi)),
                    _ => all_read = None,
                }
            }
        }
        let copied = writers
            .iter()
            .all(|(w, _)| matches!(w.op, Op::TmaLoad { .. } | Op::CpAsync { .. }));
        // Every tensor-core reader must slice by replica for the slices to mean a partition.
        let all_sliced = cx.ops.iter().all(|site| {
            !matches!(site.op, Op::Mma { .. } | Op::Ldmatrix { .. })
                || reads(&site.op).iter().all(|(v, _)| v.view != vid)
                || tensor_core.iter().any(|t| t.stmt == site.stmt)
        });
        if let (Some(read), Some(reader), true) =
            (&all_read, tensor_core.first(), copied && all_sliced)
        {
            let unread = read.missing(&written);
            if !unread.0.is_empty() {
                out.push(
                    Finding::new(
                        &COPY_COVERAGE,
                        cx.span(reader.stmt),
                        format!(
                            "the copies into `{}` write rows {}, but its readers read only rows {}: rows {} are copied and never read",
                            view.name,
                            written.text(),
                            read.text(),
                            unread.text()
                        ),
                    )
                    .subject("view", &view.name)
                    .label(cx.span(first.stmt), format!("writes rows {}", written.text()))
                    .help("make the readers' row slices cover the box (one slice per replica), or copy only the rows that are read"),
                );
                continue 'views;
            }
        }
        for site in &cx.ops {
            for (v, what) in reads(&site.op) {
                if v.view != vid {
                    continue;
                }
                let Some(read) = rows_of(k, site, v) else {
                    continue;
                };
                let missing = written.missing(&read);
                if missing.0.is_empty() {
                    continue;
                }
                let total = view.shape.first().copied().unwrap_or(1);
                let mut f = Finding::new(
                    &COPY_COVERAGE,
                    cx.span(first.stmt),
                    format!(
                        "what is written into `{}` covers rows {} of its {total}, but {what} reads rows {}: rows {} are read without being written",
                        view.name,
                        written.text(),
                        read.text(),
                        missing.text()
                    ),
                )
                .subject("view", &view.name)
                .label(cx.span(site.stmt), format!("{what} reads rows {} of `{}`", read.text(), view.name));
                for (w, r) in &writers[1..] {
                    f = f.label(cx.span(w.stmt), format!("writes rows {}", r.text()));
                }
                out.push(f.help("give the copy the rows its reader reads: the same `.rows(start, n)` on both, or none"));
                continue 'views;
            }
        }
    }
}

/// The name of a loop variable as the schedule spells it.
pub fn var_name(k: &Kernel, v: Var, l: LoopId) -> String {
    match (&k.loops[l].kind, v) {
        (LoopKind::Tiles { names, .. }, Var::Tile(axis)) => names
            .get(axis)
            .cloned()
            .unwrap_or_else(|| format!("tile[{axis}]")),
        _ => k.loops[l].var_name.clone(),
    }
}

/// The tensor dimension `d` of `p`, for messages: "`K` (dimension 1 of `A`)".
pub fn dim_text(k: &Kernel, p: ParamId, d: usize) -> String {
    match &k.params[p].kind {
        ParamKind::Tensor { dims, .. } => match dims.get(d) {
            Some(Extent::Sym(s)) => format!(
                "`{}` (dimension {d} of `{}`)",
                k.dims[*s].name, k.params[p].name
            ),
            _ => format!("dimension {d} of `{}`", k.params[p].name),
        },
        ParamKind::Scalar { .. } => format!("`{}`", k.params[p].name),
    }
}

pub fn dim_extent(k: &Kernel, p: ParamId, d: usize) -> Option<Extent> {
    match &k.params[p].kind {
        ParamKind::Tensor { dims, .. } => dims.get(d).copied(),
        ParamKind::Scalar { .. } => None,
    }
}

struct Member<'a> {
    site: &'a OpSite,
    view: ViewId,
    /// The view axis the tensor dimension lands on (`None`: a leading dimension the box is 1 in).
    axis: Option<usize>,
    step: i64,
    /// Whether a loop nested inside this one moves the same coordinate too (`kc * 512 + k *
    /// 64`): this loop then steps over whole runs of the inner loop's boxes, not one box.
    finer: bool,
    trips: Trips,
    lp: LoopId,
    /// Where the copy's boxes lie along the dimension at the loop's first step, over every
    /// replica of the issuing role.
    boxes: Option<Ranges>,
}

fn strides(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut groups: BTreeMap<(ParamId, usize, Var), Vec<Member>> = BTreeMap::new();
    for site in &cx.ops {
        let (dst, src, coords) = match &site.op {
            Op::TmaLoad {
                dst, src, coords, ..
            }
            | Op::CpAsync {
                dst, src, coords, ..
            } => (dst, *src, coords),
            _ => continue,
        };
        let rank_v = k.views[dst.view].shape.len();
        let base = at_replica(site.role, 0);
        let vars = loop_vars(k, &site.loops);
        for (vi, &(var, trips, lp)) in vars.iter().enumerate() {
            for (d, &c) in coords.iter().enumerate() {
                let Some(s) = step(k, c, var, &base) else {
                    continue;
                };
                if s == 0 {
                    continue;
                }
                let finer = vars[vi + 1..]
                    .iter()
                    .any(|&(w, _, _)| step(k, c, w, &base).is_some_and(|x| x != 0));
                let axis = (d + rank_v).checked_sub(coords.len());
                let extent = match (axis, dst.rows) {
                    (None, _) => 1,
                    (Some(0), Some((_, n))) => n as i64,
                    (Some(a), _) => k.views[dst.view].shape[a] as i64,
                };
                let mut boxes = Some(Ranges::default());
                for (role, i) in replicas(k, site.role) {
                    match (eval(k, c, &at_replica(role, i)), boxes.as_mut()) {
                        (Some(o), Some(b)) => b.add(o, o.saturating_add(extent)),
                        _ => boxes = None,
                    }
                }
                groups.entry((src, d, var)).or_default().push(Member {
                    site,
                    view: dst.view,
                    axis,
                    step: s,
                    finer,
                    trips,
                    lp,
                    boxes,
                });
            }
        }
    }
    let mut reported: Vec<StmtId> = Vec::new();
    // Loops that walk a dimension of the copied tensor must move its coordinate along it.
    for site in &cx.ops {
        let (src, coords) = match &site.op {
            Op::TmaLoad { src, coords, .. } | Op::CpAsync { src, coords, .. } => (*src, coords),
            _ => continue,
        };
        let ParamKind::Tensor { dims, .. } = &k.params[src].kind else {
            continue;
        };
        let base = at_replica(site.role, 0);
        for (var, trips, lp) in loop_vars(k, &site.loops) {
            let Trips::Along { dim, step } = trips else {
                continue;
            };
            // A tile axis need not move every copy (a K/V tile is the same for every query tile).
            let must_move = matches!(var, Var::Loop(_));
            let Some(problem) = walk_problem(k, dims, coords, var, dim, &base, must_move) else {
                continue;
            };
            let name = var_name(k, var, lp);
            let msg = match problem {
                Walk::Other(d, other) => format!(
                    "`{name}` counts steps of {step} along `{}`, but moves {} here (which holds `{}`)",
                    k.dims[dim].name,
                    dim_text(k, src, d),
                    k.dims[other].name
                ),
                Walk::Still(d) => format!(
                    "the loop over `{name}` walks `{}` in steps of {step}, but this copy's coordinate along it ({}) does not move: every step loads the same tile",
                    k.dims[dim].name,
                    dim_text(k, src, d)
                ),
            };
            reported.push(site.stmt);
            out.push(
                Finding::new(&COPY_COVERAGE, cx.span(site.stmt), msg)
                    .label(k.loops.span(lp), format!("`{name}` is counted here"))
                    .help(format!(
                        "move the coordinate of `{}` with the loop: `{name} * {step}`",
                        k.dims[dim].name
                    )),
            );
            break;
        }
    }
    for ((p, d, var), members) in &groups {
        // The extent one step fills along this dimension: the union of every box copied from it
        // (copies of the same tile into two views count once; a gap leaves it unknown).
        let mut views: Vec<ViewId> = Vec::new();
        let mut union = Some(Ranges::default());
        for m in members {
            if !views.contains(&m.view) {
                views.push(m.view);
            }
            match (&m.boxes, union.as_mut()) {
                (Some(b), Some(u)) => b.0.iter().for_each(|&(lo, hi)| u.add(lo, hi)),
                _ => union = None,
            }
        }
        let filled = match union.as_ref().map(|u| u.0.as_slice()) {
            Some([(lo, hi)]) => hi - lo,
            Some(_) | None => {
                // Not one contiguous range: compare with the views' extents instead.
                members
                    .iter()
                    .map(|m| m.axis.map_or(1, |a| k.views[m.view].shape[a] as i64))
                    .max()
                    .unwrap_or(0)
            }
        };
        for m in members {
            if reported.contains(&m.site.stmt) {
                continue;
            }
            let name = var_name(k, *var, m.lp);
            let mut problems = Vec::new();
            // Loops may walk downwards; an outer loop over runs of an inner loop's boxes needs
            // only to step by whole boxes.
            let stride = m.step.abs();
            let gap = if m.finer {
                filled > 0 && stride % filled != 0
            } else {
                stride != filled
            };
            if gap {
                let names: Vec<String> = views
                    .iter()
                    .map(|v| format!("`{}`", k.views[*v].name))
                    .collect();
                problems.push(format!(
                    "this copy's coordinate moves {} by {} per step of `{name}`, but the boxes filled from it ({}) are {filled} wide: {}",
                    dim_text(k, *p, *d),
                    m.step,
                    names.join(", "),
                    if stride > filled { "tiles in between are never loaded" } else { "successive steps load overlapping tiles" }
                ));
            }
            if let Trips::Along { dim, step } = m.trips {
                if dim_extent(k, *p, *d) == Some(Extent::Sym(dim)) && step != stride {
                    problems.push(format!(
                        "the loop over `{name}` counts steps of {step} along `{}`, but this copy's coordinate moves {} per step",
                        k.dims[dim].name, m.step
                    ));
                }
            }
            if problems.is_empty() {
                continue;
            }
            reported.push(m.site.stmt);
            let mut f = Finding::new(&COPY_COVERAGE, cx.span(m.site.stmt), problems.join("; "))
                .subject("view", &k.views[m.view].name)
                .label(k.loops.span(m.lp), format!("`{name}` is counted here"));
            if gap {
                f = f.label(
                    k.views.span(m.view),
                    format!("`{}` is declared here", k.views[m.view].name),
                );
            }
            out.push(f.help("step each coordinate by the extent of the boxes it fills, and count the loop in the same steps: `k * BK` with `lm.cdiv(K, BK)` for a `BK`-wide box"));
        }
    }
}
