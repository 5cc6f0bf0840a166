# CAKE-L017 across iterations: a name bound before a run-time loop to an expression that reads
# a fragment goes stale on the second iteration when the body overwrites that fragment.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def running_min(D: lm.tensor[lm.f32, "M", 64], OUT: lm.tensor[lm.f32, "M"]):
    math = lm.role(warpgroup=0)
    best = math.fragment(shape=(64,), dtype=lm.f32)
    first = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            best[:] = lm.inf
            start = best * 2.0
            kept = best * 3.0
            first[:] = kept
            for k in lm.range(4):
                d = lm.load(D, coords=(tm * 64, k * 16), shape=(64, 16), fill=lm.inf)
                lm.store(OUT, start, coords=(tm * 64,))  # error[CAKE-L017]: before the loop
                lm.store(OUT, first, coords=(tm * 64,))
                again = best * 2.0
                lm.store(OUT, again, coords=(tm * 64,))
                lm.store(OUT, start, coords=(tm * 64,))
                best[:] = lm.minimum(best, lm.min(d, axis=1))
                for j in range(2):
                    lm.store(OUT, best, coords=(tm * 64,))
            lm.store(OUT, best, coords=(tm * 64,))


@cake.schedule(targets=["sm_90a"])
def nested(D: lm.tensor[lm.f32, "M", 64], OUT: lm.tensor[lm.f32, "M"]):
    math = lm.role(warpgroup=0)
    best = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            best[:] = lm.inf
            start = best + 1.0
            for k in lm.range(2):
                for j in lm.range(2):
                    lm.store(OUT, start, coords=(tm * 64,))  # error[CAKE-L017]
                    d = lm.load(D, coords=(tm * 64, j * 16), shape=(64, 16), fill=lm.inf)
                    best[:] = lm.minimum(best, lm.min(d, axis=1))


@cake.schedule(targets=["sm_90a"])
def overwritten_by_the_outer_loop(D: lm.tensor[lm.f32, "M", 64], OUT: lm.tensor[lm.f32, "M"]):
    math = lm.role(warpgroup=0)
    best = math.fragment(shape=(64,), dtype=lm.f32)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            best[:] = lm.inf
            start = best + 1.0
            for k in lm.range(2):
                for j in lm.range(2):
                    lm.store(OUT, start, coords=(tm * 64,))  # error[CAKE-L017]: line 58
                d = lm.load(D, coords=(tm * 64, k * 16), shape=(64, 16), fill=lm.inf)
                best[:] = lm.minimum(best, lm.min(d, axis=1))
