//! One compile session derives each stage's inputs once: a check lowers nothing (it asks
//! `cake_lower::lowerable`), a build lowers every kernel exactly once, and the facts the
//! verifier read are the ones kept for later stages.

fn example(name: &str) -> Vec<u8> {
    let path = format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).expect("the example")
}

#[test]
fn check_lowers_nothing() {
    for file in ["gemm_sm90.py", "gemm_sm80.py", "gemm_sm100.py"] {
        let before = cake_lower::lowerings_on_this_thread();
        let checked = cake_driver::check(file, &example(file), None);
        assert!(!checked.has_errors(), "{file}: {:?}", checked.findings);
        assert!(
            checked.facts.iter().flatten().count() > 0,
            "{file} was verified"
        );
        assert_eq!(
            cake_lower::lowerings_on_this_thread(),
            before,
            "{file}: cake check lowered"
        );
    }
}

#[test]
fn build_lowers_each_kernel_once() {
    for (file, target) in [
        ("gemm_sm90.py", "sm_90a"),
        ("gemm_sm80.py", "sm_80"),
        ("gemm_sm100.py", "sm_100a"),
    ] {
        let before = cake_lower::lowerings_on_this_thread();
        let (checked, lowered) =
            cake_driver::lower(file, &example(file), target).expect("the example lowers");
        let count = cake_lower::lowerings_on_this_thread() - before;
        assert_eq!(lowered.len(), checked.kernels.len(), "{file}");
        assert_eq!(
            count,
            checked.kernels.len() as u64,
            "{file} for {target}: {count} lowerings for {} kernel(s)",
            checked.kernels.len()
        );
    }
}

#[test]
fn check_keeps_the_facts_of_every_verified_target() {
    let checked = cake_driver::check("gemm_sm90.py", &example("gemm_sm90.py"), None);
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    for (ki, k) in checked.kernels.iter().enumerate() {
        for t in &k.targets {
            let facts = checked
                .facts_for(ki, t)
                .expect("facts for a declared target");
            assert_eq!(facts.target.name, t);
            assert_eq!(facts.layout, cake_ir::layout::smem_layout(k));
        }
    }
}
