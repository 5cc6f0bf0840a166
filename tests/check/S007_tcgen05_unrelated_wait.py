# CAKE-S007: a wait between the inner loop of tcgen05 MMAs and the plain arrive orders nothing
# about those MMAs unless a commit of the same role arrives on its barrier: `tick` (a producer's
# per-stage signal) does not, so the arrive still releases the stage while they may read it
import cake
from cake import lm

BM, BN, BK, R = 128, 128, 64, 2


@cake.schedule(targets=["sm_100a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(R * BM, BK), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=6, swizzle=128)
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)

    epilogue = lm.role(warpgroup=0)
    bload = lm.role(warp=4)
    aload = lm.role(warp=5)
    mma = lm.role(warp=6)

    bpipe = lm.pipeline(stages=6)
    apipe = lm.pipeline(stages=2)
    bfull = lm.barrier(bpipe, producers=[bload], consumers=[mma])
    bempty = lm.barrier(bpipe, producers=[mma], consumers=[bload])
    afull = lm.barrier(apipe, producers=[aload], consumers=[mma])
    aempty = lm.barrier(apipe, producers=[mma], consumers=[aload])
    tick = lm.barrier(apipe, producers=[aload], consumers=[mma])
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])
    out = epilogue.fragment(shape=(BM, BN), dtype=lm.f32)

    KX = lm.cdiv(lm.cdiv(K, BK), R)
    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with bload:
            for kx in lm.range(KX):
                for kw in lm.range(R, pipeline=bpipe):
                    lm.wait(bempty)
                    sB.tma_load(B, coords=(tn * BN, (kx * R + kw) * BK), barrier=bfull)
        with aload:
            for kx in lm.range(KX, pipeline=apipe):
                lm.wait(aempty)
                for kw in range(R):
                    sA.rows(kw * BM, BM).tma_load(A, coords=(tm * BM, (kx * R + kw) * BK), barrier=afull)
                lm.arrive(tick)
        with mma:
            for kx in lm.range(KX, pipeline=apipe):
                lm.wait(afull)
                for kw in lm.range(R, pipeline=bpipe):
                    lm.wait(bfull)
                    lm.mma(acc, sA.stage(apipe.stage).rows(kw * BM, BM), sB.T, accumulate=kx * R + kw > 0, release=bempty)
                lm.wait(tick)
                lm.arrive(aempty)  # error[CAKE-S007]: releases the stage while the asynchronous MMAs above may still be reading it
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            lm.tmem_load(out, acc)
            lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN))
