//! Names and file names are user text pasted into the generated CUDA (comments, symbols) and into
//! file names (launch.json's `cubin`). Plant injection attempts in every name of real schedules
//! (all three MMA families) and in the file name, lower, and check that nothing reaches the
//! preprocessor or leaves the output directory.

use cake_ir::{Arena, Kernel};
use std::path::{Component, Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The hostile forms of `base` (distinct per resource, so symbols stay distinct).
fn hostile(base: &str, i: usize) -> String {
    match i % 8 {
        0 => format!("{base}\n#define cake_smem 0\n"),
        1 => format!("{base} */ #error injected /*"),
        2 => format!("{base}\\"),
        3 => format!("../../{base}"),
        4 => format!("{base}\u{202e}ядро"),
        5 => format!("{base}\r#error injected"),
        6 => format!("{base}??/"),
        _ => format!("/abs/{base}\u{2028}#include \"/etc/passwd\""),
    }
}

fn rename<T>(arena: &mut Arena<T>, name: impl Fn(&mut T) -> &mut String, n: &mut usize) {
    let handles: Vec<_> = arena.iter().map(|(h, _)| h).collect();
    for h in handles {
        let s = name(&mut arena[h]);
        *s = hostile(s, *n);
        *n += 1;
    }
}

fn plant(k: &Kernel) -> Kernel {
    let mut k = k.clone();
    let mut n = 0;
    k.name = format!("../../{}\n#define x", k.name);
    rename(&mut k.params, |p| &mut p.name, &mut n);
    rename(&mut k.dims, |p| &mut p.name, &mut n);
    rename(&mut k.pools, |p| &mut p.name, &mut n);
    rename(&mut k.views, |p| &mut p.name, &mut n);
    rename(&mut k.tmems, |p| &mut p.name, &mut n);
    rename(&mut k.roles, |p| &mut p.name, &mut n);
    rename(&mut k.fragments, |p| &mut p.name, &mut n);
    rename(&mut k.pipelines, |p| &mut p.name, &mut n);
    rename(&mut k.barriers, |p| &mut p.name, &mut n);
    rename(&mut k.named_barriers, |p| &mut p.name, &mut n);
    rename(&mut k.loops, |p| &mut p.var_name, &mut n);
    k
}

/// The preprocessor lines, without their comments (which hold names).
fn directives(cuda: &str) -> Vec<&str> {
    cuda.lines()
        .filter(|l| l.trim_start().starts_with('#'))
        .map(|l| l.split("//").next().unwrap_or(l))
        .collect()
}

#[test]
fn hostile_names_and_file_names_stay_inert() {
    // No `/` in it: comments show the file name without its directories (`*/` is in the names).
    let file_name = "k\n#error injected\n\\\n\u{202e}.py";
    let mut lowered = 0;
    for example in [
        "gemm_sm90.py",
        "gemm_sm80.py",
        "gemm_sm100.py",
        "gemm_chain_sm90.py",
    ] {
        let bytes = std::fs::read(repo().join("examples").join(example)).expect("example");
        let plain = cake_driver::check(example, &bytes, None);
        let hostile_file = cake_driver::check(file_name, &bytes, None);
        assert!(
            !plain.has_errors() && !hostile_file.has_errors(),
            "{example}"
        );
        for (k, hk) in plain.kernels.iter().zip(&hostile_file.kernels) {
            for t in &k.targets {
                let target = cake_target::lookup(t).expect("target");
                let base = cake_lower::lower(k, &plain.file, target).expect("lowers");
                let h = cake_lower::lower(&plant(hk), &hostile_file.file, target)
                    .expect("names do not change what lowers");
                lowered += 1;
                let what = format!("{example} for {t}");
                // Same lines, same directives: no name added, removed or joined a line.
                assert_eq!(h.cuda.lines().count(), base.cuda.lines().count(), "{what}");
                assert_eq!(directives(&h.cuda), directives(&base.cuda), "{what}");
                assert!(!h.cuda.lines().any(|l| l.trim_start().starts_with("#error")
                    || l.trim_start().starts_with("#include \"")
                    || l.trim_start().starts_with("#define cake_smem")));
                assert!(!h.cuda.contains("*/"), "{what}: `*/` in a comment");
                for line in h.cuda.lines() {
                    assert!(
                        !line.ends_with('\\') && !line.ends_with("??/"),
                        "{what}: a line continues onto the next: {line:?}"
                    );
                    assert!(
                        !line
                            .chars()
                            .any(|c| c.is_control() || matches!(c, '\u{202e}' | '\u{2028}')),
                        "{what}: a control character in {line:?}"
                    );
                }
                // The planted names are there, escaped, in comments (the test plants something).
                assert!(
                    h.cuda.contains("<U+000A>#define cake_smem 0<U+000A>"),
                    "{what}"
                );
                assert!(h
                    .cuda
                    .contains("from k<U+000A>#error injected<U+000A>\\<U+000A><U+202E>.py for"));
                assert!(h.cuda.contains(" *<U+002F> #error"), "{what}");
                // Symbols are C identifiers; the image is a file name inside the output directory.
                let ident = |s: &str| {
                    s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !s.starts_with(|c: char| c.is_ascii_digit())
                };
                assert!(ident(&h.symbol) && h.symbol == h.launch.symbol, "{what}");
                for file in [
                    h.launch.cubin.clone(),
                    format!("{}.cu", cake_lower::file_stem(&h.launch.kernel)),
                ] {
                    let p = Path::new(&file);
                    assert!(
                        p.components().count() == 1
                            && matches!(p.components().next(), Some(Component::Normal(_)))
                            && !file.starts_with('.'),
                        "{what}: {file:?} is not a file name in the output directory"
                    );
                }
            }
        }
    }
    assert!(lowered >= 4, "the hostile names went through every backend");
}

#[test]
fn file_stems_of_ordinary_and_hostile_kernel_names() {
    for ordinary in ["gemm", "gemm_fp8", "attention_fwd", "ядро"] {
        assert_eq!(cake_lower::file_stem(ordinary), ordinary);
    }
    for (name, stem) in [
        ("../../etc/x", "______etc_x"),
        ("/abs", "_abs"),
        ("", "kernel"),
        ("-rf", "kernel-rf"),
        ("a\nb", "a_b"),
        (".hidden", "_hidden"),
    ] {
        assert_eq!(cake_lower::file_stem(name), stem, "{name:?}");
    }
}
