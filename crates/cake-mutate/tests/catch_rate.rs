//! The verifier's catch rate over the corpus of valid schedules: every operator of `cake-mutate`
//! over every `examples/*.py` and every `tests/check/*-good.py` without `error[`/`warning[`
//! markers. The table lives in docs/verifier.md between the catch-rate markers; regenerate it
//! with
//!
//!     CAKE_BLESS=1 cargo test -p cake-mutate --test catch_rate

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cake_diag::Category;
use cake_mutate::{catch_table, evaluate, mutants, Outcome, FOLDED_AWAY};

const START: &str = "<!-- catch-rate:start -->";
const END: &str = "<!-- catch-rate:end -->";
const BLESS_HINT: &str = "CAKE_BLESS=1 cargo test -p cake-mutate --test catch_rate";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The corpus: (path relative to the repository root, text), sorted by path.
fn corpus() -> Vec<(String, String)> {
    let root = root();
    let mut files = Vec::new();
    let mut add = |dir: &str, keep: &dyn Fn(&str) -> bool| {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !keep(&name) {
                continue;
            }
            let text = std::fs::read_to_string(e.path()).expect("corpus file is UTF-8");
            if text.contains("error[") || text.contains("warning[") {
                continue;
            }
            files.push((format!("{dir}/{name}"), text));
        }
    };
    add("examples", &|n| n.ends_with(".py"));
    add("tests/check", &|n| n.ends_with("-good.py"));
    files.sort();
    files
}

fn outcomes() -> &'static Vec<Outcome> {
    static OUTCOMES: OnceLock<Vec<Outcome>> = OnceLock::new();
    OUTCOMES.get_or_init(|| {
        let mut out = Vec::new();
        for (path, text) in corpus() {
            for m in mutants(&text) {
                out.push(evaluate(&path, &m));
            }
        }
        out
    })
}

/// The corpus is valid: the verifier measures catches, not pre-existing errors.
#[test]
fn corpus_is_valid() {
    let corpus = corpus();
    assert!(
        corpus.len() >= 4,
        "corpus not found under {}",
        root().display()
    );
    for (path, text) in corpus {
        let checked = cake_driver::check(&path, text.as_bytes(), None);
        let errors: Vec<_> = checked.findings.iter().filter(|f| f.is_error()).collect();
        assert!(
            errors.is_empty(),
            "{path} is not a valid schedule: {errors:?}"
        );
    }
}

/// Operators produce schedules the front-end reads: no syntax errors, and no front-end error
/// at all except the shape/type errors a majorness flip legitimately causes.
#[test]
fn mutants_are_well_formed() {
    for o in outcomes() {
        let language: Vec<&String> = o
            .findings
            .iter()
            .filter(|f| f.split(' ').nth(1).is_some_and(|c| c.starts_with("CAKE-L")))
            .collect();
        let m = &o.mutant;
        assert!(
            !language.iter().any(|f| f.contains("CAKE-L001")),
            "{} {}:{} ({}) is not valid Python: {language:?}\n{}",
            m.operator,
            o.file,
            m.line,
            m.description,
            m.source
        );
        if !m.expected.contains(&Category::Language) {
            assert!(
                language.is_empty(),
                "{} {}:{} ({}) is rejected by the front-end: {language:?}\n{}",
                m.operator,
                o.file,
                m.line,
                m.description,
                m.source
            );
        }
        assert!(!m.accept_lines.is_empty());
    }
}

/// Mutants come out in the same order every time.
#[test]
fn mutants_are_deterministic() {
    let (_, text) = &corpus()[0];
    assert_eq!(mutants(text), mutants(text));
}

/// docs/verifier.md carries the current table.
#[test]
fn table_is_in_docs() {
    let table = catch_table(outcomes());
    println!("{table}");
    let path = root().join("docs/verifier.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let (Some(a), Some(b)) = (doc.find(START), doc.find(END)) else {
        panic!(
            "{} has no catch-rate markers; add `{START}` and `{END}`",
            path.display()
        );
    };
    let current = &doc[a + START.len()..b];
    let want = format!("\n{table}");
    if current == want {
        return;
    }
    if cake_testkit::blessing() {
        let new = format!("{}{START}{want}{}", &doc[..a], &doc[b..]);
        std::fs::write(&path, new).expect("write docs/verifier.md");
        return;
    }
    panic!(
        "the catch-rate table in docs/verifier.md is out of date; regenerate it with\n\n    {BLESS_HINT}\n\nnew table:\n{table}"
    );
}

