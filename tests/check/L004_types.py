# Operands of the wrong kind.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], persistent=1)  # error[CAKE-L004]: `persistent` is True or False
def copy(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor["bf16", "M", "K"], t):  # error[CAKE-L004]: is the dtype error[CAKE-L004]: parameter `t` needs a type
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype="bf16", stages=2, swizzle=128)  # error[CAKE-L004]: dtype must be a dtype
    sB = pool.view(shape="big", dtype=lm.bf16, stages=2, swizzle=128)  # error[CAKE-L004]: shape must be a tuple
    sC = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[pipe], consumers=[load])  # error[CAKE-L004]: producers must contain roles
    ok = lm.barrier(pipe, producers=[load], consumers=[load])
    acc = load.fragment(shape=(64, 64), dtype=lm.f32)
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        with pool:  # error[CAKE-L004]: `with` expects a role
            pass
        with load:
            sC.tma_load(A, coords=(tm * 128, tk * 64), barrier=pipe)  # error[CAKE-L004]: `barrier` must be a barrier, found a pipeline
            sC.tma_load(sC, coords=(tm * 128, tk * 64), barrier=ok)  # error[CAKE-L004]: must be a tensor parameter
            lm.wait(pipe)  # error[CAKE-L004]: found a pipeline
            n = 3
            n(4)  # error[CAKE-L004]: not callable
            for i in 5:  # error[CAKE-L004]: cannot loop over an integer
                pass
            v = pool[0]  # error[CAKE-L004]: cannot be indexed
            a, b = 7  # error[CAKE-L004]: cannot unpack
            lm.mma(sC, sC, sC.T)  # error[CAKE-L004]: the accumulator lives in registers
            q = tm / 2  # error[CAKE-L004]: `/` on integer indices is ambiguous
            r = lm.exp2(tm)  # error[CAKE-L004]: needs a float value
            c = lm.cast(tm > 0, lm.f32)  # error[CAKE-L004]: cast a number, not a condition
            m = lm.argmin(acc, axis=1, packed=1)  # error[CAKE-L004]: `packed` is a compile-time bool
