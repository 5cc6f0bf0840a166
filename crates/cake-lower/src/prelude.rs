//! Device helpers emitted at the top of every generated file: one small inline-PTX wrapper per
//! hardware operation, so the kernel body reads as a sequence of named steps.

/// Helpers every target uses.
pub const COMMON: &str = r#"#include <stdint.h>

// A CUtensorMap (128 bytes, 64-byte aligned), declared here so the file needs no driver header.
struct alignas(64) CakeTensorMap { unsigned long long opaque[16]; };

static __device__ __forceinline__ int cake_cdiv(int a, int b) { return (a + b - 1) / b; }

// Synchronise the `count` threads that use hardware barrier `id`.
static __device__ __forceinline__ void cake_named_sync(uint32_t id, uint32_t count) {
  asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(count) : "memory");
}

static __device__ __forceinline__ uint32_t cake_smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-bit floats are stored as raw bits; conversions are single PTX instructions (round to nearest).
static __device__ __forceinline__ uint32_t cake_pack_bf16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}
static __device__ __forceinline__ uint32_t cake_pack_f16x2(float lo, float hi) {
  uint32_t r;
  asm("cvt.rn.f16x2.f32 %0, %2, %1;" : "=r"(r) : "f"(lo), "f"(hi));
  return r;
}
"#;

/// mbarrier helpers (sm_80 and later).
pub const MBARRIER: &str = r#"
static __device__ __forceinline__ void cake_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void cake_mbar_arrive(uint32_t bar) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared::cta.b64 st, [%0];\n\t}" :: "r"(bar) : "memory");
}
static __device__ __forceinline__ void cake_mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "CAKE_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra CAKE_WAIT_%=;\n\t}"
      :: "r"(bar), "r"(parity) : "memory");
}
"#;

/// mbarrier helpers for targets without `mbarrier.try_wait` (sm_80, sm_89): the wait spins on
/// `mbarrier.test_wait.parity`, which returns at once; the arrive and init are those of
/// [`MBARRIER`], spelled with the plain `.shared` state space PTX 7.1 accepts on sm_80.
pub const MBARRIER_TEST_WAIT: &str = r#"
static __device__ __forceinline__ void cake_mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void cake_mbar_arrive(uint32_t bar) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.shared.b64 st, [%0];\n\t}" :: "r"(bar) : "memory");
}
static __device__ __forceinline__ void cake_mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "CAKE_WAIT_%=:\n\t"
      "mbarrier.test_wait.parity.shared.b64 done, [%0], %1;\n\t"
      "@!done bra CAKE_WAIT_%=;\n\t}"
      :: "r"(bar), "r"(parity) : "memory");
}
"#;

/// cp.async (sm_80 and later): one 16-byte chunk global → shared, zero-filled beyond `src_bytes`
/// (0 fills the whole chunk: the source is not read), and the arrive that completes on an
/// mbarrier once every cp.async this thread issued before it has landed. `.noinc`: the arrival
/// is one of those the barrier was initialised to expect.
pub const CP_ASYNC: &str = r#"
static __device__ __forceinline__ void cake_cp_async_16(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void cake_cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(bar) : "memory");
}
"#;

/// ldmatrix and mma.sync (sm_80 and later).
pub const MMA_SYNC: &str = r#"
// Four 8x8 b16 matrices: lanes 8i..8i+7 give the row addresses of matrix i; thread t receives
// row t/4, elements 2(t%4) and 2(t%4)+1 of each matrix, one 32-bit register per matrix.
static __device__ __forceinline__ void cake_ldmatrix_x4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
"#;

/// The wrapper's name: `cake_mma_m16n8k16_f32_bf16`, or `..._e4m3_e5m2` for mixed FP8 inputs.
pub fn mma_sync_name(k: u32, a: &str, b: &str) -> String {
    if a == b {
        format!("cake_mma_m16n8k{k}_f32_{a}")
    } else {
        format!("cake_mma_m16n8k{k}_f32_{a}_{b}")
    }
}

