"""K-means centroid update for Hopper, from unsorted ids: per-cluster sums and counts

    SUMS[b, k, :] = Σ X[b, n, :] over the rows n with IDS[b, n] = k      (f32)
    COUNTS[b, k]  = the number of those rows                             (i32)

(the new centroid is SUMS / COUNTS, or the old one where COUNTS is 0). `Cen`, the current
centroids, is not read: it stays in the signature, as in the usual update API, and gives K.

Per persistent tile (batch b, a block of KC centroids, a slice of DS feature columns):
- the producer warpgroup streams the batch's rows of X, only the tile's DS columns, and their
  ids through a ring of BR-row stages;
- the consumer warpgroup adds each row into the block's sums in shared memory (KC × DS f32,
  128 KiB) with `scatter_add`: a row whose id falls outside the block is skipped, rows past N
  are skipped, and `counts` counts the rows each centroid received; the ids travel by TMA, so
  IDS's rows (N × 4 B) must be a multiple of 16 bytes (N % 4 == 0);
- then it stores the block with TMA (a box has at most 256 rows, hence the loops), and the
  counts once per block (from the slice with ds = 0).

Every tile owns its part of SUMS and COUNTS outright, so no CTA adds into another's output and
the outputs need no zeroing first. With D = 128 and DS = 32, the four slices of a batch read X
exactly once between them (0.5 GB at the primary shape); a K beyond KC takes more tiles, each
of which reads X again. Each sum is added to by one warp in row order (see scatter_add in
docs/language.md), so the result is the same bit for bit from run to run.
"""
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
    pool = lm.smem()
    sX = pool.view(shape=(BR, DS), dtype=lm.bf16, stages=STAGES)
    sI = pool.view(shape=(BR,), dtype=lm.i32, stages=STAGES)
    sSum = pool.view(shape=(KC, DS), dtype=lm.f32)
    sCnt = pool.view(shape=(KC,), dtype=lm.i32)

    load = lm.role(warpgroup=0)
    math = lm.role(warpgroup=1)

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
                sSum.scatter_add(sX, index=sI, offset=kc * KC, valid_rows=N - r * BR,
                                 counts=sCnt)
                lm.arrive(empty)
            # The sums were written by ordinary stores; TMA reads them.
            lm.fence_proxy_async()
            for q in range(KC // BOX):
                sSum.rows(q * BOX, BOX).tma_store(SUMS, coords=(b, kc * KC + q * BOX, ds * DS))
            if ds == 0:
                for q in range(KC // BOX):
                    sCnt.rows(q * BOX, BOX).tma_store(COUNTS, coords=(b, kc * KC + q * BOX))
