//! Annotated check tests: every file under `tests/check/` (at the repository root) is checked,
//! and the findings must be exactly the ones its comments mark.
//!
//! # Which checks run
//!
//! - Files named `CAKE-<code>-bad.py` / `CAKE-<code>-good.py` are the catalog's rule examples
//!   (`cake explain` shows them). They are checked the way `cake check` sees them: front-end,
//!   verifier and lowering coverage (`cake_driver::check`), and every code is compared.
//! - Files named after a later stage's code, `<X000>_<what>.py` with X other than `L` (say
//!   `C004_launch_total.py`), are further cases of that rule and are checked the same way.
//! - Every other file is a front-end test: it is checked with `cake_front::check_bytes` only,
//!   and markers of later stages' codes (anything but `CAKE-L...`) in it are an error.
//!
//! # Markers
//!
//! A finding is expected on the line that carries its marker, in a trailing comment:
//!
//! ```text
//!     sA = pool.view(shape=(128, 64), dtype=lm.bf16, swizzle=96)  # error[CAKE-L010]: swizzle must be
//!     lm.mma(acc, sA, sB)  # error[CAKE-L007] error[CAKE-L007]: 256-deep
//! ```
//!
//! - `error[CODE]`, `warning[CODE]` or `note[CODE]`: one finding of that severity and code
//!   whose span starts on this line. A marker may be followed by `: text`; the text (up to the
//!   next marker or the end of the line) must occur in the finding's message, help, notes or
//!   labels. Several markers may share a line. The set of (line, severity, code) reported must
//!   equal the set marked, so two findings of one code on one line need only one marker (or
//!   one per text to check). A finding reported twice (same code, span and message) fails.
//! - `# file: error[CODE]` on the first line expects a file-level finding: one whose span
//!   starts at byte 0 (no schedule, not text, ...).
//! - Files whose text is empty or whitespace-only cannot hold a marker: they must yield
//!   exactly one `CAKE-L009` whose message says the file is empty.
//! - `*.bin` files are fed as raw bytes (they are not valid UTF-8) and must yield exactly one
//!   `CAKE-L013`.
//! - A file without markers must check clean.
//! - Lowering-coverage notes (`CAKE-V001`, "... is not lowered for sm_90a yet") change as the
//!   lowering grows, so in a rule example they are compared only if the file marks at least
//!   one of them; otherwise they are ignored.
//!
//! Every file is checked and every failure reported together, each with the rendered
//! diagnostics. `CAKE_CHECK_DIR=<dir>` runs the files of another directory instead.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cake_diag::{render, Finding, SourceFile};

fn repo_root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .expect("repository root")
}

/// `tests/check/` at the repository root; `CAKE_CHECK_DIR` points the tests elsewhere (handy
/// while writing new cases).
fn check_dir() -> PathBuf {
    match std::env::var_os("CAKE_CHECK_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/check")),
    }
}

/// Every regular file under `dir`, recursively, sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("reading {}: {e}", d.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.is_file() {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn display(path: &Path) -> String {
    let root = repo_root();
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(&root)
        .unwrap_or(&path)
        .display()
        .to_string()
}

/// Where a finding is expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    /// Span starting at byte 0 (`# file:` marker).
    File,
    /// Span starting on this 1-based line.
    Line(u32),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::File => f.write_str("file"),
            Place::Line(l) => write!(f, "line {l}"),
        }
    }
}

#[derive(Clone, Debug)]
struct Expected {
    place: Place,
    severity: String,
    code: String,
    substring: Option<String>,
}

impl std::fmt::Display for Expected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}[{}]", self.place, self.severity, self.code)?;
        if let Some(s) = &self.substring {
            write!(f, ": {s:?}")?;
        }
        Ok(())
    }
}

const KINDS: [&str; 3] = ["error", "warning", "note"];

