# lm.iota(shape, axis): the axis must be one of the shape's (negative counts from the end), and
# the value is a register value, so it needs a role region.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def tail(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    outside = lm.iota((4, 1024), 1)  # error[CAKE-L015]
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            x[:] = lm.select(lm.iota((4, 1024), 2) < 1000, x, 0.0)  # error[CAKE-L010]: axis 2 is out of range
            x[:] = lm.select(lm.iota((4, 1024), -1) < 1000, x, 0.0)
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0))
