# CAKE-S020: the K/V stage is released on Q·Kᵀ while P·V of the same iteration still reads V
import cake
from cake import lm

BM = 128          # query rows per CTA = TMEM lanes
BN = 128          # keys per K/V tile
D = 64            # head dim
STAGES = 3
LOG2E = 1.4426950408889634


@cake.schedule(targets=["sm_100a"])
def attention_fwd(Q: lm.tensor[lm.bf16, "BH", "S", D],
                  K: lm.tensor[lm.bf16, "BH", "S", D],
                  V: lm.tensor[lm.bf16, "BH", "S", D],
                  O: lm.tensor[lm.bf16, "BH", "S", D],
                  sm_scale: lm.f32):
    pool = lm.smem()
    sQ = pool.view(shape=(BM, D), dtype=lm.bf16, swizzle=128)              # resident
    sK = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sV = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # Tensor memory: 128 lanes (one per query row); columns are 32-bit cells.
    s_tmem = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)      # scores
    o_tmem = lm.tmem(cols=D, shape=(BM, D), dtype=lm.f32)        # output accumulator
    p_tmem = lm.tmem(cols=BN // 2, shape=(BM, BN), dtype=lm.bf16)  # probabilities, 2 per cell

    softmax = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    kv = lm.pipeline(stages=STAGES)
    q_full = lm.barrier(producers=[load], consumers=[mma])
    kv_full = lm.barrier(kv, producers=[load], consumers=[mma])
    kv_empty = lm.barrier(kv, producers=[mma], consumers=[load])
    s_full = lm.barrier(producers=[mma], consumers=[softmax])
    p_full = lm.barrier(producers=[softmax], consumers=[mma])
    o_done = lm.barrier(producers=[mma], consumers=[softmax])

    # Per replica of `softmax` (one warpgroup): a thread holds one row of each tile.
    s_frag = softmax.fragment(shape=(BM, BN), dtype=lm.f32)
    o_frag = softmax.fragment(shape=(BM, D), dtype=lm.f32)
    m_run = softmax.fragment(shape=(BM,), dtype=lm.f32)    # running row max (log2 domain)
    l_run = softmax.fragment(shape=(BM,), dtype=lm.f32)    # running row sum
    m_new = softmax.fragment(shape=(BM,), dtype=lm.f32)
    alpha = softmax.fragment(shape=(BM,), dtype=lm.f32)    # rescale factor for O and l

    for bh, tq in lm.tiles(BH, lm.cdiv(S, BM)):
        with load:
            sQ.tma_load(Q, coords=(bh, tq * BM, 0), barrier=q_full)
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(kv_empty)
                sK.tma_load(K, coords=(bh, j * BN, 0), barrier=kv_full)
                sV.tma_load(V, coords=(bh, j * BN, 0), barrier=kv_full)

        with mma:
            lm.wait(q_full)
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(kv_full)
                lm.mma(s_tmem, sQ, sK.T, accumulate=False, release=kv_empty)  # error[CAKE-S020]: `sV` is still read
                lm.commit(s_full)
                lm.wait(p_full)                                     # P written, O rescaled
                lm.mma(o_tmem, p_tmem, sV, accumulate=j > 0)        # O += P · V
                lm.commit(o_done)

        with softmax:
            m_run[:] = -lm.inf
            l_run[:] = 0.0
            for j in lm.range(lm.cdiv(S, BN)):
                lm.wait(s_full)
                lm.tmem_load(s_frag, s_tmem)
                m_new[:] = lm.maximum(m_run, lm.max(s_frag, axis=1) * (sm_scale * LOG2E))
                alpha[:] = lm.exp2(m_run - m_new)
                s_frag[:] = lm.exp2(s_frag * (sm_scale * LOG2E) - m_new[:, None])   # P, in place
                l_run[:] = l_run * alpha + lm.sum(s_frag, axis=1)
                m_run[:] = m_new
                if j > 0:
                    # O = P_{j-1}·V_{j-1} + ... has retired (waited below): rescale it in TMEM
                    # by exp2(m_old - m_new). For j = 0, O is not yet written.
                    lm.tmem_load(o_frag, o_tmem)
                    o_frag[:] = o_frag * alpha[:, None]
                    lm.tmem_store(o_tmem, o_frag)
                lm.tmem_store(p_tmem, lm.cast(s_frag, lm.bf16))
                lm.arrive(p_full)
                # Wait for P_j·V_j before the next tile's rescale and before P is overwritten.
                # It costs no overlap: tcgen05 MMAs retire in order and Q·K_{j+1}ᵀ, which the
                # next iteration waits for, was issued after P_j·V_j.
                lm.wait(o_done)
            lm.tmem_load(o_frag, o_tmem)                            # the last P·V retired
            lm.store(O, lm.cast(o_frag / l_run[:, None], lm.bf16), coords=(bh, tq * BM, 0))
