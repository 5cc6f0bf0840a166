//! The target table as other crates see it.

use cake_target::{
    check_mma_shape, check_tcgen05_pair_shape, lookup, mma_acc_dtypes, mma_feature, mma_instr_k,
    render_table, require, to_json, DType, Feature, MmaFamily, LIMIT_FIELDS, SOURCED_FIELDS,
    TARGETS,
};
use expect_test::expect;

const NAMES: [&str; 7] = [
    "sm_80", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120a", "sm_121a",
];

fn has(target: &str, f: Feature) -> bool {
    lookup(target).unwrap().has(f)
}

fn with(f: Feature) -> Vec<&'static str> {
    f.targets()
}

#[test]
fn every_target_is_found_by_exact_name() {
    let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
    assert_eq!(names, NAMES);
    for name in NAMES {
        let t = lookup(name).unwrap();
        assert_eq!(t.name, name);
        assert_eq!(t.sm, name);
        assert_eq!(t.compute, name.replace("sm_", "compute_"));
    }
    assert_eq!(lookup("sm_90a").unwrap().cc, (9, 0));
    assert_eq!(lookup("sm_103a").unwrap().cc, (10, 3));
    assert_eq!(lookup("sm_121a").unwrap().cc, (12, 1));
}

#[test]
fn unknown_target_lists_all_and_suggests_the_same_architecture() {
    let err = lookup("sm_90").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown target `sm_90`; known targets: sm_80, sm_89, sm_90a, sm_100a, sm_103a, sm_120a, \
         sm_121a"
    );
    assert_eq!(err.known, NAMES);
    assert_eq!(err.suggestion(), Some("sm_90a"));
    let suggest = |s: &str| lookup(s).unwrap_err().suggestion();
    assert_eq!(suggest("sm_100"), Some("sm_100a"));
    assert_eq!(suggest("SM_120A"), Some("sm_120a"));
    assert_eq!(suggest("sm100a"), Some("sm_100a"));
    assert_eq!(suggest("compute_90a"), Some("sm_90a"));
    assert_eq!(suggest("sm_100f"), Some("sm_100a"));
    assert_eq!(suggest("sm_80a"), Some("sm_80"));
    assert_eq!(suggest("9.0"), Some("sm_90a"));
    // Never a different architecture: stepping down is not a suggestion.
    assert_eq!(suggest("sm_86"), None);
    assert_eq!(suggest("sm_110a"), None);
    assert_eq!(suggest("h100"), None);
}

#[test]
fn lookup_of_arbitrary_strings_does_not_panic() {
    for s in [
        "",
        " ",
        "sm_",
        "sm",
        "a",
        "f",
        "af",
        ".",
        "9.",
        ".0",
        "1.2.3",
        "99999999999999999999.0",
        "sm_99999999999999999999",
        "sm_é",
        "ßm_90",
        "\u{0}",
        "compute_",
        "sm_90a ",
        "SM_90A",
        "🙂",
        "sm_9🙂0",
    ] {
        let err = lookup(s).unwrap_err();
        let _ = err.to_string();
        let _ = err.suggestion();
    }
}

#[test]
fn feature_matrix() {
    assert_eq!(with(Feature::Wgmma), ["sm_90a"]);
    assert_eq!(with(Feature::Tcgen05), ["sm_100a", "sm_103a"]);
    assert_eq!(with(Feature::Tmem), ["sm_100a", "sm_103a"]);
    assert_eq!(with(Feature::Tcgen05Pair), ["sm_100a", "sm_103a"]);
    assert_eq!(with(Feature::MmaSyncFp8), NAMES[1..]);
    assert_eq!(with(Feature::MmaSync), NAMES);
    assert_eq!(with(Feature::MmaSyncBlockScaled), ["sm_120a", "sm_121a"]);
    assert_eq!(
        with(Feature::TmaMulticast),
        ["sm_90a", "sm_100a", "sm_103a"]
    );
    assert_eq!(with(Feature::Tma), NAMES[2..]);
    assert_eq!(with(Feature::SetMaxNReg), NAMES[2..]);
    assert!(has("sm_80", Feature::Mbarrier) && !has("sm_80", Feature::MbarrierExpectTx));
    assert!(!has("sm_89", Feature::Clusters));
    // sm_121a has exactly sm_120a's instruction surface.
    assert_eq!(
        lookup("sm_121a").unwrap().features,
        lookup("sm_120a").unwrap().features
    );
}

