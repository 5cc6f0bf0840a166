"""BF16 GEMM for Blackwell in clusters of two CTAs: the gemm_sm100 example (TMA + tcgen05.mma into
a TMEM accumulator, one CTA per 128 × 128 tile) with the B tile shared. The two CTAs of a cluster
take neighbouring M tiles of one N tile; each loads half of B's 128 × 64 stage and multicasts it
to both. `empty` is a cluster barrier: the MMA warp's `release=empty` becomes a tcgen05.commit
multicast to both CTAs, so a stage is refilled only when both CTAs' MMAs reading it completed.
No Blackwell GPU is available here: proven by ptxas and the golden output only."""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
STAGES = 4  # 4 × 32 KiB of operands


@cake.schedule(targets=["sm_100a", "sm_103a"], cluster=(2, 1, 1))
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # 128 lanes (one per output row) × 128 f32 columns.
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)

    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load], cluster=True)
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])

    out = epilogue.fragment(shape=(BM, BN), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full, multicast=2)
        with mma:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            lm.tmem_load(out, acc)
            lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN))
