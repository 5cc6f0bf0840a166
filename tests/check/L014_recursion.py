# Helpers are inlined: recursion that does not stop at compile time is reported at the call
# that crosses the inlining limit.
import cake
from cake import lm


def tile_rows(n):
    return tile_rows(n)  # error[CAKE-L014]: inlined more than 32 levels deep


def ping(n):
    return pong(n + 1)


def pong(n):
    return ping(n + 1)  # error[CAKE-L014]: helper `ping`


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    BM = tile_rows(256)
    BN = ping(0)
    for tm in lm.tiles(4):
        pass
