# A name stands for its whole expression: doubling a value through a chain of names grows it
# exponentially, and the front-end stops it (once) before the printer or lowering expand it.
# The same doubling through a fragment (`acc[:] = acc + acc`) is the near miss: no finding.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def k(X: lm.tensor[lm.f32, "M", "N"], Y: lm.tensor[lm.f32, "M", "N"]):
    math = lm.role(warpgroup=0)
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            x = lm.load(X, coords=(tm * 64, 0), shape=(64, 128))
            for i in range(17):
                x = x + x  # error[CAKE-L018]: expands to more than
            y = lm.load(X, coords=(tm * 64, 0), shape=(64, 128))
            acc[:] = y
            for i in range(8):
                acc[:] = acc + acc
            lm.store(Y, acc, coords=(tm * 64, 0))
