# rows= names who holds a row: "thread", "warp" or "warpgroup" — and a warp cannot hold a
# warpgroup's row.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def norm(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warpgroup=0)
    one = lm.role(warp=4)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="lane")  # error[CAKE-L010]
    y = one.fragment(shape=(1, 1024), dtype=lm.f32, rows="warpgroup")  # error[CAKE-L010]
    z = rows.fragment(shape=(3, 1024), dtype=lm.f32, rows="warp")  # error[CAKE-L007]
    w = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows=4)  # error[CAKE-L004]
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            lm.store(Y, lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.bf16), coords=(t * 4, 0))
            # z's declaration failed above: assigning to it is not a second finding.
            z[:] = lm.cast(lm.load(X, coords=(t * 3, 0), shape=(3, 1024)), lm.f32)
