// Hand-written references for issue #19's question: how close to the weight-streaming floor can
// small-M C = A · Bᵀ get on the H200, and is cuBLAS's time there a hardware bound?
//
//   read_sum     reads B (N × K bf16) once with 16-byte loads and writes one value per CTA: the
//                floor any kernel that streams the weight pays (plus its own math).
//   gemv<MT, RPW, KS, U>
//                C[m, n] = Σ_k A[m, k] · B[n, k] for m < M ≤ MT: a CTA of 8 warps; KS warps share
//                each group of RPW rows (each takes every KS-th 256-column chunk of K), U chunks
//                of every row in flight per warp; f32 sums reduced by shuffles, then across the KS
//                warps through shared memory; A read through the read-only cache (M × K is small
//                and every CTA reads all of it).
// Built by bench/gemv_hand.sh, timed by bench/gemv_hand.py.
#include <cstdint>

namespace {

__device__ __forceinline__ uint4 ld_stream(const uint4* p) {
    // The weight is read once: no L1 allocation.
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

// The same with an L2 cache-policy operand (evict-first for a weight read once).
__device__ __forceinline__ uint4 ld_stream_ef(const uint4* p, uint64_t policy) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
    return v;
}

// bf16 pairs in a 32-bit word to f32 (a bf16 is the high half of an f32).
__device__ __forceinline__ float lo(uint32_t v) { return __uint_as_float(v << 16); }
__device__ __forceinline__ float hi(uint32_t v) { return __uint_as_float(v & 0xffff0000u); }

__device__ __forceinline__ void fma8(float& acc, const uint4& w, const uint4& a) {
    acc = fmaf(lo(w.x), lo(a.x), acc); acc = fmaf(hi(w.x), hi(a.x), acc);
    acc = fmaf(lo(w.y), lo(a.y), acc); acc = fmaf(hi(w.y), hi(a.y), acc);
    acc = fmaf(lo(w.z), lo(a.z), acc); acc = fmaf(hi(w.z), hi(a.z), acc);
    acc = fmaf(lo(w.w), lo(a.w), acc); acc = fmaf(hi(w.w), hi(a.w), acc);
}

// f32 to bf16, rounding to nearest even (inputs here are finite).
__device__ __forceinline__ uint16_t to_bf16(float f) {
    const uint32_t u = __float_as_uint(f);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

template <int MT, int RPW, int KS, int U>
__device__ void gemv(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                     uint16_t* __restrict__ C, int M, int N, int K) {
    constexpr int GROUPS = 8 / KS;               // row groups per CTA
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int group = warp / KS, slice = warp % KS;
    const int row0 = (blockIdx.x * GROUPS + group) * RPW;
    const int chunks = K / 256;                  // whole 256-column chunks (K % 256 == 0 here)
    float acc[RPW][MT];
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m) acc[r][m] = 0.f;
    const uint4* Bv = reinterpret_cast<const uint4*>(B);
    const uint4* Av = reinterpret_cast<const uint4*>(A);
    const int kv = K / 8;                        // 16-byte vectors per row
    for (int c = slice; c < chunks; c += KS * U) {
        uint4 w[U][RPW];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int r = 0; r < RPW; ++r) {
                const int cc = c + u * KS, row = row0 + r;
                w[u][r] = (cc < chunks && row < N) ? ld_stream(Bv + (size_t)row * kv + cc * 32 + lane)
                                                   : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int cc = c + u * KS;
            if (cc >= chunks) break;
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                if (m >= M) break;
                const uint4 a = __ldg(Av + (size_t)m * kv + cc * 32 + lane);
#pragma unroll
                for (int r = 0; r < RPW; ++r) fma8(acc[r][m], w[u][r], a);
            }
        }
    }
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int off = 16; off > 0; off >>= 1) acc[r][m] += __shfl_xor_sync(0xffffffffu, acc[r][m], off);
    if constexpr (KS > 1) {
        __shared__ float part[8][RPW][MT];
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < RPW; ++r)
#pragma unroll
                for (int m = 0; m < MT; ++m) part[warp][r][m] = acc[r][m];
        __syncthreads();
        if (slice != 0) return;
        if (lane == 0)
