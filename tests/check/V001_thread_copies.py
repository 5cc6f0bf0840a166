# Per-thread copies (`cp_async`, `copy_to`) past what the lowering implements: notes for `cake
# check`, errors for `cake build`.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], zero=["CNT"])
def copies(X: lm.tensor[lm.bf16, "B", "N"], IDS: lm.tensor[lm.i32, "B", "N"],
           Y: lm.tensor[lm.bf16, "B", "N"], CNT: lm.tensor[lm.i32, "B", "N"]):
    pool = lm.smem()
    sX = pool.view(shape=(60,), dtype=lm.bf16)
    sI = pool.view(shape=(60,), dtype=lm.i32)
    main = lm.role(warpgroup=0)
    full = lm.barrier(producers=[main], consumers=[main])
    for b, t in lm.tiles(B, lm.cdiv(N, 60)):
        with main:
            sX.cp_async(X, coords=(b, t * 60), barrier=full)  # note[CAKE-V001]: a row of `sX` is 120 bytes
            sI.cp_async(IDS, coords=(b, t * 60), barrier=full)
            lm.wait(full)
            sX.copy_to(Y, coords=(b, t * 60))  # note[CAKE-V001]: 4-byte elements (f32, i32); `sX` holds bf16
            sI.copy_to(CNT, coords=(b, t * 60), reduce="add")
