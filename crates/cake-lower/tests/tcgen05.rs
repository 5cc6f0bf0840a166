//! The sm_100a / sm_103a lowering keeps the tcgen05 / TMEM protocol (PTX ISA §9.7.16): checked
//! on the generated CUDA of the Blackwell examples, independently of the golden files (which only
//! say the output did not change).

use std::path::Path;

fn lower(example: &str, target: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(example);
    let bytes = std::fs::read(&path).expect("example");
    let name = format!("examples/{example}");
    let checked = cake_driver::check(&name, &bytes, None);
    assert!(!checked.has_errors(), "{name} has errors");
    let t = cake_target::lookup(target).expect("target");
    let k = &checked.kernels[0];
    cake_lower::lower(k, &checked.file, t)
        .unwrap_or_else(|e| panic!("{name} does not lower for {target}: {e:?}"))
        .cuda
}

/// The kernel body: what follows the `extern "C"` line (the prelude defines the helpers).
fn body(cuda: &str) -> &str {
    &cuda[cuda.find("extern \"C\"").expect("kernel")..]
}

fn pos(hay: &str, needle: &str) -> usize {
    hay.find(needle)
        .unwrap_or_else(|| panic!("`{needle}` not in the kernel"))
}

#[test]
fn gemm_allocates_publishes_and_frees_tmem_in_order() {
    for target in ["sm_100a", "sm_103a"] {
        let cuda = lower("gemm_sm100.py", target);
        let b = body(&cuda);
        // One 128-column allocation (the accumulator is 128 f32 columns).
        assert_eq!(b.matches("cake_tmem_alloc(").count(), 1);
        assert!(b.contains("cake_tmem_alloc(cake_smem + ") && b.contains(", 128);"));
        let order = [
            "if (warp == 0) {",
            "cake_tmem_alloc(",
            "cake_tmem_relinquish();",
            "cake_tcgen05_fence_before();",
            "__syncthreads();",
            "cake_tcgen05_fence_after();",
            "const uint32_t cake_tmem = cake_ld_shared_b32(",
        ];
        let mut at = 0;
        for step in order {
            let p = at + pos(&b[at..], step);
            at = p + step.len();
        }
        // The deallocation comes after every role, behind a fenced CTA barrier, in warp 0.
        let dealloc = pos(b, "cake_tmem_dealloc(cake_tmem, 128);");
        let last_role = b.rfind("// role ").expect("roles");
        assert!(dealloc > last_role);
        let tail = &b[last_role..dealloc];
        let (f1, sync, w0, f2) = (
            tail.rfind("cake_tcgen05_fence_before();")
                .expect("fence before"),
            tail.rfind("__syncthreads();").expect("barrier"),
            tail.rfind("if (warp == 0) {").expect("warp 0"),
            tail.rfind("cake_tcgen05_fence_after();")
                .expect("fence after"),
        );
        assert!(
            f1 < sync && sync < w0 && w0 < f2,
            "{target}: dealloc protocol"
        );
    }
}

#[test]
fn gemm_mma_uses_the_derived_descriptors_and_commits() {
    let cuda = lower("gemm_sm100.py", "sm_100a");
    let b = body(&cuda);
    // BK = 64 is four K = 16 instructions per stage; idesc for M = N = 128, bf16 -> f32, K-major
    // (Table 42) and the K-major SW128 descriptor constant (§9.7.16.4.1): LBO 16 B, SBO 1024 B,
    // 0b001 at bits 46-48, swizzle 2 at bits 61-63.
    assert_eq!(b.matches("cake_tcgen05_mma_f16_ss(").count(), 4);
    assert_eq!(b.matches("0x08200490u").count(), 4);
    assert_eq!(b.matches("0x4000404000010000ull").count(), 8);
    // The first K step takes `accumulate`; the others accumulate.
    assert!(b.contains("((k_2 > 0)) ? 1u : 0u"));
    // The K steps advance 32 bytes inside the 128-byte swizzle span.
    for off in ["+ 0,", "+ 32,", "+ 64,", "+ 96,"] {
        assert!(
            b.contains(&format!("(sA + 16384 * pipe_stage) {off}")),
            "{off}"
        );
    }
    // release=empty is a commit to the stage's slot after the MMAs; acc_full a commit after the
    // loop; no wgmma remains.
    let last_mma = b.rfind("cake_tcgen05_mma_f16_ss(").unwrap();
    assert!(pos(b, "cake_tcgen05_commit(empty + 8 * pipe_stage);") > last_mma);
    assert!(pos(b, "cake_tcgen05_commit(acc_full);") > last_mma);
    assert!(!cuda.contains("wgmma"));
}