#pragma unroll
            for (int r = 0; r < RPW; ++r)
#pragma unroll
                for (int m = 0; m < MT; ++m) {
                    float s = 0.f;
#pragma unroll
                    for (int k = 0; k < KS; ++k) s += part[warp + k][r][m];
                    acc[r][m] = s;
                }
    }
    if (lane == 0)
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
            const int row = row0 + r;
            if (row >= N) continue;
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                if (m >= M) break;
                C[(size_t)m * N + row] = to_bf16(acc[r][m]);
            }
        }
}

}  // namespace

// The floor: every byte of B once, 16-byte loads, 8 in flight per thread; grid-stride over
// 256-thread CTAs (EF: L2::evict_first, as the schedules that stream the weight read it).
// C[blockIdx.x] gets the CTA's sum so nothing is optimised away (C is not checked: it is not a
// product).
template <int EF>
__device__ void read_all(const uint16_t* __restrict__ B, uint16_t* __restrict__ C, int M, int N, int K) {
    uint64_t policy = 0;
    if (EF) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    auto load = [&](const uint4* p) { return EF ? ld_stream_ef(p, policy) : ld_stream(p); };
    const uint4* Bv = reinterpret_cast<const uint4*>(B);
    const size_t n = (size_t)N * K / 8;
    uint32_t x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = load(Bv + i + u * stride);
#pragma unroll
        for (int u = 0; u < 8; ++u) x ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; i < n; i += stride) {
        const uint4 v = load(Bv + i);
        x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (x == 0x9e3779b9u) C[blockIdx.x % (M * N)] = (uint16_t)x;  // keeps the loads alive
}

extern "C" __global__ void __launch_bounds__(256) read_sum(const uint16_t* __restrict__ A,
                                                           const uint16_t* __restrict__ B,
                                                           uint16_t* __restrict__ C, int M, int N, int K) {
    read_all<0>(B, C, M, N, K);
}

extern "C" __global__ void __launch_bounds__(256) read_sum_ef(const uint16_t* __restrict__ A,
                                                              const uint16_t* __restrict__ B,
                                                              uint16_t* __restrict__ C, int M, int N, int K) {
    read_all<1>(B, C, M, N, K);
}

#define GEMV(MT, RPW, KS, U)                                                                       \
    extern "C" __global__ void __launch_bounds__(256) gemv_m##MT##_r##RPW##_k##KS##_u##U(         \
        const uint16_t* __restrict__ A, const uint16_t* __restrict__ B, uint16_t* __restrict__ C, \
        int M, int N, int K) {                                                                     \
        gemv<MT, RPW, KS, U>(A, B, C, M, N, K);                                                    \
    }

#define GEMV_ALL(MT)      \
    GEMV(MT, 1, 1, 4)     \
    GEMV(MT, 2, 1, 2)     \
    GEMV(MT, 1, 2, 4)     \
    GEMV(MT, 2, 2, 2)     \
    GEMV(MT, 1, 4, 4)     \
    GEMV(MT, 1, 8, 4)

#ifndef TC_ONLY
GEMV_ALL(1)
GEMV_ALL(2)
GEMV_ALL(4)
GEMV_ALL(8)
GEMV_ALL(16)
#endif

// ---------------------------------------------------------------------------------------------
// Tensor-core GEMVs for M ≤ 64 (issue #19's question after the CUDA-core ones lost from M = 4):
// the weight is read as the GEMVs read it (16-byte loads straight into registers, many short
// CTAs, no shared-memory ring), and multiplied with mma.sync.m16n8k16.
//
//   tc<NB, R16, KS, U, EF, WARPS, PIPE, ROT>
//                a warp owns 16·R16 rows of B; KS warps share each row group's K (warp s takes
//                every KS-th run of U 32-column steps: U × 64 contiguous bytes of each row), U
//                steps of every row in flight per warp; A's
//                tokens are NB blocks of 8 (tokens ≥ M read as zero). EF: the weight is read
//                L2::evict_first.
//
// A dot product over K does not depend on the order of K, so each MMA's 16-deep K is a
// permutation of real columns chosen to fit 16-byte loads: lane (g = lane/4, c = lane%4) loads
// 8 columns kb + 8c … + 7 of weight rows g and g + 8 and of token g; MMA j ∈ {0, 1} of the step
// takes words 2j and 2j + 1 of each, i.e. its virtual columns (2c, 2c+1) and (2c+8, 2c+9) are
// the real kb + 8c + 4j + {0, 1} and + {2, 3} for both operands alike.

