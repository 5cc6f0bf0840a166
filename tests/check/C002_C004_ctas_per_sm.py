# ctas_per_sm=2 past both of an SM's limits: one CTA's 161 KB fits the 227 KB a block may use, but
# two (each with the 1 KB the system reserves) do not fit the SM's 228 KB (CAKE-C002); and each
# thread is launched with 1/2 of the register file (128 for 256 threads), so budgets of 40 + 232
# ask 34816 registers of the 32768 a CTA has (CAKE-C004). ctas_per_sm_fits.py is the same
# schedule within both.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], ctas_per_sm=2)
def tinygemm(A: lm.tensor[lm.bf16, 16, "K"],  # error[CAKE-C002]: `ctas_per_sm=2` needs error[CAKE-C004]: the CTA is launched with 32768
             B: lm.tensor[lm.bf16, "N", "K"],
             C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=16, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=16, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=16)
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
