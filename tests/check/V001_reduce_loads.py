# A row reduction of loads alone (no fragment in its argument) takes its layout from the
# per-row fragment it is assigned to, and the loaded tile keeps it wherever the same expression
# is read. A tile loaded only for a reduction that is stored directly has no layout, and the
# reduction is reported.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def reduce_loads(X: lm.tensor[lm.bf16, "R", 1024], W: lm.tensor[lm.bf16, 1024],
                 S: lm.tensor[lm.f32, "R"]):
    rows = lm.role(warpgroup=0)
    s = rows.fragment(shape=(4,), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            w = lm.cast(lm.load(W, coords=(0,), shape=(1024,)), lm.f32)
            s[:] = lm.sum(x * w[None, :], axis=1)
            lm.store(S, s, coords=(t * 4,))
            lm.store(S, lm.max(x, axis=1), coords=(t * 4,))
            y = lm.load(X, coords=(t * 4, 0), shape=(4, 1024))
            lm.store(S, lm.sum(lm.cast(y, lm.f32), axis=1), coords=(t * 4,))  # note[CAKE-V001]
