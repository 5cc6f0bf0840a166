"""RMSNorm over the last axis, with a weight: one pass over X, the whole row in registers

    Y[r, :] = X[r, :] * rsqrt(mean(X[r, :]²) + eps) * W          (bf16 in and out, f32 math)

A memory-bound row kernel (no MMA): each row is read once and written once. The hidden size H
is a compile-time constant, so a row fits the registers of its owners: one warp per row up to
2048 columns (four rows per CTA of one warpgroup), a whole warpgroup per row beyond (its four
warps' partial sums meet in shared memory), two rows per CTA up to 8192 columns, one beyond.
The thresholds were measured on the H200 (bench/results/2026-12-01-rows/). The contract (kernels/rows/rmsnorm.contract.toml)
specialises H per shape; columns past H and rows past R are masked, so any H and R work.
"""
import cake
from cake import lm

H = 4096                                  # hidden size (specialised per shape by the contract)
OWNER = "warp" if H <= 2048 else "warpgroup"          # who holds a row
RPC = 0                                   # rows per CTA; 0: by H, as below
EVICT_FIRST = 0                           # 1: X's lines (read once) leave L2 first
X_EVICT = "first" if EVICT_FIRST == 1 else None
STORE_EVICT = 0                           # L2 priority of Y's lines: 0 default, 1 first, 2 last
Y_EVICT = "first" if STORE_EVICT == 1 else "last" if STORE_EVICT == 2 else None
ROWS = RPC if RPC > 0 else 4 if H <= 2048 else 2 if H <= 8192 else 1   # rows per CTA


@cake.schedule(targets=["sm_90a"])
def rmsnorm(X: lm.tensor[lm.bf16, "R", H], W: lm.tensor[lm.bf16, H],
            Y: lm.tensor[lm.bf16, "R", H], eps: lm.f32):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows=OWNER)
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, H), evict=X_EVICT), lm.f32)
            rstd = lm.rsqrt(lm.sum(x * x, axis=1) * (1.0 / H) + eps)
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,)), lm.f32)
            lm.store(Y, lm.cast(x * rstd[:, None] * w[None, :], lm.bf16), coords=(t * ROWS, 0), evict=Y_EVICT)
