# CAKE-L018: the passing near-miss — the doubling goes through a fragment, computed once per step
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def blowup(D: lm.tensor[lm.f32, "M", 64], OUT: lm.tensor[lm.f32, "M"]):
    math = lm.role(warpgroup=0)
    total = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            x = lm.sum(lm.load(D, coords=(tm * 64, 0), shape=(64, 64)), axis=1)
            total[:] = x
            for i in range(17):
                total[:] = total + total
            lm.store(OUT, total, coords=(tm * 64,))
