//! What several lowering tests share.

use std::path::Path;

/// `examples/<file>` with some of its module constants set, checked (no errors allowed) and
/// lowered for sm_90a: the generated CUDA.
pub fn lower_example(file: &str, constants: &[(&str, i64)]) -> String {
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
    let checked = cake_driver::check(file, source.as_bytes(), Some("sm_90a"));
    assert!(
        !checked.findings.iter().any(|f| f.is_error()),
        "{file} {constants:?}: {:?}",
        checked.findings
    );
    let t = cake_target::lookup("sm_90a").unwrap();
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .unwrap_or_else(|e| panic!("{file} {constants:?} does not lower: {e:?}"))
        .cuda
}
