//! Derived synchronisation facts: how many arrivals complete one phase of each barrier, how many
//! transaction bytes the TMA loads that signal it deliver, and whether its stages start out
//! free. The author never writes these; the verifier checks them and the lowering emits them.

use crate::facts::{mma_family, KernelFacts, OpSite};
use crate::kernel::*;
use crate::visit::BarrierUse;
use cake_target::{MmaFamily, Target};

/// One site that contributes arrivals to a barrier phase.
#[derive(Clone, Debug, PartialEq)]
pub struct ArriveSite {
    pub stmt: StmtId,
    pub role: RoleId,
    pub kind: ArriveKind,
    /// Arrivals this site contributes per phase (one per role replica).
    pub count: u32,
    /// Transaction bytes this site's TMA load delivers per phase (0 for plain arrivals).
    pub tx_bytes: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArriveKind {
    /// A TMA load completing on the barrier: one `arrive.expect_tx` per role replica.
    Tma,
    /// `cp.async` completing on the barrier (one arrival per thread).
    CpAsync,
    /// `lm.arrive(bar)`: every thread of the role (one per replica in issue-only roles).
    Arrive,
    /// `release=bar` on an MMA: once its MMAs have retired, every thread arrives (mma.sync), or
    /// one thread per warpgroup (wgmma, whose groups complete for the warpgroup at once).
    Release,
    /// `lm.commit(bar)` (tcgen05.commit).
    Commit,
}

#[derive(Clone, Debug, PartialEq)]
pub struct BarrierFacts {
    pub barrier: BarrierId,
    pub arrivals: Vec<ArriveSite>,
    pub waits: Vec<(StmtId, RoleId)>,
    /// Some role waits on it and then, in the same loop body, copies into a staged view.
    pub guards_copies: bool,
    /// The TMEM accumulators it releases: a role waits on it before the MMAs that overwrite
    /// one, and its arrivers read that accumulator and hand the waiter nothing ("accumulator
    /// empty").
    pub releases_tmem: Vec<TmemId>,
}

impl BarrierFacts {
    /// Arrivals that complete one phase.
    pub fn arrival_count(&self) -> u32 {
        self.arrivals.iter().map(|a| a.count).sum()
    }
    /// Transaction bytes one phase expects. TMA sites of one role replica are combined into one
    /// `arrive.expect_tx`, so they count one arrival between them.
    pub fn tx_bytes(&self) -> u64 {
        self.arrivals
            .iter()
            .map(|a| a.tx_bytes * a.count as u64)
            .sum()
    }
    /// A barrier that counts free stages: a waiter's first pass over each stage must not block
    /// (the stage starts empty). Derived when every arrival is a release, when a role waits on
    /// it right before copying into a staged view (it guards the overwrite), or when it releases
    /// a TMEM accumulator.
    pub fn starts_free(&self) -> bool {
        self.guards_copies
            || !self.releases_tmem.is_empty()
            || (!self.arrivals.is_empty()
                && self.arrivals.iter().all(|a| a.kind == ArriveKind::Release))
    }
}

/// Bytes one TMA load of `dst` delivers (the full box, out-of-bounds fill included).
pub fn tma_bytes(k: &Kernel, dst: &ViewRef) -> u64 {
    let v = &k.views[dst.view];
    let rows = dst.rows.map(|(_, n)| n as u64);
    match rows {
        Some(n) => {
            n * v.shape[1..].iter().map(|&d| d as u64).product::<u64>() * v.dtype.bytes() as u64
        }
        None => v.stage_bytes(),
    }
}

/// Collect arrival and wait sites for every barrier, as the lowering for `target` issues them,
/// from the kernel's op sites (program order), its memory accesses and which roles are
/// issue-only (indexed by role). `KernelFacts::new` is the one caller.
pub(crate) fn barrier_facts(
    k: &Kernel,
    target: &Target,
    sites: &[OpSite],
    memory: &MemoryAccesses,
    issue_only: &[bool],
) -> Vec<BarrierFacts> {
    let mut facts: Vec<BarrierFacts> = k
        .barriers
        .handles()
        .map(|b| BarrierFacts {
            barrier: b,
            arrivals: Vec::new(),
            waits: Vec::new(),
            guards_copies: false,
            releases_tmem: Vec::new(),
        })
        .collect();
    let mut waits = Vec::new();
    for site in sites {
        let Some(role) = site.role else { continue };
        let sid = site.stmt;
        let replicas = k.roles[role].replicas();
        // An arrival on a cluster barrier reaches every CTA of the cluster: each site counts
        // its arriving threads once per CTA.
        let ctas = |b: &BarrierId| {
            if k.barriers[*b].cluster && k.cluster_size() > 1 {
                k.cluster_size()
            } else {
                1
            }
        };
        // Plain arrivals and releases come from every thread of the role (each after its own
        // prior accesses), except in issue-only roles, where one thread per replica runs. On a
        // cluster barrier each is a message over the cluster's network, so one thread per warp
        // arrives (lane c in CTA c, once the warp has converged, which orders every lane's
        // accesses before it).
        let per_thread = |b: &BarrierId| {
            let threads = if issue_only[role.index()] {
                replicas
            } else if ctas(b) > 1 {
                k.roles[role].threads() / 32
            } else {
                k.roles[role].threads()
            };
            threads * ctas(b)
        };
        let mut add = |b: BarrierId, kind: ArriveKind, count: u32, tx: u64| {
            let f = &mut facts[b.index()];
            // Several TMA loads of one role in one iteration share a single expect_tx arrival.
            if kind == ArriveKind::Tma {
                if let Some(prev) = f
                    .arrivals
                    .iter_mut()
                    .find(|a| a.kind == ArriveKind::Tma && a.role == role)
                {
                    prev.tx_bytes += tx;
                    return;
                }
            }
            f.arrivals.push(ArriveSite {
                stmt: sid,
                role,
                kind,
                count,
                tx_bytes: tx,
            });
        };
        let e = &site.effects;
        for &(b, u) in &e.barriers {
            match u {
                BarrierUse::Tma => {
                    let bytes = e.smem_writes.iter().map(|v| tma_bytes(k, v)).sum();
                    add(b, ArriveKind::Tma, replicas, bytes)
                }
                BarrierUse::CpAsync => add(b, ArriveKind::CpAsync, k.roles[role].threads(), 0),
                BarrierUse::Arrive => add(b, ArriveKind::Arrive, per_thread(&b), 0),
                // A commit to a cluster barrier is multicast: one arrival in every CTA.
                BarrierUse::Commit => add(b, ArriveKind::Commit, replicas * ctas(&b), 0),
                // A wgmma group completes for its whole warpgroup at once, so once it has
                // retired one thread per warpgroup may release the stage its operands came from.
                BarrierUse::Release => match &e.mma_accumulator {
                    Some(acc) if mma_family(target, acc) == MmaFamily::Wgmma => {
                        add(b, ArriveKind::Release, replicas * ctas(&b), 0)
                    }
                    _ => add(b, ArriveKind::Release, per_thread(&b), 0),
                },
                BarrierUse::Wait => waits.push((b, sid, role)),
            }
        }
    }
    for (b, sid, role) in waits {
        facts[b.index()].waits.push((sid, role));
    }
    // A wait that precedes a copy into view V guards V's overwrite when everyone who arrives on
    // the barrier reads V: it is the readers' release, so its stages start free.
    let mut pairs = Vec::new();
    wait_copy_pairs(k, &k.body, &mut pairs);
    for (b, v) in pairs {
        let f = &mut facts[b.index()];
        if memory.all_arrivers_read(f, Memory::View(v)) {
            f.guards_copies = true;
        }
    }
    // Likewise a wait before the MMAs that overwrite a TMEM accumulator, when everyone who
    // arrives reads the accumulator and hands the waiter nothing it reads: "accumulator empty".
    // (A softmax role that reads O and writes P for the MMA role arrives on a "P full" barrier,
    // which must not start free.)
    for (b, t) in tmem_guards(k) {
        let f = &mut facts[b.index()];
        if memory.all_arrivers_read(f, Memory::Tmem(t)) && !memory.hands_off(f) {
            f.releases_tmem.push(t);
        }
    }
    facts
}

/// A place in shared or tensor memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Memory {
    View(ViewId),
    Tmem(TmemId),
}