/// The bar: at least 95% of the non-equivalent mutants get an error of the right
/// category at the mutated line.
#[test]
fn catch_rate_at_least_95_percent() {
    let scored: Vec<&Outcome> = outcomes()
        .iter()
        .filter(|o| o.mutant.equivalent.is_none())
        .collect();
    let caught = scored.iter().filter(|o| o.caught).count();
    let rate = caught as f64 / scored.len().max(1) as f64;
    println!("{}", catch_table(outcomes()));
    assert!(
        rate >= 0.95,
        "catch rate {:.1}% ({caught} of {}) is below 95%",
        100.0 * rate,
        scored.len()
    );
}

/// Print every mutant whose `file:line operator` matches `CAKE_MUTATE_DUMP` (a substring), with
/// its diff, accepted lines and findings:
///
///     CAKE_MUTATE_DUMP=attention cargo test -p cake-mutate --test catch_rate dump -- --ignored --nocapture
#[test]
#[ignore = "a debugging aid"]
fn dump() {
    let filter = std::env::var("CAKE_MUTATE_DUMP").unwrap_or_default();
    for o in outcomes() {
        let m = &o.mutant;
        let key = format!("{}:{} {}", o.file, m.line, m.operator);
        if !key.contains(&filter) {
            continue;
        }
        println!("=== {key}: {}", m.description);
        println!(
            "caught: {} ({:?}); equivalent: {:?}",
            o.caught, o.caught_by, m.equivalent
        );
        println!("accept lines: {:?}", m.accept_lines);
        let original = corpus()
            .into_iter()
            .find(|(p, _)| *p == o.file)
            .map(|(_, t)| t)
            .unwrap_or_default();
        let old: Vec<&str> = original.lines().collect();
        let new: Vec<&str> = m.source.lines().collect();
        let first = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        let tail = old
            .iter()
            .rev()
            .zip(new.iter().rev())
            .take_while(|(a, b)| a == b)
            .count();
        for l in &old[first..old.len() - tail.min(old.len() - first)] {
            println!("-{:4} {l}", first + 1);
        }
        for (i, l) in new[first..new.len() - tail.min(new.len() - first)]
            .iter()
            .enumerate()
        {
            println!("+{:4} {l}", first + 1 + i);
        }
        let checked = cake_driver::check(&o.file, m.source.as_bytes(), None);
        for f in &checked.findings {
            let line = checked.file.line_of(f.span.start);
            println!("  {line} {} {} {}", f.code, f.severity, f.message);
            for l in &f.labels {
                println!(
                    "      label {}: {}",
                    checked.file.line_of(l.span.start),
                    l.message
                );
            }
        }
    }
}

/// A mutant inside a compile-time branch the file's constants do not take compiles to the
/// original kernel: it is equivalent there, and caught at the constants that take the branch.
#[test]
fn an_edit_in_a_branch_the_constants_fold_away_is_equivalent_and_caught_where_taken() {
    let text = std::fs::read_to_string(root().join("examples/attention_sm90.py")).unwrap();
    let drops_q_wait = |m: &cake_mutate::Mutant| {
        m.operator == "drop-wait" && m.description.contains("lm.wait(q_empty)")
    };
    let m = mutants(&text)
        .into_iter()
        .find(drops_q_wait)
        .expect("the q_empty wait is mutated");
    let o = evaluate("examples/attention_sm90.py", &m);
    assert!(!o.caught, "{o:?}");
    assert_eq!(o.mutant.equivalent.as_deref(), Some(FOLDED_AWAY));
    // PERSISTENT = 1 takes the branch: the same edit is a hazard, and the verifier reports it
    // (at the copy the missing wait no longer holds back, a line the catch rule does not list).
    let persistent = text.replacen("PERSISTENT = 0 ", "PERSISTENT = 1 ", 1);
    assert_ne!(persistent, text);
    let m = mutants(&persistent).into_iter().find(drops_q_wait).unwrap();
    let o = evaluate("attention_persistent.py", &m);
    assert!(o.mutant.equivalent.is_none(), "{:?}", o.findings);
    assert!(
        o.findings.iter().any(|f| f.contains("CAKE-S024")),
        "{:?}",
        o.findings
    );
}
