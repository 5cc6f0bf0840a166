//! The legality pass is exact: for every schedule of the repository (examples/, kernels/,
//! tests/check/ and tests/build/) the front-end accepts, every kernel and every target,
//! `lowerable` returns what `lower_with` reports — the same not-lowered findings, spans and
//! order — without generating code.

use cake_ir::KernelFacts;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn schedules(dir: &Path, out: &mut Vec<PathBuf>) {
    // A corpus directory that cannot be read is a failure, not a smaller corpus.
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            schedules(&path, out);
        } else if path.extension().is_some_and(|e| e == "py") {
            out.push(path);
        }
    }
}

#[test]
fn lowerable_reports_exactly_what_lowering_reports() {
    let mut paths = Vec::new();
    for dir in ["examples", "kernels", "tests/check", "tests/build"] {
        schedules(&repo().join(dir), &mut paths);
    }
    paths.sort();
    let (mut compared, mut refused, mut lowered) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in &paths {
        let name = path
            .strip_prefix(repo())
            .unwrap_or(path)
            .display()
            .to_string();
        let bytes = std::fs::read(path).expect("read");
        let (file, front) = cake_front::check_bytes(&name, &bytes);
        if front.findings.iter().any(|f| f.is_error()) {
            continue;
        }
        for k in &front.kernels {
            for target in cake_target::TARGETS {
                let facts = KernelFacts::new(k, target);
                let before = cake_lower::lowerings_on_this_thread();
                let pass = cake_lower::lowerable(k, &facts);
                assert_eq!(
                    cake_lower::lowerings_on_this_thread(),
                    before,
                    "lowerable lowered {name}"
                );
                let lowering = cake_lower::lower_with(k, &facts, &file)
                    .err()
                    .unwrap_or_default();
                compared += 1;
                if lowering.is_empty() {
                    lowered += 1;
                } else {
                    refused += 1;
                }
                if pass != lowering {
                    failures.push(format!(
                        "{name}, kernel `{}` on {}:\n  lowerable: {pass:?}\n  lower_with: {lowering:?}",
                        k.name, target.name
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} (kernel, target) pairs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The corpus exercises both outcomes on every target.
    assert!(
        compared >= 7 * 100 && lowered >= 50 && refused >= 100,
        "{compared} pairs compared: {lowered} lower, {refused} do not"
    );
}

/// A double-buffered register accumulator (the wgmma pattern) is not a tcgen05 MMA form: on
/// sm_100a / sm_103a it is reported as not lowered instead of becoming wgmma instructions.
#[test]
fn tcgen05_does_not_lower_a_register_accumulator_loop() {
    let name = "kernels/kmeans/variants/kmeans_assign_db_sm90.py";
    let bytes = std::fs::read(repo().join(name)).expect("read");
    let (file, front) = cake_front::check_bytes(name, &bytes);
    let k = &front.kernels[0];
    for t in ["sm_100a", "sm_103a"] {
        let target = cake_target::lookup(t).expect("target");
        let facts = KernelFacts::new(k, target);
        let errors = cake_lower::lower_with(k, &facts, &file).expect_err("not lowered");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .message
                .starts_with(&format!("on {t}, an MMA with a register accumulator")),
            "{errors:?}"
        );
        assert_eq!(cake_lower::lowerable(k, &facts), errors);
    }
    let sm90 = cake_target::lookup("sm_90a").expect("target");
    let lowered = cake_lower::lower_with(k, &KernelFacts::new(k, sm90), &file).expect("lowers");
    assert!(lowered.cuda.contains("double-buffered"));
}

/// The same over every mutant `cake-mutate` plants in the examples and kernels (flipped
/// swizzles and majorness, misaligned views and roles, changed stages and counts, ...): schedules
/// one edit away from lowering, where the two reports would part first.
#[test]
fn lowerable_is_exact_on_mutants() {
    let mut paths = Vec::new();
    for dir in ["examples", "kernels"] {
        schedules(&repo().join(dir), &mut paths);
    }
    paths.sort();
    let (mut compared, mut refused) = (0, 0);
    for path in &paths {
        let source = std::fs::read_to_string(path).expect("read");
        for m in cake_mutate::mutants(&source) {
            let name = format!("{} ({} at line {})", path.display(), m.operator, m.line);
            let (file, front) = cake_front::check_bytes(&name, m.source.as_bytes());
            if front.findings.iter().any(|f| f.is_error()) {
                continue;
            }
            for k in &front.kernels {
                for target in cake_target::TARGETS {
                    let facts = KernelFacts::new(k, target);
                    let pass = cake_lower::lowerable(k, &facts);
                    let lowering = cake_lower::lower_with(k, &facts, &file)
                        .err()
                        .unwrap_or_default();
                    assert_eq!(
                        pass, lowering,
                        "{name}, kernel `{}` on {}",
                        k.name, target.name
                    );
                    compared += 1;
                    refused += usize::from(!lowering.is_empty());
                }
            }
        }
    }
    assert!(
        compared > 1000 && refused > 0,
        "{compared} compared, {refused} refused"
    );
}
