# CAKE-D003: 20 bf16 columns make 40-byte rows; ldmatrix needs 16-byte-aligned rows
import cake
from cake import lm


@cake.schedule(targets=["sm_80"])
def ld(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(16, 20), dtype=lm.bf16)
    warps = lm.role(warps=[0, 1, 2, 3])
    full = lm.barrier(producers=[warps], consumers=[warps])
    a = warps.fragment(shape=(16, 20), dtype=lm.bf16)
    for tm in lm.tiles(lm.cdiv(M, 16)):
        with warps:
            sA.cp_async(A, coords=(tm * 16, 0), barrier=full)
            lm.wait(full)
            lm.ldmatrix(a, sA)  # error[CAKE-D003]