/// The markers of one comment body (the text after `#`), e.g.
/// `error[CAKE-L007] error[CAKE-L008]: dtypes`.
fn parse_markers(body: &str) -> Result<Vec<(String, String, Option<String>)>, String> {
    // Find every `kind[` that starts a marker (at the start or after whitespace).
    let mut starts = Vec::new();
    for (i, _) in body.char_indices() {
        let at_word_start = i == 0 || body[..i].ends_with(char::is_whitespace);
        if !at_word_start {
            continue;
        }
        for kind in KINDS {
            if body[i..].starts_with(kind) && body[i + kind.len()..].starts_with('[') {
                starts.push((i, kind));
            }
        }
    }
    if starts.is_empty() {
        return Err(format!("no marker in `#{body}`"));
    }
    if !body[..starts[0].0].trim().is_empty() {
        return Err(format!("text before the first marker in `#{body}`"));
    }
    let mut out = Vec::new();
    for (n, (i, kind)) in starts.iter().enumerate() {
        let end = starts.get(n + 1).map_or(body.len(), |s| s.0);
        let text = &body[*i + kind.len() + 1..end];
        let Some(close) = text.find(']') else {
            return Err(format!("unclosed `{kind}[` in `#{body}`"));
        };
        let code = text[..close].trim().to_string();
        if !is_code(&code) {
            return Err(format!(
                "`{code}` is not a finding code (CAKE-X000) in `#{body}`"
            ));
        }
        let rest = text[close + 1..].trim();
        let substring = if rest.is_empty() {
            None
        } else if let Some(s) = rest.strip_prefix(':') {
            let s = s.trim();
            if s.is_empty() {
                return Err(format!(
                    "empty message after `{kind}[{code}]:` in `#{body}`"
                ));
            }
            Some(s.to_string())
        } else {
            return Err(format!(
                "unexpected `{rest}` after `{kind}[{code}]` (use `: text`)"
            ));
        };
        out.push((kind.to_string(), code, substring));
    }
    Ok(out)
}

fn is_code(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 9
        && s.starts_with("CAKE-")
        && b[5].is_ascii_uppercase()
        && b[6..].iter().all(u8::is_ascii_digit)
}

/// The marker comment of a line: the first `#` followed (after spaces) by `file:` or a marker
/// kind. Returns the comment body and whether it is a `file:` marker.
fn marker_comment(line: &str) -> Option<(&str, bool)> {
    for (i, _) in line.match_indices('#') {
        let body = line[i + 1..].trim_start();
        if let Some(rest) = body.strip_prefix("file:") {
            return Some((rest, true));
        }
        if KINDS
            .iter()
            .any(|k| body.starts_with(k) && body[k.len()..].starts_with('['))
        {
            return Some((body, false));
        }
    }
    None
}

