//! Deciding, from the original kernel's IR, when a mutation introduces no hazard. Each check is
//! a sufficient condition that can be stated in one sentence; when it does not hold, the mutant
//! is scored.

use std::collections::BTreeSet;

use cake_ir::sync::ArriveKind;
use cake_ir::*;

type Site = OpSite;

/// The innermost loop around a site, if any.
fn body(s: &Site) -> Option<LoopId> {
    s.loops.last().copied()
}

/// Memory a statement can hand over between roles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Res {
    View(usize),
    Tmem(usize),
    Tensor(usize),
}

/// (writes, reads) of shared memory, TMEM and global tensors, from the op's effects.
fn accesses(k: &Kernel, s: &Site) -> (Vec<Res>, Vec<Res>) {
    let e = &s.effects;
    let mut w: Vec<Res> = e
        .smem_writes
        .iter()
        .map(|v| Res::View(v.view.index()))
        .collect();
    w.extend(e.tmem_writes.iter().map(|t| Res::Tmem(t.region.index())));
    w.extend(e.global_writes.iter().map(|p| Res::Tensor(p.index())));
    let mut r: Vec<Res> = e
        .smem_reads
        .iter()
        .map(|v| Res::View(v.view.index()))
        .collect();
    r.extend(e.tmem_reads.iter().map(|t| Res::Tmem(t.region.index())));
    r.extend(e.global_reads.iter().map(|p| Res::Tensor(p.index())));
    // An accumulating MMA and scatter_add's atomic adds also read what they write.
    if e.read_modify_write {
        r.extend(w.iter().filter(|x| !matches!(x, Res::Tensor(_))).copied());
    }
    for x in &e.exprs {
        k.visit_expr(*x, |_, kind| {
            if let ExprKind::Load { tensor, .. } = kind {
                r.push(Res::Tensor(tensor.index()));
            }
            true
        });
    }
    (w, r)
}

fn role_accesses(k: &Kernel, all: &[Site], role: RoleId) -> (BTreeSet<Res>, BTreeSet<Res>) {
    let mut w = BTreeSet::new();
    let mut r = BTreeSet::new();
    for s in all.iter().filter(|s| s.role == Some(role)) {
        let (a, b) = accesses(k, s);
        w.extend(a);
        r.extend(b);
    }
    (w, r)
}

/// The barrier a site arrives on (plain arrive, commit, TMA or cp.async completion, release=).
fn arrives_on(s: &Site) -> Option<BarrierId> {
    s.effects
        .barriers
        .iter()
        .find(|(_, u)| *u != BarrierUse::Wait)
        .map(|(b, _)| *b)
}

fn waits_on(s: &Site) -> Option<BarrierId> {
    s.effects
        .barriers
        .iter()
        .find(|(_, u)| *u == BarrierUse::Wait)
        .map(|(b, _)| *b)
}

fn touches(k: &Kernel, s: &Site, r: Res) -> bool {
    let (w, rd) = accesses(k, s);
    w.contains(&r) || rd.contains(&r)
}

/// Whether access `i` (by its role, to `r`) is ordered after role `y`'s accesses to `r` by a
/// wait other than on `skip`: earlier in the same loop body the role waits on a barrier that
/// only `y` completes, and every completion comes after `y`'s accesses to `r` (the completing
/// op is itself the access, a copy completing on that barrier writes `r`, or every access of
/// `y` to `r` precedes the arrival in the arrival's own block).
fn guarded(
    k: &Kernel,
    all: &[Site],
    facts: &[cake_ir::sync::BarrierFacts],
    i: usize,
    y: RoleId,
    r: Res,
    skip: BarrierId,
) -> bool {
    waited_before(all, i, |g| {
        if g == skip {
            return false;
        }
        let fg = &facts[g.index()];
        if fg.arrivals.is_empty() || fg.arrivals.iter().any(|a| a.role != y) {
            return false;
        }
        all.iter().enumerate().all(|(j, t)| {
            if t.role != Some(y) || arrives_on(t) != Some(g) {
                return true;
            }
            if touches(k, t, r) {
                return true;
            }
            let copy = |s: &Site| {
                s.effects
                    .barriers
                    .iter()
                    .any(|(b, u)| *b == g && u.is_completion())
            };
            if copy(t)
                && all
                    .iter()
                    .any(|u| u.role == Some(y) && copy(u) && touches(k, u, r))
            {
                return true;
            }
            let mine: Vec<usize> = all
                .iter()
                .enumerate()
                .filter(|(_, u)| u.role == Some(y) && touches(k, u, r))
                .map(|(n, _)| n)
                .collect();
            !mine.is_empty()
                && mine
                    .iter()
                    .all(|&n| n < j && all[n].loops.starts_with(&t.loops))
        })
    })
}

/// Whether, in the same loop body and earlier, `role` waits on a barrier satisfying `pred`.
fn waited_before(all: &[Site], at: usize, pred: impl Fn(BarrierId) -> bool) -> bool {
    let site = &all[at];
    all[..at]
        .iter()
        .any(|s| s.role == site.role && body(s) == body(site) && waits_on(s).is_some_and(&pred))
}

