//! Hardware conformance: instruction families per target, resource limits, register budgets,
//! warpgroup alignment, MMA shapes, TMA boxes, clusters and TMEM.

use crate::ctx::Ctx;
use cake_diag::catalog::conformance::*;
use cake_diag::{Finding, Span};
use cake_ir::sync::ArriveKind;
use cake_ir::*;
use cake_target::{check_mma_shape, mma_feature, mma_instr_k, Feature, MmaFamily};

pub fn check(cx: &Ctx, out: &mut Vec<Finding>) {
    availability(cx, out);
    smem(cx, out);
    threads_and_registers(cx, out);
    mma_shapes(cx, out);
    tma_boxes(cx, out);
    cluster(cx, out);
    tmem(cx, out);
    named_barrier_limit(cx, out);
}

/// Named barrier ids 1..=15 are available (0 is the CTA-wide barrier).
fn named_barrier_limit(cx: &Ctx, out: &mut Vec<Finding>) {
    let n = cx.k.named_barriers.len();
    if n > 15 {
        let (h, _) = cx.k.named_barriers.iter().nth(15).expect("more than 15");
        out.push(
            Finding::new(
                &NAMED_BARRIER_LIMIT,
                cx.k.named_barriers.span(h),
                format!("{n} named barriers; a CTA has ids 1..=15 for them"),
            )
            .expected("<= 15")
            .actual(n),
        );
    }
}

fn need(cx: &Ctx, out: &mut Vec<Finding>, f: Feature, span: Span, what: &str) {
    if !cx.target.has(f) {
        let have = f.targets().join(", ");
        out.push(
            Finding::new(
                &INSTRUCTION_UNAVAILABLE,
                span,
                format!(
                    "{what} needs {} ({}), which {} does not have",
                    f.describe(),
                    f.name(),
                    cx.target.name
                ),
            )
            .expected(format!("a target with {}: {have}", f.name()))
            .actual(cx.target.name)
            .help(format!(
                "compile for one of: {have}; Cake never substitutes another instruction"
            )),
        );
    }
}

fn availability(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let sp = cx.span(site.stmt);
        match &site.op {
            Op::TmaLoad { multicast, .. } => {
                need(cx, out, Feature::Tma, sp, "a TMA load");
                if *multicast > 1 {
                    need(cx, out, Feature::TmaMulticast, sp, "a multicast TMA load");
                }
            }
            Op::TmaStore { .. } => need(cx, out, Feature::Tma, sp, "a TMA store"),
            Op::CpAsync { .. } => need(cx, out, Feature::CpAsync, sp, "cp.async"),
            Op::Ldmatrix { .. } => need(cx, out, Feature::Ldmatrix, sp, "ldmatrix"),
            Op::FenceProxyAsync => need(cx, out, Feature::FenceProxyAsync, sp, "a proxy fence"),
            // tcgen05.commit, or on sm_90a a wait for the warpgroup's wgmma groups and one
            // arrival per warpgroup.
            Op::Commit { .. }
                if !cx.target.has(Feature::Wgmma) && !cx.target.has(Feature::Tcgen05) =>
            {
                let have: Vec<&str> = Feature::Wgmma
                    .targets()
                    .into_iter()
                    .chain(Feature::Tcgen05.targets())
                    .collect();
                out.push(
                    Finding::new(
                        &INSTRUCTION_UNAVAILABLE,
                        sp,
                        format!(
                            "lm.commit waits for asynchronous MMAs (wgmma or tcgen05), which {} does not have: its MMAs are synchronous",
                            cx.target.name
                        ),
                    )
                    .expected(format!("a target with wgmma or tcgen05: {}", have.join(", ")))
                    .actual(cx.target.name)
                    .help("release with `lm.arrive` (or `release=` on the MMA): after a synchronous MMA the stage is free"),
                );
            }
            Op::Commit { .. } => {}
            Op::TmemLoad { .. } | Op::TmemStore { .. } | Op::TmemCopy { .. } => {
                need(cx, out, Feature::Tmem, sp, "a TMEM access")
            }
            Op::Mma { acc, a, .. } => {
                let family = cx.mma_family(acc);
                let a_dtype = match a {
                    Operand::Smem(v) => k.views[v.view].dtype,
                    Operand::Frag(f) => k.fragments[*f].dtype,
                    Operand::Tmem(t) => k.tmems[t.region].dtype,
                };
                need(
                    cx,
                    out,
                    mma_feature(family, a_dtype),
                    sp,
                    &format!("this MMA ({})", family.name()),
                );
            }
            // Available on every target Cake knows.
            Op::StreamFixup { .. }
            | Op::Store { .. }
            | Op::CopyTo { .. }
            | Op::GlobalScatterAdd { .. }
            | Op::SmemStore { .. }
            | Op::ScatterAdd { .. }
            | Op::Assign { .. }
            | Op::AssignMany { .. }
            | Op::Wait { .. }
            | Op::Arrive { .. }
            | Op::Sync { .. } => {}
        }
    }
    for (rid, r) in k.roles.iter() {
        if r.regs.is_some() {
            need(
                cx,
                out,
                Feature::SetMaxNReg,
                k.roles.span(rid),
                &format!("the register budget of role `{}` (setmaxnreg)", r.name),
            );
        }
    }
    if k.cluster.iter().product::<u32>() > 1 {
        need(cx, out, Feature::Clusters, k.span, "a thread-block cluster");
    }
    for (t, _) in k.tmems.iter() {
        need(cx, out, Feature::Tmem, k.tmems.span(t), "tensor memory");
    }
}

