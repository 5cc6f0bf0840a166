//! Schedules one edit away from a corpus example: the edit must draw the finding, and the
//! example itself must not. Written as edits rather than copies so the case follows the example.

use std::path::PathBuf;

fn example(name: &str) -> String {
    let path = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// (code, 1-based line) of every finding `cake check` reports.
fn findings(name: &str, source: &str) -> Vec<(String, u32)> {
    let checked = cake_driver::check(name, source.as_bytes(), None);
    checked
        .findings
        .iter()
        .map(|f| (f.code.to_string(), checked.file.line_of(f.span.start)))
        .collect()
}

/// The attention example reads O from TMEM under `if j > 0`, relying on the previous
/// iteration's wait. Guarding it on the tile coordinate instead leaves the first iteration
/// reading O before any MMA wrote it: CAKE-S014 on the load.
#[test]
fn a_tmem_read_guarded_by_another_variable_is_read_before_ready() {
    let original = example("attention_sm100.py");
    assert_eq!(
        original.matches("if j > 0:").count(),
        1,
        "the edit's anchor moved"
    );
    let edited = original.replace("if j > 0:", "if tq > 0:");
    let lines: Vec<&str> = edited.lines().collect();
    let guard = lines.iter().position(|l| l.contains("if tq > 0:")).unwrap();
    let load = (guard..lines.len())
        .find(|&i| lines[i].contains("lm.tmem_load(o_frag, o_tmem)"))
        .expect("the guarded load") as u32
        + 1;
    let code = "CAKE-S014".to_string();
    assert!(!findings("attention_sm100.py", &original)
        .iter()
        .any(|(c, _)| *c == code));
    let found = findings("attention_sm100.py", &edited);
    assert!(
        found.contains(&(code, load)),
        "expected CAKE-S014 on line {load}, got {found:?}"
    );
}
