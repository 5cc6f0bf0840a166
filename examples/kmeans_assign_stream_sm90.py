"""K-means assignment for Hopper with few centroids: IDS[b, n] = argmin_k ‖X[b, n] − Cen[b, k]‖²,
with the rows of X streaming through a ring so that their loads run ahead of the math.

With a few hundred centroids or fewer, assignment reads X once and does little math per byte:
it is bound by memory, not by the tensor cores. The shipped schedule
(examples/kmeans_assign_sm90.py, read it for the algebra and the packed argmin) keeps one tile of
x per consumer and loads it at the start of every tile, so at small K each consumer waits out a
load from HBM per tile and the SM has at most one tile of x in flight. Here the producer loads
each tile's x into a ring of XS tiles (a one-iteration loop per tile on `xpipe`, whose stage
carries across tiles), then that tile's centroids in BC-centroid stages; it runs up to XS
tiles ahead of the consumers, which read x through `sX.stage(xpipe.stage)` and release a stage
once every centroid tile has been compared with it.

Tiles are (batch b, BN rows of X); each consumer warpgroup owns ROWS of the BN rows, in blocks
of 64 (wgmma's M). Centroids past K read as zero from TMA and get ‖c‖² = +inf from the fill of
lm.load, so they never win.
"""
import cake
from cake import lm

D = 128                            # feature dimension (specialised per shape by the family)
DP = (D + 63) // 64 * 64           # D padded to whole 64-column swizzle panels (TMA zero-fills)
CONSUMERS = 3 if DP <= 128 else 2  # consumer warpgroups
WIDE = 0                           # 1: 128 rows per consumer at D = 96 and 128 too
# Rows of a tile per consumer: at D = 64 (or WIDE) two 64-row MMAs per centroid stage, so a tile's
# fixed costs (waits, centroid stages, ‖c‖² loads) buy twice the rows.
ROWS = 128 if DP <= 64 or WIDE == 1 else 64
BN = CONSUMERS * ROWS              # rows of X per tile
BC = 64                            # centroids per stage
XSTAGES = 0                        # tiles of x in flight; 0: by D, as below
XS = XSTAGES if XSTAGES > 0 else (3 if DP <= 64 or (DP <= 128 and WIDE == 0) else 2)
STAGES = 2                         # centroid stages
# 1: X's rows (read once) leave L2 first: 1.01x over 17 representative shapes, but 1.07-1.10x at
# 39-78 MB of X and 0.96-0.98x at hundreds of MB (bench/results/2026-12-03-cost-model/, c6): the
# family measures both forms.
EVICT_FIRST = 0
X_EVICT = "first" if EVICT_FIRST == 1 else None
# Shared memory: XS × BN × DP × 2 + STAGES × BC × DP × 2 bytes:
# D = 64: 144 + 16 KiB; D = 96/128: 144 + 32 KiB (WIDE: 192 + 32); D = 256: 128 + 64 KiB.


def fold(acc, csq, c, best_d, best_i):
    """Fold one centroid tile's dot products into a row block's running best (distance, index)."""
    dist = csq[None, :] - 2.0 * acc                 # ‖c‖² − 2·x·c, (64, BC)
    tile_d = lm.min(dist, axis=1, packed=True)
    tile_i = lm.argmin(dist, axis=1, packed=True) + c * BC
    # best_i first: `better` reads best_d where it is used.
    better = tile_d < best_d
    best_i[:] = lm.select(better, tile_i, best_i)
    best_d[:] = lm.select(better, tile_d, best_d)


@cake.schedule(targets=["sm_90a"], persistent=True)
def kmeans_assign_stream(X: lm.tensor[lm.bf16, "B", "N", D],
                         Cen: lm.tensor[lm.bf16, "B", "K", D],
                         XSQ: lm.tensor[lm.f32, "B", "N"],
                         CSQ: lm.tensor[lm.f32, "B", "K"],
                         IDS: lm.tensor[lm.i32, "B", "N"]):
    pool = lm.smem()
    sX = pool.view(shape=(BN, DP), dtype=lm.bf16, stages=XS, swizzle=128)
    sC = pool.view(shape=(BC, DP), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # The producer needs few registers; the consumers take the rest (two 64 × BC accumulators at
    # D = 64): 128 × 56 + 384 × 152 = 65536, or 128 × 56 + 256 × 224 with two consumers.
    load = lm.role(warpgroup=0, regs=56)
    math = lm.role(warpgroups=[1, 2, 3] if CONSUMERS == 3 else [1, 2],
                   regs=152 if CONSUMERS == 3 else 224)

    xpipe = lm.pipeline(stages=XS)   # one iteration per tile
    pipe = lm.pipeline(stages=STAGES)     # one iteration per centroid tile
    x_full = lm.barrier(xpipe, producers=[load], consumers=[math])
    x_empty = lm.barrier(xpipe, producers=[math], consumers=[load])
    c_full = lm.barrier(pipe, producers=[load], consumers=[math])
    c_empty = lm.barrier(pipe, producers=[math], consumers=[load])

    # Per consumer and 64-row block: the dot products with a centroid tile and the running best.
    acc = math.fragment(shape=(64, BC), dtype=lm.f32)
    best_d = math.fragment(shape=(64,), dtype=lm.f32)
    best_i = math.fragment(shape=(64,), dtype=lm.i32)
    if ROWS == 128:
        acc2 = math.fragment(shape=(64, BC), dtype=lm.f32)
        best_d2 = math.fragment(shape=(64,), dtype=lm.f32)
        best_i2 = math.fragment(shape=(64,), dtype=lm.i32)

    for b, tn in lm.tiles(B, lm.cdiv(N, BN)):
        with load:
            for _ in lm.range(1, pipeline=xpipe):
                lm.wait(x_empty)
                if BN <= 256:
                    sX.tma_load(X, coords=(b, tn * BN, 0), barrier=x_full, evict=X_EVICT)
                else:   # a TMA box spans at most 256 rows: two copies, one barrier
                    half = BN // 2
                    sX.rows(0, half).tma_load(X, coords=(b, tn * BN, 0), barrier=x_full, evict=X_EVICT)
                    sX.rows(half, half).tma_load(X, coords=(b, tn * BN + half, 0), barrier=x_full, evict=X_EVICT)
                for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                    lm.wait(c_empty)
                    sC.tma_load(Cen, coords=(b, c * BC, 0), barrier=c_full)
        with math:
            row0 = math.index * ROWS
            best_d[:] = lm.inf
            best_i[:] = 0
            if ROWS == 128:
                best_d2[:] = lm.inf
                best_i2[:] = 0
            for _ in lm.range(1, pipeline=xpipe):
                lm.wait(x_full)
                xs = sX.stage(xpipe.stage)
                for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                    lm.wait(c_full)
                    # Both blocks' MMAs in flight at once; the one issued last releases the stage.
                    if ROWS == 128:
                        lm.mma(acc2, xs.rows(row0 + 64, 64), sC.T, accumulate=False)
                    lm.mma(acc, xs.rows(row0, 64), sC.T, accumulate=False, release=c_empty)
                    csq = lm.load(CSQ, coords=(b, c * BC), shape=(BC,), fill=lm.inf)
                    if ROWS == 128:
                        fold(acc2, csq, c, best_d2, best_i2)
                    fold(acc, csq, c, best_d, best_i)
                lm.arrive(x_empty)
            lm.store(IDS, best_i, coords=(b, tn * BN + row0))
            if ROWS == 128:
                lm.store(IDS, best_i2, coords=(b, tn * BN + row0 + 64))
    del XSQ  # in the signature for the usual API; the kernel never reads it
