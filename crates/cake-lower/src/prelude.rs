//! Device helpers emitted at the top of every generated file: one small inline-PTX wrapper per
//! hardware operation, so the kernel body reads as a sequence of named steps.

/// Helpers every target uses.
pub const COMMON: &str = r#"#include <stdint.h>

// A CUtensorMap (128 bytes, 64-byte aligned), declared here so the file needs no driver header.
struct alignas(64) CakeTensorMap { unsigned long long opaque[16]; };

static __device__ __forceinline__ int cake_cdiv(int a, int b) { return (a + b - 1) / b; }
// The schedule's `//` and `%` floor, as in Python, where C's truncate: used wherever the dividend
// may be negative (or the divisor not positive); elsewhere the two agree and C's are emitted.
static __device__ __forceinline__ int cake_floordiv(int a, int b) {
  const int q = a / b;
  return q - ((a % b != 0) && ((a < 0) != (b < 0)));
}
static __device__ __forceinline__ int cake_floormod(int a, int b) {
  const int r = a % b;
  return r + ((r != 0) && ((r < 0) != (b < 0))) * b;
}
static __device__ __forceinline__ float cake_floormodf(float a, float b) {
  const float r = fmodf(a, b);
  return (r != 0.0f && ((r < 0.0f) != (b < 0.0f))) ? r + b : r;
}

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

/// `lm.exp2`: the MUFU instruction itself. `exp2f()` adds range and denormal fix-ups around it
/// (docs/language.md §10.2); `.ftz` is not used, so subnormal inputs and results are kept.
/// `lm.mma(..., turns=True)`: arriving on a hardware barrier without waiting (the next replica's
/// turn).
pub const TURNS: &str = r#"
static __device__ __forceinline__ void cake_named_arrive(uint32_t id, uint32_t count) {
  asm volatile("bar.arrive %0, %1;" :: "r"(id), "r"(count) : "memory");
}
"#;

