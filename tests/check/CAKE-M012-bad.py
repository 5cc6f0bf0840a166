# CAKE-M012: the two consumer warpgroups issue Q·Kᵀ in turns, but the second skips the first key tile
import cake
from cake import lm

BM = 64         # per consumer warpgroup
BN = 64
D = 64
STAGES = 2


@cake.schedule(targets=["sm_90a"])
def attention(Q: lm.tensor[lm.bf16, "S", D],
              K: lm.tensor[lm.bf16, "S", D],
              V: lm.tensor[lm.bf16, "S", D],
              O: lm.tensor[lm.f32, "S", D]):
    pool = lm.smem()
    sQ = pool.view(shape=(2 * BM, D), dtype=lm.bf16, swizzle=128)
    sK = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sV = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0)
    math = lm.role(warpgroups=[1, 2])

    kv = lm.pipeline(stages=STAGES)
    q_full = lm.barrier(producers=[math], consumers=[math])
    full = lm.barrier(kv, producers=[load], consumers=[math])
    empty = lm.barrier(kv, producers=[math], consumers=[load])

    s = math.fragment(shape=(BM, BN), dtype=lm.f32)
    p = math.fragment(shape=(BM, BN), dtype=lm.bf16)
    o = math.fragment(shape=(BM, D), dtype=lm.f32)

    for tm in lm.tiles(lm.cdiv(S, 2 * BM)):
        with load:
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(empty)
                sK.tma_load(K, coords=(j * BN, 0), barrier=full)
                sV.tma_load(V, coords=(j * BN, 0), barrier=full)
        with math:
            sQ.rows(BM * math.index, BM).tma_load(Q, coords=(tm * 2 * BM + BM * math.index, 0), barrier=q_full)
            o[:] = 0.0
            lm.wait(q_full)
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(full)
                if j >= math.index:
                    lm.mma(s, sQ.rows(BM * math.index, BM), sK.T, accumulate=False, turns=True)  # error[CAKE-M012]: whose condition reads `math.index`
                else:
                    lm.mma(s, sQ.rows(BM * math.index, BM), sK.T, accumulate=False)
                p[:] = lm.cast(lm.exp2(s), lm.bf16)
                lm.mma(o, p, sV, release=empty)
            lm.store(O, o, coords=(tm * 2 * BM + BM * math.index, 0))
