//! A register `b` on mma.sync (docs/language.md §9.5, §9.6): `lm.ldmatrix` loads a `(K, N)`
//! fragment the way the MMA would load B from the view, and the MMA reads those registers. The
//! Ampere GEMM's `B_REGS = 1` form, its N-major twin (`examples/gemm_tn_sm80.py` with B in
//! registers: `ldmatrix.trans`), and the forms the generator refuses.

use std::path::Path;

mod common;

fn example(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(file),
    )
    .expect("example")
}

/// `source` checked for `target` (no errors allowed) and lowered: the generated CUDA.
fn lower(name: &str, source: &str, target: &str) -> String {
    common::lower_source_for(name, source, "", target)
}

/// What checking and lowering `source` for `target` said: findings and the lowering's error.
fn said(name: &str, source: &str, target: &str) -> String {
    let checked = cake_driver::check(name, source.as_bytes(), Some(target));
    let t = cake_target::lookup(target).unwrap();
    let lowered = checked
        .kernels
        .first()
        .and_then(|k| cake_lower::lower(k, &checked.file, t).err());
    format!("{:?} {lowered:?}", checked.findings)
}

fn gemm_sm80(b_regs: u32) -> String {
    let source = example("examples/gemm_sm80.py");
    let set = source.replace("\nB_REGS = 0 ", &format!("\nB_REGS = {b_regs} "));
    assert_ne!(set, source, "B_REGS is a knob of the example");
    set
}

#[test]
fn a_register_b_is_loaded_where_the_mma_would_have_loaded_it() {
    let view = lower("gemm_sm80.py", &example("examples/gemm_sm80.py"), "sm_80");
    let regs = lower("gemm_sm80.py", &gemm_sm80(1), "sm_80");
    // One ldmatrix.x4 per k-step and pair of 8-column tiles, at the addresses the MMA's own B
    // loads use, into the fragment's registers 4 (kt · N/16 + np) on.
    for line in [
        "const int row = ((main_index % 2) * 64) + 16 * np + (lane / 16) * 8 + lane % 8;",
        "const int cb = 32 * kt + ((lane / 8) % 2) * 16;",
    ] {
        assert!(view.contains(line), "{view}");
        assert!(regs.contains(line), "{regs}");
    }
    assert!(
        regs.contains("cake_ldmatrix_x4(b_frag + 4 * (kt * 4 + np), (sB + 8192 * pipe_stage)"),
        "{regs}"
    );
    assert!(regs.contains("uint32_t b_frag[32];"), "{regs}");
    // The MMAs read those registers: b0, b1 of column tile 2np, then of 2np + 1.
    assert!(
        regs.contains("cake_mma_m16n8k16_f32_bf16(acc + 4 * (mt * 8 + 2 * np), a_frag + 4 * (mt * 2 + kt), b_frag + 4 * (kt * 4 + np));"),
        "{regs}"
    );
    assert!(
        regs.contains("cake_mma_m16n8k16_f32_bf16(acc + 4 * (mt * 8 + 2 * np + 1), a_frag + 4 * (mt * 2 + kt), b_frag + 4 * (kt * 4 + np) + 2);"),
        "{regs}"
    );
    assert!(!regs.contains("b_regs"), "{regs}");
    // The stage is released by the plain arrive after the loads, not after the MMAs.
    let arrive = regs
        .find("cake_mbar_arrive(empty")
        .expect("an arrive on empty");
    let first_mma = regs.find("cake_mma_m16n8k16_f32_bf16(acc").expect("an MMA");
    assert!(arrive < first_mma, "{regs}");
}

#[test]
fn an_n_major_register_b_goes_through_ldmatrix_trans() {
    // gemm_tn_sm80 reads B stored (K, N): as a register `b`, its loads are the `.trans` ones.
    let source = example("examples/gemm_tn_sm80.py");
    let mma = "                lm.mma(acc, a_frag, sB.rows((main.index % 2) * BK, BK),";
    let with_regs = source
        .replace(
            "    a_frag = main.fragment(",
            "    b_frag = main.fragment(shape=(BK, WN), dtype=lm.bf16)\n    a_frag = main.fragment(",
        )
        .replace(
            mma,
            "                lm.ldmatrix(b_frag, sB.rows((main.index % 2) * BK, BK))\n                lm.mma(acc, a_frag, b_frag,",
        );
    assert_ne!(with_regs, source);
    let view = lower("gemm_tn_sm80.py", &source, "sm_80");
    let regs = lower("gemm_tn_sm80_regb.py", &with_regs, "sm_80");
    let row =
        "const int row = ((main_index % 2) * 32) + 16 * kt + ((lane / 8) % 2) * 8 + lane % 8;";
    assert!(view.contains(row) && regs.contains(row), "{regs}");
    assert!(
        regs.contains("cake_ldmatrix_x4_trans(b_frag + 4 * (kt * 4 + np), "),
        "{regs}"
    );
}

#[test]
fn a_register_b_compiles_without_spills() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-register-b-{}", std::process::id()));
    for target in ["sm_80", "sm_89"] {
        let cuda = lower("gemm_sm80.py", &gemm_sm80(1), target);
        let t = cake_target::lookup(target).unwrap();
        let build = tc
            .compile(&cuda, t, &out, "gemm_regb")
            .unwrap_or_else(|e| panic!("B_REGS = 1 for {target} does not compile: {e}"));
        let r = &build.resources[0];
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{target}: {r:?}");
        assert!(r.warnings.is_empty(), "{target}: {:?}", r.warnings);
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// One warp's (M, N) tile over K = 32 steps, `b` loaded into a `(32, N)` fragment; `mma` is the
/// MMA's operand list.
fn one_warp(m: u32, n: u32, mma: &str) -> String {
    format!(
        r#"import cake
from cake import lm


@cake.schedule(targets=["sm_80"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=({m}, 32), dtype=lm.bf16, stages=2, swizzle=64)
    sB = pool.view(shape=({n}, 32), dtype=lm.bf16, stages=2, swizzle=64)
    main = lm.role(warps=[0])
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[main], consumers=[main])
    empty = lm.barrier(pipe, producers=[main], consumers=[main])
    acc = main.fragment(shape=({m}, {n}), dtype=lm.f32)
    a = main.fragment(shape=({m}, 32), dtype=lm.bf16)
    b = main.fragment(shape=(32, {n}), dtype=lm.bf16)
    for tm, tn in lm.tiles(lm.cdiv(M, {m}), lm.cdiv(N, {n})):
        with main:
            for k in lm.range(lm.cdiv(K, 32), pipeline=pipe):
                lm.wait(empty)
                sA.cp_async(A, coords=(tm * {m}, k * 32), barrier=full)
                sB.cp_async(B, coords=(tn * {n}, k * 32), barrier=full)
                lm.wait(full)
                lm.ldmatrix(a, sA)
                lm.ldmatrix(b, sB.T)
                lm.arrive(empty)
                lm.mma(acc, {mma}, accumulate=k > 0)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * {m}, tn * {n}))
"#
    )
}

#[test]
fn forms_the_generator_refuses_are_named() {
    // The plain form lowers.
    let cuda = lower("one_warp.py", &one_warp(32, 32, "a, b"), "sm_80");
    assert!(
        cuda.contains("cake_ldmatrix_x4(b + 4 * (kt * 2 + np), "),
        "{cuda}"
    );
    // One fragment as both operands: their register layouts differ.
    let s = said("both.py", &one_warp(32, 32, "a, a"), "sm_80");
    assert!(s.contains("read as both `a` and `b`"), "{s}");
}
