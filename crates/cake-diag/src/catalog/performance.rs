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

Keep reads of accumulators out of the window in which their MMAs are in flight, and check the build report again. The lowering of `buffers=2` retires the next MMA before the loop's back edge for this reason; if this finding appears on such a loop, report it as a compiler bug."#,
    bad: "",
    good: "",
};
