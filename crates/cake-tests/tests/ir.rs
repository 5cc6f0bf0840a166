//! Golden IR: the canonical printing of every kernel of every `examples/*.py` is compared with
//! `tests/golden/ir/<stem>.ir` at the repository root.
//!
//! After an intended change to the front-end or the printer, regenerate the files with
//!
//! ```text
//! CAKE_BLESS=1 cargo test -p cake-tests --test ir
//! ```
//!
//! and review the diff like any other change.

use std::path::{Path, PathBuf};

const BLESS_HINT: &str = "CAKE_BLESS=1 cargo test -p cake-tests --test ir";

fn examples_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples"))
}

fn golden_dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/golden/ir"
    ))
}

fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples_dir())
        .expect("examples/")
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    files.sort();
    files
}

/// The printed IR of every kernel in `path`, concatenated in source order. Findings are
/// reported by the corpus test in check.rs; here a file with errors is reported too, since
/// its IR would be partial.
fn printed_ir(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let (file, checked) = cake_front::check_bytes(&name, &bytes);
    if checked.findings.has_errors() {
        return Err(format!(
            "{name} has errors, so its IR is incomplete:\n{}",
            cake_diag::render::human(&file, checked.findings.as_slice(), false)
        ));
    }
    let mut out = String::new();
    for k in &checked.kernels {
        let text = cake_ir::print::print(k);
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// A line diff (longest common subsequence), in unified style without hunks: context lines
/// start with a space, removed lines with `-`, added lines with `+`. Long runs of context are
/// elided.
fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: length of the LCS of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut lines: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            lines.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(('-', a[i]));
            i += 1;
        } else {
            lines.push(('+', b[j]));
            j += 1;
        }
    }
    // Keep 3 lines of context around each change.
    let near_change = |k: usize| {
        let lo = k.saturating_sub(3);
        let hi = (k + 3).min(lines.len() - 1);
        (lo..=hi).any(|x| lines[x].0 != ' ')
    };
    let mut out = String::from("--- tests/golden/ir (expected)\n+++ printed now (actual)\n");
    let mut skipped = false;
    for (k, (tag, line)) in lines.iter().enumerate() {
        if near_change(k) {
            if skipped {
                out.push_str("  ...\n");
                skipped = false;
            }
            out.push(*tag);
            out.push_str(line);
            out.push('\n');
        } else {
            skipped = true;
        }
    }
    if skipped {
        out.push_str("  ...\n");
    }
    out
}

#[test]
fn examples_match_golden_ir() {
    let files = examples();
    assert!(
        !files.is_empty(),
        "no examples under {}",
        examples_dir().display()
    );
    let bless = cake_testkit::blessing();
    if bless {
        std::fs::create_dir_all(golden_dir()).expect("creating tests/golden/ir");
    }
    let mut failures = Vec::new();
    for path in &files {
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let golden = golden_dir().join(format!("{stem}.ir"));
        let actual = match printed_ir(path) {
            Ok(ir) => ir,
            Err(e) => {
                failures.push(e);
                continue;
            }
        };
        if bless {
            let old = std::fs::read_to_string(&golden).ok();
            if old.as_deref() != Some(actual.as_str()) {
                std::fs::write(&golden, &actual)
                    .unwrap_or_else(|e| panic!("writing {}: {e}", golden.display()));
                eprintln!("blessed tests/golden/ir/{stem}.ir");
            }
            continue;
        }
        match std::fs::read_to_string(&golden) {
            Ok(expected) if expected == actual => {}
            Ok(expected) => failures.push(format!(
                "examples/{stem}.py: the IR differs from tests/golden/ir/{stem}.ir\n{}",
                diff(&expected, &actual)
            )),
            Err(_) => failures.push(format!(
                "examples/{stem}.py: tests/golden/ir/{stem}.ir does not exist"
            )),
        }
    }
    // Golden files whose example is gone.
    if let Ok(entries) = std::fs::read_dir(golden_dir()) {
        for entry in entries.flatten() {
            let p = entry.path();
            if p.extension().is_some_and(|e| e == "ir") {
                let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
                if !examples_dir().join(format!("{stem}.py")).exists() {
                    if bless {
                        let _ = std::fs::remove_file(&p);
                        eprintln!("removed tests/golden/ir/{stem}.ir (no such example)");
                    } else {
                        failures.push(format!(
                            "tests/golden/ir/{stem}.ir has no example examples/{stem}.py"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nIf the new IR is intended, regenerate the golden files with\n    {BLESS_HINT}\nand review the diff.",
        failures.join("\n\n")
    );
}

/// Two separate parses of one file print byte-identical IR (no hash-map order, addresses or
/// other run-to-run state leaks into the printing).
#[test]
fn printing_is_deterministic() {
    let mut paths = examples();
    // The annotated schedules that check clean exercise more of the printer.
    let check = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/check"));
    if let Ok(entries) = std::fs::read_dir(check) {
        let mut ok: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("ok_") && n.ends_with(".py"))
            })
            .collect();
        ok.sort();
        paths.extend(ok);
    }
    for path in paths {
        let bytes = std::fs::read(&path).expect("readable");
        let print_all = || {
            let (_, checked) = cake_front::check_bytes("same.py", &bytes);
            checked
                .kernels
                .iter()
                .map(cake_ir::print::print)
                .collect::<Vec<_>>()
                .concat()
        };
        let first = print_all();
        let second = print_all();
        assert!(!first.is_empty(), "{}: nothing printed", path.display());
        assert!(
            first == second,
            "{}: two parses print different IR\n{}",
            path.display(),
            diff(&first, &second)
        );
    }
}

#[test]
fn diff_marks_changes() {
    let d = diff("a\nb\nc\n", "a\nB\nc\n");
    assert!(
        d.contains("-b\n") && d.contains("+B\n") && d.contains(" a\n"),
        "{d}"
    );
}
