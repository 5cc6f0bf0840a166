# CAKE-V001: a one-element load (shape=()) reads bf16, f16, f32 or i32; an FP8 scale is a coverage
# note on its own line, never a C++ compile error.
import cake
from cake import lm

H = 1024


@cake.schedule(targets=["sm_90a"])
def quant(X: lm.tensor[lm.bf16, "R", H], S: lm.tensor[lm.e4m3, 1],
          Y: lm.tensor[lm.bf16, "R", H]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, H), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, H)), lm.f32)
            s = lm.cast(lm.load(S, coords=(0,), shape=()), lm.f32)  # note[CAKE-V001]: one-element load of e4m3
            lm.store(Y, lm.cast(x * s, lm.bf16), coords=(t * 4, 0))
