//! Conformance rules (`CAKE-Cxxx`). Examples are the test files under tests/check/,
//! so every documented example is also a regression test.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const INSTRUCTION_UNAVAILABLE: CodeInfo = CodeInfo {
    code: "CAKE-C001",
    name: "instruction-unavailable",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"An operation needs an instruction family the target does not have."#,
    explanation: r#"Cake compiles for one exact target and never substitutes a slower instruction: wgmma exists only on sm_90a, tcgen05 and TMEM only on sm_100a/sm_103a, TMA and clusters from sm_90, FP8 mma.sync from sm_89, setmaxnreg on sm_90a and later `a` targets. The finding names the family and the targets that have it.

Compile for a target that has the instruction, or express the schedule with operations this target supports (e.g. cp.async instead of TMA on sm_80)."#,
    bad: include_str!("../../../../tests/check/CAKE-C001-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C001-good.py"),
};

pub const SMEM_LIMIT: CodeInfo = CodeInfo {
    code: "CAKE-C002",
    name: "smem-limit",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"The shared-memory layout exceeds the target's per-block limit."#,
    explanation: r#"The compiler places every view (all stages), every mbarrier and the alignment padding between them, plus 1024 bytes so the base can be aligned for 128-byte swizzle. The total must fit the target's opt-in per-block shared memory (232448 B on sm_90a and sm_100a, 166912 B on sm_80, 101376 B on sm_89 and sm_120a); otherwise the launch fails. The finding lists each view's share. With `ctas_per_sm=n`, n such totals, each with the 1 KB the system reserves per CTA, must also fit the SM's shared memory (233472 B on sm_90a), or the SM holds fewer CTAs than the schedule asks.

Use fewer stages or smaller tiles, or alias views with explicit offsets whose lifetimes do not overlap."#,
    bad: include_str!("../../../../tests/check/CAKE-C002-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C002-good.py"),
};

pub const THREAD_LIMIT: CodeInfo = CodeInfo {
    code: "CAKE-C003",
    name: "thread-limit",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"The roles need more threads per block than the target allows."#,
    explanation: r#"The block size is derived from the highest warp any role claims; it must not exceed the target's threads per block (1024 on every supported target). With `ctas_per_sm=n`, n blocks' threads must fit the SM's (2048 on sm_90a), and n the SM's CTA slots.

Use fewer or smaller roles."#,
    bad: include_str!("../../../../tests/check/CAKE-C003-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C003-good.py"),
};

pub const REGISTER_BUDGET: CodeInfo = CodeInfo {
    code: "CAKE-C004",
    name: "register-budget",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"A role's register budget is not a legal setmaxnreg value, or the budgets oversubscribe the register file."#,
    explanation: r#"`regs=` lowers to `setmaxnreg`, which takes a per-thread count in 24..=256 in steps of 8. The registers move within what the CTA was launched with — threads × the launch allocation, which is 65536 / threads rounded down to a multiple of 8 (at most 256: the 255 registers a thread can address, allocated in steps of 8) — so the sum over roles of threads × budget (roles without a budget count at the launch allocation) must fit that total, or `setmaxnreg.inc` blocks forever waiting for registers. With 384 threads the total is 64512; with 640 threads only 61440. With `ctas_per_sm=n` the launch allocation is 65536 / (n · threads): two CTAs of 256 threads start with 128 registers each, 32768 per CTA.

Pick budgets such as 40 for a producer warpgroup and 232 for two consumer warpgroups (128·40 + 256·232 = 64512)."#,
    bad: include_str!("../../../../tests/check/CAKE-C004-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C004-good.py"),
};

pub const WARPGROUP_REQUIRED: CodeInfo = CodeInfo {
    code: "CAKE-C005",
    name: "warpgroup-required",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"An operation that runs per warpgroup is issued by a role that is not made of whole warpgroups."#,
    explanation: r#"wgmma and setmaxnreg are warpgroup-wide (`.sync.aligned` over four consecutive warps starting at a multiple of four). A role declared with `warps=` that does not cover whole aligned warpgroups cannot issue them.

Declare the role with `warpgroup=` or `warpgroups=`."#,
    bad: include_str!("../../../../tests/check/CAKE-C005-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C005-good.py"),
};

pub const MMA_SHAPE: CodeInfo = CodeInfo {
    code: "CAKE-C006",
    name: "mma-shape",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"An MMA's shape, dtypes or operand placement are not legal for the instruction family it lowers to."#,
    explanation: r#"The instruction form follows from the operand locations and the target: on sm_90a an accumulator in registers with operands in shared memory is wgmma (M = 64 per warpgroup, N 8..256 in steps of 8, K a multiple of 16 for bf16/f16, f32 accumulators for bf16); on sm_80/89 it is mma.sync (m16n8k16 tiles per warp); with the accumulator in TMEM it is tcgen05.mma (M 64 or 128). wgmma and tcgen05.mma read `b` from shared memory; only mma.sync takes a register `b`. The finding gives the legal set and the derived value.

Change the fragment or view shapes, or the accumulator dtype; pass `b` as a view where the family reads it from shared memory."#,
    bad: include_str!("../../../../tests/check/CAKE-C006-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C006-good.py"),
};

