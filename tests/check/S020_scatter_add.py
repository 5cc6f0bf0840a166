# CAKE-S020: the stage is released before the scatter_add that reads it
import cake
from cake import lm

D = 128         # feature dimension, fixed
DS = 128        # feature columns per tile: all of them
KC = 256        # centroids per tile: KC × DS × 4 B = 128 KiB of sums
BR = 64         # rows of X per pipeline stage (16 KiB)
STAGES = 5
CONSUMERS = 2   # consumer warpgroups, each owning KC / CONSUMERS centroids of the block
PART = KC // CONSUMERS
BOX = min(PART, 256)  # rows per TMA store (the hardware's box limit)


@cake.schedule(targets=["sm_90a"], persistent=True)
def kmeans_update(X: lm.tensor[lm.bf16, "B", "N", D],
                  Cen: lm.tensor[lm.bf16, "B", "K", D],
                  IDS: lm.tensor[lm.i32, "B", "N"],
                  SUMS: lm.tensor[lm.f32, "B", "K", D],
                  COUNTS: lm.tensor[lm.i32, "B", "K"]):
    pool = lm.smem()
    sX = pool.view(shape=(BR, DS), dtype=lm.bf16, stages=STAGES)
    sI = pool.view(shape=(BR,), dtype=lm.i32, stages=STAGES)
    sSum = pool.view(shape=(KC, DS), dtype=lm.f32)
    sCnt = pool.view(shape=(KC,), dtype=lm.i32)

    load = lm.role(warpgroup=0)
    math = lm.role(warpgroups=[1, 2])

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
            # Each consumer warpgroup owns PART centroids of the block: its rows of the sums and
            # counts, which it zeroes, adds into and stores.
            part = math.index * PART
            my_sum = sSum.rows(part, PART)
            my_cnt = sCnt.rows(part, PART)
            my_sum.store(0.0)
            my_cnt.store(0)
            for r in lm.range(lm.cdiv(N, BR), pipeline=pipe):
                lm.wait(full)
                # Rows past N read as zeros from TMA: `valid_rows` leaves them out.
                lm.arrive(empty)  # error[CAKE-S020]: `sX`
                my_sum.scatter_add(sX, index=sI, offset=kc * KC + part, valid_rows=N - r * BR,
                                   counts=my_cnt)
            # The sums were written by ordinary stores; TMA reads them.
            lm.fence_proxy_async()
            for q in range(PART // BOX):
                sSum.rows(part + q * BOX, BOX).tma_store(
                    SUMS, coords=(b, kc * KC + part + q * BOX, ds * DS))
            if ds == 0:
                for q in range(PART // BOX):
                    sCnt.rows(part + q * BOX, BOX).tma_store(
                        COUNTS, coords=(b, kc * KC + part + q * BOX))
    del Cen  # in the signature for the usual API; the kernel never reads it
