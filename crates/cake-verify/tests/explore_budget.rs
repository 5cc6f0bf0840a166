//! The interleaving exploration has a work budget: a range with a huge constant trip count in
//! two roles is a located coverage note (CAKE-V002) in well under a second's work, not minutes of
//! unrolling; the same schedule with a small constant trip count is explored in full.

use std::time::{Duration, Instant};

fn gemm_with_trips(trips: &str) -> String {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gemm_sm90.py"),
    )
    .expect("example");
    let range = "lm.range(lm.cdiv(K, BK), pipeline=pipe)";
    assert_eq!(text.matches(range).count(), 2, "both roles' k-loops");
    text.replace(range, &format!("lm.range({trips}, pipeline=pipe)"))
}

fn verify(src: &str) -> (Vec<cake_diag::Finding>, cake_diag::SourceFile, Duration) {
    let (file, checked) = cake_front::check_bytes("big_range.py", src.as_bytes());
    assert!(!checked.findings.has_errors(), "the schedule is valid");
    let k = &checked.kernels[0];
    let target = cake_target::lookup("sm_90a").expect("target");
    let t = Instant::now();
    let findings = cake_verify::verify(k, target);
    (findings, file, t.elapsed())
}

#[test]
fn a_huge_constant_range_is_a_located_note_within_the_budget() {
    let src = gemm_with_trips("100000");
    let (findings, file, took) = verify(&src);
    // Unrolled in full this takes over a minute; the budget stops it in milliseconds (release)
    // or well under a second (debug). The bound leaves room for a loaded machine.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let notes: Vec<_> = findings
        .iter()
        .filter(|f| f.code == "CAKE-V002" && f.message.contains("budget"))
        .collect();
    assert_eq!(notes.len(), 1, "{findings:#?}");
    let line = file.line_of(notes[0].span.start);
    let text = src.lines().nth(line as usize - 1).unwrap_or_default();
    assert!(
        text.contains("lm.range(100000"),
        "the note points at the range being unrolled, not at line {line}: {text:?}"
    );
    assert!(
        notes[0].message.contains("range[0, 100000)"),
        "{}",
        notes[0].message
    );
    assert!(!findings
        .iter()
        .any(|f| f.severity == cake_diag::Severity::Error));
}

#[test]
fn a_small_constant_range_is_explored_in_full() {
    let (findings, _, _) = verify(&gemm_with_trips("40"));
    assert!(
        !findings.iter().any(|f| f.code == "CAKE-V002"),
        "{findings:#?}"
    );
}
