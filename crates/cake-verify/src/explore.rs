//! Bounded exploration of the roles' interleavings. Each role's program is unrolled for a few
//! small scenarios (no tiles, one tile, two tiles; each distinct loop range running 0, 1 or
//! stages+1 times, a range with constant bounds its own trip count), and the mbarrier semantics
//! the lowering emits are simulated: a wait passes when the phase it needs has completed; an
//! arrival completes a phase when the phase's count is reached. Every role runs as far as it can before the next one (producers race ahead, the
//! most adversarial order for phase aliasing). A state where unfinished roles all block is a
//! deadlock; a barrier slot completing two phases ahead of a waiter aliases the parity bit.
//! A loop with a deferred MMA (`defer=True`) is unrolled in the rotated order the lowering
//! emits, not the written one.

use crate::ctx::Ctx;
use cake_diag::catalog::safety::{DEADLOCK, PHASE_OVERRUN};
use cake_diag::Finding;
use cake_ir::*;
use std::collections::BTreeMap;

/// Distinct loop ranges beyond which the scenario product is not explored (a coverage note).
const MAX_RANGES: usize = 3;

/// The exploration's work budget, in steps (a statement visited, or a loop iteration begun,
/// while unrolling a role for a scenario), summed over every scenario: `STEPS_PER_STMT` per
/// statement of the schedule, at least `MIN_STEPS`. Shape-dependent ranges run at most
/// stages + 1 times, so this covers them many times over; what it stops is a range with a large
/// constant trip count (`lm.range(100000)`), whose unrolling would take minutes. Running out is
/// a coverage note (CAKE-V002) on the range being unrolled, with the findings found so far.
const STEPS_PER_STMT: u64 = 4_000;
const MIN_STEPS: u64 = 200_000;

fn step_budget(k: &Kernel) -> u64 {
    (STEPS_PER_STMT * k.stmts.len() as u64).max(MIN_STEPS)
}

#[derive(Clone, Debug)]
enum Ev {
    /// Wait for completion number `need` (0-based) of `slot` of `barrier`.
    Wait {
        barrier: BarrierId,
        slot: u32,
        need: u64,
        stmt: StmtId,
    },
    Arrive {
        barrier: BarrierId,
        slot: u32,
        count: u32,
        stmt: StmtId,
    },
}

struct Scenario {
    tiles: u64,
    trips: BTreeMap<String, u64>,
}

impl Scenario {
    fn describe(&self) -> String {
        let trips: Vec<String> = self
            .trips
            .iter()
            .map(|(k, v)| format!("{v} iteration(s) of {k}"))
            .collect();
        format!(
            "{} tile(s){}{}",
            self.tiles,
            if trips.is_empty() { "" } else { ", " },
            trips.join(", ")
        )
    }
}

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let ranges = range_keys(cx);
    // A range with constant bounds runs its one trip count in every scenario; only ranges that
    // depend on the shape (or the tile) take the values below.
    let fixed = constant_trips(cx);
    let free = ranges.iter().filter(|r| !fixed.contains_key(*r)).count();
    if free > MAX_RANGES {
        out.push(Finding::new(
            &cake_diag::catalog::coverage::NOT_VERIFIED,
            k.span,
            format!("not verified: deadlock exploration covers up to {MAX_RANGES} distinct loop ranges that depend on the shape; this schedule has {free}"),
        ));
        return;
    }
    let max_stages = k
        .pipelines
        .iter()
        .map(|(_, p)| p.stages as u64)
        .max()
        .unwrap_or(1);
    let values = [0u64, 1, max_stages + 1];
    let mut scenarios = Vec::new();
    for tiles in [1u64, 2, 0] {
        let mut combos: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new()];
        for key in &ranges {
            combos = combos
                .into_iter()
                .flat_map(|m| {
                    let trips: Vec<u64> = match fixed.get(key) {
                        Some(n) => vec![*n],
                        None => values.to_vec(),
                    };
                    trips.into_iter().map(move |v| {
                        let mut m = m.clone();
                        m.insert(key.clone(), v);
                        m
                    })
                })
                .collect();
        }
        scenarios.extend(combos.into_iter().map(|trips| Scenario { tiles, trips }));
    }
    // One counterexample of each kind is enough to act on.
    let mut found: Vec<Finding> = Vec::new();
    let budget = step_budget(k);
    let mut left = budget;
    for sc in &scenarios {
        match simulate(cx, sc, &mut left) {
            Ok(Some(f)) => {
                if !found.iter().any(|g| g.code == f.code) {
                    found.push(f);
                }
            }
            Ok(None) => {}
            Err(at) => {
                let span = at.map_or(k.span, |l| k.loops.span(l));
                let range = at.and_then(|l| range_text(cx, l)).unwrap_or_default();
                found.push(
                    Finding::new(
                        &cake_diag::catalog::coverage::NOT_VERIFIED,
                        span,
                        format!("not verified: deadlock exploration stopped at its budget of {budget} steps while unrolling {range}"),
                    )
                    .note(format!("scenario: {}", sc.describe()))
                    .note(format!("the budget is {STEPS_PER_STMT} steps per statement of the schedule (at least {MIN_STEPS}); a range with a large constant trip count unrolls one step per iteration"))
                    .help("a shape-dependent trip count (`lm.range(lm.cdiv(K, BK))`) is explored at a few small values"),
                );
                break;
            }
        }
    }
    out.extend(found);
}

