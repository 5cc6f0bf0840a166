//! Output coverage (`CAKE-M009`): every output is written on every path and the stores of one
//! tile cover exactly the tile its loops advance by; tensor parameters nothing reads or writes
//! (`CAKE-M005`); MMAs whose operands both come from one tensor while another is never read
//! (`CAKE-M010`).

use std::collections::{BTreeMap, BTreeSet};

use crate::copies::{dim_extent, dim_text, var_name};
use crate::ctx::Ctx;
use crate::index::*;
use cake_diag::catalog::semantics::{ALIASED_OPERANDS, OUTPUT_COVERAGE, UNUSED_RESOURCE};
use cake_diag::Finding;
use cake_ir::*;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    let referenced = referenced(cx);
    unused_params(cx, &referenced, out);
    aliased_operands(cx, &referenced, out);
    outputs(cx, &referenced, out);
}

/// Tensor parameters some operation or expression reads or writes.
fn referenced(cx: &Ctx) -> BTreeSet<ParamId> {
    let mut seen = BTreeSet::new();
    for site in &cx.ops {
        seen.extend(site.effects.global_reads.iter().copied());
        seen.extend(site.effects.global_writes.iter().copied());
    }
    for (_, e) in cx.k.exprs.iter() {
        if let ExprKind::Load { tensor, .. } = e.kind {
            seen.insert(tensor);
        }
    }
    seen
}

fn unused_params(cx: &Ctx, referenced: &BTreeSet<ParamId>, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (p, param) in k.params.iter() {
        if matches!(param.kind, ParamKind::Tensor { .. })
            && !referenced.contains(&p)
            && !k.unused_params.contains(&p)
        {
            out.push(
                Finding::new(
                    &UNUSED_RESOURCE,
                    k.params.span(p),
                    format!("tensor `{}` is declared but nothing loads or stores it", param.name),
                )
                .subject("tensor", &param.name)
                .help(format!("load or store it, or write `del {}` in the schedule if the signature keeps it on purpose", param.name)),
            );
        }
    }
}

/// The tensors the copies into view `v` read.
fn sources(cx: &Ctx, v: ViewId) -> Vec<(ParamId, StmtId)> {
    let mut out = Vec::new();
    for site in &cx.ops {
        if let Op::TmaLoad { dst, src, .. } | Op::CpAsync { dst, src, .. } = &site.op {
            if dst.view == v {
                out.push((*src, site.stmt));
            }
        }
    }
    out
}

