//! No input makes the front-end panic, and every finding points into the file.
//!
//! Inputs: arbitrary bytes, arbitrary strings, strings of Python/Cake tokens, and mutations of
//! the example schedules (lines deleted, duplicated, swapped; tokens inserted; the text
//! truncated; numbers replaced by 0, -1 or huge values). Each input goes through
//! `cake_front::check_bytes`, and its findings through the human and JSON renderings.
//!
//! Panics already reported as front-end bugs are listed in [`KNOWN_PANICS`]: an input that hits
//! one of them is counted (and printed once) instead of failing, so the properties keep
//! guarding against every *other* panic. Each entry has a reproducer in `front_end_bugs.rs`
//! (ignored tests); delete the entry when the bug is fixed.
//!
//! The RNG seed is fixed so CI is reproducible; explore further with e.g.
//! `PROPTEST_RNG_SEED=7 PROPTEST_CASES=5000 cargo test -p cake-tests --release --test no_panic`.

use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Mutex, Once, OnceLock};

use cake_diag::render;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// Cases per property: enough to exercise every mutation several times, small enough for a
/// debug build on two cores.
const CASES: u32 = 256;

fn config() -> Config {
    // `Config::default()` reads PROPTEST_CASES and PROPTEST_RNG_SEED.
    let mut c = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = CASES;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0xCA4E);
    }
    // The fixed seed makes failures reproducible; no regression files in the source tree.
    c.failure_persistence = None;
    c
}

/// The example schedules (examples/*.py) and the annotated ones (tests/check/*.py).
fn corpus() -> &'static [String] {
    static CORPUS: OnceLock<Vec<String>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let mut paths = Vec::new();
        for dir in ["examples", "tests/check"] {
            if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
                paths.extend(
                    entries
                        .flatten()
                        .map(|e| e.path())
                        .filter(|p| p.extension().is_some_and(|e| e == "py")),
                );
            }
        }
        paths.sort();
        let texts: Vec<String> = paths
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .filter(|t| !t.trim().is_empty())
            .collect();
        assert!(!texts.is_empty(), "no example schedules found");
        texts
    })
}

/// Panics of known, reported front-end bugs: (where the panic is raised, a substring of its
/// message, the bug).
const KNOWN_PANICS: &[(&str, &str, &str)] = &[];

thread_local! {
    /// The last panic on this thread: (location, message).
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

fn known_panic(location: &str, message: &str) -> Option<&'static str> {
    KNOWN_PANICS
        .iter()
        .find(|(loc, msg, _)| location.contains(loc) && message.contains(msg))
        .map(|(_, _, bug)| *bug)
}

/// Record every panic's location; stay quiet about the known ones.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let location = info
                .location()
                .map(|l| format!("{}:{}", l.file().replace('\\', "/"), l.line()))
                .unwrap_or_default();
            let message = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let known = known_panic(&location, &message).is_some();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some((location, message)));
            if !known {
                default(info);
            }
        }));
    });
}

/// Print each known bug the first time an input hits it.
fn note_known(bug: &'static str, input: &[u8]) {
    static SEEN: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if !seen.contains(&bug) {
        seen.push(bug);
        let shown = String::from_utf8_lossy(&input[..input.len().min(400)]);
        eprintln!("known front-end panic (not failing the test): {bug}\n  e.g. on {shown:?}");
    }
}

/// Check one input; fail if the front-end panics (other than a known bug) or a finding's span
/// (or a label's) is outside the file.
fn check_no_panic(bytes: &[u8]) -> Result<(), TestCaseError> {
    install_panic_hook();
    let result = panic::catch_unwind(AssertUnwindSafe(|| check_and_render(bytes)));
    match result {
        Ok(r) => r,
        Err(_) => {
            let (location, message) = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .unwrap_or_default();
            match known_panic(&location, &message) {
                Some(bug) => {
                    note_known(bug, bytes);
                    Ok(())
                }
                None => Err(TestCaseError::fail(format!(
                    "the front-end panicked at {location}: {message}"
                ))),
            }
        }
    }
}

