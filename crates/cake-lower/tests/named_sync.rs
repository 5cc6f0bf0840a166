//! `lm.sync` on a named barrier lowers to `bar.sync` with a derived id and the thread count of
//! the barrier's roles, on every family.

use std::path::Path;

fn lower(file: &str, target: &str) -> Result<String, Vec<cake_lower::Unsupported>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    let bytes = std::fs::read(&path).expect("schedule");
    let checked = cake_driver::check(file, &bytes, Some(target));
    assert!(!checked.has_errors(), "{file}: {:?}", checked.findings);
    let t = cake_target::lookup(target).expect("target");
    cake_lower::lower(&checked.kernels[0], &checked.file, t).map(|l| l.cuda)
}

#[test]
fn a_named_barrier_of_two_warpgroups_syncs_256_threads_on_id_1() {
    let cuda = lower("tests/check/CAKE-M006-good.py", "sm_90a").expect("lowers");
    let body = &cuda[cuda.find("extern \"C\"").unwrap()..];
    assert_eq!(
        body.matches("cake_named_sync(1, 256);").count(),
        1,
        "{body}"
    );
}

#[test]
fn more_named_barriers_than_ids_is_a_coverage_finding() {
    // Fifteen named barriers verify (CAKE-C011 allows them) but ids 1..=7 are theirs in the
    // lowering; 8..=15 belong to the per-replica barriers of TMA stores.
    let errs = lower("tests/check/CAKE-C011-good.py", "sm_90a").expect_err("not lowered");
    assert!(
        errs.iter()
            .any(|e| e.message.contains("more than 7 named barriers")),
        "{errs:?}"
    );
}