pub const EX2: &str = r#"
static __device__ __forceinline__ float cake_ex2(float x) {
  float y;
  asm("ex2.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// lm.exp2(x, ftz=True): subnormals flush to zero, one MUFU.EX2 with no fix-ups around it.
static __device__ __forceinline__ float cake_ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
"#;

/// Row-layout loads and stores (`rows=` fragments): eight consecutive elements of a row, one
/// 16-byte access (two for f32) when all eight are in bounds (`n` >= 8) and the address is
/// aligned, element by element otherwise; `n` is how many of the eight are in bounds.
pub const ROW_OPS: &str = r#"
static __device__ __forceinline__ float cake_sum(float a, float b) { return a + b; }
static __device__ __forceinline__ float cake_bf16_to_f32(uint16_t h) {
  return __uint_as_float((uint32_t)h << 16);
}
static __device__ __forceinline__ float cake_f16_to_f32(uint16_t h) {
  float v;
  asm("cvt.f32.f16 %0, %1;" : "=f"(v) : "h"(h));
  return v;
}
static __device__ __forceinline__ uint16_t cake_f32_to_bf16(float v) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}
static __device__ __forceinline__ uint16_t cake_f32_to_f16(float v) {
  uint16_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}
static __device__ __forceinline__ bool cake_aligned16(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}
static __device__ __forceinline__ bool cake_aligned8(const void* p) {
  return (reinterpret_cast<uintptr_t>(p) & 7) == 0;
}
// Whole chunks: a raw 16-byte read (two for 32-bit elements), unpacked to eight values, and an
// unchecked store. The batched path (a statement whose every chunk is whole, in bounds and
// aligned) issues all raw reads before the first unpack, with no branch between them; the
// checked helpers below use the same pieces for a chunk that qualifies.
static __device__ __forceinline__ uint4 cake_row_raw_b16(const void* p) {
  return __ldg(reinterpret_cast<const uint4*>(p));
}
struct cake_raw_b32 { uint4 lo, hi; };
static __device__ __forceinline__ cake_raw_b32 cake_row_raw_b32(const void* p) {
  const uint4* q = reinterpret_cast<const uint4*>(p);
  return {__ldg(q), __ldg(q + 1)};
}
static __device__ __forceinline__ void cake_row_unpack_bf16(float* d, uint4 u) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    d[2 * i] = __uint_as_float(w[i] << 16);
    d[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
  }
}
static __device__ __forceinline__ void cake_row_unpack_f16(float* d, uint4 u) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    d[2 * i] = cake_f16_to_f32((uint16_t)(w[i] & 0xffffu));
    d[2 * i + 1] = cake_f16_to_f32((uint16_t)(w[i] >> 16));
  }
}
static __device__ __forceinline__ void cake_row_unpack_f32(float* d, cake_raw_b32 u) {
  const uint32_t w[8] = {u.lo.x, u.lo.y, u.lo.z, u.lo.w, u.hi.x, u.hi.y, u.hi.z, u.hi.w};
#pragma unroll
  for (int i = 0; i < 8; ++i) d[i] = __uint_as_float(w[i]);
}
static __device__ __forceinline__ void cake_row_unpack_i32(int* d, cake_raw_b32 u) {
  const uint32_t w[8] = {u.lo.x, u.lo.y, u.lo.z, u.lo.w, u.hi.x, u.hi.y, u.hi.z, u.hi.w};
#pragma unroll
  for (int i = 0; i < 8; ++i) d[i] = (int)w[i];
}
static __device__ __forceinline__ void cake_row_st8v_bf16(uint16_t* p, const float* v) {
  uint4 u;
  u.x = cake_pack_bf16x2(v[0], v[1]); u.y = cake_pack_bf16x2(v[2], v[3]);
  u.z = cake_pack_bf16x2(v[4], v[5]); u.w = cake_pack_bf16x2(v[6], v[7]);
  *reinterpret_cast<uint4*>(p) = u;
}
static __device__ __forceinline__ void cake_row_st8v_f16(uint16_t* p, const float* v) {
  uint4 u;
  u.x = cake_pack_f16x2(v[0], v[1]); u.y = cake_pack_f16x2(v[2], v[3]);
  u.z = cake_pack_f16x2(v[4], v[5]); u.w = cake_pack_f16x2(v[6], v[7]);
  *reinterpret_cast<uint4*>(p) = u;
}
static __device__ __forceinline__ void cake_row_st8v_f32(float* p, const float* v) {
  reinterpret_cast<float4*>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4*>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
// Checked: a chunk that is whole, in bounds and aligned as above, element by element otherwise
// (elements past the row or the extent read `fill`; stores skip them).
static __device__ __forceinline__ void cake_row_ld8_bf16(float* d, const uint16_t* p, bool row_ok, int n, float fill) {
  if (row_ok && n >= 8 && cake_aligned16(p)) {
    cake_row_unpack_bf16(d, cake_row_raw_b16(p));
  } else {
#pragma unroll
    for (int v = 0; v < 8; ++v) d[v] = (row_ok && v < n) ? cake_bf16_to_f32(p[v]) : fill;
  }
}
static __device__ __forceinline__ void cake_row_ld8_f16(float* d, const uint16_t* p, bool row_ok, int n, float fill) {
  if (row_ok && n >= 8 && cake_aligned16(p)) {
    cake_row_unpack_f16(d, cake_row_raw_b16(p));
  } else {
#pragma unroll
    for (int v = 0; v < 8; ++v) d[v] = (row_ok && v < n) ? cake_f16_to_f32(p[v]) : fill;
  }
}
static __device__ __forceinline__ void cake_row_ld8_f32(float* d, const float* p, bool row_ok, int n, float fill) {
  if (row_ok && n >= 8 && cake_aligned16(p)) {
    cake_row_unpack_f32(d, cake_row_raw_b32(p));
  } else {
#pragma unroll
    for (int v = 0; v < 8; ++v) d[v] = (row_ok && v < n) ? __ldg(p + v) : fill;
  }
}
static __device__ __forceinline__ void cake_row_ld8_i32(int* d, const int32_t* p, bool row_ok, int n, int fill) {
  if (row_ok && n >= 8 && cake_aligned16(p)) {
    cake_row_unpack_i32(d, cake_row_raw_b32(p));
  } else {
#pragma unroll
    for (int v = 0; v < 8; ++v) d[v] = (row_ok && v < n) ? __ldg(p + v) : fill;
  }
}
static __device__ __forceinline__ void cake_row_st8_bf16(uint16_t* p, const float* v, bool row_ok, int n) {
  if (!row_ok) return;
  if (n >= 8 && cake_aligned16(p)) {
    cake_row_st8v_bf16(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) if (i < n) p[i] = cake_f32_to_bf16(v[i]);
  }
}
static __device__ __forceinline__ void cake_row_st8_f16(uint16_t* p, const float* v, bool row_ok, int n) {
  if (!row_ok) return;
  if (n >= 8 && cake_aligned16(p)) {
    cake_row_st8v_f16(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) if (i < n) p[i] = cake_f32_to_f16(v[i]);
  }
}
static __device__ __forceinline__ void cake_row_st8_f32(float* p, const float* v, bool row_ok, int n) {
  if (!row_ok) return;
  if (n >= 8 && cake_aligned16(p)) {
    cake_row_st8v_f32(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) if (i < n) p[i] = v[i];
  }
}
"#;

/// Whole chunks of row-major shared views read in a row layout (`view.load()`, §9.8a), after
/// [`ROW_OPS`] (whose unpacking they use).
pub const ROW_SHARED: &str = r#"
// Chunks of a row-major view in shared memory (`view.load()` in a row layout): always whole.
static __device__ __forceinline__ uint4 cake_row_lds_b16(uint32_t addr) {
  uint4 u;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "r"(addr) : "memory");
  return u;
}
static __device__ __forceinline__ cake_raw_b32 cake_row_lds_b32(uint32_t addr) {
  return {cake_row_lds_b16(addr), cake_row_lds_b16(addr + 16)};
}
static __device__ __forceinline__ void cake_row_lds8_bf16(float* d, uint32_t addr, int n, float fill) {
  if (n >= 8) cake_row_unpack_bf16(d, cake_row_lds_b16(addr));
  else for (int i = 0; i < 8; ++i) d[i] = fill;
}
static __device__ __forceinline__ void cake_row_lds8_f16(float* d, uint32_t addr, int n, float fill) {
  if (n >= 8) cake_row_unpack_f16(d, cake_row_lds_b16(addr));
  else for (int i = 0; i < 8; ++i) d[i] = fill;
}
static __device__ __forceinline__ void cake_row_lds8_f32(float* d, uint32_t addr, int n, float fill) {
  if (n >= 8) cake_row_unpack_f32(d, cake_row_lds_b32(addr));
  else for (int i = 0; i < 8; ++i) d[i] = fill;
}
"#;

