"""A tiny family member for cake-eval's tests: Y = X · Wᵀ over rows of X, one wgmma per 64-row
tile, its width H a compile-time extent (a fixed tensor extent and a view's shape) that a
contract's [specialize] table sets from a dimension of each shape."""
import cake
from cake import lm

BM = 64         # rows of X per tile: one warpgroup, wgmma M
H = 64          # the hidden size: fixed per build; the contract builds one kernel per value
# Whole 64-column panels of the 128B swizzle (TMA zero-fills the padding); a row narrower than one
# panel stays as it is, which the verifier refuses: the runner's tests need a value it cannot take.
HP = (H + 63) // 64 * 64 if H >= 64 else H


@cake.schedule(targets=["sm_90a"])
def rows(X: lm.tensor[lm.bf16, "R", H],
         W: lm.tensor[lm.bf16, 64, H],
         Y: lm.tensor[lm.f32, "R", 64]):
    pool = lm.smem()
    sX = pool.view(shape=(BM, HP), dtype=lm.bf16, swizzle=128)
    sW = pool.view(shape=(64, HP), dtype=lm.bf16, swizzle=128)

    math = lm.role(warpgroup=0)
    loaded = lm.barrier(producers=[math], consumers=[math])
    y = math.fragment(shape=(BM, 64), dtype=lm.f32)

    for tm in lm.tiles(lm.cdiv(R, BM)):
        with math:
            sX.tma_load(X, coords=(tm * BM, 0), barrier=loaded)
            sW.tma_load(W, coords=(0, 0), barrier=loaded)
            lm.wait(loaded)
            lm.mma(y, sX, sW.T, accumulate=False)
            lm.store(Y, y, coords=(tm * BM, 0))