/// Trip counts of the ranges whose bounds are constants, by range text.
fn constant_trips(cx: &Ctx) -> BTreeMap<String, u64> {
    let k = cx.k;
    let mut out = BTreeMap::new();
    for (l, lp) in k.loops.iter() {
        let LoopKind::Range { start, stop, .. } = &lp.kind else {
            continue;
        };
        if let (Some(a), Some(b), Some(t)) =
            (k.const_int(*start), k.const_int(*stop), range_text(cx, l))
        {
            out.insert(t, (b - a).max(0) as u64);
        }
    }
    out
}

fn range_text(cx: &Ctx, l: LoopId) -> Option<String> {
    match &cx.k.loops[l].kind {
        LoopKind::Range { start, stop, .. } => Some(format!(
            "range[{}, {})",
            cx.expr_text(*start),
            cx.expr_text(*stop)
        )),
        LoopKind::Tiles { .. } => None,
    }
}

fn range_keys(cx: &Ctx) -> Vec<String> {
    let mut keys: Vec<String> = Vec::new();
    for (l, _) in cx.k.loops.iter() {
        if let Some(t) = range_text(cx, l) {
            if !keys.contains(&t) {
                keys.push(t);
            }
        }
    }
    keys
}

/// Unroll one role's program for a scenario into barrier events, the way the lowering runs it.
struct Unroll<'a> {
    cx: &'a Ctx<'a>,
    sc: &'a Scenario,
    role: RoleId,
    /// Per pipeline: iterations this role has completed.
    pipe_it: BTreeMap<PipelineId, u64>,
    /// Per (barrier, slot): waits this role has done (for barriers outside pipelines).
    waits_done: BTreeMap<(BarrierId, u32), u64>,
    /// Innermost pipelined loops: (pipeline, current stage).
    stages: Vec<(PipelineId, u32)>,
    /// Releases deferred by one iteration (wgmma keeps one MMA group in flight).
    deferred: Vec<Option<(BarrierId, u32, u32, StmtId)>>,
    /// Body of the pipelined loop being unrolled (releases there may be deferred).
    loop_body: Option<Block>,
    events: Vec<Ev>,
    /// Steps left of the exploration's budget.
    left: u64,
    /// Range loops being unrolled, outermost first.
    ranges: Vec<LoopId>,
    /// Set when the budget ran out: the outermost range loop being unrolled then, if any.
    exhausted: Option<Option<LoopId>>,
    /// While a part of a rotated loop is unrolled: its releases, held until its MMA retires.
    held: Option<Vec<Ev>>,
}