/// Global atomic adds of row-layout chunks (`lm.scatter_add`): `red.global.add`, relaxed at GPU
/// scope; sm_90 adds four floats per instruction.
pub const ROW_RED: &str = r#"
static __device__ __forceinline__ void cake_red_add8v_f32(float* p, const float* v) {
#if __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};"
               :: "l"(p), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3]) : "memory");
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};"
               :: "l"(p + 4), "f"(v[4]), "f"(v[5]), "f"(v[6]), "f"(v[7]) : "memory");
#else
#pragma unroll
  for (int i = 0; i < 8; ++i) atomicAdd(p + i, v[i]);
#endif
}
static __device__ __forceinline__ void cake_red_add8_f32(float* p, const float* v, int n) {
  if (n >= 8 && cake_aligned16(p)) {
    cake_red_add8v_f32(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) if (i < n) atomicAdd(p + i, v[i]);
  }
}
static __device__ __forceinline__ void cake_red_add_i32(int32_t* p, int v) {
  asm volatile("red.global.add.s32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
"#;

/// FP8 conversions for row-layout stores (sm_89 and later): `cvt.rn.satfinite` saturates to
/// the largest finite value, as a quantizer wants.
pub const ROW_FP8: &str = r#"
static __device__ __forceinline__ uint16_t cake_pack_e4m3x2(float lo, float hi) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(r) : "f"(lo), "f"(hi));
  return r;
}
static __device__ __forceinline__ uint16_t cake_pack_e5m2x2(float lo, float hi) {
  uint16_t r;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %2, %1;" : "=h"(r) : "f"(lo), "f"(hi));
  return r;
}
static __device__ __forceinline__ uint8_t cake_f32_to_e4m3(float v) { return (uint8_t)(cake_pack_e4m3x2(v, 0.0f) & 0xffu); }
static __device__ __forceinline__ uint8_t cake_f32_to_e5m2(float v) { return (uint8_t)(cake_pack_e5m2x2(v, 0.0f) & 0xffu); }
static __device__ __forceinline__ void cake_row_st8v_e4m3(uint8_t* p, const float* v) {
  uint2 u;
  u.x = (uint32_t)cake_pack_e4m3x2(v[0], v[1]) | ((uint32_t)cake_pack_e4m3x2(v[2], v[3]) << 16);
  u.y = (uint32_t)cake_pack_e4m3x2(v[4], v[5]) | ((uint32_t)cake_pack_e4m3x2(v[6], v[7]) << 16);
  *reinterpret_cast<uint2*>(p) = u;
}
static __device__ __forceinline__ void cake_row_st8v_e5m2(uint8_t* p, const float* v) {
  uint2 u;
  u.x = (uint32_t)cake_pack_e5m2x2(v[0], v[1]) | ((uint32_t)cake_pack_e5m2x2(v[2], v[3]) << 16);
  u.y = (uint32_t)cake_pack_e5m2x2(v[4], v[5]) | ((uint32_t)cake_pack_e5m2x2(v[6], v[7]) << 16);
  *reinterpret_cast<uint2*>(p) = u;
}
static __device__ __forceinline__ void cake_row_st8_e4m3(uint8_t* p, const float* v, bool row_ok, int n) {
  if (!row_ok) return;
  if (n >= 8 && cake_aligned8(p)) {
    cake_row_st8v_e4m3(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) if (i < n) p[i] = cake_f32_to_e4m3(v[i]);
  }
}
static __device__ __forceinline__ void cake_row_st8_e5m2(uint8_t* p, const float* v, bool row_ok, int n) {
  if (!row_ok) return;
  if (n >= 8 && cake_aligned8(p)) {
    cake_row_st8v_e5m2(p, v);
  } else {
#pragma unroll
    for (int i = 0; i < 8; ++i) if (i < n) p[i] = cake_f32_to_e5m2(v[i]);
  }
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

/// TMA, expect-tx and proxy fences (sm_90 and later).
pub const TMA: &str = r#"
static __device__ __forceinline__ void cake_mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n\t.reg .b64 st;\n\tmbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1;\n\t}"
               :: "r"(bar), "r"(bytes) : "memory");
}
// Fetch a tensor map (a __grid_constant__ kernel parameter) into the descriptor cache.
static __device__ __forceinline__ void cake_prefetch_tensormap(const CakeTensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" :: "l"(map) : "memory");
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

/// setmaxnreg (sm_90a and later).
pub const SETMAXNREG: &str = r#"
template <int R> static __device__ __forceinline__ void cake_setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(R));
}
template <int R> static __device__ __forceinline__ void cake_setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(R));
}
"#;