#[test]
fn preferred_mma_family_and_limits() {
    let fam = |n: &str| lookup(n).unwrap().mma;
    assert_eq!(fam("sm_80"), MmaFamily::MmaSync);
    assert_eq!(fam("sm_90a"), MmaFamily::Wgmma);
    assert_eq!(fam("sm_100a"), MmaFamily::Tcgen05);
    assert_eq!(fam("sm_120a"), MmaFamily::MmaSync);
    for t in TARGETS {
        // The preferred family is always one the target has.
        assert!(t.has(mma_feature(t.mma, DType::BF16)), "{}", t.name);
        assert_eq!(t.tmem.is_some(), t.has(Feature::Tmem), "{}", t.name);
        assert_eq!(
            t.limits.cluster_max > 0,
            t.has(Feature::Clusters),
            "{}",
            t.name
        );
        assert_eq!(
            t.limits.setmaxnreg.is_some(),
            t.has(Feature::SetMaxNReg),
            "{}",
            t.name
        );
        assert!(t.limits.smem_per_block_optin <= t.limits.smem_per_sm);
        assert!(t.limits.cluster_portable <= t.limits.cluster_max);
    }
    let h = lookup("sm_90a").unwrap().limits;
    assert_eq!(h.smem_per_block_optin, 232_448);
    assert_eq!((h.cluster_portable, h.cluster_max), (8, 16));
    assert_eq!(h.setmaxnreg, Some((24, 256, 8)));
    assert_eq!(
        lookup("sm_80").unwrap().limits.smem_per_block_optin,
        166_912
    );
    assert_eq!(
        lookup("sm_120a").unwrap().limits.smem_per_block_optin,
        101_376
    );
    let tmem = lookup("sm_100a").unwrap().tmem.unwrap();
    assert_eq!(
        (
            tmem.lanes,
            tmem.columns,
            tmem.min_alloc_cols,
            tmem.max_alloc_cols
        ),
        (128, 512, 32, 512)
    );
}

#[test]
fn every_number_has_a_source() {
    assert!(LIMIT_FIELDS.iter().all(|f| SOURCED_FIELDS.contains(f)));
    for t in TARGETS {
        for field in SOURCED_FIELDS {
            let src = t.source_of(field);
            assert!(
                src.is_some_and(|s| !s.is_empty()),
                "{} has no source for {field}",
                t.name
            );
        }
        // No stray entries (a typo would leave a field unsourced).
        for (field, _) in t.sources {
            assert!(
                SOURCED_FIELDS.contains(field),
                "{}: unknown field {field}",
                t.name
            );
        }
        assert_eq!(
            t.sources.len(),
            SOURCED_FIELDS.len(),
            "{}: duplicate source",
            t.name
        );
    }
    assert!(lookup("sm_103a")
        .unwrap()
        .source_of("smem_per_block_optin")
        .unwrap()
        .contains("[U]"));
    assert!(lookup("sm_120a")
        .unwrap()
        .source_of("cluster_max")
        .unwrap()
        .contains("[U]"));
    assert!(lookup("sm_90a").unwrap().source_of("nonsense").is_none());
}

#[test]
fn require_names_the_targets_that_have_the_feature() {
    let sm80 = lookup("sm_80").unwrap();
    let sm89 = lookup("sm_89").unwrap();
    let sm90 = lookup("sm_90a").unwrap();
    assert_eq!(require(sm90, Feature::Wgmma), Ok(()));
    assert_eq!(
        require(sm80, Feature::Wgmma).unwrap_err(),
        "target sm_80 has no `wgmma`, warpgroup MMA (wgmma.mma_async); Cake targets with it: sm_90a"
    );
    let fp8 = mma_feature(MmaFamily::MmaSync, DType::E4M3);
    assert_eq!(fp8, Feature::MmaSyncFp8);
    assert!(require(sm80, fp8).unwrap_err().contains("sm_89, sm_90a"));
    assert_eq!(require(sm89, fp8), Ok(()));
    let sm120 = lookup("sm_120a").unwrap();
    assert!(require(sm120, Feature::Tcgen05)
        .unwrap_err()
        .ends_with("sm_100a, sm_103a"));
}

