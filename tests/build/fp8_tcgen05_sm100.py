"""FP8 on Blackwell: examples/gemm_sm100.py with an e4m3 A and an e5m2 B, 128 deep per stage (one
128-byte row): tcgen05.mma.kind::f8f6f4, four 32-deep K steps per stage, the operand types in the
instruction descriptor."""
import cake
from cake import lm

BM, BN, BK = 128, 128, 128
EPI = BN    # accumulator columns the epilogue loads and stores at a time (a multiple of 32)
STAGES = 4


@cake.schedule(targets=["sm_100a", "sm_103a"])
def gemm_fp8(A: lm.tensor[lm.e4m3, "M", "K"],
             B: lm.tensor[lm.e5m2, "N", "K"],
             C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.e4m3, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.e5m2, stages=STAGES, swizzle=128)

    # 128 lanes (one per output row) × BN f32 columns.
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)

    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load])
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])

    out = epilogue.fragment(shape=(BM, EPI), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with mma:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            for c in range(BN // EPI):
                lm.tmem_load(out, acc.cols(c * EPI, EPI))
                lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN + c * EPI))
