# file: error[CAKE-L009]: defines no `@cake.schedule` function
"""Constants and helpers, but no schedule: a function with tensor parameters is not a kernel
until it is decorated."""
import cake
from cake import lm

BM, BN, BK = 128, 256, 64
DT = lm.bf16
NAME = "gemm"


def helper(x):
    return x * 2


def gemm(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass
