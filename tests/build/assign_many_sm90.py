"""Fragments assigned together (docs/language.md §9.8a), for the build test: one statement reads
X once for both values, a swap reads each fragment as it was before the statement, and two row
reductions of one statement share one pass (W read once for both), as do two reductions of loads
alone (X read once for both, no fragment holding it). The fragments are named like
the lowering's own locals (`v`, `acc`), which it must rename."""
import cake
from cake import lm

H = 512
ROWS = 4


@cake.schedule(targets=["sm_90a"])
def assign_many(X: lm.tensor[lm.bf16, "R", H], W: lm.tensor[lm.bf16, H], V: lm.tensor[lm.bf16, H],
                Y: lm.tensor[lm.bf16, "R", H], S: lm.tensor[lm.f32, "R"], T: lm.tensor[lm.f32, "R"]):
    rows = lm.role(warpgroup=0)
    p = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows="warp")
    v = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows="warp")
    acc = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows="warp")
    s0 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warp")
    s1 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with rows:
            x = lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, H)), lm.f32)
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,)), lm.f32)
            b = lm.cast(lm.load(V, coords=(0,), shape=(H,)), lm.f32)
            p[:], v[:] = x * w[None, :], x * b[None, :]
            p[:], v[:] = v, p - v
            acc[:] = p * v
            lm.store(S, lm.sum(acc, axis=1), coords=(t * ROWS,))
            s0[:], s1[:] = lm.sum(acc * w[None, :], axis=1), lm.max(acc * w[None, :] * b[None, :], axis=1)
            lm.store(T, s0 + s1, coords=(t * ROWS,))
            s0[:], s1[:] = lm.sum(x * w[None, :], axis=1), lm.sum(x * b[None, :], axis=1)
            lm.store(S, s0 - s1, coords=(t * ROWS,))
            lm.store(Y, lm.cast(p + v, lm.bf16), coords=(t * ROWS, 0))
