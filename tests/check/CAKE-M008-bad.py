# CAKE-M008: a scatter_add in a role of four warps: each warp would add every row
import cake
from cake import lm

D = 128         # feature dimension, fixed
DS = 32         # feature columns per tile: 64-byte rows of X
KC = 1024       # centroids per tile: KC × DS × 4 B = 128 KiB of sums
BR = 256        # rows of X per pipeline stage (16 KiB)
STAGES = 4
BOX = 256       # rows per TMA store (the hardware's box limit)


@cake.schedule(targets=["sm_90a"], persistent=True)
def kmeans_update(X: lm.tensor[lm.bf16, "B", "N", D],
                  Cen: lm.tensor[lm.bf16, "B", "K", D],
                  IDS: lm.tensor[lm.i32, "B", "N"],
                  SUMS: lm.tensor[lm.f32, "B", "K", D],
                  COUNTS: lm.tensor[lm.i32, "B", "K"]):
    del Cen  # unused on purpose
    pool = lm.smem()
    sX = pool.view(shape=(BR, DS), dtype=lm.bf16, stages=STAGES)
    sI = pool.view(shape=(BR,), dtype=lm.i32, stages=STAGES)
    sSum = pool.view(shape=(KC, DS), dtype=lm.f32)
    sCnt = pool.view(shape=(KC,), dtype=lm.i32)

    load = lm.role(warpgroup=0)
    math = lm.role(warps=[4, 5, 6, 7])

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])

    for b, kc, ds in lm.tiles(B, lm.cdiv(K, KC), D // DS):
        with load:
            for r in lm.range(lm.cdiv(N, BR), pipeline=pipe):
                lm.wait(empty)
                sX.tma_load(X, coords=(b, r * BR, ds * DS), barrier=full)
                sI.tma_load(IDS, coords=(b, r * BR), barrier=full)
        with math:
            sSum.store(0.0)
            sCnt.store(0)
            for r in lm.range(lm.cdiv(N, BR), pipeline=pipe):
                lm.wait(full)
                # Rows past N read as zeros from TMA: `valid_rows` leaves them out.
                sSum.scatter_add(sX, index=sI, offset=kc * KC, valid_rows=N - r * BR, counts=sCnt)  # error[CAKE-M008]: each would add every row
                lm.arrive(empty)
            # The sums were written by ordinary stores; TMA reads them.
            lm.fence_proxy_async()
            for q in range(KC // BOX):
                sSum.rows(q * BOX, BOX).tma_store(SUMS, coords=(b, kc * KC + q * BOX, ds * DS))  # error[CAKE-M009]: both run this store on the same elements
            if ds == 0:
                for q in range(KC // BOX):
                    sCnt.rows(q * BOX, BOX).tma_store(COUNTS, coords=(b, kc * KC + q * BOX))  # error[CAKE-M009]: both run this store on the same elements
