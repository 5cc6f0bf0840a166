// Hand-written CUDA reference kernels for the row-kernel ceiling (issue #20): what a person
// writing RMSNorm (and a plain copy) by hand reaches on the H200 at H = 4096, so the gap between
// Cake's schedule and hand code is measured rather than guessed. Built on the build machine by
// bench/rows_hand.sh into cubins with launch.json files `cake.load_kernel` reads; timed by
// bench/rows_hand.py next to torch and the shipped schedule. Every kernel has the shipped
// schedule's signature (X, W, Y, R, eps); the copies ignore W and eps.
#include <cstdint>

#define H 4096
#define CHUNKS (H / 8)  // 16-byte chunks per row

static __device__ __forceinline__ float lo(uint32_t u) { return __uint_as_float(u << 16); }
static __device__ __forceinline__ float hi(uint32_t u) { return __uint_as_float(u & 0xffff0000u); }
static __device__ __forceinline__ uint32_t pack(float a, float b) {
  uint32_t d;  // a in the low half, b in the high half, round to nearest even
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(b), "f"(a));
  return d;
}
static __device__ __forceinline__ float sq(uint4 u) {
  float s = lo(u.x) * lo(u.x);
  s = fmaf(hi(u.x), hi(u.x), s); s = fmaf(lo(u.y), lo(u.y), s); s = fmaf(hi(u.y), hi(u.y), s);
  s = fmaf(lo(u.z), lo(u.z), s); s = fmaf(hi(u.z), hi(u.z), s); s = fmaf(lo(u.w), lo(u.w), s);
  return fmaf(hi(u.w), hi(u.w), s);
}
static __device__ __forceinline__ uint4 norm(uint4 x, uint4 w, float r) {
  uint4 o;
  o.x = pack(lo(x.x) * r * lo(w.x), hi(x.x) * r * hi(w.x));
  o.y = pack(lo(x.y) * r * lo(w.y), hi(x.y) * r * hi(w.y));
  o.z = pack(lo(x.z) * r * lo(w.z), hi(x.z) * r * hi(w.z));
  o.w = pack(lo(x.w) * r * lo(w.w), hi(x.w) * r * hi(w.w));
  return o;
}
static __device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ---- copies: the ceiling -----------------------------------------------------------------
// Grid-stride, UNROLL 16-byte loads issued before the first store.
template <int UNROLL>
__device__ void copy_v4(const uint16_t* X, uint16_t* Y, int R) {
  const size_t n = (size_t)R * CHUNKS;
  const uint4* x = reinterpret_cast<const uint4*>(X);
  uint4* y = reinterpret_cast<uint4*>(Y);
  const size_t step = (size_t)gridDim.x * blockDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step * UNROLL) {
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) if (i + u * step < n) v[u] = __ldg(x + i + u * step);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) if (i + u * step < n) y[i + u * step] = v[u];
  }
}
extern "C" __global__ void __launch_bounds__(256) copy_u4(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_v4<4>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(256) copy_u1(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_v4<1>(X, Y, R); }

// ---- L2 cache policies on the stream (2026-12-03): the harness flushes L2 by writing, so a
// timed kernel starts with dirty lines its own traffic evicts and writes back; loads and stores
// that ask L2 to evict their own lines first may leave those dirty lines alone (what
// evict_first did for tinygemm's weight). MODE 1: .cs (cache-streaming) loads and stores;
// MODE 2: an L2::evict_first policy on the loads and stores; MODE 3: on the loads only.
template <int MODE>
static __device__ __forceinline__ uint4 ld_policy(const uint4* p, uint64_t pol) {
  if (MODE == 1) return __ldcs(p);
  if (MODE >= 2) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(pol));
    return v;
  }
  return __ldg(p);
}
template <int MODE>
static __device__ __forceinline__ void st_policy(uint4* p, uint4 v, uint64_t pol) {
  if (MODE == 1) { __stcs(p, v); return; }
  if (MODE == 2) {
    asm volatile("st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, %5;"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "l"(pol) : "memory");
    return;
  }
  *p = v;
}
static __device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  return pol;
}
// ---- RMSNorm, rows in registers as packed bf16 (half the registers of f32) ----------------
// ROWS rows per CTA of 128 threads; each thread holds 4 chunks of each row.
template <int ROWS, int MODE = 0>
__device__ void rms_packed(const uint16_t* X, const uint16_t* W, uint16_t* Y, int R, float eps) {
  __shared__ float red[ROWS][4];
  const uint64_t pol = MODE >= 2 ? evict_first_policy() : 0;
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row0 = blockIdx.x * ROWS;
  uint4 raw[ROWS][4];
#pragma unroll
  for (int c = 0; c < 4; ++c)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      raw[r][c] = row0 + r < R ? ld_policy<MODE>(reinterpret_cast<const uint4*>(X + (size_t)(row0 + r) * H) + t + 128 * c, pol) : make_uint4(0, 0, 0, 0);
  float s[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    s[r] = 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) s[r] += sq(raw[r][c]);
    s[r] = warp_sum(s[r]);
    if (lane == 0) red[r][warp] = s[r];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < ROWS; ++r) s[r] = rsqrtf((red[r][0] + red[r][1] + red[r][2] + red[r][3]) * (1.0f / H) + eps);
