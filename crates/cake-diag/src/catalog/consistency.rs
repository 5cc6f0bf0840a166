//! Consistency rules (`CAKE-Dxxx`). Examples are the test files under tests/check/,
//! so every documented example is also a regression test.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const FRAGMENT_OWNERSHIP: CodeInfo = CodeInfo {
    code: "CAKE-D001",
    name: "fragment-ownership",
    category: Category::Consistency,
    severity: Severity::Error,
    summary: r#"A role uses registers that belong to another role."#,
    explanation: r#"Fragments are per-thread registers of the role that declares them; another role's warps cannot read or write them. Data moves between roles only through shared memory or TMEM and a barrier.

Declare the fragment on the role that uses it, or hand the data over through a view."#,
    bad: include_str!("../../../../tests/check/CAKE-D001-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D001-good.py"),
};

pub const OPERAND_LAYOUT: CodeInfo = CodeInfo {
    code: "CAKE-D002",
    name: "operand-layout",
    category: Category::Consistency,
    severity: Severity::Error,
    summary: r#"An MMA operand's majorness or swizzle does not match what the instruction can read."#,
    explanation: r#"On sm_90a wgmma reads shared-memory operands through descriptors that encode the swizzle and majorness: Cake lowers K-major operands (A stored (M, K), B passed as the transpose of an (N, K) view) whose rows span exactly the 128-byte swizzle. A view whose swizzle differs from how its writer laid it out, or whose majorness the instruction does not accept for the dtype, is read as garbage. On sm_80/sm_89 mma.sync takes its operands in registers, loaded from shared memory with ldmatrix, whose `.trans` moves 16-bit elements: an 8-bit (FP8, int8) or tf32 operand must already be K-major there.

Declare the view with swizzle=128 (64 or 128 on mma.sync targets) and K as the contiguous (last) dimension."#,
    bad: include_str!("../../../../tests/check/CAKE-D002-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D002-good.py"),
};

pub const LDMATRIX_ROWS: CodeInfo = CodeInfo {
    code: "CAKE-D003",
    name: "ldmatrix-rows",
    category: Category::Consistency,
    severity: Severity::Error,
    summary: r#"ldmatrix reads rows that are not 16-byte aligned."#,
    explanation: r#"ldmatrix loads 8x8 tiles whose rows are 16-byte vectors; every row address must be 16-byte aligned, so the view's row pitch must be a multiple of 16 bytes.

Widen or pad the view's rows to a multiple of 16 bytes."#,
    bad: include_str!("../../../../tests/check/CAKE-D003-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D003-good.py"),
};

pub const FP8_ACCUMULATION: CodeInfo = CodeInfo {
    code: "CAKE-D004",
    name: "fp8-accumulation",
    category: Category::Consistency,
    severity: Severity::Warning,
    summary: r#"FP8 MMAs accumulate over a run-time loop in one accumulator without promotion."#,
    explanation: r#"Hopper's FP8 wgmma accumulates in reduced precision despite the f32 accumulator type; over long K the error grows well past bf16 levels. Production kernels promote the partial sum into a full-precision register accumulator every 128 elements of K.

Accumulate each K block (≤ 128) into a fresh fragment and add it into an f32 total fragment with element-wise math."#,
    bad: include_str!("../../../../tests/check/CAKE-D004-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D004-good.py"),
};

pub const CONTRACTION_MISMATCH: CodeInfo = CodeInfo {
    code: "CAKE-D005",
    name: "contraction-mismatch",
    category: Category::Consistency,
    severity: Severity::Error,
    summary: r#"An MMA's two operands are summed over different tensor dimensions."#,
    explanation: r#"`lm.mma(acc, a, b)` sums over a's columns and b's rows. Cake follows each shared-memory operand back to the TMA copy that fills it, so it knows which tensor dimension every view axis holds. If the summed axis of `a` holds one dimension (say M) and that of `b` another (K), the shapes may still agree — a square tile transposed by mistake — but the kernel computes a different product.

Transpose the operand that is wrong: `a` is (M, K) as stored; `b` is (K, N), usually the transpose `.T` of an (N, K) view."#,
    bad: include_str!("../../../../tests/check/CAKE-D005-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D005-good.py"),
};