/// Which role writes and which reads each place in shared and tensor memory (MMA operands,
/// copies, stores, TMEM transfers, the rows a scatter_add adds).
#[derive(Clone, Debug)]
pub struct MemoryAccesses {
    written: Vec<(RoleId, Memory)>,
    read: Vec<(RoleId, Memory)>,
}

impl MemoryAccesses {
    /// The roles that read `m`.
    pub fn readers(&self, m: Memory) -> Vec<RoleId> {
        let mut out = Vec::new();
        for (r, n) in &self.read {
            if *n == m && !out.contains(r) {
                out.push(*r);
            }
        }
        out
    }

    /// Barrier `f` has arrivals and every arriving role reads `m`.
    fn all_arrivers_read(&self, f: &BarrierFacts, m: Memory) -> bool {
        !f.arrivals.is_empty() && f.arrivals.iter().all(|a| self.read.contains(&(a.role, m)))
    }

    /// Some role arriving on `f` writes memory that a role waiting on it reads: the barrier
    /// hands data over.
    fn hands_off(&self, f: &BarrierFacts) -> bool {
        f.arrivals.iter().any(|a| {
            self.written.iter().any(|(r, m)| {
                *r == a.role && f.waits.iter().any(|(_, w)| self.read.contains(&(*w, *m)))
            })
        })
    }

