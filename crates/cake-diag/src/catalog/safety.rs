//! Safety rules (`CAKE-Sxxx`). Examples are the test files under tests/check/,
//! so every documented example is also a regression test.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const ARRIVAL_COUNT: CodeInfo = CodeInfo {
    code: "CAKE-S001",
    name: "arrival-count",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A barrier's declared arrival count differs from the arrivals the schedule makes per phase."#,
    explanation: r#"An mbarrier phase completes when the pending arrival count reaches zero (and all expected transaction bytes have landed). Cake derives the count per phase from the roles that arrive: one `arrive.expect_tx` per replica of a role whose TMA loads signal the barrier, every thread of a role for `lm.arrive` and `release=` (one per replica in an issue-only role). Too few arrivals hang the waiter; too many complete the phase early and race.

Drop `count=` and let the compiler derive it, or make the arrivals match."#,
    bad: include_str!("../../../../tests/check/CAKE-S001-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S001-good.py"),
};

pub const TX_LIMIT: CodeInfo = CodeInfo {
    code: "CAKE-S002",
    name: "tx-limit",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"The transaction bytes one barrier phase expects exceed the hardware limit."#,
    explanation: r#"The tx-count of an mbarrier phase is limited to 2^20 - 1 bytes. Cake derives it from the boxes of the TMA loads that signal the barrier in one phase; the sum must stay below the limit.

Split the loads over more barriers or stages."#,
    bad: include_str!("../../../../tests/check/CAKE-S002-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S002-good.py"),
};

pub const WAIT_WITHOUT_ARRIVALS: CodeInfo = CodeInfo {
    code: "CAKE-S003",
    name: "wait-without-arrivals",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A role waits on a barrier that nothing ever arrives on."#,
    explanation: r#"A wait completes only when the barrier's phase completes, which needs arrivals (or TMA completions). With none, the wait never returns and the kernel hangs.

Signal the barrier: `barrier=` on a TMA load, `release=` on an MMA, or `lm.arrive`."#,
    bad: include_str!("../../../../tests/check/CAKE-S003-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S003-good.py"),
};

pub const STAGE_UNBOUND: CodeInfo = CodeInfo {
    code: "CAKE-S004",
    name: "stage-unbound",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A staged view, staged TMEM region or pipeline barrier is used outside a loop bound to its pipeline."#,
    explanation: r#"Stage index and phase parity are derived from the enclosing `lm.range(..., pipeline=p)` loop. Outside such a loop there is no current stage, so the compiler cannot tell which buffer, which TMEM stage or which mbarrier is meant.

Move the operation into the pipelined loop (for a per-tile ring, a one-iteration `lm.range(1, pipeline=p)` per tile), or select a stage explicitly with `view.stage(i)` or `region.stage(i)`."#,
    bad: include_str!("../../../../tests/check/CAKE-S004-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S004-good.py"),
};

pub const STAGE_OVERWRITE: CodeInfo = CodeInfo {
    code: "CAKE-S005",
    name: "stage-overwrite",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A pipeline stage is rewritten without first waiting until every consumer released it (write-after-read)."#,
    explanation: r#"In a pipelined loop, the producer must wait on the pipeline's release barrier (one whose arrivals are `release=` or releases by consumers) before its TMA or cp.async overwrites the stage; otherwise it can overwrite data an MMA is still reading. The race is silent: sanitizers do not see TMA writes or wgmma reads.

Add `lm.wait(empty)` before the copy in the same iteration."#,
    bad: include_str!("../../../../tests/check/CAKE-S005-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S005-good.py"),
};

pub const READ_BEFORE_READY: CodeInfo = CodeInfo {
    code: "CAKE-S006",
    name: "read-before-ready",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"An operation reads a shared-memory view before waiting for the copy that fills it (read-after-write)."#,
    explanation: r#"A view filled by TMA or cp.async is valid only after the copy's completion barrier phase completes. A reader that does not wait on that barrier first reads stale or partial data.

Add `lm.wait(full)` (the barrier the copy signals) before the read."#,
    bad: include_str!("../../../../tests/check/CAKE-S006-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S006-good.py"),
};

