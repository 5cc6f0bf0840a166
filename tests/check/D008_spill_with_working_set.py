# CAKE-D008: 192-key tiles: 212 registers in fragments and the wgmma's working set exceed 232
import cake
from cake import lm

SCALE = 0.12751743074941037    # log2(e) / sqrt(128)


@cake.schedule(targets=["sm_90a"])
def attention(Q: lm.tensor[lm.bf16, "BH", "S", 128],
              K: lm.tensor[lm.bf16, "BH", "S", 128],
              V: lm.tensor[lm.bf16, "BH", "S", 128],
              O: lm.tensor[lm.bf16, "BH", "S", 128]):
    pool = lm.smem()
    sQ = pool.view(shape=(128, 128), dtype=lm.bf16, swizzle=128)
    sK = pool.view(shape=(192, 128), dtype=lm.bf16, stages=2, swizzle=128)
    sV = pool.view(shape=(192, 128), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    kv = lm.pipeline(stages=2)
    q_full = lm.barrier(producers=[load], consumers=[math])
    full = lm.barrier(kv, producers=[load], consumers=[math])
    empty = lm.barrier(kv, producers=[math], consumers=[load])
    s = math.fragment(shape=(64, 192), dtype=lm.f32)  # warning[CAKE-D008]: 238 in all, more than its budget of 232
    p = math.fragment(shape=(64, 192), dtype=lm.bf16)
    o = math.fragment(shape=(64, 128), dtype=lm.f32)
    m_i = math.fragment(shape=(64,), dtype=lm.f32)
    m_new = math.fragment(shape=(64,), dtype=lm.f32)
    alpha = math.fragment(shape=(64,), dtype=lm.f32)
    l_i = math.fragment(shape=(64,), dtype=lm.f32)
    for bh, t in lm.tiles(BH, S // 128):
        with load:
            sQ.tma_load(Q, coords=(bh, t * 128, 0), barrier=q_full)
            for j in lm.range(S // 192, pipeline=kv):
                lm.wait(empty)
                sK.tma_load(K, coords=(bh, j * 192, 0), barrier=full)
                sV.tma_load(V, coords=(bh, j * 192, 0), barrier=full)
        with math:
            o[:] = 0.0
            m_i[:] = -lm.inf
            l_i[:] = 0.0
            lm.wait(q_full)
            for j in lm.range(S // 192, pipeline=kv):
                lm.wait(full)
                lm.mma(s, sQ.rows(64 * math.index, 64), sK.T, accumulate=False)
                m_new[:] = lm.maximum(m_i, lm.max(s, axis=1) * SCALE)
                # The running maximum moves only when a row of the warp grew by more than 8.
                if lm.any(m_new - m_i > 8.0):
                    alpha[:] = lm.exp2(m_i - m_new)
                    m_i[:] = m_new
                else:
                    alpha[:] = 1.0
                s[:] = lm.exp2(s * SCALE - m_i[:, None])
                l_i[:] = l_i * alpha + lm.sum(s, axis=1)
                if lm.any(alpha < 1.0):
                    o[:] = o * alpha[:, None]
                p[:] = lm.cast(s, lm.bf16)
                lm.mma(o, p, sV, release=empty)
            lm.store(O, lm.cast(o * (1.0 / l_i)[:, None], lm.bf16), coords=(bh, t * 128 + 64 * math.index, 0))
