//! Small-M GEMM with swapped operands (issue #19): the weight's rows fill wgmma's 64-row side,
//! the tokens its N, and `lm.store(..., transpose=True)` writes the 64 × MP tile into C's
//! columns; with split-K, a cluster's CTAs add their partial tiles through distributed shared
//! memory. What the emitted code must do and, with nvcc, that every M and split compiles without
//! spilling.

mod common;

use std::path::Path;

fn lower(m: i64) -> String {
    lower_with(&[("M", m)])
}

/// The example with its module constants set (`NW`, the weight's rows, picks the split).
fn lower_with(constants: &[(&str, i64)]) -> String {
    common::lower_example("tinygemm_sm90.py", constants)
}

/// The generated lines that call a helper whose name starts with `prefix`.
fn calls<'a>(cuda: &'a str, prefix: &str) -> Vec<&'a str> {
    cuda.lines()
        .filter(|l| l.trim_start().starts_with(prefix))
        .collect()
}

#[test]
fn the_tokens_are_wgmma_n_rounded_up_to_a_legal_width() {
    for (m, n) in [(1, 8), (8, 8), (9, 16), (16, 16), (33, 64), (100, 128)] {
        let cuda = lower(m);
        assert!(
            cuda.contains(&format!(
                "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.bf16.bf16"
            )),
            "M={m}"
        );
    }
}

#[test]
fn a_transposed_store_swaps_the_coordinates_and_writes_each_element() {
    let cuda = lower(16);
    let store = &cuda[cuda
        .find("accumulator tile, transposed")
        .expect("the store")..];
    // The tile's rows run along C's columns (from tn * 64; tn is the second tile axis, after the
    // split), its columns along C's rows (from 0).
    assert!(
        store.contains("const int row = ((tile_1 * 64) + 0) + lane_row + 8 * h;"),
        "{store}"
    );
    assert!(
        store.contains("const int col = 0 + lane_col + 8 * i;"),
        "{store}"
    );
    assert!(store.contains("if (row < dim_N) {"), "{store}");
    // A thread's column pair lands in two rows of C: one 2-byte store each, both bounds-checked.
    assert!(
        store.contains(
            "if (col < 16) C[((size_t)(col) * dim_N + (row))] = (uint16_t)(both & 0xFFFFu);"
        ),
        "{store}"
    );
    assert!(
        store.contains(
            "if (col + 1 < 16) C[((size_t)(col + 1) * dim_N + (row))] = (uint16_t)(both >> 16);"
        ),
        "{store}"
    );
}

/// The stmatrix calls of the staged (transposed) store, in order.
fn stmatrix_calls(cuda: &str) -> Vec<&str> {
    calls(cuda, "cake_stmatrix_x")
        .into_iter()
        .map(str::trim)
        .collect()
}

#[test]
fn a_staged_store_writes_the_transposed_tile_by_stmatrix_and_one_tma_store() {
    // M = 128: sixteen 8-column groups, eight stmatrix.x4 of four 8 x 8 blocks each (a loop).
    let cuda = lower_with(&[("M", 128), ("NW", 4096), ("TIGHT", 1), ("STAGED_STORE", 1)]);
    let store = &cuda[cuda.find("// sC.T.store(...)").expect("the staged store")..];
    assert!(
        store.contains("for (int i2 = 0; i2 + 1 < 16; i2 += 2) {"),
        "{store}"
    );
    assert_eq!(stmatrix_calls(store), ["cake_stmatrix_x4_trans(addr, r);"]);
    // Register q holds block (h = q % 2, i = i2 + q / 2): the pair the lane owns there.
    assert!(
        store.contains("const int i = i2 + q / 2, h = q % 2;"),
        "{store}"
    );
    assert!(
        store.contains("r[q] = cake_pack_bf16x2(v[0], v[1]);"),
        "{store}"
    );
    // Lane L addresses row L % 8 of block L / 8: view row = tile column (a token), the 16-byte
    // chunk = the warp's 16 weight rows plus 8 h, XORed with the view row mod 8.
    assert!(
        store.contains("const int vrow = (0) + 8 * (i2 + q / 2) + lane % 8;"),
        "{store}"
    );
    assert!(
        store.contains(
            "const uint32_t addr = sC + vrow * 128 + (((2 * (math_thread / 32) + q % 2) ^ (vrow % 8)) * 16);"
        ),
        "{store}"
    );
    // Fenced for the async proxy, then one bulk store of the whole (128, 64) tile into C.
    let tma = &store[store.find("cake_fence_proxy_async();").expect("the fence")..];
    assert!(tma.contains("cake_tma_store_2d(&tmap_C_"), "{tma}");
    assert!(tma.contains(", sC, (tile_1 * 64), 0);"), "{tma}");
    assert!(!cuda.contains("C[((size_t)"), "no element stores remain");
    assert!(cuda.contains("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16"));
}

