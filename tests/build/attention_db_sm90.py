"""tests/build/attention_sm90.py with a double-buffered score tile (`buffers=2`): the MMA of
key tile j+1 is issued before the softmax of tile j, which reads the other buffer, updating it in
place (`s[:] = ...`). Lowered and compiled by crates/cake-lower/tests/attention.rs, which checks
that the in-place update writes the current buffer and that no wait retires the MMA just issued
before the softmax reads its own buffer. ptxas serialises the wgmmas for that in-place write
(C7515: an accumulator written while another MMA is in flight); `cake build` reports it as
CAKE-P002 on the write, caused by the schedule (crates/cake-cli/tests/build.rs). Without it the
MMA of tile j+1 overlaps the softmax of tile j."""
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

    s = math.fragment(shape=(BM, BN), dtype=lm.f32, buffers=2)
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
                # Keys past S get -inf: an in-place update of the double-buffered score tile.
                s[:] = s + lm.load(MASK, coords=(j * BN,), shape=(BN,), fill=-lm.inf)[None, :]
                m_new[:] = lm.maximum(m_i, lm.max(s, axis=1) * SCALE)
                p[:] = lm.cast(lm.exp2(s * SCALE - m_new[:, None]), lm.bf16)
                l_i[:] = l_i * lm.exp2(m_i - m_new) + lm.sum(lm.exp2(s * SCALE - m_new[:, None]), axis=1)
                o[:] = o * lm.exp2(m_i - m_new)[:, None]
                m_i[:] = m_new
                lm.mma(o, p, sV.T, release=empty)
            o[:] = o / l_i[:, None]
            lm.store(O, o, coords=(tm * BM, 0))
