# CAKE-S015 stays quiet where the zero-filled rows cannot reach a result: 1000 rows of A fill
# only part of the last 128-row box, but A is read only by the MMA, whose accumulator rows from
# the filled rows go only to a store that skips rows past C (a row maximum over zero-filled keys
# is CAKE-S015-bad.py).
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemm(A: lm.tensor[lm.bf16, 1000, "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, 1000, "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(1000, 128), lm.cdiv(N, 256)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
            lm.store(C, lm.cast(acc * 2.0, lm.bf16), coords=(tm * 128 + math.index * 64, tn * 256))


# The same through shared memory: the accumulator is staged in a view and read back (as a split
# kernel's partial sums are) on its way to the store; the filled rows stay rows of their own.
@cake.schedule(targets=["sm_90a"], persistent=True)
def staged(A: lm.tensor[lm.bf16, 1000, "K"],
           B: lm.tensor[lm.bf16, "N", "K"],
           C: lm.tensor[lm.bf16, 1000, "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    part = pool.view(shape=(128, 128), dtype=lm.f32)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    epi = lm.named_barrier(roles=[math])
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(1000, 128), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
            part.rows(math.index * 64, 64).store(acc)
            lm.sync(epi)
            total = acc + part.rows(math.index * 64, 64).load()
            lm.store(C, lm.cast(total, lm.bf16), coords=(tm * 128 + math.index * 64, tn * 128))
            lm.sync(epi)


# Staged the same way, then reduced: CAKE-S015. (The rule does not follow which axis a
# reduction takes, so any reduction of values computed from the filled rows keeps it.)
@cake.schedule(targets=["sm_90a"], persistent=True)
def staged_max(A: lm.tensor[lm.bf16, 1000, "K"],
           B: lm.tensor[lm.bf16, "N", "K"],
           R: lm.tensor[lm.f32, 1000]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    part = pool.view(shape=(128, 128), dtype=lm.f32)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    epi = lm.named_barrier(roles=[math])
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(1000, 128), lm.cdiv(N, 128)):
        with load:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 128, k * 64), barrier=full)  # warning[CAKE-S015]
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with math:
            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(math.index * 64, 64), sB.T, accumulate=k > 0, release=empty)
            part.rows(math.index * 64, 64).store(acc)
            lm.sync(epi)
            lm.store(R, lm.max(part.rows(math.index * 64, 64).load(), axis=1), coords=(tm * 128 + math.index * 64,))
            lm.sync(epi)
