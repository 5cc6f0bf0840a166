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
    split_coverage(cx, out);
}

/// The view axis tensor dimension `d` of a copy with `rank` coordinates lands on (`None`: a
/// leading dimension the box is 1 in), and the box's extent along it.
fn box_along(k: &Kernel, dst: &ViewRef, rank: usize, d: usize) -> (Option<usize>, i64) {
    let axis = (d + k.views[dst.view].shape.len()).checked_sub(rank);
    let extent = match (axis, dst.rows) {
        (None, _) => 1,
        (Some(0), Some((_, n))) => n as i64,
        (Some(a), _) => k.views[dst.view].shape[a] as i64,
    };
    (axis, extent)
}

/// Extents a split dimension is enumerated at: a multiple of every usual box, one that is not a
/// power of two, and a tail.
const SPLIT_SAMPLES: [i64; 3] = [4096, 7168, 1000];
/// Most (CTA, step) pairs enumerated for one coordinate at one extent.
const SPLIT_ENUMERATION_LIMIT: usize = 1 << 16;

/// Split-K: the CTAs that share a tile along a tile axis of constant count (`for ks, tn in
/// lm.tiles(SPLIT, ...)`) each load a run of one dimension, and between them every element of
/// it must be loaded exactly once — a gap leaves part of the sum out, an overlap counts it twice.
/// A run's length is symbolic (`cdiv(cdiv(K, BK), SPLIT)` boxes), so the boxes are enumerated at
/// sample extents of the dimension instead of compared by stride. The copies one statement makes
/// in a compile-time `range` (one box per step of it) are one copy: their boxes are checked
/// together.
fn split_coverage(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut groups: Vec<(SplitKey, Vec<(&OpSite, SplitCheck)>)> = Vec::new();
    for site in &cx.ops {
        let (Op::TmaLoad { coords, .. } | Op::CpAsync { coords, .. }) = &site.op else {
            continue;
        };
        for d in 0..coords.len() {
            let Some(split) = split_check(k, site, d) else {
                continue;
            };
            let key = (cx.span(site.stmt), d);
            match groups.iter_mut().find(|(g, _)| *g == key) {
                Some((_, members)) => members.push((site, split)),
                None => groups.push((key, vec![(site, split)])),
            }
        }
    }
    for ((_, d), members) in groups {
        let (site, split) = &members[0];
        let Some((size, problem)) = group_problem(&members) else {
            continue;
        };
        let (Op::TmaLoad { dst, src, .. } | Op::CpAsync { dst, src, .. }) = &site.op else {
            continue;
        };
        let dim = k.dims[split.dim].name.clone();
        let tile_name = var_name(k, Var::Tile(split.axis), split.tiles);
        let msg = format!(
            "with `{dim}` = {size}, the {} CTAs along `{tile_name}` and their steps {problem} of {}: split runs must tile the dimension exactly once",
            split.ctas,
            dim_text(k, *src, d),
        );
        out.push(
            Finding::new(&COPY_COVERAGE, cx.span(site.stmt), msg)
                .subject("view", &k.views[dst.view].name)
                .label(k.loops.span(split.tiles), format!("`{tile_name}` splits the work here"))
                .help(format!("let CTA `{tile_name}` start its run at `{tile_name} * RUN` boxes and step one box at a time, RUN = lm.cdiv(lm.cdiv({dim}, BOX), {})", split.ctas)),
        );
    }
}

/// The first sample extent at which the boxes of one statement's copies, together, leave an
/// element out or load it twice; `None` when they tile it (or could not all be enumerated).
fn group_problem(members: &[(&OpSite, SplitCheck)]) -> Option<(i64, String)> {
    for (i, size) in SPLIT_SAMPLES.into_iter().enumerate() {
        let mut starts = Vec::new();
        for (_, check) in members {
            starts.extend(check.boxes.as_ref()?[i].iter().copied());
        }
        if let Some(p) = coverage_problem(starts, members[0].1.extent, size) {
            return Some((size, p));
        }
    }
    None
}

/// A statement's copies along one coordinate: (the statement's span, the coordinate).
type SplitKey = (cake_diag::Span, usize);

/// What the loops nested inside one that moves a copy's coordinate do with it.
#[derive(Clone, Copy)]
enum Finer {
    /// None moves it: each step of this loop is one box.
    No,
    /// One loop of constant trips does: each step of this loop is its whole run of boxes, this
    /// long.
    Run(i64),
    /// Others do: each step of this loop is a whole number of boxes.
    Boxes,
}

/// What enumerating a split coordinate found.
struct SplitCheck {
    dim: DimId,
    axis: usize,
    ctas: i64,
    tiles: LoopId,
    /// The extent of one box along the dimension.
    extent: i64,
    /// The starts of the boxes at each of [`SPLIT_SAMPLES`]; `None` when they could not be
    /// enumerated.
    boxes: Option<Vec<Vec<i64>>>,
}