#[test]
fn mma_shapes_accepted() {
    use DType::*;
    use MmaFamily::*;
    let ok = |f, a, b, acc, m, n, k| check_mma_shape(f, a, b, acc, m, n, k).unwrap();
    ok(Wgmma, BF16, BF16, F32, 64, 256, 16);
    ok(Wgmma, F16, F16, F16, 64, 8, 16);
    ok(Wgmma, TF32, TF32, F32, 64, 128, 8);
    ok(Wgmma, E4M3, E5M2, F32, 64, 136, 32);
    ok(Wgmma, I8, I8, I32, 64, 24, 32);
    ok(Wgmma, U8, U8, I32, 64, 48, 32);
    ok(MmaSync, BF16, BF16, F32, 16, 8, 16);
    ok(MmaSync, F16, F16, F16, 16, 8, 8);
    ok(MmaSync, TF32, TF32, F32, 16, 8, 4);
    ok(MmaSync, I8, I8, I32, 16, 8, 16);
    ok(MmaSync, E5M2, E4M3, F32, 16, 8, 32);
    ok(MmaSync, F64, F64, F64, 8, 8, 4);
    ok(Tcgen05, BF16, BF16, F32, 128, 256, 16);
    ok(Tcgen05, F16, F16, F16, 64, 8, 16);
    ok(Tcgen05, E4M3, E4M3, F32, 128, 64, 32);
    ok(Tcgen05, I8, I8, I32, 128, 32, 32);
    check_tcgen05_pair_shape(BF16, BF16, F32, 256, 256, 16).unwrap();
    check_tcgen05_pair_shape(I8, I8, I32, 128, 64, 32).unwrap();
}

#[test]
fn mma_shapes_rejected_with_the_legal_set() {
    use DType::*;
    use MmaFamily::*;
    let err = |f, a, b, acc, m, n, k| check_mma_shape(f, a, b, acc, m, n, k).unwrap_err();
    assert_eq!(
        err(Wgmma, BF16, BF16, F32, 64, 12, 16),
        "wgmma with bf16 inputs needs M = 64, N in 8..=256 step 8 and K = 16; got N = 12"
    );
    assert_eq!(
        err(Wgmma, I8, I8, I32, 64, 40, 32),
        "wgmma with i8 inputs needs M = 64, N in {8, 16, 24, 32} or 48..=256 step 16 and K = 32; \
         got N = 40"
    );
    assert_eq!(
        err(Wgmma, E4M3, E4M3, F32, 128, 64, 16),
        "wgmma with e4m3 inputs needs M = 64, N in 8..=256 step 8 and K = 32; got M = 128, K = 16"
    );
    assert_eq!(
        err(Wgmma, BF16, BF16, F16, 64, 64, 16),
        "wgmma with bf16 inputs accumulates in f32 only; got f16"
    );
    assert_eq!(
        err(Wgmma, F16, BF16, F32, 64, 64, 16),
        "wgmma with f16 A needs B = f16; got B = bf16"
    );
    assert_eq!(
        err(Wgmma, I8, U8, I32, 64, 64, 32),
        "wgmma with i8 A needs B = i8; got B = u8"
    );
    assert_eq!(
        err(Wgmma, E4M3, F16, F32, 64, 64, 32),
        "wgmma with e4m3 A needs B = {e4m3, e5m2}; got B = f16"
    );
    assert_eq!(
        err(Wgmma, F64, F64, F64, 64, 64, 4),
        "wgmma does not take f64 inputs; it takes {f16, bf16, tf32, e4m3, e5m2, i8, u8}"
    );
    assert_eq!(
        err(MmaSync, BF16, BF16, F32, 16, 16, 16),
        "mma.sync with bf16 inputs needs M = 16, N = 8 and K in {8, 16}; got N = 16"
    );
    assert_eq!(
        err(Tcgen05, BF16, BF16, F32, 256, 64, 16),
        "tcgen05.mma cta_group::1 with bf16 inputs needs M in {64, 128}, N in 8..=256 step 8 and \
         K = 16; got M = 256"
    );
    assert_eq!(
        err(Tcgen05, E4M3, E5M2, F16, 128, 64, 32),
        "tcgen05.mma cta_group::1 with e4m3 inputs accumulates in f32 only; got f16"
    );
    assert_eq!(
        check_tcgen05_pair_shape(BF16, BF16, F32, 256, 8, 16).unwrap_err(),
        "tcgen05.mma cta_group::2 with bf16 inputs needs M in {128, 256}, N in 16..=256 step 16 \
         and K = 16; got N = 8"
    );
    // Edge values never panic.
    for v in [0, 1, 7, 257, u32::MAX] {
        for f in MmaFamily::ALL {
            for a in DType::ALL {
                let _ = check_mma_shape(f, a, a, F32, v, v, v);
            }
        }
    }
}