fn smem(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let limit = cx.target.limits.smem_per_block_optin as u64;
    // The lowering adds 1024 B so the base can be aligned for 128-byte swizzle.
    let total = cx.layout.total + 1024;
    // `ctas_per_sm=n`: n CTAs' shared memory, each with the 1 KB the system reserves per CTA.
    let n = k.ctas_per_sm() as u64;
    let per_sm = cx.target.limits.smem_per_sm as u64;
    if n > 1 && total <= limit && n * (total + 1024) > per_sm {
        out.push(
            Finding::new(
                &SMEM_LIMIT,
                k.span,
                format!(
                    "`ctas_per_sm={n}` needs {n} x ({total} + 1024 reserved) = {} B of shared memory on an SM; {} has {per_sm} B",
                    n * (total + 1024),
                    cx.target.name
                ),
            )
            .expected(format!("<= {per_sm} B"))
            .actual(format!("{} B", n * (total + 1024)))
            .help("use fewer stages or smaller tiles, or fewer CTAs per SM"),
        );
    }
    if total > limit {
        let mut f = Finding::new(
            &SMEM_LIMIT,
            k.span,
            format!(
                "the schedule needs {total} B of shared memory; {} allows {limit} B per block",
                cx.target.name
            ),
        )
        .expected(format!("<= {limit} B"))
        .actual(format!("{total} B"));
        for p in &cx.layout.views {
            let v = &k.views[p.view];
            f = f.label(
                k.views.span(p.view),
                format!(
                    "`{}`: {} stage(s) x {} B = {} B",
                    v.name, v.stages, p.stage_stride, p.bytes
                ),
            );
        }
        f = f.note(format!(
            "{} B of mbarriers, 1024 B of base-alignment slack",
            cx.layout
                .barriers
                .iter()
                .map(|b| 8 * b.slots as u64)
                .sum::<u64>()
        ));
        out.push(f.help("use fewer stages or smaller tiles"));
    }
}

