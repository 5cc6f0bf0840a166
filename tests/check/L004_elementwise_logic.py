# Per-element conditions combine with `&`, `|` and `~` (Python's `and`, `or`, `not` need one
# truth value); each side must be a condition, per element or not.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def clip(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024], lo: lm.f32):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            keep = (x > lo) & ~(x > 1.0) | (t == 0)
            x[:] = lm.select(keep, x, 0.0)
            x[:] = lm.select(x & (x > 1.0), x, 0.0)  # error[CAKE-L004]: combine conditions
            x[:] = lm.select((x > 0.0) and (x < 1.0), x, 0.0)  # error[CAKE-L004]: expected a condition
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0))
