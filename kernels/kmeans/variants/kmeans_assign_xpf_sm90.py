"""K-means assignment, the example (examples/kmeans_assign_sm90.py: read it for the algorithm)
with each tile's x loaded by the producer into a double buffer, one tile ahead.

The example's consumers load their own x rows at the start of every tile and wait for them;
here a one-iteration loop over `xpipe` per tile gives x a two-stage ring: the producer waits for
the consumers to release a stage (`x_empty`), loads the tile's 192 rows into it, then streams the
tile's centroids, so it loads the next tile's x as soon as the ring lets it run ahead. The
consumers read x through `sX.stage(xpipe.stage)`: inside the centroid loop, a view without
`.stage` would take the centroid pipeline's stage. Two x stages leave room for 4 centroid stages
(2 × 48 + 4 × 32 = 224 KiB).
"""
import cake
from cake import lm

BN = 192        # rows of X per tile (three consumer warpgroups × 64: wgmma M is 64)
BC = 128        # centroids per pipeline stage
D = 128         # feature dimension, fixed
STAGES = 4      # 2 × 48 KiB of x + 4 × 32 KiB of centroids = 224 KiB of shared memory


def wg_rows(index):
    return index * 64


@cake.schedule(targets=["sm_90a"], persistent=True)
def kmeans_assign(X: lm.tensor[lm.bf16, "B", "N", D],
                  Cen: lm.tensor[lm.bf16, "B", "K", D],
                  XSQ: lm.tensor[lm.f32, "B", "N"],
                  CSQ: lm.tensor[lm.f32, "B", "K"],
                  IDS: lm.tensor[lm.i32, "B", "N"]):
    del XSQ  # in the signature for the usual API; the kernel never reads it
    pool = lm.smem()
    # 256 B rows with 128B swizzle: stored as two 64-column panels, the layout TMA writes.
    sX = pool.view(shape=(BN, D), dtype=lm.bf16, stages=2, swizzle=128)
    sC = pool.view(shape=(BC, D), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # 512 threads: 128 × 56 + 384 × 152 = 65536 registers.
    load = lm.role(warpgroup=0, regs=56)
    math = lm.role(warpgroups=[1, 2, 3], regs=152)

    pipe = lm.pipeline(stages=STAGES)
    xpipe = lm.pipeline(stages=2)       # one iteration per tile: the next tile's x loads early
    x_full = lm.barrier(xpipe, producers=[load], consumers=[math])
    x_empty = lm.barrier(xpipe, producers=[math], consumers=[load])
    c_full = lm.barrier(pipe, producers=[load], consumers=[math])
    c_empty = lm.barrier(pipe, producers=[math], consumers=[load])

    # Per consumer warpgroup: a 64 × BC dot-product tile and the running best per row.
    acc = math.fragment(shape=(64, BC), dtype=lm.f32)
    best_d = math.fragment(shape=(64,), dtype=lm.f32)
    best_i = math.fragment(shape=(64,), dtype=lm.i32)

    for b, tn in lm.tiles(B, lm.cdiv(N, BN)):
        with load:
            for _ in lm.range(1, pipeline=xpipe):
                lm.wait(x_empty)
                sX.tma_load(X, coords=(b, tn * BN, 0), barrier=x_full)
                for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                    lm.wait(c_empty)
                    sC.tma_load(Cen, coords=(b, c * BC, 0), barrier=c_full)
        with math:
            best_d[:] = lm.inf
            best_i[:] = 0
            for _ in lm.range(1, pipeline=xpipe):
                lm.wait(x_full)
                xs = sX.stage(xpipe.stage).rows(wg_rows(math.index), 64)
                for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                    lm.wait(c_full)
                    lm.mma(acc, xs, sC.T, accumulate=False, release=c_empty)
                    csq = lm.load(CSQ, coords=(b, c * BC), shape=(BC,), fill=lm.inf)
                    dist = csq[None, :] - 2.0 * acc                 # ‖c‖² − 2·x·c, (64, BC)
                    tile_d = lm.min(dist, axis=1, packed=True)
                    tile_i = lm.argmin(dist, axis=1, packed=True) + c * BC   # global centroid index
                    better = tile_d < best_d
                    best_i[:] = lm.select(better, tile_i, best_i)
                    best_d[:] = lm.select(better, tile_d, best_d)
                lm.arrive(x_empty)
            lm.store(IDS, best_i, coords=(b, tn * BN + wg_rows(math.index)))