fn check_and_render(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (file, checked) = cake_front::check_bytes("input.py", bytes);
    let len = file.text.len() as u32;
    for f in checked.findings.iter() {
        let spans = std::iter::once(f.span).chain(f.labels.iter().map(|l| l.span));
        for s in spans {
            prop_assert!(
                s.start <= s.end && s.end <= len,
                "{}: span {}..{} outside a {len}-byte file ({})",
                f.code,
                s.start,
                s.end,
                f.message
            );
        }
        prop_assert!(
            f.code.starts_with("CAKE-L"),
            "front-end reported {}",
            f.code
        );
    }
    let findings = checked.findings.as_slice();
    let human = render::human(&file, findings, false);
    prop_assert!(findings.is_empty() || !human.is_empty());
    let _ = render::json(&file, findings);
    Ok(())
}

/// Tokens that mean something to Python or to Cake, for insertion and for token soup.
const TOKENS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    ".",
    ";",
    "=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    "<",
    ">",
    "<=",
    "@",
    "->",
    "\\",
    "#",
    "\"",
    "'",
    "\"\"\"",
    "\n",
    "\n    ",
    "\t",
    "    ",
    "import",
    "from",
    "def",
    "class",
    "return",
    "for",
    "in",
    "if",
    "else",
    "elif",
    "while",
    "with",
    "as",
    "lambda",
    "yield",
    "await",
    "async",
    "global",
    "pass",
    "break",
    "continue",
    "try",
    "except",
    "raise",
    "assert",
    "del",
    "not",
    "and",
    "or",
    "is",
    "None",
    "True",
    "False",
    "match",
    "case",
    "type",
    "*args",
    "**kw",
    "x",
    "_",
    "cake",
    "lm",
    "@cake.schedule(targets=[\"sm_90a\"])",
    "lm.smem()",
    "lm.role(warpgroup=0)",
    "lm.pipeline(stages=2)",
    "lm.barrier(pipe, producers=[load], consumers=[load])",
    "lm.tiles(4)",
    "lm.range(4)",
    "lm.range(lm.cdiv(K, 64), pipeline=pipe)",
    "lm.wait(full)",
    "lm.mma(acc, sA, sB.T)",
    "lm.store(C, acc, coords=(0, 0))",
    "lm.cast(acc, lm.bf16)",
    "lm.tensor[lm.bf16, \"M\", \"K\"]",
    "lm.tensor[()]",
    "lm.bf16",
    "lm.f32",
    "lm.inf",
    "pool.view(shape=(128, 64), dtype=lm.bf16)",
    "sA.rows(0, 64)",
    "sA.T",
    "acc[:]",
    "acc[:, None]",
    "range(3)",
    "len(())",
    "min(1, 2)",
    "tile(",
    "helper(1)",
    "0",
    "1",
    "-1",
    "64",
    "128",
    "0.5",
    "1e308",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551616",
    "\"sm_90a\"",
    "\"M\"",
    "f\"x\"",
    "b\"x\"",
    "1j",
    "...",
    "\u{feff}",
    "\u{00e9}",
    "\u{1f600}",
    "\r\n",
    "\0",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            prop::sample::select(TOKENS),
            prop::sample::select(&[" ", "", "\n"][..]),
        ),
        0..200,
    )
    .prop_map(|parts| {
        parts
            .into_iter()
            .flat_map(|(t, sep)| [t, sep])
            .collect::<String>()
    })
}

/// Replacements for a number literal.
const NUMBERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "65536",
    "4294967296",
    "9223372036854775807",
    "99999999999999999999999",
    "1e308",
    "0.0",
    "-0",
];