/// Transposed 8 × 8 block stores (sm_90+): a transposed `view.store` of an accumulator tile.
/// Lane L gives the address of row L % 8 of block L / 8; each register holds the pair of 16-bit
/// elements the lane owns in one block, which `.trans` writes down a column.
pub const STMATRIX: &str = r#"
static __device__ __forceinline__ void cake_stmatrix_x4_trans(uint32_t addr, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
               :: "r"(addr), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}
static __device__ __forceinline__ void cake_stmatrix_x2_trans(uint32_t addr, const uint32_t (&r)[2]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.trans.shared.b16 [%0], {%1, %2};"
               :: "r"(addr), "r"(r[0]), "r"(r[1]) : "memory");
}
"#;

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
static __device__ __forceinline__ void cake_st_shared_v2_f32(uint32_t addr, float a, float b) {
  asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(addr), "f"(a), "f"(b) : "memory");
}
static __device__ __forceinline__ void cake_red_shared_add_u32(uint32_t addr, uint32_t v) {
  asm volatile("red.shared.add.u32 [%0], %1;" :: "r"(addr), "r"(v) : "memory");
}
"#;

/// `cake_tma_store_<rank>d` for a TMA store of rank other than 2 (the 2-D one is in [`TMA`]).
/// A TMA tile load of rank 4 or 5 (ranks 2 and 3 are in [`TMA`]), multicast to the CTAs of
/// `mask` when `multicast`.
pub fn tma_load_fn(rank: usize, multicast: bool, evict: Option<cake_ir::Evict>) -> String {
    let params: Vec<String> = (0..rank).map(|i| format!("int c{i}")).collect();
    // Operands: dst, map, bar, [mask,] then the coordinates, then [the cache policy].
    let first = if multicast { 4 } else { 3 };
    let operands: Vec<String> = (0..rank).map(|i| format!("%{}", i + first)).collect();
    let inputs: Vec<String> = (0..rank).map(|i| format!(", \"r\"(c{i})")).collect();
    let (mc_name, mc_param, mc_ptx, mc_operand, mc_input) = if multicast {
        (
            "_multicast",
            ", uint16_t mask",
            ".multicast::cluster",
            ", %3",
            ", \"h\"(mask)",
        )
    } else {
        ("", "", "", "", "")
    };
    let name = format!("cake_tma_load_{rank}d{mc_name}{}", tma_load_suffix(evict));
    // An eviction priority: a policy register from `createpolicy` (one instruction, on the one
    // issuing thread), passed as the copy's L2 cache hint.
    let (policy, hint_ptx, hint_operand, hint_input) = match evict {
        Some(e) => (
            format!(
                "  uint64_t policy;\n  asm volatile(\"createpolicy.fractional.L2::{}.b64 %0, 1.0;\" : \"=l\"(policy));\n",
                e.ptx()
            ),
            ".L2::cache_hint",
            format!(", %{}", first + rank),
            ", \"l\"(policy)",
        ),
        None => (String::new(), "", String::new(), ""),
    };
    format!(
        "static __device__ __forceinline__ void {name}(uint32_t dst, const CakeTensorMap* map, uint32_t bar{mc_param}, {}) {{\n{policy}  asm volatile(\n      \"cp.async.bulk.tensor.{rank}d.shared::cluster.global.mbarrier::complete_tx::bytes{mc_ptx}{hint_ptx} [%0], [%1, {{{}}}], [%2]{mc_operand}{hint_operand};\"\n      :: \"r\"(dst), \"l\"(map), \"r\"(bar){mc_input}{}{hint_input} : \"memory\");\n}}\n",
        params.join(", "),
        operands.join(", "),
        inputs.concat()
    )
}