fn expectations(text: &str) -> Result<Vec<Expected>, Vec<String>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i as u32 + 1;
        let Some((body, is_file)) = marker_comment(line) else {
            continue;
        };
        if is_file && lineno != 1 {
            errors.push(format!(
                "line {lineno}: `# file:` markers belong on the first line"
            ));
            continue;
        }
        match parse_markers(body) {
            Ok(markers) => {
                for (severity, code, substring) in markers {
                    out.push(Expected {
                        place: if is_file {
                            Place::File
                        } else {
                            Place::Line(lineno)
                        },
                        severity,
                        code,
                        substring,
                    });
                }
            }
            Err(e) => errors.push(format!("line {lineno}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// Everything a marker's text may match: message, help, notes and labels.
fn finding_text(f: &Finding) -> String {
    let mut s = f.message.clone();
    if let Some(h) = &f.help {
        s.push('\n');
        s.push_str(h);
    }
    for n in &f.notes {
        s.push('\n');
        s.push_str(n);
    }
    for l in &f.labels {
        s.push('\n');
        s.push_str(&l.message);
    }
    s
}

fn place_of(file: &SourceFile, f: &Finding, file_level: bool) -> Place {
    if file_level && f.span.start == 0 {
        Place::File
    } else {
        Place::Line(file.line_of(f.span.start))
    }
}

fn describe_actual(file: &SourceFile, f: &Finding) -> String {
    let (line, col) = file.line_col(f.span.start);
    format!(
        "line {line}:{col}: {}[{}]: {}",
        f.severity.as_str(),
        f.code,
        f.message
    )
}

/// Compare the findings with the expectations; the problems found, one per line.
///
/// The set of (place, severity, code) reported must equal the set marked: several findings of
/// one code on one line need one marker (or one per message text to check). Each marker's text
/// must occur in one of the findings it stands for. Separately, two findings identical in
/// code, span and message are a failure: one mistake is reported once.
fn compare(file: &SourceFile, findings: &[Finding], expected: &[Expected]) -> Vec<String> {
    let file_level = expected.iter().any(|e| e.place == Place::File);
    type Key = (Place, String, String);
    let mut want: BTreeMap<Key, Vec<&Expected>> = BTreeMap::new();
    for e in expected {
        want.entry((e.place, e.severity.clone(), e.code.clone()))
            .or_default()
            .push(e);
    }
    let mut got: BTreeMap<Key, Vec<&Finding>> = BTreeMap::new();
    for f in findings {
        let key = (
            place_of(file, f, file_level),
            f.severity.as_str().to_string(),
            f.code.to_string(),
        );
        got.entry(key).or_default().push(f);
    }
    let mut problems = Vec::new();
    let keys: std::collections::BTreeSet<Key> = want.keys().chain(got.keys()).cloned().collect();
    for key in keys {
        let exps = want.get(&key).map(Vec::as_slice).unwrap_or_default();
        let acts = got.get(&key).map(Vec::as_slice).unwrap_or_default();
        if acts.is_empty() {
            for e in exps {
                problems.push(format!("  missing:    {e}"));
            }
            continue;
        }
        if exps.is_empty() {
            for f in acts {
                problems.push(format!("  unexpected: {}", describe_actual(file, f)));
            }
            continue;
        }
        for e in exps {
            if let Some(s) = &e.substring {
                if !acts.iter().any(|f| finding_text(f).contains(s.as_str())) {
                    let messages: Vec<String> =
                        acts.iter().map(|f| format!("{:?}", f.message)).collect();
                    problems.push(format!(
                        "  wrong text: {e}\n              reported there: {}",
                        messages.join(", ")
                    ));
                }
            }
        }
    }
    for (i, f) in findings.iter().enumerate() {
        let twin = findings[..i]
            .iter()
            .any(|g| g.code == f.code && g.span == f.span && g.message == f.message);
        if twin {
            problems.push(format!("  duplicate:  {}", describe_actual(file, f)));
        }
    }
    problems
}

fn spans_in_bounds(file: &SourceFile, findings: &[Finding]) -> Vec<String> {
    let len = file.text.len() as u32;
    let mut problems = Vec::new();
    for f in findings {
        let mut spans = vec![f.span];
        spans.extend(f.labels.iter().map(|l| l.span));
        for s in spans {
            if !(s.start <= s.end && s.end <= len) {
                problems.push(format!(
                    "  bad span:   {}..{} (file is {len} bytes) on {}[{}]: {}",
                    s.start,
                    s.end,
                    f.severity.as_str(),
                    f.code,
                    f.message
                ));
            }
        }
    }
    problems
}

/// The catalog's rule examples, `CAKE-X000-bad.py` / `CAKE-X000-good.py`, are checked by the
/// whole pipeline.
fn is_rule_example(path: &Path) -> bool {
    let Some(stem) = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".py"))
    else {
        return false;
    };
    matches!(stem.rsplit_once('-'), Some((code, "bad" | "good")) if is_code(code))
}

/// A further case of a verifier or lowering rule: `C004_launch_total.py`.
fn is_later_stage_case(path: &Path) -> bool {
    let Some(stem) = path.file_stem().and_then(|n| n.to_str()) else {
        return false;
    };
    let Some((code, _)) = stem.split_once('_') else {
        return false;
    };
    !code.starts_with('L') && is_code(&format!("CAKE-{code}"))
}

/// The lowering-coverage note ("not lowered for this target yet").
const NOT_LOWERED: &str = "CAKE-V001";

/// What one file gave: the source as the findings see it, and the findings.
struct Outcome {
    file: SourceFile,
    findings: Vec<Finding>,
}

fn run_checks(name: &str, bytes: &[u8], full: bool) -> Result<Outcome, String> {
    let run = || {
        if full {
            let checked = cake_driver::check(name, bytes, None);
            Outcome {
                file: checked.file,
                findings: checked.findings,
            }
        } else {
            let (file, checked) = cake_front::check_bytes(name, bytes);
            Outcome {
                file,
                findings: checked.findings.as_slice().to_vec(),
            }
        }
    };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).map_err(|e| {
        let msg = e
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| e.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        format!("  PANIC while checking: {msg}")
    })
}

