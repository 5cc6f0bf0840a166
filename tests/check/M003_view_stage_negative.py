# CAKE-M003: `(k - 1) % STAGES` is -1 at k = 0 in the compiled code (C's `%` keeps the
# dividend's sign), a stage before the view's first; and it is not the ring's stage either.
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
STAGES = 4  # 4 × 32 KiB of operands
ACC_STAGES = 2


@cake.schedule(targets=["sm_100a", "sm_103a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # 128 lanes (one per output row) × 128 f32 columns, per stage.
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32, stages=ACC_STAGES)

    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load])
    accpipe = lm.pipeline(stages=ACC_STAGES)  # one iteration per tile
    acc_full = lm.barrier(accpipe, producers=[mma], consumers=[epilogue])
    acc_empty = lm.barrier(accpipe, producers=[epilogue], consumers=[mma])

    out = epilogue.fragment(shape=(BM, BN), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.stage((k - 1) % STAGES).tma_load(A, coords=(tm * BM, k * BK), barrier=full)  # error[CAKE-M003]: can be any of -3..=3 error[CAKE-M003]: a stage of its own
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with mma:
            for _ in lm.range(1, pipeline=accpipe):
                lm.wait(acc_empty)
                d = acc.stage(accpipe.stage)       # the k loop below is over `pipe`
                for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                    lm.wait(full)
                    lm.mma(d, sA, sB.T, accumulate=k > 0, release=empty)
                lm.commit(acc_full)
        with epilogue:
            for _ in lm.range(1, pipeline=accpipe):
                lm.wait(acc_full)
                lm.tmem_load(out, acc)             # the stage of this loop over `accpipe`
                lm.arrive(acc_empty)
                lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN))
