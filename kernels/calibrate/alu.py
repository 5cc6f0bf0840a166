"""Calibration probe: element-wise register math. One warpgroup per CTA computes a 64 x 256 f32
accumulator with one MMA (which gives the fragment its register layout), then applies REPS (the
length of `R`) rounds of three operations per element (multiply, subtract, maximum) and stores
it. The time per operation is the rate the cost model charges epilogue math at
(alu_gops_per_sm). With MINMAX = 1 it applies a minimum and a maximum instead (the compares,
selects and min/max of argmin epilogues issue to the integer/ALU pipe): that rate over
alu_gops_per_sm is alu_int_ratio."""
import cake
from cake import lm

BN, BK = 256, 64
MINMAX = 0       # 1: two rounds of minimum and maximum per element instead


@cake.schedule(targets=["sm_90a"])
def alu(A: lm.tensor[lm.bf16, "M", BK],
        B: lm.tensor[lm.bf16, BN, BK],
        R: lm.tensor[lm.i32, "REPS"],
        C: lm.tensor[lm.f32, "M", BN]):
    del R  # a calibration kernel: nothing to read or write
    pool = lm.smem()
    sA = pool.view(shape=(64, BK), dtype=lm.bf16, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    ready = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=ready)
            sB.tma_load(B, coords=(0, 0), barrier=ready)
            lm.wait(ready)
            lm.mma(acc, sA, sB.T, accumulate=False)
            for r in lm.range(REPS):
                if MINMAX == 1:
                    acc[:] = lm.maximum(lm.minimum(acc, 3.0), -3.0)
                else:
                    acc[:] = lm.maximum(acc * 0.999, acc - 0.5)
            lm.store(C, acc, coords=(tm * 64, 0))