fn aliased_operands(cx: &Ctx, referenced: &BTreeSet<ParamId>, out: &mut Vec<Finding>) {
    let k = cx.k;
    let tensor = |p: ParamId| match &k.params[p].kind {
        ParamKind::Tensor { dtype, dims } => Some((*dtype, dims.len())),
        ParamKind::Scalar { .. } => None,
    };
    let unread = |pa: ParamId| {
        let shape = tensor(pa)?;
        k.params.iter().map(|(q, _)| q).find(|q| {
            *q != pa
                && tensor(*q) == Some(shape)
                && !referenced.contains(q)
                && !k.unused_params.contains(q)
        })
    };
    let mut reported: BTreeSet<ParamId> = BTreeSet::new();
    for site in &cx.ops {
        let Op::Mma {
            a: Operand::Smem(a),
            b: Operand::Smem(b),
            ..
        } = &site.op
        else {
            continue;
        };
        if a.view == b.view {
            continue;
        }
        let (sa, sb) = (sources(cx, a.view), sources(cx, b.view));
        let one = |s: &[(ParamId, StmtId)]| {
            let first = s.first()?.0;
            s.iter().all(|(p, _)| *p == first).then_some(first)
        };
        let (Some(pa), Some(pb)) = (one(&sa), one(&sb)) else {
            continue;
        };
        if pa != pb {
            continue;
        }
        let Some(shape) = tensor(pa) else { continue };
        let Some(other) = unread(pa) else { continue };
        reported.insert(pa);
        let name = &k.params[pa].name;
        let mut f = Finding::new(
            &ALIASED_OPERANDS,
            cx.span(site.stmt),
            format!(
                "both operands of this MMA are copied from `{name}`, while `{}` ({} like it) is never read: was one of them meant to come from `{}`?",
                k.params[other].name,
                shape.0,
                k.params[other].name
            ),
        )
        .subject("tensor", name);
        for (_, s) in sb.iter().take(1) {
            f = f.label(
                cx.span(*s),
                format!("`{}` is filled from `{name}` here", k.views[b.view].name),
            );
        }
        out.push(
            f.label(
                k.params.span(other),
                format!("`{}` is declared here and never read", k.params[other].name),
            )
            .help(format!(
                "load each operand from its own tensor; if {name}·{name}ᵀ is intended, `del {}`",
                k.params[other].name
            )),
        );
    }
    // The same tensor copied into two views (say K into both `sK` and `sV`) while a tensor of
    // its type is never read, whichever operations read the views.
    let mut views_of: BTreeMap<ParamId, Vec<(ViewId, StmtId)>> = BTreeMap::new();
    for site in &cx.ops {
        if let Op::TmaLoad { dst, src, .. } | Op::CpAsync { dst, src, .. } = &site.op {
            let e = views_of.entry(*src).or_default();
            if !e.iter().any(|(v, _)| *v == dst.view) {
                e.push((dst.view, site.stmt));
            }
        }
    }
    for (pa, views) in views_of {
        if views.len() < 2 || reported.contains(&pa) {
            continue;
        }
        let Some(other) = unread(pa) else { continue };
        let (name, oname) = (&k.params[pa].name, &k.params[other].name);
        let (v0, s0) = views[0];
        let (v1, s1) = views[views.len() - 1];
        out.push(
            Finding::new(
                &ALIASED_OPERANDS,
                cx.span(s1),
                format!(
                    "`{}` and `{}` are both copied from `{name}`, while `{oname}` (the same type) is never read: was one of them meant to come from `{oname}`?",
                    k.views[v0].name, k.views[v1].name
                ),
            )
            .subject("tensor", name)
            .label(cx.span(s0), format!("`{}` is filled from `{name}` here", k.views[v0].name))
            .label(k.params.span(other), format!("`{oname}` is declared here and never read"))
            .help(format!("copy each view from its own tensor, or `del {oname}` if it is unused on purpose")),
        );
    }
}

/// For every store, the run-time `if`s around it: (the `if` statement, its condition, whether
/// the store is in the `then` branch).
fn store_paths(k: &Kernel) -> BTreeMap<StmtId, Vec<(StmtId, ExprId, bool)>> {
    fn go(
        k: &Kernel,
        block: &Block,
        path: &mut Vec<(StmtId, ExprId, bool)>,
        out: &mut BTreeMap<StmtId, Vec<(StmtId, ExprId, bool)>>,
    ) {
        for &s in block {
            match &k.stmts[s] {
                Stmt::Role { body, .. } | Stmt::Loop { body, .. } | Stmt::Ahead { body, .. } => {
                    go(k, body, path, out)
                }
                Stmt::If {
                    cond,
                    then_body,
                    else_body,
                } => {
                    path.push((s, *cond, true));
                    go(k, then_body, path, out);
                    path.last_mut().expect("pushed").2 = false;
                    go(k, else_body, path, out);
                    path.pop();
                }
                Stmt::Op(Op::Store { .. } | Op::TmaStore { .. } | Op::CopyTo { .. }) => {
                    out.insert(s, path.clone());
                }
                Stmt::Op(_) => {}
            }
        }
    }
    let mut out = BTreeMap::new();
    go(k, &k.body, &mut Vec::new(), &mut out);
    out
}

/// What a condition reads, as far as the coverage rules care.
#[derive(Default)]
struct CondReads {
    opaque: bool,
    roles: bool,
    tiles: Vec<usize>,
}