    /// From the op sites of a kernel (`KernelFacts::new` is the one caller).
    pub(crate) fn of(sites: &[OpSite]) -> Self {
        let (mut written, mut read) = (Vec::new(), Vec::new());
        for site in sites {
            let Some(r) = site.role else { continue };
            let e = &site.effects;
            written.extend(e.smem_writes.iter().map(|v| (r, Memory::View(v.view))));
            written.extend(e.tmem_writes.iter().map(|t| (r, Memory::Tmem(t.region))));
            read.extend(e.smem_reads.iter().map(|v| (r, Memory::View(v.view))));
            read.extend(e.tmem_reads.iter().map(|t| (r, Memory::Tmem(t.region))));
        }
        MemoryAccesses { written, read }
    }
}

/// (barrier, TMEM region) for every wait followed, later in the same block or in a loop or `if`
/// there, by an MMA into the region: the waits that guard the accumulator's overwrite.
fn tmem_guards(k: &Kernel) -> Vec<(BarrierId, TmemId)> {
    fn go(
        k: &Kernel,
        block: &Block,
        waited: &mut Vec<BarrierId>,
        out: &mut Vec<(BarrierId, TmemId)>,
    ) {
        let depth = waited.len();
        for &s in block {
            match &k.stmts[s] {
                Stmt::Op(Op::Wait { barrier }) => waited.push(*barrier),
                Stmt::Op(Op::Mma {
                    acc: Operand::Tmem(t),
                    ..
                }) => {
                    for b in waited.iter() {
                        if !out.contains(&(*b, t.region)) {
                            out.push((*b, t.region));
                        }
                    }
                }
                Stmt::Role { body, .. } | Stmt::Loop { body, .. } | Stmt::Ahead { body, .. } => {
                    go(k, body, waited, out)
                }
                Stmt::If {
                    then_body,
                    else_body,
                    ..
                } => {
                    go(k, then_body, waited, out);
                    go(k, else_body, waited, out);
                }
                Stmt::Op(_) => {}
            }
        }
        waited.truncate(depth);
    }
    let mut out = Vec::new();
    go(k, &k.body, &mut Vec::new(), &mut out);
    out
}

