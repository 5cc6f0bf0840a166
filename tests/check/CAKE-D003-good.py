# CAKE-D003: the passing near-miss — 16 columns, 32-byte rows
import cake
from cake import lm


@cake.schedule(targets=["sm_80"])
def ld(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(16, 16), dtype=lm.bf16)
    warps = lm.role(warps=[0, 1, 2, 3])
    full = lm.barrier(producers=[warps], consumers=[warps])
    a = warps.fragment(shape=(16, 16), dtype=lm.bf16)
    for tm in lm.tiles(lm.cdiv(M, 16)):
        with warps:
            sA.cp_async(A, coords=(tm * 16, 0), barrier=full)
            lm.wait(full)
            lm.ldmatrix(a, sA)
