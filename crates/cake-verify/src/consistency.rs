//! Data consistency: register ownership and operand layouts that the instruction can read.

use crate::ctx::Ctx;
use cake_diag::catalog::consistency::*;
use cake_diag::Finding;
use cake_ir::*;
use cake_target::MmaFamily;

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    ownership(cx, out);
    operand_layout(cx, out);
    ldmatrix_rows(cx, out);
    fp8_accumulation(cx, out);
    contraction(cx, out);
}

/// The tensor dimension a view axis holds, from the TMA or cp.async copies that fill the view.
fn source_dim(cx: &Ctx, view: ViewId, axis: usize) -> Option<(ParamId, usize, Extent)> {
    let k = cx.k;
    let vrank = k.views[view].shape.len();
    cx.ops.iter().find_map(|s| match &s.op {
        Op::TmaLoad { dst, src, .. } | Op::CpAsync { dst, src, .. } if dst.view == view => {
            let ParamKind::Tensor { dims, .. } = &k.params[*src].kind else {
                return None;
            };
            let d = dims.len().checked_sub(vrank)? + axis;
            Some((*src, d, dims[d]))
        }
        _ => None,
    })
}

fn contraction(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::Mma {
            a: Operand::Smem(a),
            b: Operand::Smem(b),
            ..
        } = &site.op
        else {
            continue;
        };
        // Stored axis summed over: a's columns (axis 1 unless transposed), b's rows (axis 0
        // unless transposed).
        let a_axis = if a.transposed { 0 } else { 1 };
        let b_axis = if b.transposed { 1 } else { 0 };
        let (Some((pa, da, ea)), Some((pb, db, eb))) = (
            source_dim(cx, a.view, a_axis),
            source_dim(cx, b.view, b_axis),
        ) else {
            continue;
        };
        if ea != eb {
            let name = |p: ParamId, d: usize, e: Extent| match e {
                Extent::Sym(s) => format!(
                    "`{}` (dimension {d} of `{}`)",
                    k.dims[s].name, k.params[p].name
                ),
                Extent::Fixed(n) => {
                    format!("a fixed {n} (dimension {d} of `{}`)", k.params[p].name)
                }
            };
            out.push(
                Finding::new(
                    &CONTRACTION_MISMATCH,
                    cx.span(site.stmt),
                    format!(
                        "this MMA sums `a` over {} but `b` over {}",
                        name(pa, da, ea),
                        name(pb, db, eb)
                    ),
                )
                .label(
                    k.views.span(a.view),
                    format!("`{}` holds {}", k.views[a.view].name, k.params[pa].name),
                )
                .label(
                    k.views.span(b.view),
                    format!("`{}` holds {}", k.views[b.view].name, k.params[pb].name),
                )
                .help(
                    "`a` is (M, K) as stored and `b` is (K, N): pass `.T` of a view stored (N, K)",
                ),
            );
        }
    }
}

fn ldmatrix_rows(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::Ldmatrix { src, .. } = &site.op else {
            continue;
        };
        let v = &k.views[src.view];
        if !v.row_bytes().is_multiple_of(16) {
            out.push(
                Finding::new(
                    &LDMATRIX_ROWS,
                    cx.span(site.stmt),
                    format!(
                        "rows of `{}` are {} B; ldmatrix needs 16-byte-aligned rows",
                        v.name,
                        v.row_bytes()
                    ),
                )
                .subject("view", &v.name)
                .expected("a multiple of 16 B")
                .actual(format!("{} B", v.row_bytes())),
            );
        }
    }
}

fn fp8_accumulation(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::Mma { a, accumulate, .. } = &site.op else {
            continue;
        };
        let dtype = match a {
            Operand::Smem(v) => k.views[v.view].dtype,
            Operand::Frag(f) => k.fragments[*f].dtype,
            Operand::Tmem(t) => k.tmems[t.region].dtype,
        };
        let in_loop = site
            .loops
            .iter()
            .any(|l| matches!(k.loops[*l].kind, LoopKind::Range { .. }));
        let always_fresh = matches!(k.exprs[*accumulate].kind, ExprKind::Bool(false));
        if dtype.is_fp8()
            && in_loop
            && !always_fresh
            && cx.target.mma == cake_target::MmaFamily::Wgmma
        {
            out.push(
                Finding::new(&FP8_ACCUMULATION, cx.span(site.stmt), "FP8 wgmma accumulates over a run-time loop in one accumulator; its reduced internal precision compounds over K")
                    .help("accumulate at most 128 of K per fragment (accumulate=False on each block) and add the blocks into an f32 total"),
            );
        }
    }
}

fn ownership(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Some(role) = site.role else { continue };
        for f in site.effects.fragments(k) {
            let frag = &k.fragments[f];
            if frag.role != role {
                out.push(
                    Finding::new(
                        &FRAGMENT_OWNERSHIP,
                        cx.span(site.stmt),
                        format!("role `{}` uses fragment `{}`, which belongs to role `{}`", k.roles[role].name, frag.name, k.roles[frag.role].name),
                    )
                    .subject("fragment", &frag.name)
                    .role(&k.roles[role].name)
                    .label(k.fragments.span(f), "declared here")
                    .help("registers are private to a role: hand the data over through a view and a barrier"),
                );
            }
        }
    }
}

fn operand_layout(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::Mma { acc, a, b, .. } = &site.op else {
            continue;
        };
        let family = cx.mma_family(acc);
        // wgmma reads non-16-bit operands K-major only; mma.sync's operands are loaded with
        // ldmatrix, whose `.trans` transposes 16-bit elements, so 8-bit and tf32 operands must
        // already be K-major in shared memory too.
        if !matches!(family, MmaFamily::Wgmma | MmaFamily::MmaSync) {
            continue;
        }
        for (which, o, want_t) in [("a", a, false), ("b", b, true)] {
            let Operand::Smem(v) = o else { continue };
            let view = &k.views[v.view];
            // K-major: `a` as stored (M, K), `b` as the transpose of a stored (N, K).
            let kmajor = v.transposed == want_t;
            if !kmajor && !matches!(view.dtype, DType::BF16 | DType::F16) {
                let why = if family == MmaFamily::MmaSync {
                    " (ldmatrix .trans moves 16-bit elements)"
                } else {
                    ""
                };
                out.push(
                    Finding::new(
                        &OPERAND_LAYOUT,
                        cx.span(site.stmt),
                        format!(
                            "{} reads {} operands K-major only{why}; `{which}` (`{}`) is MN-major",
                            family.name(),
                            view.dtype,
                            view.name
                        ),
                    )
                    .subject("view", &view.name)
                    .help(format!(
                        "store `{}` with K as its last (contiguous) dimension",
                        view.name
                    )),
                );
            }
            if family == MmaFamily::Wgmma
                && view.swizzle != 0
                && view.row_bytes() < view.swizzle as u64
            {
                out.push(
                    Finding::new(
                        &OPERAND_LAYOUT,
                        cx.span(site.stmt),
                        format!("`{}` rows are {} B, narrower than its {} B swizzle: the TMA box and the MMA descriptor would disagree on the layout", view.name, view.row_bytes(), view.swizzle),
                    )
                    .subject("view", &view.name)
                    .expected(format!("rows of at least {} B", view.swizzle))
                    .actual(format!("{} B", view.row_bytes()))
                    .help(format!("use swizzle={} or wider rows", view.row_bytes().min(128))),
                );
            }
        }
    }
}
