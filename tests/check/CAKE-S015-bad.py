# CAKE-S015: 200 keys fill only part of the 256-row box, and the row maximum of the scores sees the 56 zero-filled keys as scores of 0
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def rowmax(Q: lm.tensor[lm.bf16, "M", "D"],
           Keys: lm.tensor[lm.bf16, 200, "D"],
           R: lm.tensor[lm.f32, "M"]):
    pool = lm.smem()
    sQ = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sK = pool.view(shape=(256, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    s = math.fragment(shape=(64, 256), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, 128)):
        with load:
            for k in lm.range(lm.cdiv(D, 64), pipeline=pipe):
                lm.wait(empty)
                sQ.tma_load(Q, coords=(tm * 128, k * 64), barrier=full)
                sK.tma_load(Keys, coords=(0, k * 64), barrier=full)  # warning[CAKE-S015]
        with math:
            for k in lm.range(lm.cdiv(D, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(s, sQ.rows(math.index * 64, 64), sK.T, accumulate=k > 0, release=empty)
            lm.store(R, lm.max(s, axis=1), coords=(tm * 128 + math.index * 64,))
