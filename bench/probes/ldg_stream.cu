// Probe (issue #19): does a weight streamed through the load units (ld.global, evict-first, into
// registers) draw more DRAM bandwidth than TMA on the swapped tinygemm's grid? The GEMV (plain
// 16-byte loads, short CTAs) streams its weight 4-16 % faster than a bare evict-first TMA stream
// of one long CTA per 64-row tile; short TMA grids did not close that (../results/2026-12-06-grid/)
// and cp.async without the hint was slower than TMA (../results/2026-12-06-regs-gemm/). These
// kernels read a bf16 weight B[N, K] and compute nothing but a running sum each thread keeps (its
// value is stored only if it equals an impossible constant, so the loads cannot be dropped):
//   ldg_rows<ROWS>        the GEMV's grid: 128-thread CTAs of ROWS rows, every load issued at once
//   ldg_tile<U>           the swapped schedule's grid: one 256-thread CTA per 64-row tile walking K
//                         in steps of 256 columns (a warp's load: one row's 512 bytes), U steps of
//                         loads in flight per thread
//   ldg_sts_tile<U>       ldg_tile whose steps go through a 4-stage ring in shared memory, as a
//                         weight must to reach wgmma: eight warps load and store a step, a ninth
//                         waits on the stage's full barrier and releases it
// Built by bench/ldg_probe.sh; timed by bench/ldg_probe.py beside the TMA stream and the GEMV.
#include <cstdint>

static __device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
static __device__ __forceinline__ uint4 ldg_ef(const void* p, uint64_t pol) {
  uint4 u;
  asm("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p), "l"(pol));
  return u;
}
static __device__ __forceinline__ uint32_t fold(uint4 u) { return u.x ^ u.y ^ u.z ^ u.w; }
static __device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
static __device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
static __device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
static __device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}"
      :: "r"(bar), "r"(parity) : "memory");
}
// The sum's only use: never true for the weights the probe reads (normal bf16 values).
static __device__ __forceinline__ void keep(uint32_t s, float* out) {
  if (s == 0x7fc00001u) out[threadIdx.x] = __uint_as_float(s);
}

// The GEMV's grid: a CTA of 128 threads takes ROWS rows and issues every load before it uses any.
template <int ROWS>
__device__ void ldg_rows(const uint16_t* B, float* out, int N, int K) {
  const uint64_t pol = policy_evict_first();
  const int row0 = blockIdx.x * ROWS, chunks = K / 8;
  uint32_t s = 0;
  for (int c0 = 0; c0 < chunks; c0 += 128 * 4) {
    uint4 v[ROWS][4];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int c = c0 + threadIdx.x + 128 * j;
        v[r][j] = (row0 + r < N && c < chunks)
                      ? ldg_ef(B + (size_t)(row0 + r) * K + 8 * c, pol) : make_uint4(0, 0, 0, 0);
      }
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int j = 0; j < 4; ++j) s += fold(v[r][j]);
  }
  keep(s, out);
}
extern "C" __global__ void __launch_bounds__(128) ldg_rows1(const uint16_t* B, float* out, int N, int K) { ldg_rows<1>(B, out, N, K); }
extern "C" __global__ void __launch_bounds__(128) ldg_rows2(const uint16_t* B, float* out, int N, int K) { ldg_rows<2>(B, out, N, K); }
extern "C" __global__ void __launch_bounds__(128) ldg_rows4(const uint16_t* B, float* out, int N, int K) { ldg_rows<4>(B, out, N, K); }

// One step: the tile's 64 rows x 256 columns, 2048 pieces of 16 bytes, 8 per thread; piece
// t + 256 j is row (t + 256 j) / 32, so warp w reads rows w, w + 8, ... one 512-byte run each.
// N must be a multiple of 64 and K of 256 (all five weights are): no bounds checks, which would
// let ptxas consume each load before it issues the next. A step past the end loads nothing.
static __device__ __forceinline__ void load_step(uint4 (&v)[8], const uint16_t* B, int row0,
                                                 int step, int steps, int K, uint64_t pol, int t) {
  if (step >= steps) return;
  const int col0 = step * 256;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int piece = t + 256 * j;
    v[j] = ldg_ef(B + (size_t)(row0 + piece / 32) * K + col0 + 8 * (piece % 32), pol);
  }
}