#[test]
fn epilogue_waits_fences_loads_and_waits_for_the_loads() {
    let cuda = lower("gemm_sm100.py", "sm_100a");
    let b = body(&cuda);
    let wait = pos(b, "cake_mbar_wait(acc_full");
    let fence = wait + pos(&b[wait..], "cake_tcgen05_fence_after();");
    let ld = pos(b, "cake_tmem_ld_32x32b_x32(");
    let wait_ld = pos(b, "cake_tmem_wait_ld();");
    let store = pos(b, "store C <- TMEM tile");
    assert!(wait < fence && fence < ld && ld < wait_ld && wait_ld < store);
    // 128 columns in four x32 loads, from this warp's lane quarter.
    assert_eq!(b.matches("cake_tmem_ld_32x32b_x32(").count(), 4);
    assert!(b.contains("cake_tmem + ((uint32_t)(32 * (warp % 4)) << 16)"));
}

#[test]
fn attention_orders_tmem_stores_before_the_handoff() {
    let cuda = lower("attention_sm100.py", "sm_100a");
    let b = body(&cuda);
    // s_tmem 128 + o_tmem 64 + p_tmem 64 columns: a 256-column allocation.
    assert!(b.contains("cake_tmem_dealloc(cake_tmem, 256);"));
    // P (bf16) is packed two per column and stored before the arrive on p_full, which is fenced.
    let st = b.rfind("cake_tmem_st_32x32b_x32(").unwrap();
    let wait_st = st + pos(&b[st..], "cake_tmem_wait_st();");
    let fence = wait_st + pos(&b[wait_st..], "cake_tcgen05_fence_before();");
    let arrive = fence + pos(&b[fence..], "cake_mbar_arrive(p_full);");
    assert!(st < wait_st && wait_st < fence && fence < arrive);
    // O += P·V reads P from TMEM (8 columns per K = 16 step) with an N-major V: the transpose-B
    // bit (16) set in idesc 0x08110490 (M = 128, N = 64).
    assert_eq!(b.matches("cake_tcgen05_mma_f16_ts(").count(), 8);
    assert!(b.contains("(cake_tmem + 192) + 56, "));
    assert_eq!(b.matches("0x08110490u").count(), 8);
}

/// `source` checked for sm_100a and lowered; `Err` carries the findings and the lowering's error.
fn lower_source(name: &str, source: &str) -> Result<String, String> {
    let checked = cake_driver::check(name, source.as_bytes(), Some("sm_100a"));
    let t = cake_target::lookup("sm_100a").unwrap();
    if checked.has_errors() {
        return Err(format!("{:?}", checked.findings));
    }
    cake_lower::lower(&checked.kernels[0], &checked.file, t)
        .map(|l| l.cuda)
        .map_err(|e| format!("{:?} {e:?}", checked.findings))
}

/// The Blackwell GEMM with a 256-column tile whose epilogue reads the accumulator `epi` columns
/// at a time (`acc.cols(c * EPI, EPI)`).
fn wide_gemm(epi: u32) -> String {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gemm_sm100.py"),
    )
    .expect("example");
    let wide = source
        .replace("BM, BN, BK = 128, 128, 64", "BM, BN, BK = 128, 256, 64")
        .replace("\nEPI = BN ", &format!("\nEPI = {epi} "))
        .replace("\nSTAGES = 4 ", "\nSTAGES = 3 ");
    assert_eq!(
        wide.matches("256, 64").count(),
        1,
        "the example's knobs moved"
    );
    wide
}

