"""An attention forward block for Hopper, as a new user writes it from docs/language.md: per
64-row tile of Q, S = Q·Kᵀ in a wgmma accumulator, a masking `if` on the last key tile before
the first read of S, the row max, exp2, the row sum, and O += P·V with P in registers.

V is passed transposed (Vt: (D, S)) because only a K-major `b` is lowered; the key tail is masked
with a column vector loaded with `fill=-inf` (MASK: zeros of length S); crates/cake-lower/tests/
attention.rs also masks it with `lm.iota`, and adds a causal mask.
Lowered and compiled by crates/cake-lower/tests/attention.rs, which checks that the wgmma wait
dominates every read of S, that the two row reductions compile side by side, that exp2 is
ex2.approx and that the row max keeps no index."""
import cake
from cake import lm

BM = 64         # query rows per tile: one warpgroup, wgmma M
BN = 64         # keys per tile
D = 64          # head dimension
STAGES = 2
SCALE = 0.18033688011112042   # log2(e) / sqrt(D)


@cake.schedule(targets=["sm_90a"])
def attention(Q: lm.tensor[lm.bf16, "S", D],
              K: lm.tensor[lm.bf16, "S", D],
              Vt: lm.tensor[lm.bf16, D, "S"],
              MASK: lm.tensor[lm.f32, "S"],
              O: lm.tensor[lm.f32, "S", D]):
    pool = lm.smem()
    sQ = pool.view(shape=(BM, D), dtype=lm.bf16, swizzle=128)
    sK = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sV = pool.view(shape=(D, BN), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)

    pipe = lm.pipeline(stages=STAGES)
    q_full = lm.barrier(producers=[math], consumers=[math])
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])

    s = math.fragment(shape=(BM, BN), dtype=lm.f32)
    p = math.fragment(shape=(BM, BN), dtype=lm.bf16)
    o = math.fragment(shape=(BM, D), dtype=lm.f32)
    m_i = math.fragment(shape=(BM,), dtype=lm.f32)
    m_new = math.fragment(shape=(BM,), dtype=lm.f32)
    l_i = math.fragment(shape=(BM,), dtype=lm.f32)

    for tm in lm.tiles(lm.cdiv(S, BM)):
        with load:
            for j in lm.range(lm.cdiv(S, BN), pipeline=pipe):
                lm.wait(empty)
                sK.tma_load(K, coords=(j * BN, 0), barrier=full)
                sV.tma_load(Vt, coords=(0, j * BN), barrier=full)
        with math:
            sQ.tma_load(Q, coords=(tm * BM, 0), barrier=q_full)
            o[:] = 0.0
            m_i[:] = -lm.inf
            l_i[:] = 0.0
            lm.wait(q_full)
            for j in lm.range(lm.cdiv(S, BN), pipeline=pipe):
                lm.wait(full)
                lm.mma(s, sQ, sK.T, accumulate=False)
                if j == lm.cdiv(S, BN) - 1:
                    # Keys past S get -inf (the first read of S is on this path only).
                    bias = lm.load(MASK, coords=(j * BN,), shape=(BN,), fill=-lm.inf)
                    s[:] = s + bias[None, :]
                m_new[:] = lm.maximum(m_i, lm.max(s, axis=1) * SCALE)
                p[:] = lm.cast(lm.exp2(s * SCALE - m_new[:, None]), lm.bf16)
                l_i[:] = l_i * lm.exp2(m_i - m_new) + lm.sum(lm.exp2(s * SCALE - m_new[:, None]), axis=1)
                o[:] = o * lm.exp2(m_i - m_new)[:, None]
                m_i[:] = m_new
                lm.mma(o, p, sV.T, release=empty)
            o[:] = o / l_i[:, None]
            lm.store(O, o, coords=(tm * BM, 0))