template <int U>
__device__ void ldg_tile(const uint16_t* B, float* out, int N, int K) {
  const uint64_t pol = policy_evict_first();
  const int row0 = blockIdx.x * 64, steps = (K + 255) / 256, t = threadIdx.x;
  uint32_t s = 0;
  for (int k0 = 0; k0 < steps; k0 += U) {
    uint4 v[U][8];
#pragma unroll
    for (int u = 0; u < U; ++u) load_step(v[u], B, row0, k0 + u, steps, K, pol, t);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int j = 0; j < 8; ++j) s += fold(v[u][j]);
  }
  keep(s, out);
}
extern "C" __global__ void __launch_bounds__(256) ldg_tile1(const uint16_t* B, float* out, int N, int K) { ldg_tile<1>(B, out, N, K); }
extern "C" __global__ void __launch_bounds__(256) ldg_tile2(const uint16_t* B, float* out, int N, int K) { ldg_tile<2>(B, out, N, K); }
extern "C" __global__ void __launch_bounds__(256) ldg_tile4(const uint16_t* B, float* out, int N, int K) { ldg_tile<4>(B, out, N, K); }

// ldg_tile through a ring of 4 stages of 32 KB: warps 0-7 load step k + U - 1 while they store
// step k into its stage (the load of a step waits U - 1 steps in registers), arrive on the
// stage's full barrier; warp 8 waits on it and releases the stage (the consumer's part, without
// the MMA). Each 16-byte piece is stored where it was read from, row-major (no swizzle: a warp's
// 32 pieces are one row's 512 contiguous bytes, conflict-free).
constexpr int STAGES = 4;
template <int U>
__device__ void ldg_sts_tile(const uint16_t* B, float* out, int N, int K) {
  extern __shared__ __align__(128) uint4 ring[];  // STAGES x 2048 pieces
  __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
  const int row0 = blockIdx.x * 64, steps = (K + 255) / 256, t = threadIdx.x;
  if (t == 0) {
    for (int i = 0; i < STAGES; ++i) { mbar_init(smem_u32(&full[i]), 256); mbar_init(smem_u32(&empty[i]), 1); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (t >= 256) {  // the consumer warp
    if (t != 256) return;
    uint32_t s = 0;
    for (int k = 0; k < steps; ++k) {
      mbar_wait(smem_u32(&full[k % STAGES]), (k / STAGES) & 1);
      s += ring[(k % STAGES) * 2048 + (k & 2047)].x;
      mbar_arrive(smem_u32(&empty[k % STAGES]));
    }
    keep(s, out);
    return;
  }
  const uint64_t pol = policy_evict_first();
  uint4 v[U][8];
#pragma unroll
  for (int u = 0; u < U - 1; ++u) load_step(v[u], B, row0, u, steps, K, pol, t);
  for (int k0 = 0; k0 < steps; k0 += U) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int k = k0 + u;
      if (k >= steps) break;
      // Step k + U - 1 goes into the registers step k - 1 left.
      load_step(v[(u + U - 1) % U], B, row0, k + U - 1, steps, K, pol, t);
      if (k >= STAGES) mbar_wait(smem_u32(&empty[k % STAGES]), ((k / STAGES) - 1) & 1);
#pragma unroll
      for (int j = 0; j < 8; ++j) ring[(k % STAGES) * 2048 + t + 256 * j] = v[u][j];
      mbar_arrive(smem_u32(&full[k % STAGES]));
    }
  }
}
extern "C" __global__ void __launch_bounds__(288) ldg_sts_tile2(const uint16_t* B, float* out, int N, int K) { ldg_sts_tile<2>(B, out, N, K); }
extern "C" __global__ void __launch_bounds__(288) ldg_sts_tile4(const uint16_t* B, float* out, int N, int K) { ldg_sts_tile<4>(B, out, N, K); }
