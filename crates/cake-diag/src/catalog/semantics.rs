//! Semantics rules (`CAKE-Mxxx`). Examples are the test files under tests/check/,
//! so every documented example is also a regression test.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const ROLE_OVERLAP: CodeInfo = CodeInfo {
    code: "CAKE-M001",
    name: "role-overlap",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"Two roles claim the same warp."#,
    explanation: r#"Roles partition the CTA's warps: each warp runs exactly one role branch. A warp claimed by two roles would have to run both branches, which the hardware cannot do; the second region would silently never run on it, and every barrier count derived from the role's thread count would be wrong.

Give each role its own warps or warpgroups. `warpgroup=i` means warps 4i..4i+3."#,
    bad: include_str!("../../../../tests/check/CAKE-M001-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M001-good.py"),
};

pub const BARRIER_ROLES: CodeInfo = CodeInfo {
    code: "CAKE-M002",
    name: "barrier-roles",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"A barrier's declared producers or consumers do not match the roles that really arrive on it and wait on it."#,
    explanation: r#"`lm.barrier(producers=[...], consumers=[...])` states the handoff: producers arrive (or their TMA loads complete on it), consumers wait. Arrival counts are derived from the roles that actually arrive, so a role that arrives without being declared a producer, or waits without being declared a consumer, means the schedule and its declaration disagree about who synchronises with whom. A declared producer that never arrives, or a declared consumer that never waits, is reported as a warning.

When the role is declared on exactly one other barrier of the same ring (a wait on "empty" by the role that consumes "full"), the finding names that barrier as the one most likely meant, rather than suggesting a declaration that would make the wrong handoff legal; the findings that follow from the mistake (reads no wait now orders, the other barrier's consumer that never waits) carry a label on it.

Fix the declaration or the operations so they describe the same handoff."#,
    bad: include_str!("../../../../tests/check/CAKE-M002-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M002-good.py"),
};

pub const STAGE_MISMATCH: CodeInfo = CodeInfo {
    code: "CAKE-M003",
    name: "stage-mismatch",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"Stage counts disagree between a view or TMEM region, a barrier and the pipeline loop that uses them."#,
    explanation: r#"A staged view (or TMEM region) holds one buffer per pipeline stage, and a barrier bound to a pipeline has one mbarrier per stage. Inside `lm.range(..., pipeline=p)` the stage index is the iteration count modulo p's stage count, so every staged view and region used there must have exactly p's number of stages (or name its stage, `v.stage(q.stage)` of a pipeline q of its depth) and every barrier must be bound to p; otherwise the derived stage index walks off the end of the buffer or pairs a buffer with the wrong barrier. An explicit stage that can name a stage the place does not have (a constant past the last, `q.stage` of a pipeline of another depth, or any other index not shown to stay within the place's stages where it is used, such as `sA.stage(k + 1)`; the run-time `if`s around the use narrow its variables, so under `if k < 3:` that stage is 1..=3) is the same mistake: the lowering adds the stage to the place's address as written, so a stage past either end overwrites another place. Index `//` and `%` floor as in Python, so `(k - 1) % n` is always a stage, while `k - 1` is -1 at `k = 0`.

A single buffer handed from one role to another through a ring of several stages is one too: the ring lets the writer run a stage ahead, so it refills the buffer while the reader still reads it. So is a stage of its own (`sA.stage(0)`, or any index other than the ring's stage) on one access of a staged view or region while another access, one of them a write, takes the ring's stage in loops over that ring: the ring's barriers hand over one stage at a time, so the fixed-stage access is ordered with none of them.

Declare the view or region with `stages=` equal to the pipeline's stages, and bind the barrier to the same pipeline."#,
    bad: include_str!("../../../../tests/check/CAKE-M003-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M003-good.py"),
};

pub const TRIP_COUNT_MISMATCH: CodeInfo = CodeInfo {
    code: "CAKE-M004",
    name: "trip-count-mismatch",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"Roles that share a pipeline run different numbers of iterations."#,
    explanation: r#"Producer and consumer advance a shared pipeline in lock step: every stage the producer fills, the consumer must drain, and vice versa. If one role's pipelined loop runs more iterations than the other's, the longer one waits for a phase that never completes: a deadlock, or a producer that gets more than one phase ahead and aliases the parity bit.

Drive every loop bound to one pipeline with the same bounds (the same expression over the same dimensions)."#,
    bad: include_str!("../../../../tests/check/CAKE-M004-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M004-good.py"),
};

pub const UNUSED_RESOURCE: CodeInfo = CodeInfo {
    code: "CAKE-M005",
    name: "unused-resource",
    category: Category::Semantics,
    severity: Severity::Warning,
    summary: r#"A declared resource is never used."#,
    explanation: r#"A view, barrier, pipeline, fragment, TMEM region or role that no operation uses still costs shared memory, registers or warps, and usually means the schedule is not what the author thinks it is. Remove it, or use it.

A tensor parameter that nothing loads or stores is reported too: usually an input loaded in place of another, or an output whose store was lost. A parameter kept in the signature on purpose (an API that passes more than the kernel needs) is marked with `del NAME` in the schedule's body, the Python idiom for an argument left unused."#,
    bad: include_str!("../../../../tests/check/CAKE-M005-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M005-good.py"),
};

pub const NAMED_BARRIER_ROLES: CodeInfo = CodeInfo {
    code: "CAKE-M006",
    name: "named-barrier-roles",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"A role synchronises on a named barrier it is not declared on, or a declared role never does."#,
    explanation: r#"A named barrier (`bar.sync id, threads`) releases when the declared number of threads arrive; Cake derives the id and the thread count from `lm.named_barrier(roles=[...])`. A role that syncs without being declared changes the count at run time (early release or hang); a declared role that never syncs leaves the others waiting forever.

List exactly the roles that call `lm.sync` on it."#,
    bad: include_str!("../../../../tests/check/CAKE-M006-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M006-good.py"),
};

pub const BUFFERED_FRAGMENT: CodeInfo = CodeInfo {
    code: "CAKE-M007",
    name: "buffered-fragment",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"A double-buffered fragment is used outside the one pattern double buffering implements."#,
    explanation: r#"`role.fragment(..., buffers=2)` keeps two register copies of an MMA accumulator so the MMA of a pipelined loop's next iteration runs while the rest of the current iteration (an epilogue) reads the current copy. That is only the same program when the fragment is the accumulator of exactly one `lm.mma`, which is the loop body's second statement right after its `lm.wait` on the loop's pipeline, starts fresh every iteration (`accumulate=False`), and is read only inside that loop body; the pipeline needs at least two stages.

Use `buffers=1`, or restructure the loop into that shape."#,
    bad: include_str!("../../../../tests/check/CAKE-M007-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M007-good.py"),
};

pub const REPLICATED_SCATTER: CodeInfo = CodeInfo {
    code: "CAKE-M008",
    name: "replicated-scatter",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"A `scatter_add` is issued by a role of more than one replica, so every row would be added once per replica."#,
    explanation: r#"Operations in a role region run on every replica of the role (each warpgroup of `warpgroups=[...]`, each warp of `warps=[...]`). A `scatter_add` adds all the rows of its source view into a shared view, so a role of n replicas adds each row n times: the sums come out n times too large, and the counts too.

Issue it from a role of one warpgroup (or one warp), whose threads share the rows between them, or give each replica its own rows of the view: `sSum.rows(math.index * n, n).scatter_add(..., offset=base + math.index * n)` adds into disjoint rows."#,
    bad: include_str!("../../../../tests/check/CAKE-M008-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M008-good.py"),
};

pub const OUTPUT_COVERAGE: CodeInfo = CodeInfo {
    code: "CAKE-M009",
    name: "output-coverage",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"An output is not written on every path, or the stores of one tile do not cover the tile the loop advances by."#,
    explanation: r#"Every element of an output must be written by some tile. Cake follows each store's coordinates (`lm.store`, `.tma_store`) through the tile loop: a tile axis counted `lm.cdiv(M, BM)` moves `BM` rows of `M` per tile, so the coordinate must step by `BM` and the stores of one tile (over every replica of the storing role) must write exactly rows `0..BM` of it. Fewer rows leave the rest of every tile unwritten (a knob that grows `BM` past what the consumers store); more rows write into the next tile. A store whose coordinate does not move with a tile axis that walks one of the output's dimensions writes the same elements from every tile, and one moved by the axis of another dimension (`tm` in the `N` coordinate) writes other tiles' elements. Fixed-size dimensions must be covered whole. A store under a run-time `if` counts only when the other branch writes the same output, or when the condition picks among tiles or iterations that write the same elements (`if ds == 0:` for an output without a `ds` axis). A store that two replicas of its role run on the same elements (no `role.index` in its coordinates) repeats the work once per replica, and the values race when they differ. A kernel that writes no global memory at all does nothing. Atomic adds (`lm.scatter_add`, `.tma_store(..., reduce="add")`) are not counted as writes of a tile: adds into one element commute, so tiles may overlap (split-K, split-N); a tensor written only by them is covered by the decorator's `zero=`.

Store every row of the tile (one store per replica's slice, or one for the whole tile), step the coordinate by the tile extent, and write each output on every path."#,
    bad: include_str!("../../../../tests/check/CAKE-M009-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M009-good.py"),
};

pub const ALIASED_OPERANDS: CodeInfo = CodeInfo {
    code: "CAKE-M010",
    name: "aliased-operands",
    category: Category::Semantics,
    severity: Severity::Warning,
    summary: r#"Both operands of an MMA are filled from one tensor while another tensor of the same dtype is never read."#,
    explanation: r#"`lm.mma(acc, a, b)` with `a` and `b` both copied from `A` computes A·Aᵀ. That is sometimes meant (a Gram matrix), but when another input of the same dtype and rank is declared and nothing reads it, the usual cause is a copy that names the wrong tensor (`sB.tma_load(A, ...)`). A heuristic, so a warning.

Load each operand from its own tensor, or `del` the unused parameter if A·Aᵀ is intended."#,
    bad: include_str!("../../../../tests/check/CAKE-M010-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M010-good.py"),
};

pub const DEFERRED_MMA: CodeInfo = CodeInfo {
    code: "CAKE-M011",
    name: "deferred-mma",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"An MMA with `defer=True` is not where deferring it keeps the program the same."#,
    explanation: r#"`lm.mma(..., defer=True)` issues a pipelined loop's last MMA one iteration late: the deferred part of iteration j − 1 (the MMA and, right before it, its waits and the updates of its accumulator) is issued in iteration j right after that iteration's first MMA, and the last iteration's after the loop. Inside a warpgroup this overlaps the deferred MMA with the work between the two (FlashAttention-3's P·V of tile j − 1 with the softmax of tile j). That is the program as written only when the two parts commute and the deferred MMA has a stage to hold: it must be the last statement of the body of a loop over a pipeline of two or more stages; the body must start with its waits and an MMA; that first MMA must neither write nor read the deferred MMA's accumulator, nor be read by it; and the updates deferred with it must not read the first MMA's accumulator. One MMA per loop body may be deferred, and not in a loop that double-buffers its first MMA's accumulator (`buffers=2`).

Move the deferred MMA (and its wait) to the end of the loop body, start the body with the MMA it should overlap, or drop `defer=True`."#,
    bad: include_str!("../../../../tests/check/CAKE-M011-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M011-good.py"),
};

pub const MMA_TURNS: CodeInfo = CodeInfo {
    code: "CAKE-M012",
    name: "mma-turns",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"An MMA with `turns=True` is issued where the role's replicas would not all take their turns."#,
    explanation: r#"`lm.mma(..., turns=True)` makes the replicas of its role issue the MMA in turns, round-robin: replica r waits on a hardware barrier until replica r − 1 has issued its own, then lets replica r + 1 go (FlashAttention-3's ping-pong: one warpgroup's MMAs run while the other computes its softmax). Each turn needs the previous replica's, so every replica must take the same turns in the same order: the role needs two or more replicas, and the MMA must not sit under an `if` whose condition, or in a loop whose bounds, read `role.index` (tile coordinates, loop variables and dimensions are the same for every replica of a CTA). A replica that skips a turn leaves the next one waiting forever.

Give every replica the same conditions and trip counts (mask the data, not the MMA), or drop `turns=True`."#,
    bad: include_str!("../../../../tests/check/CAKE-M012-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M012-good.py"),
};

pub const AHEAD_REGION: CodeInfo = CodeInfo {
    code: "CAKE-M013",
    name: "ahead-region",
    category: Category::Semantics,
    severity: Severity::Error,
    summary: r#"A `with lm.ahead(n):` region is not where issuing it n iterations early keeps the program the same."#,
    explanation: r#"`with lm.ahead(n):` opening the body of `for k in lm.range(..., pipeline=p):` issues the region's statements for iteration k in iteration k − n (those of the first n iterations before the loop), so one role keeps n iterations' copies in flight while it computes on an earlier stage: the classic multistage cp.async pipeline of an Ampere GEMM, written as the loop of one iteration. The verifier checks the program as written, and the explorer runs the regions where the lowering issues them; what makes the two the same is checked here. The region must be the first statement of a pipelined `lm.range` loop's body (then the waits that guard its copies are in it); it holds only `lm.wait` on barriers bound to that pipeline and copies (`cp_async`, `tma_load`) into views of the pipeline's stage count, signalling its barriers, whose coordinates read no register (iterations in between may change a fragment); and n is at most the pipeline's stages − 1, so the copy of iteration k + n fills a stage that iterations k to k + n − 1 do not read.

Move the region to the top of the loop body, keep only the iteration's waits and copies in it, or issue fewer iterations early."#,
    bad: include_str!("../../../../tests/check/CAKE-M013-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-M013-good.py"),
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[
    &ROLE_OVERLAP,
    &BARRIER_ROLES,
    &STAGE_MISMATCH,
    &TRIP_COUNT_MISMATCH,
    &UNUSED_RESOURCE,
    &NAMED_BARRIER_ROLES,
    &BUFFERED_FRAGMENT,
    &REPLICATED_SCATTER,
    &OUTPUT_COVERAGE,
    &ALIASED_OPERANDS,
    &DEFERRED_MMA,
    &MMA_TURNS,
    &AHEAD_REGION,
];
