"""K-means centroid update for Hopper from unsorted ids, for few centroids: per-CTA sums in shared
memory, added into the output once per CTA

    SUMS[b, k, :] = Σ X[b, n, :] over the rows n with IDS[b, n] = k      (f32)
    COUNTS[b, k]  = the number of those rows                             (i32)

With few centroids, global atomic adds (kmeans_update_atomic_sm90.py) pile onto the same few
sums. Here each persistent tile (batch b, a block of KC centroids, a column slice, a split s)
owns a private copy of its block's sums in shared memory: the producer warpgroup streams the
split's rows of X and their ids through a ring of BR-row stages (TMA), the two consumer
warpgroups each add the rows of the centroids they own into the copy with `scatter_add` (no
atomics: one warp owns each sum), and at the end the copy is added into SUMS and COUNTS by TMA
(`reduce="add"`, done at L2), which the launcher zeroed (`zero=`). The rows of a batch are split
SPLITS ways so that B × blocks × SPLITS tiles fill the GPU whatever B is. Adds from different
splits meet in no fixed order.

A tensor map needs 16-byte row pitches, which IDS (B × N i32) and COUNTS (B × K i32) have only
when N and K are multiples of 4. So the producer's threads copy each stage's ids themselves
(`cp_async`: 16 bytes at a time where the rows are aligned, one id at a time where they are not),
and each consumer adds its counts into COUNTS with per-thread atomic adds (`copy_to`): any N, any
K. TMA_IDS = 1 keeps the earlier form (both by TMA, N and K multiples of 4).
"""
import cake
from cake import lm

D = 128                          # feature dimension (specialised per shape by the family)
DS = D if D <= 128 else 128      # feature columns per tile
KC = 256                         # centroids per tile: KC × DS × 4 B ≤ 128 KiB of sums
BR = 64                          # rows of X per pipeline stage
STAGES = 5
CONSUMERS = 2                    # consumer warpgroups, each owning KC / CONSUMERS centroids
PART = KC // CONSUMERS
TILES = 264                      # tiles to aim for: two per SM
TMA_IDS = 0                      # 1: ids and counts by TMA (N, K multiples of 4 only)


@cake.schedule(targets=["sm_90a"], persistent=True, zero=["SUMS", "COUNTS"])
def kmeans_update_private(X: lm.tensor[lm.bf16, "B", "N", D],
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

    blocks = lm.cdiv(K, KC) * (D // DS)          # (centroid block, column slice) pairs
    splits = lm.cdiv(TILES, B * blocks)          # run time: at least 1
    chunk = lm.cdiv(lm.cdiv(N, BR), splits)      # stages of rows per split
    for b, j, s in lm.tiles(B, blocks, splits):
        kc = j // (D // DS)
        ds = j % (D // DS)
        with load:
            for r in lm.range(s * chunk, s * chunk + chunk, pipeline=pipe):
                lm.wait(empty)
                # Stages past N read zeros (and add nothing: valid_rows below).
                sX.tma_load(X, coords=(b, r * BR, ds * DS), barrier=full)
                if TMA_IDS == 1:
                    sI.tma_load(IDS, coords=(b, r * BR), barrier=full)
                else:
                    sI.cp_async(IDS, coords=(b, r * BR), barrier=full)
        with math:
            part = math.index * PART
            my_sum = sSum.rows(part, PART)
            my_cnt = sCnt.rows(part, PART)
            my_sum.store(0.0)
            my_cnt.store(0)
            for r in lm.range(s * chunk, s * chunk + chunk, pipeline=pipe):
                lm.wait(full)
                my_sum.scatter_add(sX, index=sI, offset=kc * KC + part, valid_rows=N - r * BR,
                                   counts=my_cnt)
                lm.arrive(empty)
            lm.fence_proxy_async()
            my_sum.tma_store(SUMS, coords=(b, kc * KC + part, ds * DS), reduce="add")
            if ds == 0:
                if TMA_IDS == 1:
                    my_cnt.tma_store(COUNTS, coords=(b, kc * KC + part), reduce="add")
                else:
                    my_cnt.copy_to(COUNTS, coords=(b, kc * KC + part), reduce="add")
    del Cen  # in the signature for the usual API; the kernel never reads it
