# Fragments assigned together (`a[:], b[:] = x, y`): what the statement refuses, each at its place,
# all in one run.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def pairs(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warpgroup=0)
    p = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    q = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            p[:], q[:] = x, x * 2.0
            p[:], q[:] = q, p
            p[:], q[:] = x  # error[CAKE-L002]: take a tuple of values
            p[:], q[:] = x, x, x  # error[CAKE-L007]: 2 fragments but 3 values
            p[:], p[:] = x, x  # error[CAKE-L002]: `p` is assigned twice
            p[:], n = x, 3  # error[CAKE-L002]: only with other fragments
            p[:], (q[:], n) = x, (x, 3)  # error[CAKE-L002]: only with other fragments
            p[:], *q = x, x  # error[CAKE-L002]: only with other fragments
            p[:], q[0] = x, x  # error[CAKE-L002]: assigned whole
            p[:], q[:] = x, lm.cast(x, lm.bf16)  # error[CAKE-L008]: holds f32
            lm.store(Y, lm.cast(p + q, lm.bf16), coords=(t * 4, 0))
