//! Fuzz a whole compile session, as `cake check` runs it: any bytes, as a schedule file, go
//! through the front-end, the verifier for every declared target and the lowerability pass
//! without a panic, every finding points into the file, and its renderings succeed.
#![no_main]

use cake_diag::render;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let checked = cake_driver::check("fuzz.py", data, None);
    let len = checked.file.text.len() as u32;
    for f in &checked.findings {
        for span in std::iter::once(f.span).chain(f.labels.iter().map(|l| l.span)) {
            assert!(
                span.start <= span.end && span.end <= len,
                "{}: span {span:?} outside a {len}-byte file",
                f.code
            );
        }
    }
    let human = render::human(&checked.file, &checked.findings, false);
    assert!(checked.findings.is_empty() || !human.is_empty());
    let _ = render::json(&checked.file, &checked.findings);
    let files = [(&checked.file, checked.findings.as_slice())];
    let _ = render::sarif(
        &files,
        cake_diag::catalog::ALL,
        &render::SarifOptions::new("fuzz"),
    );
});
