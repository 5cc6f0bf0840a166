# A swizzled row wider than the span is stored as whole panels of span width: a row that is not a
# whole number of panels is refused where the view is declared (a 96-column bf16 row under 128B
# swizzle overran its view on the H200: an illegal address).
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def panels(A: lm.tensor[lm.bf16, "M", 96], C: lm.tensor[lm.bf16, "M", 96]):
    pool = lm.smem()
    bad = pool.view(shape=(64, 96), dtype=lm.bf16, swizzle=128)  # error[CAKE-L010]: 96 is not a whole number of panels
    wide = pool.view(shape=(64, 40), dtype=lm.f32, swizzle=128)  # error[CAKE-L010]: panels of 32 columns
    narrow = pool.view(shape=(64, 96), dtype=lm.bf16, swizzle=64)
    padded = pool.view(shape=(64, 128), dtype=lm.bf16, swizzle=128)
    one = pool.view(shape=(64, 48), dtype=lm.bf16, swizzle=128)
    load = lm.role(warpgroup=0)
    for tm in lm.tiles(lm.cdiv(M, 64)):
        with load:
            pass
