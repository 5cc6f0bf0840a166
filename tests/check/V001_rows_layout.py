# What row-layout values (rows=) do not lower yet, each reported at its place: a bf16
# fragment, an argmax, an FP8 load, a cast that only a store does.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def rows_limits(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024],
                I: lm.tensor[lm.i32, "R"], Q: lm.tensor[lm.e4m3, "R", 1024]):
    rows = lm.role(warpgroup=0)
    h = rows.fragment(shape=(4, 1024), dtype=lm.bf16, rows="warp")  # note[CAKE-V001]
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            lm.store(I, lm.argmax(x, axis=1), coords=(t * 4,))  # note[CAKE-V001]
            x[:] = x + lm.cast(lm.load(Q, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)  # note[CAKE-V001]
            h[:] = lm.cast(x, lm.bf16)  # note[CAKE-V001]
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0))