__device__ __forceinline__ void mma16816(float* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

template <int NB, int R16, int U>
struct TcBatch {
    uint4 w[U][R16][2];   // weight rows g and g + 8 of each 16-row block, 8 columns per lane
    uint4 x[U][NB];       // token g of each 8-token block, the same 8 columns
};

// Every load of U steps in one batch: the tokens' with the weight's, so that no MMA waits out an
// L2 round trip for A after the weight has landed.
template <int NB, int R16, int KS, int U, int EF>
__device__ __forceinline__ void tc_load(TcBatch<NB, R16, U>& t, const uint4* Bv, const uint4* Av, int s0,
                                        int steps, int row0, int g, int c, int M, int N, int kv,
                                        uint64_t policy) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int s = s0 + u;
#pragma unroll
        for (int r = 0; r < R16; ++r)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int row = row0 + 16 * r + g + 8 * h;
                const uint4* p = Bv + (size_t)row * kv + s * 4 + c;
                t.w[u][r][h] = (s < steps && row < N) ? (EF ? ld_stream_ef(p, policy) : ld_stream(p))
                                                      : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
        for (int n = 0; n < NB; ++n) {
            const int tok = 8 * n + g;
            t.x[u][n] = (s < steps && tok < M) ? __ldg(Av + (size_t)tok * kv + s * 4 + c) : make_uint4(0, 0, 0, 0);
        }
    }
}

template <int NB, int R16, int U>
__device__ __forceinline__ void tc_math(float (&acc)[R16][NB][4], const TcBatch<NB, R16, U>& t) {
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
        for (int n = 0; n < NB; ++n)
#pragma unroll
            for (int r = 0; r < R16; ++r) {
                const uint4 &w0 = t.w[u][r][0], &w1 = t.w[u][r][1], &x = t.x[u][n];
                mma16816(acc[r][n], w0.x, w1.x, w0.y, w1.y, x.x, x.y);
                mma16816(acc[r][n], w0.z, w1.z, w0.w, w1.w, x.z, x.w);
            }
}

