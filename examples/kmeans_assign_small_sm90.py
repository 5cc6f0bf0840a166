"""K-means assignment for Hopper at small problems with few centroids: IDS[b, n] = argmin_k
‖X[b, n] − Cen[b, k]‖², one short-lived CTA per 64·RB rows of X.

Below ~20 µs a problem is a few tiles per SM, and the warp-specialised schedules
(examples/kmeans_assign_stream_sm90.py, examples/kmeans_assign_sm90.py) pay their set-up and a
whole 192-row tile's load before the first distance: one persistent CTA per SM, 180 KB of shared
memory, a producer that streams what the consumers read. Here one warpgroup per CTA does it all:
it copies its rows of x and every centroid (K ≤ BC, one barrier), multiplies, takes the argmin
and stores. A CTA needs 13–129 KB of shared memory and one warpgroup, so several CTAs share an SM
and one CTA's loads overlap another's math, as a fine-grained kernel's do.

Centroids past K read as zero from TMA and get ‖c‖² = +inf from the fill of lm.load, so they
never win; rows past N are zero-filled and not stored.
"""
import cake
from cake import lm

D = 128                            # feature dimension (specialised per shape by the family)
DP = (D + 63) // 64 * 64           # D padded to whole 64-column swizzle panels (TMA zero-fills)
BC = 64                            # centroids: the route serves K ≤ BC (32, 64 or 128)
RB = 1                             # 64-row blocks per CTA (1 or 2)
BN = 64 * RB                       # rows of X per CTA
# 1: X's rows (read once) leave L2 first, so the dirty lines already there (another kernel's
# output) are not written back while X streams in. Measured for the streaming schedule, where
# it gained 7-10 % at 39-78 MB of X and lost 2-4 % at hundreds of MB
# (bench/results/2026-12-03-cost-model/, c6); the family measures both forms.
EVICT_FIRST = 0
X_EVICT = "first" if EVICT_FIRST == 1 else None
# Shared memory: BN × DP × 2 + BC × DP × 2 bytes; D = 128, BC = 64, RB = 1: 16 + 16 KiB.


def nearest(acc, csq):
    """The nearest centroid of each of a 64-row block's rows, from its dot products with them."""
    dist = csq[None, :] - 2.0 * acc                 # ‖c‖² − 2·x·c, (64, BC); ‖x‖² is common
    return lm.argmin(dist, axis=1, packed=True)


@cake.schedule(targets=["sm_90a"])
def kmeans_assign_small(X: lm.tensor[lm.bf16, "B", "N", D],
                        Cen: lm.tensor[lm.bf16, "B", "K", D],
                        XSQ: lm.tensor[lm.f32, "B", "N"],
                        CSQ: lm.tensor[lm.f32, "B", "K"],
                        IDS: lm.tensor[lm.i32, "B", "N"]):
    pool = lm.smem()
    sX = pool.view(shape=(BN, DP), dtype=lm.bf16, swizzle=128)
    sC = pool.view(shape=(BC, DP), dtype=lm.bf16, swizzle=128)

    math = lm.role(warpgroup=0)
    loaded = lm.barrier(producers=[math], consumers=[math])

    acc = math.fragment(shape=(64, BC), dtype=lm.f32)
    if RB == 2:
        acc2 = math.fragment(shape=(64, BC), dtype=lm.f32)

    for b, tn in lm.tiles(B, lm.cdiv(N, BN)):
        with math:
            sX.tma_load(X, coords=(b, tn * BN, 0), barrier=loaded, evict=X_EVICT)
            sC.tma_load(Cen, coords=(b, 0, 0), barrier=loaded)
            # ‖c‖² from global memory while the copies are in flight.
            csq = lm.load(CSQ, coords=(b, 0), shape=(BC,), fill=lm.inf)
            lm.wait(loaded)
            if RB == 2:
                lm.mma(acc2, sX.rows(64, 64), sC.T, accumulate=False)
            lm.mma(acc, sX.rows(0, 64), sC.T, accumulate=False)
            if RB == 2:
                lm.store(IDS, nearest(acc2, csq), coords=(b, tn * BN + 64))
            lm.store(IDS, nearest(acc, csq), coords=(b, tn * BN))
    del XSQ  # in the signature for the usual API; the kernel never reads it
