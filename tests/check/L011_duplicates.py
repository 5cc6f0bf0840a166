# Names that must be unique.
import cake
from cake import lm


def helper(x):
    return x


def helper(y):  # error[CAKE-L011]: `helper` is defined twice
    return y


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"], A: lm.tensor[lm.bf16, "M", "K"], M: lm.i32):  # error[CAKE-L011]: `A` is defined twice error[CAKE-L011]: `M` is defined twice
    for tm in lm.tiles(4):
        pass


@cake.schedule(targets=["sm_90a"])
def copy(B: lm.tensor[lm.bf16, "M", "K"]):  # error[CAKE-L011]: `copy` is defined twice
    for tm in lm.tiles(4):
        pass
