//! Labels on declarations. A finding reported where a resource is used (a copy, an MMA, a wait)
//! is often caused by how the resource was declared — a shape, a stage count, a role list — so
//! every finding about a named view, fragment, barrier, pipeline, pool, TMEM region or role gets
//! a label on that declaration, unless it already points there.

use cake_diag::{Finding, Label, Span};
use cake_ir::Kernel;

pub(crate) fn add(k: &Kernel, out: &mut [Finding]) {
    for fd in out.iter_mut() {
        let Some(subject) = &fd.subject else {
            continue;
        };
        let Some(decl) = declaration(k, &subject.kind, &subject.name) else {
            continue;
        };
        let near = |s: Span| s.start < decl.end && decl.start < s.end;
        if near(fd.span) || fd.labels.iter().any(|l| near(l.span)) {
            continue;
        }
        let message = format!("`{}` is declared here", subject.name);
        fd.labels.push(Label {
            span: decl,
            message,
        });
    }
}

/// The declaration of the `kind` named `name` (a subject's kind and name).
fn declaration(k: &Kernel, kind: &str, name: &str) -> Option<Span> {
    macro_rules! find {
        ($arena:expr) => {
            $arena
                .iter()
                .find(|(_, x)| x.name == name)
                .map(|(h, _)| $arena.span(h))
        };
    }
    match kind {
        "view" => find!(k.views),
        "fragment" => find!(k.fragments),
        "barrier" => find!(k.barriers),
        "named barrier" | "named_barrier" => find!(k.named_barriers),
        "pipeline" => find!(k.pipelines),
        "pool" => find!(k.pools),
        "tmem" | "region" => find!(k.tmems),
        "role" => find!(k.roles),
        _ => None,
    }
}
