//! An attention block on sm_90a (tests/build/attention_sm90.py and its double-buffered variant):
//! the codegen bugs of issue #17 — a wgmma wait inside a masking `if`, two row reductions
//! declaring the same temporaries, `buffers=2` with an in-place update, `exp2f` for `lm.exp2`,
//! a row max that kept an index — checked in the emitted code and, with nvcc, by compiling it.

mod common;

use common::find;

use std::path::Path;

fn lower(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let bytes = std::fs::read(&path).expect("schedule");
    let checked = cake_driver::check(file, &bytes, Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let k = &checked.kernels[0];
    let t = cake_target::lookup("sm_90a").unwrap();
    cake_lower::lower(k, &checked.file, t)
        .unwrap_or_else(|e| panic!("{file} does not lower: {e:?}"))
        .cuda
}

/// The attention block with its key-tail mask written with `lm.iota` instead of the MASK
/// column vector, plus a causal mask: the element's row and column inside the wgmma tile.
fn iota_masked() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/build/attention_sm90.py");
    let text = std::fs::read_to_string(path).expect("schedule");
    let old = "                    bias = lm.load(MASK, coords=(j * BN,), shape=(BN,), fill=-lm.inf)\n                    s[:] = s + bias[None, :]\n";
    assert!(text.contains(old));
    let new = "                    s[:] = lm.select(j * BN + lm.iota((BM, BN), 1) < S, s, -lm.inf)\n                s[:] = lm.select((tm * BM + lm.iota((BM, BN), axis=0) >= j * BN + lm.iota((BM, BN), -1)) | (S < 0), s, -lm.inf)\n";
    text.replace(old, new)
        .replace("              MASK: lm.tensor[lm.f32, \"S\"],\n", "")
}

