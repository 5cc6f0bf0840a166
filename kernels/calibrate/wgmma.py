"""Calibration probe: wgmma on resident shared-memory tiles. One warpgroup per CTA TMA-loads a
64 x BK tile of A and a BN x BK tile of B once, then issues REPS (the length of `R`) MMAs of
64 x BN x BK on them back to back, and stores its accumulator. No copy is in flight during the
loop, so with REPS large the time is the tensor-core rate. The CTA is small (128 threads,
40 KiB at BN = 256), so several share an SM; `python -m cake.calibrate` runs twelve tiles per
SM, at BN = 256 (mma_tflops_16bit) and, substituted, BN = 64, 128 and 192
([mma_tflops_16bit_by_n]): the per-N wgmma rate. The registers decide how many CTAs reside
(ptxas: 82 per thread at BN = 64, six CTAs; 144 at 128, three; 248 at 256, two), and twelve
tiles per SM fill whole waves at each. With FP8 = 1 the tiles are e4m3, 128 deep (one 128-byte
row, as the 16-bit tiles' 64): the FP8 wgmma rate (mma_tflops_8bit), N = 256."""
import cake
from cake import lm

FP8 = 0
DT = lm.e4m3 if FP8 else lm.bf16
BN = 256
BK = 128 if FP8 else 64


@cake.schedule(targets=["sm_90a"])
def wgmma(A: lm.tensor[DT, "M", BK],
          B: lm.tensor[DT, BN, BK],
          R: lm.tensor[lm.i32, "REPS"],
          C: lm.tensor[lm.f32, "M", BN]):
    del R  # a calibration kernel: nothing to read or write
    pool = lm.smem()
    sA = pool.view(shape=(64, BK), dtype=DT, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=DT, swizzle=128)
    math = lm.role(warpgroup=0)
    ready = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=ready)
            sB.tma_load(B, coords=(0, 0), barrier=ready)
            lm.wait(ready)
            for r in lm.range(REPS):
                lm.mma(acc, sA, sB.T, accumulate=r > 0)
            lm.store(C, acc, coords=(tm * 64, 0))