pub const RELEASE_BEFORE_RETIRE: CodeInfo = CodeInfo {
    code: "CAKE-S007",
    name: "release-before-retire",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A stage is released with a plain arrive while asynchronous MMAs may still be reading it."#,
    explanation: r#"wgmma and tcgen05.mma read shared memory asynchronously: the instruction returns before the read happens. Arriving on the release barrier right after issuing them lets the producer overwrite the stage under the MMA. `release=` on `lm.mma` arrives only after the MMA has retired (wgmma.wait_group / tcgen05.commit).

Use `lm.mma(..., release=empty)` instead of `lm.arrive(empty)`.

After a loop of MMAs the two families differ. On sm_90a the loop's end waits for every wgmma it issued (`wgmma.wait_group 0`), so a plain arrive after it is safe: a two-ring schedule releases its outer ring's stage that way after the inner loop over the other ring. A tcgen05 MMA completes only through a commit, so the same arrive after a loop of tcgen05 MMAs is this error: use `lm.commit(empty)`, which arrives once they complete. A wait between the loop and the arrive orders them only when the role's own commit arrives on the barrier it waits on."#,
    bad: include_str!("../../../../tests/check/CAKE-S007-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S007-good.py"),
};

pub const PROXY_FENCE: CodeInfo = CodeInfo {
    code: "CAKE-S008",
    name: "proxy-fence",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"Shared memory written through the generic proxy (stores, cp.async) is read by the async proxy without a proxy fence."#,
    explanation: r#"Stores from threads (st.shared, stmatrix) go through the generic proxy; TMA stores, wgmma and tcgen05 read through the async proxy. Without `fence.proxy.async.shared::cta` by the writing threads between the two, the async read may see stale data, intermittently.

Add `lm.fence_proxy_async()` after the writes and before the handoff.

Per-thread `cp_async` copies write through the generic proxy too, but they land after the issuing thread has moved on: it arrives on the copies' barrier before their data is in shared memory, so it has nothing to fence. The role that reads the view with wgmma or tcgen05 fences instead, after its `lm.wait` on that barrier and before the read."#,
    bad: include_str!("../../../../tests/check/CAKE-S008-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S008-good.py"),
};

pub const SMEM_ALIGNMENT: CodeInfo = CodeInfo {
    code: "CAKE-S009",
    name: "smem-alignment",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A view's explicit offset breaks the alignment its swizzle or TMA needs."#,
    explanation: r#"TMA destinations need 128-byte alignment, and the swizzle pattern uses absolute address bits, so a swizzled view must start at a multiple of 8 × its swizzle span (1024 B for 128-byte swizzle). A misaligned base produces silently wrong data.

Use an offset that is a multiple of the alignment in the finding, or let the compiler pack the view."#,
    bad: include_str!("../../../../tests/check/CAKE-S009-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S009-good.py"),
};

pub const VIEW_OVERLAP: CodeInfo = CodeInfo {
    code: "CAKE-S010",
    name: "view-overlap",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"Two views occupy overlapping shared memory."#,
    explanation: r#"Views with explicit offsets may alias only if their lifetimes never overlap; Cake does not yet prove lifetimes, so any overlap is an error.

Move one view, or let the compiler pack both."#,
    bad: include_str!("../../../../tests/check/CAKE-S010-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S010-good.py"),
};

pub const POOL_OVERFLOW: CodeInfo = CodeInfo {
    code: "CAKE-S011",
    name: "pool-overflow",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"The views placed in a pool need more bytes than the pool's declared size."#,
    explanation: r#"`lm.smem(size)` declares a pool of `size` bytes; its views (every stage, with alignment padding) are placed inside it. If they need more, the pool's declared size is a lie: memory the author believed free (or another pool) would be overwritten.

Drop the size and let the compiler size the pool, or shrink the views."#,
    bad: include_str!("../../../../tests/check/CAKE-S011-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S011-good.py"),
};

pub const DEADLOCK: CodeInfo = CodeInfo {
    code: "CAKE-S012",
    name: "deadlock",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"Bounded exploration of the roles' interleavings reaches a state where every unfinished role waits forever."#,
    explanation: r#"The verifier unrolls each role for small scenarios (zero, one and two tiles; every distinct loop range that depends on the shape running zero times, once, and one more time than the deepest pipeline has stages; a range with constant bounds runs its own trip count) and simulates the mbarrier phases the lowering emits. If every role that has not finished is blocked on a wait whose phase can no longer complete, the kernel would hang on the GPU, where no sanitizer reports it. The finding names the scenario, the barrier, stage and phase each blocked role waits for.

Make every wait's arrivals happen on every path, in an order that lets each role progress: a role must not wait for something that another role does only after waiting for the first role."#,
    bad: include_str!("../../../../tests/check/CAKE-S012-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S012-good.py"),
};

