# The smallest complete schedule: one role copies tiles in and out through shared memory.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"], C: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=1, swizzle=128)
    load = lm.role(warpgroup=0)
    full = lm.barrier(producers=[load], consumers=[load])
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        with load:
            sA.tma_load(A, coords=(tm * 128, tk * 64), barrier=full)
            lm.wait(full)
            sA.tma_store(C, coords=(tm * 128, tk * 64))
