# CAKE-L017: `better` is used after `best_d`, which it reads, was overwritten
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def argmin(D: lm.tensor[lm.f32, "M", 64], IDS: lm.tensor[lm.i32, "M"]):
    math = lm.role(warpgroup=0)
    best_d = math.fragment(shape=(64,), dtype=lm.f32)
    best_i = math.fragment(shape=(64,), dtype=lm.i32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            best_d[:] = lm.inf
            best_i[:] = 0
            d = lm.load(D, coords=(tm * 64, 0), shape=(64, 64), fill=lm.inf)
            tile_d = lm.min(d, axis=1)
            better = tile_d < best_d
            best_d[:] = lm.select(better, tile_d, best_d)
            best_i[:] = lm.select(better, lm.argmin(d, axis=1), best_i)  # error[CAKE-L017]
            lm.store(IDS, best_i, coords=(tm * 64,))
