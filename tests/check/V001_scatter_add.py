# lm.scatter_add is lowered for row-layout tiles (rows=); an accumulator tile is reported.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], zero=["S"])
def acc_scatter(A: lm.tensor[lm.bf16, "M", 64], I: lm.tensor[lm.i32, "M"],
                S: lm.tensor[lm.f32, "K", 64]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    loaded = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=loaded)
            lm.wait(loaded)
            lm.mma(acc, sA, sA.T, accumulate=False)
            ids = lm.load(I, coords=(tm * 64,), shape=(64,), fill=-1)
            lm.scatter_add(S, acc, index=ids, coords=(0, 0))  # note[CAKE-V001]: lowered for row-layout tiles
