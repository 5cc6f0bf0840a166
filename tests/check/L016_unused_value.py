# Expression statements whose value is thrown away: warnings, and the schedule still builds.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    sA.shape  # warning[CAKE-L016]: computes a tuple that is never used
    1 + 2  # warning[CAKE-L016]: computes an integer
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        lm.cdiv(K, 64)  # warning[CAKE-L016]: computes a run-time value that is never used
        with load:
            sA.tma_load(A, coords=(tm * 128, tk * 64), barrier=full)
            lm.wait(full)
            tm * 2  # warning[CAKE-L016]: assign it to a name, or remove the line
            lm.cast  # warning[CAKE-L016]: a function