fn lower_text(text: &str) -> String {
    let checked = cake_driver::check("attention_iota.py", text.as_bytes(), Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let t = cake_target::lookup("sm_90a").unwrap();
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .unwrap_or_else(|e| panic!("does not lower: {e:?}"))
        .cuda
}

#[test]
fn iota_masks_the_key_tail_and_the_causal_triangle() {
    let cuda = lower_text(&iota_masked());
    // Column and row of each accumulator element: the wgmma layout's own.
    assert!(
        cuda.contains("((j_2 * 64) + (lane_col + 8 * i + j)) < dim_S"),
        "{cuda}"
    );
    assert!(
        cuda.contains(
            "((tile_0 * 64) + (lane_row + 8 * h)) >= ((j_2 * 64) + (lane_col + 8 * i + j))"
        ),
        "{cuda}"
    );
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-attention-iota-{}", std::process::id()));
    tc.compile(
        &cuda,
        cake_target::lookup("sm_90a").unwrap(),
        &out,
        "attention_iota",
    )
    .unwrap_or_else(|e| panic!("does not compile: {e}"));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn exp2_with_ftz_is_the_flushing_instruction() {
    let text = iota_masked().replace(
        "p[:] = lm.cast(lm.exp2(s * SCALE - m_new[:, None]), lm.bf16)",
        "p[:] = lm.cast(lm.exp2(s * SCALE - m_new[:, None], ftz=True), lm.bf16)",
    );
    assert!(text.contains("ftz=True"));
    let cuda = lower_text(&text);
    assert!(cuda.contains("ex2.approx.ftz.f32"), "{cuda}");
    assert!(cuda.contains("cake_ex2_ftz(((s["), "{cuda}");
    // The row sum's exp2 keeps the exact-subnormal form it was written with.
    assert!(cuda.contains("cake_ex2(((s["), "{cuda}");
}

#[test]
fn an_accumulator_tile_stores_into_the_innermost_axes_of_a_4d_tensor() {
    let text = iota_masked()
        .replace(
            "O: lm.tensor[lm.f32, \"S\", D]",
            "O: lm.tensor[lm.f32, \"B\", 1, \"S\", D]",
        )
        .replace(
            "lm.store(O, o, coords=(tm * BM, 0))",
            "lm.store(O, o, coords=(B - 1, 0, tm * BM, 0))",
        );
    assert!(text.contains("coords=(B - 1, 0, tm * BM, 0)"));
    let cuda = lower_text(&text);
    assert!(
        cuda.contains(
            "float* out = O + ((((size_t)((dim_B - 1)) * 1 + (0)) * dim_S + (row)) * 64 + (col));"
        ),
        "{cuda}"
    );
}

/// 192-key tiles (FA3's choice at D = 128): S is one m64n192 wgmma, and P·V reads P from
/// registers over 12 k-steps; the lowering and nvcc accept both.
#[test]
fn key_tiles_of_192_lower_to_n192_wgmma_and_compile() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/build/attention_sm90.py");
    let text = std::fs::read_to_string(path).expect("schedule");
    let knobs = cake_mutate::knobs::knobs(&text);
    let text = cake_mutate::knobs::set(&text, &knobs, [("BN", 192)]).expect("a BN knob");
    let cuda = lower_text(&text);
    assert!(cuda.contains("cake_wgmma_m64n192k16_f32_bf16("), "{cuda}");
    assert!(
        cuda.matches("cake_wgmma_m64n64k16_f32_bf16_rs(").count() >= 12,
        "{cuda}"
    );
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-attention-192-{}", std::process::id()));
    let build = tc
        .compile(
            &cuda,
            cake_target::lookup("sm_90a").unwrap(),
            &out,
            "attention_192",
        )
        .unwrap_or_else(|e| panic!("does not compile: {e}"));
    assert_eq!(build.resources[0].spill_stores, 0, "{:?}", build.resources);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_wait_for_the_scores_precedes_the_masking_if() {
    let cuda = lower("tests/build/attention_sm90.py");
    let lines: Vec<&str> = cuda.lines().collect();
    let mma = find(&lines, 0, "// mma s += sQ * sK.T");
    let wait = find(&lines, mma, "cake_wgmma_wait<");
    let branch = find(&lines, mma, "if ((j_2 == ");
    assert!(
        wait < branch,
        "the wait is not before the `if`:\n{}",
        lines[mma..branch + 3].join("\n")
    );
    // Nothing waits again inside the branch: one wait dominates both paths.
    let first_read = find(&lines, mma, "row max");
    assert!(!lines[branch..first_read]
        .iter()
        .any(|l| l.contains("cake_wgmma_wait")));
}

#[test]
fn reductions_are_plain_and_exp2_is_ex2_approx() {
    let cuda = lower("tests/build/attention_sm90.py");
    // Two row reductions in one block: temporaries named per reduction.
    assert!(
        cuda.contains("red0_bv[2]") && cuda.contains("red1_bv[2]"),
        "{cuda}"
    );
    // No argmax: the row max keeps no column.
    assert!(
        !cuda.contains("red0_i") && !cuda.contains("red0_bi"),
        "{cuda}"
    );
    assert!(cuda.contains("red0_bv[h] = fmaxf(red0_bv[h], v);"));
    assert!(cuda.contains("asm(\"ex2.approx.f32 %0, %1;\""));
    assert!(!cuda.contains("exp2f("));
}

#[test]
fn a_double_buffered_score_tile_is_updated_in_its_buffer_without_waiting_for_the_next_mma() {
    let cuda = lower("tests/build/attention_db_sm90.py");
    // The in-place `s[:] = ...` writes the current buffer; `s` alone is no array.
    assert!(
        !cuda.contains(" s[4 * i"),
        "an update of `s` is not renamed per buffer"
    );
    assert!(cuda.contains("s_b0[4 * i + 2 * h + j] = (float)((s_b0["));
    assert!(cuda.contains("s_b1[4 * i + 2 * h + j] = (float)((s_b1["));
    // Between the issue of the next MMA and the end of the iteration, nothing waits: the softmax
    // overlaps it.
    let lines: Vec<&str> = cuda.lines().collect();
    let start = find(&lines, 0, "for (int j_2_pair");
    let next = find(&lines, start, "// mma s_b1 += sQ * sK.T");
    let end = find(
        &lines,
        next,
        "the next MMA and this iteration's have retired",
    );
    let waits: Vec<&&str> = lines[next..end]
        .iter()
        .filter(|l| l.contains("cake_wgmma_wait"))
        .collect();
    assert!(waits.is_empty(), "{waits:?}");
    // The P·V MMA's release comes after that wait, not with a wait of its own.
    assert!(
        lines[end + 1].contains("cake_mbar_arrive(empty"),
        "{}",
        lines[end + 1]
    );
}

/// Both schedules compile (before the fixes nvcc refused both); the single-buffered one without
/// a ptxas serialisation note.
#[test]
fn both_attention_schedules_compile() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-attention-{}", std::process::id()));
    for (file, stem) in [
        ("tests/build/attention_sm90.py", "attention"),
        ("tests/build/attention_db_sm90.py", "attention_db"),
    ] {
        let build = tc
            .compile(&lower(file), t, &out, stem)
            .unwrap_or_else(|e| panic!("{file} does not compile: {e}"));
        if stem == "attention" {
            let w = &build.resources[0].warnings;
            assert!(!w.iter().any(|w| w.contains("serialized")), "{w:?}");
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