fn threads_and_registers(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let lim = &cx.target.limits;
    let threads = k.block_threads();
    if threads > lim.threads_per_block {
        out.push(
            Finding::new(
                &THREAD_LIMIT,
                k.span,
                format!(
                    "the roles need {threads} threads per block; {} allows {}",
                    cx.target.name, lim.threads_per_block
                ),
            )
            .expected(format!("<= {}", lim.threads_per_block))
            .actual(threads),
        );
        return;
    }
    // `ctas_per_sm=n`: n CTAs share the SM's threads and register file (ptxas keeps each
    // thread within 1/n of the file under __launch_bounds__(threads, n)).
    let n = k.ctas_per_sm();
    if n > 1 && (threads * n > lim.threads_per_sm || n > lim.max_ctas_per_sm) {
        out.push(
            Finding::new(
                &THREAD_LIMIT,
                k.span,
                format!(
                    "`ctas_per_sm={n}` needs {} threads on an SM; {} holds {} (and at most {} CTAs)",
                    threads * n,
                    cx.target.name,
                    lim.threads_per_sm,
                    lim.max_ctas_per_sm
                ),
            )
            .expected(format!("<= {} threads", lim.threads_per_sm))
            .actual(threads * n)
            .help("ask for fewer CTAs per SM or fewer threads per CTA"),
        );
        return;
    }
    let launch_regs = lim.launch_registers(threads * n);
    let mut total: u64 = 0;
    let mut any_budget = false;
    for (rid, r) in k.roles.iter() {
        let sp = k.roles.span(rid);
        let regs = match r.regs {
            Some(n) => {
                any_budget = true;
                if let Some((lo, hi, step)) = lim.setmaxnreg {
                    if n < lo || n > hi || n % step != 0 {
                        out.push(
                            Finding::new(&REGISTER_BUDGET, sp, format!("register budget {n} of role `{}` is not a legal setmaxnreg value", r.name))
                                .subject("role", &r.name)
                                .expected(format!("{lo}..={hi} in steps of {step}"))
                                .actual(n)
                                .help(format!("use {}", (n.clamp(lo, hi) / step) * step)),
                        );
                    }
                }
                if !whole_warpgroups(r) {
                    out.push(
                        Finding::new(&WARPGROUP_REQUIRED, sp, format!("role `{}` sets a register budget but is not made of whole warpgroups", r.name))
                            .subject("role", &r.name)
                            .help("setmaxnreg applies to a warpgroup; declare the role with warpgroup= or warpgroups="),
                    );
                }
                n
            }
            None => launch_regs,
        };
        total += r.threads() as u64 * regs as u64;
    }
    // setmaxnreg moves registers within what the CTA was launched with: every thread starts with
    // the launch allocation (ptxas's count under __launch_bounds__(threads, ctas_per_sm)), decreases free
    // registers into the CTA's pool and increases take from it. Budgets beyond the launch total
    // leave a `setmaxnreg.inc` waiting forever (seen on the H200: a 640-thread k-means variant
    // asking 4 x 128 x 112 + 128 x 56 = 64512 of 61440 hung).
    let launch_total = threads as u64 * launch_regs as u64;
    if any_budget && total > launch_total {
        let mut f = Finding::new(
            &REGISTER_BUDGET,
            k.span,
            format!(
                "the role register budgets need {total} registers; the CTA is launched with {launch_total} ({threads} threads x {launch_regs})"
            ),
        )
        .expected(format!("<= {launch_total}"))
        .actual(total)
        .help("lower the budgets: setmaxnreg.inc blocks until the CTA's pool has the registers, so oversubscription deadlocks");
        for (rid, r) in k.roles.iter() {
            f = f.label(
                k.roles.span(rid),
                format!(
                    "`{}`: {} threads x {} regs",
                    r.name,
                    r.threads(),
                    r.regs.unwrap_or(launch_regs)
                ),
            );
        }
        out.push(f);
    }
}

fn whole_warpgroups(r: &Role) -> bool {
    let w = r.warps();
    w.len().is_multiple_of(4)
        && w.chunks(4)
            .all(|c| c[0] % 4 == 0 && c.windows(2).all(|p| p[1] == p[0] + 1))
}

