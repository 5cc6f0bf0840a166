# view.cp_async(..., evict=...) sets the L2 eviction priority of the lines the role's copies bring
# in, as on tma_load: "first", "last" or None (the default).
import cake
from cake import lm


@cake.schedule(targets=["sm_80", "sm_90a"])
def copies(X: lm.tensor[lm.bf16, "R", 64], Y: lm.tensor[lm.bf16, "R", 64]):
    pool = lm.smem()
    s = pool.view(shape=(64, 64), dtype=lm.bf16)
    rows = lm.role(warps=[0, 1, 2, 3])
    full = lm.barrier(producers=[rows], consumers=[rows])
    for t in lm.tiles(lm.cdiv(R, 64)):
        with rows:
            s.cp_async(X, coords=(t * 64, 0), barrier=full, evict="first")
            s.cp_async(X, coords=(t * 64, 0), barrier=full, evict="last")
            s.cp_async(X, coords=(t * 64, 0), barrier=full, evict=None)
            s.cp_async(X, coords=(t * 64, 0), barrier=full, evict="keep")  # error[CAKE-L010]: `evict` is "first"
            s.cp_async(X, coords=(t * 64, 0), barrier=full, evict=2)  # error[CAKE-L010]: found an integer
            lm.wait(full)
            s.copy_to(Y, coords=(t * 64, 0))
