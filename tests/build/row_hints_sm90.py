"""Every row-layout access with an L2 eviction priority (docs/language.md §9.8a), for the build
test: bf16 and f32 tiles, a per-row and a per-column vector read, and bf16, f32 and e4m3 tiles and
f32 and bf16 per-row values written, with `evict="first"` and `evict="last"` — so that ptxas sees
each hinted helper the lowering can call."""
import cake
from cake import lm

H = 256
ROWS = 4


@cake.schedule(targets=["sm_90a"])
def row_hints(X: lm.tensor[lm.bf16, "R", H], Xf: lm.tensor[lm.f32, "R", H],
              W: lm.tensor[lm.bf16, H], V: lm.tensor[lm.f32, "R"],
              Y: lm.tensor[lm.bf16, "R", H], Yf: lm.tensor[lm.f32, "R", H],
              Q: lm.tensor[lm.e4m3, "R", H], S: lm.tensor[lm.f32, "R"], T: lm.tensor[lm.bf16, "R"]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with rows:
            x[:] = (lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, H), evict="first"), lm.f32)
                    + lm.load(Xf, coords=(t * ROWS, 0), shape=(ROWS, H), evict="last"))
            v = lm.load(V, coords=(t * ROWS,), shape=(ROWS,), evict="first")
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,), evict="last"), lm.f32)
            lm.store(Y, lm.cast(x * v[:, None] * w[None, :], lm.bf16), coords=(t * ROWS, 0), evict="first")
            lm.store(Yf, x, coords=(t * ROWS, 0), evict="last")
            lm.store(Q, lm.cast(x, lm.e4m3), coords=(t * ROWS, 0), evict="first")
            lm.store(S, lm.sum(x, axis=1), coords=(t * ROWS,), evict="last")
            lm.store(T, lm.cast(lm.sum(x, axis=1), lm.bf16), coords=(t * ROWS,), evict="first")