#[test]
fn instruction_k_and_accumulators() {
    use DType::*;
    use MmaFamily::*;
    assert_eq!(mma_instr_k(Wgmma, BF16), Some(16));
    assert_eq!(mma_instr_k(Wgmma, E4M3), Some(32));
    assert_eq!(mma_instr_k(Wgmma, TF32), Some(8));
    assert_eq!(mma_instr_k(MmaSync, BF16), Some(16));
    assert_eq!(mma_instr_k(MmaSync, TF32), Some(8));
    assert_eq!(mma_instr_k(MmaSync, I8), Some(32));
    assert_eq!(mma_instr_k(Tcgen05, F16), Some(16));
    assert_eq!(mma_instr_k(Tcgen05, E5M2), Some(32));
    assert_eq!(mma_instr_k(Wgmma, F64), None);
    assert_eq!(mma_instr_k(Tcgen05, Bool), None);
    assert_eq!(mma_acc_dtypes(Wgmma, BF16), [F32]);
    assert_eq!(mma_acc_dtypes(Wgmma, F16), [F16, F32]);
    assert_eq!(mma_acc_dtypes(Wgmma, E5M2), [F16, F32]);
    assert_eq!(mma_acc_dtypes(Wgmma, U8), [I32]);
    assert_eq!(mma_acc_dtypes(MmaSync, TF32), [F32]);
    assert!(mma_acc_dtypes(Wgmma, I64).is_empty());
    // The K reported is always one check_mma_shape accepts.
    for f in MmaFamily::ALL {
        for a in DType::ALL {
            let Some(k) = mma_instr_k(f, a) else { continue };
            let acc = mma_acc_dtypes(f, a)[0];
            let (m, n) = match f {
                MmaSync if a == F64 => (8, 8),
                MmaSync => (16, 8),
                Wgmma => (64, 64),
                Tcgen05 => (128, 64),
            };
            check_mma_shape(f, a, a, acc, m, n, k).unwrap();
        }
    }
}

#[test]
fn json_lists_every_field_and_source() {
    let v = to_json();
    let targets = v["targets"].as_array().unwrap();
    assert_eq!(targets.len(), NAMES.len());
    let h = &targets[2];
    assert_eq!(h["name"], "sm_90a");
    assert_eq!(h["cc"], serde_json::json!([9, 0]));
    assert_eq!(h["mma"], "wgmma");
    assert_eq!(h["limits"]["smem_per_block_optin"], 232_448);
    assert_eq!(
        h["limits"]["setmaxnreg"],
        serde_json::json!({"min": 24, "max": 256, "step": 8})
    );
    assert!(h["tmem"].is_null());
    assert!(h["features"].as_array().unwrap().contains(&"wgmma".into()));
    for t in targets {
        for field in LIMIT_FIELDS {
            assert!(t["limits"].get(field).is_some(), "{field}");
        }
        for field in SOURCED_FIELDS {
            assert!(t["sources"][field].is_string(), "{field}");
        }
    }
    assert_eq!(targets[3]["tmem"]["columns"], 512);
    let features = v["features"].as_array().unwrap();
    assert_eq!(features.len(), Feature::ALL.len());
    assert_eq!(features[13]["name"], "wgmma");
    assert_eq!(features[13]["targets"], serde_json::json!(["sm_90a"]));
}

