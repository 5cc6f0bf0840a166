//! `with lm.ahead(n):` (docs/language.md §8.3a): the region that opens a pipelined loop's body
//! is issued n iterations early — the first n iterations' before the loop, iteration k + n's in
//! iteration k under a guard — at the stage, phase and loop variable of the iteration it serves.

mod common;

use common::find;

use std::path::Path;

/// tests/check/S012_ahead_deferred_release.py (one warpgroup: TMA copies, wgmma) issuing its
/// copies `n` iterations early, lowered for sm_90a.
fn one_warpgroup_gemm(n: u32) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/check/S012_ahead_deferred_release.py");
    let text = std::fs::read_to_string(path).expect("schedule");
    let text = text.replace("lm.ahead(STAGES - 1)", &format!("lm.ahead({n})"));
    common::lower_source(
        "S012_ahead_deferred_release.py",
        &text,
        &format!("ahead {n}"),
    )
}

#[test]
fn the_region_of_iteration_k_plus_n_is_issued_in_iteration_k() {
    let cuda = one_warpgroup_gemm(1);
    let lines: Vec<&str> = cuda.lines().collect();
    // Before the loop: iteration 0's region, at stage and phase of pipe_it + 0.
    let prologue = find(
        &lines,
        0,
        "for (int k_1_ahead = 0; k_1_ahead < 1 && 0 + k_1_ahead < ",
    );
    let at = find(&lines, prologue, "const int k_1 = 0 + k_1_ahead;");
    let at = find(
        &lines,
        at,
        "const uint32_t pipe_stage = (pipe_it + k_1_ahead) % 3;",
    );
    let at = find(
        &lines,
        at,
        "cake_mbar_wait(empty + 8 * pipe_stage, pipe_phase ^ 1);",
    );
    let at = find(&lines, at, "cake_tma_load_2d((sA + 8192 * pipe_stage)");
    // The loop: iteration k + 1's region first, under its guard, in a scope whose loop variable,
    // stage and phase are that iteration's; then iteration k's own wait on `full`.
    let lp = find(&lines, at, "for (int k_1 = 0; k_1 < ");
    let guard = find(&lines, lp, "if (k_1 + 1 < ");
    let at = find(&lines, guard, "const uint32_t pipe_it_early = pipe_it + 1;");
    let at = find(&lines, at, "const int k_1 = k_1_early;");
    let at = find(&lines, at, "const uint32_t pipe_stage = pipe_it_early % 3;");
    let at = find(
        &lines,
        at,
        "cake_mbar_wait(empty + 8 * pipe_stage, pipe_phase ^ 1);",
    );
    let at = find(&lines, at, "(k_1 * 64), (tile_0 * 64));");
    let full = find(
        &lines,
        at,
        "cake_mbar_wait(full + 8 * pipe_stage, pipe_phase);",
    );
    // Exactly two places issue the copy of A: the prologue and the guarded region.
    let copies = lines
        .iter()
        .filter(|l| l.contains("cake_tma_load_2d((sA"))
        .count();
    assert_eq!(copies, 2, "{cuda}");
    assert!(find(&lines, full, "cake_wgmma_commit();") > full);
}

#[test]
fn a_region_issued_zero_iterations_early_is_the_loop_as_written() {
    let cuda = one_warpgroup_gemm(0);
    assert!(!cuda.contains("k_1_ahead"), "{cuda}");
    assert!(!cuda.contains("k_1_early"), "{cuda}");
    let lines: Vec<&str> = cuda.lines().collect();
    let lp = find(&lines, 0, "for (int k_1 = 0; k_1 < ");
    let empty = find(
        &lines,
        lp,
        "cake_mbar_wait(empty + 8 * pipe_stage, pipe_phase ^ 1);",
    );
    find(
        &lines,
        empty,
        "cake_mbar_wait(full + 8 * pipe_stage, pipe_phase);",
    );
}
