//! Performance findings (`CAKE-Pxxx`): non-blocking reports about how the compiled kernel will
//! run. Examples come from real builds, so they have no source-only example.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const REGISTER_SPILL: CodeInfo = CodeInfo {
    code: "CAKE-P001",
    name: "register-spill",
    category: Category::Performance,
    severity: Severity::Warning,
    summary: r#"ptxas spilled registers to local memory."#,
    explanation: r#"When a role's live values exceed its register budget (the launch allocation, or its `regs=` under setmaxnreg), ptxas spills them to local memory: slow loads and stores through L1 on the hot path. `cake build` reads the `ptxas -v` report and points at the role and fragment that hold the most registers, the usual cause; a few bytes of spill in a producer role are harmless, kilobytes in a consumer are not.

Give the role more registers, shrink its fragments (smaller N per warpgroup), or move values to shared memory."#,
    bad: "",
    good: "",
};

pub const WGMMA_SERIALIZED: CodeInfo = CodeInfo {
    code: "CAKE-P002",
    name: "wgmma-serialized",
    category: Category::Performance,
    severity: Severity::Warning,
    summary: r#"ptxas serialised the wgmma instructions (C7514) or injected waits into the MMA pipeline (C7517)."#,
    explanation: r#"wgmma runs asynchronously only while no other instruction touches the accumulator registers of an MMA in flight. When ptxas cannot prove that — for example when an MMA stays in flight across a loop's back edge and the next iteration reads an accumulator — it inserts `wgmma.wait_group` and serialises the MMAs, and the overlap the schedule asked for is lost. `cake build` reads ptxas's notes and points at the MMA.

The message says whose the cause is. **The schedule**: ptxas ran out of registers for the wgmma pipeline (give the role more with `regs=`, or shrink its fragments), or a statement writes an MMA's accumulator while another MMA is in flight (ptxas C7515) — for example an in-place update of a `buffers=2` score tile while the next tile's MMA runs; the finding sits on that statement and labels the MMA in flight: write the value elsewhere, or before that MMA is issued. **The compiler**: on sm_90a Cake places every wgmma wait and fence itself (docs/language.md §9.6), so any other serialisation means a wait it derived does not cover a read: report it as a compiler bug, with the schedule."#,
    bad: "",
    good: "",
};

// Cost-model hints (crates/cake-cost): reported by `cake check --shape` and `cake cost`. They
// depend on a shape, so their annotated tests live in tests/cost/ with the shape on line one.

pub const EXPOSED_LATENCY: CodeInfo = CodeInfo {
    code: "CAKE-P003",
    name: "exposed-latency",
    category: Category::Performance,
    severity: Severity::Note,
    summary: r#"The pipeline has too few stages to hide the TMA latency."#,
    explanation: r#"A ring of S stages keeps at most S copies in flight. Each stage is reused only after its copy landed (the TMA latency L) and its consumer released it, so one iteration cannot take less than (L + consume + handoff) ÷ S. When that exceeds both the time to move the stage's bytes and the time to consume them, the consumers wait for data every iteration. The cost model (docs/cost-model.md) reports how many stages would hide the latency and whether they fit in shared memory.

Add stages (`lm.pipeline(stages=...)` and the `stages=` of the views it rotates), or make each stage smaller (a shorter K step) so that more of them fit."#,
    bad: "",
    good: "",
};

pub const TAIL_WAVE: CodeInfo = CodeInfo {
    code: "CAKE-P004",
    name: "tail-wave",
    category: Category::Performance,
    severity: Severity::Note,
    summary: r#"The tiles do not divide evenly over the SMs: the last wave leaves SMs idle."#,
    explanation: r#"Tiles run in waves of (SMs × resident CTAs). With 1.03 waves, the second wave holds 3% of the tiles and every other SM idles while it runs, so the kernel takes almost twice as long as its work needs. A persistent tile loop has the same quantization when each CTA owns whole tiles. Clusters shrink the wave: a cluster's CTAs share a GPC, and GPCs whose SM count the cluster size does not divide leave SMs idle (on an H100 of 132 SMs, 30 clusters of 4 run at once, not 33), so 32 clusters of 4 take two waves; the calibration's [cluster_ctas] says how many fit. The cost model names a tile size along one axis that divides the work more evenly, when one exists, or the most clusters that fit.

Change a tile extent (for example BN) so the tile count is a multiple of the SM count or much larger than it, or split the contraction."#,
    bad: "",
    good: "",
};

