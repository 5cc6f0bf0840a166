//! Small-M GEMM with swapped operands (issue #19): the weight's rows fill wgmma's 64-row side,
//! the tokens its N, and `lm.store(..., transpose=True)` writes the 64 × MP tile into C's
//! columns. What the emitted code must do and, with nvcc, that every M compiles without
//! spilling.

use std::path::Path;

fn lower(m: i64) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/tinygemm_sm90.py");
    let source = std::fs::read_to_string(path).expect("example");
    let knobs = cake_mutate::knobs::constants(&source);
    let knob = knobs.iter().find(|k| k.name == "M").expect("an M constant");
    let source = cake_mutate::knobs::apply(&source, &[(knob, m)]);
    let checked = cake_driver::check("tinygemm_sm90.py", source.as_bytes(), Some("sm_90a"));
    assert!(
        !checked.findings.iter().any(|f| f.is_error()),
        "M={m}: {:?}",
        checked.findings
    );
    let t = cake_target::lookup("sm_90a").unwrap();
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .unwrap_or_else(|e| panic!("M={m} does not lower: {e:?}"))
        .cuda
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
    // The tile's rows run along C's columns (from tn * 64), its columns along C's rows (from 0).
    assert!(
        store.contains("const int row = (tile_0 * 64) + lane_row + 8 * h;"),
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

#[test]
fn every_m_compiles_without_spills() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-tinygemm-{}", std::process::id()));
    for m in [1, 8, 16, 32, 64, 128] {
        let build = tc
            .compile(&lower(m), t, &out, &format!("tinygemm_{m}"))
            .unwrap_or_else(|e| panic!("M={m}: {e}"));
        for r in &build.resources {
            assert_eq!(r.spill_stores, 0, "M={m} spills: {}", build.log);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
