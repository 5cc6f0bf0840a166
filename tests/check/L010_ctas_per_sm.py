# `ctas_per_sm` is the CTAs each SM must hold at once: a whole number from 1 to 32
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], ctas_per_sm=0)  # error[CAKE-L010]: is in 1..=32, got 0
def copy(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0))
