//! Coverage: what the verifier does not model is said, never silently passed.

use crate::ctx::Ctx;
use cake_diag::catalog::coverage::*;
use cake_diag::Finding;
use cake_ir::*;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let sp = cx.span(site.stmt);
        // Under a warp vote, synchronisation is an error (CAKE-S023), not a gap.
        let voted = site.guards.iter().any(|g| k.expr_votes(g.cond));
        if site.if_depth > 0
            && !voted
            && matches!(
                site.op,
                Op::Wait { .. } | Op::Arrive { .. } | Op::Sync { .. }
            )
        {
            out.push(
                Finding::new(&NOT_VERIFIED, sp, "not verified: synchronisation inside a run-time `if`; arrival matching on every path is not modelled yet")
                    .role(cx.role_name(site.role)),
            );
        }
    }
    // Arrival counts are derived per phase assuming every arrival site of a barrier runs once per
    // phase; sites at different loop depths break that assumption.
    for f in &cx.barriers {
        let loops_of = |stmt| {
            cx.ops
                .iter()
                .find(|o| o.stmt == stmt)
                .map(|o| o.loops.clone())
                .unwrap_or_default()
        };
        if let Some(first) = f.arrivals.first() {
            let l0 = loops_of(first.stmt);
            for a in &f.arrivals[1..] {
                if loops_of(a.stmt) != l0 {
                    out.push(
                        Finding::new(
                            &NOT_VERIFIED,
                            cx.span(a.stmt),
                            format!("not verified: arrivals on `{}` sit in different loops, so the per-phase count derived from them may not hold", k.barriers[f.barrier].name),
                        )
                        .label(cx.span(first.stmt), "another arrival site"),
                    );
                    break;
                }
            }
        }
    }
}
