//! A finding inside a helper's body is reported once, however many times the helper was
//! inlined, and is labelled at each call that brought the code in.

const SCHEDULE: &str = r#"import cake
from cake import lm


def rows(n):
    return n * missing


def twice(n):
    return rows(n) + rows(n + 1)


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    BM = twice(64)
    BN = rows(128)
    for tm in lm.tiles(4):
        pass
"#;

fn line_of(span_start: u32) -> usize {
    SCHEDULE[..span_start as usize].matches('\n').count() + 1
}

#[test]
fn a_finding_in_a_helper_is_reported_once_and_labelled_at_its_calls() {
    let checked = cake_driver::check("helpers.py", SCHEDULE.as_bytes(), None);
    let in_rows: Vec<_> = checked
        .findings
        .iter()
        .filter(|f| line_of(f.span.start) == 6)
        .collect();
    assert_eq!(in_rows.len(), 1, "{:#?}", checked.findings);
    let f = in_rows[0];
    assert!(f.is_error(), "{f:#?}");
    let mut labelled: Vec<(usize, &str)> = f
        .labels
        .iter()
        .map(|l| (line_of(l.span.start), l.message.as_str()))
        .collect();
    labelled.sort();
    // `rows` is called twice inside `twice` (both on line 10) and once from the schedule
    // (line 16); `twice` is called from the schedule at line 15.
    assert_eq!(
        labelled,
        vec![
            (10, "in helper `rows`, inlined here"),
            (10, "in helper `rows`, inlined here"),
            (15, "in helper `twice`, inlined here"),
            (16, "in helper `rows`, inlined here"),
        ],
        "{f:#?}"
    );
}
