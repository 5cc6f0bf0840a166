# CAKE-S027: stream-K partials stored or fixed up where they must not be, each in its own schedule
import cake
from cake import lm



@cake.schedule(targets=["sm_90a"], persistent=True)
def fixup_on_some_runs(A: lm.tensor[lm.bf16, 16, "K"],
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
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)
            if k0 == 0:
                lm.stream_fixup(acc)  # error[CAKE-S027]
            if k1 == KB:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)


@cake.schedule(targets=["sm_90a"], persistent=True)
def never_fixed_up(A: lm.tensor[lm.bf16, 16, "K"],
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
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)

            lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)  # error[CAKE-S027]


@cake.schedule(targets=["sm_90a"], persistent=True)
def stored_where_the_tile_starts(A: lm.tensor[lm.bf16, 16, "K"],
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
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
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
            if k0 == 0:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)  # error[CAKE-S027]


@cake.schedule(targets=["sm_90a"], persistent=True)
def shared_epilogue_never_fixed_up(A: lm.tensor[lm.bf16, "M", "K"],
                                   B: lm.tensor[lm.bf16, "N", "K"],
                                   C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sC = pool.view(shape=(64, 128), dtype=lm.bf16, swizzle=128)
    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    KB = lm.cdiv(K, 64)
    for tm, tn, k0, k1 in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 128), stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)
                sB.tma_load(B, coords=(tn * 128, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > k0, release=empty)
            if k1 == KB:
                sC.store(lm.cast(acc, lm.bf16))  # error[CAKE-S027]
                lm.fence_proxy_async()
                sC.tma_store(C, coords=(tm * 64, tn * 128))


@cake.schedule(targets=["sm_90a"], persistent=True)
def fixed_up_twice(A: lm.tensor[lm.bf16, 16, "K"],
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
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
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
            lm.stream_fixup(acc)  # error[CAKE-S027]
            if k1 == KB:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * 64), transpose=True)


@cake.schedule(targets=["sm_90a"], persistent=True)
def copied_before_the_fixup(A: lm.tensor[lm.bf16, 16, "K"],
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
    out = math.fragment(shape=(64, 16), dtype=lm.f32)
    KB = lm.cdiv(K, 64)
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * 64, k * 64), barrier=full)
                sX.tma_load(A, coords=(0, k * 64), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)
            out[:] = acc * 2.0
            lm.stream_fixup(acc)
            if k1 == KB:
                lm.store(C, lm.cast(out, lm.bf16), coords=(0, tn * 64), transpose=True)  # error[CAKE-S027]


# The passing near-miss: the copy is taken after the fix-up, so it holds the tile's sum.
@cake.schedule(targets=["sm_90a"], persistent=True)
def copied_after_the_fixup(A: lm.tensor[lm.bf16, 16, "K"],
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
    out = math.fragment(shape=(64, 16), dtype=lm.f32)
    KB = lm.cdiv(K, 64)
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, 64), stream=KB):
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
            out[:] = acc * 2.0
            if k1 == KB:
                lm.store(C, lm.cast(out, lm.bf16), coords=(0, tn * 64), transpose=True)
