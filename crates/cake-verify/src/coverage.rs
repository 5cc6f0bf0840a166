//! Coverage: what the verifier does not model is said, never silently passed.

use crate::ctx::Ctx;
use cake_diag::catalog::coverage::*;
use cake_diag::Finding;
use cake_ir::*;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let sp = cx.span(site.stmt);
        if site.if_depth > 0
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
        if let Op::TmaLoad { multicast, .. } = site.op {
            if multicast > 1 {
                out.push(Finding::new(&NOT_VERIFIED, sp, "not verified: multicast arrival counts across the cluster are not modelled yet"));
            }
        }
    }
    if k.cluster.iter().product::<u32>() > 1 {
        out.push(Finding::new(&NOT_VERIFIED, k.span, "not verified: cluster-scope barriers and distributed shared memory are not modelled yet"));
    }
}
