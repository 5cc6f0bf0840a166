# ctas_per_sm=2 that fits: two CTAs of 81 KB of shared memory and 32768 registers each (40 + 216
# per thread in the two warpgroups) share an SM
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], ctas_per_sm=2)
def tinygemm(A: lm.tensor[lm.bf16, 16, "K"],
             B: lm.tensor[lm.bf16, "N", "K"],
             C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=8, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=8, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=216)
    pipe = lm.pipeline(stages=8)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full, evict="first")
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)
