# CAKE-S007 must not fire: on sm_90a the end of a loop of wgmma MMAs waits for them all
# (wgmma.wait_group 0), so a plain arrive after the inner loop of a two-ring schedule releases
# the outer ring's stage safely (one arrival per thread; lm.commit makes it one per warpgroup)
import cake
from cake import lm

R = 2


@cake.schedule(targets=["sm_90a"], cluster=(2, 1, 1))
def splitk(A: lm.tensor[lm.bf16, 16, "K"],
           B: lm.tensor[lm.bf16, "N", "K"],
           C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=8, swizzle=128)
    sX = pool.view(shape=(R * 16, 64), dtype=lm.bf16, stages=2, swizzle=128)
    part = pool.view(shape=(64, 16), dtype=lm.f32)
    wload = lm.role(warp=0)
    xload = lm.role(warp=1)
    math = lm.role(warpgroup=1)
    wpipe = lm.pipeline(stages=8)
    xpipe = lm.pipeline(stages=2)
    wfull = lm.barrier(wpipe, producers=[wload], consumers=[math])
    wempty = lm.barrier(wpipe, producers=[math], consumers=[wload])
    xfull = lm.barrier(xpipe, producers=[xload], consumers=[math])
    xempty = lm.barrier(xpipe, producers=[math], consumers=[xload])
    parts = lm.barrier(producers=[math], consumers=[math], cluster=True)
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    KX = lm.cdiv(lm.cdiv(K, 64), 2 * R)
    for ks, tn in lm.tiles(2, lm.cdiv(N, 64)):
        with wload:
            for kx in lm.range(KX):
                for kw in lm.range(R, pipeline=wpipe):
                    lm.wait(wempty)
                    sW.tma_load(B, coords=(tn * 64, (ks * KX * R + kx * R + kw) * 64), barrier=wfull)
        with xload:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xempty)
                for kw in range(R):
                    sX.rows(kw * 16, 16).tma_load(A, coords=(0, (ks * KX * R + kx * R + kw) * 64), barrier=xfull)
        with math:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xfull)
                for kw in lm.range(R, pipeline=wpipe):
                    lm.wait(wfull)
                    lm.mma(acc, sW, sX.stage(xpipe.stage).rows(kw * 16, 16).T, accumulate=kx + kw > 0, release=wempty)
                lm.arrive(xempty)
            part.store(acc)
            lm.arrive(parts)
            lm.wait(parts)
            if ks == 0:
                lm.store(C, lm.cast(acc + part.load(cta=1), lm.bf16), coords=(0, tn * 64), transpose=True)
