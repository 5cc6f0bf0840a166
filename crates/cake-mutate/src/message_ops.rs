//! Operators for the mistakes whose findings must lead to the fix rather than to a declaration
//! that keeps the bug: a wait on the wrong barrier of a ring, and a warpgroup's register
//! accumulator on a target whose only register MMA is mma.sync (no lowering could accept it).

use super::*;
use cake_ir::RoleUnit;

/// `lm.wait(B)` → `lm.wait(B2)`, B2 another barrier of B's pipeline (or, for a barrier without
/// one, another barrier without a pipeline): the author named the wrong end of a handoff.
pub(super) fn swap_barrier(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for st in &src.stmts {
        let Some(b) = simple_call(src, st, "wait") else {
            continue;
        };
        // Every other barrier of the same ring, in the first kernel that declares `b`.
        let Some(k) = f
            .kernels
            .iter()
            .find(|k| k.barriers.iter().any(|(_, x)| x.name == b))
        else {
            continue;
        };
        let (_, bar) = k.barriers.iter().find(|(_, x)| x.name == b).expect("found");
        let others: Vec<&str> = k
            .barriers
            .iter()
            .filter(|(_, x)| x.name != b && x.pipeline == bar.pipeline)
            .map(|(_, x)| x.name.as_str())
            .collect();
        for other in others {
            let (s, e) = span_of(st, 4, 4);
            let mut names = f.names_in(src, st);
            names.insert(other.to_string());
            out.push(plan(
                "swap-barrier",
                st.first,
                format!("wait on `{other}` instead of `{b}`"),
                (
                    vec![Edit {
                        start: s,
                        end: e,
                        text: other.to_string(),
                    }],
                    Site::WaitSwapped,
                ),
                names,
                &SAFETY_OR_SEMANTICS,
            ));
        }
    }
}

/// `lm.role(warps=[4i, .., 4i+3])` → `lm.role(warpgroup=i)` for a role whose MMAs lower to
/// mma.sync on every declared target: the same warps, but its fragments become one tile per
/// warpgroup, the wgmma shape, which mma.sync cannot compute.
pub(super) fn warpgroup_mma_sync(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (si, ki, ri) in decls(src, f, |k| {
        k.roles.handles().map(|h| k.roles.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let (rid, role) = k.roles.iter().nth(ri).expect("role");
        let warps = role.warps();
        let aligned = role.unit == RoleUnit::Warp
            && warps.len() == 4
            && warps[0] % 4 == 0
            && warps.windows(2).all(|w| w[1] == w[0] + 1);
        if !aligned || !issues_only_mma_sync(f, ki, rid) {
            continue;
        }
        let Some(open) = method_open(src, st, "role") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(a) = kwarg(&call, "warps") else {
            continue;
        };
        let (s, e) = span_of(st, a.first, a.last);
        let old = src.text[s..e].to_string();
        let new = format!("warpgroup={}", warps[0] / 4);
        out.push(plan(
            "warpgroup-mma-sync",
            tok(st, a.first).line,
            format!("declare role `{}` as `{new}` instead of `{old}`", role.name),
            (
                vec![Edit {
                    start: s,
                    end: e,
                    text: new,
                }],
                Site::Edited,
            ),
            f.names_in(src, st),
            &[Category::Conformance],
        ));
    }
}

/// Whether role `r` of kernel `ki` issues MMAs, each lowering to mma.sync on every target.
fn issues_only_mma_sync(f: &Facts, ki: usize, r: cake_ir::RoleId) -> bool {
    let Some(per_target) = f.facts.get(ki) else {
        return false;
    };
    let mut any = false;
    for kf in per_target {
        for site in kf.ops.iter().filter(|s| s.role == Some(r)) {
            if let Op::Mma { acc, .. } = &site.op {
                any = true;
                if kf.mma_family(acc) != MmaFamily::MmaSync {
                    return false;
                }
            }
        }
    }
    any
}
