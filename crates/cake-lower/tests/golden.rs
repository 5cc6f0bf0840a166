//! Lowering tests over every example: the generated CUDA matches its golden file (regenerate with
//! CAKE_BLESS=1), lowering is byte-for-byte deterministic, and — when a CUDA toolchain is
//! available (CI installs the pinned one; reported skipped otherwise) — every generated file
//! compiles for its exact target.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// (example stem, target, generated CUDA) for every example and declared target that lowers.
fn lowered_examples() -> Vec<(String, String, String, cake_lower::LaunchMeta)> {
    let mut out = Vec::new();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(repo().join("examples"))
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .collect();
    paths.sort();
    for path in paths {
        let bytes = std::fs::read(&path).expect("read");
        let name = format!("examples/{}", path.file_name().unwrap().to_string_lossy());
        let checked = cake_driver::check(&name, &bytes, None);
        assert!(!checked.has_errors(), "{name} has errors");
        for k in &checked.kernels {
            for t in &k.targets {
                let target = cake_target::lookup(t).expect("declared targets are known");
                if let Ok(l) = cake_lower::lower(k, &checked.file, target) {
                    let stem = path.file_stem().unwrap().to_string_lossy().to_string();
                    out.push((format!("{stem}.{}", k.name), t.clone(), l.cuda, l.launch));
                }
            }
        }
    }
    out
}

#[test]
fn generated_cuda_matches_golden_files() {
    let bless = cake_testkit::blessing();
    let dir = repo().join("tests/golden/cu");
    std::fs::create_dir_all(&dir).expect("golden dir");
    let lowered = lowered_examples();
    assert!(
        !lowered.is_empty(),
        "no example lowers: the golden test would check nothing"
    );
    let mut failures = Vec::new();
    for (stem, target, cuda, launch) in &lowered {
        let launch = serde_json::to_string_pretty(launch).expect("json") + "\n";
        for (path, text) in [
            (dir.join(format!("{stem}.{target}.cu")), cuda.clone()),
            (dir.join(format!("{stem}.{target}.launch.json")), launch),
        ] {
            if bless {
                std::fs::write(&path, &text).expect("write golden");
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(golden) if golden == text => {}
                Ok(golden) => {
                    let first = golden
                        .lines()
                        .zip(text.lines())
                        .position(|(a, b)| a != b)
                        .unwrap_or(0);
                    failures.push(format!(
                        "{} differs from the generated output (first difference at line {}):\n  golden:    {}\n  generated: {}",
                        path.display(),
                        first + 1,
                        golden.lines().nth(first).unwrap_or(""),
                        text.lines().nth(first).unwrap_or("")
                    ));
                }
                Err(_) => failures.push(format!("{} is missing", path.display())),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n\nIf the change is intended, regenerate with CAKE_BLESS=1 cargo test -p cake-lower",
        failures.join("\n")
    );
}

#[test]
fn lowering_is_deterministic() {
    let a = lowered_examples();
    let b = lowered_examples();
    assert_eq!(a.len(), b.len());
    for ((sa, ta, ca, _), (sb, tb, cb, _)) in a.iter().zip(&b) {
        assert_eq!((sa, ta), (sb, tb));
        assert!(
            ca == cb,
            "{sa} for {ta}: two lowerings of the same input differ"
        );
    }
}

/// Compiles every lowered example with the real toolchain. Reported skipped when no nvcc can be
/// found, a failure under CAKE_REQUIRE_ALL=1 (scripts/test.sh installs the pinned one).
#[test]
fn every_lowered_example_compiles_for_its_target() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-golden-build-{}", std::process::id()));
    for (stem, target, cuda, _) in lowered_examples() {
        let t = cake_target::lookup(&target).unwrap();
        let build = tc
            .compile(&cuda, t, &out, &stem)
            .unwrap_or_else(|e| panic!("{stem} for {target} does not compile: {e}"));
        let r = build
            .resources
            .first()
            .unwrap_or_else(|| panic!("{stem}: no ptxas report"));
        assert!(r.registers > 0, "{stem}: ptxas reported no registers");
        assert!(
            !r.warnings.iter().any(|w| w.contains("C7508")),
            "{stem}: ptxas ignored setmaxnreg: {:?}",
            r.warnings
        );
        // Generated CUDA is read by people: it compiles without a warning from nvcc or ptxas.
        assert!(
            r.warnings.is_empty(),
            "{stem} for {target}: the build warns: {:?}",
            r.warnings
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `--embed-ptx`: a forward-compatible target's build is a fatbin (its machine code and its own
/// PTX); an `a` target's is refused before anything is compiled. The refusal needs no toolchain.
#[test]
fn embedding_ptx_is_for_forward_compatible_targets_only() {
    let path = repo().join("examples/gemm_sm90.py");
    let bytes = std::fs::read(&path).expect("read");
    let out = std::env::temp_dir().join(format!("cake-embed-refused-{}", std::process::id()));
    match cake_driver::build_with("examples/gemm_sm90.py", &bytes, "sm_90a", &out, true) {
        Err(cake_driver::BuildError::Target(m)) => {
            assert!(m.contains("compute_90a"), "{m}")
        }
        Err(e) => panic!("expected the target refusal, got {e}"),
        Ok(_) => panic!("--embed-ptx for sm_90a must be refused"),
    }
    assert_eq!(
        cake_toolchain::Toolchain::gencode(
            cake_target::lookup("sm_80").unwrap(),
            cake_toolchain::Image::FatbinWithPtx
        ),
        "-gencode=arch=compute_80,code=[sm_80,compute_80]"
    );
    if cake_testkit::require(
        cake_toolchain::Toolchain::discover(),
        "no CUDA toolchain for the fatbin build",
    )
    .is_none()
    {
        return;
    }
    let bytes = std::fs::read(repo().join("examples/gemm_sm80.py")).expect("read");
    let out = std::env::temp_dir().join(format!("cake-embed-{}", std::process::id()));
    let built = cake_driver::build_with("examples/gemm_sm80.py", &bytes, "sm_89", &out, true)
        .unwrap_or_else(|e| panic!("{e}"));
    let k = &built.kernels[0];
    assert_eq!(k.launch.cubin, "gemm.fatbin");
    assert!(k.cubin.ends_with("gemm.fatbin"), "{}", k.cubin.display());
    let image = std::fs::read(&k.cubin).expect("fatbin written");
    // The fatbin magic 0xBA55ED50, little-endian (a cubin would start with ELF's).
    assert!(image.starts_with(&[0x50, 0xED, 0x55, 0xBA]), "not a fatbin");
    let launch: cake_lower::LaunchMeta =
        serde_json::from_slice(&std::fs::read(&k.launch_json).unwrap()).unwrap();
    assert_eq!(launch.cubin, "gemm.fatbin");
    let _ = std::fs::remove_dir_all(&out);
}