fn cond_reads(k: &Kernel, e: ExprId) -> CondReads {
    let mut r = CondReads::default();
    k.visit_expr(e, |_, kind| {
        match kind {
            ExprKind::TileCoord { axis, .. } => r.tiles.push(*axis),
            ExprKind::RoleIndex(_) => r.roles = true,
            ExprKind::Int(_) | ExprKind::Bool(_) | ExprKind::LoopVar(_) => {}
            ExprKind::Binary(..)
            | ExprKind::Unary(..)
            | ExprKind::Cmp(..)
            | ExprKind::Select(..) => {}
            _ => r.opaque = true,
        }
        true
    });
    r
}

/// One store: its box extent per tensor dimension and its coordinates.
struct StoreSite<'a> {
    site: &'a OpSite,
    coords: &'a [ExprId],
    extent: Vec<i64>,
}

fn store_of<'a>(k: &Kernel, site: &'a OpSite) -> Option<(ParamId, StoreSite<'a>)> {
    let (dst, coords, shape) = match &site.op {
        Op::Store {
            dst,
            value,
            coords,
            transposed,
            ..
        } => {
            let mut shape = match &k.exprs[*value].ty {
                Ty::Frag { shape, .. } => shape.clone(),
                _ => Vec::new(),
            };
            // A transposed 2-D value covers its columns along the tensor's rows.
            if *transposed {
                shape.reverse();
            }
            (*dst, coords, shape)
        }
        // A store that adds into the tensor (adds commute: tiles may overlap) is not a write of
        // the tile's elements; like `lm.scatter_add`, it leaves coverage to `zero=`.
        Op::TmaStore { add: true, .. } | Op::CopyTo { add: true, .. } => return None,
        Op::TmaStore {
            dst, src, coords, ..
        }
        | Op::CopyTo {
            dst, src, coords, ..
        } => {
            let mut shape = k.views[src.view].shape.clone();
            if let (Some((_, n)), Some(first)) = (src.rows, shape.first_mut()) {
                *first = n;
            }
            (*dst, coords, shape)
        }
        _ => return None,
    };
    let rank = coords.len();
    let extent = (0..rank)
        .map(|d| {
            (d + shape.len())
                .checked_sub(rank)
                .map_or(1, |a| shape[a] as i64)
        })
        .collect();
    Some((
        dst,
        StoreSite {
            site,
            coords,
            extent,
        },
    ))
}

/// Where the elements a tile must write lie along one tensor dimension.
#[derive(Clone, Copy, PartialEq)]
enum Domain {
    /// `0..step`: a loop moves `step` along the dimension per iteration.
    Tile {
        step: i64,
        lp: LoopId,
        var: Var,
    },
    /// `0..n`: a fixed extent no loop advances.
    Whole(i64),
    Unknown,
}

fn outputs(cx: &Ctx, referenced: &BTreeSet<ParamId>, out: &mut Vec<Finding>) {
    let k = cx.k;
    let mut by_tensor: BTreeMap<ParamId, Vec<StoreSite>> = BTreeMap::new();
    for site in &cx.ops {
        if let Some((p, s)) = store_of(k, site) {
            by_tensor.entry(p).or_default().push(s);
        }
    }
    // A kernel that stores nothing while a tensor is left untouched has lost its output (a
    // kernel that only reads, such as a bandwidth probe, `del`s what it does not use).
    let untouched = k.params.iter().find(|(p, x)| {
        matches!(x.kind, ParamKind::Tensor { .. })
            && !referenced.contains(p)
            && !k.unused_params.contains(p)
    });
    if let (true, Some((p, x))) = (by_tensor.is_empty(), untouched) {
        out.push(
            Finding::new(
                &OUTPUT_COVERAGE,
                k.span,
                format!(
                    "kernel `{}` writes no global memory, and nothing stores `{}`: what it computes is never kept",
                    k.name, x.name
                ),
            )
            .subject("tensor", &x.name)
            .label(k.params.span(p), format!("`{}` is declared here", x.name))
            .help(format!("store the result into `{}` with `lm.store(...)` or `.tma_store(...)`", x.name)),
        );
        return;
    }
    let paths = store_paths(k);
    for (p, stores) in &by_tensor {
        coverage(cx, *p, stores, &paths, out);
    }
}

