//! Compile-pipeline benchmarks on the Hopper GEMM example: the full check (front-end, every
//! verifier rule including the interleaving exploration, lowerability), verification alone, the
//! lowerability pass alone and lowering alone. Numbers are recorded in docs/performance.md.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

const GEMM: &str = include_str!("../../../examples/gemm_sm90.py");

fn benches(c: &mut Criterion) {
    let target = cake_target::lookup("sm_90a").expect("sm_90a");
    let checked = cake_driver::check("gemm_sm90.py", GEMM.as_bytes(), None);
    assert!(!checked.has_errors(), "the example must check clean");
    let kernel = &checked.kernels[0];
    c.bench_function("check gemm_sm90 (front + verify + lowerability)", |b| {
        b.iter(|| cake_driver::check("gemm_sm90.py", black_box(GEMM.as_bytes()), None))
    });
    c.bench_function("verify gemm_sm90", |b| {
        b.iter(|| cake_verify::verify(black_box(kernel), target))
    });
    c.bench_function("derive KernelFacts gemm_sm90 for sm_90a", |b| {
        b.iter(|| cake_ir::KernelFacts::new(black_box(kernel), target))
    });
    let facts = checked.facts_for(0, "sm_90a").expect("verified for sm_90a");
    c.bench_function("verify gemm_sm90 (facts shared)", |b| {
        b.iter(|| cake_verify::verify_with(black_box(kernel), facts))
    });
    c.bench_function("lowerable gemm_sm90 for sm_90a", |b| {
        b.iter(|| cake_lower::lowerable(black_box(kernel), facts))
    });
    c.bench_function("lower gemm_sm90 for sm_90a", |b| {
        b.iter(|| cake_lower::lower(black_box(kernel), &checked.file, target))
    });
    c.bench_function("lower gemm_sm90 for sm_90a (facts shared)", |b| {
        b.iter(|| cake_lower::lower_with(black_box(kernel), facts, &checked.file))
    });
}

criterion_group!(pipeline, benches);
criterion_main!(pipeline);
