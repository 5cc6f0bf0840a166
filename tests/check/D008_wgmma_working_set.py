# A wgmma needs its whole accumulator in registers at once, plus a working set (descriptors,
# addresses, loop and barrier state): ptxas aborts the build (C7602) when the role's budget
# cannot hold both. Three consumer warpgroups leave 152 registers each; a (64, 256) f32
# accumulator is 128 of them, and ptxas asks for 154 at the instruction (measured).
import cake
from cake import lm

BM, BN, BK = 192, 256, 64
STAGES = 2


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         Mx: lm.tensor[lm.f32, "T", "M"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=56)
    math = lm.role(warpgroups=[1, 2, 3], regs=152)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)  # error[CAKE-D008]
    rowmax = math.fragment(shape=(64,), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
            rowmax[:] = lm.max(acc, axis=1)
            lm.store(Mx, rowmax, coords=(tn, tm * BM + math.index * 64))
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * BM + math.index * 64, tn * BN))
