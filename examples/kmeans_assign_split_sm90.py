"""K-means assignment for Hopper with few rows and many centroids: IDS[b, n] = argmin_k ‖X[b, n] −
Cen[b, k]‖², the centroids split across the CTAs of a cluster.

A problem of a few thousand rows against tens of thousands of centroids has few row tiles (B = 1,
N = 3,705: 20 tiles of 192 rows) for 132 SMs, so one tile per CTA leaves most of the GPU idle
however long the centroid loop is. Here each row tile is shared by a cluster of SPLIT CTAs: CTA r
compares the tile's rows with the r-th of SPLIT runs of centroid tiles and keeps its running best
(distance, index) per row, as the stream schedule (examples/kmeans_assign_stream_sm90.py) does
for all of them. Each CTA then stores its per-row best into its own shared memory and arrives on
a cluster barrier; CTA 0 waits, reads the others' through distributed shared memory in rank
order, and keeps a peer's candidate only when it is strictly nearer. Lower ranks hold lower
centroid indices, so a tie resolves to the lowest index, as in one CTA.

Tiles are (split rank, batch b, BN rows of X); each consumer warpgroup owns ROWS of the BN rows
in blocks of 64 (wgmma's M). Centroids past K read as zero from TMA and get ‖c‖² = +inf from the
fill of lm.load, so they never win; a CTA whose run starts past K keeps +inf and loses every
row.
"""
import cake
from cake import lm

D = 128                            # feature dimension (specialised per shape by the family)
DP = (D + 63) // 64 * 64           # D padded to whole 64-column swizzle panels (TMA zero-fills)
SPLIT = 4                          # CTAs per row tile (the cluster): 2 to 8
CONSUMERS = 3 if DP <= 128 else 2  # consumer warpgroups
# Rows per consumer: at D = 64 two 64-row MMAs per centroid stage, so each stage buys twice the
# rows.
ROWS = 128 if DP <= 64 else 64
BN = CONSUMERS * ROWS              # rows of X per tile
BC = 64 if DP <= 128 else 32       # centroids per stage
STAGES = 4 if DP <= 128 else 3     # centroid stages
# Shared memory: BN × DP × 2 + STAGES × BC × DP × 2 + BN × 8 bytes:
# D = 64: 48 + 32 KiB; D = 96/128: 48 + 64 KiB; D = 256: 64 + 48 KiB.


def fold(acc, csq, c, best_d, best_i):
    """Fold one centroid tile's dot products into a row block's running best (distance, index)."""
    dist = csq[None, :] - 2.0 * acc                 # ‖c‖² − 2·x·c, (64, BC)
    tile_d = lm.min(dist, axis=1, packed=True)
    tile_i = lm.argmin(dist, axis=1, packed=True) + c * BC
    # best_i first: `better` reads best_d where it is used.
    better = tile_d < best_d
    best_i[:] = lm.select(better, tile_i, best_i)
    best_d[:] = lm.select(better, tile_d, best_d)


def merge(part_d, part_i, r, peer_d, peer_i, best_d, best_i):
    """Take CTA r's candidate for each row where it is strictly nearer."""
    peer_d[:] = part_d.load(cta=r)
    peer_i[:] = part_i.load(cta=r)
    better = peer_d < best_d
    best_i[:] = lm.select(better, peer_i, best_i)
    best_d[:] = lm.select(better, peer_d, best_d)