/// The split check of coordinate `d` of a copy: `None` when the coordinate reads no tile axis of
/// constant count (2 to 16).
fn split_check(k: &Kernel, site: &OpSite, d: usize) -> Option<SplitCheck> {
    let (Op::TmaLoad {
        dst, src, coords, ..
    }
    | Op::CpAsync {
        dst, src, coords, ..
    }) = &site.op
    else {
        return None;
    };
    let ParamKind::Tensor { dims, .. } = &k.params[*src].kind else {
        return None;
    };
    let Some(Extent::Sym(dim)) = dims.get(d).copied() else {
        return None;
    };
    let c = coords[d];
    let split: Vec<(usize, i64, LoopId)> = loop_vars(k, &site.loops)
        .into_iter()
        .filter_map(|(v, t, l)| match (v, t) {
            (Var::Tile(a), Trips::Count(n))
                if (2..=16).contains(&n) && k.expr_reads_tile_coord(c, a) =>
            {
                Some((a, n, l))
            }
            _ => None,
        })
        .collect();
    let &(axis, ctas, tiles) = split.first()?;
    let steps: Vec<LoopId> = site
        .loops
        .iter()
        .copied()
        .filter(|&l| {
            matches!(k.loops[l].kind, LoopKind::Range { .. }) && k.expr_reads_loop_var(c, l)
        })
        .collect();
    // A split is of a loop's run: a constant tile axis alone picks a fixed part of the dimension.
    if steps.is_empty() {
        return None;
    }
    let (_, extent) = box_along(k, dst, coords.len(), d);
    let boxes = SPLIT_SAMPLES
        .into_iter()
        .map(|size| {
            let dim_value = |x: DimId| Some(if x == dim { size } else { 4096 });
            split_boxes(k, site, c, &split, &steps, &dim_value)
        })
        .collect();
    Some(SplitCheck {
        dim,
        axis,
        ctas,
        tiles,
        extent,
        boxes,
    })
}

/// The starts of every box a site loads along coordinate `c`, over the split tile axes' values,
/// the role's replicas and the steps of the loops that move it (other variables at 0).
fn split_boxes(
    k: &Kernel,
    site: &OpSite,
    c: ExprId,
    split: &[(usize, i64, LoopId)],
    steps: &[LoopId],
    dims: &dyn Fn(DimId) -> Option<i64>,
) -> Option<Vec<i64>> {
    let mut assignments: Vec<Vec<(Var, i64)>> = vec![Vec::new()];
    for &(axis, n, _) in split {
        assignments = assignments
            .into_iter()
            .flat_map(|a| (0..n).map(move |i| [a.clone(), vec![(Var::Tile(axis), i)]].concat()))
            .collect();
    }
    if let Some(r) = site.role {
        let reps = k.roles[r].replicas() as i64;
        assignments = assignments
            .into_iter()
            .flat_map(|a| (0..reps).map(move |i| [a.clone(), vec![(Var::Role(r), i)]].concat()))
            .collect();
    }
    for &l in steps {
        let LoopKind::Range { start, stop, .. } = &k.loops[l].kind else {
            return None;
        };
        let mut next = Vec::new();
        for a in assignments {
            let env = |v: Var| a.iter().find(|(w, _)| *w == v).map_or(0, |(_, x)| *x);
            let (lo, hi) = (
                eval_at(k, *start, &env, dims)?,
                eval_at(k, *stop, &env, dims)?,
            );
            for i in lo..hi {
                next.push([a.clone(), vec![(Var::Loop(l), i)]].concat());
                if next.len() > SPLIT_ENUMERATION_LIMIT {
                    return None;
                }
            }
        }
        assignments = next;
    }
    assignments
        .iter()
        .map(|a| {
            let env = |v: Var| a.iter().find(|(w, _)| *w == v).map_or(0, |(_, x)| *x);
            eval_at(k, c, &env, dims)
        })
        .collect()
}

/// Whether boxes of `extent` at `starts` cover `[0, size)` exactly once: the first element left
/// out or loaded twice, as text.
fn coverage_problem(mut starts: Vec<i64>, extent: i64, size: i64) -> Option<String> {
    starts.sort_unstable();
    let mut covered = 0i64;
    for s in starts {
        if s >= size {
            break;
        }
        if s + extent <= 0 {
            continue;
        }
        if s > covered {
            return Some(format!("never load [{covered}, {s})"));
        }
        if s < covered {
            return Some(format!("load [{s}, {}) twice", covered.min(s + extent)));
        }
        covered = s + extent;
    }
    (covered < size).then(|| format!("never load [{covered}, {size})"))
}

/// Most values of the loops a row slice's start moves with that [`rows_of`] enumerates.
const ROWS_ENUMERATION_LIMIT: i64 = 64;

