//! The knob variants the autotuner and `cake evolve` produce (every module-level constant of the
//! examples and kernels moved to each of its neighbours, one at a time), each checked; prints the
//! errors of the coverage and size rules so a rule change can be reviewed for false positives:
//!
//!     cargo test -p cake-mutate --test knob_variants -- --ignored --nocapture

use std::path::Path;

use cake_mutate::knobs;

const CODES: [&str; 5] = [
    "CAKE-D006",
    "CAKE-D007",
    "CAKE-D008",
    "CAKE-M009",
    "CAKE-M010",
];

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") && !p.ends_with("contract.py") {
            out.push(p);
        }
    }
}

#[test]
#[ignore = "a review aid: prints what the coverage and size rules say about knob variants"]
fn knob_variants() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut all = Vec::new();
    files(&root.join("examples"), &mut all);
    files(&root.join("kernels"), &mut all);
    all.sort();
    let (mut variants, mut flagged) = (0, 0);
    for path in all {
        let text = std::fs::read_to_string(&path).expect("schedule");
        let name = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        for k in knobs::knobs(&text) {
            for v in knobs::neighbours(k.value) {
                let src = knobs::apply(&text, &[(&k, v)]);
                let checked = cake_driver::check(&name, src.as_bytes(), None);
                variants += 1;
                let hits: Vec<String> = checked
                    .findings
                    .iter()
                    .filter(|f| f.is_error() && CODES.contains(&f.code))
                    .map(|f| {
                        format!(
                            "{}@{}: {}",
                            f.code,
                            checked.file.line_of(f.span.start),
                            f.message
                        )
                    })
                    .collect();
                let others: Vec<&str> = checked
                    .findings
                    .iter()
                    .filter(|f| f.is_error() && !CODES.contains(&f.code))
                    .map(|f| f.code)
                    .collect();
                if !hits.is_empty() {
                    flagged += 1;
                    let only = if others.is_empty() {
                        " (only these rules)"
                    } else {
                        ""
                    };
                    println!("{name} {}={v}{only}: other errors {others:?}", k.name);
                    for h in hits {
                        println!("    {h}");
                    }
                }
            }
        }
    }
    println!("{flagged} of {variants} variants flagged");
    assert!(variants > 0);
}