fn coverage(
    cx: &Ctx,
    p: ParamId,
    stores: &[StoreSite],
    paths: &BTreeMap<StmtId, Vec<(StmtId, ExprId, bool)>>,
    out: &mut Vec<Finding>,
) {
    let k = cx.k;
    let rank = stores[0].coords.len();
    if stores.iter().any(|s| s.coords.len() != rank) {
        return;
    }
    let tname = &k.params[p].name;
    // Per dimension: the domain a tile must cover, from the first store that says.
    let mut domains: Vec<Domain> = (0..rank)
        .map(|d| match dim_extent(k, p, d) {
            Some(Extent::Fixed(n)) => Domain::Whole(n as i64),
            _ => Domain::Unknown,
        })
        .collect();
    // Loops that walk a dimension of the output must move its coordinate along it: a store
    // that stays put writes the same elements from every tile.
    let dims = match &k.params[p].kind {
        ParamKind::Tensor { dims, .. } => dims.clone(),
        ParamKind::Scalar { .. } => return,
    };
    for s in stores {
        let base = at_replica(s.site.role, 0);
        for (var, trips, lp) in loop_vars(k, &s.site.loops) {
            let Trips::Along { dim, step } = trips else {
                continue;
            };
            let Some(problem) = walk_problem(k, &dims, s.coords, var, dim, &base, true) else {
                continue;
            };
            let name = var_name(k, var, lp);
            let msg = match problem {
                Walk::Other(d, other) => format!(
                    "`{name}` counts tiles of {step} along `{}`, but moves {} here (which holds `{}`): the stores land on other tiles' elements",
                    k.dims[dim].name,
                    dim_text(k, p, d),
                    k.dims[other].name
                ),
                Walk::Still(d) => format!(
                    "`{name}` counts tiles of {step} along `{}`, but this store's coordinate along it ({}) does not move: every tile writes the same elements and the rest are never written",
                    k.dims[dim].name,
                    dim_text(k, p, d)
                ),
            };
            out.push(
                Finding::new(&OUTPUT_COVERAGE, cx.span(s.site.stmt), msg)
                    .subject("tensor", tname)
                    .label(k.loops.span(lp), format!("`{name}` is counted here"))
                    .help(format!(
                        "move the coordinate of `{}` with the loop: `{name} * {step}`",
                        k.dims[dim].name
                    )),
            );
            return;
        }
    }
    let mut stride_errors = Vec::new();
    for s in stores {
        let base = at_replica(s.site.role, 0);
        for (var, trips, lp) in loop_vars(k, &s.site.loops) {
            for (d, &coord) in s.coords.iter().enumerate() {
                let Some(c) = step(k, coord, var, &base) else {
                    continue;
                };
                if c == 0 {
                    continue;
                }
                match trips {
                    Trips::Along { dim, step: x }
                        if dim_extent(k, p, d) == Some(Extent::Sym(dim)) =>
                    {
                        domains[d] = Domain::Tile { step: x, lp, var };
                        // A coordinate may walk the tiles downwards.
                        if c.abs() != x {
                            stride_errors.push((s.site.stmt, d, var, lp, c, x));
                        }
                    }
                    Trips::Count(_) if matches!(domains[d], Domain::Whole(_)) => {}
                    _ => domains[d] = Domain::Unknown,
                }
            }
        }
    }
    for (stmt, d, var, lp, c, x) in &stride_errors {
        let name = var_name(k, *var, *lp);
        out.push(
            Finding::new(
                &OUTPUT_COVERAGE,
                cx.span(*stmt),
                format!(
                    "the loop over `{name}` moves {x} along {} per step, but this store's coordinate moves {c}: {}",
                    dim_text(k, p, *d),
                    if c < x { "part of every tile is never written" } else { "tiles in between are never written" }
                ),
            )
            .subject("tensor", tname)
            .label(k.loops.span(*lp), format!("`{name}` is counted here in steps of {x}"))
            .help(format!("step the coordinate by the tile extent: `{name} * {x}`")),
        );
    }
    if !stride_errors.is_empty() {
        return;
    }
    // The boxes the stores write in one tile (every replica, every step of the constant loops).
    let checked: Vec<usize> = (0..rank)
        .filter(|&d| domains[d] != Domain::Unknown)
        .collect();
    if checked.is_empty() {
        return;
    }
    let mut boxes: Vec<Vec<(i64, i64)>> = Vec::new();
    let mut conditional: Vec<(StmtId, StmtId)> = Vec::new();
    for s in stores {
        let Some(envs) = envs(k, s, &domains) else {
            return;
        };
        for env in envs {
            match path_taken(k, s, paths, stores, &env) {
                Some(true) => {}
                Some(false) => continue,
                None => {
                    let guard = paths[&s.site.stmt].last().map_or(s.site.stmt, |g| g.0);
                    conditional.push((s.site.stmt, guard));
                    break;
                }
            }
            let mut b = Vec::new();
            for &d in &checked {
                let Some(off) = eval(k, s.coords[d], &|v| env.get(&v).copied().unwrap_or(0)) else {
                    return;
                };
                b.push((off, off.saturating_add(s.extent[d])));
            }
            boxes.push(b);
        }
    }
    let want: Vec<(i64, i64)> = checked
        .iter()
        .map(|&d| match domains[d] {
            Domain::Tile { step, .. } => (0, step),
            Domain::Whole(n) => (0, n),
            Domain::Unknown => unreachable!("filtered"),
        })
        .collect();
    // Split each dimension at every box edge; a cell is written when some box holds it.
    let cuts: Vec<Vec<i64>> = (0..checked.len())
        .map(|i| {
            let mut c: Vec<i64> = vec![want[i].0, want[i].1];
            for b in &boxes {
                c.push(b[i].0.clamp(want[i].0, want[i].1));
                c.push(b[i].1.clamp(want[i].0, want[i].1));
            }
            c.sort();
            c.dedup();
            c
        })
        .collect();
    // Bounded before it can overflow: ranks and box counts come from the schedule.
    let Some(cells) = cuts.iter().try_fold(1usize, |a, c| {
        a.checked_mul(c.len().saturating_sub(1))
            .filter(|&x| x <= 1 << 16)
    }) else {
        return;
    };
    let mut missing: Option<Vec<(i64, i64)>> = None;
    for n in 0..cells {
        let mut rest = n;
        let mut cell = Vec::new();
        for c in &cuts {
            let w = c.len() - 1;
            cell.push((c[rest % w], c[rest % w + 1]));
            rest /= w;
        }
        let written = boxes
            .iter()
            .any(|b| b.iter().zip(&cell).all(|(x, y)| x.0 <= y.0 && y.1 <= x.1));
        if !written {
            missing = Some(cell);
            break;
        }
    }
    let first = stores[0].site.stmt;
    let tile_label = |mut f: Finding| {
        for &d in &checked {
            if let Domain::Tile { step, lp, var } = domains[d] {
                f = f.label(
                    k.loops.span(lp),
                    format!(
                        "`{}` moves {step} along {} per tile",
                        var_name(k, var, lp),
                        dim_text(k, p, d)
                    ),
                );
                break;
            }
        }
        f
    };
    if let Some(cell) = missing {
        // Dimensions a tile holds one element of (a batch index) go without saying.
        let wide = |i: usize| want[i].1 - want[i].0 > 1;
        let all_narrow = !(0..checked.len()).any(wide);
        let place: Vec<String> = checked
            .iter()
            .zip(&cell)
            .enumerate()
            .filter(|(i, _)| all_narrow || wide(*i))
            .map(|(_, (&d, (a, b)))| format!("{a}..{b} of {}", dim_text(k, p, d)))
            .collect();
        let scope = if checked
            .iter()
            .any(|&d| matches!(domains[d], Domain::Tile { .. }))
        {
            "of every tile "
        } else {
            ""
        };
        let mut f = Finding::new(
            &OUTPUT_COVERAGE,
            cx.span(first),
            format!(
                "elements {} {scope}of `{tname}` are {}",
                place.join(", "),
                if conditional.is_empty() {
                    "never written"
                } else {
                    "written only on some paths"
                }
            ),
        )
        .subject("tensor", tname);
        // A store skipped by a condition on a scalar, an extent or a register value (`if
        // write_lse:`) may be an output the caller asks for: Cake cannot tell, so it warns.
        let opaque = !conditional.is_empty()
            && conditional.iter().all(|(s, g)| {
                paths
                    .get(s)
                    .and_then(|p| p.iter().find(|x| x.0 == *g))
                    .is_some_and(|&(_, cond, _)| cond_reads(k, cond).opaque)
            });
        if opaque {
            f = f
                .severity(cake_diag::Severity::Warning)
                .note("the condition reads a value only the run knows; an output written on purpose only sometimes is fine");
        }
        for (s, g) in &conditional {
            if *s != first {
                f = f.label(cx.span(*s), "a store that runs only on some paths");
            }
            f = f.label(cx.span(*g), "this condition skips it");
        }
        for s in &stores[1..] {
            if !conditional.iter().any(|c| c.0 == s.site.stmt) {
                f = f.label(cx.span(s.site.stmt), "another store");
            }
        }
        out.push(tile_label(f).help(
            "store every element of the tile the loops advance by: one store per replica's slice, or one for the whole tile, on every path",
        ));
        return;
    }
    // Writes past the tile land in the next tile's elements.
    for (i, &d) in checked.iter().enumerate() {
        if let Domain::Tile { step, .. } = domains[d] {
            if let Some(b) = boxes.iter().find(|b| b[i].1 > step || b[i].0 < 0) {
                let f = Finding::new(
                    &OUTPUT_COVERAGE,
                    cx.span(first),
                    format!(
                        "the stores of one tile write {}..{} of {}, past the {step} the tile advances by: neighbouring tiles write the same elements",
                        b[i].0,
                        b[i].1,
                        dim_text(k, p, d)
                    ),
                )
                .subject("tensor", tname);
                out.push(tile_label(f).help("store exactly the tile the loop advances by"));
                return;
            }
        }
    }
    replicated_stores(cx, p, stores, paths, &domains, out);
}