/// The rows of `v`'s view that one operation touches over every replica of its role and every
/// step of the constant-trip loops its start moves with; `None` when it moves with another loop
/// or cannot be evaluated.
pub fn rows_of(k: &Kernel, site: &OpSite, v: &ViewRef) -> Option<Ranges> {
    let total = k.views[v.view].shape.first().copied().unwrap_or(1) as i64;
    let mut r = Ranges::default();
    match v.rows {
        None => r.add(0, total),
        Some((start, n)) => {
            // A start that moves with loops of a few constant trips (`kw * MP` over
            // `lm.range(R)`) takes each of their values; with any other loop, it is unknown.
            let mut points: Vec<Vec<(Var, i64)>> = vec![Vec::new()];
            for (var, trips, _) in loop_vars(k, &site.loops) {
                if step(k, start, var, &|_| 0)? == 0 {
                    continue;
                }
                let Trips::Count(count) = trips else {
                    return None;
                };
                if count < 1 || (points.len() as i64).saturating_mul(count) > ROWS_ENUMERATION_LIMIT
                {
                    return None;
                }
                points = points
                    .into_iter()
                    .flat_map(|p| (0..count).map(move |x| [p.clone(), vec![(var, x)]].concat()))
                    .collect();
            }
            for (role, i) in replicas(k, site.role) {
                for p in &points {
                    let env = |v: Var| match v {
                        Var::Role(x) if Some(x) == role => i,
                        _ => p.iter().find(|(w, _)| *w == v).map_or(0, |(_, x)| *x),
                    };
                    let s = eval(k, start, &env)?;
                    r.add(s.max(0), s.saturating_add(n as i64).min(total));
                }
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
        Op::CopyTo { src, .. } => vec![(src, "copy_to")],
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
        // The copies one statement makes in a compile-time `range` are in flight together: two
        // writing the same rows race, and one step's tile lands in another's rows.
        // (A copy that names its stage, `.stage(i)`, may fill a different stage each step.)
        for (i, (w, r)) in writers.iter().enumerate() {
            if !matches!(&w.op, Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. } if dst.stage.is_none())
            {
                continue;
            }
            let mut earlier = Ranges::default();
            for (v, q) in &writers[..i] {
                if cx.span(v.stmt) == cx.span(w.stmt) {
                    q.0.iter().for_each(|&(lo, hi)| earlier.add(lo, hi));
                }
            }
            let twice = earlier.missing(r).missing(r);
            if !twice.0.is_empty() {
                out.push(
                    Finding::new(
                        &COPY_COVERAGE,
                        cx.span(w.stmt),
                        format!(
                            "the copies this statement makes in its compile-time `range` write rows {} of `{}` twice: they are in flight together, and one step's tile overwrites another's",
                            twice.text(),
                            view.name
                        ),
                    )
                    .subject("view", &view.name)
                    .help("give each step of the `range` its own rows: `.rows(i * n, n)` for boxes of n rows"),
                );
                continue 'views;
            }
        }
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
    finer: Finer,
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
                let inner: Vec<(i64, Trips)> = vars[vi + 1..]
                    .iter()
                    .filter_map(|&(w, t, _)| {
                        step(k, c, w, &base).filter(|x| *x != 0).map(|x| (x, t))
                    })
                    .collect();
                let finer = match inner.as_slice() {
                    [] => Finer::No,
                    [(x, Trips::Count(n))] => x
                        .checked_abs()
                        .and_then(|a| a.checked_mul(*n))
                        .map_or(Finer::Boxes, Finer::Run),
                    _ => Finer::Boxes,
                };
                let (axis, extent) = box_along(k, dst, coords.len(), d);
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
            // Loops may walk downwards; an outer loop over runs of an inner loop's boxes steps
            // by the run (an inner loop of constant trips), else by whole boxes.
            let stride = m.step.checked_abs().unwrap_or(i64::MAX);
            let gap = match m.finer {
                Finer::Run(run) => stride != run,
                Finer::Boxes => filled > 0 && stride % filled != 0,
                Finer::No => stride != filled,
            };
            // CTAs of a split tile axis fill the boxes in between (`(k * SPLIT + ks) * BK`):
            // the enumeration decides, and reports what it finds itself.
            let gap = gap && split_check(k, m.site, *d).is_none();
            if gap {
                let names: Vec<String> = views
                    .iter()
                    .map(|v| format!("`{}`", k.views[*v].name))
                    .collect();
                // What one step must cover: the inner loop's run of boxes, else the boxes.
                let views = names.join(", ");
                let (span, what) = match m.finer {
                    Finer::Run(run) => (run, format!("the inner loop's run of boxes ({views}) is")),
                    _ => (filled, format!("the boxes filled from it ({views}) are")),
                };
                problems.push(format!(
                    "this copy's coordinate moves {} by {} per step of `{name}`, but {what} {span} wide: {}",
                    dim_text(k, *p, *d),
                    m.step,
                    if stride > span { "tiles in between are never loaded" } else { "successive steps load overlapping tiles" }
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
