//! The MMA scheduling of examples/attention_sm90.py (issue #17): `defer=True` rotates a
//! pipelined loop so the deferred P·V of tile j − 1 is issued after Q·K_jᵀ and overlaps the
//! softmax of tile j (`wait_group 1` on the scores); P is kept in two arrays when the softmax
//! writes it while P·V may still read it or the register budget has room, else in one (the
//! rescale of o retires P·V first);
//! `turns=True` orders the consumer warpgroups' MMAs through a hardware barrier per replica;
//! the lazy rescale's warp votes lower to `vote.sync`. Checked in the emitted code and, with
//! nvcc, by compiling it without serialised wgmmas.

mod common;

use common::find;

use std::path::Path;

fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/attention_sm90.py");
    std::fs::read_to_string(path).expect("schedule")
}

fn lower_text(text: &str) -> String {
    let checked = cake_driver::check("attention_sm90.py", text.as_bytes(), Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let t = cake_target::lookup("sm_90a").unwrap();
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .unwrap_or_else(|e| panic!("does not lower: {e:?}"))
        .cuda
}

/// The example with the lazy rescale (warp votes).
fn lazy() -> String {
    let text = example().replace("LAZY = 0 ", "LAZY = 1 ");
    assert_ne!(text, example());
    text
}

/// The example at D = 64, with three consumer warpgroups of 160 registers.
fn d64() -> String {
    let text = example().replace("D = 128 ", "D = 64 ");
    assert_ne!(text, example());
    text
}

/// `text` with P written before the rescale of o, which then goes with P·V into the next
/// iteration (FlashAttention-3's order).
fn fa3_order(text: &str) -> String {
    let out = text.replace(
        "                    o[:] = o * alpha[:, None]      # waits for the previous P·V\n                p[:] = lm.cast(s, lm.bf16)         # P·V has retired: the rescale waited\n",
        "                p[:] = lm.cast(s, lm.bf16)\n                o[:] = o * alpha[:, None]\n",
    );
    assert_ne!(out, text);
    out
}

#[test]
fn the_deferred_mma_follows_the_next_iterations_first_mma() {
    let cuda = lower_text(&example());
    let lines: Vec<&str> = cuda.lines().collect();
    // The first iteration is peeled; the loop proper is unrolled by two (P in two arrays: the
    // role's 232 registers have room for the second).
    let first = find(&lines, 0, "the first iteration: nothing deferred yet");
    let pair = find(&lines, first, "_pair = 0 + 1;");
    // In the loop: Q·Kᵀ, then the previous iteration's P·V (its stage, its P), then the wait
    // for the scores alone.
    let qk = find(&lines, pair, "cake_wgmma_m64n128k16_f32_bf16(s,");
    let deferred = find(&lines, qk, "deferred from the previous iteration");
    let pv = find(
        &lines,
        deferred,
        "cake_wgmma_m64n128k16_f32_bf16_rs_tb(o, p[0]",
    );
    assert!(lines[pv].contains("kv_prev_stage"), "{}", lines[pv]);
    let wait_s = find(&lines, pv, "cake_wgmma_wait<");
    assert!(
        lines[wait_s].contains("wait<1>") && lines[wait_s].contains("`s`"),
        "{}",
        lines[wait_s]
    );
    // The softmax runs under P·V; the rescale of o waits for it, then the other array of P is
    // written.
    let exp = find(
        &lines,
        wait_s,
        "s[4 * i + 2 * h + j] = (float)(cake_ex2_ftz(",
    );
    let wait_o = find(&lines, wait_s, "cake_wgmma_wait<0>");
    let cast = find(&lines, wait_s, "p_next[2 * i + h] = cake_pack_bf16x2");
    assert!(exp < wait_o && wait_o < cast, "{exp} {wait_o} {cast}");
    // The second half reads p_next and writes p.
    let half = find(&lines, cast, "_pair + 1 < ");
    let pv2 = find(&lines, half, "_rs_tb(o, p_next[0]");
    let cast2 = find(&lines, pv2, "; p[2 * i + h] = cake_pack_bf16x2");
    assert!(cast2 > pv2);
    // After the loop, the last deferred MMA, from whichever array the last iteration wrote.
    let last = find(&lines, cast2, "the last iteration's deferred MMA");
    find(&lines, last, "_rs_tb(o, p[0]");
    find(&lines, last, "_rs_tb(o, p_next[0]");
}

#[test]
fn p_keeps_one_array_where_the_budget_has_no_room() {
    // Three consumer warpgroups of 160 registers: 132 in fragments, no room for 32 more. The
    // rescale of o retires P·V before P is written, so one array is safe.
    let cuda = lower_text(&d64());
    assert!(!cuda.contains("p_next"), "one array of P");
    assert!(!cuda.contains("_pair = 0 + 1;"), "not unrolled");
    let lines: Vec<&str> = cuda.lines().collect();
    let top = find(&lines, find(&lines, 0, "the first iteration"), "++kv_it;");
    let pv = find(&lines, top, "_rs_tb(o, p[0]");
    let wait_s = find(&lines, pv, "cake_wgmma_wait<1>");
    let wait_o = find(&lines, wait_s, "cake_wgmma_wait<0>");
    let cast = find(&lines, wait_s, "p[2 * i + h] = cake_pack_bf16x2");
    assert!(wait_o < cast, "{wait_o} {cast}");
}

#[test]
fn p_written_under_its_mma_takes_two_arrays() {
    // Even without room: P written before anything retires P·V needs its second array.
    let cuda = lower_text(&fa3_order(&d64()));
    let lines: Vec<&str> = cuda.lines().collect();
    let first = find(&lines, 0, "the first iteration: nothing deferred yet");
    let pair = find(&lines, first, "_pair = 0 + 1;");
    let pv = find(&lines, pair, "_rs_tb(o, p[0]");
    let wait_s = find(&lines, pv, "cake_wgmma_wait<1>");
    let cast = find(&lines, wait_s, "p_next[2 * i + h] = cake_pack_bf16x2");
    assert!(
        !lines[wait_s..cast]
            .iter()
            .any(|l| l.contains("cake_wgmma_wait<0>")),
        "P is written without waiting for P·V"
    );
}

#[test]
fn the_lazy_rescale_votes_per_warp() {
    let cuda = lower_text(&lazy());
    let lines: Vec<&str> = cuda.lines().collect();
    let top = find(
        &lines,
        find(&lines, 0, "the first iteration"),
        "_pair = 0 + 1;",
    );
    // The maximum moves on a vote over the warp's rows ...
    let vote = find(&lines, top, " |= (((m_new[h] - m_i[h]) > 8.0f));");
    assert!(lines[vote + 1].contains(" = __any_sync(0xffffffffu, vote"));
    assert!(lines[vote + 2].contains("if (vote"), "{}", lines[vote + 2]);
    // ... and o is rescaled on another, after the wait for P·V placed outside the branch (a
    // wgmma wait is for the whole warpgroup; the vote decides per warp).
    let wait_o = find(&lines, vote, "cake_wgmma_wait<0>");
    let vote_o = find(&lines, vote + 3, "= __any_sync(0xffffffffu,");
    let branch = find(&lines, vote_o, "if (vote");
    let rescale = find(
        &lines,
        branch,
        "o[4 * i + 2 * h + j] = (float)((o[4 * i + 2 * h + j] * alpha[h]))",
    );
    assert!(
        wait_o < vote_o && rescale == branch + 2,
        "{wait_o} {vote_o} {branch} {rescale}"
    );
}

#[test]
fn consumer_warpgroups_take_turns_at_the_score_mma() {
    let cuda = lower_text(&example());
    // Replica 1 lets replica 0 go first; each waits on its own barrier and hands on to the next.
    assert!(
        cuda.contains("if (math_index == 1) cake_named_arrive(1, 256);"),
        "{cuda}"
    );
    let lines: Vec<&str> = cuda.lines().collect();
    let pair = find(&lines, 0, "_pair = 0 + 1;");
    let sync = find(&lines, pair, "cake_named_sync(1 + math_index, 256);");
    let qk = find(&lines, sync, "cake_wgmma_m64n128k16_f32_bf16(s,");
    let pv = find(&lines, qk, "_rs_tb(o, p[0]");
    // The turn is handed on once the deferred P·V is issued too.
    let hand_on = find(
        &lines,
        qk,
        "cake_named_arrive(1 + (math_index + 1) % 2, 256);",
    );
    assert!(hand_on > pv, "the turn covers Q·Kᵀ and the deferred P·V");
}

#[test]
fn without_defer_the_loop_is_not_rotated() {
    let text = example().replace(", defer=True)", ")");
    let cuda = lower_text(&text);
    assert!(!cuda.contains("deferred from the previous iteration"));
    assert!(!cuda.contains("p_next"));
}

/// P·V accumulates into `o` over a pipelined loop and nothing in the loop reads `o`, which is
/// where a release lags one iteration (one group kept in flight) — but the next iteration
/// writes P, P·V's register operand, so P·V must retire within its own iteration.
const P_REWRITTEN_UNDER_ITS_MMA: &str = r#"import cake
from cake import lm

D = 64
BN = 64


@cake.schedule(targets=["sm_90a"])
def pv(Q: lm.tensor[lm.bf16, "S", D],
       K: lm.tensor[lm.bf16, "S", D],
       V: lm.tensor[lm.bf16, "S", D],
       O: lm.tensor[lm.f32, "S", D]):
    pool = lm.smem()
    sQ = pool.view(shape=(64, D), dtype=lm.bf16, swizzle=128)
    sK = pool.view(shape=(BN, D), dtype=lm.bf16, swizzle=128)
    sV = pool.view(shape=(BN, D), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    kv = lm.pipeline(stages=2)
    qk = lm.barrier(producers=[math], consumers=[math])
    full = lm.barrier(kv, producers=[load], consumers=[math])
    empty = lm.barrier(kv, producers=[math], consumers=[load])
    s = math.fragment(shape=(64, BN), dtype=lm.f32)
    p = math.fragment(shape=(64, BN), dtype=lm.bf16)
    o = math.fragment(shape=(64, D), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(S, 64)):
        with load:
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(empty)
                sV.tma_load(V, coords=(j * BN, 0), barrier=full)
        with math:
            sQ.tma_load(Q, coords=(tm * 64, 0), barrier=qk)
            sK.tma_load(K, coords=(0, 0), barrier=qk)
            lm.wait(qk)
            lm.mma(s, sQ, sK.T, accumulate=False)
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(full)
                p[:] = lm.cast(s * 0.5, lm.bf16)
                lm.mma(o, p, sV, accumulate=j > 0, release=empty)
            lm.store(O, o, coords=(tm * 64, 0))
"#;

#[test]
fn a_register_operand_is_not_overwritten_under_its_mma() {
    let cuda = lower_text(P_REWRITTEN_UNDER_ITS_MMA);
    let lines: Vec<&str> = cuda.lines().collect();
    let top = find(&lines, 0, "wait full");
    let mma = find(&lines, top, "_rs_tb(o, p[0]");
    let commit = find(&lines, mma, "cake_wgmma_commit();");
    // Retired and released at once, not one iteration later.
    assert!(
        lines[commit + 1].contains("cake_wgmma_wait<0>();"),
        "{}",
        lines[commit + 1]
    );
    assert!(!cuda.contains("empty_pending"), "{cuda}");
}

#[test]
fn the_example_compiles_without_serialised_wgmmas() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-overlap-{}", std::process::id()));
    for (causal, d) in [(0, 128), (1, 128), (0, 64), (1, 64)] {
        let text = example()
            .replace("CAUSAL = 0 ", &format!("CAUSAL = {causal} "))
            .replace("D = 128 ", &format!("D = {d} "));
        let build = tc
            .compile(
                &lower_text(&text),
                t,
                &out,
                &format!("attention_c{causal}_d{d}"),
            )
            .unwrap_or_else(|e| panic!("CAUSAL={causal} D={d} does not compile: {e}"));
        let r = &build.resources[0];
        assert!(
            !r.warnings.iter().any(|w| w.contains("serialized")),
            "{:?}",
            r.warnings
        );
        assert!(
            r.spill_stores <= 16,
            "CAUSAL={causal} D={d}: {} B spilled",
            r.spill_stores
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn updates_of_the_deferred_accumulator_are_deferred_with_it() {
    // FlashAttention-3's order: o rescaled right before P·V, in the next iteration.
    let cuda = lower_text(&fa3_order(&example()));
    let lines: Vec<&str> = cuda.lines().collect();
    let pair = find(&lines, 0, "_pair = 0 + 1;");
    let deferred = find(&lines, pair, "deferred from the previous iteration");
    let rescale = find(
        &lines,
        deferred,
        "o[4 * i + 2 * h + j] = (float)((o[4 * i + 2 * h + j] * alpha[h]))",
    );
    let pv = find(&lines, deferred, "_rs_tb(o, p[0]");
    assert!(rescale < pv);
}

#[test]
fn an_update_of_the_deferred_accumulator_may_not_read_the_scores() {
    let fa3 = fa3_order(&example());
    let text = fa3.replace(
        "                o[:] = o * alpha[:, None]\n",
        "                o[:] = o * lm.max(s, axis=1)[:, None]\n",
    );
    assert_ne!(text, fa3);
    let checked = cake_driver::check("attention_sm90.py", text.as_bytes(), Some("sm_90a"));
    assert!(
        checked.findings.iter().any(|f| f.code == "CAKE-M011"),
        "{:?}",
        checked.findings
    );
}

/// The example over torch's (B, H, S, D) tensors as they are, rank 4: the head coordinates in
/// the loads and the store, no flattening of B and H.
fn rank4() -> String {
    let text = example()
        .replace(
            "Q: lm.tensor[lm.bf16, \"BH\", \"S\", D]",
            "Q: lm.tensor[lm.bf16, \"B\", \"H\", \"S\", D]",
        )
        .replace(
            "K: lm.tensor[lm.bf16, \"BHKV\", \"S\", D]",
            "K: lm.tensor[lm.bf16, \"B\", \"HKV\", \"S\", D]",
        )
        .replace(
            "V: lm.tensor[lm.bf16, \"BHKV\", \"S\", D]",
            "V: lm.tensor[lm.bf16, \"B\", \"HKV\", \"S\", D]",
        )
        .replace(
            "O: lm.tensor[lm.bf16, \"BH\", \"S\", D]",
            "O: lm.tensor[lm.bf16, \"B\", \"H\", \"S\", D]",
        )
        .replace(
            "lm.tiles(BH, lm.cdiv(S, BM)",
            "lm.tiles(B * H, lm.cdiv(S, BM)",
        )
        .replace(
            "kvh = bh // (BH // BHKV)",
            "b = bh // H\n        kvh = (bh % H) // (H // HKV)",
        )
        .replace("coords=(bh, tq * BM, 0)", "coords=(b, bh % H, tq * BM, 0)")
        .replace("coords=(kvh, j * BN, 0)", "coords=(b, kvh, j * BN, 0)")
        .replace("coords=(bh, q0, 0)", "coords=(b, bh % H, q0, 0)");
    assert_eq!(text.matches("coords=(b,").count(), 4, "{text}");
    text
}

#[test]
fn rank_4_tensors_load_through_4d_tensor_maps() {
    let cuda = lower_text(&rank4());
    assert!(cuda
        .contains("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"));
    // Innermost first: D's panel (two of 64 columns), then the queries, the head, the batch.
    assert!(cuda.contains("cake_tma_load_4d(sQ, &tmap_Q_0, q_full, 0, (tile_1 * 128), (tile_0 % dim_H), (tile_0 / dim_H));"), "{cuda}");
    assert!(cuda.contains("cake_tma_load_4d(sQ + 16384, &tmap_Q_0, q_full, 0 + 64, (tile_1 * 128), (tile_0 % dim_H), (tile_0 / dim_H));"));
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-overlap-r4-{}", std::process::id()));
    tc.compile(
        &cuda,
        cake_target::lookup("sm_90a").unwrap(),
        &out,
        "attention_rank4",
    )
    .unwrap_or_else(|e| panic!("does not compile: {e}"));
    let _ = std::fs::remove_dir_all(&out);
}
