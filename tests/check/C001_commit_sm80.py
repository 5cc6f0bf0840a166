# CAKE-C001: lm.commit on sm_80, whose MMAs (mma.sync) are synchronous: it has neither
# tcgen05.commit nor wgmma to wait for; `lm.arrive` (or `release=`) is the release there
import cake
from cake import lm

BM, BN, BK = 128, 128, 32     # a 32-wide bf16 row is 64 B: one 64B-swizzle span
STAGES = 4
WM, WN = 64, 64


@cake.schedule(targets=["sm_80", "sm_89"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=64)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=64)

    math = lm.role(warps=[0, 1, 2, 3])
    load = lm.role(warps=[4])

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])    # completes on cp.async
    empty = lm.barrier(pipe, producers=[math], consumers=[load])   # completes on MMA release

    acc = math.fragment(shape=(WM, WN), dtype=lm.f32)
    a_frag = math.fragment(shape=(WM, BK), dtype=lm.bf16)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.cp_async(A, coords=(tm * BM, k * BK), barrier=full)
                sB.cp_async(B, coords=(tn * BN, k * BK), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.ldmatrix(a_frag, sA.rows((math.index // 2) * WM, WM))
                lm.mma(acc, a_frag, sB.rows((math.index % 2) * WN, WN).T, accumulate=k > 0)
                lm.commit(empty)  # error[CAKE-C001]: lm.commit waits for asynchronous MMAs (wgmma or tcgen05)
            lm.store(C, lm.cast(acc, lm.bf16),
                     coords=(tm * BM + (math.index // 2) * WM, tn * BN + (math.index % 2) * WN))
