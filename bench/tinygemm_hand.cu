// Hand-written small-M GEMM C = A · Bᵀ (bf16, f32 accumulation) for issue #19's question: does a
// tensor-core kernel that streams the weight the way the GEMV does (plain 16-byte loads straight
// into registers, every SM busy, no shared-memory ring) beat the swapped TMA schedule at M 4-64?
//
// The weight's rows are mma.sync's 16-row side and the tokens its 8-column side. The K order is
// permuted: thread (g = lane / 4, c = lane % 4) loads 8 consecutive columns 8c..8c+7 of its weight
// rows g and g + 8 and of token g with one 16-byte load each, and feeds them to two m16n8k16 MMAs
// as if they were the fragment's k pairs {2c, 2c+8} of each; A and B are permuted alike, so the sum
// over k is unchanged. A warp owns RT 16-row tiles over 1/WK of K; the CTA's WK warps add their
// partial tiles in shared memory and store C. Loads are batched U k32-steps at a time.
#include <stdint.h>

typedef uint16_t bf16_bits;  // bf16 as stored (the toolchain here has no cuda_bf16.h headers)

__device__ __forceinline__ bf16_bits to_bf16(float v) {
  uint16_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}

__device__ __forceinline__ uint64_t policy_evict_first() {
  uint64_t p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}

__device__ __forceinline__ uint4 load_weight(const void* ptr, uint64_t pol) {
  uint4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr), "l"(pol));
  return v;
}

__device__ __forceinline__ uint4 load_token(const void* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int RT, int WK, int NT, int U>
__device__ __forceinline__ void tinygemm_regs(const bf16_bits* __restrict__ A,
                                              const bf16_bits* __restrict__ B,
                                              bf16_bits* __restrict__ C, int M, int N, int K) {
  extern __shared__ float red[];  // [WK][RT * NT * 4][32]
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, c = lane % 4;
  const int row0 = blockIdx.x * 16 * RT;
  const int steps = K / 32;  // k32 steps (the contract's K are multiples of 256)
  const int s_begin = steps * warp / WK, s_end = steps * (warp + 1) / WK;
  const uint64_t pol = policy_evict_first();

  const bf16_bits* wrow[RT][2];
#pragma unroll
  for (int t = 0; t < RT; ++t) {
    int r = row0 + 16 * t + g;
    wrow[t][0] = B + (size_t)min(r, N - 1) * K + 8 * c;
    wrow[t][1] = B + (size_t)min(r + 8, N - 1) * K + 8 * c;
  }
  const bf16_bits* trow[NT];
  bool tok_ok[NT];
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    int m = 8 * j + g;
    tok_ok[j] = m < M;
    trow[j] = A + (size_t)min(m, M - 1) * K + 8 * c;
  }

  float acc[RT][NT][4];
#pragma unroll
  for (int t = 0; t < RT; ++t)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[t][j][r] = 0.f;

  int s = s_begin;
  for (; s + U <= s_end; s += U) {
    uint4 w[U][RT][2], x[U][NT];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int col = (s + u) * 32;
#pragma unroll
      for (int t = 0; t < RT; ++t) {
        w[u][t][0] = load_weight(wrow[t][0] + col, pol);
        w[u][t][1] = load_weight(wrow[t][1] + col, pol);
      }
#pragma unroll
      for (int j = 0; j < NT; ++j)
        x[u][j] = tok_ok[j] ? load_token(trow[j] + col) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int t = 0; t < RT; ++t)
#pragma unroll
        for (int j = 0; j < NT; ++j) {
          mma16816(acc[t][j], w[u][t][0].x, w[u][t][1].x, w[u][t][0].y, w[u][t][1].y, x[u][j].x,
                   x[u][j].y);
          mma16816(acc[t][j], w[u][t][0].z, w[u][t][1].z, w[u][t][0].w, w[u][t][1].w, x[u][j].z,
                   x[u][j].w);
        }
  }
  for (; s < s_end; ++s) {  // the steps left over a batch
    const int col = s * 32;
#pragma unroll
    for (int t = 0; t < RT; ++t) {
      uint4 lo = load_weight(wrow[t][0] + col, pol), hi = load_weight(wrow[t][1] + col, pol);
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        uint4 xv = tok_ok[j] ? load_token(trow[j] + col) : make_uint4(0, 0, 0, 0);
        mma16816(acc[t][j], lo.x, hi.x, lo.y, hi.y, xv.x, xv.y);
        mma16816(acc[t][j], lo.z, hi.z, lo.w, hi.w, xv.z, xv.w);
      }
    }
  }

  static_assert(WK > 1, "the partial tiles meet in shared memory");
  constexpr int E = RT * NT * 4;
#pragma unroll
  for (int t = 0; t < RT; ++t)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) red[(warp * E + (t * NT + j) * 4 + r) * 32 + lane] = acc[t][j][r];
  __syncthreads();
  // Element i of the tile: e = i / 32 names (t, j, r), the lane its row and token pair.
  for (int i = threadIdx.x; i < E * 32; i += blockDim.x) {
    const int e = i / 32, l = i % 32;
    float v = 0.f;
#pragma unroll
    for (int w2 = 0; w2 < WK; ++w2) v += red[(w2 * E + e) * 32 + l];
    const int t = e / (NT * 4), j = (e / 4) % NT, r = e % 4;
    const int row = row0 + 16 * t + l / 4 + 8 * (r / 2);
    const int tok = 8 * j + 2 * (l % 4) + (r % 2);
    if (tok < M && row < N) C[(size_t)tok * N + row] = to_bf16(v);
  }
}

#define TG(RT, WK, NT, U)                                                                        \
  extern "C" __global__ void __launch_bounds__(32 * WK) tg_r##RT##_w##WK##_n##NT##_u##U(         \
      const bf16_bits* A, const bf16_bits* B, bf16_bits* C, int M, int N, int K) { \
    tinygemm_regs<RT, WK, NT, U>(A, B, C, M, N, K);                                              \
  }

// M <= 8
TG(1, 8, 1, 4)
TG(2, 8, 1, 4)
TG(2, 4, 1, 4)
TG(4, 4, 1, 2)
TG(2, 8, 1, 8)
// M <= 16
TG(1, 8, 2, 4)
TG(2, 8, 2, 4)
TG(2, 4, 2, 4)
TG(4, 4, 2, 2)
TG(2, 8, 2, 8)
// M <= 32
TG(1, 8, 4, 4)
TG(2, 8, 4, 2)
TG(4, 4, 4, 2)
TG(2, 8, 4, 4)
// M <= 64
TG(2, 8, 8, 2)
TG(1, 8, 8, 2)