/// The name suffix of a TMA load helper with an L2 eviction priority.
pub fn tma_load_suffix(evict: Option<cake_ir::Evict>) -> String {
    evict.map_or(String::new(), |e| format!("_evict_{}", e.as_str()))
}

/// `add`: `cake_tma_store_add_<rank>d`, which adds the tile into the tensor's elements at L2
/// (`cp.reduce.async.bulk.tensor ... .add`; the element type comes from the tensor map).
pub fn tma_store_fn(rank: usize, add: bool) -> String {
    let params: Vec<String> = (0..rank).map(|i| format!("int c{i}")).collect();
    let operands: Vec<String> = (0..rank).map(|i| format!("%{}", i + 2)).collect();
    let inputs: Vec<String> = (0..rank).map(|i| format!(", \"r\"(c{i})")).collect();
    let (name, op) = if add {
        (
            "store_add",
            format!("cp.reduce.async.bulk.tensor.{rank}d.global.shared::cta.add.tile"),
        )
    } else {
        (
            "store",
            format!("cp.async.bulk.tensor.{rank}d.global.shared::cta"),
        )
    };
    format!(
        "static __device__ __forceinline__ void cake_tma_{name}_{rank}d(const CakeTensorMap* map, uint32_t src, {}) {{\n  asm volatile(\"{op}.bulk_group [%0, {{{}}}], [%1];\"\n               :: \"l\"(map), \"r\"(src){} : \"memory\");\n}}\n",
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
// The prologue's half of the cluster barrier. Relaxed: the barrier inits it publishes are
// ordered by the initialising thread's fence.mbarrier_init.release.cluster.
static __device__ __forceinline__ void cake_cluster_arrive_relaxed() {
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
// The other half, once per thread, before its first access to a peer CTA: every CTA of the
// cluster has started and initialised its barriers.
static __device__ __forceinline__ void cake_cluster_wait_once(bool& waited) {
  if (!waited) {
    asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
    waited = true;
  }
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
// A wait that acquires at cluster scope: after it, what the arriving threads of every CTA wrote
// before their (release.cluster) arrivals is visible, in their shared memory too.
static __device__ __forceinline__ void cake_mbar_wait_cluster(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n"
      "CAKE_WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n\t"
      "@!done bra CAKE_WAIT_%=;\n\t}"
      :: "r"(bar), "r"(parity) : "memory");
}
// An f32 from the same shared-memory offset in CTA `cta` of the cluster (distributed shared
// memory).
static __device__ __forceinline__ float cake_ld_cluster_f32(uint32_t addr, uint32_t cta) {
  float v;
  asm volatile(
      "{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, %1, %2;\n\t"
      "ld.shared::cluster.f32 %0, [remote];\n\t}"
      : "=f"(v) : "r"(addr), "r"(cta) : "memory");
  return v;
}
// An i32 from the same shared-memory offset in CTA `cta` of the cluster.
static __device__ __forceinline__ int cake_ld_cluster_s32(uint32_t addr, uint32_t cta) {
  int v;
  asm volatile(
      "{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, %1, %2;\n\t"
      "ld.shared::cluster.s32 %0, [remote];\n\t}"
      : "=r"(v) : "r"(addr), "r"(cta) : "memory");
  return v;
}
// Two adjacent f32 (8-byte aligned) from CTA `cta` of the cluster in one remote load: an
// accumulator's column pair.
static __device__ __forceinline__ void cake_ld_cluster_v2_f32(uint32_t addr, uint32_t cta, float& a, float& b) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\tmapa.shared::cluster.u32 remote, %2, %3;\n\t"
      "ld.shared::cluster.v2.f32 {%0, %1}, [remote];\n\t}"
      : "=f"(a), "=f"(b) : "r"(addr), "r"(cta) : "memory");
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

/// Row-layout accesses with an L2 eviction priority (`lm.load(..., evict=)`,
/// `lm.store(..., evict=)`), for one priority: the helpers of [`ROW_OPS`] (and [`ROW_FP8`]'s
/// stores when `fp8`) with a `_evict_<priority>` suffix, whose 16-byte (8-byte for FP8) accesses
/// and one-value-per-row accesses carry a `createpolicy` policy as their `.L2::cache_hint`
/// operand. A chunk that is not whole or not aligned goes element by element through the plain
/// helper: the priority is a hint, and a row's tail is too small for it to matter.
pub fn row_hint_fns(evict: cake_ir::Evict, fp8: bool) -> String {
    let s = format!("_evict_{}", evict.as_str());
    let priority = evict.ptx();
    let mut out = format!(
        r#"
// L2 {priority}: the policy is pure (no side effect), so repeated uses share one register.
static __device__ __forceinline__ uint64_t cake_policy{s}() {{
  uint64_t p;
  asm("createpolicy.fractional.L2::{priority}.b64 %0, 1.0;" : "=l"(p));
  return p;
}}
static __device__ __forceinline__ uint4 cake_row_raw_b16{s}(const void* p) {{
  uint4 u;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {{%0, %1, %2, %3}}, [%4], %5;"
      : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(cake_policy{s}()));
  return u;
}}
static __device__ __forceinline__ cake_raw_b32 cake_row_raw_b32{s}(const void* p) {{
  const uint4* q = reinterpret_cast<const uint4*>(p);
  return {{cake_row_raw_b16{s}(q), cake_row_raw_b16{s}(q + 1)}};
}}
static __device__ __forceinline__ uint16_t cake_ldg{s}(const uint16_t* p) {{
  uint16_t v;
  asm("ld.global.nc.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(v) : "l"(p), "l"(cake_policy{s}()));
  return v;
}}
static __device__ __forceinline__ float cake_ldg{s}(const float* p) {{
  float v;
  asm("ld.global.nc.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(cake_policy{s}()));
  return v;
}}
static __device__ __forceinline__ int cake_ldg{s}(const int32_t* p) {{
  int v;
  asm("ld.global.nc.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(v) : "l"(p), "l"(cake_policy{s}()));
  return v;
}}
static __device__ __forceinline__ void cake_st16{s}(void* p, uint4 u) {{
  asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {{%1, %2, %3, %4}}, %5;"
               :: "l"(p), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w), "l"(cake_policy{s}()) : "memory");
}}
static __device__ __forceinline__ void cake_st{s}(uint16_t* p, uint16_t v) {{
  asm volatile("st.global.L2::cache_hint.b16 [%0], %1, %2;" :: "l"(p), "h"(v), "l"(cake_policy{s}()) : "memory");
}}
static __device__ __forceinline__ void cake_st{s}(float* p, float v) {{
  asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" :: "l"(p), "f"(v), "l"(cake_policy{s}()) : "memory");
}}
static __device__ __forceinline__ void cake_st{s}(int32_t* p, int32_t v) {{
  asm volatile("st.global.L2::cache_hint.b32 [%0], %1, %2;" :: "l"(p), "r"(v), "l"(cake_policy{s}()) : "memory");
}}
"#
    );
    // Loads: a whole, aligned chunk through the hinted raw read; anything else element by element.
    for (t, elem, raw, reg) in [
        ("bf16", "uint16_t", "b16", "float"),
        ("f16", "uint16_t", "b16", "float"),
        ("f32", "float", "b32", "float"),
        ("i32", "int32_t", "b32", "int"),
    ] {
        out.push_str(&format!(
            "static __device__ __forceinline__ void cake_row_ld8_{t}{s}({reg}* d, const {elem}* p, bool row_ok, int n, {reg} fill) {{\n  if (row_ok && n >= 8 && cake_aligned16(p)) cake_row_unpack_{t}(d, cake_row_raw_{raw}{s}(p));\n  else cake_row_ld8_{t}(d, p, row_ok, n, fill);\n}}\n"
        ));
    }
    // Stores: the chunk packed as the plain helper packs it, written with the policy.
    let mut stores: Vec<(&str, &str, &str, String)> = vec![
        ("bf16", "uint16_t", "cake_aligned16", pack16("cake_pack_bf16x2", &s)),
        ("f16", "uint16_t", "cake_aligned16", pack16("cake_pack_f16x2", &s)),
        (
            "f32",
            "float",
            "cake_aligned16",
            format!(
                "  cake_st16{s}(p, make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3])));\n  cake_st16{s}(p + 4, make_uint4(__float_as_uint(v[4]), __float_as_uint(v[5]), __float_as_uint(v[6]), __float_as_uint(v[7])));\n"
            ),
        ),
    ];
    if fp8 {
        out.push_str(&format!(
            "static __device__ __forceinline__ void cake_st8{s}(void* p, uint2 u) {{\n  asm volatile(\"st.global.L2::cache_hint.v2.u32 [%0], {{%1, %2}}, %3;\"\n               :: \"l\"(p), \"r\"(u.x), \"r\"(u.y), \"l\"(cake_policy{s}()) : \"memory\");\n}}\nstatic __device__ __forceinline__ void cake_st{s}(uint8_t* p, uint8_t v) {{\n  asm volatile(\"st.global.L2::cache_hint.b8 [%0], %1, %2;\" :: \"l\"(p), \"h\"((uint16_t)v), \"l\"(cake_policy{s}()) : \"memory\");\n}}\n"
        ));
        for (t, pack) in [("e4m3", "cake_pack_e4m3x2"), ("e5m2", "cake_pack_e5m2x2")] {
            stores.push((
                t,
                "uint8_t",
                "cake_aligned8",
                format!(
                    "  cake_st8{s}(p, make_uint2((uint32_t){pack}(v[0], v[1]) | ((uint32_t){pack}(v[2], v[3]) << 16),\n                          (uint32_t){pack}(v[4], v[5]) | ((uint32_t){pack}(v[6], v[7]) << 16)));\n"
                ),
            ));
        }
    }
    for (t, elem, aligned, body) in stores {
        out.push_str(&format!(
            "static __device__ __forceinline__ void cake_row_st8v_{t}{s}({elem}* p, const float* v) {{\n{body}}}\nstatic __device__ __forceinline__ void cake_row_st8_{t}{s}({elem}* p, const float* v, bool row_ok, int n) {{\n  if (row_ok && n >= 8 && {aligned}(p)) cake_row_st8v_{t}{s}(p, v);\n  else cake_row_st8_{t}(p, v, row_ok, n);\n}}\n"
        ));
    }
    out
}

/// The body of a hinted 16-byte store of eight 16-bit values packed in pairs by `pack`.
fn pack16(pack: &str, s: &str) -> String {
    format!(
        "  cake_st16{s}(p, make_uint4({pack}(v[0], v[1]), {pack}(v[2], v[3]), {pack}(v[4], v[5]), {pack}(v[6], v[7])));\n"
    )
}