pub const TMA_BOX: CodeInfo = CodeInfo {
    code: "CAKE-C007",
    name: "tma-box",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"A TMA copy's box breaks the tensor-map rules."#,
    explanation: r#"A TMA copy moves one box per swizzle panel: box extents must be in 1..=256, the innermost extent in bytes a multiple of 16, the tensor rank at most 5 and at least the view's rank. `cuTensorMapEncodeTiled` rejects anything else at run time; Cake rejects it before compiling.

Reshape the view (e.g. at most 256 rows) or split the copy."#,
    bad: include_str!("../../../../tests/check/CAKE-C007-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C007-good.py"),
};

pub const CLUSTER_LIMIT: CodeInfo = CodeInfo {
    code: "CAKE-C008",
    name: "cluster-limit",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"The cluster shape exceeds the target's limit, or is not `(n, 1, 1)`."#,
    explanation: r#"Thread-block clusters hold at most 8 CTAs portably (16 with an opt-in on sm_90a). Larger clusters fail to launch. Cake's grids are one-dimensional (the tile loop linearises the tiles), so a cluster extends along x only: `(n, 1, 1)`.

Use a smaller cluster, along x."#,
    bad: include_str!("../../../../tests/check/CAKE-C008-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C008-good.py"),
};

pub const TMEM_ALLOCATION: CodeInfo = CodeInfo {
    code: "CAKE-C009",
    name: "tmem-allocation",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"A TMEM region's size breaks the allocation rules."#,
    explanation: r#"TMEM is allocated in power-of-two numbers of 32-bit columns between 32 and 512, and all regions of a CTA share 512 columns; an allocation that cannot be satisfied blocks. A region declared with `stages=n` takes its columns n times. The compiler derives column offsets; the author declares the widths.

Round each region up to a power of two and keep the total, stages included, within 512 columns."#,
    bad: include_str!("../../../../tests/check/CAKE-C009-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C009-good.py"),
};

pub const SETMAXNREG_IGNORED: CodeInfo = CodeInfo {
    code: "CAKE-C010",
    name: "setmaxnreg-ignored",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"ptxas ignored the role register budgets (warning C7508)."#,
    explanation: r#"`setmaxnreg` takes effect only when ptxas can determine the register count at kernel entry; when it cannot, it drops the instruction with warning C7508 and every role runs with the launch allocation — a consumer warpgroup sized for 232 registers then spills or fails. Cake compiles kernels with `__launch_bounds__(threads, 1)` so this should not happen; if it does, the finding points at the roles whose budgets were dropped.

Report it: it is a lowering bug, or remove the budgets."#,
    bad: "",
    good: "",
};

pub const NAMED_BARRIER_LIMIT: CodeInfo = CodeInfo {
    code: "CAKE-C011",
    name: "named-barrier-limit",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"More named barriers than the hardware has."#,
    explanation: r#"A CTA has 16 named barriers; id 0 is the CTA-wide `__syncthreads`, so Cake hands out ids 1 to 15. A schedule with more named barriers cannot be lowered.

Merge barriers that synchronise the same roles."#,
    bad: include_str!("../../../../tests/check/CAKE-C011-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C011-good.py"),
};

pub const TMEM_LANES: CodeInfo = CodeInfo {
    code: "CAKE-C012",
    name: "tmem-lanes",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"A role accesses TMEM lanes its warps cannot reach."#,
    explanation: r#"Warp w of a CTA may access only TMEM lanes 32·(w mod 4) to 32·(w mod 4)+31, so a 128-lane accumulator is read by a whole warpgroup, each warp taking its 32 lanes. A warp role (one warp per replica) can reach only 32 lanes.

Read 128-lane regions from a warpgroup role."#,
    bad: include_str!("../../../../tests/check/CAKE-C012-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C012-good.py"),
};