/// One `mma.sync.aligned.m16n8k{k}.row.col.f32.{a}.{b}.f32` wrapper: `a` points at the four A
/// registers, `b` at the two B registers, `d` at the four f32 accumulators.
pub fn mma_sync_fn(k: u32, a: &str, b: &str) -> String {
    let name = mma_sync_name(k, a, b);
    format!(
        r#"static __device__ __forceinline__ void {name}(float* d, const uint32_t* a, const uint32_t* b) {{
  asm volatile("mma.sync.aligned.m16n8k{k}.row.col.f32.{a}.{b}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}}
"#
    )
}

/// The shared-memory swizzle of a view, as a function of the byte offset from a 1024-byte aligned
/// base: the 16-byte chunk index (bits 4..) XOR the 128-byte line index (bits 7..), over 1, 2 or
/// 3 bits for the 32B, 64B and 128B modes — the pattern TMA and wgmma use for the same tags.
pub fn swizzle_fn(swizzle: u32) -> String {
    let bits = match swizzle {
        32 => 1,
        64 => 2,
        128 => 3,
        _ => 0,
    };
    let mask = (1u32 << bits) - 1;
    format!(
        "static __device__ __forceinline__ uint32_t cake_swizzle{swizzle}(uint32_t off) {{ return off ^ (((off >> 7) & {mask}u) << 4); }}\n"
    )
}

/// TMA, expect-tx and proxy fences (sm_90 and later).
pub const TMA: &str = r#"
static __device__ __forceinline__ void cake_mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}"
               :: "r"(bar), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void cake_fence_barrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
static __device__ __forceinline__ void cake_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
static __device__ __forceinline__ void cake_tma_store_2d(const CakeTensorMap* map, uint32_t src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
               :: "l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
static __device__ __forceinline__ void cake_bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Wait until earlier bulk stores have finished reading shared memory (the buffer may be reused).
static __device__ __forceinline__ void cake_bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
// Wait until earlier bulk stores are complete (before the CTA exits).
static __device__ __forceinline__ void cake_bulk_wait() {
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
static __device__ __forceinline__ void cake_st_shared_b32(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.b32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
static __device__ __forceinline__ void cake_tma_load_2d(uint32_t dst, const CakeTensorMap* map, uint32_t bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
      :: "r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
static __device__ __forceinline__ void cake_tma_load_3d(uint32_t dst, const CakeTensorMap* map, uint32_t bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5}], [%2];"
      :: "r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
"#;

/// wgmma protocol helpers (sm_90a).
pub const WGMMA: &str = r#"
static __device__ __forceinline__ void cake_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void cake_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N>
static __device__ __forceinline__ void cake_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
// An empty asm that "redefines" every accumulator register: code that reads the registers cannot
// be moved above the wait_group before it. Without it nvcc may hoist those reads above the wait,
// and ptxas then serialises every wgmma of the function (C7514/C7517).
template <int N>
static __device__ __forceinline__ void cake_wgmma_fence_regs(float (&r)[N]) {
  #pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
// Shared-memory matrix descriptor: start address, leading and stride byte offsets (all >> 4),
// and the swizzle mode in bits 62-63 (1 = 128B, 2 = 64B, 3 = 32B).
static __device__ __forceinline__ uint64_t cake_wgmma_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swizzle_mode) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32)
       | ((uint64_t)swizzle_mode << 62);
}
"#;

/// setmaxnreg (sm_90a and later).
pub const SETMAXNREG: &str = r#"
template <int R> static __device__ __forceinline__ void cake_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R));
}
template <int R> static __device__ __forceinline__ void cake_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R));
}
"#;

/// One wgmma wrapper for an `m64nNk16` shape with f32 accumulators and bf16/f16 inputs from
/// shared-memory descriptors.
pub fn wgmma_fn(n: u32, input: &str) -> String {
    wgmma_fn_with(n, input, false)
}

