# CAKE-M011: the deferred MMA is not the last statement of the loop body
import cake
from cake import lm

BM = 64
BN = 64
D = 64
STAGES = 2


@cake.schedule(targets=["sm_90a"])
def attention(Q: lm.tensor[lm.bf16, "S", D],
              K: lm.tensor[lm.bf16, "S", D],
              V: lm.tensor[lm.bf16, "S", D],
              O: lm.tensor[lm.f32, "S", D]):
    pool = lm.smem()
    sQ = pool.view(shape=(BM, D), dtype=lm.bf16, swizzle=128)
    sK = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sV = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)

    kv = lm.pipeline(stages=STAGES)
    q_full = lm.barrier(producers=[math], consumers=[math])
    full = lm.barrier(kv, producers=[load], consumers=[math])
    empty = lm.barrier(kv, producers=[math], consumers=[load])

    s = math.fragment(shape=(BM, BN), dtype=lm.f32)
    p = math.fragment(shape=(BM, BN), dtype=lm.bf16)
    o = math.fragment(shape=(BM, D), dtype=lm.f32)

    for tm in lm.tiles(lm.cdiv(S, BM)):
        with load:
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(empty)
                sK.tma_load(K, coords=(j * BN, 0), barrier=full)
                sV.tma_load(V, coords=(j * BN, 0), barrier=full)
        with math:
            sQ.tma_load(Q, coords=(tm * BM, 0), barrier=q_full)
            o[:] = 0.0
            lm.wait(q_full)
            for j in lm.range(lm.cdiv(S, BN), pipeline=kv):
                lm.wait(full)
                lm.mma(s, sQ, sK.T, accumulate=False)
                lm.mma(o, p, sV, release=empty, defer=True)  # error[CAKE-M011]: the last statement of its loop body
                p[:] = lm.cast(lm.exp2(s), lm.bf16)
            lm.store(O, o, coords=(tm * BM, 0))
