//! Index `//` and `%` floor as in Python (docs/language.md §10.1): where the dividend may be
//! negative the lowering calls the floor helpers; where C's truncating forms agree it emits them.

mod common;

/// examples/gemm_sm90.py with its epilogue tile split into a stage per consumer warpgroup, the
/// stage named by `stage`.
fn epilogue_stage(stage: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gemm_sm90.py");
    let src = std::fs::read_to_string(path).expect("example");
    let replaced = src
        .replace(
            "sC = pool.view(shape=(BM, BN), dtype=lm.bf16, swizzle=128)",
            "sC = pool.view(shape=(64, BN), dtype=lm.bf16, stages=2, swizzle=128)",
        )
        .replace(
            "sC.rows(wg_rows(math.index), 64).store(",
            &format!("sC.stage({stage}).store("),
        )
        .replace(
            "sC.rows(wg_rows(math.index), 64).tma_store(",
            &format!("sC.stage({stage}).tma_store("),
        );
    assert_eq!(replaced.matches(&format!("sC.stage({stage})")).count(), 2);
    common::lower_source("gemm_sm90.py", &replaced, stage)
}

#[test]
fn a_dividend_that_may_be_negative_takes_the_floor_helper() {
    // Replica 0 names stage (0 - 1) % 2 = 1 in Python; C's `%` would give -1.
    let cuda = epilogue_stage("(math.index - 1) % 2");
    assert!(
        cuda.contains("(sC + 32768 * cake_floormod((math_index - 1), 2))"),
        "{cuda}"
    );
}

#[test]
fn a_non_negative_dividend_keeps_c_division() {
    let cuda = epilogue_stage("(math.index + 1) % 2");
    assert!(
        cuda.contains("(sC + 32768 * ((math_index + 1) % 2))"),
        "{cuda}"
    );
    assert!(!cuda.contains("cake_floormod(("), "{cuda}");
}

#[test]
fn float_floor_division_and_remainder_floor_too() {
    // Python: 2.5 // 2.0 == 1.0 and -1.0 % 3.0 == 2.0; C's `/` would not floor, and its `%`
    // does not take floats at all.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/rmsnorm_ring_sm90.py");
    let src = std::fs::read_to_string(path).expect("example");
    let store = "lm.store(Y, lm.cast(x * rstd[:, None] * w[None, :], lm.bf16)";
    assert!(src.contains(store));
    let src = src.replace(store, "lm.store(Y, lm.cast(x // 2.0 + x % 3.0, lm.bf16)");
    let cuda = common::lower_source("rmsnorm_ring_sm90.py", &src, "float // and %");
    let line = cuda
        .lines()
        .find(|l| l.contains("out[v] ="))
        .expect("the store's element loop");
    assert!(
        line.contains("floorf(x[") && line.contains("/ 2.0f)"),
        "{line}"
    );
    assert!(
        line.contains("cake_floormodf(x[") && line.contains(", 3.0f)"),
        "{line}"
    );
}
