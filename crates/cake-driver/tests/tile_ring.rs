//! A dynamic tile loop's ring (docs/language.md §8.1) is placed in shared memory after the
//! barriers, sized by the deepest pipeline, and counted in the kernel's total; a static loop
//! has none.

fn checked(path: &str) -> cake_driver::Checked {
    let full = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&full).expect("the schedule");
    let checked = cake_driver::check(path, &bytes, None);
    assert!(!checked.has_errors(), "{path}: {:?}", checked.findings);
    checked
}

#[test]
fn a_dynamic_loop_places_its_ring_after_the_barriers() {
    let checked = checked("tests/build/dynamic_tiles_sm90.py");
    for k in &checked.kernels {
        assert!(k.dynamic_tiles(), "{}", k.name);
        let layout = cake_ir::layout::smem_layout(k);
        let ring = layout.tile_ring.clone().expect("a ring");
        // Four stages: a producer may run four tiles ahead, so five slots; a loop without a
        // pipeline (`rows_only`) has the fewest, two, and no barriers before them.
        let slots: u32 = if k.name == "rows_only" { 2 } else { 5 };
        assert_eq!(ring.slots, slots, "{}", k.name);
        let barriers_end = layout
            .barriers
            .iter()
            .map(|b| b.offset + 8 * u64::from(b.slots))
            .max()
            .unwrap_or(0);
        assert_eq!(ring.offset, barriers_end, "{}", k.name);
        assert_eq!(ring.empty_offset(), ring.offset + 8 * u64::from(slots));
        assert_eq!(ring.index_offset(), ring.offset + 16 * u64::from(slots));
        assert!(
            layout.total >= ring.index_offset() + 4 * u64::from(slots),
            "{}",
            k.name
        );
    }
}

#[test]
fn a_static_loop_has_no_ring() {
    let checked = checked("examples/gemm_sm90.py");
    for k in &checked.kernels {
        assert!(!k.dynamic_tiles());
        assert_eq!(cake_ir::layout::smem_layout(k).tile_ring, None);
    }
}