pub const PHASE_OVERRUN: CodeInfo = CodeInfo {
    code: "CAKE-S013",
    name: "phase-overrun",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A barrier slot completes two phases ahead of a role still waiting on it, so the parity bit aliases."#,
    explanation: r#"`mbarrier.try_wait.parity` can only tell the current phase from the one before it. If a producer signals a slot again before a consumer has waited for the earlier phase, the consumer either passes a phase it never saw (reading a stage that was overwritten) or waits for a parity that will not come back. The exploration runs producers as far ahead as they can go, which finds this.

Make the producer wait for the consumer's release before signalling the slot again, or give each handoff its own barrier."#,
    bad: include_str!("../../../../tests/check/CAKE-S013-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S013-good.py"),
};

pub const TMEM_READ_BEFORE_READY: CodeInfo = CodeInfo {
    code: "CAKE-S014",
    name: "tmem-read-before-ready",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A TMEM accumulator is read before waiting for the commit that follows the MMAs writing it."#,
    explanation: r#"tcgen05.mma writes TMEM asynchronously. The reading role may load the accumulator (`lm.tmem_load`) only after it waits on a barrier that the MMA role signals with `lm.commit` after its MMAs (tcgen05.commit → mbarrier arrive; the reader then waits, fences and loads). Without that wait the load returns partial sums.

Have the MMA role `lm.commit(done)` after the MMAs and the reader `lm.wait(done)` before `lm.tmem_load`.

A loop-carried handoff is accepted too: the wait comes later in the body of a loop, so iteration j's wait covers iteration j + 1's load, provided the load sits under an `if` on that loop's variable inside the loop (`if j > 0:`), which keeps the first iteration from loading before anything was written. An `if` on anything else does not count."#,
    bad: include_str!("../../../../tests/check/CAKE-S014-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S014-good.py"),
};

pub const TMA_OOB_FILL: CodeInfo = CodeInfo {
    code: "CAKE-S015",
    name: "tma-oob-fill",
    category: Category::Safety,
    severity: Severity::Warning,
    summary: r#"A TMA box runs past a fixed tensor extent, so the last tile is zero-filled."#,
    explanation: r#"TMA fills box elements outside the tensor with zeros. For a sum over K that is harmless, but for a min, an argmin or a softmax the zeros are real-looking values (a phantom centroid at the origin, a score of 0) unless the kernel masks them. When a tensor extent is fixed and not a multiple of the box, Cake says so, unless the zeros cannot reach a result: every read of the filled view is an MMA operand (zeros along K add nothing; zero rows make accumulator rows or columns of their own), and everything computed from those accumulators is element-wise on its way to stores, which skip elements past their tensor. A reduction or a warp vote over those values, an MMA that contracts them, or any other reader of the view keeps the warning.

Mask the tail before the reduction, or choose a box that divides the extent."#,
    bad: include_str!("../../../../tests/check/CAKE-S015-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S015-good.py"),
};

pub const ROWS_OUT_OF_RANGE: CodeInfo = CodeInfo {
    code: "CAKE-S016",
    name: "rows-out-of-range",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A `view.rows(start, n)` range whose start is computed at run time can run past the view."#,
    explanation: r#"Every replica of a role runs its operations, each with its own `role.index` (0 for the first warpgroup or warp, 1 for the next, ...). A row range computed from it, such as `sX.rows(math.index * 64, 64)`, must lie inside the view for every replica: past the last row, the replica reads or writes whatever shared memory follows the view (another view, another stage, or nothing). The front-end checks ranges whose start is a constant; this rule evaluates the start for each replica. A start that also reads other run-time values (a loop variable, a tile coordinate) must be shown in range from what they run over, narrowed by the run-time `if`s around the access (a `lm.range(n)` variable is 0..=n-1, `% n` is 0..=n-1, and under `if k < 2:` it is 0..=1): `sA.rows(k * 64, 64)` in a loop over K has no upper bound the verifier can see.

Size the view for all replicas (rows = replicas × n), or give the role as many replicas as the view has ranges."#,
    bad: include_str!("../../../../tests/check/CAKE-S016-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S016-good.py"),
};