#[test]
fn table_lists_every_target() {
    let table = render_table();
    for name in NAMES {
        assert!(table.contains(name), "{name}");
    }
    expect![[r#"
        target   sku                      mma          smem/block  smem/SM  threads/block  regs/thread  cluster  tmem     features
        sm_80    A100                     mma.sync     166912      167936   1024           255          -        -        mma-sync, ldmatrix, cp-async, mbarrier
        sm_89    L40S / RTX 6000 Ada      mma.sync     101376      102400   1024           255          -        -        mma-sync, mma-sync-fp8, ldmatrix, cp-async, mbarrier
        sm_90a   H100 / H200              wgmma        232448      233472   1024           255          8/16     -        mma-sync, mma-sync-fp8, ldmatrix, stmatrix, cp-async, mbarrier, mbarrier-expect-tx, tma, tma-multicast, clusters, distributed-smem, fence-proxy-async, wgmma, setmaxnreg
        sm_100a  B200                     tcgen05.mma  232448      233472   1024           255          8/16*    128x512  mma-sync, mma-sync-fp8, ldmatrix, stmatrix, cp-async, mbarrier, mbarrier-expect-tx, tma, tma-multicast, clusters, distributed-smem, fence-proxy-async, setmaxnreg, tcgen05, tmem, tcgen05-pair
        sm_103a  B300                     tcgen05.mma  232448*     233472   1024           255          8/16*    128x512  mma-sync, mma-sync-fp8, ldmatrix, stmatrix, cp-async, mbarrier, mbarrier-expect-tx, tma, tma-multicast, clusters, distributed-smem, fence-proxy-async, setmaxnreg, tcgen05, tmem, tcgen05-pair
        sm_120a  RTX 5090 / RTX PRO 6000  mma.sync     101376      102400*  1024           255          8/8*     -        mma-sync, mma-sync-fp8, mma-sync-block-scaled, ldmatrix, stmatrix, cp-async, mbarrier, mbarrier-expect-tx, tma, clusters, distributed-smem, fence-proxy-async, setmaxnreg
        sm_121a  DGX Spark (GB10)         mma.sync     101376*     102400*  1024*          255*         8/8*     -        mma-sync, mma-sync-fp8, mma-sync-block-scaled, ldmatrix, stmatrix, cp-async, mbarrier, mbarrier-expect-tx, tma, clusters, distributed-smem, fence-proxy-async, setmaxnreg
        smem in bytes; * = unverified value, see the JSON form for every source
    "#]].assert_eq(&table);
}

/// Only the non-`a` targets ship PTX a later GPU can JIT; an `a` target runs on its own
/// architecture alone, embedded PTX or not.
#[test]
fn forward_compatible_ptx_is_the_non_a_targets() {
    let t = |n| cake_target::lookup(n).unwrap();
    let portable: Vec<&str> = cake_target::TARGETS
        .iter()
        .filter(|t| t.ptx_forward_compatible())
        .map(|t| t.name)
        .collect();
    assert_eq!(portable, ["sm_80", "sm_89"]);
    assert!(t("sm_80").runs_on((8, 0), false));
    assert!(!t("sm_80").runs_on((9, 0), false), "a cubin is exact");
    assert!(t("sm_80").runs_on((9, 0), true), "its PTX JITs forward");
    assert!(t("sm_89").runs_on((12, 0), true));
    assert!(!t("sm_89").runs_on((8, 0), true), "never backwards");
    assert!(!t("sm_90a").runs_on((10, 0), true));
    assert!(t("sm_90a").runs_on((9, 0), false));
}
