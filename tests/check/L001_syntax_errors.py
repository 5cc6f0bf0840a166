# Several independent syntax errors: the parser recovers and every one is reported.
import cake
from cake import lm


def helper(x)  # error[CAKE-L001]: Expected `:`
    return x


def other(y):
    return y +  # error[CAKE-L001]: Expected an expression


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    for tm in lm.tiles(4):
        x = 1 2  # error[CAKE-L001]: Simple statements must be separated
        print "tile"  # error[CAKE-L001]