fn mma_shapes(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::Mma { acc, a, b, .. } = &site.op else {
            continue;
        };
        let sp = cx.span(site.stmt);
        let family = cx.mma_family(acc);
        let shape_dtype = |o: &Operand| -> (Vec<u32>, DType) {
            match o {
                Operand::Smem(v) => {
                    let view = &k.views[v.view];
                    let mut s = view.shape.clone();
                    if let Some((_, n)) = v.rows {
                        s[0] = n;
                    }
                    if v.transposed && s.len() == 2 {
                        s.swap(0, 1);
                    }
                    (s, view.dtype)
                }
                Operand::Frag(f) => (k.fragments[*f].shape.clone(), k.fragments[*f].dtype),
                Operand::Tmem(t) => (k.tmems[t.region].shape.clone(), k.tmems[t.region].dtype),
            }
        };
        let (acc_shape, acc_dtype) = shape_dtype(acc);
        let (a_shape, a_dtype) = shape_dtype(a);
        let (_, b_dtype) = shape_dtype(b);
        // The shapes come from the operands' declarations: each gets a label there.
        let declared = |f: Finding| -> Finding {
            [("accumulator", acc), ("operand a", a), ("operand b", b)]
                .into_iter()
                .fold(f, |f, (what, o)| {
                    let (name, span) = match o {
                        Operand::Smem(v) => (&k.views[v.view].name, k.views.span(v.view)),
                        Operand::Frag(x) => (&k.fragments[*x].name, k.fragments.span(*x)),
                        Operand::Tmem(t) => (&k.tmems[t.region].name, k.tmems.span(t.region)),
                    };
                    if f.labels.iter().any(|l| l.span == span) {
                        return f;
                    }
                    f.label(span, format!("{what} `{name}` is declared here"))
                })
        };
        if let Operand::Frag(bf) = b {
            if !family.b_in_registers() {
                let f = &k.fragments[*bf];
                // Where a register accumulator (the only kind this MMA could then have) is mma.sync.
                let have: Vec<&str> = cake_target::TARGETS
                    .iter()
                    .filter(|t| t.mma.register_accumulator_family() == MmaFamily::MmaSync)
                    .map(|t| t.name)
                    .collect();
                out.push(
                    Finding::new(&MMA_SHAPE, sp, format!("{} reads `b` from shared memory, but `{}` is a register fragment", family.name(), f.name))
                        .label(k.fragments.span(*bf), format!("`{}` is declared here", f.name))
                        .expected("`b` in shared memory (a view)")
                        .actual(format!("fragment `{}`", f.name))
                        .note(format!("on {} this MMA is {}; a register `b` is mma.sync's, with a register accumulator on {}", cx.target.name, family.name(), have.join(", ")))
                        .help("pass the view the fragment was loaded from (`.T` of an (N, K) view, or a (K, N) one)"),
                );
                continue;
            }
        }
        if acc_shape.len() != 2 || a_shape.len() != 2 {
            continue; // the front-end already reported it
        }
        let (m, n, kdepth) = (acc_shape[0], acc_shape[1], a_shape[1]);
        if family == MmaFamily::Wgmma {
            if let Some(role) = site.role {
                if !whole_warpgroups(&k.roles[role]) {
                    out.push(
                        Finding::new(&WARPGROUP_REQUIRED, sp, format!("wgmma is issued per warpgroup, but role `{}` is not made of whole warpgroups", k.roles[role].name))
                            .role(&k.roles[role].name)
                            .label(k.roles.span(role), "the role is declared here")
                            .help("declare the role with warpgroup= or warpgroups="),
                    );
                }
            }
        }
        if family == MmaFamily::MmaSync {
            if let Some(role) = site.role.filter(|r| k.roles[*r].unit != RoleUnit::Warp) {
                let r = &k.roles[role];
                out.push(
                    Finding::new(&MMA_ISSUER, sp, format!("mma.sync is issued per warp, each warp computing the accumulator tile it holds, but role `{}` is a warpgroup role", r.name))
                        .role(&r.name)
                        .label(k.roles.span(role), "the role is declared here")
                        .note(format!("on {} an accumulator in registers lowers to mma.sync; warpgroup MMAs (wgmma) are sm_90a's", cx.target.name))
                        .help("declare the role with warp= or warps= and give each warp its own (M, N) tile, or target sm_90a"),
                );
                continue;
            }
        }
        let Some(ik) = mma_instr_k(family, a_dtype) else {
            out.push(declared(Finding::new(
                &MMA_SHAPE,
                sp,
                format!("{} does not take {a_dtype} inputs", family.name()),
            )));
            continue;
        };
        let (im, in_) = family.instruction_tile(m, n);
        if let Err(msg) = check_mma_shape(family, a_dtype, b_dtype, acc_dtype, im, in_, ik) {
            out.push(declared(
                Finding::new(&MMA_SHAPE, sp, msg)
                    .note(format!("derived from acc {acc_shape:?} {acc_dtype}, a {a_shape:?} {a_dtype}, b {b_dtype} on {}", cx.target.name)),
            ));
            continue;
        }
        if family == MmaFamily::MmaSync && (m % 16 != 0 || n % 8 != 0) {
            out.push(declared(
                Finding::new(&MMA_SHAPE, sp, format!("an mma.sync accumulator tile is a multiple of 16 x 8 per warp; got {m} x {n}"))
                    .expected("M % 16 == 0 and N % 8 == 0")
                    .actual(format!("{m} x {n}")),
            ));
        }
        if kdepth % ik != 0 {
            out.push(declared(
                Finding::new(&MMA_SHAPE, sp, format!("the K depth {kdepth} is not a multiple of the instruction K ({ik}) for {} with {a_dtype}", family.name()))
                    .expected(format!("a multiple of {ik}"))
                    .actual(kdepth),
            ));
        }
    }
}