/// `cake_wgmma_m64n<N>k16_f32_<input>_rs`: the wgmma whose A operand is in registers (four
/// 32-bit registers of packed 16-bit pairs per k-step, the accumulator's element order).
pub fn wgmma_rs_fn(n: u32, input: &str) -> String {
    wgmma_fn_with(n, input, true)
}

fn wgmma_fn_with(n: u32, input: &str, a_in_registers: bool) -> String {
    let regs = n / 2;
    let suffix = if a_in_registers { "_rs" } else { "" };
    let name = format!("cake_wgmma_m64n{n}k16_f32_{input}{suffix}");
    let a_params = if a_in_registers {
        "uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3"
    } else {
        "uint64_t desc_a"
    };
    // Operand numbers after the accumulator registers: A (one descriptor or four registers),
    // then B's descriptor, then the scale-d flag.
    let a_count = if a_in_registers { 4 } else { 1 };
    let (b_op, scale_op) = (regs + a_count, regs + a_count + 1);
    let mut out = String::new();
    out.push_str(&format!(
        "static __device__ __forceinline__ void {name}(float (&d)[{regs}], {a_params}, uint64_t desc_b, int scale_d) {{\n"
    ));
    let list: Vec<String> = (0..regs).map(|i| format!("%{i}")).collect();
    out.push_str("  asm volatile(\n      \"{\\n\\t.reg .pred p;\\n\\t\"\n");
    out.push_str(&format!("      \"setp.ne.b32 p, %{scale_op}, 0;\\n\\t\"\n"));
    out.push_str(&format!(
        "      \"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{input}.{input} \"\n"
    ));
    for chunk in list.chunks(16) {
        let first = chunk[0] == "%0";
        out.push_str(&format!(
            "      \"{}{},\"\n",
            if first { "{" } else { " " },
            chunk.join(", ")
        ));
    }
    // Replace the trailing comma of the register list with the closing brace.
    let pos = out.rfind(",\"\n").expect("non-empty register list");
    out.replace_range(pos..pos + 3, "},\"\n");
    if a_in_registers {
        // Register A: no transpose flag for A; B K-major.
        out.push_str(&format!(
            "      \" {{%{}, %{}, %{}, %{}}}, %{b_op}, p, 1, 1, 0;\\n\\t}}\\n\"\n",
            regs,
            regs + 1,
            regs + 2,
            regs + 3
        ));
    } else {
        out.push_str(&format!(
            "      \" %{regs}, %{b_op}, p, 1, 1, 0, 0;\\n\\t}}\\n\"\n"
        ));
    }
    let outs: Vec<String> = (0..regs).map(|i| format!("\"+f\"(d[{i}])")).collect();
    out.push_str("      : ");
    for (i, chunk) in outs.chunks(8).enumerate() {
        if i > 0 {
            out.push_str(",\n        ");
        }
        out.push_str(&chunk.join(", "));
    }
    if a_in_registers {
        out.push_str("\n      : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"l\"(desc_b), \"r\"(scale_d));\n}\n");
    } else {
        out.push_str("\n      : \"l\"(desc_a), \"l\"(desc_b), \"r\"(scale_d));\n}\n");
    }
    out
}

