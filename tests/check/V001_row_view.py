# A view is read in row layout when it is this CTA's, unswizzled and row-major (what cp_async
# writes), as the tile, a per-column or a per-row vector: a swizzled view is reported at each
# read, in one run; the per-row vector is lowered.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def row_view(X: lm.tensor[lm.bf16, "R", 512], S: lm.tensor[lm.f32, "R"],
             Y: lm.tensor[lm.bf16, "R", 512]):
    pool = lm.smem()
    sX = pool.view(shape=(4, 512), dtype=lm.bf16)
    sZ = pool.view(shape=(4, 512), dtype=lm.bf16, swizzle=128)
    sR = pool.view(shape=(4,), dtype=lm.f32)
    rows = lm.role(warpgroup=0)
    done = lm.barrier(producers=[rows], consumers=[rows])
    x = rows.fragment(shape=(4, 512), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            sX.cp_async(X, coords=(t * 4, 0), barrier=done)
            sZ.cp_async(X, coords=(t * 4, 0), barrier=done)
            sR.cp_async(S, coords=(t * 4,), barrier=done)
            lm.wait(done)
            x[:] = lm.cast(sX.load(), lm.f32)
            x[:] = x + lm.cast(sZ.load(), lm.f32)  # note[CAKE-V001]
            x[:] = x * sR.load()[:, None]
            x[:] = x - lm.cast(sZ.load(), lm.f32)  # note[CAKE-V001]
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * 4, 0))