/// (barrier, view) for every wait followed, later in the same block, by a copy into the view.
fn wait_copy_pairs(k: &Kernel, block: &Block, out: &mut Vec<(BarrierId, ViewId)>) {
    let mut waited: Vec<BarrierId> = Vec::new();
    for &s in block {
        match &k.stmts[s] {
            Stmt::Op(Op::Wait { barrier }) => waited.push(*barrier),
            Stmt::Op(Op::TmaLoad { dst, .. } | Op::CpAsync { dst, .. }) => {
                for b in &waited {
                    out.push((*b, dst.view));
                }
            }
            Stmt::Role { body, .. } | Stmt::Loop { body, .. } | Stmt::Ahead { body, .. } => {
                wait_copy_pairs(k, body, out)
            }
            Stmt::If {
                then_body,
                else_body,
                ..
            } => {
                wait_copy_pairs(k, then_body, out);
                wait_copy_pairs(k, else_body, out);
            }
            Stmt::Op(_) => {}
        }
    }
}

/// A role whose regions only issue asynchronous copies and wait/arrive on barriers runs on one
/// elected thread per replica: nothing in it needs the other threads, and fewer threads poll
/// the barriers.
pub(crate) fn is_issue_only(sites: &[OpSite], role: RoleId) -> bool {
    let mut ops = sites.iter().filter(|s| s.role == Some(role)).peekable();
    ops.peek().is_some()
        && ops.all(|s| {
            // tcgen05.mma is issued by a single thread, so an MMA role of TMEM accumulators is
            // issue-only too.
            matches!(
                s.op,
                Op::Wait { .. }
                    | Op::TmaLoad { .. }
                    | Op::TmemCopy { .. }
                    | Op::Arrive { .. }
                    | Op::Commit { .. }
                    | Op::Mma {
                        acc: Operand::Tmem(_),
                        ..
                    }
            )
        })
}

/// Whether the lowering defers the release of MMA `mma` (in a pipelined loop whose body is
/// `body`) by one iteration, keeping one wgmma group in flight. It does when the pipeline has at
/// least two stages (otherwise the producer would wait on the very stage being held), nothing
/// in the iteration reads the accumulator (which needs the MMA retired at once) and nothing in
/// it writes a register `a` operand (the next iteration would overwrite the registers the MMA
/// still reads).
pub fn defers_release(k: &Kernel, kf: &KernelFacts, body: &Block, mma: StmtId) -> bool {
    let Stmt::Op(Op::Mma {
        acc,
        a,
        release: Some(b),
        ..
    }) = &k.stmts[mma]
    else {
        return false;
    };
    if let Operand::Frag(af) = a {
        if block_writes_fragment(k, kf, body, *af) {
            return false;
        }
    }
    let Some(p) = k.barriers[*b].pipeline else {
        return false;
    };
    if k.pipelines[p].stages < 2 {
        return false;
    }
    match acc {
        Operand::Frag(f) => !block_reads_fragment(k, kf, body, *f),
        _ => true,
    }
}

fn block_writes_fragment(k: &Kernel, kf: &KernelFacts, body: &Block, f: FragId) -> bool {
    body.iter().any(|&s| match &k.stmts[s] {
        Stmt::Op(_) => kf
            .site(s)
            .is_some_and(|site| site.effects.frag_writes.contains(&f)),
        Stmt::Loop { body, .. } | Stmt::Role { body, .. } | Stmt::Ahead { body, .. } => {
            block_writes_fragment(k, kf, body, f)
        }
        Stmt::If {
            then_body,
            else_body,
            ..
        } => {
            block_writes_fragment(k, kf, then_body, f) || block_writes_fragment(k, kf, else_body, f)
        }
    })
}

fn block_reads_fragment(k: &Kernel, kf: &KernelFacts, body: &Block, f: FragId) -> bool {
    body.iter().any(|&s| match &k.stmts[s] {
        Stmt::Op(_) => kf.site(s).is_some_and(|site| {
            site.effects
                .exprs
                .iter()
                .any(|e| k.expr_reads_fragment(*e, f))
        }),
        Stmt::Loop { body, .. } | Stmt::Role { body, .. } | Stmt::Ahead { body, .. } => {
            block_reads_fragment(k, kf, body, f)
        }
        // A condition reads registers too (a warp vote, `lm.any(o > t)`).
        Stmt::If {
            cond,
            then_body,
            else_body,
        } => {
            k.expr_reads_fragment(*cond, f)
                || block_reads_fragment(k, kf, then_body, f)
                || block_reads_fragment(k, kf, else_body, f)
        }
    })
}

