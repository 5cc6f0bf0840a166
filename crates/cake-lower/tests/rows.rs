//! Row-layout values (`rows=`, issue #20): the five row-kernel examples specialised at hidden
//! sizes that exercise each layout (a warp per row; a warpgroup per row, whose reductions meet in
//! shared memory) and the ragged last chunk of an H that is not a multiple of 256; what the
//! emitted code must do (16-byte accesses, shuffles, the warpgroup barrier) and, with nvcc, that
//! it compiles without spilling.

use std::path::Path;

mod common;

const FAMILIES: [(&str, &str); 5] = [
    ("rmsnorm", "examples/rmsnorm_sm90.py"),
    ("layernorm", "examples/layernorm_sm90.py"),
    ("softmax", "examples/softmax_sm90.py"),
    ("add_rmsnorm", "examples/add_rmsnorm_sm90.py"),
    ("quant_fp8", "examples/quant_fp8_sm90.py"),
];

/// The example with its module constant `H` set to `h` (as a contract's `[specialize]` does).
fn specialised(file: &str, h: i64) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let source = std::fs::read_to_string(path).expect("example");
    let knobs = cake_mutate::knobs::constants(&source);
    let knob = knobs.iter().find(|k| k.name == "H").expect("an H constant");
    cake_mutate::knobs::apply(&source, &[(knob, h)])
}

fn lower(file: &str, h: i64) -> String {
    lower_source(file, &specialised(file, h), h)
}

fn lower_source(file: &str, source: &str, h: i64) -> String {
    common::lower_source(file, source, &format!("at H={h}"))
}

#[test]
fn a_warp_per_row_loads_16_bytes_and_reduces_with_shuffles() {
    let cuda = lower("examples/rmsnorm_sm90.py", 2048);
    // 2048 columns over 32 lanes: 8 chunks of 8 per lane, one 16-byte load each.
    assert!(cuda.contains("for (int c = 0; c < 8; ++c)"), "{cuda}");
    assert!(cuda.contains("cake_row_ld8_bf16("), "{cuda}");
    assert!(cuda.contains("cake_row_st8_bf16("), "{cuda}");
    assert!(cuda.contains("__ldg(reinterpret_cast<const uint4*>(p))"));
    // Five butterfly rounds across the warp, no shared memory, no barrier.
    assert_eq!(cuda.matches("__shfl_xor_sync(0xffffffffu, red").count(), 5);
    assert!(!cuda.contains("__shared__ float"), "{cuda}");
    assert!(!cuda.contains("cake_named_sync(8"), "{cuda}");
    // On the checked path the weight is read one chunk at a time, inside the chunk loop.
    assert!(cuda.contains("float ld2[8];  // lm.load(W)"), "{cuda}");
}

/// The batched path: under one run-time condition (columns in bounds, every row's start
/// aligned), all of a statement's 16-byte reads are issued before the first is unpacked, rows
/// past the tensor by predicate (not a branch); stores skip the per-chunk checks. Without it
/// each chunk's load was consumed before the next was issued (H200: 3× slower at 32768 × 4096,
/// bench/results/2026-12-01-rows/).
#[test]
fn whole_aligned_rows_issue_every_load_before_the_first_use() {
    let cuda = lower("examples/rmsnorm_sm90.py", 4096);
    let batched = cuda
        .find("// whole, in bounds and aligned: batched")
        .expect("a batched path");
    let checked = batched + cuda[batched..].find("} else {").expect("its checked path");
    let path = &cuda[batched..checked];
    let last_read = path.rfind("cake_row_raw_b16(").expect("raw reads");
    let first_use = path.find("cake_row_unpack_bf16(").expect("unpacking");
    assert!(last_read < first_use, "{path}");
    // Two rows per CTA (H = 4096: a warpgroup per row): the second may lie past R = 1.
    assert!(
        path.contains("if ((tile_0 * 2) + row < dim_R) ld0_raw[r * 4 + c] = cake_row_raw_b16("),
        "{path}"
    );
    // The condition is the columns and alignment alone; rows are predicates.
    let cond = &cuda[cuda[..batched].rfind("if (").unwrap()..batched];
    assert!(cond.contains("cake_aligned16(X + "), "{cond}");
    assert!(!cond.contains("dim_R"), "{cond}");
    // The weight: read once per chunk for both rows, all chunks before the first use.
    let store = &cuda[cuda
        .rfind("// whole, in bounds and aligned: batched")
        .unwrap()..];
    assert!(
        store.contains("uint4 ld2_raw[4];  // lm.load(W)"),
        "{store}"
    );
    assert!(
        store.contains("if ((tile_0 * 2) + row < dim_R) cake_row_st8v_bf16(Y + "),
        "{store}"
    );
}

