# Shapes that do not fit: mma operands, broadcasting, coordinates, unpacking, rows.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"], C: lm.tensor[lm.f32, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)
    math = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)
    half = math.fragment(shape=(64, 128), dtype=lm.f32)
    row = math.fragment(shape=(64,), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):
        with math:
            sA.tma_load(A, coords=(tm * 64,), barrier=full)  # error[CAKE-L007]: `coords` has 1 coordinates but `A` has 2
            sB.tma_load(B, coords=(tn * 256, 0, 0), barrier=full)  # error[CAKE-L007]: has 3 coordinates
            lm.wait(full)
            lm.mma(acc, sA, sB)  # error[CAKE-L007]: `b` has 64 columns error[CAKE-L007]: `a` is 64-deep in K but `b` is 256-deep
            lm.mma(acc, sA, sB.T)
            lm.mma(half, sA, sB.T)  # error[CAKE-L007]: `b` has 256 columns but the accumulator has 128
            y = acc + half  # error[CAKE-L007]: shapes [64, 256] and [64, 128] do not broadcast
            z = acc * row  # error[CAKE-L007]: do not broadcast
            zz = acc * row[:, None]
            acc[:] = half  # error[CAKE-L007]: fragment `acc` has shape [64, 256]
            a, b = (1, 2, 3)  # error[CAKE-L007]: 2 names but 3 values
            r = sA.rows(48, 32)  # error[CAKE-L007]: rows 48..80 are outside the view's 64 rows
            lm.store(C, acc, coords=(tm * 64, tn * 256))
            lm.store(C, acc, coords=(tm * 64,))  # error[CAKE-L007]: `coords` has 1 coordinates but `C` has 2
    for t in lm.tiles(4, 4):  # error[CAKE-L015]: exactly one tile loop
        pass
