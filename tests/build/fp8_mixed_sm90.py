"""FP8 wgmma with mixed inputs: an e4m3 `a` and an e5m2 `b`, both K-major (the only way FP8 wgmma
reads them), one 128-deep block: four k32 steps of `.e4m3.e5m2`, 32 bytes apart in each row."""
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm_mixed(A: lm.tensor[lm.e4m3, "M", "K"],
               B: lm.tensor[lm.e5m2, "N", "K"],
               C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 128), dtype=lm.e4m3, swizzle=128)
    sB = pool.view(shape=(64, 128), dtype=lm.e5m2, swizzle=128)
    math = lm.role(warpgroup=0)
    full = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=full)
            sB.tma_load(B, coords=(tn * 64, 0), barrier=full)
            lm.wait(full)
            lm.mma(acc, sA, sB.T, accumulate=False)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 64))