/// Replicas of a role that run one store on the same elements: each repeats the others' work,
/// and the values race when they differ. Every coordinate is compared (with the same values of
/// everything but the replica index), so replicas told apart by a dimension the coverage check
/// cannot follow are not reported.
fn replicated_stores(
    cx: &Ctx,
    p: ParamId,
    stores: &[StoreSite],
    paths: &BTreeMap<StmtId, Vec<(StmtId, ExprId, bool)>>,
    domains: &[Domain],
    out: &mut Vec<Finding>,
) {
    let k = cx.k;
    for s in stores {
        let Some(role) = s.site.role else { continue };
        if k.roles[role].replicas() < 2 {
            continue;
        }
        let Some(envs) = envs(k, s, domains) else {
            continue;
        };
        let taken: Vec<&Env> = envs
            .iter()
            .filter(|e| path_taken(k, s, paths, stores, e) == Some(true))
            .collect();
        let replica = |e: &Env| e.get(&Var::Role(role)).copied().unwrap_or(0);
        let rest = |e: &Env| {
            e.iter()
                .filter(|(v, _)| **v != Var::Role(role))
                .map(|(v, x)| (*v, *x))
                .collect::<Vec<_>>()
        };
        let at = |e: &Env| -> Option<Vec<i64>> {
            s.coords
                .iter()
                .map(|c| eval(k, *c, &|v| e.get(&v).copied().unwrap_or(0)))
                .collect()
        };
        for (i, a) in taken.iter().enumerate() {
            for b in &taken[i + 1..] {
                if replica(a) == replica(b) || rest(a) != rest(b) {
                    continue;
                }
                let (Some(x), Some(y)) = (at(a), at(b)) else {
                    continue;
                };
                let overlap = x
                    .iter()
                    .zip(&y)
                    .zip(&s.extent)
                    .all(|((x, y), n)| *x < y.saturating_add(*n) && *y < x.saturating_add(*n));
                if !overlap {
                    continue;
                }
                let r = &k.roles[role].name;
                let tname = &k.params[p].name;
                out.push(
                    Finding::new(
                        &OUTPUT_COVERAGE,
                        cx.span(s.site.stmt),
                        format!(
                            "replicas {} and {} of role `{r}` both run this store on the same elements of `{tname}`: every replica repeats the others' work, and the values race if they differ",
                            replica(a),
                            replica(b)
                        ),
                    )
                    .subject("tensor", tname)
                    .label(k.roles.span(role), format!("`{r}` has {} replicas", k.roles[role].replicas()))
                    .help(format!(
                        "give each replica its own slice (a coordinate with `{r}.index`), or issue the store from a role of one replica"
                    )),
                );
                return;
            }
        }
    }
}

