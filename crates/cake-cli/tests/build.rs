//! `cake build` end to end: resource problems come back as findings on the schedule's own lines.
//! Needs nvcc: without it each test is reported skipped (cake-testkit), and fails under
//! CAKE_REQUIRE_ALL=1 (scripts/test.sh, which installs the pinned toolchain, so CI).

use std::process::{Command, Output};

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `cake build FILE --target sm_90a` into a fresh directory (with its own build cache).
fn build(file: &str, tag: &str) -> (std::path::PathBuf, Output) {
    build_for(file, tag, "sm_90a")
}

/// `cake build FILE --target TARGET` into a fresh directory (with its own build cache).
fn build_for(file: &str, tag: &str, target: &str) -> (std::path::PathBuf, Output) {
    let out_dir = std::env::temp_dir().join(format!("cake-{tag}-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_cake"))
        .current_dir(repo())
        .env("CAKE_CACHE_DIR", out_dir.join("cache"))
        .args(["build", file, "--target", target, "-o"])
        .arg(&out_dir)
        .output()
        .expect("run cake");
    (out_dir, out)
}

/// `build`, which must succeed, and the CUDA it wrote for `kernel`.
fn built_cuda(file: &str, tag: &str, kernel: &str) -> (std::path::PathBuf, String) {
    let (out_dir, out) = build(file, tag);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let cu = std::fs::read_to_string(out_dir.join(format!("{kernel}.cu"))).unwrap();
    (out_dir, cu)
}

/// The 1-based line of `file` that first contains `text`.
fn line_of(file: &str, text: &str) -> usize {
    let source = std::fs::read_to_string(repo().join(file)).unwrap();
    source.lines().position(|l| l.contains(text)).unwrap() + 1
}