fn tma_boxes(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let (view, tensor) = match &site.op {
            Op::TmaLoad { dst, src, .. } => (dst, *src),
            Op::TmaStore { src, dst, .. } => (src, *dst),
            _ => continue,
        };
        let sp = cx.span(site.stmt);
        let v = &k.views[view.view];
        let rank = match &k.params[tensor].kind {
            ParamKind::Tensor { dims, .. } => dims.len(),
            ParamKind::Scalar { .. } => continue,
        };
        if rank > 5 {
            out.push(
                Finding::new(
                    &TMA_BOX,
                    sp,
                    format!(
                        "TMA supports tensors of rank 1..=5; `{}` has rank {rank}",
                        k.params[tensor].name
                    ),
                )
                .expected("<= 5")
                .actual(rank),
            );
        }
        // The box a copy moves: `.rows(start, n)` copies n rows (of a 1-D view, n elements).
        let rows = view.rows.map(|(_, n)| n);
        let inner = match v.shape.len() {
            1 => rows.unwrap_or(v.shape[0]),
            _ => v.panel_cols(),
        };
        let mut outer: Vec<u32> = v.shape.iter().rev().skip(1).copied().collect();
        if let (Some(n), Some(first)) = (rows, outer.last_mut()) {
            *first = n;
        }
        let inner_bytes = inner * v.dtype.bytes();
        if !inner_bytes.is_multiple_of(16) {
            out.push(
                Finding::new(&TMA_BOX, sp, format!("the innermost box extent of `{}` is {inner_bytes} B; TMA needs a multiple of 16 B", v.name))
                    .subject("view", &v.name)
                    .expected("a multiple of 16 B")
                    .actual(format!("{inner_bytes} B")),
            );
        }
        for (axis, &d) in outer.iter().enumerate() {
            if d > 256 {
                out.push(
                    Finding::new(
                        &TMA_BOX,
                        sp,
                        format!(
                            "box extent {d} of `{}` (axis {}) exceeds 256",
                            v.name,
                            v.shape.len() - 2 - axis
                        ),
                    )
                    .subject("view", &v.name)
                    .expected("<= 256")
                    .actual(d)
                    .help("split the copy into several TMA loads of at most 256 rows"),
                );
            }
        }
        if inner > 256 {
            out.push(
                Finding::new(
                    &TMA_BOX,
                    sp,
                    format!("innermost box extent {inner} of `{}` exceeds 256", v.name),
                )
                .expected("<= 256")
                .actual(inner)
                .help("copy ranges of at most 256 elements with `.rows(start, count)`"),
            );
        }
    }
}