#[test]
fn an_epilogue_reads_the_accumulator_in_column_ranges() {
    let cuda = lower_source("wide.py", &wide_gemm(64)).unwrap();
    let b = body(&cuda);
    // Four ranges of 64 columns, each two tcgen05.ld of 32 into the same 64 registers, then a
    // store of those columns of C.
    assert!(b.contains("float out[64];"), "{b}");
    for (chunk, first) in [(0, 0), (1, 64), (2, 128), (3, 192)] {
        let ld = format!("cake_tmem_ld_32x32b_x32(taddr + {}, out + 0);", first);
        let ld2 = format!("cake_tmem_ld_32x32b_x32(taddr + {}, out + 32);", first + 32);
        let store = format!("const int col = ((tile_1 * 256) + {first}) + cc;");
        let (l, l2, s) = (pos(b, &ld), pos(b, &ld2), pos(b, &store));
        assert!(l < l2 && l2 < s, "chunk {chunk}");
    }
    assert_eq!(b.matches("cake_tmem_wait_ld();").count(), 4);
    // The whole accumulator is still one 256-column allocation.
    assert!(b.contains(", 256);"), "{b}");
    // Without ranges the epilogue would hold a whole 256-column row per thread: more registers
    // than a thread can address.
    let whole = lower_source("whole.py", &wide_gemm(256)).unwrap_err();
    assert!(
        whole.contains("CAKE-D008") && whole.contains("256 registers"),
        "{whole}"
    );
}

#[test]
fn column_ranges_compile_for_sm_100a() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-tmem-cols-{}", std::process::id()));
    let cuda = lower_source("wide.py", &wide_gemm(64)).unwrap();
    let t = cake_target::lookup("sm_100a").unwrap();
    let build = tc.compile(&cuda, t, &out, "wide").expect("compiles");
    let r = &build.resources[0];
    assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{r:?}");
    assert!(r.registers < 128, "{r:?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn column_ranges_are_checked() {
    let wide = wide_gemm(64);
    let edit = |from: &str, to: &str| {
        assert!(wide.contains(from), "{from}");
        wide.replace(from, to)
    };
    let ranged = "acc.cols(c * EPI, EPI)";
    // Past the region's 256 columns: the front-end, at the start.
    let past = lower_source("past.py", &edit(ranged, "acc.cols(c * EPI + 32, EPI)")).unwrap_err();
    assert!(
        past.contains("columns 224..288 are outside the region's 256 columns"),
        "{past}"
    );
    // Not a multiple of 32 columns: the lowering.
    let odd = wide_gemm(32).replace(ranged, "acc.cols(c * EPI - 16 * (c % 2), EPI)");
    let odd = lower_source("odd.py", &odd).unwrap_err();
    assert!(
        odd.contains("is lowered from a multiple of 32 columns"),
        "{odd}"
    );
    // A range of another width than the fragment.
    let narrow = lower_source("narrow.py", &edit(ranged, "acc.cols(c * EPI, 32)")).unwrap_err();
    assert!(
        narrow.contains("are [128, 32] f32, but fragment `out` is [128, 64] f32"),
        "{narrow}"
    );
    // An MMA's accumulator is a whole region.
    let mma = lower_source(
        "mma.py",
        &edit(
            "lm.mma(acc, sA, sB.T,",
            "lm.mma(acc.cols(0, 128), sA, sB.T,",
        ),
    )
    .unwrap_err();
    assert!(
        mma.contains("an MMA reads and writes whole regions"),
        "{mma}"
    );
}