pub const MULTICAST_UNGUARDED: CodeInfo = CodeInfo {
    code: "CAKE-S017",
    name: "multicast-unguarded",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A multicast TMA load may overwrite a stage that another CTA of the cluster is still reading."#,
    explanation: r#"A multicast load writes its share of the box into the view in every CTA of the cluster. The barrier a producer waits on before it must therefore count the releases of the readers in all of those CTAs: with a CTA barrier, a producer refills the stage as soon as its own CTA's consumers are done, while a peer's consumers may still be reading it (and the peer's full barrier may receive bytes of the next phase early). Declare the barrier that guards the stage with `cluster=True`, so each release arrives in every CTA and a stage is free only when the whole cluster has released it.

Wait on a cluster barrier (`lm.barrier(..., cluster=True)`) before every multicast load."#,
    bad: include_str!("../../../../tests/check/CAKE-S017-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S017-good.py"),
};

pub const CLUSTER_DIVERGENCE: CodeInfo = CodeInfo {
    code: "CAKE-S018",
    name: "cluster-divergence",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"The CTAs of a cluster would disagree about a multicast box or about how often they synchronise."#,
    explanation: r#"In a cluster of n CTAs, `lm.tiles` gives the CTAs n neighbouring tiles of the first axis and the same tiles of the others: the first tile index is the only value that differs between them. A multicast load delivers one box to all of them, so its coordinates must not depend on that index (each CTA would deliver a share of a different box). Likewise the loops and `if`s around a multicast load or an operation on a cluster barrier must run the same number of times in every CTA, or a CTA waits for shares and arrivals its peers never send: a deadlock.

Multicast the operand that the cluster's tiles share (B, indexed by the second tile axis, when the CTAs split M), and keep trip counts independent of the first tile index."#,
    bad: include_str!("../../../../tests/check/CAKE-S018-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S018-good.py"),
};

pub const TMEM_OVERWRITE: CodeInfo = CodeInfo {
    code: "CAKE-S019",
    name: "tmem-overwrite",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A persistent kernel's MMAs overwrite a TMEM accumulator that another role may still be reading."#,
    explanation: r#"In a persistent kernel each CTA runs several tiles, and the MMAs of the next tile write the TMEM accumulator again. The role that reads it (`lm.tmem_load`, usually the epilogue) runs concurrently: without synchronisation the next tile's first MMA can overwrite values the epilogue has not read yet. The MMA role must wait, before its first MMA of each tile, on a barrier that the readers arrive on after their last `lm.tmem_load` of the accumulator — an "accumulator empty" barrier. Cake derives that such a barrier starts free (language.md §11.3), so the first tile does not wait.

Declare `acc_empty = lm.barrier(producers=[epilogue], consumers=[mma])`, `lm.wait(acc_empty)` in the MMA role before the tile's K loop, and `lm.arrive(acc_empty)` in the epilogue after `lm.tmem_load`."#,
    bad: include_str!("../../../../tests/check/CAKE-S019-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S019-good.py"),
};

pub const RELEASE_BEFORE_READ: CodeInfo = CodeInfo {
    code: "CAKE-S020",
    name: "release-before-read",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A role releases a stage or an accumulator before its last read of it in the same iteration."#,
    explanation: r#"A release barrier ("empty") tells the producer that the buffers behind it may be overwritten: the stage of the views its waiters copy into next, or the TMEM accumulator its waiters' MMAs write next. The release must come after every read of those buffers by the releasing role in that iteration. `lm.arrive` and `lm.commit` release at once (after the role's earlier accesses); `release=` on an MMA releases once that MMA has retired, not the MMAs issued after it. A read placed after the release — a `scatter_add`, an `ldmatrix` or plain load, an `lm.tmem_load`, or a later MMA of the same iteration (the release put on Q·Kᵀ while P·V still reads V) — races with the producer's next copy or MMA.

Move the `lm.arrive`/`lm.commit` after the last read, or put `release=` on the last MMA that reads the stage."#,
    bad: include_str!("../../../../tests/check/CAKE-S020-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S020-good.py"),
};