#pragma unroll
  for (int c = 0; c < 4; ++c) {
    const uint4 w = __ldg(reinterpret_cast<const uint4*>(W) + t + 128 * c);
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
      if (row0 + r < R) st_policy<MODE>(reinterpret_cast<uint4*>(Y + (size_t)(row0 + r) * H) + t + 128 * c, norm(raw[r][c], w, s[r]), pol);
  }
}
extern "C" __global__ void __launch_bounds__(128) rms_packed1(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<1>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128) rms_packed2(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<2>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128) rms_packed4(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<4>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128) rms_packed2_cs(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<2, 1>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128) rms_packed2_ef(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<2, 2>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128) rms_packed2_efload(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<2, 3>(X, W, Y, R, eps); }

// ---- RMSNorm, persistent rows with the next row's loads in flight -------------------------
extern "C" __global__ void __launch_bounds__(128) rms_prefetch(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) {
  __shared__ float red[2][4];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  uint4 cur[4], nxt[4];
  int row = blockIdx.x;
#pragma unroll
  for (int c = 0; c < 4; ++c) cur[c] = row < R ? __ldg(reinterpret_cast<const uint4*>(X + (size_t)row * H) + t + 128 * c) : make_uint4(0, 0, 0, 0);
  for (int it = 0; row < R; row += gridDim.x, ++it) {
    const int next = row + gridDim.x;
#pragma unroll
    for (int c = 0; c < 4; ++c) nxt[c] = next < R ? __ldg(reinterpret_cast<const uint4*>(X + (size_t)next * H) + t + 128 * c) : make_uint4(0, 0, 0, 0);
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) s += sq(cur[c]);
    s = warp_sum(s);
    if (lane == 0) red[it & 1][warp] = s;
    __syncthreads();
    const float r = rsqrtf((red[it & 1][0] + red[it & 1][1] + red[it & 1][2] + red[it & 1][3]) * (1.0f / H) + eps);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint4 w = __ldg(reinterpret_cast<const uint4*>(W) + t + 128 * c);
      reinterpret_cast<uint4*>(Y + (size_t)row * H)[t + 128 * c] = norm(cur[c], w, r);
      cur[c] = nxt[c];
    }
  }
}

