# Warp votes: lm.any / lm.all take a per-element condition of the current role
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def votes(A: lm.tensor[lm.f32, "M", 64]):
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    x = math.fragment(shape=(64,), dtype=lm.f32)
    y = load.fragment(shape=(64,), dtype=lm.f32)
    early = lm.any(acc > 0.0)  # error[CAKE-L015]: lm.any must be inside a role region
    for tm in lm.tiles(M // 64):
        with math:
            if lm.any(x):  # error[CAKE-L004]: takes a per-element condition (a bool register value), found a f32
                x[:] = 0.0
            if lm.all(tm > 3):  # error[CAKE-L004]: this condition is already one value
                x[:] = 1.0
            if lm.any(y > 0.0):  # error[CAKE-L015]: votes over role `load`'s registers inside role `math`'s region
                x[:] = 2.0
            if lm.all(True):
                x[:] = 3.0
            if x > 1.0:  # error[CAKE-L004]: becomes one decision per warp with lm.any or lm.all
                x[:] = 4.0
            x[:] = lm.select(lm.any(x > 1.0) and tm > 0, x, 0.0)