type Env = BTreeMap<Var, i64>;

/// Every binding of the replica index and of the constant loops that move a fixed-size
/// dimension, for one store; `None` when there are too many to enumerate.
fn envs(k: &Kernel, s: &StoreSite, domains: &[Domain]) -> Option<Vec<Env>> {
    let mut out: Vec<Env> = replicas(k, s.site.role)
        .into_iter()
        .map(|(r, i)| {
            let mut e = Env::new();
            if let Some(r) = r {
                e.insert(Var::Role(r), i);
            }
            e
        })
        .collect();
    for (var, trips, _) in loop_vars(k, &s.site.loops) {
        let Trips::Count(n) = trips else { continue };
        let moves_whole = (0..s.coords.len()).any(|d| {
            matches!(domains[d], Domain::Whole(_))
                && step(k, s.coords[d], var, &|_| 0).is_some_and(|c| c != 0)
        });
        if !moves_whole {
            continue;
        }
        // A trip count is the schedule's to choose (any i64): bound the product before it
        // can wrap.
        if n <= 0 || (out.len() as i64).checked_mul(n).is_none_or(|t| t > 4096) {
            return None;
        }
        out = out
            .into_iter()
            .flat_map(|e| {
                (0..n).map(move |i| {
                    let mut e = e.clone();
                    e.insert(var, i);
                    e
                })
            })
            .collect();
    }
    Some(out)
}

