//! Copies by the role's own threads (issue #18): `view.cp_async` on sm_90a into a 1-D view from
//! a tensor whose rows need not be 16-byte aligned, beside a TMA load on the same barrier, and
//! `view.copy_to(..., reduce="add")` out of shared memory. The k-means update with per-CTA sums
//! (examples/kmeans_update_private_sm90.py) copies its ids and adds its counts this way, so it
//! serves any N and K; TMA_IDS = 1 is its TMA-only form.

mod common;

/// The example with its module constants set, lowered for sm_90a.
fn lower_with(constants: &[(&str, i64)]) -> String {
    common::lower_example("kmeans_update_private_sm90.py", constants)
}

/// The text from the first occurrence of `from` to the next of `to` after it.
fn between<'a>(cuda: &'a str, from: &str, to: &str) -> &'a str {
    let at = cuda.find(from).unwrap_or_else(|| panic!("{from}\n{cuda}"));
    let rest = &cuda[at..];
    &rest[..rest.find(to).unwrap_or_else(|| panic!("{to} after {from}"))]
}

#[test]
fn ids_go_16_bytes_at_a_time_where_aligned_and_one_at_a_time_where_not() {
    let cuda = lower_with(&[]);
    let copy = between(&cuda, "// cp_async sI <- IDS", "cake_cp_async_mbar_arrive(");
    // One run-time test of the slice's start picks the form; row b of IDS starts at b * N.
    assert!(
        copy.contains(
            "if ((uintptr_t)(IDS + ((size_t)(tile_0) * dim_N + ((r_1 * 64)))) % 16 == 0) {"
        ),
        "{copy}"
    );
    let (wide, narrow) = copy.split_at(copy.find("} else {").expect("the narrow form"));
    assert!(wide.contains("16 pieces of 16 B"), "{wide}");
    assert!(wide.contains("cake_cp_async_16("), "{wide}");
    assert!(narrow.contains("64 pieces of 4 B"), "{narrow}");
    assert!(narrow.contains("cake_cp_async_4("), "{narrow}");
    // Past N, nothing is read and the stage holds zeros (the scatter skips those rows).
    assert!(
        narrow.contains("const int valid = g_row < 1 ? max(0, min(1, dim_N - g_col)) * 4 : 0;"),
        "{narrow}"
    );
}

#[test]
fn the_barrier_counts_the_tma_arrival_and_every_producer_threads_copy_arrival() {
    let cuda = lower_with(&[]);
    // One expect_tx arrival for X's TMA load and one cp.async arrival per producer thread.
    assert!(
        cuda.contains("cake_mbar_init(full + 8 * s, 129);"),
        "{cuda}"
    );
    // X's load is issued by one of them.
    let tma = between(&cuda, "// tma_load sX <- X", "cake_tma_load_3d(");
    assert!(tma.contains("if (load_thread == 0) {"), "{tma}");
    // With the TMA form the role is issue-only again: one thread, one arrival.
    let tma_only = lower_with(&[("TMA_IDS", 1)]);
    assert!(tma_only.contains("cake_mbar_init(full + 8 * s, 1);"));
    assert!(!tma_only.contains("cake_cp_async_16("));
}

#[test]
fn counts_are_added_by_each_consumer_thread_within_the_tensor() {
    let cuda = lower_with(&[]);
    let add = between(&cuda, "// copy_to COUNTS += sCnt", "\n      }\n");
    // The replica's threads meet before (other warps wrote the counts) and after the reads.
    assert_eq!(
        add.matches("cake_named_sync(8 + math_index, 128);").count(),
        2,
        "{add}"
    );
    assert!(
        add.contains("for (int e = math_thread; e < 128; e += 128) {"),
        "{add}"
    );
    assert!(
        add.contains(
            "if (g_col < dim_K) atomicAdd(COUNTS + ((size_t)(tile_0) * dim_K + (g_col)), v);"
        ),
        "{add}"
    );
    let tma_only = lower_with(&[("TMA_IDS", 1)]);
    assert!(!tma_only.contains("atomicAdd("));
}
