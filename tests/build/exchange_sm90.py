"""Row reductions across the warps of a warpgroup (docs/language.md §9.8a), for the build test:
the three reductions one statement assigns cross the warps in one exchange (two bar.sync for the
three, each partial at a slot of its own), and a reduction alone still crosses by itself."""
import cake
from cake import lm

H = 2048
ROWS = 2


@cake.schedule(targets=["sm_90a"])
def exchange(X: lm.tensor[lm.bf16, "R", H], W: lm.tensor[lm.bf16, H],
             S: lm.tensor[lm.f32, "R"], T: lm.tensor[lm.f32, "R"]):
    rows = lm.role(warpgroup=0)
    s0 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    s1 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    s2 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with rows:
            x = lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, H)), lm.f32)
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,)), lm.f32)
            s0[:], s1[:], s2[:] = lm.sum(x * w[None, :], axis=1), lm.max(x, axis=1), lm.sum(x, axis=1)
            lm.store(S, s0 + s1 - s2, coords=(t * ROWS,))
            lm.store(T, lm.sum(x * x, axis=1), coords=(t * ROWS,))
