# An unclosed bracket is reported where the parser gives up: at the end of the next line.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem(
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)  # error[CAKE-L001]: Expected `)`
    for tm in lm.tiles(4):
        pass
