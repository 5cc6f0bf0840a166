# Fragments assigned together lower as row-layout tiles of one shape and holder: one loop nest
# over their chunks. Anything else is reported at the statement.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def pairs(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warpgroup=0)
    p = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    q = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    h = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warpgroup")
    s = rows.fragment(shape=(4,), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            p[:], q[:] = x, x * x
            p[:], h[:] = x, x  # note[CAKE-V001]: one shape and row holder
            s[:], q[:] = lm.sum(p, axis=1), x  # note[CAKE-V001]: `s` is not one
            lm.store(Y, lm.cast(p + q * s[:, None], lm.bf16), coords=(t * 4, 0))
            lm.store(Y, lm.cast(h, lm.bf16), coords=(t * 4, 0))