#[test]
fn a_staged_store_of_an_odd_count_of_column_groups_ends_with_an_x2() {
    // M = 1 (TIGHT: MP = 8): one column group, one stmatrix.x2; M = 24: one x4 and one x2.
    let one = lower_with(&[("M", 1), ("NW", 4096), ("TIGHT", 1), ("STAGED_STORE", 1)]);
    assert_eq!(
        stmatrix_calls(&one),
        ["cake_stmatrix_x2_trans(addr, r);"],
        "M = 1"
    );
    assert!(one.contains("const int lane = math_thread % 32, q = (lane / 8) % 2;"));
    let odd = lower_with(&[("M", 24), ("NW", 4096), ("TIGHT", 1), ("STAGED_STORE", 1)]);
    assert_eq!(
        stmatrix_calls(&odd),
        [
            "cake_stmatrix_x4_trans(addr, r);",
            "cake_stmatrix_x2_trans(addr, r);"
        ],
        "M = 24"
    );
    assert!(odd.contains("const int vrow = (0) + 8 * (2 + q / 2) + lane % 8;"));
}

#[test]
fn a_transposed_store_into_a_view_of_the_wrong_shape_is_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tinygemm_sm90.py");
    let source = std::fs::read_to_string(path).expect("example");
    let view = "sC = pool.view(shape=(MP, 64), dtype=lm.bf16, swizzle=128)";
    assert!(source.contains(view));
    let staged = source.replace("STAGED_STORE = 0", "STAGED_STORE = 1");
    // 64 columns of 16-bit elements are one 128-byte swizzle row: without the swizzle the
    // layout is not the one TMA reads.
    assert_refused(
        &staged.replace(view, "sC = pool.view(shape=(MP, 64), dtype=lm.bf16)"),
        "the view must be (8, 64) with swizzle=128",
    );
}

#[test]
fn split_k_adds_the_peer_partials_after_a_cluster_scope_handoff() {
    let cuda = lower_with(&[("M", 16), ("NW", 2048)]);
    // Each CTA writes its f32 partial tile row-major, a pair per 8-byte store...
    assert!(
        cuda.contains("cake_st_shared_v2_f32(part + (((row) * 16 + (col)) * 4), v[0], v[1]);"),
        "{cuda}"
    );
    // ...publishes it (every warp arrives in both CTAs, releasing at cluster scope), and waits
    // with an acquire at cluster scope before CTA 0 reads its peer's copy, a column pair per
    // remote load.
    let arrive = cuda
        .find("cake_mbar_arrive_cluster(parts,")
        .expect("the arrival");
    let wait = cuda
        .find("cake_mbar_wait_cluster(parts,")
        .expect("the wait");
    let read = cuda
        .find("cake_ld_cluster_v2_f32(part + ((((0) + lane_row + 8 * h) * 16 + (lane_col + 8 * i)) * 4), (uint32_t)(1), peer0[4 * i + 2 * h], peer0[4 * i + 2 * h + 1]);")
        .expect("the peer read");
    assert!(arrive < wait && wait < read);
    // The pipeline's own waits keep CTA scope.
    assert!(cuda.contains("cake_mbar_wait(full + 8 * pipe_stage, pipe_phase);"));
    // No CTA leaves while its peer may still read its shared memory.
    assert!(
        cuda.trim_end().ends_with("cake_cluster_sync();\n}"),
        "{cuda}"
    );
}

#[test]
fn a_peer_read_of_a_swizzled_view_narrower_than_a_panel_is_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/check/CAKE-S025-good.py");
    let source = std::fs::read_to_string(path).expect("check file");
    let part = "part = pool.view(shape=(64, 16), dtype=lm.f32)";
    assert!(source.contains(part));
    // A 128B-swizzled f32 view is laid out in panels of 32 columns: 16 do not fill one.
    let source = source.replace(
        part,
        "part = pool.view(shape=(64, 16), dtype=lm.f32, swizzle=128)",
    );
    assert_refused(&source, "128B-swizzled with a multiple of 32 columns");
}

