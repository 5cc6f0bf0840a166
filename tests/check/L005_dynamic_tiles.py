# Dynamic tile loops (docs/language.md §8.1): what the front-end refuses, each in its own
# schedule, and two it accepts
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def not_persistent(A: lm.tensor[lm.bf16, 16, "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64), dynamic=True):  # error[CAKE-L005]
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

@cake.schedule(targets=["sm_90a"], persistent=True, cluster=(2, 1, 1))
def clustered(A: lm.tensor[lm.bf16, 16, "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64), dynamic=True):  # error[CAKE-L005]
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
def not_a_bool(A: lm.tensor[lm.bf16, 16, "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64), dynamic=1):  # error[CAKE-L004]
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
def dynamic(A: lm.tensor[lm.bf16, 16, "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
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

@cake.schedule(targets=["sm_90a"])
def static_by_default(A: lm.tensor[lm.bf16, 16, "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    for tn in lm.tiles(lm.cdiv(N, 64), dynamic=False):
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
def with_stream(A: lm.tensor[lm.bf16, 16, "K"],
        B: lm.tensor[lm.bf16, "N", "K"],
        C: lm.tensor[lm.bf16, 16, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sX = pool.view(shape=(16, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    KB = lm.cdiv(K, 64)
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB, dynamic=True):  # error[CAKE-L005]
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)
            lm.stream_fixup(acc)
            if k1 == KB:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)
