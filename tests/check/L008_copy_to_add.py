# copy_to with reduce="add" adds f32 or i32 elements only (red.global.add): a bf16 view added into
# a bf16 tensor is refused where it is written.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], zero=["Y"])
def copies(X: lm.tensor[lm.bf16, "B", "N"], Y: lm.tensor[lm.bf16, "B", "N"]):
    pool = lm.smem()
    sX = pool.view(shape=(64,), dtype=lm.bf16)
    main = lm.role(warpgroup=0)
    full = lm.barrier(producers=[main], consumers=[main])
    for b, t in lm.tiles(B, lm.cdiv(N, 64)):
        with main:
            sX.cp_async(X, coords=(b, t * 64), barrier=full)
            lm.wait(full)
            sX.copy_to(Y, coords=(b, t * 64), reduce="add")  # error[CAKE-L008]: copy_to with reduce="add" adds f32 or i32 elements; `Y` holds bf16
