"""K-means centroid update for Hopper, from unsorted ids: per-cluster sums and counts

    SUMS[b, k, :] = Σ X[b, n, :] over the rows n with IDS[b, n] = k      (f32)
    COUNTS[b, k]  = the number of those rows                             (i32)

(the new centroid is SUMS / COUNTS, or the old one where COUNTS is 0). `Cen`, the current
centroids, is not read: it stays in the signature, as in the usual update API, and gives K.

Per persistent tile (batch b, a block of KC = 256 centroids):
- the producer warpgroup streams the batch's rows of X (whole 256-byte rows) and their ids
  through a ring of BR-row stages; the ids travel by TMA, so IDS's rows (N × 4 B) must be a
  multiple of 16 bytes (N % 4 == 0);
- each of the two consumer warpgroups owns half of the block's centroids: its rows of the sums
  (128 × 128 f32, 64 KiB) and counts in shared memory, which it zeroes, adds every row of X
  whose id it owns into with `scatter_add` (rows past N and ids outside its half are skipped),
  and finally stores with TMA.

Every tile owns its part of SUMS and COUNTS outright, so no CTA adds into another's output and
the outputs need no zeroing first. The four tiles of a batch each read all of the batch's X;
they run side by side (the tile loop's last axis is the fastest), so three of the four reads
come from L2. Each sum is added to by one warp in row order (see scatter_add in
docs/language.md), so the result is the same bit for bit from run to run. Measured against
narrower slices (32 or 64 columns of X per tile, 512 or 1024 centroids) and one or four
consumer warpgroups: kernels/kmeans/NOTES.md.
"""
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
                my_sum.scatter_add(sX, index=sI, offset=kc * KC + part, valid_rows=N - r * BR,
                                   counts=my_cnt)
                lm.arrive(empty)
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
