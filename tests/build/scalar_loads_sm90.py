"""One-element loads (`lm.load(T, coords=..., shape=())`): a value every thread reads, broadcast
to whatever it meets. Here the per-tensor scales of an FP8 GEMM, as `torch._scaled_mm` takes
them (one f32 each, in device memory), in an accumulator tile's epilogue, and an FP8 row
quantization's scale, in a row-layout value."""
import cake
from cake import lm

H = 1024


@cake.schedule(targets=["sm_90a"])
def gemm_tensorwise(A: lm.tensor[lm.e4m3, "M", "K"],
                    B: lm.tensor[lm.e4m3, "N", "K"],
                    SA: lm.tensor[lm.f32, 1],
                    SB: lm.tensor[lm.f32, 1],
                    C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 128), dtype=lm.e4m3, swizzle=128)
    sB = pool.view(shape=(64, 128), dtype=lm.e4m3, swizzle=128)
    math = lm.role(warpgroup=0)
    full = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=full)
            sB.tma_load(B, coords=(tn * 64, 0), barrier=full)
            lm.wait(full)
            lm.mma(acc, sA, sB.T, accumulate=False)
            scale = lm.load(SA, coords=(0,), shape=()) * lm.load(SB, coords=(0,), shape=())
            lm.store(C, lm.cast(acc * scale, lm.bf16), coords=(tm * 64, tn * 64))


@cake.schedule(targets=["sm_90a"])
def quant_static(X: lm.tensor[lm.bf16, "R", H], S: lm.tensor[lm.f32, 1],
                 Y: lm.tensor[lm.e4m3, "R", H]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, H), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, H)), lm.f32)
            inv = 1.0 / lm.load(S, coords=(0,), shape=(), fill=1.0)
            lm.store(Y, lm.cast(x * inv, lm.e4m3), coords=(t * 4, 0))