pub const COPY_COVERAGE: CodeInfo = CodeInfo {
    code: "CAKE-D006",
    name: "copy-coverage",
    category: Category::Consistency,
    severity: Severity::Error,
    summary: r#"The copies into a view do not cover what its readers read, or successive tiles of a copy skip or overlap."#,
    explanation: r#"A TMA box or cp.async copy writes the rows of the view it names (`.rows(start, n)` writes n rows; a bare view, all of them); an MMA, ldmatrix, tcgen05.cp or TMA store reads the rows of its operand. Cake evaluates the row ranges for every replica of the issuing role and reports rows that are read but that no copy writes: they hold whatever an earlier stage or tile left there.

Rows a copy brings in that none of the replica slices of its MMA or ldmatrix readers read are reported too: slices that follow `role.index` are meant to partition the box. A row start that moves with a loop of a few constant trips (`kw * MP` over `lm.range(R)`) is evaluated at each of its steps.

It also follows each copy's coordinates through the loops around it. A coordinate that advances by `k * BM` while the boxes filled from that tensor dimension are `BK` wide skips tiles (or reads some twice); a loop whose trip count is `lm.cdiv(K, BK)` covers `K` only when each iteration moves `BK` along it, and a copy inside it whose `K` coordinate does not move loads the same tile every iteration; a loop counted along one dimension (`tn`, along `N`) that moves another (`K`) reads the wrong tiles. An outer loop over runs of an inner loop's boxes (`kc * 4 * BK + k * BK` with `k` over `lm.range(4)`) must step by exactly the run.

Split-K, where the CTAs along a tile axis of constant count (`for ks, tn in lm.tiles(SPLIT, ...)`) each load a run of a dimension, is checked by enumeration: at sample extents of the dimension (4096, 7168 and a 1000 tail), every (CTA, step) box is evaluated, and between them they must load every element exactly once. A gap leaves part of the sum out; an overlap counts it twice. Runs (`(ks * RUN + k) * BK`) and interleaved steps (`(k * SPLIT + ks) * BK`) both pass. The copies one statement makes in a compile-time `range` (one box per step of it) are checked together, and since they are in flight together, two of them writing the same rows of a stage is an error too.

Make the box as tall as what is read (the same `.rows(...)` on the copy and the reader, or none), and step each coordinate by the extent the copies fill: `k * BK` for a `BK`-wide box."#,
    bad: include_str!("../../../../tests/check/CAKE-D006-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D006-good.py"),
};

pub const TMEM_COLUMNS: CodeInfo = CodeInfo {
    code: "CAKE-D007",
    name: "tmem-columns",
    category: Category::Consistency,
    severity: Severity::Error,
    summary: r#"A TMEM region has fewer columns than the data placed in it."#,
    explanation: r#"`lm.tmem(cols, shape, dtype)` allocates `cols` 32-bit columns per lane; the data placed in it (the MMA accumulator, the tile `lm.tmem_store` writes) is `shape`: one row per lane and `shape[-1] × dtype bytes / 4` columns. A region with fewer columns than that makes the MMA or the store write into the next region's columns (or past the allocation), which no later check sees.

Declare `cols` at least `shape[-1] × bytes / 4`: `cols=BN` for an f32 (M, BN) accumulator, `cols=BN // 2` for bf16."#,
    bad: include_str!("../../../../tests/check/CAKE-D007-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D007-good.py"),
};

pub const REGISTER_DEMAND: CodeInfo = CodeInfo {
    code: "CAKE-D008",
    name: "register-demand",
    category: Category::Consistency,
    severity: Severity::Warning,
    summary: r#"A role's fragments (with a wgmma's working set) need more registers per thread than its budget (warning), than any thread can hold (error), or a wgmma's accumulator and working set do not fit the budget (error)."#,
    explanation: r#"A fragment's elements are spread over the threads of one replica of its role (128 for a warpgroup, 32 for a warp): an f32 (64, 256) accumulator is 128 registers per thread. Cake adds the fragments of each role (double-buffered ones twice) before anything is compiled — the same numbers `cake build`'s spill note prints — and compares them with the role's `regs=` budget (or the launch allocation without one). More than the budget leaves nothing for addresses and temporaries: ptxas spills (a warning). More than the 255 registers a thread can address fits no budget at all (an error): for example an attention head dimension whose score and output tiles together exceed 255 per thread.

A wgmma cannot spill: its whole accumulator and its operands must be in registers at the instruction. ptxas needs about 26 registers beside the accumulator there (descriptors, addresses, loop and barrier state; measured: a (64, 256) f32 accumulator needs 154), and when the role's budget is smaller it aborts the build (C7602 "Insufficient registers"). So on sm_90a a role that issues a wgmma into an accumulator of R registers per thread needs a budget of at least R + 26 (an error otherwise). Three consumer warpgroups beside a producer leave 152 each: enough for N = 192, not for N = 256. The same 26 live beside all of the role's fragments: when they and the fragments together pass the budget, ptxas spills (a warning; measured: an attention role with 212 registers in fragments and a budget of 232 spilled 48 B and ran 27 % slower), and the cost model charges the spilled registers.

Shrink the tiles (fewer columns per fragment), split the work over more warpgroups, or raise the budget."#,
    bad: include_str!("../../../../tests/check/CAKE-D008-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-D008-good.py"),
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[
    &FRAGMENT_OWNERSHIP,
    &OPERAND_LAYOUT,
    &LDMATRIX_ROWS,
    &FP8_ACCUMULATION,
    &CONTRACTION_MISMATCH,
    &COPY_COVERAGE,
    &TMEM_COLUMNS,
    &REGISTER_DEMAND,
];
