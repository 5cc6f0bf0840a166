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
