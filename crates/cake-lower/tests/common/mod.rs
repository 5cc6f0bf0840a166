//! What several lowering tests share.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::path::Path;

/// `examples/<file>` with some of its module constants set, checked (no errors allowed) and
/// lowered for sm_90a: the generated CUDA.
pub fn lower_example(file: &str, constants: &[(&str, i64)]) -> String {
    lower_example_whole(file, constants).cuda
}

/// [`lower_example`]'s whole result: the CUDA and the launch metadata.
pub fn lower_example_whole(file: &str, constants: &[(&str, i64)]) -> cake_lower::Lowered {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(file);
    let source = std::fs::read_to_string(path).expect("example");
    let knobs = cake_mutate::knobs::constants(&source);
    let set: Vec<_> = constants
        .iter()
        .map(|(name, v)| {
            let knob = knobs.iter().find(|k| k.name == *name).expect("a constant");
            (knob, *v)
        })
        .collect();
    let source = cake_mutate::knobs::apply(&source, &set);
    lower_whole(file, &source, &format!("{constants:?}"), "sm_90a")
}

/// `source` (named `name`) checked (no errors allowed) and lowered for sm_90a: the generated
/// CUDA. `what` says which variant it is in a failure's message.
pub fn lower_source(name: &str, source: &str, what: &str) -> String {
    lower_source_for(name, source, what, "sm_90a")
}

/// [`lower_source`] for `target`.
pub fn lower_source_for(name: &str, source: &str, what: &str, target: &str) -> String {
    lower_whole(name, source, what, target).cuda
}

fn lower_whole(name: &str, source: &str, what: &str, target: &str) -> cake_lower::Lowered {
    let checked = cake_driver::check(name, source.as_bytes(), Some(target));
    assert!(
        !checked.findings.iter().any(|f| f.is_error()),
        "{name} {what}: {:?}",
        checked.findings
    );
    let t = cake_target::lookup(target).unwrap();
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .unwrap_or_else(|e| panic!("{name} {what} does not lower for {target}: {e:?}"))
}

/// The index of the first line at or after `from` that contains `text`.
pub fn find(lines: &[&str], from: usize, text: &str) -> usize {
    from + lines[from..]
        .iter()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line with {text:?} after line {from}"))
}
