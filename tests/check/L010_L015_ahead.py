# lm.ahead: a negative or non-constant number of iterations, and a region outside any role
import cake
from cake import lm

STAGES = 4


@cake.schedule(targets=["sm_80"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         C: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 32), dtype=lm.bf16, stages=STAGES, swizzle=64)
    main = lm.role(warps=[0, 1, 2, 3])
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[main], consumers=[main])

    for tm in lm.tiles(lm.cdiv(M, 128)):
        with lm.ahead(1):  # error[CAKE-L015]: must be inside a role region
            pass
        with main:
            for k in lm.range(lm.cdiv(K, 32), pipeline=pipe):
                with lm.ahead(-1):  # error[CAKE-L010]: 0 or more, got -1
                    sA.cp_async(A, coords=(tm * 128, k * 32), barrier=full)
                with lm.ahead(k):  # error[CAKE-L006]: must be known at compile time
                    sA.cp_async(A, coords=(tm * 128, k * 32), barrier=full)
                lm.wait(full)
