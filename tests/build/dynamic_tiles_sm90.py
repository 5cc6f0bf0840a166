"""A dynamic tile loop (docs/language.md §8.1), for the build test: a TMA producer role that one
thread issues for (issue-only) and a warpgroup of consumers both walk the tiles one thread takes
from the counter, through the ring in shared memory; `consumer_first` declares the consumers
first, and `rows_only` has no copies at all (its one role takes its own tiles)."""
import cake
from cake import lm

STAGES = 4


@cake.schedule(targets=["sm_90a"], persistent=True)
def dynamic_tiles(A: lm.tensor[lm.bf16, 16, "K"],
                  B: lm.tensor[lm.bf16, "N", "K"],
                  C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64), dynamic=True):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)


@cake.schedule(targets=["sm_90a"], persistent=True)
def consumer_first(A: lm.tensor[lm.bf16, 16, "K"],
                   B: lm.tensor[lm.bf16, "N", "K"],
                   C: lm.tensor[lm.bf16, 16, "N"]):
    # The consumers are declared first: the producer still takes the tiles (it runs ahead).
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=STAGES, swizzle=128)
    math = lm.role(warpgroup=1, regs=232)
    load = lm.role(warpgroup=0, regs=40)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64), dynamic=True):
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)


@cake.schedule(targets=["sm_90a"], persistent=True)
def rows_only(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    # No role copies into shared memory: the one role takes its own tiles, and grabs the next
    # once this one's stores are issued.
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4), dynamic=True):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            lm.store(Y, lm.cast(x * 2.0, lm.bf16), coords=(t * 4, 0))