/// For a pipelined loop body, the double-buffered MMA it runs: `Some((wait, mma))` when the body
/// starts with a wait on the loop's pipeline followed by an `lm.mma` into a fragment with
/// `buffers=2` that starts fresh every iteration (`accumulate=False`), on a pipeline of at least
/// two stages. The lowering then issues iteration k+1's MMA before the rest of iteration k.
pub fn double_buffered_mma(
    k: &Kernel,
    body: &Block,
    pipeline: PipelineId,
) -> Option<(StmtId, StmtId)> {
    let (&w, &m) = (body.first()?, body.get(1)?);
    let Stmt::Op(Op::Wait { barrier }) = &k.stmts[w] else {
        return None;
    };
    let Stmt::Op(Op::Mma {
        acc: Operand::Frag(f),
        accumulate,
        ..
    }) = &k.stmts[m]
    else {
        return None;
    };
    let ok = k.fragments[*f].buffers == 2
        && k.barriers[*barrier].pipeline == Some(pipeline)
        && k.pipelines[pipeline].stages >= 2
        && matches!(k.exprs[*accumulate].kind, ExprKind::Bool(false));
    ok.then_some((w, m))
}

/// What a release ("empty") barrier frees for its waiters to overwrite: the views a role copies
/// into after waiting on it, in the same loop body, and the TMEM accumulators it releases (§11.3
/// of docs/language.md). Empty for a barrier that does not start free: only a release barrier
/// frees anything. A wait on another release barrier between the wait and a copy takes the copy
/// over (`wait(k_empty); load K; wait(v_empty); load V`: V is freed by `v_empty`), which is
/// sound for the hazards that read this: a copy is overwritten only once every release barrier
/// waited before it has been arrived on, the nearest one included.
pub fn freed_by(kf: &KernelFacts, b: BarrierId) -> Vec<Memory> {
    let f = &kf.barriers[b.index()];
    if !f.starts_free() {
        return Vec::new();
    }
    let mut out: Vec<Memory> = f.releases_tmem.iter().map(|t| Memory::Tmem(*t)).collect();
    for (i, w) in kf.ops.iter().enumerate() {
        if !matches!(w.op, Op::Wait { barrier } if barrier == b) {
            continue;
        }
        for s in &kf.ops[i + 1..] {
            // The copies of the wait's own block, as the derivation pairs them.
            if s.role != w.role || s.loops != w.loops {
                continue;
            }
            if matches!(s.op, Op::Wait { barrier } if barrier != b
                && kf.barriers[barrier.index()].starts_free())
            {
                break;
            }
            if matches!(s.op, Op::TmaLoad { .. } | Op::CpAsync { .. }) {
                for v in &s.effects.smem_writes {
                    if !out.contains(&Memory::View(v.view)) {
                        out.push(Memory::View(v.view));
                    }
                }
            }
        }
    }
    out
}

/// The parts of a pipelined loop body whose last MMA is deferred (`lm.mma(..., defer=True)`):
/// `body[..head]` is issued first every iteration (its leading waits and its first MMA),
/// `body[tail..]` is the deferred part (the deferred MMA and, right before it, its waits and the
/// updates of its accumulator), issued in the next iteration right after the head, and
/// everything between is the middle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeferredMma {
    pub head: usize,
    pub tail: usize,
}