fn cluster(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let n = k.cluster_size();
    let lim = &cx.target.limits;
    if n > 1 && lim.cluster_portable > 0 && n > lim.cluster_max {
        out.push(
            Finding::new(
                &CLUSTER_LIMIT,
                k.span,
                format!(
                    "a cluster of {n} CTAs exceeds {}'s maximum of {}",
                    cx.target.name, lim.cluster_max
                ),
            )
            .expected(format!("<= {}", lim.cluster_max))
            .actual(n),
        );
    } else if n > 1 && (k.cluster[1] != 1 || k.cluster[2] != 1) {
        out.push(
            Finding::new(
                &CLUSTER_LIMIT,
                k.span,
                format!(
                    "cluster {:?}: Cake's grids are one-dimensional, so a cluster is (n, 1, 1)",
                    k.cluster
                ),
            )
            .expected(format!("({n}, 1, 1)"))
            .actual(format!("{:?}", k.cluster)),
        );
    }
    multicast_shapes(cx, out);
    cluster_barriers(cx, out);
    peer_views(cx, out);
}

/// `view.load(cta=c)` reads CTA c of the cluster: a cluster of more than c CTAs. In a
/// persistent kernel a CTA's next tile stores into the view again, so the reads of each tile
/// must be released to the storers first ([`peer_reads_released`]).
fn peer_views(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let n = k.cluster_size();
    for (i, site) in cx.ops.iter().enumerate() {
        for (x, v, c) in crate::safety::peer_loads(k, site) {
            let name = &k.views[v].name;
            // A run-time rank is shown in range from what its variables run over where it is
            // read (the `if`s around the read narrow them).
            let range = k
                .const_int(c)
                .is_none()
                .then(|| bounds::bounds_under(k, c, &site.guards));
            let problem = if n < 2 {
                Some((
                    format!("this reads `{name}` of cluster CTA {}, but the kernel's cluster has {n} CTA", k.const_int(c).map_or("cta".to_string(), |c| c.to_string())),
                    "a cluster of 2 or more CTAs".to_string(),
                    format!("{:?}", k.cluster),
                ))
            } else if let Some(rank) = k.const_int(c).filter(|&r| r >= n as i64) {
                Some((
                    format!(
                        "CTA {rank} is not in the cluster: its ranks are 0 to {}",
                        n - 1
                    ),
                    format!("a rank in 0..{n}"),
                    rank.to_string(),
                ))
            } else if let Some(range) = range.filter(|b| !b.within(n as i64)) {
                let text = cx.index_text(c);
                Some((
                    format!(
                        "the rank `{text}` of the CTA whose `{name}` this reads can be any of {range}, but the cluster's ranks are 0 to {}",
                        n - 1
                    ),
                    format!("a rank in 0..{n}"),
                    format!("`{text}`, in {range}"),
                ))
            } else if k.persistent && !peer_reads_released(cx, i, v) {
                Some((
                    format!("a persistent CTA stores its next tile into `{name}` while a peer may still read this tile's: nothing orders this read before that store"),
                    format!("after this read, `lm.arrive(b)` on a cluster barrier that the role storing `{name}` waits on after its store, in the same tile"),
                    "no such barrier".to_string(),
                ))
            } else {
                None
            };
            if let Some((msg, expected, actual)) = problem {
                out.push(
                    Finding::new(&PEER_VIEW, k.exprs.span(x), msg)
                        .subject("view", name)
                        .role(cx.role_name(site.role))
                        .expected(expected)
                        .actual(actual),
                );
            }
        }
    }
}

