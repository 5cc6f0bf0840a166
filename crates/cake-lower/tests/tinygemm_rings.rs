//! Small-M GEMM with two rings (examples/tinygemm_rings_sm90.py): the weight and the tokens each
//! in a pipeline of their own, loaded by their own warp; the consumer walks the token ring in its
//! outer loop and the weight ring inside it. What the emitted code must do and, with nvcc, that
//! every M, stage width, split and tile height compiles without spilling.

mod common;

fn lower_with(constants: &[(&str, i64)]) -> String {
    common::lower_example("tinygemm_rings_sm90.py", constants)
}

/// The text of the role branch that starts with `marker` (up to the next role's).
fn role<'a>(cuda: &'a str, marker: &str) -> &'a str {
    let start = cuda.find(marker).unwrap_or_else(|| panic!("no `{marker}`"));
    let rest = &cuda[start..];
    let end = rest[1..]
        .find("  if (warp >= ")
        .map_or(rest.len(), |e| e + 1);
    &rest[..end]
}

#[test]
fn the_copies_of_an_unrolled_range_share_one_expect_tx_per_phase() {
    // R = 2: two token copies per stage, one statement in a compile-time `range`. The first
    // arrives with both copies' bytes; the second only copies (a second arrival would complete
    // the phase early and count the next one's bytes twice).
    let cuda = lower_with(&[("M", 16), ("R", 2)]);
    let xload = role(&cuda, "// role xload");
    let expects: Vec<&str> = xload
        .lines()
        .filter(|l| l.contains("cake_mbar_arrive_expect_tx(xfull"))
        .collect();
    assert_eq!(expects.len(), 1, "{xload}");
    assert!(expects[0].contains(", 4096);"), "{}", expects[0]); // 2 × 16 rows × 128 B
    let copies = xload
        .lines()
        .filter(|l| l.trim_start().starts_with("cake_tma_load_2d("))
        .count();
    assert_eq!(copies, 2, "{xload}");
}

#[test]
fn the_token_stage_is_committed_after_every_mma_reading_it_has_retired() {
    // `lm.commit(xempty)` on sm_90a: every wgmma group retires, then one thread of the
    // warpgroup arrives (one arrival per phase, as tcgen05.commit would make).
    let cuda = lower_with(&[("M", 64)]);
    let math = role(&cuda, "// role math");
    let release = math
        .find("cake_mbar_arrive(xempty")
        .expect("the token release");
    let retired = math[..release]
        .rfind("cake_wgmma_wait<0>();  // commit xempty")
        .expect("the commit's wait for every MMA before it");
    assert!(!math[retired..release].contains("cake_wgmma_m64"));
    let line = math[..release].rsplit('\n').next().unwrap_or("");
    assert!(line.contains("if (math_thread == 0)"), "{line}");
    assert!(
        cuda.contains("cake_mbar_init(xempty + 8 * s, 1);"),
        "one arrival per phase"
    );
    // The weight ring's releases lag one MMA group (one stays in flight).
    assert!(math.contains("cake_wgmma_wait<1>();"), "{math}");
}

#[test]
fn every_m_width_and_split_compiles_without_spills() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let t = cake_target::lookup("sm_90a").unwrap();
    let out = std::env::temp_dir().join(format!("cake-tinygemm-rings-{}", std::process::id()));
    // NW = 2048 splits K across a cluster of two.
    // (M, NW, BK, R, X_STAGES, ROW_WGS, SPLIT_WAYS)
    for (m, nw, bk, r, xs, wgs, ways) in [
        (16, 4096, 64, 2, 2, 1, 2),
        (32, 2048, 64, 1, 3, 1, 2),
        (64, 14336, 128, 1, 2, 1, 2),
        (100, 4096, 128, 1, 3, 1, 2),
        (128, 2048, 64, 2, 2, 1, 2),
        (128, 4096, 128, 1, 3, 1, 2),
        (128, 14336, 64, 1, 3, 2, 2),
        // Split too, at M = 128 the peers' sum needs 4 bytes more than the 168 registers a
        // thread of three warpgroups gets (ptxas spills them): M = 64 here.
        (64, 2048, 64, 1, 3, 2, 2),
        // Four ways: the peers' partials added one at a time.
        (128, 2048, 64, 1, 3, 1, 4),
    ] {
        let constants = [
            ("M", m),
            ("NW", nw),
            ("BK", bk),
            ("R", r),
            ("X_STAGES", xs),
            ("ROW_WGS", wgs),
            ("SPLIT_WAYS", ways),
        ];
        let build = tc
            .compile(
                &lower_with(&constants),
                t,
                &out,
                &format!("tinygemm_rings_{m}_{nw}_{bk}_{r}_{xs}_{wgs}_{ways}"),
            )
            .unwrap_or_else(|e| panic!("{constants:?}: {e}"));
        for res in &build.resources {
            assert_eq!(res.spill_stores, 0, "{constants:?} spills: {}", build.log);
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}
