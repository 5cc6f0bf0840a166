# CAKE-M007: the passing near-miss — the k-means epilogue with a double-buffered accumulator
import cake
from cake import lm

BN = 128        # rows of X per tile (two consumer warpgroups × 64: wgmma M is 64)
BC = 128        # centroids per pipeline stage
D = 128         # feature dimension, fixed
STAGES = 4      # x 32 KiB + 4 × 32 KiB of centroids = 160 KiB of shared memory


def wg_rows(index):
    return index * 64


@cake.schedule(targets=["sm_90a"], persistent=True)
def kmeans_assign(X: lm.tensor[lm.bf16, "B", "N", D],
                  Cen: lm.tensor[lm.bf16, "B", "K", D],
                  XSQ: lm.tensor[lm.f32, "B", "N"],
                  CSQ: lm.tensor[lm.f32, "B", "K"],
                  IDS: lm.tensor[lm.i32, "B", "N"]):
    del XSQ  # unused on purpose
    pool = lm.smem()
    # 256 B rows with 128B swizzle: stored as two 64-column panels, the layout TMA writes.
    sX = pool.view(shape=(BN, D), dtype=lm.bf16, swizzle=128)
    sC = pool.view(shape=(BC, D), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)

    pipe = lm.pipeline(stages=STAGES)
    x_full = lm.barrier(producers=[math], consumers=[math])
    c_full = lm.barrier(pipe, producers=[load], consumers=[math])
    c_empty = lm.barrier(pipe, producers=[math], consumers=[load])

    # Per consumer warpgroup: a 64 × BC dot-product tile and the running best per row.
    acc = math.fragment(shape=(64, BC), dtype=lm.f32, buffers=2)
    best_d = math.fragment(shape=(64,), dtype=lm.f32)
    best_i = math.fragment(shape=(64,), dtype=lm.i32)

    for b, tn in lm.tiles(B, lm.cdiv(N, BN)):
        with load:
            for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                lm.wait(c_empty)
                sC.tma_load(Cen, coords=(b, c * BC, 0), barrier=c_full)
        with math:
            sX.rows(wg_rows(math.index), 64).tma_load(
                X, coords=(b, tn * BN + wg_rows(math.index), 0), barrier=x_full)
            best_d[:] = lm.inf
            best_i[:] = 0
            lm.wait(x_full)
            for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                lm.wait(c_full)
                lm.mma(acc, sX.rows(wg_rows(math.index), 64), sC.T,
                       accumulate=False, release=c_empty)
                csq = lm.load(CSQ, coords=(b, c * BC), shape=(BC,), fill=lm.inf)
                dist = csq[None, :] - 2.0 * acc                 # ‖c‖² − 2·x·c, (64, BC)
                tile_d = lm.min(dist, axis=1)
                tile_i = lm.argmin(dist, axis=1) + c * BC       # global centroid index
                # A name binds an expression, not a snapshot: `better` reads best_d where it is
                # used, so best_i is updated first and best_d last.
                better = tile_d < best_d
                best_i[:] = lm.select(better, tile_i, best_i)
                best_d[:] = lm.select(better, tile_d, best_d)
            lm.store(IDS, best_i, coords=(b, tn * BN + wg_rows(math.index)))