#[test]
fn spills_are_reported_on_the_fragment_line() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, out) = build("tests/build/spill_sm90.py", "spill");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "a spill is a warning, not an error:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = line_of("tests/build/spill_sm90.py", "acc = math.fragment");
    assert!(
        stdout.contains("warning[CAKE-P001]"),
        "no spill finding:\n{stdout}"
    );
    assert!(
        stdout.contains(&format!("tests/build/spill_sm90.py:{line}:")),
        "spill finding not on line {line}:\n{stdout}"
    );
    assert!(
        stdout.contains("role `math` holds 192 registers per thread"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn double_buffered_wgmma_is_not_serialised() {
    // The catalog's M007 near-miss is the k-means schedule with a double-buffered accumulator:
    // the epilogue reads one buffer while the next MMA is in flight. ptxas serialised every wgmma
    // of it (C7514) while an MMA stayed in flight across the loop's back edge; the lowering now
    // retires it before the back edge, and `cake build` must report no CAKE-P002. (The mapping
    // of a ptxas serialisation note to the MMA's line is tested in cake-driver.)
    if !has_toolchain() {
        return;
    }
    let (out_dir, out) = build("tests/check/CAKE-M007-good.py", "serial");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        !stdout.contains("CAKE-P002"),
        "ptxas serialised the double-buffered MMAs:\n{stdout}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn a_serialisation_the_schedule_causes_says_so_on_its_line() {
    // The double-buffered attention block updates its score tile in place (`s[:] = s + ...`)
    // while the next key tile's MMA, into the other buffer, is in flight: legal, but ptxas
    // serialises the wgmmas (C7515; without that statement it does not). The finding must blame
    // the schedule and sit on that statement.
    if !has_toolchain() {
        return;
    }
    let file = "tests/build/attention_db_sm90.py";
    let (out_dir, out) = build(file, "attn-db");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("warning[CAKE-P002]"), "{stdout}");
    assert!(stdout.contains("cause: the schedule"), "{stdout}");
    let line = line_of(file, "s[:] = s + lm.load");
    assert!(
        stdout.contains(&format!("{file}:{line}:")),
        "not on line {line}:\n{stdout}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn the_gemm_example_builds_with_its_metadata() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, out) = build("examples/gemm_sm90.py", "gemm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in [
        "gemm.cu",
        "gemm.cubin",
        "gemm.launch.json",
        "gemm.resources.json",
    ] {
        assert!(out_dir.join(f).is_file(), "missing {f}");
    }
    let launch: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("gemm.launch.json")).unwrap())
            .unwrap();
    assert_eq!(launch["schema"], "cake.launch/v0");
    assert_eq!(launch["block"][0], 384);
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn row_accesses_with_an_eviction_priority_build() {
    if !has_toolchain() {
        return;
    }
    // Every hinted helper the row lowering calls reaches ptxas (unused helpers never do).
    let (out_dir, cu) = built_cuda("tests/build/row_hints_sm90.py", "row-hints", "row_hints");
    for call in [
        "cake_row_raw_b16_evict_first(",
        "cake_row_raw_b32_evict_last(",
        "cake_ldg_evict_first(",
        "cake_row_st8v_bf16_evict_first(",
        "cake_row_st8v_f32_evict_last(",
        "cake_row_st8v_e4m3_evict_first(",
        "cake_st_evict_last(",
        "cake_st_evict_first(",
    ] {
        assert!(
            cu.lines()
                .any(|l| l.contains(call) && !l.contains("__forceinline__")),
            "the kernel never calls {call}"
        );
    }
    assert!(out_dir.join("row_hints.cubin").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn fragments_assigned_together_build() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, cu) = built_cuda(
        "tests/build/assign_many_sm90.py",
        "assign-many",
        "assign_many",
    );
    // The first statement's batched path reads X's tile once for both values, with both
    // vectors, before any fragment is written.
    let first = batched_path(&cu, "// p, v <- ...", 1);
    let raw = |t: &str| raw_loads(first, t);
    assert_eq!((raw("X"), raw("W"), raw("V")), (1, 1, 1), "{first}");
    // The swap computes both values before writing either.
    let swap = cu.split("// p, v <- ...").nth(2).expect("the swap");
    let line = swap
        .lines()
        .find(|l| l.contains("cake_val1"))
        .expect("the swap's element loop");
    assert!(
        line.find("const auto cake_val1").unwrap() < line.find("p[").unwrap(),
        "{line}"
    );
    // The two row reductions of one statement: one pass, W read once for both.
    let fused = batched_path(&cu, "float cake_part0[", 1);
    assert!(fused.contains("float cake_part1["), "{fused}");
    let reads = |t: &str| raw_loads(fused, t);
    assert_eq!((reads("W"), reads("V")), (1, 1), "{fused}");
    // Two reductions of loads alone: their pass reads X's tile once, and the vectors once each.
    let loads_only = batched_path(&cu, "float cake_part0[", 2);
    let reads = |t: &str| raw_loads(loads_only, t);
    assert_eq!(
        (reads("X"), reads("W"), reads("V")),
        (1, 1, 1),
        "{loads_only}"
    );
    assert!(out_dir.join("assign_many.cubin").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn fragments_written_from_an_accumulator_take_its_layout() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, cu) = built_cuda(
        "tests/build/accumulator_copy_sm90.py",
        "accumulator-copy",
        "accumulator_copy",
    );
    // A (64, 16) wgmma accumulator is 8 f32 registers a thread; both copies are declared so and
    // written register for register.
    for decl in ["float out[8];", "float twice[8];"] {
        assert!(cu.contains(decl), "no `{decl}` in\n{cu}");
    }
    assert!(
        cu.contains(
            "twice[4 * i + 2 * h + j] = (float)((out[4 * i + 2 * h + j] + acc[4 * i + 2 * h + j]))"
        ),
        "{cu}"
    );
    assert!(out_dir.join("accumulator_copy.cubin").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn reductions_of_one_statement_cross_the_warps_in_one_exchange() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, cu) = built_cuda("tests/build/exchange_sm90.py", "exchange", "exchange");
    let syncs = |s: &str| s.matches("cake_named_sync(8 + rows_index, 128);").count();
    // The statement's three reductions: one pass, then one exchange (two barriers), each
    // partial at its own slot of a warp's six floats (three values of two rows).
    let fused = cu
        .split("float cake_part0[")
        .nth(1)
        .and_then(|s| s.split("// s0, s1, s2 <- ...").next())
        .expect("the fused pass");
    assert_eq!(syncs(fused), 2, "{fused}");
    let stores = fused
        .lines()
        .find(|l| l.contains("cake_st_shared_f32"))
        .expect("the exchange's stores");
    for slot in ["* 6 + r)", "* 6 + 2 + r)", "* 6 + 4 + r)"] {
        assert!(stores.contains(slot), "no partial at `{slot}`: {stores}");
    }
    // The reduction stored alone crosses by itself, in the slots it always had.
    let alone = cu
        .split("// store S <- row-layout value")
        .nth(1)
        .expect("the lone reduction");
    assert_eq!(syncs(alone), 2, "{alone}");
    assert!(alone.contains("rows_thread / 32) * 2 + r)"), "{alone}");
    // The scratch holds the exchange: 4 warps x 2 rows x 3 values x 4 bytes, after 1 KB of slack.
    let launch = std::fs::read_to_string(out_dir.join("exchange.launch.json")).unwrap();
    assert!(launch.contains("\"dynamic_smem\": 1120"), "{launch}");
    assert!(out_dir.join("exchange.cubin").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn shared_views_are_read_in_row_layout_16_bytes_at_a_time() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, cu) = built_cuda("tests/build/row_view_sm90.py", "row-view", "row_view");
    let reads = |s: &str, view: &str| {
        s.lines()
            .filter(|l| l.contains("_raw[") && l.contains(&format!("cake_row_lds_b16(({view} +")))
            .count()
    };
    // The tile from shared memory alone: one batched path (no run-time condition, no checked
    // path), one 16-byte read per chunk statement (2 rows x 2 chunks, unrolled).
    let tile = cu
        .split("{  // whole chunks of shared views: batched")
        .nth(1)
        .expect("the view tile's batched path");
    let tile = &tile[..tile.find("row sum over").expect("the next statement")];
    assert_eq!(reads(tile, "sX"), 1, "{tile}");
    assert!(!tile.contains("} else {"), "{tile}");
    // The weight from shared memory next to a vector from global memory: both in one batch, the
    // view read with ld.shared in the checked path too.
    let mixed = batched_path(&cu, "// x <- ...", 2);
    assert_eq!(reads(mixed, "sW"), 1, "{mixed}");
    assert_eq!(raw_loads(mixed, "B"), 1, "{mixed}");
    assert!(
        cu.contains("cake_row_lds8_bf16(ld"),
        "no checked read of sW"
    );
    // The per-row scale: one ld.shared per row of the thread.
    assert!(
        cu.contains("= cake_ld_shared_f32((sS + "),
        "no per-row read of sS"
    );
    assert!(out_dir.join("row_view.cubin").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// The batched path of the `nth` section of `cu` that starts at `marker`: up to its checked
/// path (`} else {`).
fn batched_path<'a>(cu: &'a str, marker: &str, nth: usize) -> &'a str {
    let section = cu
        .split(marker)
        .nth(nth)
        .unwrap_or_else(|| panic!("section {nth} after `{marker}`"));
    &section[..section.find("} else {").expect("its checked path")]
}

/// How many 16-byte reads of `tensor` a batched path issues (lines filling a `_raw[` register
/// from `lm.load(tensor)`).
fn raw_loads(path: &str, tensor: &str) -> usize {
    path.lines()
        .filter(|l| l.contains("_raw[") && l.contains(&format!("lm.load({tensor})")))
        .count()
}

/// Whether `cake` will find nvcc (the same discovery as `cake build`); reported as a skip when not.
fn has_toolchain() -> bool {
    cake_testkit::require(cake_toolchain::Toolchain::discover(), "no CUDA toolchain").is_some()
}

#[test]
fn dynamic_tile_loops_build() {
    if !has_toolchain() {
        return;
    }
    let (out_dir, cu) = built_cuda(
        "tests/build/dynamic_tiles_sm90.py",
        "dynamic-tiles",
        "dynamic_tiles",
    );
    let count = |text: &str| {
        cu.lines()
            .filter(|l| l.contains(text) && !l.contains("__forceinline__"))
            .count()
    };
    // Both roles walk the ring; one thread takes the tiles and leaves once.
    assert_eq!(count("taken dynamically"), 2, "{cu}");
    assert_eq!(count("{  // the taker"), 1, "{cu}");
    assert_eq!(count("cake_tiles_leave(cake_tiles);"), 1, "{cu}");
    // Every reader arrives on the empty slot: the issue-only producer's one thread and the
    // consumer warpgroup's four warps.
    assert_eq!(count("cake_mbar_init(tiles_empty + 8 * s, 5)"), 1, "{cu}");
    assert_eq!(
        count("cake_mbar_arrive(tiles_empty + 8 * tile_slot)"),
        2,
        "{cu}"
    );
    // The taker grabs its next tile once per tile, after it has issued the tile's last copy
    // (the grab's round trip then overlaps copies in flight, not the tile's hand-over).
    assert_eq!(count("atomicAdd(cake_tiles, 1u)"), 1, "{cu}");
    let grab = cu.find("atomicAdd(cake_tiles, 1u)").unwrap();
    let last_copy = cu.rfind("tma_load sX").expect("the producer's copy");
    let hand_over = cu.find("cake_tile_put(tiles_index").expect("the hand-over");
    assert!(hand_over < last_copy && last_copy < grab, "{cu}");
    assert!(out_dir.join("dynamic_tiles.cubin").is_file());
    // With the consumers declared first, the producer's thread still takes the tiles.
    let cu = std::fs::read_to_string(out_dir.join("consumer_first.cu")).unwrap();
    let load_branch = cu.split("// role load").nth(1).expect("the load branch");
    let math_branch = cu
        .split("// role math")
        .nth(1)
        .and_then(|b| b.split("// role load").next())
        .expect("the math branch");
    assert!(load_branch.contains("{  // the taker"), "{cu}");
    assert!(!math_branch.contains("{  // the taker"), "{cu}");
    assert!(out_dir.join("consumer_first.cubin").is_file());
    // A taker whose role has no copies (a row kernel) grabs after its tile's store.
    let cu = std::fs::read_to_string(out_dir.join("rows_only.cu")).unwrap();
    let grab = cu.find("atomicAdd(cake_tiles, 1u)").expect("the grab");
    let store = cu.find("// store Y").expect("the store");
    assert!(store < grab, "{cu}");
    assert!(out_dir.join("rows_only.cubin").is_file());
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn fp8_wgmma_steps_k_by_32_bytes_without_transpose_flags() {
    // FP8 wgmma is k32: a 128-element block is four instructions, 32 bytes apart in each
    // 128-byte swizzled row, and its PTX takes no transpose immediates (ptxas rejects them for
    // 8-bit inputs, so a build that passes ptxas is the check of the operand list).
    if !has_toolchain() {
        return;
    }
    let (out_dir, cu) = built_cuda("tests/build/fp8_mixed_sm90.py", "fp8-mixed", "gemm_mixed");
    assert!(
        cu.contains("wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 "),
        "{cu}"
    );
    let steps: Vec<&str> = cu
        .lines()
        .filter(|l| l.contains("cake_wgmma_m64n64k32_f32_e4m3_e5m2(acc"))
        .collect();
    assert_eq!(steps.len(), 4, "{cu}");
    for (i, step) in steps.iter().enumerate() {
        assert!(
            step.contains(&format!("sA + {}, 16, 1024, 1", 32 * i)),
            "step {i}: {step}"
        );
    }
    let _ = std::fs::remove_dir_all(&out_dir);

    // The row-wise scaled example: promoted blocks and both scale vectors, through ptxas.
    let (out_dir, cu) = built_cuda("examples/gemm_fp8_sm90.py", "fp8-rowwise", "gemm_fp8");
    assert!(cu.contains("k32.f32.e4m3.e4m3 "), "{cu}");
    assert!(
        cu.contains("__ldg(SA + "),
        "the row scale is read per row:\n{cu}"
    );
    assert!(
        cu.contains("__ldg(SB + "),
        "the column scale is read per column:\n{cu}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn fp8_tcgen05_is_kind_f8f6f4_with_the_types_in_its_descriptor() {
    // sm_100a: an e4m3 A and an e5m2 B in one `.kind::f8f6f4` MMA, K = 32 per instruction, and
    // the instruction descriptor of Table 42: F32 D (bit 4), atype E4M3 = 0, btype E5M2 = 1
    // (bit 10), N = 128 (16 at bit 17), M = 128 (8 at bit 24).
    if !has_toolchain() {
        return;
    }
    let file = "tests/build/fp8_tcgen05_sm100.py";
    let (out_dir, out) = build_for(file, "fp8-tcgen05", "sm_100a");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cu = std::fs::read_to_string(out_dir.join("gemm_fp8.cu")).unwrap();
    let steps: Vec<&str> = cu
        .lines()
        .filter(|l| l.contains("cake_tcgen05_mma_f8f6f4_ss(cake_tmem"))
        .collect();
    assert_eq!(steps.len(), 4, "{cu}");
    for (i, step) in steps.iter().enumerate() {
        assert!(
            step.contains(&format!("pipe_stage) + {}, ", 32 * i)),
            "{step}"
        );
        assert!(step.contains("0x08200410u"), "{step}");
    }
    assert!(
        cu.contains("tcgen05.mma.cta_group::1.kind::f8f6f4 "),
        "{cu}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn one_element_loads_broadcast_in_accumulator_and_row_layouts() {
    // `lm.load(T, coords=..., shape=())` is one value every thread reads: FP8 per-tensor scales
    // in a wgmma epilogue and a quantization scale in a row-layout value, both through ptxas,
    // each read bounds-checked with its fill outside.
    if !has_toolchain() {
        return;
    }
    let file = "tests/build/scalar_loads_sm90.py";
    let (out_dir, out) = build(file, "scalar-loads");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gemm = std::fs::read_to_string(out_dir.join("gemm_tensorwise.cu")).unwrap();
    assert!(
        gemm.contains("(0) < 1) ? __ldg(SA + (size_t)(0)) : 0.0f"),
        "{gemm}"
    );
    assert!(gemm.contains("__ldg(SB + (size_t)(0))"), "{gemm}");
    let quant = std::fs::read_to_string(out_dir.join("quant_static.cu")).unwrap();
    assert!(quant.contains("__ldg(S + (size_t)(0)) : 1.0f"), "{quant}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

#[test]
fn per_row_vectors_read_the_mma_sync_fragment_rows() {
    // sm_89: row-wise FP8 scales on the mma.sync accumulator. A per-row vector (`sa[:, None]`)
    // is read at each thread's rows of each 16-row tile of the warp's fragment.
    if !has_toolchain() {
        return;
    }
    let file = "tests/build/fp8_rowwise_sm89.py";
    let (out_dir, out) = build_for(file, "fp8-rowwise-sm89", "sm_89");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cu = std::fs::read_to_string(out_dir.join("gemm_fp8.cu")).unwrap();
    assert!(
        cu.contains("(16 * mt + lane_row + 8 * h)) < dim_M ? __ldg(SA + "),
        "{cu}"
    );
    assert!(
        cu.contains("(lane_col + 8 * i + j)) < dim_N ? __ldg(SB + "),
        "{cu}"
    );
    let _ = std::fs::remove_dir_all(&out_dir);
}