/// Check one file; the problems found.
fn check_file(path: &Path) -> Vec<String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let name = display(path);
    let full = is_rule_example(path) || is_later_stage_case(path);
    let Outcome { file, findings } = match run_checks(&name, &bytes, full) {
        Ok(o) => o,
        Err(panic) => return vec![format!("{name}:"), panic],
    };
    let findings = findings.as_slice();
    let mut problems = spans_in_bounds(&file, findings);

    let is_bin = path.extension().is_some_and(|e| e == "bin");
    if is_bin {
        if std::str::from_utf8(&bytes).is_ok() {
            problems.push("  a .bin test file must not be valid UTF-8".to_string());
        }
        let ok = findings.len() == 1
            && findings[0].code == "CAKE-L013"
            && findings[0].severity.as_str() == "error"
            && finding_text(&findings[0]).contains("not UTF-8");
        if !ok {
            problems.push("  expected exactly one error[CAKE-L013] (not UTF-8)".to_string());
            for f in findings {
                problems.push(format!("  reported:   {}", describe_actual(&file, f)));
            }
        }
    } else if file.text.trim().is_empty() {
        let ok = findings.len() == 1
            && findings[0].code == "CAKE-L009"
            && findings[0].span.start == 0
            && findings[0].message.contains("empty");
        if !ok {
            problems.push(
                "  expected exactly one file-level error[CAKE-L009] saying the file is empty"
                    .to_string(),
            );
            for f in findings {
                problems.push(format!("  reported:   {}", describe_actual(&file, f)));
            }
        }
    } else {
        match expectations(&file.text) {
            Err(errors) => {
                for e in errors {
                    problems.push(format!("  bad marker: {e}"));
                }
            }
            Ok(expected) => {
                if !full {
                    for e in expected.iter().filter(|e| !e.code.starts_with("CAKE-L")) {
                        problems.push(format!(
                            "  bad marker: {e}: only CAKE-<code>-bad/good.py and <X000>_*.py files run the verifier"
                        ));
                    }
                }
                // Lowering-coverage notes come and go as the lowering grows; they are
                // compared only in a file that marks one.
                let marks_coverage = expected.iter().any(|e| e.code == NOT_LOWERED);
                let compared: Vec<Finding> = findings
                    .iter()
                    .filter(|f| marks_coverage || f.code != NOT_LOWERED)
                    .cloned()
                    .collect();
                problems.extend(compare(&file, &compared, &expected));
            }
        }
    }
    if problems.is_empty() {
        return problems;
    }
    let stage = if full { "cake check" } else { "front-end" };
    let mut report = vec![format!("{name} ({stage}):")];
    report.extend(problems);
    let rendered = render::human(&file, findings, false);
    let mut block = String::from("  rendered findings:\n");
    for line in rendered.lines() {
        let _ = writeln!(block, "    | {line}");
    }
    report.push(block);
    report
}

