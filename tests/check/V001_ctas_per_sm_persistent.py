# `ctas_per_sm` on a persistent schedule is a note: its grid is one CTA per SM, so a second CTA
# per SM would never be launched
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True, ctas_per_sm=2)
def rmsnorm(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):  # note[CAKE-V001]: on a persistent schedule is not lowered
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0))
