# lm.load(..., evict=...) and lm.store(..., evict=...) set the L2 eviction priority of the lines
# a row-layout read or write touches: "first", "last" or None (the default), as on tma_load.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def rows(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024), evict="first"), lm.f32)
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024), evict=None), lm.f32)
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024), evict="stream"), lm.f32)  # error[CAKE-L010]: `evict` is "first"
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0), evict="last")
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0), evict=True)  # error[CAKE-L010]: found a bool