pub const WAIT_BEFORE_COPY: CodeInfo = CodeInfo {
    code: "CAKE-S021",
    name: "wait-before-copy",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A role waits on a barrier that copies complete before issuing, in the same iteration, the copies it guards."#,
    explanation: r#"A "full" barrier completes when the TMA loads or cp.async copies that signal it have landed; the wait on it belongs after those copies are issued and before the reads. A wait placed above them cannot wait for them: either it waits for a phase that only its own later copies complete (a deadlock), or — because a wait that precedes a copy is how Cake recognises a release barrier (docs/language.md §11.3) — the barrier is derived to start free, the wait passes on the first round of every stage, and the reads after it see a stage whose copy has not landed.

Move the wait below the copies that signal the barrier, just before the first read."#,
    bad: include_str!("../../../../tests/check/CAKE-S021-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S021-good.py"),
};

pub const CONDITIONAL_ARRIVAL: CodeInfo = CodeInfo {
    code: "CAKE-S022",
    name: "conditional-arrival",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"An arrival on a barrier runs only on some paths of a run-time `if`, but the barrier's waits or other arrivals run on others."#,
    explanation: r#"Cake derives a barrier's arrival count (and transaction bytes) per phase from its arrival sites, each counted once per phase. An arrival inside a run-time `if` (`if j > 0:`, `if math.index == 0:`) runs only on the iterations or replicas where the condition holds: on the others the phase gets fewer arrivals than it needs and its waiter hangs; an `if`/`else` pair of arrivals is counted twice though each path makes one. This is safe only when every wait on the barrier and every other arrival on it sit under the same condition, so that a phase is either made and awaited in full or skipped by both sides.

Make the arrival unconditional, or put the waits (and the other arrivals) under the same condition."#,
    bad: include_str!("../../../../tests/check/CAKE-S022-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S022-good.py"),
};

pub const DIVERGENT_COLLECTIVE: CodeInfo = CodeInfo {
    code: "CAKE-S023",
    name: "divergent-collective",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"An operation that needs more than one warp runs in a branch on a warp vote."#,
    explanation: r#"`lm.any(cond)` and `lm.all(cond)` give one answer per warp (`vote.sync`), not per role: in `if lm.any(...):` each warp of a warpgroup takes or skips the branch on its own. Register math is safe there. An operation that the warps of a replica perform together is not: a wgmma (all four warps of the warpgroup issue it), an arrival or release (the barrier counts every thread of the role per phase), a wait or named-barrier sync (the others never arrive), a TMA copy issued by one elected thread for the whole replica, a store into shared memory that the replica synchronises around. Run on some warps only, these hang, race, or do part of the work.

Keep only per-thread work (fragment updates, `lm.store` of registers, warp-level `ldmatrix` or mma.sync) under the vote, and move the rest out of the branch."#,
    bad: include_str!("../../../../tests/check/CAKE-S023-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S023-good.py"),
};

pub const TILE_OVERWRITE: CodeInfo = CodeInfo {
    code: "CAKE-S024",
    name: "tile-overwrite",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A persistent kernel's copy overwrites, for the next tile, a shared-memory view another role may still be reading."#,
    explanation: r#"In a persistent kernel each CTA runs several tiles. A copy into a view outside the pipelined loops (a tile's Q block in attention, a per-tile operand) runs once per tile, and the role that issues it runs ahead of the roles that read the view: without synchronisation the next tile's copy lands while the MMAs of this tile still read the view, and they compute with the wrong tile's data. The copying role must wait, before the copy, on a barrier that the readers arrive on once they are done with the view — a "view empty" barrier, which Cake derives as starting free so that the first tile does not wait. (Staged views in pipelined loops are checked per stage by `CAKE-S005`.)

Declare `q_empty = lm.barrier(producers=[math], consumers=[load])`, `lm.wait(q_empty)` in the copying role before the copy, and `lm.arrive(q_empty)` in the readers after their last read (after the loop of MMAs that read it)."#,
    bad: include_str!("../../../../tests/check/CAKE-S024-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S024-good.py"),
};

pub const PEER_READ_UNPUBLISHED: CodeInfo = CodeInfo {
    code: "CAKE-S025",
    name: "peer-read-unpublished",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A read of a cluster peer's view (`view.load(cta=...)`) is not ordered after the peer's writes."#,
    explanation: r#"Each CTA of a cluster writes its own copy of a view with ordinary shared-memory stores (`view.store`). Another CTA may read that copy (`view.load(cta=c)`) only once the writes are published to it: the writing role arrives, after its stores, on a cluster barrier (`lm.barrier(..., cluster=True)`: its arrivals release at cluster scope in every CTA), and the reading role waits on that barrier before the read (a wait that acquires at cluster scope). Without that wait the read races the peer's stores and returns stale or partial data — the sum of a split-K reduction comes out wrong only sometimes.

Declare `parts = lm.barrier(producers=[math], consumers=[math], cluster=True)`; after `view.store(...)`, `lm.arrive(parts)`; before `view.load(cta=...)`, `lm.wait(parts)`."#,
    bad: include_str!("../../../../tests/check/CAKE-S025-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S025-good.py"),
};

