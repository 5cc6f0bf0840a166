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