#[test]
fn annotated_check_files() {
    let dir = check_dir();
    let files = files_under(&dir);
    assert!(
        files.len() >= 16 || std::env::var_os("CAKE_CHECK_DIR").is_some(),
        "expected the annotated schedules under {}, found {}",
        dir.display(),
        files.len()
    );
    let mut failures = Vec::new();
    let mut failed_files = 0;
    for path in &files {
        // Files outside the conventions (READMEs) are skipped.
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext != "py" && ext != "bin" {
            continue;
        }
        let problems = check_file(path);
        if !problems.is_empty() {
            failed_files += 1;
            failures.extend(problems);
        }
    }
    assert!(
        failures.is_empty(),
        "{failed_files} of {} annotated files disagree with their markers:\n\n{}",
        files.len(),
        failures.join("\n")
    );
}

/// Each language code has at least one annotated failing file, so a code that stops being
/// reported (or is reported elsewhere) shows up here.
#[test]
fn every_language_code_is_exercised() {
    let mut seen = std::collections::BTreeSet::new();
    for path in files_under(&check_dir()) {
        if path.extension().is_some_and(|e| e == "bin") {
            seen.insert("CAKE-L013".to_string());
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        if text.trim().is_empty() {
            seen.insert("CAKE-L009".to_string());
        }
        if let Ok(expected) = expectations(&text) {
            seen.extend(expected.into_iter().map(|e| e.code));
        }
    }
    let missing: Vec<&str> = cake_diag::catalog::all()
        .iter()
        .map(|c| c.code)
        .filter(|c| c.starts_with("CAKE-L") && !seen.contains(*c))
        .collect();
    assert!(
        missing.is_empty(),
        "no annotated file under tests/check/ expects {missing:?}"
    );
}

/// Every example the catalog documents (`cake explain`, docs/rules.md) is the text of its
/// annotated file, `tests/check/CAKE-<code>-bad.py` / `-good.py`, so `annotated_check_files`
/// checks it the way `cake check` would: the bad one marks at least one finding of its code and
/// the good one none, and each reports exactly what it marks.
#[test]
fn catalog_examples_are_check_files() {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/check"));
    let mut problems = Vec::new();
    for info in cake_diag::catalog::all() {
        for (which, example) in [("bad", info.bad), ("good", info.good)] {
            if example.is_empty() {
                continue;
            }
            let path = dir.join(format!("{}-{which}.py", info.code));
            let text = match std::fs::read_to_string(&path) {
                Ok(text) => text,
                Err(e) => {
                    problems.push(format!("{}: {}: {e}", info.code, display(&path)));
                    continue;
                }
            };
            if text != example {
                problems.push(format!(
                    "{}: the {which} example is not the text of {}: include it with include_str!",
                    info.code,
                    display(&path)
                ));
            }
            let marks_code = expectations(&text)
                .is_ok_and(|expected| expected.iter().any(|e| e.code == info.code));
            if marks_code != (which == "bad") {
                problems.push(format!(
                    "{}: {} {} a finding of its own code",
                    info.code,
                    display(&path),
                    if which == "bad" { "must mark" } else { "marks" }
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every schedule of the corpus (`examples/` and `kernels/`) passes `cake check`: front-end,
/// verifier and lowering coverage. The only findings allowed are the coverage notes of targets
/// without a code generator yet, since the corpus carries schedules for targets ahead of the
/// lowering; a schedule for a lowered target must lower completely.
#[test]
fn corpus_checks_clean() {
    // A coverage note's message starts with its target (`sm_80: ...`).
    let allowed = |f: &Finding| {
        f.code == NOT_LOWERED
            && cake_target::TARGETS
                .iter()
                .filter(|t| !cake_lower::has_code_generator(t))
                .any(|t| f.message.contains(&format!("{}: ", t.name)))
    };
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let under = |ext: &str| -> Vec<PathBuf> {
        ["examples", "kernels"]
            .iter()
            .flat_map(|d| files_under(&root.join(d)))
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect()
    };
    // The Python side of a workload contract (its oracle, generator, baselines) is not a
    // schedule; every shipped contract must load, and names its files.
    let mut contract_python = Vec::new();
    for toml in under("toml") {
        // The proposers' tactics file (docs/agents.md) must parse: a run stops on one that does not.
        if toml.ends_with(cake_evolve::tactics::FILE) {
            let t = cake_evolve::tactics::Tactics::load(&toml)
                .unwrap_or_else(|e| panic!("{}: {e}", toml.display()));
            assert!(!t.tactics.is_empty(), "{}: no tactic", toml.display());
            continue;
        }
        // A family (docs/dispatch.md) loads with its contract; every route must take some shape,
        // except in a candidates file (`*.candidates.family.toml`), whose routes overlap by
        // design until `cake family choose` picks their guards.
        let name = toml.to_string_lossy();
        if name.ends_with(".family.toml") {
            let f = cake_eval::family::Family::load(&toml)
                .unwrap_or_else(|e| panic!("{}: {e:?}", toml.display()));
            let v = f.validate().expect("validation");
            if !name.ends_with(".candidates.family.toml") {
                assert!(v.unreachable.is_empty(), "{}: {v:?}", toml.display());
            }
            continue;
        }
        let c = cake_eval::Contract::load(&toml)
            .unwrap_or_else(|e| panic!("{}: {e:?}", toml.display()));
        for reference in std::iter::once(&c.oracle)
            .chain(&c.generator)
            .chain(c.baselines.values())
        {
            let file = reference
                .rsplit_once(':')
                .map_or(reference.as_str(), |(f, _)| f);
            contract_python.push(PathBuf::from(file).canonicalize().expect("contract file"));
        }
    }
    let files: Vec<PathBuf> = under("py")
        .into_iter()
        .filter(|p| !contract_python.contains(&p.canonicalize().expect("corpus file")))
        .collect();
    assert!(files.len() >= 4, "the corpus is missing: {files:?}");
    let mut failures = Vec::new();
    for path in &files {
        let bytes = std::fs::read(path).expect("schedule");
        let name = display(path);
        let checked = cake_driver::check(&name, &bytes, None);
        let unexpected: Vec<Finding> = checked
            .findings
            .iter()
            .filter(|f| !allowed(f))
            .cloned()
            .collect();
        if !unexpected.is_empty() {
            failures.push(format!(
                "{name}:\n{}",
                render::human(&checked.file, &unexpected, false)
            ));
        }
        if checked.kernels.is_empty() {
            failures.push(format!("{name}: no kernel was built"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} corpus schedules have findings:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[cfg(test)]
mod marker_syntax {
    use super::*;

    #[test]
    fn parses_markers() {
        let e = expectations(
            "# file: error[CAKE-L009]\nx = 1  # error[CAKE-L007] error[CAKE-L008]: two words\ny = \"#\"  # warning[CAKE-L016]\n",
        )
        .unwrap();
        let got: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            got,
            [
                "file: error[CAKE-L009]",
                "line 2: error[CAKE-L007]",
                "line 2: error[CAKE-L008]: \"two words\"",
                "line 3: warning[CAKE-L016]",
            ]
        );
    }

    #[test]
    fn rejects_malformed_markers() {
        assert!(expectations("x  # error[L3]\n").is_err());
        assert!(expectations("x  # error[CAKE-L003\n").is_err());
        assert!(expectations("x  # error[CAKE-L003] junk\n").is_err());
        assert!(expectations("x\n# file: error[CAKE-L009]\n").is_err());
        // An ordinary comment is not a marker.
        assert!(expectations("x  # errors are reported\n")
            .unwrap()
            .is_empty());
    }
}
