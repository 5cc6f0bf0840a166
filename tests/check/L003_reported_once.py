# One mistake, one finding: a value whose definition failed is silently unusable afterwards,
# so its uses do not repeat the finding.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bfloat16)  # error[CAKE-L003]: `lm.bfloat16`
    load = lm.role(warpgroup=0)
    full = lm.barrier(producers=[load], consumers=[load])
    bad = lm.barrier(producers=[load], consumers=[load], count=undefined)  # error[CAKE-L003]: `undefined` is not defined
    rows = TILE_ROWS // 2  # error[CAKE-L003]: `TILE_ROWS`
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        with load:
            sA.tma_load(A, coords=(tm * 128, tk * 64), barrier=full)
            sB.tma_load(A, coords=(tm * 128, tk * 64), barrier=full)
            lm.wait(full)
            lm.wait(bad)
            part = sA.rows(rows, 32)
            x = rows * 2 + tm
            y = x + 1
            part.tma_store(A, coords=(y, 0))
