//! Front-end speed: `cake_front::check` (parse + interpret into IR) on the GEMM example and on a
//! generated ~2,000-line schedule. Results and goals are in docs/performance.md.
//!
//! ```text
//! cargo bench -p cake-tests --bench check -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;

use cake_diag::SourceFile;
use cake_tests::{generated_schedule, TARGET_LINES};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

const GEMM: &str = include_str!("../../../examples/gemm_sm90.py");

fn bench_check(c: &mut Criterion) {
    let mut group = c.benchmark_group("front-end check");

    let gemm = SourceFile::new("gemm_sm90.py", GEMM);
    let checked = cake_front::check(&gemm);
    assert!(checked.findings.is_empty(), "gemm_sm90.py must check clean");
    group.throughput(Throughput::Elements(gemm.text.lines().count() as u64));
    group.bench_function("gemm_sm90.py", |b| {
        b.iter(|| cake_front::check(black_box(&gemm)))
    });

    let text = generated_schedule(TARGET_LINES);
    let lines = text.lines().count();
    let big = SourceFile::new("generated.py", text);
    let checked = cake_front::check(&big);
    assert!(
        !checked.findings.has_errors() && checked.findings.is_empty(),
        "the generated schedule must check clean:\n{}",
        cake_diag::render::human(&big, checked.findings.as_slice(), false)
    );
    assert!(lines >= TARGET_LINES, "generated only {lines} lines");
    group.throughput(Throughput::Elements(lines as u64));
    group.bench_function(format!("generated {lines} lines"), |b| {
        b.iter(|| cake_front::check(black_box(&big)))
    });
    group.finish();
}

criterion_group!(benches, bench_check);
criterion_main!(benches);
