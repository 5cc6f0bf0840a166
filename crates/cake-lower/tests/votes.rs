//! Warp votes (`lm.any`, `lm.all`, docs/language.md §10.4a): what they lower to over each layout,
//! where the wait for an accumulator they read goes, and what the lowering refuses under them.

use std::path::Path;

fn lower(text: &str, target: &str) -> Result<String, Vec<String>> {
    let checked = cake_driver::check("votes.py", text.as_bytes(), Some(target));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    lower_checked(&checked, target)
}

fn lower_checked(checked: &cake_driver::Checked, target: &str) -> Result<String, Vec<String>> {
    let t = cake_target::lookup(target).unwrap();
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .map(|l| l.cuda)
        .map_err(|e| e.iter().map(|u| u.message.clone()).collect())
}

/// The Ampere GEMM (a mma.sync accumulator per warp) with an epilogue under votes.
fn gemm_sm80(epilogue: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gemm_sm80.py");
    let text = std::fs::read_to_string(path).expect("example");
    let store = "            lm.store(C, lm.cast(acc, lm.bf16),";
    assert!(text.contains(store));
    text.replace(store, &format!("{epilogue}\n{store}"))
}

#[test]
fn a_vote_over_an_mma_sync_tile_covers_every_element_the_thread_holds() {
    let cuda = lower(
        &gemm_sm80(
            "            if lm.all(acc == acc):\n                acc[:] = acc * 2.0\n            acc[:] = lm.select(lm.any(acc > 1.0), acc, 0.0)",
        ),
        "sm_80",
    )
    .unwrap();
    // 64 × 64 per warp: 4 row tiles of 16, 8 column tiles of 8, 2 × 2 elements each.
    assert!(
        cuda.contains("for (int mt = 0; mt < 4; ++mt) for (int i = 0; i < 8; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j) vote"),
        "{cuda}"
    );
    assert!(cuda.contains(
        " &= ((acc[4 * (mt * 8 + i) + 2 * h + j] == acc[4 * (mt * 8 + i) + 2 * h + j]));"
    ));
    assert!(cuda.contains("= __all_sync(0xffffffffu, vote"));
    // In lm.select the vote is computed before the assignment that reads it.
    let any = cuda
        .find("= __any_sync(0xffffffffu, vote")
        .expect("the second vote");
    let select = cuda.find("? acc[").expect("the select");
    assert!(any < select);
}

/// One warpgroup computing scores with wgmma; `body` is the code after the MMA.
fn wgmma_kernel(body: &str) -> String {
    format!(
        r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def k(A: lm.tensor[lm.bf16, "M", 64],
      B: lm.tensor[lm.bf16, 64, 64],
      C: lm.tensor[lm.f32, "M", 64]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    sB = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    sC = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    full = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    x = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(M // 64):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=full)
            sB.tma_load(B, coords=(0, 0), barrier=full)
            lm.wait(full)
            lm.mma(acc, sA, sB.T, accumulate=False)
{body}
            lm.store(C, acc, coords=(tm * 64, 0))
"#
    )
}

#[test]
fn an_in_flight_accumulator_read_by_a_vote_retires_before_it() {
    let cuda = lower(
        &wgmma_kernel("            if lm.any(acc > 100.0):\n                x[:] = 1.0"),
        "sm_90a",
    )
    .unwrap();
    let wait = cuda.find("cake_wgmma_wait<0>();").expect("a wait");
    let vote = cuda
        .find(" |= ((acc[4 * i + 2 * h + j] > 100.0f));")
        .expect("the vote");
    let branch = cuda.find("if (vote").expect("the branch");
    assert!(wait < vote && vote < branch, "{cuda}");
}

#[test]
fn a_replica_sync_under_a_vote_is_not_lowered() {
    // A store into shared memory synchronises the replica, whose warps that skipped the branch
    // never arrive: the verifier says so (CAKE-S023) and the lowering refuses it as well.
    let text = wgmma_kernel(
        "            if lm.any(acc > 100.0):\n                sC.store(lm.cast(acc, lm.bf16))",
    );
    let checked = cake_driver::check("votes.py", text.as_bytes(), Some("sm_90a"));
    let codes: Vec<&str> = checked
        .findings
        .iter()
        .filter(|f| f.severity == cake_diag::Severity::Error)
        .map(|f| f.code)
        .collect();
    assert_eq!(codes, ["CAKE-S023"], "{:?}", checked.findings);
    let errors = lower_checked(&checked, "sm_90a").expect_err("lowered");
    assert!(
        errors.iter().any(|m| m.contains("branch on a warp vote")),
        "{errors:?}"
    );
}
