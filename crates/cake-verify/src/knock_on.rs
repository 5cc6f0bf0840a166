//! Knock-on findings. One wrong name often trips several rules: a wait on a ring's "empty"
//! barrier where "full" was meant is a barrier-roles error, and then every read that wait should
//! have guarded is a read-before-wait error, and "full" has a declared consumer that never waits.
//! Each later finding gets a label on the first mistake, saying it follows from it, so an author
//! (or an agent) fixes that one first instead of chasing its consequences.

use crate::ctx::Ctx;
use crate::semantics::sibling;
use cake_diag::catalog::semantics::BARRIER_ROLES;
use cake_diag::{Finding, Label, Span};

/// A mistake other findings can follow from.
struct Root {
    span: Span,
    role: String,
    /// The barriers involved: the one named and the one most likely meant.
    barriers: [String; 2],
    what: String,
}

pub(crate) fn mark(cx: &Ctx, out: &mut [Finding]) {
    let k = cx.k;
    let mut roots = Vec::new();
    for f in &cx.barriers {
        let b = &k.barriers[f.barrier];
        for (s, r) in &f.waits {
            if b.consumers.contains(r) {
                continue;
            }
            if let Some(o) = sibling(k, f.barrier, |x| x.consumers.contains(r)) {
                roots.push(Root {
                    span: cx.span(*s),
                    role: k.roles[*r].name.clone(),
                    barriers: [b.name.clone(), k.barriers[o].name.clone()],
                    what: format!("the wait on `{}`", b.name),
                });
            }
        }
        for a in &f.arrivals {
            if b.producers.contains(&a.role) {
                continue;
            }
            if let Some(o) = sibling(k, f.barrier, |x| x.producers.contains(&a.role)) {
                roots.push(Root {
                    span: cx.span(a.stmt),
                    role: k.roles[a.role].name.clone(),
                    barriers: [b.name.clone(), k.barriers[o].name.clone()],
                    what: format!("the arrival on `{}`", b.name),
                });
            }
        }
    }
    for fd in out.iter_mut() {
        let Some(root) = roots.iter().find(|r| follows(fd, r)) else {
            continue;
        };
        fd.labels.push(Label {
            span: root.span,
            message: format!(
                "this follows from {} ({}): fix that first",
                root.what, BARRIER_ROLES.code
            ),
        });
    }
}

fn follows(fd: &Finding, root: &Root) -> bool {
    if fd.span == root.span || fd.role.as_ref().is_some_and(|r| *r != root.role) {
        return false;
    }
    root.barriers.iter().any(|b| {
        // Named in backticks, or as the argument of a suggested `lm.wait(b)`.
        let named =
            |text: &str| text.contains(&format!("`{b}`")) || text.contains(&format!("({b})"));
        fd.subject
            .as_ref()
            .is_some_and(|s| s.kind == "barrier" && &s.name == b)
            || named(&fd.message)
            || fd.help.as_deref().is_some_and(named)
    })
}
