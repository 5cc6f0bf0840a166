# Values that must be known at compile time but are not.
import cake
from cake import lm

POOL = lm.smem()  # error[CAKE-L006]: module-level `POOL` must be a compile-time constant
ROLE = lm.role(warpgroup=0)  # error[CAKE-L006]: module-level `ROLE`


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"], n: lm.i32):
    big = lm.smem(size=M)  # error[CAKE-L006]: pool size must be known at compile time
    pool = lm.smem()
    sA = pool.view(shape=(M, 64), dtype=lm.bf16, stages=2, swizzle=128)  # error[CAKE-L006]: shape must be known
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=n, swizzle=128)  # error[CAKE-L006]: stages must be known
    sC = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=n)  # error[CAKE-L006]: swizzle must be known
    sD = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    bad = lm.role(warpgroup=0, regs=n)  # error[CAKE-L006]: regs must be known
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=K)  # error[CAKE-L006]: stages must be known
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        with load:
            for i in range(K):  # error[CAKE-L006]: use `lm.range(...)`
                pass
            assert tm < 4  # error[CAKE-L006]: `assert` checks compile-time conditions only
            x = 1 if tm > 0 else 2  # error[CAKE-L006]: use lm.select
            t = (1, 2, 3)[tk]  # error[CAKE-L006]: tuples are indexed with compile-time integers
            acc = load.fragment(shape=(64, n), dtype=lm.f32)  # error[CAKE-L006]: shape must be known
            frag = load.fragment(shape=(64, 64), dtype=lm.f32)
            s = lm.sum(frag, axis=tm)  # error[CAKE-L006]: axis must be known
            r = sD.rows(0, tm)  # error[CAKE-L006]: the row count must be known