/// Dropping the wait at `wait_stmt` is equivalent when the barrier carries nothing and the
/// waiting role stays throttled everywhere it arrives. Returns the reason.
pub fn drop_wait(k: &Kernel, kf: &KernelFacts, wait_stmt: StmtId) -> Option<String> {
    let all = &kf.ops;
    // Which arrivals and waits exist does not depend on the target, only their counts.
    let facts = &kf.barriers;
    let at = all.iter().position(|s| s.stmt == wait_stmt)?;
    let b = waits_on(&all[at])?;
    let c = all[at].role?;
    let f = &facts[b.index()];
    let bname = &k.barriers[b].name;
    let cname = &k.roles[c].name;
    // 1. Only plain arrivals: no TMA bytes land through it and no stage is released through it.
    if f.arrivals.is_empty()
        || !f
            .arrivals
            .iter()
            .all(|a| matches!(a.kind, ArriveKind::Arrive | ArriveKind::Commit))
    {
        return None;
    }
    // 2. No other wait on it: afterwards nobody waits, so no phase of it can be missed.
    if f.waits.len() != 1 {
        return None;
    }
    // 3. Every access the waiter and a producer make to memory one of them writes is still
    //    ordered by another barrier: before the access, in its loop body, its role waits on a
    //    barrier that only the other role completes, after its own accesses to that memory.
    let producers: BTreeSet<RoleId> = f.arrivals.iter().map(|a| a.role).collect();
    for &p in &producers {
        for (x, y) in [(c, p), (p, c)] {
            let (xw, xr) = role_accesses(k, all, x);
            let (yw, yr) = role_accesses(k, all, y);
            let mut shared: BTreeSet<Res> = BTreeSet::new();
            shared.extend(xw.intersection(&yw).copied());
            shared.extend(xw.intersection(&yr).copied());
            shared.extend(xr.intersection(&yw).copied());
            for r in shared {
                for (i, s) in all.iter().enumerate() {
                    if s.role != Some(x) || !touches(k, s, r) {
                        continue;
                    }
                    if !guarded(k, all, facts, i, y, r, b) {
                        return None;
                    }
                }
            }
        }
    }
    // 4. Every arrival of the waiting role is still throttled by a credit loop: before it, in
    //    the same loop body, the role waits on a barrier whose producers are exactly the
    //    arrival barrier's waiters, and they arrive on that barrier only after waiting on the
    //    arrival barrier. So running ahead cannot complete a phase twice before it is waited.
    for (i, s) in all.iter().enumerate() {
        if s.role != Some(c) || s.stmt == wait_stmt {
            continue;
        }
        let Some(e) = arrives_on(s) else { continue };
        let waiters: BTreeSet<RoleId> = facts[e.index()].waits.iter().map(|w| w.1).collect();
        if waiters.is_empty() {
            continue;
        }
        let throttled = waited_before(all, i, |g| {
            if g == b {
                return false;
            }
            let gp: BTreeSet<RoleId> = facts[g.index()].arrivals.iter().map(|a| a.role).collect();
            gp == waiters
                && all
                    .iter()
                    .enumerate()
                    .all(|(j, t)| arrives_on(t) != Some(g) || waited_before(all, j, |x| x == e))
        });
        if !throttled {
            return None;
        }
    }
    let names: Vec<String> = producers
        .iter()
        .map(|p| format!("`{}`", k.roles[*p].name))
        .collect();
    Some(format!(
        "`{bname}` carries nothing: it completes only on plain arrivals, its producers ({}) and \
         `{cname}` order every access to memory one of them writes through other barriers \
         (each access waits first on a barrier only the other role completes, after its own \
         accesses), and this was its only wait; every arrival `{cname}` makes is still throttled by a wait on a barrier \
         that the arrival's waiters release, so no phase can run two ahead, and removing a wait \
         cannot add a deadlock",
        names.join(", ")
    ))
}

/// Moving a warpgroup role onto `new_warps` is equivalent when nothing in it depends on
/// warpgroup alignment or on how many replicas it has. Returns the reason.
pub fn misalign_role(
    k: &Kernel,
    kf: &KernelFacts,
    role: RoleId,
    new_warps: &[u32],
) -> Option<String> {
    let r = &k.roles[role];
    if r.regs.is_some() || new_warps.iter().any(|&w| w >= 32) {
        return None;
    }
    let overlaps = k
        .roles
        .iter()
        .any(|(h, o)| h != role && o.warps().iter().any(|w| new_warps.contains(w)));
    if overlaps {
        return None;
    }
    if k.exprs
        .iter()
        .any(|(_, e)| matches!(e.kind, ExprKind::RoleIndex(x) if x == role))
    {
        return None;
    }
    // Per-replica register state stays small when spread over one warp instead of four.
    let elems: u64 = k
        .fragments
        .iter()
        .filter(|(_, f)| f.role == role)
        .map(|(_, f)| f.shape.iter().map(|&d| d as u64).product::<u64>())
        .sum();
    if elems > 64 * 32 {
        return None;
    }
    let simple = kf.ops.iter().filter(|s| s.role == Some(role)).all(|s| {
        matches!(
            s.op,
            Op::Wait { .. }
                | Op::Sync { .. }
                | Op::Assign { .. }
                | Op::Store { .. }
                | Op::TmaStore { .. }
        )
    });
    if !simple {
        return None;
    }
    Some(format!(
        "role `{}` has no register budget and never reads its replica index, and it only waits, \
         synchronises on named barriers (over all its threads, whatever their grouping), \
         computes register values and stores them to global memory: nothing in it needs \
         warpgroup alignment, every replica computes the same values from the same inputs and \
         stores them to the same addresses, its fragments stay at most 64 elements per thread \
         on one warp, and on its new warps it overlaps no other role",
        r.name
    ))
}