/// Whether store `s` runs under `env`: `Some(false)` when a condition on the replica index
/// rules it out, `None` when a condition makes it run on some paths only and the other branch
/// does not store the same tensor.
fn path_taken(
    k: &Kernel,
    s: &StoreSite,
    paths: &BTreeMap<StmtId, Vec<(StmtId, ExprId, bool)>>,
    stores: &[StoreSite],
    env: &Env,
) -> Option<bool> {
    let empty = Vec::new();
    for &(if_stmt, cond, then) in paths.get(&s.site.stmt).unwrap_or(&empty) {
        // Exactly one run of a stream-K tile ends it: that run writes the tile.
        if then && k.is_stream_end(cond) {
            continue;
        }
        let r = cond_reads(k, cond);
        if !r.opaque && r.tiles.is_empty() && r.roles {
            let v = eval(k, cond, &|v| env.get(&v).copied().unwrap_or(0))?;
            if (v != 0) != then {
                return Some(false);
            }
            continue;
        }
        // A condition on tile coordinates this store's elements do not depend on picks one of
        // several tiles that would write the same elements (`if ds == 0:`).
        let moves = |axis: usize| {
            s.coords
                .iter()
                .any(|c| step(k, *c, Var::Tile(axis), &|_| 0) != Some(0))
        };
        if !r.opaque && !r.roles && !r.tiles.iter().any(|a| moves(*a)) {
            continue;
        }
        // The other branch writes the same tensor: one of the two always runs.
        let other_branch = stores.iter().any(|o| {
            paths
                .get(&o.site.stmt)
                .is_some_and(|p| p.iter().any(|g| g.0 == if_stmt && g.2 != then))
        });
        if !other_branch {
            return None;
        }
    }
    Some(true)
}