/// A tile whose columns are not whole 8-element chunks keeps the checked path alone.
#[test]
fn columns_that_are_not_whole_chunks_keep_the_checked_path() {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/softmax_sm90.py"),
    )
    .unwrap()
    .replace("H = 4096 ", "H = 1028 ");
    let cuda = lower_source("softmax_1028.py", &source, 1028);
    assert!(!cuda.contains("aligned: batched"), "{cuda}");
    assert!(cuda.contains("cake_row_ld8_bf16("), "{cuda}");
}

#[test]
fn a_warpgroup_per_row_meets_in_shared_memory_behind_its_own_barrier() {
    let cuda = lower("examples/rmsnorm_sm90.py", 16384);
    // The partials go to the role's scratch in dynamic shared memory (placed by the layout, so
    // the target's limit counts it), one float per warp and row.
    assert!(
        cuda.contains("cake_st_shared_f32(cake_smem + 0u + 4u * ((rows_index * 4 + rows_thread / 32) * 1 + r), red"),
        "{cuda}"
    );
    // Before the writes (the previous readers) and after them.
    assert_eq!(
        cuda.matches("cake_named_sync(8 + rows_index, 128);")
            .count(),
        2
    );
}

#[test]
fn a_ragged_last_chunk_is_left_out_of_reductions_and_stores() {
    // 1032 = 4 · 256 + 8: lane 1 and up have no fifth chunk.
    let cuda = lower("examples/layernorm_sm90.py", 1032);
    assert!(cuda.contains("if (lc + v < 1032) cake_part[r]"), "{cuda}");
    assert!(cuda.contains("1032 - lc"), "{cuda}");
}

#[test]
fn per_element_conditions_combine_with_and_or_not() {
    let source = r#"
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def clip(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024], lo: lm.f32):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            keep = (x > lo) & ~(x > 1.0) | (t == 0)
            lm.store(Y, lm.cast(lm.select(keep & (lm.iota((4, 1024), 1) < 1000), x, 0.0), lm.bf16), coords=(t * 4, 0))
"#;
    let cuda = lower_source("clip.py", source, 1024);
    let x = "x[(r * 4 + c) * 8 + v]";
    let keep = format!("((({x} > lo) && (!({x} > 1.0f))) || (tile_0 == 0))");
    // lm.iota along the columns: the element's column in the tile.
    let want = format!("(({keep} && ((lc + v) < 1000)) ? {x} : 0.0f)");
    assert!(cuda.contains(&want), "{cuda}");
}

#[test]
fn fp8_stores_pack_with_saturation() {
    let cuda = lower("examples/quant_fp8_sm90.py", 2048);
    assert!(cuda.contains("cvt.rn.satfinite.e4m3x2.f32"), "{cuda}");
    assert!(cuda.contains("cake_row_st8_e4m3("), "{cuda}");
    // 8-byte chunks: the batched store needs 8-byte alignment only.
    assert!(cuda.contains("cake_aligned8(Q + "), "{cuda}");
    assert!(cuda.contains("cake_row_st8v_e4m3(Q + "), "{cuda}");
    // The scale: one value per row, written by the first lane of the row's warp.
    assert!(cuda.contains("if (rows_thread % 32 == 0)"), "{cuda}");
}

/// Every family at a warp-per-row, a ragged and a warpgroup-per-row hidden size compiles with
/// nvcc, without spilling.
#[test]
fn every_family_compiles_at_each_layout_without_spills() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-rows-{}", std::process::id()));
    for (family, file) in FAMILIES {
        for h in [1032, 2048, 4096, 16384] {
            let stem = format!("{family}_{h}");
            let build = tc
                .compile(&lower(file, h), t, &out, &stem)
                .unwrap_or_else(|e| panic!("{family} at H={h} does not compile: {e}"));
            let r = &build.resources[0];
            assert_eq!(
                (r.spill_stores, r.spill_loads),
                (0, 0),
                "{family} at H={h} spills: {r:?}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