#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    /// (line, column fraction in 0..=100, token)
    InsertToken(usize, usize, &'static str),
    /// Cut the text at this fraction (0..=1000) of its length.
    Truncate(usize),
    /// Replace the n-th number literal.
    ReplaceNumber(usize, &'static str),
    /// Change the indentation of a line.
    Indent(usize, &'static str),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), 0usize..=100, prop::sample::select(TOKENS))
            .prop_map(|(l, c, t)| Mutation::InsertToken(l, c, t)),
        (0usize..=1000).prop_map(Mutation::Truncate),
        (any::<usize>(), prop::sample::select(NUMBERS))
            .prop_map(|(n, r)| Mutation::ReplaceNumber(n, r)),
        (
            any::<usize>(),
            prop::sample::select(&["", " ", "    ", "        ", "\t"][..])
        )
            .prop_map(|(l, i)| Mutation::Indent(l, i)),
    ]
}

/// Byte ranges of the number literals of `text` (ASCII digits, not inside identifiers).
fn numbers(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let starts = b[i].is_ascii_digit()
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'));
        if starts {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
            out.push((s, i));
        } else {
            i += 1;
        }
    }
    out
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let n = lines.len().max(1);
    match m {
        Mutation::DeleteLine(i) => {
            if !lines.is_empty() {
                lines.remove(i % lines.len());
            }
        }
        Mutation::DuplicateLine(i) => {
            if !lines.is_empty() {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
        }
        Mutation::SwapLines(a, b) => {
            if !lines.is_empty() {
                lines.swap(a % n, b % n);
            }
        }
        Mutation::InsertToken(l, c, t) => {
            if !lines.is_empty() {
                let line = &mut lines[l % n];
                let at = floor_char_boundary(line, line.len() * c / 100);
                line.insert_str(at, t);
            }
        }
        Mutation::Truncate(f) => {
            let at = floor_char_boundary(text, text.len() * f / 1000);
            return text[..at].to_string();
        }
        Mutation::ReplaceNumber(k, r) => {
            let nums = numbers(text);
            if nums.is_empty() {
                return text.to_string();
            }
            let (s, e) = nums[k % nums.len()];
            return format!("{}{}{}", &text[..s], r, &text[e..]);
        }
        Mutation::Indent(l, ind) => {
            if !lines.is_empty() {
                let line = &mut lines[l % n];
                *line = format!("{ind}{}", line.trim_start());
            }
        }
    }
    lines.join("\n")
}

fn mutated_example() -> impl Strategy<Value = String> {
    (
        any::<prop::sample::Index>(),
        prop::collection::vec(mutation(), 1..8),
    )
        .prop_map(|(which, ms)| {
            let corpus = corpus();
            let mut text = corpus[which.index(corpus.len())].clone();
            for m in &ms {
                text = apply(&text, m);
            }
            text
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        check_no_panic(&bytes)?;
    }

    #[test]
    fn arbitrary_strings(text in ".{0,512}") {
        check_no_panic(text.as_bytes())?;
    }

    #[test]
    fn token_soups(text in token_soup()) {
        check_no_panic(text.as_bytes())?;
    }

    #[test]
    fn mutated_examples(text in mutated_example()) {
        check_no_panic(text.as_bytes())?;
    }

    /// Valid UTF-8 text with one invalid byte spliced in: CAKE-L013 only, in bounds.
    #[test]
    fn invalid_utf8_splices(which in any::<prop::sample::Index>(), at in 0usize..=1000,
                            bad in prop::sample::select(&[0x80u8, 0xC3, 0xFF, 0xFE, 0xED][..])) {
        let corpus = corpus();
        let text = &corpus[which.index(corpus.len())];
        let cut = floor_char_boundary(text, text.len() * at / 1000);
        let mut bytes = text.as_bytes()[..cut].to_vec();
        bytes.push(bad);
        bytes.extend_from_slice(&text.as_bytes()[cut..]);
        if std::str::from_utf8(&bytes).is_err() {
            // Rejected before parsing, so no front-end bug can interfere.
            let (_, checked) = cake_front::check_bytes("input.py", &bytes);
            let codes: Vec<&str> = checked.findings.iter().map(|f| f.code).collect();
            prop_assert_eq!(codes, vec!["CAKE-L013"]);
        }
        check_no_panic(&bytes)?;
    }
}

#[test]
fn mutations_change_the_text() {
    let text = "a = 1\nb = 22\nc = x3\n";
    assert_eq!(apply(text, &Mutation::DeleteLine(1)), "a = 1\nc = x3\n");
    assert_eq!(
        apply(text, &Mutation::ReplaceNumber(1, "-1")),
        "a = 1\nb = -1\nc = x3\n"
    );
    assert_eq!(numbers(text).len(), 2, "x3 is an identifier, not a number");
    assert_eq!(apply(text, &Mutation::Truncate(500)), "a = 1\nb = ");
    assert_eq!(
        apply(text, &Mutation::SwapLines(0, 2)),
        "c = x3\nb = 22\na = 1\n"
    );
}
