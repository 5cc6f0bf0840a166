//! Kernels whose module keeps state between launches (a dynamic tile loop's counters, stream-K's
//! partials and flags) say so in launch.json (`module_state`), so the runtime gives each stream
//! its own copy of the module (docs/launch.md); every other kernel shares one.

mod common;

fn module_state(file: &str, constants: &[(&str, i64)]) -> bool {
    let lowered = common::lower_example_whole(file, constants);
    let json = serde_json::to_value(&lowered.launch).expect("launch.json");
    assert_eq!(
        json.get("module_state").is_some(),
        lowered.launch.module_state,
        "{file} {constants:?}: the field is written only when true"
    );
    lowered.launch.module_state
}

#[test]
fn a_dynamic_tile_loop_keeps_its_counters_in_the_module() {
    assert!(module_state(
        "attention_sm90.py",
        &[("CAUSAL", 1), ("PERSISTENT", 1), ("DYNAMIC", 1)]
    ));
    assert!(module_state("rmsnorm_ring_sm90.py", &[("DYNAMIC", 1)]));
}

#[test]
fn a_stream_k_fixup_keeps_its_partials_in_the_module() {
    assert!(module_state("gemm_streamk_sm90.py", &[]));
    assert!(module_state("tinygemm_streamk_sm90.py", &[]));
}

#[test]
fn static_tile_loops_keep_nothing_between_launches() {
    assert!(!module_state(
        "attention_sm90.py",
        &[("CAUSAL", 1), ("PERSISTENT", 1), ("DYNAMIC", 0)]
    ));
    assert!(!module_state("rmsnorm_ring_sm90.py", &[("DYNAMIC", 0)]));
    assert!(!module_state("gemm_sm90.py", &[]));
    assert!(!module_state("tinygemm_sm90.py", &[]));
}
