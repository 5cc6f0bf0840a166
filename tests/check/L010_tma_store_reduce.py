# view.tma_store(..., reduce="add") adds the tile into the tensor (cp.reduce.async.bulk.tensor):
# "add" is the one reduction, of f32, f16, bf16 or i32 elements.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], zero=["S"])
def adds(S: lm.tensor[lm.f32, "M", 64], Q: lm.tensor[lm.e4m3, "M", 64]):
    pool = lm.smem()
    s = pool.view(shape=(64, 64), dtype=lm.f32)
    q = pool.view(shape=(64, 64), dtype=lm.e4m3)
    math = lm.role(warpgroup=0)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            s.store(0.0)
            lm.fence_proxy_async()
            s.tma_store(S, coords=(tm * 64, 0), reduce="add")
            s.tma_store(S, coords=(tm * 64, 0), reduce="max")  # error[CAKE-L010]: `reduce` is "add"
            s.tma_store(S, coords=(tm * 64, 0), reduce=1)  # error[CAKE-L010]: found an integer
            q.tma_store(Q, coords=(tm * 64, 0), reduce="add")  # error[CAKE-L008]: adds f32, f16, bf16 or i32 elements
