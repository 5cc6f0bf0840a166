//! Time of one cost estimate (front-end excluded) for the two sm_90a examples at their bench
//! shapes. Numbers are recorded in docs/performance.md.

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

const GEMM: &str = include_str!("../../../examples/gemm_sm90.py");
const KMEANS: &str = include_str!("../../../examples/kmeans_assign_sm90.py");

fn benches(c: &mut Criterion) {
    let target = cake_target::lookup("sm_90a").expect("sm_90a");
    let cal = cake_cost::Calibration::builtin(target).expect("calibration");
    for (name, src, shape) in [
        ("gemm_sm90", GEMM, "M=4096,N=7168,K=4096"),
        ("kmeans_assign_sm90", KMEANS, "B=32,N=65536,K=1024"),
    ] {
        let (_, front) = cake_front::check_bytes(name, src.as_bytes());
        let kernel = &front.kernels[0];
        let shape: BTreeMap<String, i64> = cake_cost::parse_shape(shape).expect("shape");
        c.bench_function(&format!("estimate {name}"), |b| {
            b.iter(|| cake_cost::estimate(black_box(kernel), target, &shape, &cal))
        });
        // What a compile session pays: the facts the check derived are reused.
        let facts = cake_ir::KernelFacts::new(kernel, target);
        c.bench_function(&format!("estimate {name} (facts shared)"), |b| {
            b.iter(|| cake_cost::estimate_with(black_box(kernel), &facts, &shape, &cal))
        });
    }
}

criterion_group!(estimate, benches);
criterion_main!(estimate);