// PIPE: the next batch's loads are issued before this batch's MMAs (two batches of registers).
template <int NB, int R16, int KS, int U, int EF, int WARPS, int PIPE, int ROT>
__device__ void tc(const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,
                   uint16_t* __restrict__ C, int M, int N, int K) {
    constexpr int GROUPS = WARPS / KS;           // row groups per CTA
    constexpr int RPW = 16 * R16;                // rows per warp
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, c = lane % 4;
    const int group = warp / KS, slice = warp % KS;
    const int row0 = (blockIdx.x * GROUPS + group) * RPW;
    const int steps = K / 32;                    // whole 32-column steps (K % 32 == 0 here)
    const int kv = K / 8;                        // 16-byte vectors per row
    uint64_t policy = 0;
    if (EF) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    float acc[R16][NB][4];
#pragma unroll
    for (int r = 0; r < R16; ++r)
#pragma unroll
        for (int n = 0; n < NB; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[r][n][i] = 0.f;
    const uint4* Bv = reinterpret_cast<const uint4*>(B);
    const uint4* Av = reinterpret_cast<const uint4*>(A);
    // Batch b covers steps b·U … b·U + U − 1; warp `slice` takes b ≡ slice (mod KS). ROT: the
    // CTA starts at batch blockIdx.x·ROT (mod the batches) rather than 0, so CTAs in flight read
    // different columns of the weight at once.
    const int nb = (steps + U - 1) / U;
    const int rot = ROT ? (int)((blockIdx.x * (unsigned)ROT) % (unsigned)nb) : 0;
    auto first = [&](int b) { const int r = b + rot; return (r >= nb ? r - nb : r) * U; };
    if constexpr (PIPE) {
        TcBatch<NB, R16, U> cur, nxt;
        if (slice < nb) tc_load<NB, R16, KS, U, EF>(cur, Bv, Av, first(slice), steps, row0, g, c, M, N, kv, policy);
        for (int b = slice; b < nb; b += KS) {
            if (b + KS < nb)
                tc_load<NB, R16, KS, U, EF>(nxt, Bv, Av, first(b + KS), steps, row0, g, c, M, N, kv, policy);
            tc_math<NB, R16, U>(acc, cur);
            cur = nxt;
        }
    } else {
        for (int b = slice; b < nb; b += KS) {
            TcBatch<NB, R16, U> t;
            tc_load<NB, R16, KS, U, EF>(t, Bv, Av, first(b), steps, row0, g, c, M, N, kv, policy);
            tc_math<NB, R16, U>(acc, t);
        }
    }
    if constexpr (KS > 1) {
        __shared__ float part[WARPS][R16][NB][4][32];
#pragma unroll
        for (int r = 0; r < R16; ++r)
#pragma unroll
            for (int n = 0; n < NB; ++n)
#pragma unroll
                for (int i = 0; i < 4; ++i) part[warp][r][n][i][lane] = acc[r][n][i];
        __syncthreads();
        if (slice != 0) return;
#pragma unroll
        for (int r = 0; r < R16; ++r)
#pragma unroll
            for (int n = 0; n < NB; ++n)
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    float t = 0.f;
#pragma unroll
                    for (int k = 0; k < KS; ++k) t += part[warp + k][r][n][i][lane];
                    acc[r][n][i] = t;
                }
    }
    // acc[r][n]: rows row0 + 16r + g (+8 for 2, 3) × tokens 8n + 2c (+1 for 1, 3).
#pragma unroll
    for (int r = 0; r < R16; ++r)
#pragma unroll
        for (int n = 0; n < NB; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int row = row0 + 16 * r + g + 8 * (i / 2), tok = 8 * n + 2 * c + (i % 2);
                if (row < N && tok < M) C[(size_t)tok * N + row] = to_bf16(acc[r][n][i]);
            }
}

#define TC(MT, R16, KS, U, EF, WARPS, PIPE, ROT)                                                  \
    extern "C" __global__ void __launch_bounds__(WARPS * 32)                                       \
        tc_m##MT##_r##R16##_k##KS##_u##U##_e##EF##_w##WARPS##_p##PIPE##_o##ROT(                    \
            const uint16_t* __restrict__ A, const uint16_t* __restrict__ B,                        \
            uint16_t* __restrict__ C, int M, int N, int K) {                                       \
        tc<MT / 8, R16, KS, U, EF, WARPS, PIPE, ROT>(A, B, C, M, N, K);                            \
    }

// c1 (2026-12-04-tc-gemv): A's loads issued after the weight's had landed, every variant lost to
// the swapped schedule; c2/c3: A in the weight's batch, then runs of U contiguous steps. c4: the
// best of c3 with and without ROT (each CTA starting at another batch of K).
#define TC_ALL(MT)                  \
    TC(MT, 1, 8, 4, 1, 8, 1, 0)     \
    TC(MT, 1, 8, 4, 1, 8, 1, 1)     \
    TC(MT, 1, 8, 4, 1, 8, 1, 7)     \
    TC(MT, 1, 4, 4, 1, 4, 1, 0)     \
    TC(MT, 1, 4, 4, 1, 4, 1, 7)     \
    TC(MT, 1, 16, 4, 1, 16, 1, 0)   \
    TC(MT, 1, 16, 4, 1, 16, 1, 7)   \
    TC(MT, 1, 2, 8, 1, 4, 0, 0)     \
    TC(MT, 1, 2, 8, 1, 4, 0, 7)

TC_ALL(8)
TC_ALL(16)
TC_ALL(32)
