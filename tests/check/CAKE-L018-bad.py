# CAKE-L018: doubling a value through names: 2^17 terms
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def blowup(D: lm.tensor[lm.f32, "M", 64], OUT: lm.tensor[lm.f32, "M"]):
    math = lm.role(warpgroup=0)
    total = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            x = lm.sum(lm.load(D, coords=(tm * 64, 0), shape=(64, 64)), axis=1)
            for i in range(17):
                x = x + x  # error[CAKE-L018]
            total[:] = x
            lm.store(OUT, total, coords=(tm * 64,))
