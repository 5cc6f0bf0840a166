//! Kernels that keep memory their CTAs share within a launch (a dynamic tile loop's counters,
//! stream-K's partials and flags) take it as their last argument, the launch's workspace, and
//! say how large it is in launch.json (`state`), so the launcher gives launches that may overlap
//! their own (docs/launch.md). No kernel keeps anything in module globals.

mod common;

use cake_lower::{Arg, StateMeta};

/// The kernel's workspace as launch.json describes it, checked against its argument list and
/// its code.
fn state(file: &str, constants: &[(&str, i64)]) -> Option<StateMeta> {
    let lowered = common::lower_example_whole(file, constants);
    let launch = &lowered.launch;
    let json = serde_json::to_value(launch).expect("launch.json");
    assert_eq!(
        json.get("state").is_some(),
        launch.state.is_some(),
        "{file} {constants:?}: the field is written only for a kernel with a workspace"
    );
    let state_args = launch.args.iter().filter(|a| **a == Arg::State).count();
    assert_eq!(
        state_args,
        usize::from(launch.state.is_some()),
        "{file} {constants:?}: one workspace argument exactly when launch.json has `state`"
    );
    if launch.state.is_some() {
        assert_eq!(
            launch.args.last(),
            Some(&Arg::State),
            "{file}: the last argument"
        );
        assert!(
            lowered
                .cuda
                .contains("unsigned char* __restrict__ cake_state"),
            "{file}: the kernel takes the workspace"
        );
    }
    assert!(
        !lowered.cuda.contains("\n__device__ unsigned")
            && !lowered.cuda.contains("\n__device__ float"),
        "{file} {constants:?}: no module globals"
    );
    launch.state
}

#[test]
fn a_dynamic_tile_loop_keeps_its_two_counters_in_the_workspace() {
    let counters = StateMeta {
        bytes: 8,
        zeroed: 8,
    };
    assert_eq!(
        state(
            "attention_sm90.py",
            &[("CAUSAL", 1), ("PERSISTENT", 1), ("DYNAMIC", 1)]
        ),
        Some(counters)
    );
    assert_eq!(
        state("rmsnorm_ring_sm90.py", &[("DYNAMIC", 1)]),
        Some(counters)
    );
}

#[test]
fn a_stream_k_fixup_keeps_flags_zeroed_and_partials_after_them() {
    for file in ["gemm_streamk_sm90.py", "tinygemm_streamk_sm90.py"] {
        let s = state(file, &[]).expect("stream-K has a workspace");
        let lowered = common::lower_example_whole(file, &[]);
        // The flags (one u32 per warp of each of 256 CTAs) are the zeroed prefix; the partials
        // start at the next 256-byte boundary and run to the end.
        assert!(
            s.zeroed > 0 && s.zeroed.is_multiple_of(4 * 256),
            "{file}: {s:?}"
        );
        assert!(s.bytes > s.zeroed.div_ceil(256) * 256, "{file}: {s:?}");
        let partials_at = format!("(cake_state + {})", s.zeroed.div_ceil(256) * 256);
        assert!(
            lowered.cuda.contains(&partials_at) && lowered.cuda.contains("(cake_state + 0)"),
            "{file}: the fix-up reads the flags at 0 and the partials at {partials_at}"
        );
    }
}

#[test]
fn static_tile_loops_take_no_workspace() {
    assert_eq!(
        state(
            "attention_sm90.py",
            &[("CAUSAL", 1), ("PERSISTENT", 1), ("DYNAMIC", 0)]
        ),
        None
    );
    assert_eq!(state("rmsnorm_ring_sm90.py", &[("DYNAMIC", 0)]), None);
    assert_eq!(state("gemm_sm90.py", &[]), None);
    assert_eq!(state("tinygemm_sm90.py", &[]), None);
}