pub const TMA_COORD_MISALIGNED: CodeInfo = CodeInfo {
    code: "CAKE-S026",
    name: "tma-coord-misaligned",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A TMA copy's innermost coordinate is not a multiple of 16 bytes, so its box can start between two 16-byte boundaries."#,
    explanation: r#"A tensor copy (`tma_load`, `tma_store`) moves a box whose start along the tensor's innermost dimension must lie on a 16-byte boundary: 8 bf16 elements, 4 f32 or i32 ones, 16 FP8 ones. A box that starts anywhere else stops the kernel with an illegal instruction (measured on the H200: copies of i32 ids whose boxes started at `b * N` elements for an N not a multiple of 4). The tensor's base address and its row pitch are checked when the kernel is launched; the coordinate is the schedule's, so Cake derives what it is always a multiple of from its constants, sums and products, and reports a coordinate whose derived multiple is not 16 bytes.

Start boxes at multiples of the box width (`k * BK`, `tn * BN`), keep offsets added to them multiples of 16 bytes, or copy them with the role's own threads instead of TMA: `view.cp_async` into shared memory (4- and 8-byte elements at any alignment), `view.copy_to` out of it (docs/language.md §9.3, §9.3a)."#,
    bad: include_str!("../../../../tests/check/CAKE-S026-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S026-good.py"),
};

pub const STREAM_PARTIAL: CodeInfo = CodeInfo {
    code: "CAKE-S027",
    name: "stream-partial",
    category: Category::Safety,
    severity: Severity::Error,
    summary: r#"A stream-K schedule writes an output from a run that holds only part of its tile's sum, or fixes a partial up on some paths only."#,
    explanation: r#"A stream-K tile loop (`for tn, k0, k1 in lm.tiles(n, stream=KB)`) splits every tile's KB steps of K over the CTAs of a persistent grid, so a tile's sum is spread over the runs of several CTAs. `lm.stream_fixup(acc)` brings it together: a run that stops before the tile's last step publishes its accumulator, and the run that ends the tile (`k1 == KB`) waits for and adds every earlier run's partial. Each warp of a publishing run is paired with the same warp of the adding run, so every run must call it.

Four mistakes break the sum: storing the accumulator from every run (the partial runs overwrite or race the tile's sum), storing an accumulator that was never fixed up, or a fragment assigned from it before its fix-up (the fix-up adds into the accumulator, not into copies of it: the tile holds only its last run's steps), calling the fix-up under a run-time `if` (a run that skips it never publishes, and the run waiting for it spins forever), and fixing one accumulator up twice in a run (the second waits for partials nobody publishes again).

After the run's K loop, call `lm.stream_fixup(acc)` unconditionally, then write the tile under `if k1 == KB:` (docs/language.md §8.1a)."#,
    bad: include_str!("../../../../tests/check/CAKE-S027-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-S027-good.py"),
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[
    &ARRIVAL_COUNT,
    &TX_LIMIT,
    &WAIT_WITHOUT_ARRIVALS,
    &STAGE_UNBOUND,
    &STAGE_OVERWRITE,
    &READ_BEFORE_READY,
    &RELEASE_BEFORE_RETIRE,
    &PROXY_FENCE,
    &SMEM_ALIGNMENT,
    &VIEW_OVERLAP,
    &POOL_OVERFLOW,
    &DEADLOCK,
    &PHASE_OVERRUN,
    &TMEM_READ_BEFORE_READY,
    &TMA_OOB_FILL,
    &ROWS_OUT_OF_RANGE,
    &MULTICAST_UNGUARDED,
    &CLUSTER_DIVERGENCE,
    &TMEM_OVERWRITE,
    &RELEASE_BEFORE_READ,
    &WAIT_BEFORE_COPY,
    &CONDITIONAL_ARRIVAL,
    &DIVERGENT_COLLECTIVE,
    &TILE_OVERWRITE,
    &PEER_READ_UNPUBLISHED,
    &TMA_COORD_MISALIGNED,
    &STREAM_PARTIAL,
];