#[test]
fn a_tmem_store_writes_a_column_range() {
    // Attention's output rescale, read and written back in two ranges of 32 columns.
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/attention_sm100.py");
    let source = std::fs::read_to_string(path).expect("example");
    let whole = "                    lm.tmem_load(o_frag, o_tmem)
                    o_frag[:] = o_frag * alpha[:, None]
                    lm.tmem_store(o_tmem, o_frag)
";
    assert!(source.contains(whole), "the example's rescale moved");
    let ranges = source
        .replace(
            "    o_frag = softmax.fragment(",
            "    o_half = softmax.fragment(shape=(BM, 32), dtype=lm.f32)\n    o_frag = softmax.fragment(",
        )
        .replace(
            whole,
            "                    for h in range(D // 32):
                        lm.tmem_load(o_half, o_tmem.cols(32 * h, 32))
                        o_half[:] = o_half * alpha[:, None]
                        lm.tmem_store(o_tmem.cols(32 * h, 32), o_half)
",
        );
    let cuda = lower_source("attention_halves.py", &ranges).unwrap();
    let b = body(&cuda);
    let first = pos(b, "cake_tmem_st_32x32b_x32(taddr + 0, r);");
    let second = pos(b, "cake_tmem_st_32x32b_x32(taddr + 32, r);");
    assert!(first < second);
    assert!(
        b.contains("// tmem_store o_tmem (attention_halves.py:"),
        "{b}"
    );
    assert!(b.contains("32 column(s) from column 32"), "{b}");
}

/// The persistent GEMM with its `ACC_STAGES` knob set to `stages`.
fn persistent_gemm(stages: u32) -> String {
    let source = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/gemm_persistent_sm100.py"),
    )
    .expect("example");
    assert!(
        source.contains("\nACC_STAGES = 2 "),
        "the example's knob moved"
    );
    source.replace("\nACC_STAGES = 2 ", &format!("\nACC_STAGES = {stages} "))
}

#[test]
fn a_staged_accumulator_alternates_by_tile() {
    let cuda = lower_source("persistent.py", &persistent_gemm(2)).unwrap();
    let b = body(&cuda);
    // Two 128-column stages in one 256-column allocation.
    assert!(
        b.contains("cake_tmem_alloc(cake_smem + ") && b.contains(", 256);"),
        "{b}"
    );
    assert!(b.contains("acc at column 0, 2 stages of 128"), "{b}");
    // The MMAs write the stage of the tile loop's ring (named inside the k loop over `pipe`),
    // and the epilogue reads the stage of its own loop over that ring.
    assert_eq!(
        b.matches("cake_tcgen05_mma_f16_ss((cake_tmem + 128 * accpipe_stage), ")
            .count(),
        4,
        "{b}"
    );
    assert!(
        b.contains("const uint32_t taddr = (cake_tmem + 128 * accpipe_stage) + "),
        "{b}"
    );
    // Each stage's handoff has its own barrier slot, and both stages start free for the MMAs.
    assert!(
        b.contains("cake_tcgen05_commit(acc_full + 8 * accpipe_stage);"),
        "{b}"
    );
    assert!(b.contains("cake_mbar_wait(acc_empty + 8 * accpipe_stage, accpipe_phase ^ 1);"));
    assert!(
        b.contains("cake_mbar_arrive(acc_empty + 8 * accpipe_stage);"),
        "{b}"
    );
    // One stage is the single accumulator: no stage term in any TMEM address.
    let one = lower_source("persistent1.py", &persistent_gemm(1)).unwrap();
    let one = body(&one);
    assert!(
        one.contains(", 128);") && !one.contains("128 * accpipe_stage"),
        "{one}"
    );
    assert!(one.contains("cake_tcgen05_mma_f16_ss(cake_tmem, "), "{one}");
}

/// The persistent GEMM at BN = 256 with two accumulator stages (all 512 TMEM columns), its
/// epilogue reading 64 columns at a time.
fn persistent_gemm_wide() -> String {
    let wide = persistent_gemm(2)
        .replace("BM, BN, BK = 128, 128, 64", "BM, BN, BK = 128, 256, 64")
        .replace("\nEPI = BN ", "\nEPI = 64 ")
        .replace("\nSTAGES = 4 ", "\nSTAGES = 3 ");
    assert!(
        wide.contains("\nEPI = 64 ") && wide.contains("256, 64"),
        "the example's knobs moved"
    );
    wide
}