pub const MULTICAST_SHAPE: CodeInfo = CodeInfo {
    code: "CAKE-C013",
    name: "multicast-shape",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"A multicast TMA load does not fit the cluster it is delivered to."#,
    explanation: r#"`view.tma_load(..., multicast=n)` delivers the same box to every CTA of a cluster of n CTAs: each CTA loads 1/n of the box's rows and the hardware writes that share into the view in all of them. So n must equal the cluster's CTA count, the cluster must be `(n, 1, 1)` (the grid is one-dimensional), and the load must fill a whole two-dimensional view (no `.rows(...)` range) whose rows split into n shares of a multiple of 8 rows, so each share starts on a swizzle-pattern boundary (1024 bytes for 128-byte rows).

Declare `cluster=(n, 1, 1)` with the same n, and size the view's rows as a multiple of 8·n."#,
    bad: include_str!("../../../../tests/check/CAKE-C013-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C013-good.py"),
};

pub const CLUSTER_BARRIER: CodeInfo = CodeInfo {
    code: "CAKE-C014",
    name: "cluster-barrier",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"A cluster barrier (`cluster=True`) is declared where it cannot work."#,
    explanation: r#"An arrival on a cluster barrier counts in every CTA of the cluster: each warp of an arriving role converges and arrives once in every CTA (lane c in CTA c), a wgmma release arrives from one thread per warpgroup in each CTA, the one thread of an issue-only role arrives in each CTA, and a tcgen05 commit (`lm.commit`, or the release of an MMA into TMEM) is multicast to every CTA. That needs a kernel with a cluster of at least two CTAs. TMA loads and cp.async signal the barrier of the CTA they complete in; give them a CTA barrier.

Declare a cluster of two or more CTAs on the schedule, or drop `cluster=True`."#,
    bad: include_str!("../../../../tests/check/CAKE-C014-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C014-good.py"),
};

pub const MMA_ISSUER: CodeInfo = CodeInfo {
    code: "CAKE-C015",
    name: "mma-issuer",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"An MMA is issued by a role whose unit the instruction family cannot have: mma.sync from a warpgroup role."#,
    explanation: r#"The instruction family follows from the operand locations and the target (docs/language.md §9.6), and each family is issued by a fixed unit: mma.sync by one warp for the accumulator tile that warp holds, wgmma by one aligned warpgroup (`CAKE-C005`), tcgen05.mma by one thread for the CTA. On a target without wgmma (sm_80, sm_89, sm_120a, sm_121a) an accumulator in registers lowers to mma.sync, so a fragment of a warpgroup role — one (64, N) tile per four warps, the wgmma shape — has no instruction that could compute it. No lowering of this target could accept it, so it is an error, not a not-lowered note.

Declare the role with `warp=` or `warps=` and give each warp its own (M, N) tile (M a multiple of 16, N of 8), or target sm_90a for wgmma."#,
    bad: include_str!("../../../../tests/check/CAKE-C015-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C015-good.py"),
};

pub const PEER_VIEW: CodeInfo = CodeInfo {
    code: "CAKE-C016",
    name: "peer-view",
    category: Category::Conformance,
    severity: Severity::Error,
    summary: r#"`view.load(cta=...)` reads a cluster peer's shared memory where no such peer exists or where its view may change under the read."#,
    explanation: r#"`view.load(cta=c)` reads the view at the same offset in CTA c of the thread-block cluster (distributed shared memory: `mapa` then `ld.shared::cluster`). That needs a kernel with a cluster of at least two CTAs, and c must be a rank of that cluster (0 to n − 1): a constant as written, a run-time index for every value its variables run over, narrowed by the run-time `if`s around the read (`ks + 1` over a tile axis of n is n at the last tile; under `if ks == 0:` it is 1). In a persistent kernel each CTA goes on to its next tile and stores into its view again while a peer may still be reading the previous tile's contents. The reads must be released back to the storers: after the read, the reading role arrives on a cluster barrier (one that does not start free), and every role that stores into the view waits on it after its store, in the same tile. That wait's phase completes only when the readers of every CTA have arrived, so no store of the next tile overtakes a read of this one.

Declare `cluster=(n, 1, 1)` with n greater than the rank you read. In a persistent kernel declare `drained = lm.barrier(producers=[reader], consumers=[writer], cluster=True)`, `lm.arrive(drained)` after the reads and `lm.wait(drained)` in the writer after its store (or `persistent=False`)."#,
    bad: include_str!("../../../../tests/check/CAKE-C016-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-C016-good.py"),
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[
    &INSTRUCTION_UNAVAILABLE,
    &SMEM_LIMIT,
    &THREAD_LIMIT,
    &REGISTER_BUDGET,
    &WARPGROUP_REQUIRED,
    &MMA_SHAPE,
    &TMA_BOX,
    &CLUSTER_LIMIT,
    &TMEM_ALLOCATION,
    &SETMAXNREG_IGNORED,
    &NAMED_BARRIER_LIMIT,
    &TMEM_LANES,
    &MULTICAST_SHAPE,
    &CLUSTER_BARRIER,
    &MMA_ISSUER,
    &PEER_VIEW,
];
