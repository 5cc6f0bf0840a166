"""LayerNorm over the last axis, with weight and bias: one pass over X, the row in registers

    Y[r, :] = (X[r, :] - mean) * rsqrt(var + eps) * W + Bias      (bf16 in/out, f32 math)

The variance is the mean of the centred squares, computed from the row kept in registers (two
passes over registers, one over memory): no E[x²] − mean² cancellation for rows far from zero.
Same layout as examples/rmsnorm_sm90.py.
"""
import cake
from cake import lm

H = 4096                                  # hidden size (specialised per shape by the contract)
OWNER = "warp" if H <= 2048 else "warpgroup"          # who holds a row
ROWS = 4 if H <= 2048 else 2 if H <= 8192 else 1   # rows per CTA
EVICT_FIRST = 0                           # 1: X's lines (read once) leave L2 first
X_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"])
def layernorm(X: lm.tensor[lm.bf16, "R", H], W: lm.tensor[lm.bf16, H],
              Bias: lm.tensor[lm.bf16, H], Y: lm.tensor[lm.bf16, "R", H], eps: lm.f32):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows=OWNER)
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, H), evict=X_EVICT), lm.f32)
            x[:] = x - (lm.sum(x, axis=1) * (1.0 / H))[:, None]
            rstd = lm.rsqrt(lm.sum(x * x, axis=1) * (1.0 / H) + eps)
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,)), lm.f32)
            b = lm.cast(lm.load(Bias, coords=(0,), shape=(H,)), lm.f32)
            lm.store(Y, lm.cast(x * rstd[:, None] * w[None, :] + b[None, :], lm.bf16),
                     coords=(t * ROWS, 0))
