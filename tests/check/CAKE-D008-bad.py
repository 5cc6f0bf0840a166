# CAKE-D008: two f32 (64, 256) tiles per warpgroup are 256 registers per thread: no budget fits
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.e4m3, "M", "K"],
         B: lm.tensor[lm.e4m3, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 128), dtype=lm.e4m3, stages=3, swizzle=128)
    sB = pool.view(shape=(256, 128), dtype=lm.e4m3, stages=3, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=3)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)  # error[CAKE-D008]: holds 256 registers per thread
    total = math.fragment(shape=(64, 256), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 128), lm.cdiv(N, 256)):
        with load:
            for k in lm.range(lm.cdiv(K, 128), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 128), barrier=full)
                sB.tma_load(B, coords=(tn * 256, k * 128), barrier=full)
        with math:
            total[:] = 0.0
            for k in lm.range(lm.cdiv(K, 128), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=False, release=empty)
                total[:] = total + acc
            lm.store(C, lm.cast(total, lm.bf16), coords=(tm * 128 + math.index * 64, tn * 256))