impl Unroll<'_> {
    fn slot(&self, b: BarrierId) -> u32 {
        match self.cx.k.barriers[b].pipeline {
            Some(p) => self
                .stages
                .iter()
                .rev()
                .find(|(q, _)| *q == p)
                .map_or(0, |(_, s)| *s),
            None => 0,
        }
    }

    fn count_for(&self, stmt: StmtId, b: BarrierId) -> u32 {
        // Arrival contribution of this site, as derived for the barrier's phase count.
        let f = &self.cx.barriers[b.index()];
        f.arrivals.iter().find(|a| a.stmt == stmt).map_or_else(
            // Several TMA loads of a role share the first one's site.
            || {
                f.arrivals
                    .iter()
                    .find(|a| a.role == self.role && a.kind == cake_ir::sync::ArriveKind::Tma)
                    .map_or(1, |a| a.count)
            },
            |a| a.count,
        )
    }

    /// Take one step of the budget; false (and the place recorded) once it has run out.
    fn step(&mut self) -> bool {
        if self.exhausted.is_some() {
            return false;
        }
        if self.left == 0 {
            self.exhausted = Some(self.ranges.first().copied());
            return false;
        }
        self.left -= 1;
        true
    }

    fn block(&mut self, block: &[StmtId], inside: bool) {
        for &s in block {
            if !self.step() {
                return;
            }
            match &self.cx.k.stmts[s] {
                Stmt::Role { role, body } => {
                    if *role == self.role {
                        self.block(body, true);
                    }
                }
                Stmt::Loop { id, body } => match &self.cx.k.loops[*id].kind {
                    LoopKind::Tiles { .. } => {
                        for _ in 0..self.sc.tiles {
                            if !self.step() {
                                return;
                            }
                            self.block(body, inside);
                        }
                    }
                    LoopKind::Range { pipeline, .. } => {
                        let key = range_text(self.cx, *id).unwrap_or_default();
                        let trips = self.sc.trips.get(&key).copied().unwrap_or(1);
                        let rotated = match (pipeline, self.rotates()) {
                            (Some(p), true) => {
                                cake_ir::sync::deferred_mma(self.cx.k, body, Some(*p))
                                    .ok()
                                    .flatten()
                                    .map(|parts| (*p, parts))
                            }
                            _ => None,
                        };
                        if let Some((p, parts)) = rotated {
                            self.ranges.push(*id);
                            self.rotated_loop(p, body, parts, trips, inside);
                            self.ranges.pop();
                            continue;
                        }
                        self.deferred.push(None);
                        self.ranges.push(*id);
                        // A region issued early (`lm.ahead`) runs where the lowering puts it:
                        // the first iterations' before the loop, iteration t + steps's in t.
                        let ahead = pipeline.and_then(|p| {
                            let (_, steps, early) = self.cx.k.leading_ahead(body)?;
                            Some((p, u64::from(steps), early.clone())).filter(|a| a.1 > 0)
                        });
                        let rest = if ahead.is_some() {
                            &body[1..]
                        } else {
                            &body[..]
                        };
                        if let Some((p, steps, early)) = &ahead {
                            for j in 0..(*steps).min(trips) {
                                self.at_iteration(*p, j, |me| me.block(early, inside));
                            }
                        }
                        for t in 0..trips {
                            if !self.step() {
                                break;
                            }
                            if let Some(p) = pipeline {
                                let it = *self.pipe_it.get(p).unwrap_or(&0);
                                let stages = self.cx.k.pipelines[*p].stages.max(1) as u64;
                                self.stages.push((*p, (it % stages) as u32));
                            }
                            self.loop_body = Some(body.clone());
                            if let Some((p, steps, early)) = &ahead {
                                if t + steps < trips {
                                    self.at_iteration(*p, *steps, |me| me.block(early, inside));
                                }
                            }
                            self.block(rest, inside);
                            self.loop_body = None;
                            if let Some(p) = pipeline {
                                self.stages.pop();
                                *self.pipe_it.entry(*p).or_insert(0) += 1;
                            }
                        }
                        self.ranges.pop();
                        if let Some(Some((b, slot, count, stmt))) = self.deferred.pop() {
                            self.events.push(Ev::Arrive {
                                barrier: b,
                                slot,
                                count,
                                stmt,
                            });
                        }
                    }
                },
                Stmt::If { then_body, .. } => self.block(then_body, inside),
                // Not opening a pipelined loop (`CAKE-M013`): run where it is written.
                Stmt::Ahead { body, .. } => self.block(body, inside),
                Stmt::Op(_) if inside => self.op(s),
                Stmt::Op(_) => {}
            }
        }
    }

    /// Whether the lowering rotates loops with a deferred MMA (`defer=True`) on this target.
    fn rotates(&self) -> bool {
        self.cx.target.mma == cake_target::MmaFamily::Wgmma
    }

    /// A pipelined loop whose last MMA is deferred, in the order the lowering runs it: iteration
    /// j runs its head, then the deferred part of iteration j − 1 (that iteration's stage and
    /// phases), then its middle; the last deferred part follows the loop. A part's releases
    /// arrive when its MMA retires: the head's at the start of the middle (its first read of
    /// the scores waits for it), the deferred part's at the end of the iteration.
    fn rotated_loop(
        &mut self,
        p: PipelineId,
        body: &Block,
        parts: cake_ir::sync::DeferredMma,
        trips: u64,
        inside: bool,
    ) {
        let (head, middle, tail) = (
            &body[..parts.head],
            &body[parts.head..parts.tail],
            &body[parts.tail..],
        );
        let stages = self.cx.k.pipelines[p].stages.max(1) as u64;
        let saved_body = self.loop_body.take();
        for t in 0..trips {
            if !self.step() {
                break;
            }
            let it = *self.pipe_it.get(&p).unwrap_or(&0);
            self.stages.push((p, (it % stages) as u32));
            let head_releases = self.holding(|me| me.block(head, inside));
            let tail_releases = if t > 0 {
                self.at_previous_iteration(p, |me| me.holding(|me| me.block(tail, inside)))
            } else {
                Vec::new()
            };
            self.events.extend(head_releases);
            self.block(middle, inside);
            self.events.extend(tail_releases);
            self.stages.pop();
            *self.pipe_it.entry(p).or_insert(0) += 1;
        }
        if trips > 0 {
            self.at_previous_iteration(p, |me| me.block(tail, inside));
        }
        self.loop_body = saved_body;
    }

    /// Run `f` with the releases it makes held back, and return them.
    fn holding(&mut self, f: impl FnOnce(&mut Self)) -> Vec<Ev> {
        let saved = self.held.replace(Vec::new());
        f(self);
        std::mem::replace(&mut self.held, saved).unwrap_or_default()
    }

    /// Run `f` at the stage and phases of pipeline `p`'s iteration `ahead` after the current one.
    fn at_iteration(&mut self, p: PipelineId, ahead: u64, f: impl FnOnce(&mut Self)) {
        let it = *self.pipe_it.get(&p).unwrap_or(&0);
        self.at_pipe_iteration(p, it + ahead, f)
    }

    /// Run `f` at the stage and phases of pipeline `p`'s previous iteration.
    fn at_previous_iteration<T>(&mut self, p: PipelineId, f: impl FnOnce(&mut Self) -> T) -> T {
        let it = *self.pipe_it.get(&p).unwrap_or(&0);
        self.at_pipe_iteration(p, it.saturating_sub(1), f)
    }

    /// Run `f` as pipeline `p`'s iteration `at`, then restore the current one.
    fn at_pipe_iteration<T>(
        &mut self,
        p: PipelineId,
        at: u64,
        f: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let it = *self.pipe_it.get(&p).unwrap_or(&0);
        let stages = self.cx.k.pipelines[p].stages.max(1) as u64;
        self.pipe_it.insert(p, at);
        self.stages.push((p, (at % stages) as u32));
        let out = f(self);
        self.stages.pop();
        self.pipe_it.insert(p, it);
        out
    }

    fn op(&mut self, s: StmtId) {
        let cx = self.cx;
        let Some(site) = cx.site(s) else { return };
        for &(b, u) in &site.effects.barriers {
            self.barrier_use(s, b, u);
        }
    }

    fn barrier_use(&mut self, s: StmtId, barrier: BarrierId, u: BarrierUse) {
        let k = self.cx.k;
        match u {
            BarrierUse::Wait => {
                let slot = self.slot(barrier);
                let free = self.cx.barriers[barrier.index()].starts_free();
                // The n-th wait of this role on this slot needs completion n (n - 1 for a barrier
                // whose stages start free: its first pass needs nothing).
                let n = match k.barriers[barrier].pipeline {
                    Some(p) if self.stages.iter().any(|(q, _)| *q == p) => {
                        let stages = k.pipelines[p].stages.max(1) as u64;
                        *self.pipe_it.get(&p).unwrap_or(&0) / stages
                    }
                    _ => {
                        let e = self.waits_done.entry((barrier, slot)).or_insert(0);
                        *e += 1;
                        *e - 1
                    }
                };
                if free && n == 0 {
                    return;
                }
                let need = if free { n - 1 } else { n };
                self.events.push(Ev::Wait {
                    barrier,
                    slot,
                    need,
                    stmt: s,
                });
            }
            BarrierUse::Arrive | BarrierUse::Commit | BarrierUse::Tma | BarrierUse::CpAsync => {
                let count = self.count_for(s, barrier);
                let slot = self.slot(barrier);
                // Only the first TMA load of a role to a barrier per iteration carries the arrival.
                if u == BarrierUse::Tma && !self.first_tma(s, barrier) {
                    return;
                }
                self.events.push(Ev::Arrive {
                    barrier,
                    slot,
                    count,
                    stmt: s,
                });
            }
            BarrierUse::Release => {
                let count = self.count_for(s, barrier);
                let slot = self.slot(barrier);
                if let Some(held) = self.held.as_mut() {
                    held.push(Ev::Arrive {
                        barrier,
                        slot,
                        count,
                        stmt: s,
                    });
                    return;
                }
                if self.loop_body.as_ref().is_some_and(|body| {
                    cake_ir::sync::defers_release(self.cx.k, self.cx.facts, body, s)
                }) {
                    if let Some(top) = self.deferred.last_mut() {
                        if let Some((pb, ps, pc, pst)) = top.replace((barrier, slot, count, s)) {
                            self.events.push(Ev::Arrive {
                                barrier: pb,
                                slot: ps,
                                count: pc,
                                stmt: pst,
                            });
                        }
                        return;
                    }
                }
                self.events.push(Ev::Arrive {
                    barrier,
                    slot,
                    count,
                    stmt: s,
                });
            }
        }
    }

    fn first_tma(&self, s: StmtId, b: BarrierId) -> bool {
        let f = &self.cx.barriers[b.index()];
        f.arrivals.iter().any(|a| a.stmt == s)
    }
}