/// `source` passes the checks and the lowering refuses it with a message containing `reason`.
fn assert_refused(source: &str, reason: &str) {
    let checked = cake_driver::check("refused.py", source.as_bytes(), Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let t = cake_target::lookup("sm_90a").unwrap();
    let errors = cake_lower::lower(&checked.kernels[0], &checked.file, t).expect_err("refused");
    assert!(
        errors.iter().any(|u| u.message.contains(reason)),
        "{:?}",
        errors.iter().map(|u| &u.message).collect::<Vec<_>>()
    );
}

#[test]
fn the_weight_by_cp_async_goes_by_the_producers_threads() {
    // CP_ASYNC = 1: the producer's 128 threads copy the weight (64 rows x 256 columns at
    // BK = 256: 2048 pieces of 16 bytes, 16 per thread) with L2's default priority; the tokens
    // stay on one thread's TMA boxes.
    let cuda = lower_with(&[("M", 8), ("NW", 4096), ("BK", 256), ("CP_ASYNC", 1)]);
    assert!(cuda.contains("2048 pieces of 16 B, 16 per thread"));
    let copies = calls(&cuda, "cake_cp_async_16");
    assert_eq!(copies.len(), 1, "{copies:?}");
    assert!(copies[0].contains("cake_cp_async_16(") && copies[0].contains(" B + "));
    let boxes = calls(&cuda, "cake_tma_load_2d");
    assert!(boxes
        .iter()
        .any(|l| l.contains("cake_tma_load_2d(") && l.contains("&tmap_A_")));
    assert!(!boxes.iter().any(|l| l.contains("&tmap_B_")));
    assert!(!cuda.contains("cache_hint"));
}

/// `evict=` on cp_async is refused by the lowering with a located reason (ptxas 13.0 compiles the
/// hinted copies into instructions that read unwritten registers), not dropped.
#[test]
fn an_eviction_priority_on_cp_async_is_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tinygemm_sm90.py");
    let source = std::fs::read_to_string(path).expect("example");
    let plain = "sW.cp_async(B, coords=(tn * BN, (ks * KB + k) * BK), barrier=full)";
    assert!(source.contains(plain));
    let source = source
        .replace(
            plain,
            "sW.cp_async(B, coords=(tn * BN, (ks * KB + k) * BK), barrier=full, evict=\"first\")",
        )
        .replace("CP_ASYNC = 0", "CP_ASYNC = 1");
    assert_refused(&source, "`evict=\"first\"` on cp_async is not lowered");
}

#[test]
fn every_m_compiles_without_spills() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-tinygemm-{}", std::process::id()));
    // NW = 2048 splits K across a cluster of two.
    // CP_ASYNC = 1 (the weight by the producer's threads, BK = 256 and 128): its register
    // budget must hold sixteen pieces' addresses (with 56 ptxas spilled).
    for (m, nw, cp, bk) in [
        (1, 4096, 0, 64),
        (8, 4096, 0, 64),
        (16, 2048, 0, 64),
        (32, 4096, 0, 64),
        (64, 2048, 0, 64),
        (128, 4096, 0, 64),
        (8, 4096, 1, 256),
        (16, 2048, 1, 256),
        (64, 14336, 1, 128),
    ] {
        let build = tc
            .compile(
                &lower_with(&[("M", m), ("NW", nw), ("CP_ASYNC", cp), ("BK", bk)]),
                t,
                &out,
                &format!("tinygemm_{m}_{nw}_{cp}_{bk}"),
            )
            .unwrap_or_else(|e| panic!("M={m} NW={nw}: {e}"));
        for r in &build.resources {
            assert_eq!(r.spill_stores, 0, "M={m} spills: {}", build.log);
        }
    }
    // The staged store (stmatrix, then TMA), unsplit and split (CTA 0 stores the sum), at the
    // widths the family's routes use.
    for (m, nw, bk) in [
        (1, 4096, 256),
        (24, 4096, 128),
        (64, 2048, 128),
        (128, 4096, 64),
    ] {
        let constants = [
            ("M", m),
            ("NW", nw),
            ("BK", bk),
            ("TIGHT", 1),
            ("STAGED_STORE", 1),
        ];
        let build = tc
            .compile(
                &lower_with(&constants),
                t,
                &out,
                &format!("tinygemm_staged_{m}_{nw}"),
            )
            .unwrap_or_else(|e| panic!("M={m} NW={nw}: {e}"));
        for r in &build.resources {
            assert_eq!(r.spill_stores, 0, "M={m} spills: {}", build.log);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_weight_streams_evict_first_and_the_tokens_with_the_default_priority() {
    let cuda = lower(8);
    // One helper with the cache hint: a policy from createpolicy, passed as the copy's last
    // operand.
    let helper = &cuda[cuda
        .find("void cake_tma_load_2d_evict_first(")
        .expect("the evict-first helper")..];
    let helper = &helper[..helper.find("\n}\n").expect("its end")];
    assert!(helper.contains("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;"));
    assert!(helper.contains(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;"
    ));
    assert!(helper.contains("\"l\"(policy)"));
    // B (the weight) takes it, A (the tokens every CTA rereads) does not.
    let boxes = calls(&cuda, "cake_tma_load_2d");
    assert_eq!(boxes.len(), 2, "{boxes:?}");
    assert!(boxes
        .iter()
        .any(|l| l.contains("cake_tma_load_2d_evict_first(") && l.contains("&tmap_B_")));
    assert!(boxes
        .iter()
        .any(|l| l.contains("cake_tma_load_2d(") && l.contains("&tmap_A_")));
    // Without the knob, no hint and no helper.
    let plain = lower_with(&[("M", 8), ("EVICT_FIRST", 0)]);
    assert!(!plain.contains("evict_first"));
    assert!(!plain.contains("cache_hint"));
}
