//! Cross-crate tests of Cake; the tests live in `tests/`, the benchmarks in `benches/`.
//!
//! - `tests/check.rs` runs the annotated schedules under `tests/check/` at the repository root
//!   (front-end files with `cake_front`, the catalog's `CAKE-<code>-bad/good.py` rule examples
//!   with the whole `cake check` pipeline) and checks that exactly the marked findings are
//!   reported; every file in `examples/` must check clean.
//! - `tests/ir.rs` compares the printed IR of every example with `tests/golden/ir/`
//!   (regenerate with `CAKE_BLESS=1 cargo test -p cake-tests --test ir`).
//! - `tests/no_panic.rs` feeds arbitrary and mutated input to the front-end (proptest).
//! - `tests/front_end_bugs.rs` holds ignored reproducers of known front-end bugs.
//! - `benches/check.rs` measures the front-end (see docs/performance.md).
//!
//! The library itself only holds inputs shared by the benchmarks and the tests.

/// Lines in the generated schedule (at least).
pub const TARGET_LINES: usize = 2000;

/// A valid schedule of about `lines` lines: the sm_90a GEMM's declarations, then a tile loop
/// whose producer and consumer role regions repeat unrolled blocks of loads, waits, MMAs,
/// helper calls and register arithmetic, so every line is interpreted (none is a comment or a
/// folded constant only).
pub fn generated_schedule(lines: usize) -> String {
    let mut s = String::from(
        r#""""Generated: a GEMM-shaped schedule with unrolled blocks, for benchmarking the front-end."""
import cake
from cake import lm

BM, BN, BK = 128, 256, 64
STAGES = 4


def wg_rows(index):
    return index * 64


def scaled(x, factor=2):
    return x * factor


@cake.schedule(targets=["sm_90a"], persistent=True)
def big(A: lm.tensor[lm.bf16, "M", "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
"#,
    );
    let header = s.lines().count();
    // Each round: a producer region (7 lines) and a consumer region (8 lines).
    let rounds = (lines.saturating_sub(header)).div_ceil(15).max(1);
    for i in 0..rounds {
        s.push_str(&format!(
            "        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                row{i} = tm * BM + scaled({i} % 4)
                sA.tma_load(A, coords=(row{i}, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK + {i} % 2), barrier=full)
                lm.arrive(full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0, release=empty)
                acc[:] = acc * 0.5 + lm.maximum(acc, 0.0)
            out{i} = lm.cast(acc, lm.bf16)
            lm.store(C, out{i}, coords=(tm * BM + wg_rows(math.index), tn * BN))
            lm.arrive(empty)
"
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_schedule_checks_clean() {
        let text = super::generated_schedule(super::TARGET_LINES);
        assert!(text.lines().count() >= super::TARGET_LINES);
        let (file, checked) = cake_front::check_bytes("generated.py", text.as_bytes());
        assert!(
            checked.findings.is_empty(),
            "{}",
            cake_diag::render::human(&file, checked.findings.as_slice(), false)
        );
        assert_eq!(checked.kernels.len(), 1);
    }
}