/// Simulate one scenario: `Ok(Some(finding))` for a deadlock or phase overrun, `Err(loop)` when
/// the step budget `left` ran out while unrolling (in `loop`, the outermost range then).
fn simulate(cx: &Ctx, sc: &Scenario, left: &mut u64) -> Result<Option<Finding>, Option<LoopId>> {
    let k = cx.k;
    let mut progs: Vec<(RoleId, Vec<Ev>)> = Vec::new();
    for (rid, _) in k.roles.iter() {
        let mut u = Unroll {
            cx,
            sc,
            role: rid,
            pipe_it: BTreeMap::new(),
            waits_done: BTreeMap::new(),
            stages: Vec::new(),
            deferred: Vec::new(),
            events: Vec::new(),
            loop_body: None,
            left: *left,
            ranges: Vec::new(),
            exhausted: None,
            held: None,
        };
        u.block(&k.body, false);
        *left = u.left;
        if let Some(at) = u.exhausted {
            return Err(at);
        }
        progs.push((rid, u.events));
    }
    // Per program: the positions of its waits on each barrier slot, so the next wait a
    // completion could alias is a binary search, not a scan of the rest of the program.
    let waits: Vec<BTreeMap<(BarrierId, u32), Vec<usize>>> = progs
        .iter()
        .map(|(_, evs)| {
            let mut m: BTreeMap<(BarrierId, u32), Vec<usize>> = BTreeMap::new();
            for (i, e) in evs.iter().enumerate() {
                if let Ev::Wait { barrier, slot, .. } = e {
                    m.entry((*barrier, *slot)).or_default().push(i);
                }
            }
            m
        })
        .collect();
    // Barrier state per slot: completed phases and arrivals pending in the current phase.
    let mut completed: BTreeMap<(BarrierId, u32), u64> = BTreeMap::new();
    let mut pending: BTreeMap<(BarrierId, u32), u32> = BTreeMap::new();
    // Per waiter: completions of each slot already consumed.
    let mut pc = vec![0usize; progs.len()];
    loop {
        let mut progressed = false;
        for (i, (role, evs)) in progs.iter().enumerate() {
            while pc[i] < evs.len() {
                match &evs[pc[i]] {
                    Ev::Wait {
                        barrier,
                        slot,
                        need,
                        ..
                    } => {
                        if completed.get(&(*barrier, *slot)).copied().unwrap_or(0) > *need {
                            pc[i] += 1;
                            progressed = true;
                        } else {
                            break;
                        }
                    }
                    Ev::Arrive {
                        barrier,
                        slot,
                        count,
                        stmt,
                    } => {
                        let total = cx.barriers[barrier.index()].arrival_count().max(1);
                        let p = pending.entry((*barrier, *slot)).or_insert(total);
                        *p = p.saturating_sub(*count);
                        if *p == 0 {
                            *p = total;
                            let c = completed.entry((*barrier, *slot)).or_insert(0);
                            *c += 1;
                            // A waiter that still needs an earlier completion of this slot would
                            // see its parity bit come round again.
                            for (j, (wrole, wevs)) in progs.iter().enumerate() {
                                let next = waits[j].get(&(*barrier, *slot)).and_then(|at| {
                                    at.get(at.partition_point(|&x| x < pc[j]))
                                        .map(|&x| &wevs[x])
                                });
                                if let Some(Ev::Wait {
                                    barrier: wb,
                                    slot: ws,
                                    need,
                                    stmt: wst,
                                }) = next
                                {
                                    if *c >= need + 3 && wb == barrier && ws == slot {
                                        let bname = &k.barriers[*barrier].name;
                                        return Ok(Some(
                                            Finding::new(
                                                &PHASE_OVERRUN,
                                                cx.span(*stmt),
                                                format!(
                                                    "role `{}` completes phase {} of `{bname}` (stage {slot}) while role `{}` still waits for phase {}: the parity bit aliases",
                                                    k.roles[*role].name,
                                                    *c - 1,
                                                    k.roles[*wrole].name,
                                                    need
                                                ),
                                            )
                                            .subject("barrier", bname)
                                            .role(&k.roles[*role].name)
                                            .stage(*slot)
                                            .phase((*c - 1) as u32)
                                            .label(cx.span(*wst), format!("`{}` waits here", k.roles[*wrole].name))
                                            .note(format!("scenario: {}", sc.describe()))
                                            .help("the producer must wait for the consumer to release the slot before signalling it again"),
                                        ));
                                    }
                                }
                            }
                        }
                        pc[i] += 1;
                        progressed = true;
                    }
                }
            }
        }
        if progs.iter().enumerate().all(|(i, (_, e))| pc[i] >= e.len()) {
            return Ok(None);
        }
        if !progressed {
            let blocked: Vec<(RoleId, &Ev)> = progs
                .iter()
                .enumerate()
                .filter(|(i, (_, e))| pc[*i] < e.len())
                .map(|(i, (r, e))| (*r, &e[pc[i]]))
                .collect();
            let (first_role, first_ev) = blocked[0];
            let Ev::Wait {
                stmt,
                barrier,
                slot,
                need,
            } = first_ev
            else {
                return Ok(None);
            };
            let mut f = Finding::new(
                &DEADLOCK,
                cx.span(*stmt),
                format!(
                    "deadlock: every unfinished role is blocked ({}); role `{}` waits forever on `{}`",
                    sc.describe(),
                    k.roles[first_role].name,
                    k.barriers[*barrier].name
                ),
            )
            .subject("barrier", &k.barriers[*barrier].name)
            .role(&k.roles[first_role].name)
            .stage(*slot)
            .phase(*need as u32);
            for (r, ev) in &blocked[1..] {
                if let Ev::Wait {
                    stmt,
                    barrier,
                    slot,
                    need,
                } = ev
                {
                    f = f.label(
                        cx.span(*stmt),
                        format!(
                            "`{}` waits on `{}` stage {slot} for phase {need}",
                            k.roles[*r].name, k.barriers[*barrier].name
                        ),
                    );
                }
            }
            for (r, _) in &blocked {
                f = f.note(format!(
                    "role `{}` is blocked after {} barrier operations",
                    k.roles[*r].name,
                    pc[progs.iter().position(|(x, _)| x == r).unwrap_or(0)]
                ));
            }
            return Ok(Some(f.help("every wait needs matching arrivals on every path; check the order of waits and arrivals across roles")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The barrier events role `role` of `examples/attention_sm90.py` makes over `trips`
    /// iterations of its key loop, one tile, as (wait?, barrier name, stage).
    fn events(role: &str, trips: u64) -> Vec<(bool, String, u32)> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../examples/attention_sm90.py"
        );
        let text = std::fs::read(path).expect("example");
        let (_, front) = cake_front::check_bytes("attention_sm90.py", &text);
        let k = &front.kernels[0];
        let facts = KernelFacts::new(k, cake_target::lookup("sm_90a").unwrap());
        let cx = Ctx::new(k, &facts);
        let trips_of = range_keys(&cx).into_iter().map(|r| (r, trips)).collect();
        let sc = Scenario {
            tiles: 1,
            trips: trips_of,
        };
        let (rid, _) = k.roles.iter().find(|(_, r)| r.name == role).expect("role");
        let mut u = Unroll {
            cx: &cx,
            sc: &sc,
            role: rid,
            pipe_it: BTreeMap::new(),
            waits_done: BTreeMap::new(),
            stages: Vec::new(),
            deferred: Vec::new(),
            events: Vec::new(),
            loop_body: None,
            left: u64::MAX,
            ranges: Vec::new(),
            exhausted: None,
            held: None,
        };
        u.block(&k.body, false);
        u.events
            .iter()
            .map(|e| match e {
                Ev::Wait { barrier, slot, .. } => (true, k.barriers[*barrier].name.clone(), *slot),
                Ev::Arrive { barrier, slot, .. } => {
                    (false, k.barriers[*barrier].name.clone(), *slot)
                }
            })
            .collect()
    }

    #[test]
    fn a_deferred_loop_is_explored_in_the_rotated_order() {
        let ev = events("math", 3);
        let at = |wait: bool, name: &str, stage: u32| {
            ev.iter()
                .position(|e| *e == (wait, name.to_string(), stage))
                .unwrap_or_else(|| panic!("{wait} {name} {stage} not in {ev:?}"))
        };
        // Iteration 1 waits for its keys before the values of iteration 0 (the deferred P·V),
        // and iteration 0's values are released at the end of iteration 1.
        assert!(at(true, "k_full", 1) < at(true, "v_full", 0), "{ev:?}");
        assert!(at(true, "v_full", 0) < at(false, "k_empty", 1), "{ev:?}");
        assert!(at(false, "k_empty", 1) < at(false, "v_empty", 0), "{ev:?}");
        // The last iteration's P·V follows the loop: stage 0 again after stage 1's keys.
        let waits_v: Vec<u32> = ev
            .iter()
            .filter(|e| e.0 && e.1 == "v_full")
            .map(|e| e.2)
            .collect();
        assert_eq!(waits_v, [0, 1, 0], "{ev:?}");
        let last_k = ev.iter().rposition(|e| e.0 && e.1 == "k_full").unwrap();
        let last_v = ev.iter().rposition(|e| e.0 && e.1 == "v_full").unwrap();
        assert!(last_k < last_v, "{ev:?}");
    }
}
