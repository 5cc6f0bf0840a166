# Operations outside a role region, and structure in the wrong place.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    lm.wait(full)  # error[CAKE-L015]: operations must be issued inside a role region
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        sA.tma_load(A, coords=(tm * 128, tk * 64), barrier=full)  # error[CAKE-L015]: inside a role region
        x = lm.load(A, coords=(tm * 128, 0), shape=(128, 64))  # error[CAKE-L015]: lm.load must be inside a role region
        with load:
            with math:  # error[CAKE-L015]: is nested inside role region `load`
                pass
            for t in lm.tiles(2):  # error[CAKE-L015]: exactly one tile loop
                pass
        with math:
            lm.wait(full)
    cake.schedule(targets=["sm_90a"])  # error[CAKE-L015]: is a decorator
    return 0  # error[CAKE-L015]: a schedule does not return a value


@cake.schedule(targets=["sm_90a"])
def no_tiles(A: lm.tensor[lm.bf16, "M", "K"]):  # error[CAKE-L015]: the schedule has no tile loop
    load = lm.role(warpgroup=0)


def pick(flag):
    if flag > 0:
        return 1  # error[CAKE-L015]: cannot return from inside a run-time `if`
    return 2


@cake.schedule(targets=["sm_90a"])
def nested(A: lm.tensor[lm.bf16, "M", "K"]):
    load = lm.role(warpgroup=0)
    with load:
        for tm in lm.tiles(4):  # error[CAKE-L015]: must be at the top level
            pass
    for tm in lm.tiles(4):
        with load:
            x = pick(tm)


@cake.schedule(targets=["sm_90a"])
def stage_outside(A: lm.tensor[lm.bf16, "M", 64]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    for tm in lm.tiles(4):
        with load:
            s = pipe.stage  # error[CAKE-L015]: no enclosing loop runs over it
            for k in lm.range(2, pipeline=pipe):
                sA.stage(pipe.stage).tma_load(A, coords=(tm * 64, 0), barrier=full)
                lm.wait(full)