/// Shared-memory fills and atomics (`view.store` of a constant, `scatter_add`).
pub const SHARED_OPS: &str = r#"
static __device__ __forceinline__ void cake_st_shared_v4(uint32_t addr, uint32_t v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};" :: "r"(addr), "r"(v) : "memory");
}
static __device__ __forceinline__ float cake_ld_shared_f32(uint32_t addr) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(addr) : "memory");
  return v;
}
static __device__ __forceinline__ int cake_ld_shared_s32(uint32_t addr) {
  int v;
  asm volatile("ld.shared.s32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
static __device__ __forceinline__ float cake_ld_shared_bf16(uint32_t addr) {
  unsigned short h;
  asm volatile("ld.shared.u16 %0, [%1];" : "=h"(h) : "r"(addr) : "memory");
  return __uint_as_float((uint32_t)h << 16);
}
static __device__ __forceinline__ float cake_ld_shared_f16(uint32_t addr) {
  unsigned short h;
  float v;
  asm volatile("ld.shared.b16 %0, [%1];" : "=h"(h) : "r"(addr) : "memory");
  asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));
  return v;
}
static __device__ __forceinline__ void cake_st_shared_f32(uint32_t addr, float v) {
  asm volatile("st.shared.f32 [%0], %1;" :: "r"(addr), "f"(v) : "memory");
}
static __device__ __forceinline__ void cake_red_shared_add_u32(uint32_t addr, uint32_t v) {
  asm volatile("red.shared.add.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
"#;

/// `cake_tma_store_<rank>d` for a TMA store of rank other than 2 (the 2-D one is in [`TMA`]).
pub fn tma_store_fn(rank: usize) -> String {
    let params: Vec<String> = (0..rank).map(|i| format!("int c{i}")).collect();
    let operands: Vec<String> = (0..rank).map(|i| format!("%{}", i + 2)).collect();
    let inputs: Vec<String> = (0..rank).map(|i| format!(", \"r\"(c{i})")).collect();
    format!(
        "static __device__ __forceinline__ void cake_tma_store_{rank}d(const CakeTensorMap* map, uint32_t src, {}) {{\n  asm volatile(\"cp.async.bulk.tensor.{rank}d.global.shared::cta.bulk_group [%0, {{{}}}], [%1];\"\n               :: \"l\"(map), \"r\"(src){} : \"memory\");\n}}\n",
        params.join(", "),
        operands.join(", "),
        inputs.concat()
    )
}

/// Thread-block cluster helpers (sm_90a and the sm_100 family), emitted when the kernel declares
/// a cluster of more than one CTA: the CTA's rank, the cluster-wide barrier, arrivals on a peer
/// CTA's mbarrier and TMA loads multicast to several CTAs.
pub const CLUSTER: &str = r#"
static __device__ __forceinline__ uint32_t cake_cluster_ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
// Every thread of every CTA of the cluster: what each wrote before is visible to all after.
static __device__ __forceinline__ void cake_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}
// Arrive on the mbarrier at the same offset in CTA `cta` of the cluster, ordering this thread's
// earlier memory accesses before it at cluster scope (an `lm.arrive` after generic accesses).
static __device__ __forceinline__ void cake_mbar_arrive_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n\t}"
      :: "r"(bar), "r"(cta) : "memory");
}
// The same arrival with the default (CTA-scope) semantics, for releasing a stage whose readers
// were MMAs that have retired: there is nothing left to order. `.release.cluster` puts
// MEMBAR.ALL.GPU before every arrival, which made the consumers of a cluster GEMM 42% slower.
static __device__ __forceinline__ void cake_mbar_release_cluster(uint32_t bar, uint32_t cta) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}"
      :: "r"(bar), "r"(cta) : "memory");
}
// The box lands at the same offset in every CTA of `mask`, completing on each one's barrier.
static __device__ __forceinline__ void cake_tma_load_2d_multicast(uint32_t dst, const CakeTensorMap* map, uint32_t bar, uint16_t mask, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5}], [%2], %3;"
      :: "r"(dst), "l"(map), "r"(bar), "h"(mask), "r"(c0), "r"(c1) : "memory");
}
static __device__ __forceinline__ void cake_tma_load_3d_multicast(uint32_t dst, const CakeTensorMap* map, uint32_t bar, uint16_t mask, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%4, %5, %6}], [%2], %3;"
      :: "r"(dst), "l"(map), "r"(bar), "h"(mask), "r"(c0), "r"(c1), "r"(c2) : "memory");
}
"#;
