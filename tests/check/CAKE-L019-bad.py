# CAKE-L019: `col` advances at the end of the body, but every iteration reads the 0 bound before the loop
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def row_sums(D: lm.tensor[lm.f32, "M", 64], OUT: lm.tensor[lm.f32, "M"]):
    math = lm.role(warpgroup=0)
    acc = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            acc[:] = 0.0
            col = 0
            for k in lm.range(4):
                d = lm.load(D, coords=(tm * 64, col), shape=(64, 16), fill=0.0)  # error[CAKE-L019]
                acc[:] = acc + lm.sum(d, axis=1)
                col = col + 16
            lm.store(OUT, acc, coords=(tm * 64,))