/// In a persistent kernel, the peer read at op `read` of view `v` is over before any CTA stores
/// its next tile into `v`: after the read, the reading role arrives on a cluster barrier `b`,
/// and every role that stores into `v` waits on `b` after its store, in the same tile. Unless
/// `b` starts free (its first wait passes, so each wait would complete the previous tile's
/// phase), that wait completes only once every CTA's readers have arrived for this tile, so no
/// store of the next tile can overtake a read of this one.
fn peer_reads_released(cx: &Ctx, read: usize, v: ViewId) -> bool {
    let k = cx.k;
    let reader = cx.ops[read].role;
    let stores: Vec<usize> = (0..cx.ops.len())
        .filter(|&s| matches!(&cx.ops[s].op, Op::SmemStore { dst, .. } if dst.view == v))
        .collect();
    cx.ops[read + 1..].iter().any(|arrive| {
        let Op::Arrive { barrier } = arrive.op else {
            return false;
        };
        arrive.role == reader
            && k.barriers[barrier].cluster
            && !cx.barriers[barrier.index()].starts_free()
            && stores.iter().all(|&s| {
                cx.ops[s + 1..].iter().any(|w| {
                    w.role == cx.ops[s].role
                        && matches!(w.op, Op::Wait { barrier: b } if b == barrier)
                })
            })
    })
}

/// A multicast load fills a whole 2-D view in each of the cluster's `(n, 1, 1)` CTAs, one share
/// of 8·j rows per CTA.
fn multicast_shapes(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    for site in &cx.ops {
        let Op::TmaLoad { dst, multicast, .. } = &site.op else {
            continue;
        };
        let m = *multicast;
        if m <= 1 || !cx.target.has(Feature::TmaMulticast) {
            continue;
        }
        let view = &k.views[dst.view];
        let sp = cx.span(site.stmt);
        let problem = k.multicast_problem(dst, m).map(|p| match p {
            MulticastProblem::ClusterShape => (
                format!(
                    "multicast={m} delivers to a cluster of {m} CTAs, but the kernel's cluster is {:?}",
                    k.cluster
                ),
                format!("cluster=({m}, 1, 1)"),
                format!("{:?}", k.cluster),
            ),
            MulticastProblem::NotWholeView => (
                format!(
                    "a multicast load fills a whole 2-D view; this one fills {} of `{}` {:?}",
                    if dst.rows.is_some() {
                        "a row range"
                    } else {
                        "all"
                    },
                    view.name,
                    view.shape
                ),
                "a whole 2-D view".into(),
                format!("{:?}", view.shape),
            ),
            MulticastProblem::RowShares => (
                format!(
                    "`{}` has {} rows, which do not split into {m} shares of a multiple of 8 rows",
                    view.name, view.shape[0]
                ),
                format!("rows a multiple of {}", 8 * m),
                view.shape[0].to_string(),
            ),
        });
        if let Some((msg, expected, actual)) = problem {
            out.push(
                Finding::new(&MULTICAST_SHAPE, sp, msg)
                    .subject("view", &view.name)
                    .role(cx.role_name(site.role))
                    .expected(expected)
                    .actual(actual),
            );
        }
    }
}

/// `cluster=True` needs a cluster of two or more CTAs, and arrivals the compiler can send to
/// every CTA (not a TMA or cp.async completion, which signals the CTA it lands in).
fn cluster_barriers(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let n = k.cluster_size();
    for (b, bar) in k.barriers.iter() {
        if !bar.cluster {
            continue;
        }
        let sp = k.barriers.span(b);
        if n < 2 {
            out.push(
                Finding::new(
                    &CLUSTER_BARRIER,
                    sp,
                    format!(
                        "`{}` is a cluster barrier, but the kernel's cluster has {n} CTA(s)",
                        bar.name
                    ),
                )
                .subject("barrier", &bar.name)
                .expected("a cluster of 2 or more CTAs")
                .actual(format!("{:?}", k.cluster))
                .help("declare a cluster such as cluster=(2, 1, 1) on the schedule, or drop cluster=True"),
            );
            continue;
        }
        for a in &cx.barriers[b.index()].arrivals {
            // Copies complete on the barrier of the CTA they land in; arrivals, releases and
            // tcgen05 commits (multicast) reach every CTA.
            if matches!(a.kind, ArriveKind::Tma | ArriveKind::CpAsync) {
                out.push(
                    Finding::new(
                        &CLUSTER_BARRIER,
                        cx.span(a.stmt),
                        format!(
                            "a {} completes on the barrier of its own CTA; `{}` is a cluster barrier",
                            if a.kind == ArriveKind::Tma {
                                "TMA load"
                            } else {
                                "cp.async"
                            },
                            bar.name
                        ),
                    )
                    .subject("barrier", &bar.name)
                    .role(cx.role_name(Some(a.role)))
                    .label(sp, "declared with cluster=True here")
                    .help("signal a CTA barrier (without cluster=True) from this operation"),
                );
            }
        }
    }
}

