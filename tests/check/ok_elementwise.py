# Register math that type-checks: broadcasting with `[:, None]`, casts, reductions, select,
# and calls whose value is None (not an unused value).
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def softmax(X: lm.tensor[lm.f32, "M", "N"], Y: lm.tensor[lm.bf16, "M", "N"], scale: lm.f32):
    math = lm.role(warpgroup=0)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with math:
            x = lm.load(X, coords=(tm * 64, 0), shape=(64, 128), fill=-lm.inf)
            row_max = lm.max(x, axis=1)
            e = lm.exp2((x - row_max[:, None]) * scale)
            total = lm.sum(e, axis=-1)
            p = e / total[:, None]
            q = lm.select(p > 0.5, p, lm.maximum(p, 0.0))
            r = lm.abs(lm.minimum(q, 1.0)) + lm.sqrt(q) * 0 + lm.rsqrt(q + 1.0) * 0
            lm.store(Y, lm.cast(r, lm.bf16), coords=(tm * 64, 0))
