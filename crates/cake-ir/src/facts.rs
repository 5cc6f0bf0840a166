//! Facts about one kernel on one target, derived once and handed to every later stage: the
//! verifier's rules, the lowering, the cost model and the mutation tester read these instead of
//! deriving their own copies (copies drift: two stages that disagree on where shared memory
//! lives or which instruction an MMA becomes check one program and run another).

use crate::kernel::*;
use crate::layout::{smem_layout, SmemLayout};
use crate::sync::{barrier_facts, is_issue_only, BarrierFacts, MemoryAccesses};
use crate::visit::OpEffects;
use cake_target::{MmaFamily, Target};

/// One operation in program order, with where it sits and what it does.
#[derive(Clone, Debug)]
pub struct OpSite {
    pub stmt: StmtId,
    pub op: Op,
    pub role: Option<RoleId>,
    /// Enclosing IR loops, outermost first.
    pub loops: Vec<LoopId>,
    pub if_depth: u32,
    /// The run-time `if`s around the operation, outermost first.
    pub guards: Vec<Guard>,
    pub effects: OpEffects,
}

/// What every stage after the front-end needs to know about one kernel on one target.
///
/// The facts own their data (they borrow nothing from the kernel), so a compile session can keep
/// them beside its kernels and hand them to each stage.
#[derive(Clone, Debug)]
pub struct KernelFacts {
    pub target: &'static Target,
    /// Every operation, in program order.
    pub ops: Vec<OpSite>,
    pub layout: SmemLayout,
    /// Per barrier (indexed by `BarrierId::index`): arrivals, waits, derived phase facts.
    pub barriers: Vec<BarrierFacts>,
    /// Which role reads and writes which place in shared and tensor memory.
    pub memory: MemoryAccesses,
    /// Per role (indexed by `RoleId::index`): whether it runs on one elected thread per replica
    /// (`sync::is_issue_only`).
    pub issue_only: Vec<bool>,
    /// Per statement (indexed by `StmtId::index`): its position in `ops`, for operations.
    site_of: Vec<Option<u32>>,
}

impl KernelFacts {
    pub fn new(kernel: &Kernel, target: &'static Target) -> Self {
        let mut ops = Vec::new();
        kernel.walk(|stmt, s, ctx| {
            if let Stmt::Op(op) = s {
                ops.push(OpSite {
                    stmt,
                    op: op.clone(),
                    role: ctx.role,
                    loops: ctx.loops.clone(),
                    if_depth: ctx.if_depth,
                    guards: ctx.guards.clone(),
                    effects: kernel.op_effects(op),
                });
            }
        });
        let memory = MemoryAccesses::of(&ops);
        let issue_only: Vec<bool> = kernel
            .roles
            .handles()
            .map(|r| is_issue_only(&ops, r))
            .collect();
        let mut site_of = vec![None; kernel.stmts.len()];
        for (i, s) in ops.iter().enumerate() {
            site_of[s.stmt.index()] = Some(i as u32);
        }
        KernelFacts {
            target,
            layout: smem_layout(kernel),
            barriers: barrier_facts(kernel, target, &ops, &memory, &issue_only),
            memory,
            issue_only,
            site_of,
            ops,
        }
    }

    /// The op site of statement `stmt`, if it is an operation.
    pub fn site(&self, stmt: StmtId) -> Option<&OpSite> {
        let i = (*self.site_of.get(stmt.index())?)?;
        Some(&self.ops[i as usize])
    }

    /// The instruction family an MMA with accumulator `acc` maps to on this target.
    pub fn mma_family(&self, acc: &Operand) -> MmaFamily {
        mma_family(self.target, acc)
    }
}

/// The one rule for which instruction family an MMA becomes: a TMEM accumulator means tcgen05;
/// otherwise the accumulator is in registers, and the target's data says which family takes it.
pub fn mma_family(target: &Target, acc: &Operand) -> MmaFamily {
    match acc {
        Operand::Tmem(_) => MmaFamily::Tcgen05,
        Operand::Frag(_) | Operand::Smem(_) => target.mma.register_accumulator_family(),
    }
}
