//! Sizes known before ptxas: TMEM regions at least as wide as what is placed in them
//! (`CAKE-D007`), and the registers a role's fragments need against its budget and against
//! what any thread can hold (`CAKE-D008`).

use crate::ctx::Ctx;
use cake_diag::catalog::consistency::{REGISTER_DEMAND, TMEM_COLUMNS};
use cake_diag::{Finding, Severity};
use cake_ir::*;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    tmem_columns(cx, out);
    register_demand(cx, out);
}

fn tmem_columns(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for (t, r) in k.tmems.iter() {
        let cols = r.shape.last().copied().unwrap_or(1) as u64;
        let need = (cols * r.dtype.bytes() as u64).div_ceil(4);
        if need <= r.cols as u64 {
            continue;
        }
        let mut f = Finding::new(
            &TMEM_COLUMNS,
            k.tmems.span(t),
            format!(
                "`{}` holds {} {}: {need} 32-bit columns per lane, but is declared with cols={}",
                r.name,
                shape_text(&r.shape),
                r.dtype,
                r.cols
            ),
        )
        .subject("tmem", &r.name)
        .expected(format!(">= {need} columns"))
        .actual(r.cols);
        if let Some(site) = cx.ops.iter().find(|s| {
            let e = &s.effects;
            e.tmem_writes
                .iter()
                .chain(&e.tmem_reads)
                .any(|r| r.region == t)
        }) {
            f = f.label(
                cx.span(site.stmt),
                format!(
                    "places {} {} in `{}`",
                    shape_text(&r.shape),
                    r.dtype,
                    r.name
                ),
            );
        }
        out.push(f.help(format!("declare cols={need} (or more, a power of two)")));
    }
}

use cake_ir::WGMMA_WORKING_SET;

/// Per role: the largest accumulator (registers per thread) of an `lm.mma` it issues that is
/// lowered to wgmma on this target, and that fragment.
fn wgmma_accumulators(cx: &Ctx) -> std::collections::BTreeMap<cake_ir::RoleId, (u64, FragId)> {
    let k = cx.k;
    let mut out = std::collections::BTreeMap::new();
    if cx.target.mma != cake_target::MmaFamily::Wgmma {
        return out;
    }
    for site in &cx.ops {
        if let cake_ir::Op::Mma {
            acc: cake_ir::Operand::Frag(f),
            ..
        } = &site.op
        {
            // An MMA issued by a role that does not own its accumulator is CAKE-D001's.
            if site.role != Some(k.fragments[*f].role) {
                continue;
            }
            let regs = k.fragment_registers(*f) / k.fragments[*f].buffers.max(1) as u64;
            let e = out.entry(k.fragments[*f].role).or_insert((regs, *f));
            if regs > e.0 {
                *e = (regs, *f);
            }
        }
    }
    out
}

fn register_demand(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let lim = &cx.target.limits;
    let threads = k.block_threads().max(1);
    let launch = lim.launch_registers(threads * k.ctas_per_sm());
    let wgmma = wgmma_accumulators(cx);
    for (rid, role) in k.roles.iter() {
        let demand = k.role_fragment_registers(rid);
        let frags: Vec<(FragId, u64)> = k
            .fragments
            .iter()
            .filter(|(_, f)| f.role == rid)
            .map(|(h, _)| (h, k.fragment_registers(h)))
            .collect();
        let Some(&(heaviest, _)) = frags
            .iter()
            .max_by_key(|(h, n)| (*n, std::cmp::Reverse(h.index())))
        else {
            continue;
        };
        let budget = k.register_budget(rid, launch);
        let source = if role.regs.is_some() {
            "regs="
        } else {
            "launch allocation"
        };
        let what = format!("budget of {budget} ({source})");
        let max = lim.regs_per_thread as u64;
        // With a wgmma to issue, its accumulator plus the instruction's working set must fit.
        let at_mma = wgmma
            .get(&rid)
            .map(|&(regs, f)| (regs + WGMMA_WORKING_SET, regs, f));
        let aborts = at_mma.is_some_and(|(need, ..)| need > budget);
        // Beside a wgmma, the working set lives with every fragment of the role: past the
        // budget with it, ptxas spills (the cost model charges the same registers).
        let working = if at_mma.is_some() {
            WGMMA_WORKING_SET
        } else {
            0
        };
        let spills = demand + working > budget;
        let severity = if demand > max || aborts {
            Severity::Error
        } else if spills {
            Severity::Warning
        } else {
            continue;
        };
        let names: Vec<String> = frags
            .iter()
            .map(|(h, n)| format!("`{}` ({n} regs)", k.fragments[*h].name))
            .collect();
        let msg = if demand > max {
            format!(
                "role `{}` holds {demand} registers per thread in fragments; a thread can address at most {max}, so no budget fits them",
                role.name
            )
        } else if let (true, Some((need, regs, f))) = (aborts, at_mma) {
            format!(
                "role `{}` issues a wgmma into `{}` ({regs} registers per thread), which ptxas compiles only with about {need} (the accumulator and {WGMMA_WORKING_SET} for descriptors, addresses and loop state), more than its {what}: ptxas aborts the build",
                role.name, k.fragments[f].name
            )
        } else if demand > budget {
            format!(
                "role `{}` holds {demand} registers per thread in fragments, more than its {what}: ptxas will spill",
                role.name
            )
        } else {
            format!(
                "role `{}` holds {demand} registers per thread in fragments and needs about {working} more beside its wgmma (descriptors, addresses, loop state): {} in all, more than its {what}; ptxas will spill",
                role.name,
                demand + working
            )
        };
        let mut f = Finding::new(&REGISTER_DEMAND, k.fragments.span(heaviest), msg)
            .severity(severity)
            .role(&role.name)
            .subject("fragment", &k.fragments[heaviest].name)
            .note(format!(
                "role `{}` holds {demand} registers per thread in fragments {} with a {what}",
                role.name,
                names.join(", ")
            ))
            .label(
                k.roles.span(rid),
                format!("`{}` is declared here", role.name),
            );
        for (h, _) in frags.iter().filter(|(h, _)| *h != heaviest) {
            f = f.label(k.fragments.span(*h), "another fragment of the role");
        }
        if let (true, Some((need, ..))) = (aborts, at_mma) {
            f = f.expected(format!(">= {need} registers")).actual(budget);
        }
        out.push(f.help(if aborts && demand <= max {
            "raise regs= (the roles' budgets must still fit the register file), or shrink the accumulator"
        } else if severity == Severity::Error {
            "shrink the tiles (fewer columns per fragment) or spread the rows over more warpgroups"
        } else {
            "raise regs= (the roles' budgets must still fit the register file) or shrink the fragments"
        }));
    }
}

fn shape_text(s: &[u32]) -> String {
    let parts: Vec<String> = s.iter().map(u32::to_string).collect();
    format!("({})", parts.join(", "))
}