pub const SERIALIZED_EPILOGUE: CodeInfo = CodeInfo {
    code: "CAKE-P005",
    name: "serialized-epilogue",
    category: Category::Performance,
    severity: Severity::Note,
    summary: r#"Element-wise work inside the MMA loop runs while the tensor cores idle."#,
    explanation: r#"A role that issues an MMA and then does register math on its result in the same loop iteration (a fused reduction, an argmin, a softmax) keeps the tensor cores idle for the length of that math, unless another warpgroup's MMAs fill the gap. The cost model counts the element-wise operations per iteration and their share of the iteration.

Fewer operations per element (fold constants out of the loop, fuse min and argmin), more MMA work per element, or consumer warpgroups that alternate between MMA and epilogue."#,
    bad: "",
    good: "",
};

pub const EXPOSED_EPILOGUE: CodeInfo = CodeInfo {
    code: "CAKE-P006",
    name: "exposed-epilogue",
    category: Category::Performance,
    severity: Severity::Note,
    summary: r#"The epilogue after the contraction loop is a large part of each tile and overlaps nothing."#,
    explanation: r#"After its last MMA of a tile, a consumer role converts and stores its accumulator before it starts the next tile's MMAs. With one set of consumers, the tensor cores idle for that time. Register-to-global stores from an accumulator layout are also uncoalesced.

Store through shared memory with TMA (`view.store`, `lm.fence_proxy_async`, `view.tma_store`), or make the contraction per tile longer so the epilogue is a smaller share."#,
    bad: "",
    good: "",
};

pub const MEMORY_BOUND: CodeInfo = CodeInfo {
    code: "CAKE-P007",
    name: "memory-bound",
    category: Category::Performance,
    severity: Severity::Note,
    summary: r#"DRAM or L2 bandwidth sets the kernel's time."#,
    explanation: r#"The cost model estimates DRAM traffic from the tiles in flight: tiles that run at the same time and read the same operand slice share it in L2. When the bytes moved divided by the calibrated bandwidth exceed the compute and latency terms, the kernel is memory-bound.

A grouped raster (`lm.tiles(..., group=8)`) raises operand reuse in L2; larger tiles raise arithmetic intensity; a narrower dtype moves fewer bytes."#,
    bad: "",
    good: "",
};

pub const MISALIGNED_ROWS: CodeInfo = CodeInfo {
    code: "CAKE-P008",
    name: "misaligned-rows",
    category: Category::Performance,
    severity: Severity::Note,
    summary: r#"A tensor copied by TMA has rows that are not a multiple of 32 bytes apart at this shape."#,
    explanation: r#"L2 serves 32-byte sectors. When a row-major tensor's rows are, say, 2,224 bytes apart (K = 1,112 bf16 elements), every other row starts 16 bytes into a sector, and a TMA box's 128-byte row touches five sectors instead of four: a quarter more requests per row from L2, for the same bytes. Kernels that request many rows per unit of work slow down by far more than that quarter (so the sector count is not the whole cause): on the H200 the 128-row TMA GEMMs of the corpus took 1.4–2.0× as long at K = 1,032 as at K = 1,024 (the more rows per MMA, the more: 128 × 128 tiles 2×, 128 × 256 tiles 1.5×), the same kernels with the B tile multicast across a cluster of two (fewer rows requested per CTA) 1.04–1.28×, and cuBLAS 1.02–1.11×. The hint depends on the shape: the same schedule is fine at an aligned one.

Route such shapes to a schedule that multicasts its operand tiles (or to the fallback) with a family guard (`K = { multiple_of = 16 }`, docs/dispatch.md), or pad the tensor's rows to a multiple of 32 bytes."#,
    bad: "",
    good: "",
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[
    &REGISTER_SPILL,
    &WGMMA_SERIALIZED,
    &EXPOSED_LATENCY,
    &TAIL_WAVE,
    &SERIALIZED_EPILOGUE,
    &EXPOSED_EPILOGUE,
    &MEMORY_BOUND,
    &MISALIGNED_ROWS,
];
