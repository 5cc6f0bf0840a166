# CAKE-L004: `/` on two integer values: Python's gives a float, C's truncates, so neither is
# picked silently (on indices as on i32 registers); `//` floors, as in Python.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def halves(X: lm.tensor[lm.f32, "M", "N"], Y: lm.tensor[lm.f32, "M", "N"]):
    math = lm.role(warpgroup=0)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            x = lm.load(X, coords=(tm * 64, 0), shape=(64, 128), fill=0.0)
            col = lm.iota((64, 128), 1)
            lm.store(Y, x + lm.cast(col / 2, lm.f32), coords=(tm * 64, 0))  # error[CAKE-L004]: `/` on integer values
            lm.store(Y, x + lm.cast(col // 2, lm.f32), coords=(tm * 64, tm / 2))  # error[CAKE-L004]: `/` on integer indices
