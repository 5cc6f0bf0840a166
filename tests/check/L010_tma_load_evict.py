# view.tma_load(..., evict=...) sets the L2 eviction priority of the lines the copy brings in:
# "first" for data read once (a streamed weight), "last" for data many CTAs reread; None is the
# default priority.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def loads(A: lm.tensor[lm.bf16, "M", 64], B: lm.tensor[lm.bf16, 64, 64], C: lm.tensor[lm.f32, "M", 64]):
    pool = lm.smem()
    a = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    b = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    ready = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            a.tma_load(A, coords=(tm * 64, 0), barrier=ready, evict="first")
            b.tma_load(B, coords=(0, 0), barrier=ready, evict="last")
            a.tma_load(A, coords=(tm * 64, 0), barrier=ready, evict=None)
            a.tma_load(A, coords=(tm * 64, 0), barrier=ready, evict="normal")  # error[CAKE-L010]: `evict` is "first"
            a.tma_load(A, coords=(tm * 64, 0), barrier=ready, evict=1)  # error[CAKE-L010]: found an integer
            lm.wait(ready)
            lm.mma(acc, a, b.T, accumulate=False)
            lm.store(C, acc, coords=(tm * 64, 0))