/// For a loop body: `Ok(None)` when no statement of it is a deferred MMA, `Ok(Some(parts))`
/// when its deferred MMA fits the one shape deferral implements, and `Err((statement, why))`
/// otherwise. Moving the deferred part of iteration j − 1 after the head of iteration j is the
/// same program when the two commute: the head's MMA neither writes nor reads what the deferred
/// MMA reads or writes, and the head holds only waits besides its MMA.
pub fn deferred_mma(
    k: &Kernel,
    body: &Block,
    pipeline: Option<PipelineId>,
) -> Result<Option<DeferredMma>, (StmtId, String)> {
    let is_deferred = |s: StmtId| matches!(&k.stmts[s], Stmt::Op(Op::Mma { defer: true, .. }));
    let deferred: Vec<usize> = (0..body.len()).filter(|&i| is_deferred(body[i])).collect();
    let Some(&pos) = deferred.first() else {
        return Ok(None);
    };
    let at = body[pos];
    if deferred.len() > 1 {
        return Err((
            body[deferred[1]],
            "a loop body defers one MMA; this is its second".into(),
        ));
    }
    let Some(p) = pipeline else {
        return Err((
            at,
            "a deferred MMA belongs to a pipelined loop (`lm.range(..., pipeline=p)`)".into(),
        ));
    };
    if k.pipelines[p].stages < 2 {
        return Err((at, format!(
            "the loop's pipeline `{}` has 1 stage: a deferred MMA holds its stage into the next iteration, which needs a second",
            k.pipelines[p].name
        )));
    }
    if pos + 1 != body.len() {
        return Err((
            at,
            "a deferred MMA is the last statement of its loop body".into(),
        ));
    }
    // The deferred part: the MMA and, right before it, its waits and the updates of its
    // accumulator (`o[:] = o * alpha[:, None]`, the rescale before P·V).
    let Stmt::Op(Op::Mma {
        acc: deferred_acc, ..
    }) = &k.stmts[at]
    else {
        unreachable!("a deferred MMA");
    };
    let prepares = |s: StmtId| match &k.stmts[s] {
        Stmt::Op(Op::Wait { .. }) => true,
        Stmt::Op(Op::Assign { dst, .. }) => *deferred_acc == Operand::Frag(*dst),
        _ => false,
    };
    let mut tail = pos;
    while tail > 0 && prepares(body[tail - 1]) {
        tail -= 1;
    }
    let first_mma = body[..tail]
        .iter()
        .position(|&s| matches!(&k.stmts[s], Stmt::Op(Op::Mma { .. })));
    let leads_with_waits = |h: usize| {
        body[..h]
            .iter()
            .all(|&s| matches!(&k.stmts[s], Stmt::Op(Op::Wait { .. })))
    };
    let Some(h) = first_mma.filter(|&h| leads_with_waits(h)) else {
        return Err((at, "the loop body must start with its waits and an MMA, which the deferred MMA is issued after".into()));
    };
    let (
        Stmt::Op(Op::Mma {
            acc: head_acc,
            a: head_a,
            ..
        }),
        Stmt::Op(Op::Mma {
            acc: tail_acc,
            a: tail_a,
            ..
        }),
    ) = (&k.stmts[body[h]], &k.stmts[at])
    else {
        unreachable!("both are MMAs");
    };
    if head_acc == tail_acc {
        return Err((at, "the deferred MMA writes the same accumulator as the body's first MMA, which runs before it".into()));
    }
    if head_a == tail_acc {
        return Err((body[h], "the body's first MMA reads the deferred MMA's accumulator, which it would then read before the deferred MMA of the previous iteration wrote it".into()));
    }
    if tail_a == head_acc {
        return Err((at, "the deferred MMA reads the body's first MMA's accumulator, which the next iteration's first MMA overwrites before the deferred MMA runs".into()));
    }
    if let Operand::Frag(f) = head_acc {
        let reads_head = body[tail..pos].iter().find(|&&s| {
            matches!(&k.stmts[s], Stmt::Op(Op::Assign { value, .. }) if k.expr_reads_fragment(*value, *f))
        });
        if let Some(&s) = reads_head {
            return Err((s, "this update of the deferred MMA's accumulator reads the body's first MMA's accumulator, which the next iteration's first MMA overwrites before the update runs".into()));
        }
        if k.fragments[*f].buffers > 1 {
            return Err((body[h], "the body's first MMA writes a double-buffered fragment (buffers=2), which reorders the loop its own way".into()));
        }
    }
    Ok(Some(DeferredMma { head: h + 1, tail }))
}
