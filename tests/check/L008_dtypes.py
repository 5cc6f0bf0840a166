# Element types that disagree.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.f16, "N", "K"], C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.f16, stages=2, swizzle=128)
    sX = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)
    math = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)
    other = math.fragment(shape=(64, 256), dtype=lm.bf16)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):
        with math:
            sA.tma_load(B, coords=(tm * 64, 0), barrier=full)  # error[CAKE-L008]: view `sA` holds bf16 but tensor `B` holds f16
            sX.tma_load(B, coords=(tn * 256, 0), barrier=full)  # error[CAKE-L008]: holds f16
            lm.wait(full)
            lm.mma(acc, sA, sB.T)  # error[CAKE-L008]: mma inputs differ: `a` is bf16, `b` is f16
            y = acc + other  # error[CAKE-L008]: operands have different dtypes: f32 and bf16
            acc[:] = other  # error[CAKE-L008]: fragment `acc` holds f32, but the value is bf16
            lm.store(C, acc, coords=(tm * 64, tn * 256))  # error[CAKE-L008]: lm.cast(value, lm.bf16)
            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))
