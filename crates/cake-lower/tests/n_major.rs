//! wgmma with an N-major `b` (issue #17 item 2: attention's V as stored): a `(K, N)` view passed
//! to `lm.mma` untransposed is read with the instruction's transpose flag. Both forms: `a` in
//! shared memory (`examples/gemm_nn_sm90.py`) and in registers (the gemm-chain example with its
//! second weight stored `(K, N)`, as P · V is). And an M-major `a` (`.T` of a `(K, 64)` view:
//! `examples/gemm_tn_sm90.py`, C = Aᵀ · B), read with the transpose flag for A.

use std::path::Path;

mod common;

fn lower_source(name: &str, source: &str) -> String {
    common::lower_source(name, source, "")
}

fn example(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(file),
    )
    .expect("example")
}

#[test]
fn a_shared_a_with_an_n_major_b_sets_the_transpose_flag_and_panel_stride() {
    let cuda = lower_source("gemm_nn_sm90.py", &example("examples/gemm_nn_sm90.py"));
    // A K-major (flag 0), B N-major (flag 1).
    assert!(cuda.contains("%128, %129, p, 1, 1, 0, 1;"), "{cuda}");
    // The (64, 256) tile of B: four 64-column panels of 64 rows × 128 B = 8192 B apart (the
    // leading byte offset); each k-step 16 rows × 128 B further.
    for (kk, off) in [(0, 0), (1, 2048), (2, 4096), (3, 6144)] {
        let want = format!("cake_wgmma_desc((sB + 32768 * pipe_stage) + {off}, 8192, 1024, 1)");
        assert!(cuda.contains(&want), "k-step {kk}: {cuda}");
    }
}

#[test]
fn a_register_a_with_an_n_major_b_sets_the_transpose_flag() {
    // O = P · B2 with B2 stored (N1, N2) = (K, N).
    let source = example("examples/gemm_chain_sm90.py")
        .replace(
            "B2: lm.tensor[lm.bf16, N2, N1]",
            "B2: lm.tensor[lm.bf16, N1, N2]",
        )
        .replace(
            "sB2 = pool.view(shape=(N2, N1)",
            "sB2 = pool.view(shape=(N1, N2)",
        )
        .replace(
            "lm.mma(o, p, sB2.T, accumulate=False)",
            "lm.mma(o, p, sB2, accumulate=False)",
        );
    let cuda = lower_source("gemm_chain_nn.py", &source);
    assert!(
        cuda.contains("cake_wgmma_m64n128k16_f32_bf16_rs_tb("),
        "{cuda}"
    );
    assert!(cuda.contains("p, 1, 1, 1;"), "{cuda}");
    // N2 = 128: two panels of N1 = 64 rows × 128 B.
    assert!(cuda.contains("+ 2048, 8192, 1024, 1)"), "{cuda}");
}

#[test]
fn an_n_major_b_sliced_by_rows_is_not_lowered() {
    let source = example("examples/gemm_nn_sm90.py").replace(
        "lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB,",
        "lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.rows(0, 64),",
    );
    let checked = cake_driver::check("gemm_nn_rows.py", source.as_bytes(), Some("sm_90a"));
    let t = cake_target::lookup("sm_90a").unwrap();
    let lowered = cake_lower::lower(&checked.kernels[0], &checked.file, t).err();
    let said = format!("{:?} {lowered:?}", checked.findings);
    assert!(said.contains("N-major `b`"), "{said}");
}

#[test]
fn an_m_major_a_sets_the_transpose_flag_for_a_and_steps_its_panel_rows() {
    let cuda = lower_source("gemm_tn_sm90.py", &example("examples/gemm_tn_sm90.py"));
    assert!(
        cuda.contains("cake_wgmma_m64n256k16_f32_bf16_ta_tb("),
        "{cuda}"
    );
    // A M-major (flag 1), B N-major (flag 1).
    assert!(cuda.contains("%128, %129, p, 1, 1, 1, 1;"), "{cuda}");
    // Warpgroup w's (64, 64) block starts 64 rows × 128 B into the (128, 64) stage; each k-step
    // is 16 rows × 128 B further; one panel along M (its size, 16 KB, the unread leading
    // offset), 1024 B between 8-row groups of K.
    for off in [0, 2048, 4096, 6144] {
        let want = format!(
            "cake_wgmma_desc((sA + 16384 * pipe_stage) + 0 + ((math_index * 64)) * 128 + {off}, 16384, 1024, 1)"
        );
        assert!(cuda.contains(&want), "k-step at {off}: {cuda}");
    }
}

/// `path` checked and lowered for `target`: the generated CUDA.
fn lower_for(path: &str, target: &str) -> String {
    common::lower_source_for(path, &example(path), "", target)
}

#[test]
fn mn_major_operands_on_mma_sync_go_through_ldmatrix_trans() {
    let cuda = lower_for("examples/gemm_tn_sm80.py", "sm_80");
    // `a`: matrix j's lanes at K rows 8 (j / 2) on, M columns 8 (j % 2) on, of the warp's block.
    assert!(
        cuda.contains(
            "const int row = ((main_index / 2) * 32) + 16 * kt + (lane / 16) * 8 + lane % 8;"
        ),
        "{cuda}"
    );
    assert!(
        cuda.contains("const int cb = 2 * (16 * mt + ((lane / 8) % 2) * 8);"),
        "{cuda}"
    );
    // `b` N-major: K rows 8 (j % 2) on, N columns 8 (j / 2) on.
    assert!(
        cuda.contains(
            "const int row = ((main_index % 2) * 32) + 16 * kt + ((lane / 8) % 2) * 8 + lane % 8;"
        ),
        "{cuda}"
    );
    assert!(
        cuda.contains("const int cb = 2 * (16 * np + (lane / 16) * 8);"),
        "{cuda}"
    );
    assert_eq!(cuda.matches("cake_ldmatrix_x4_trans(").count(), 3, "{cuda}");
    // The K-major example has no use for the helper and does not carry it.
    assert!(!lower_for("examples/gemm_sm80.py", "sm_80").contains("ldmatrix_x4_trans"));
}

#[test]
fn an_fp8_mn_major_operand_on_mma_sync_is_not_lowered() {
    // ldmatrix.trans moves 16-bit elements only.
    let source = example("examples/gemm_tn_sm80.py").replace("lm.bf16", "lm.e4m3");
    let checked = cake_driver::check("gemm_tn_fp8.py", source.as_bytes(), Some("sm_89"));
    let t = cake_target::lookup("sm_89").unwrap();
    let lowered = cake_lower::lower(&checked.kernels[0], &checked.file, t).err();
    let said = format!("{:?} {lowered:?}", checked.findings);
    assert!(
        said.contains("ldmatrix.trans, which moves 16-bit elements"),
        "{said}"
    );
}
