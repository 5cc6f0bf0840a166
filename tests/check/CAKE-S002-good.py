# CAKE-S002: the passing near-miss — one warp loads the box: 128 KB per phase
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"], C: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(256, 256), dtype=lm.bf16, swizzle=128)
    load = lm.role(warp=0)
    store = lm.role(warpgroup=2)
    full = lm.barrier(producers=[load], consumers=[store])
    for tm, tk in lm.tiles(lm.cdiv(M, 256), lm.cdiv(K, 256)):
        with load:
            sA.tma_load(A, coords=(tm * 256, tk * 256), barrier=full)
        with store:
            lm.wait(full)
            sA.tma_store(C, coords=(tm * 256, tk * 256))