@cake.schedule(targets=["sm_90a"], cluster=(SPLIT, 1, 1))
def kmeans_assign_split(X: lm.tensor[lm.bf16, "B", "N", D],
                        Cen: lm.tensor[lm.bf16, "B", "K", D],
                        XSQ: lm.tensor[lm.f32, "B", "N"],
                        CSQ: lm.tensor[lm.f32, "B", "K"],
                        IDS: lm.tensor[lm.i32, "B", "N"]):
    pool = lm.smem()
    sX = pool.view(shape=(BN, DP), dtype=lm.bf16, swizzle=128)
    sC = pool.view(shape=(BC, DP), dtype=lm.bf16, stages=STAGES, swizzle=128)
    part_d = pool.view(shape=(BN,), dtype=lm.f32)     # this CTA's best distance per row
    part_i = pool.view(shape=(BN,), dtype=lm.i32)     # and its centroid

    load = lm.role(warpgroup=0, regs=56)
    math = lm.role(warpgroups=[1, 2, 3] if CONSUMERS == 3 else [1, 2],
                   regs=152 if CONSUMERS == 3 else 224)

    pipe = lm.pipeline(stages=STAGES)     # one iteration per centroid tile
    x_full = lm.barrier(producers=[load], consumers=[math])
    c_full = lm.barrier(pipe, producers=[load], consumers=[math])
    c_empty = lm.barrier(pipe, producers=[math], consumers=[load])
    parts = lm.barrier(producers=[math], consumers=[math], cluster=True)

    acc = math.fragment(shape=(64, BC), dtype=lm.f32)
    best_d = math.fragment(shape=(64,), dtype=lm.f32)
    best_i = math.fragment(shape=(64,), dtype=lm.i32)
    peer_d = math.fragment(shape=(64,), dtype=lm.f32)
    peer_i = math.fragment(shape=(64,), dtype=lm.i32)
    if ROWS == 128:
        acc2 = math.fragment(shape=(64, BC), dtype=lm.f32)
        best_d2 = math.fragment(shape=(64,), dtype=lm.f32)
        best_i2 = math.fragment(shape=(64,), dtype=lm.i32)

    KT = lm.cdiv(lm.cdiv(K, BC), SPLIT)   # centroid tiles per CTA of a cluster
    for ks, b, tn in lm.tiles(SPLIT, B, lm.cdiv(N, BN)):
        with load:
            if BN <= 256:
                sX.tma_load(X, coords=(b, tn * BN, 0), barrier=x_full)
            else:   # a TMA box spans at most 256 rows: two copies, one barrier
                half = BN // 2
                sX.rows(0, half).tma_load(X, coords=(b, tn * BN, 0), barrier=x_full)
                sX.rows(half, half).tma_load(X, coords=(b, tn * BN + half, 0), barrier=x_full)
            for c in lm.range(KT, pipeline=pipe):
                lm.wait(c_empty)
                sC.tma_load(Cen, coords=(b, (ks * KT + c) * BC, 0), barrier=c_full)
        with math:
            row0 = math.index * ROWS
            best_d[:] = lm.inf
            best_i[:] = 0
            if ROWS == 128:
                best_d2[:] = lm.inf
                best_i2[:] = 0
            lm.wait(x_full)
            for c in lm.range(KT, pipeline=pipe):
                lm.wait(c_full)
                # Both blocks' MMAs in flight at once; the one issued last releases the stage.
                if ROWS == 128:
                    lm.mma(acc2, sX.rows(row0 + 64, 64), sC.T, accumulate=False)
                lm.mma(acc, sX.rows(row0, 64), sC.T, accumulate=False, release=c_empty)
                csq = lm.load(CSQ, coords=(b, (ks * KT + c) * BC), shape=(BC,), fill=lm.inf)
                if ROWS == 128:
                    fold(acc2, csq, ks * KT + c, best_d2, best_i2)
                fold(acc, csq, ks * KT + c, best_d, best_i)
            part_d.rows(row0, 64).store(best_d)
            part_i.rows(row0, 64).store(best_i)
            if ROWS == 128:
                part_d.rows(row0 + 64, 64).store(best_d2)
                part_i.rows(row0 + 64, 64).store(best_i2)
            lm.arrive(parts)
            lm.wait(parts)
            if ks == 0:
                for r in range(1, SPLIT):
                    merge(part_d.rows(row0, 64), part_i.rows(row0, 64), r, peer_d, peer_i, best_d, best_i)
                lm.store(IDS, best_i, coords=(b, tn * BN + row0))
                if ROWS == 128:
                    for r in range(1, SPLIT):
                        merge(part_d.rows(row0 + 64, 64), part_i.rows(row0 + 64, 64), r,
                              peer_d, peer_i, best_d2, best_i2)
                    lm.store(IDS, best_i2, coords=(b, tn * BN + row0 + 64))
    del XSQ  # in the signature for the usual API; the kernel never reads it
