//! Fuzz the front-end: any bytes, as a schedule file, must be checked without a panic, every
//! finding must point into the file, and both renderings of the findings must succeed.
#![no_main]

use cake_diag::render;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (file, checked) = cake_front::check_bytes("fuzz.py", data);
    let len = file.text.len() as u32;
    let findings = checked.findings.as_slice();
    for f in findings {
        assert!(
            f.span.start <= f.span.end && f.span.end <= len,
            "{}: span {:?} outside a {len}-byte file",
            f.code,
            f.span
        );
        for l in &f.labels {
            assert!(
                l.span.start <= l.span.end && l.span.end <= len,
                "{}: label span {:?}",
                f.code,
                l.span
            );
        }
    }
    let human = render::human(&file, findings, false);
    assert!(findings.is_empty() || !human.is_empty());
    let _ = render::json(&file, findings);
    // Building IR is part of checking; touch every kernel so nothing is optimised away.
    for k in &checked.kernels {
        std::hint::black_box(&k.name);
    }
});
