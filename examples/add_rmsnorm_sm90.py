"""Fused residual add + RMSNorm: both outputs from one pass over the inputs

    Hs[r, :] = X[r, :] + Res[r, :]                                  (the new residual stream)
    Y[r, :]  = Hs[r, :] * rsqrt(mean(Hs[r, :]²) + eps) * W          (bf16 in/out, f32 math)

The sum is kept in f32 registers for the norm (the bf16 Hs is its rounding). Same layout as
examples/rmsnorm_sm90.py.
"""
import cake
from cake import lm

H = 4096                                  # hidden size (specialised per shape by the contract)
OWNER = "warp" if H <= 2048 else "warpgroup"          # who holds a row
ROWS = 4 if H <= 2048 else 2 if H <= 8192 else 1   # rows per CTA
EVICT_FIRST = 0                           # 1: X's lines (read once) leave L2 first
X_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"])
def add_rmsnorm(X: lm.tensor[lm.bf16, "R", H], Res: lm.tensor[lm.bf16, "R", H],
                W: lm.tensor[lm.bf16, H], Hs: lm.tensor[lm.bf16, "R", H],
                Y: lm.tensor[lm.bf16, "R", H], eps: lm.f32):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows=OWNER)
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with rows:
            x[:] = (lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, H), evict=X_EVICT), lm.f32)
                    + lm.cast(lm.load(Res, coords=(t * ROWS, 0), shape=(ROWS, H), evict=X_EVICT), lm.f32))
            lm.store(Hs, lm.cast(x, lm.bf16), coords=(t * ROWS, 0))
            rstd = lm.rsqrt(lm.sum(x * x, axis=1) * (1.0 / H) + eps)
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,)), lm.f32)
            lm.store(Y, lm.cast(x * rstd[:, None] * w[None, :], lm.bf16), coords=(t * ROWS, 0))