// ---- bulk copies through shared memory (cp.async.bulk), persistent ------------------------
static __device__ __forceinline__ uint32_t smem_u32(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void mbar_init(uint32_t b, int n) { asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(b), "r"(n)); }
static __device__ __forceinline__ void mbar_expect(uint32_t b, uint32_t tx) { asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(tx) : "memory"); }
static __device__ __forceinline__ void mbar_arrive(uint32_t b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory"); }
static __device__ __forceinline__ void mbar_wait(uint32_t b, uint32_t parity) {
  asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}" ::"r"(b), "r"(parity) : "memory");
}
static __device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
static __device__ __forceinline__ void bulk_store(void* dst, uint32_t src, uint32_t bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
template <int N> static __device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory"); }

// One thread streams CHUNK-byte pieces through STAGES buffers: load i+STAGES-1 is issued while
// piece i is stored.
template <int STAGES, int CHUNK>
__device__ void copy_bulk(const uint16_t* X, uint16_t* Y, int R) {
  extern __shared__ __align__(128) uint8_t buf[];
  __shared__ __align__(8) uint64_t full[STAGES];
  if (threadIdx.x != 0) return;
  const size_t bytes = (size_t)R * H * 2, pieces = bytes / CHUNK;
  for (int s = 0; s < STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const char* x = reinterpret_cast<const char*>(X);
  char* y = reinterpret_cast<char*>(Y);
  size_t first = blockIdx.x;
  int k = 0;  // pieces of this CTA: first + k * gridDim.x
  for (int s = 0; s < STAGES; ++s) {
    size_t p = first + (size_t)s * gridDim.x;
    if (p < pieces) { mbar_expect(smem_u32(&full[s]), CHUNK); bulk_load(smem_u32(buf + s * CHUNK), x + p * CHUNK, CHUNK, smem_u32(&full[s])); }
  }
  for (size_t p = first; p < pieces; p += gridDim.x, ++k) {
    const int s = k % STAGES;
    mbar_wait(smem_u32(&full[s]), (k / STAGES) & 1);
    bulk_store(y + p * CHUNK, smem_u32(buf + s * CHUNK), CHUNK);
    // Refill the previous piece's stage once its store has read it.
    if (k > 0) {
      bulk_wait_read<1>();
      const int ps = (k - 1) % STAGES;
      const size_t np = p + (size_t)(STAGES - 1) * gridDim.x;
      if (np < pieces) { mbar_expect(smem_u32(&full[ps]), CHUNK); bulk_load(smem_u32(buf + ps * CHUNK), x + np * CHUNK, CHUNK, smem_u32(&full[ps])); }
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
extern "C" __global__ void __launch_bounds__(32) copy_bulk8x16k(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_bulk<8, 16384>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(32) copy_bulk4x16k(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_bulk<4, 16384>(X, Y, R); }

// ---- RMSNorm, rows streamed into shared memory by cp.async.bulk, persistent ----------------
// Warp 4 issues the loads (one 8 KB row per stage); warps 0-3 reduce and write from shared
// memory with 16-byte global stores, then free the stage.
template <int STAGES>
__device__ void rms_bulk(const uint16_t* X, const uint16_t* W, uint16_t* Y, int R, float eps) {
  extern __shared__ __align__(128) uint8_t buf[];
  __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
  __shared__ float red[2][4];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  if (t == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(smem_u32(&full[s]), 1); mbar_init(smem_u32(&empty[s]), 4); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 4) {
    if (lane != 0) return;
    int k = 0;
    for (int row = blockIdx.x; row < R; row += gridDim.x, ++k) {
      const int s = k % STAGES;
      if (k >= STAGES) mbar_wait(smem_u32(&empty[s]), ((k / STAGES) - 1) & 1);
      mbar_expect(smem_u32(&full[s]), H * 2);
      bulk_load(smem_u32(buf + s * H * 2), X + (size_t)row * H, H * 2, smem_u32(&full[s]));
    }
    return;
  }
  uint4 w[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) w[c] = __ldg(reinterpret_cast<const uint4*>(W) + t + 128 * c);
  int k = 0;
  for (int row = blockIdx.x; row < R; row += gridDim.x, ++k) {
    const int s = k % STAGES;
    mbar_wait(smem_u32(&full[s]), (k / STAGES) & 1);
    const uint4* xs = reinterpret_cast<const uint4*>(buf + s * H * 2);
    uint4 x[4];
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) { x[c] = xs[t + 128 * c]; sum += sq(x[c]); }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_u32(&empty[s]));
    sum = warp_sum(sum);
    if (lane == 0) red[k & 1][warp] = sum;
    asm volatile("bar.sync 1, 128;" ::: "memory");
    const float r = rsqrtf((red[k & 1][0] + red[k & 1][1] + red[k & 1][2] + red[k & 1][3]) * (1.0f / H) + eps);
#pragma unroll
    for (int c = 0; c < 4; ++c) reinterpret_cast<uint4*>(Y + (size_t)row * H)[t + 128 * c] = norm(x[c], w[c], r);
  }
}
extern "C" __global__ void __launch_bounds__(160) rms_bulk4(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_bulk<4>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(160) rms_bulk8(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_bulk<8>(X, W, Y, R, eps); }

// ---- fine-grained copies: one short-lived CTA per UNROLL * 128 chunks (torch's shape) --------
template <int UNROLL, int MODE = 0>
__device__ void copy_fine(const uint16_t* X, uint16_t* Y, int R) {
  const uint64_t pol = MODE >= 2 ? evict_first_policy() : 0;
  const size_t n = (size_t)R * CHUNKS;
  const size_t base = (size_t)blockIdx.x * 128 * UNROLL + threadIdx.x;
  uint4 v[UNROLL];
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) if (base + u * 128 < n) v[u] = ld_policy<MODE>(reinterpret_cast<const uint4*>(X) + base + u * 128, pol);
#pragma unroll
  for (int u = 0; u < UNROLL; ++u) if (base + u * 128 < n) st_policy<MODE>(reinterpret_cast<uint4*>(Y) + base + u * 128, v[u], pol);
}
extern "C" __global__ void __launch_bounds__(128) copy_fine1(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_fine<1>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(128) copy_fine2(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_fine<2>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(128) copy_fine4(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_fine<4>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(128) copy_fine8(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_fine<8>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(128) copy_fine1_cs(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_fine<1, 1>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(128) copy_fine1_ef(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_fine<1, 2>(X, Y, R); }

// ---- RMSNorm, one row per CTA of THREADS threads (CHUNKS / THREADS chunks each, packed) ------
template <int THREADS>
__device__ void rms_cta(const uint16_t* X, const uint16_t* W, uint16_t* Y, int R, float eps) {
  constexpr int PER = CHUNKS / THREADS, WARPS = THREADS / 32;
  __shared__ float red[WARPS];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32, row = blockIdx.x;
  uint4 raw[PER];
#pragma unroll
  for (int c = 0; c < PER; ++c) raw[c] = __ldg(reinterpret_cast<const uint4*>(X + (size_t)row * H) + t + THREADS * c);
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < PER; ++c) s += sq(raw[c]);
  s = warp_sum(s);
  if (lane == 0) red[warp] = s;
  __syncthreads();
  s = 0.f;
#pragma unroll
  for (int w = 0; w < WARPS; ++w) s += red[w];
  const float r = rsqrtf(s * (1.0f / H) + eps);
#pragma unroll
  for (int c = 0; c < PER; ++c) {
    const uint4 w = __ldg(reinterpret_cast<const uint4*>(W) + t + THREADS * c);
    reinterpret_cast<uint4*>(Y + (size_t)row * H)[t + THREADS * c] = norm(raw[c], w, r);
  }
}
extern "C" __global__ void __launch_bounds__(64) rms_cta64(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_cta<64>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(256) rms_cta256(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_cta<256>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(512) rms_cta512(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_cta<512>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128, 8) rms_packed2_o8(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_packed<2>(X, W, Y, R, eps); }

// ---- dynamic persistent forms (2026-12-06): CTAs take their next piece from a global counter --
// The static persistent forms above lost 4-7 % to short CTAs (2026-12-02-rows-ceiling/), copies
// included, which have no row dependence: is the loss the static split itself (SMs drawing
// unequal shares of DRAM, the slowest setting the end)? Here each CTA grabs pieces with
// atomicAdd, one grab ahead of its use, so whichever CTA frees a stage first takes the next piece.
// The counters are module globals (zero at load) that the last CTA to leave resets, so every
// launch starts from zero without a memset.
__device__ unsigned int g_next[8], g_done[8];  // one pair per kernel (ID)
template <int ID>
static __device__ __forceinline__ void leave() {  // one thread per CTA, after its last grab
  __threadfence();
  if (atomicAdd(&g_done[ID], 1u) == gridDim.x - 1) {
    g_next[ID] = 0;
    g_done[ID] = 0;
    __threadfence();
  }
}

// One thread streams CHUNK-byte pieces through STAGES buffers, pieces taken from the counter.
template <int ID, int STAGES, int CHUNK>
__device__ void copy_bulk_dyn(const uint16_t* X, uint16_t* Y, int R) {
  extern __shared__ __align__(128) uint8_t buf[];
  __shared__ __align__(8) uint64_t full[STAGES];
  __shared__ unsigned int piece[STAGES];
  if (threadIdx.x != 0) return;
  const unsigned int pieces = (unsigned int)((size_t)R * H * 2 / CHUNK);
  for (int s = 0; s < STAGES; ++s) mbar_init(smem_u32(&full[s]), 1);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  const char* x = reinterpret_cast<const char*>(X);
  char* y = reinterpret_cast<char*>(Y);
  unsigned int pending = atomicAdd(&g_next[ID], 1u);
  bool out = false;  // a grab came back past the end: no more grabs
  int filled = 0;    // fill j goes to stage j % STAGES
  auto fill = [&](int s) {
    const unsigned int p = pending;
    if (p >= pieces) { out = true; return; }
    pending = atomicAdd(&g_next[ID], 1u);
    piece[s] = p;
    mbar_expect(smem_u32(&full[s]), CHUNK);
    bulk_load(smem_u32(buf + s * CHUNK), x + (size_t)p * CHUNK, CHUNK, smem_u32(&full[s]));
    ++filled;
  };
  for (int s = 0; s < STAGES && !out; ++s) fill(s);
  for (int k = 0; k < filled; ++k) {
    const int s = k % STAGES;
    mbar_wait(smem_u32(&full[s]), (k / STAGES) & 1);
    bulk_store(y + (size_t)piece[s] * CHUNK, smem_u32(buf + s * CHUNK), CHUNK);
    if (k > 0 && !out) {  // refill the previous stage once its store has read it
      bulk_wait_read<1>();
      fill((k - 1) % STAGES);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  leave<ID>();
}
extern "C" __global__ void __launch_bounds__(32) copy_bulk_dyn8x16k(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_bulk_dyn<0, 8, 16384>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(32) copy_bulk_dyn4x16k(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_bulk_dyn<1, 4, 16384>(X, Y, R); }
extern "C" __global__ void __launch_bounds__(32) copy_bulk_dyn8x8k(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { copy_bulk_dyn<2, 8, 8192>(X, Y, R); }

// rms_bulk with rows from the counter: warp 4's lane 0 grabs a row, writes its index beside the
// stage and loads it; -1 tells the consumers there are no more rows.
template <int ID, int STAGES>
__device__ void rms_bulk_dyn(const uint16_t* X, const uint16_t* W, uint16_t* Y, int R, float eps) {
  extern __shared__ __align__(128) uint8_t buf[];
  __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
  __shared__ int row_of[STAGES];
  __shared__ float red[2][4];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  if (t == 0) {
    for (int s = 0; s < STAGES; ++s) { mbar_init(smem_u32(&full[s]), 1); mbar_init(smem_u32(&empty[s]), 4); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (warp == 4) {
    if (lane != 0) return;
    unsigned int pending = atomicAdd(&g_next[ID], 1u);
    for (int k = 0;; ++k) {
      const int s = k % STAGES;
      if (k >= STAGES) mbar_wait(smem_u32(&empty[s]), ((k / STAGES) - 1) & 1);
      const unsigned int row = pending;
      if (row >= (unsigned int)R) {
        row_of[s] = -1;
        mbar_arrive(smem_u32(&full[s]));
        return;
      }
      pending = atomicAdd(&g_next[ID], 1u);
      row_of[s] = (int)row;
      mbar_expect(smem_u32(&full[s]), H * 2);
      bulk_load(smem_u32(buf + s * H * 2), X + (size_t)row * H, H * 2, smem_u32(&full[s]));
    }
  }
  uint4 w[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) w[c] = __ldg(reinterpret_cast<const uint4*>(W) + t + 128 * c);
  for (int k = 0;; ++k) {
    const int s = k % STAGES;
    mbar_wait(smem_u32(&full[s]), (k / STAGES) & 1);
    const int row = row_of[s];
    if (row < 0) break;
    const uint4* xs = reinterpret_cast<const uint4*>(buf + s * H * 2);
    uint4 x[4];
    float sum = 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) { x[c] = xs[t + 128 * c]; sum += sq(x[c]); }
    __syncwarp();
    if (lane == 0) mbar_arrive(smem_u32(&empty[s]));
    sum = warp_sum(sum);
    if (lane == 0) red[k & 1][warp] = sum;
    asm volatile("bar.sync 1, 128;" ::: "memory");
    const float r = rsqrtf((red[k & 1][0] + red[k & 1][1] + red[k & 1][2] + red[k & 1][3]) * (1.0f / H) + eps);
#pragma unroll
    for (int c = 0; c < 4; ++c) reinterpret_cast<uint4*>(Y + (size_t)row * H)[t + 128 * c] = norm(x[c], w[c], r);
  }
  if (t == 0) leave<ID>();
}
extern "C" __global__ void __launch_bounds__(160) rms_bulk_dyn4(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_bulk_dyn<3, 4>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(160) rms_bulk_dyn8(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_bulk_dyn<4, 8>(X, W, Y, R, eps); }

// rms_prefetch with rows from the counter: thread 0 grabs the row after next while this row is
// reduced; the grab is published by the reduction's barrier one iteration later.
template <int ID>
__device__ void rms_reg_dyn(const uint16_t* X, const uint16_t* W, uint16_t* Y, int R, float eps) {
  __shared__ float red[2][4];
  __shared__ int first[2], next_row[2];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  unsigned int pending = 0;
  if (t == 0) {
    first[0] = (int)min(atomicAdd(&g_next[ID], 1u), (unsigned int)R);
    first[1] = (int)min(atomicAdd(&g_next[ID], 1u), (unsigned int)R);
    pending = atomicAdd(&g_next[ID], 1u);
  }
  __syncthreads();
  int row = first[0], next = first[1];
  uint4 cur[4], nxt[4];
#pragma unroll
  for (int c = 0; c < 4; ++c) cur[c] = row < R ? __ldg(reinterpret_cast<const uint4*>(X + (size_t)row * H) + t + 128 * c) : make_uint4(0, 0, 0, 0);
  for (int it = 0; row < R; ++it) {
#pragma unroll
    for (int c = 0; c < 4; ++c) nxt[c] = next < R ? __ldg(reinterpret_cast<const uint4*>(X + (size_t)next * H) + t + 128 * c) : make_uint4(0, 0, 0, 0);
    if (t == 0) {  // publish the grab of one iteration ago, issue the next
      next_row[it & 1] = (int)min(pending, (unsigned int)R);
      if (pending < (unsigned int)R) pending = atomicAdd(&g_next[ID], 1u);
    }
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < 4; ++c) s += sq(cur[c]);
    s = warp_sum(s);
    if (lane == 0) red[it & 1][warp] = s;
    __syncthreads();
    const float r = rsqrtf((red[it & 1][0] + red[it & 1][1] + red[it & 1][2] + red[it & 1][3]) * (1.0f / H) + eps);
    const int after = next_row[it & 1];
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint4 w = __ldg(reinterpret_cast<const uint4*>(W) + t + 128 * c);
      reinterpret_cast<uint4*>(Y + (size_t)row * H)[t + 128 * c] = norm(cur[c], w, r);
      cur[c] = nxt[c];
    }
    row = next;
    next = after;
  }
  if (t == 0) {
    asm volatile("" ::"r"(pending));  // the last grab has come back before the count is left
    leave<ID>();
  }
}
extern "C" __global__ void __launch_bounds__(128) rms_reg_dyn(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_reg_dyn<5>(X, W, Y, R, eps); }

// ---- RMSNorm, short-lived CTAs with rows staged in shared memory (session 51) ----------------
// The register forms hold a row in registers from its loads to its stores, which caps them at
// 6 CTAs (12 rows) per SM. Here one thread loads the CTA's ROWS rows with cp.async.bulk (8 KB
// each) into shared memory and the threads read them twice (the sum, then the scaled stores),
// so a CTA holds few registers and an SM keeps 16-25 rows in flight (by the ptxas counts of
// bench/results/2026-12-10-h200-rows-ab/, call 5); no CTA outlives its rows.
template <int ROWS, int THREADS, bool BULK_STORE = false>
__device__ void rms_smem(const uint16_t* X, const uint16_t* W, uint16_t* Y, int R, float eps) {
  extern __shared__ __align__(128) uint8_t buf[];
  __shared__ __align__(8) uint64_t full;
  constexpr int WARPS = THREADS / 32, PER = CHUNKS / THREADS;
  __shared__ float red[ROWS][WARPS];
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int row0 = blockIdx.x * ROWS, rows = min(ROWS, R - row0);
  if (t == 0) {
    mbar_init(smem_u32(&full), 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    mbar_expect(smem_u32(&full), rows * H * 2);
    for (int r = 0; r < rows; ++r) bulk_load(smem_u32(buf + r * H * 2), X + (size_t)(row0 + r) * H, H * 2, smem_u32(&full));
  }
  __syncthreads();  // the barrier's init before anyone waits on it
  mbar_wait(smem_u32(&full), 0);
  const uint4* xs = reinterpret_cast<const uint4*>(buf);
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < PER; ++c) s += sq(xs[r * CHUNKS + t + THREADS * c]);
    s = warp_sum(s);
    if (lane == 0) red[r][warp] = s;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    if (r >= rows) break;
    float tot = 0.f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) tot += red[r][w];
    const float rs = rsqrtf(tot * (1.0f / H) + eps);
#pragma unroll
    for (int c = 0; c < PER; ++c) {
      const uint4 w = __ldg(reinterpret_cast<const uint4*>(W) + t + THREADS * c);
      const uint4 y = norm(xs[r * CHUNKS + t + THREADS * c], w, rs);
      if (BULK_STORE)
        const_cast<uint4*>(xs)[r * CHUNKS + t + THREADS * c] = y;
      else
        reinterpret_cast<uint4*>(Y + (size_t)(row0 + r) * H)[t + THREADS * c] = y;
    }
  }
  if (BULK_STORE) {  // the rows written back in place, stored by one thread in one piece each
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (t == 0) {
      for (int r = 0; r < rows; ++r)
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(Y + (size_t)(row0 + r) * H), "r"(smem_u32(buf + r * H * 2)), "r"(H * 2) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      bulk_wait_read<0>();  // shared memory stays the CTA's until the stores have read it
    }
  }
}
// 32 registers, so that 16 CTAs (the threads' limit) fit an SM.
extern "C" __global__ void __launch_bounds__(128, 16) rms_smem1(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_smem<1, 128>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128, 16) rms_smem1_bs(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_smem<1, 128, true>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(128) rms_smem2(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_smem<2, 128>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(64) rms_smem1_t64(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_smem<1, 64>(X, W, Y, R, eps); }
extern "C" __global__ void __launch_bounds__(256) rms_smem2_t256(uint16_t* X, uint16_t* W, uint16_t* Y, int R, float eps) { rms_smem<2, 256>(X, W, Y, R, eps); }
