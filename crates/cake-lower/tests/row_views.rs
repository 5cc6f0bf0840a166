//! One value per row of a 64-row tile through shared memory (issue #18): `view.store` of a (64,)
//! f32 or i32 value into a 1-D view and `view.load` of it, from this CTA or a cluster peer. The
//! k-means assign schedule that splits centroids across a cluster
//! (examples/kmeans_assign_split_sm90.py) stores each CTA's per-row best and merges the peers'
//! in CTA 0. What the emitted code must do and, with nvcc, that every split and D compiles
//! without spilling.

mod common;

use std::path::Path;

/// The example with its module constants set.
fn lower_with(constants: &[(&str, i64)]) -> String {
    common::lower_example("kmeans_assign_split_sm90.py", constants)
}

#[test]
fn each_row_is_stored_once_as_a_word_by_the_first_thread_of_its_quad() {
    let cuda = lower_with(&[("SPLIT", 4)]);
    let store = &cuda[cuda.find("// part_i.store(...)").expect("the store")..];
    let store = &store[..store
        .find("cake_mbar_arrive_cluster")
        .expect("then the arrival")];
    assert!(store.contains("if (math_thread % 4 == 0) {"), "{store}");
    assert!(
        store.contains("cake_st_shared_b32(part_i + 4 * (((math_index * 64)) + lane_row + 8 * h), (uint32_t)(best_i[h]));"),
        "{store}"
    );
    // The f32 view keeps the bits of the distance.
    assert!(
        cuda.contains("cake_st_shared_b32(part_d + 4 * (((math_index * 64)) + lane_row + 8 * h), __float_as_uint(best_d[h]));"),
        "{cuda}"
    );
}

#[test]
fn cta_0_reads_every_peer_in_rank_order_after_the_cluster_handoff() {
    let cuda = lower_with(&[("SPLIT", 4)]);
    let wait = cuda
        .find("cake_mbar_wait_cluster(parts,")
        .expect("the wait");
    let mut last = wait;
    for r in 1..4 {
        for (view, load) in [("part_d", "f32"), ("part_i", "s32")] {
            let read = format!(
                "cake_ld_cluster_{load}({view} + 4 * (((math_index * 64)) + lane_row + 8 * h), (uint32_t)({r}))"
            );
            let at = cuda.find(&read).unwrap_or_else(|| panic!("{read}\n{cuda}"));
            assert!(at > last, "rank {r} read out of order");
            last = at;
        }
    }
    // Strictly nearer only: a tie keeps the lower rank's, lower, centroid index.
    assert!(
        cuda.contains("best_i[h] = (int32_t)(((peer_d[h] < best_d[h]) ? peer_i[h] : best_i[h]));")
    );
    assert!(!cuda.contains(
        "cake_ld_cluster_f32(part_d + 4 * (((math_index * 64)) + lane_row + 8 * h), (uint32_t)(4))"
    ));
    // The i32 peer load is emitted once, beside the f32 one.
    assert!(cuda.contains("int cake_ld_cluster_s32(uint32_t addr, uint32_t cta)"));
    assert!(cuda.contains("ld.shared::cluster.s32 %0, [remote];"));
}

#[test]
fn this_ctas_own_view_is_read_with_plain_shared_loads() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kmeans_assign_split_sm90.py");
    let source = std::fs::read_to_string(path)
        .expect("example")
        .replace("part_d.load(cta=r)", "part_d.load()")
        .replace("part_i.load(cta=r)", "part_i.load()");
    let checked = cake_driver::check("split.py", source.as_bytes(), Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let t = cake_target::lookup("sm_90a").unwrap();
    let cuda = cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .expect("lowers")
        .cuda;
    assert!(cuda.contains(
        "peer_d[h] = (float)(cake_ld_shared_f32(part_d + 4 * (((math_index * 64)) + lane_row + 8 * h)));"
    ));
    assert!(cuda.contains(
        "peer_i[h] = (int32_t)(cake_ld_shared_s32(part_i + 4 * (((math_index * 64)) + lane_row + 8 * h)));"
    ));
}

#[test]
fn a_per_row_value_into_a_swizzled_view_is_refused_with_the_reason() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kmeans_assign_split_sm90.py");
    let source = std::fs::read_to_string(path).expect("example");
    let decl = "part_i = pool.view(shape=(BN,), dtype=lm.i32)";
    assert!(source.contains(decl));
    let t = cake_target::lookup("sm_90a").unwrap();
    let source = source.replace(
        decl,
        "part_i = pool.view(shape=(BN,), dtype=lm.i32, swizzle=32)",
    );
    let checked = cake_driver::check("split.py", source.as_bytes(), Some("sm_90a"));
    assert!(!checked.has_errors(), "{:?}", checked.findings);
    let errors = cake_lower::lower(&checked.kernels[0], &checked.file, t).expect_err("refused");
    let messages: Vec<&str> = errors.iter().map(|u| u.message.as_str()).collect();
    // The store and every peer read of the view, each at its own line.
    assert!(
        messages
            .iter()
            .any(|m| m
                .contains("a per-row value is stored into a 1-D f32 or i32 view without swizzle")),
        "{messages:?}"
    );
    assert!(
        messages.iter().any(|m| m
            .contains("view.load of a 1-D view is lowered for f32 and i32 views without swizzle")),
        "{messages:?}"
    );
}

#[test]
fn every_split_and_d_compiles_without_spills() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-split-{}", std::process::id()));
    for (split, d) in [(2, 64), (4, 96), (8, 128), (4, 256)] {
        let build = tc
            .compile(
                &lower_with(&[("SPLIT", split), ("D", d)]),
                t,
                &out,
                &format!("split_{split}_{d}"),
            )
            .unwrap_or_else(|e| panic!("SPLIT={split} D={d}: {e}"));
        for r in &build.resources {
            assert_eq!(
                r.spill_stores, 0,
                "SPLIT={split} D={d} spills: {}",
                build.log
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