#[test]
fn two_wide_accumulators_take_all_512_columns() {
    let cuda = lower_source("wide.py", &persistent_gemm_wide()).unwrap();
    let b = body(&cuda);
    assert!(b.contains("acc at column 0, 2 stages of 256"), "{b}");
    assert!(b.contains(", 512);"), "{b}");
    // Four 64-column ranges of the tile's stage, the arrive after the last range's load.
    for first in [0, 64, 128, 192] {
        let ld = format!("cake_tmem_ld_32x32b_x32(taddr + {first}, out + 0);");
        assert!(b.contains(&ld), "{ld}");
    }
    assert!(b.contains("const uint32_t taddr = (cake_tmem + 256 * accpipe_stage) + "));
    let last = pos(b, "cake_tmem_ld_32x32b_x32(taddr + 224, out + 32);");
    let arrive = pos(b, "cake_mbar_arrive(acc_empty + 8 * accpipe_stage);");
    assert!(last < arrive, "the arrive waits for the last range");
    // Three stages would need 768 columns.
    let three = persistent_gemm_wide().replace("\nACC_STAGES = 2 ", "\nACC_STAGES = 3 ");
    let err = lower_source("three.py", &three).unwrap_err();
    assert!(
        err.contains("CAKE-C009") && err.contains("768 columns"),
        "{err}"
    );
}

#[test]
fn staged_accumulators_compile_for_sm_100a() {
    let Some(tc) =
        cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain")
    else {
        return;
    };
    let out = std::env::temp_dir().join(format!("cake-tmem-stages-{}", std::process::id()));
    let t = cake_target::lookup("sm_100a").unwrap();
    let sources = [
        ("persistent1", persistent_gemm(1)),
        ("persistent2", persistent_gemm(2)),
        ("persistent2_wide", persistent_gemm_wide()),
    ];
    for (name, source) in sources {
        let cuda = lower_source(&format!("{name}.py"), &source).unwrap();
        let build = tc.compile(&cuda, t, &out, name).expect("compiles");
        let r = &build.resources[0];
        assert_eq!((r.spill_stores, r.spill_loads), (0, 0), "{name}: {r:?}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn staged_regions_are_checked() {
    let two = persistent_gemm(2);
    let edit = |from: &str, to: &str| {
        assert!(two.contains(from), "{from}");
        two.replace(from, to)
    };
    // A column range of one stage: stage first, then columns.
    let ranged = lower_source(
        "ranged.py",
        &edit(
            "acc.cols(c * EPI, EPI)",
            "acc.stage(accpipe.stage).cols(c * EPI, EPI)",
        ),
    );
    assert!(ranged.is_ok(), "{ranged:?}");
    let backwards = lower_source(
        "backwards.py",
        &edit("acc.cols(c * EPI, EPI)", "acc.cols(c * EPI, EPI).stage(0)"),
    )
    .unwrap_err();
    assert!(
        backwards.contains("take `.stage(...)` before `.cols(...)`"),
        "{backwards}"
    );
    let twice = lower_source(
        "twice.py",
        &edit(
            "acc.cols(c * EPI, EPI)",
            "acc.cols(c * EPI, EPI).cols(0, 128)",
        ),
    )
    .unwrap_err();
    assert!(twice.contains("already a column range"), "{twice}");
    // A constant stage past the region's stages.
    let past = lower_source(
        "past.py",
        &edit("acc.cols(c * EPI, EPI)", "acc.stage(2).cols(c * EPI, EPI)"),
    )
    .unwrap_err();
    assert!(
        past.contains("CAKE-M003") && past.contains("has 2 stages, but this use names stage 2"),
        "{past}"
    );
    let zero = lower_source("zero.py", &edit("stages=ACC_STAGES)", "stages=0)")).unwrap_err();
    assert!(zero.contains("stages"), "{zero}");
}