fn tmem(cx: &Ctx, out: &mut Vec<Finding>) {
    let k = cx.k;
    let Some(spec) = cx.target.tmem else { return };
    let mut total = 0;
    for (t, r) in k.tmems.iter() {
        let sp = k.tmems.span(t);
        if !r.cols.is_power_of_two() || r.cols < spec.min_alloc_cols || r.cols > spec.max_alloc_cols
        {
            out.push(
                Finding::new(
                    &TMEM_ALLOCATION,
                    sp,
                    format!(
                        "TMEM region `{}` has {} columns; allocations are powers of two in {}..={}",
                        r.name, r.cols, spec.min_alloc_cols, spec.max_alloc_cols
                    ),
                )
                .subject("tmem", &r.name)
                .expected(format!(
                    "a power of two in {}..={}",
                    spec.min_alloc_cols, spec.max_alloc_cols
                ))
                .actual(r.cols),
            );
        }
        for site in &cx.ops {
            let touches = matches!(&site.op, Op::TmemLoad { src, .. } if src.region == t)
                || matches!(&site.op, Op::TmemStore { dst, .. } if dst.region == t);
            if let (true, Some(role)) = (touches, site.role) {
                let role = &k.roles[role];
                let reach = role.unit.threads();
                if r.lanes > reach {
                    out.push(
                        Finding::new(
                            &TMEM_LANES,
                            cx.span(site.stmt),
                            format!("`{}` spans {} lanes, but each replica of role `{}` ({}) reaches {reach}", r.name, r.lanes, role.name, if reach == 32 { "one warp" } else { "a warpgroup" }),
                        )
                        .subject("tmem", &r.name)
                        .role(&role.name)
                        .expected(format!("<= {reach} lanes"))
                        .actual(r.lanes)
                        .label(k.roles.span(site.role.expect("checked above")), format!("`{}` is declared here", role.name))
                        .help("access a 128-lane region from a warpgroup role"),
                    );
                }
            }
        }
        if r.lanes > spec.lanes {
            out.push(
                Finding::new(
                    &TMEM_ALLOCATION,
                    sp,
                    format!(
                        "TMEM has {} lanes; `{}` asks for {}",
                        spec.lanes, r.name, r.lanes
                    ),
                )
                .expected(spec.lanes)
                .actual(r.lanes),
            );
        }
        total += r.total_cols();
    }
    if total > spec.columns {
        // Each region's share, labelled at its declaration.
        let f = k.tmems.iter().fold(
            Finding::new(
                &TMEM_ALLOCATION,
                k.span,
                format!(
                    "TMEM regions need {total} columns; a CTA has {}",
                    spec.columns
                ),
            )
            .expected(format!("<= {}", spec.columns))
            .actual(total),
            |f, (t, r)| {
                let share = match r.stages {
                    1 => format!("{} columns", r.cols),
                    n => format!("{n} stages × {} = {} columns", r.cols, r.total_cols()),
                };
                f.label(k.tmems.span(t), format!("`{}`: {share}", r.name))
            },
        );
        out.push(f);
    }
}
