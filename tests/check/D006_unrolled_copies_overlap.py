# CAKE-D006: the copies one statement makes in a compile-time `range` are in flight together;
# boxes of 16 rows placed 8 rows apart write rows 8..16 twice, so one K step's tokens land in
# the rows the other's MMA reads
import cake
from cake import lm

R = 2


@cake.schedule(targets=["sm_90a"])
def rings(A: lm.tensor[lm.bf16, 16, "K"],
          B: lm.tensor[lm.bf16, "N", "K"],
          C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=8, swizzle=128)
    sX = pool.view(shape=(R * 16, 64), dtype=lm.bf16, stages=2, swizzle=128)
    wload = lm.role(warp=0)
    xload = lm.role(warp=1)
    math = lm.role(warpgroup=1)
    wpipe = lm.pipeline(stages=8)
    xpipe = lm.pipeline(stages=2)
    wfull = lm.barrier(wpipe, producers=[wload], consumers=[math])
    wempty = lm.barrier(wpipe, producers=[math], consumers=[wload])
    xfull = lm.barrier(xpipe, producers=[xload], consumers=[math])
    xempty = lm.barrier(xpipe, producers=[math], consumers=[xload])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    KX = lm.cdiv(lm.cdiv(K, 64), R)
    for tn in lm.tiles(lm.cdiv(N, 64)):
        with wload:
            for kx in lm.range(KX):
                for kw in lm.range(R, pipeline=wpipe):
                    lm.wait(wempty)
                    sW.tma_load(B, coords=(tn * 64, (kx * R + kw) * 64), barrier=wfull)
        with xload:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xempty)
                for kw in range(R):
                    sX.rows(kw * 8, 16).tma_load(A, coords=(0, (kx * R + kw) * 64), barrier=xfull)  # error[CAKE-D006]: write rows 8..16 of `sX` twice
        with math:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xfull)
                for kw in lm.range(R, pipeline=wpipe):
                    lm.wait(wfull)
                    lm.mma(acc, sW, sX.stage(xpipe.stage).rows(kw * 8, 16).T, accumulate=kx + kw > 0, release=wempty)
                lm.commit(xempty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)
