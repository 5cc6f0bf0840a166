"""K-means assignment for Hopper: IDS[b, n] = argmin_k ‖X[b, n] − Cen[b, k]‖², fused as a GEMM
(TMA + wgmma) with an argmin epilogue.

‖x − c‖² = ‖x‖² + ‖c‖² − 2·x·c. The ‖x‖² term is the same for every centroid of a row, so it
cannot change which centroid is nearest: the kernel ranks centroids by ‖c‖² − 2·x·c and never
reads XSQ (it stays in the signature so the kernel is a drop-in for the usual assign API, which
passes both norm vectors).

Per persistent tile (batch b, 192 rows of X):
- each of the three consumer warpgroups TMA-loads its own 64 rows of the x tile, which stay
  resident while every centroid tile of the batch streams past;
- the producer warpgroup streams 128-centroid tiles of `Cen` through a 5-stage ring;
- per centroid tile, a consumer computes acc = x · cᵀ (64 × 128, f32) with wgmma, forms
  ‖c‖² − 2·acc, reduces it per row with lm.min / lm.argmin and folds the result into its
  running best distance and index with lm.select. The reductions rank by packed keys
  (`packed=True`, docs/language.md §10.4): the column rides in the distance's low 5 mantissa
  bits, so one min per element finds both (the exact form's compare and two selects are what
  limits this epilogue, kernels/kmeans/NOTES.md). Within a tile, distances equal to 2⁻¹⁸
  relative may resolve to either column; across tiles a strict `<` keeps the earlier one.
- Centroids past K read as zero from TMA and get ‖c‖² = +inf from the fill of lm.load, so they
  never win.

Why the consumers load x themselves: the x buffer is reused by the next tile, so whoever loads
it must first wait until the consumers are done with it. Cake derives that a release barrier
starts free (so a loader's first wait passes) only when every arrival on it is an MMA
`release=`, or when the wait guards a copy into a view of two or more stages
(docs/language.md §11.3). x has one stage, and `release=` names a single barrier, which the
last MMA reading x already spends on its centroid stage. An `lm.arrive`-released `x_empty`
would therefore not start free, and a producer's first wait on it would never return. Each
consumer warpgroup reads only its own 64 rows of x, so it can reload those rows after its MMAs
retire without any cross-role release.
"""
import cake
from cake import lm

BN = 192        # rows of X per tile (three consumer warpgroups × 64: wgmma M is 64)
BC = 128        # centroids per pipeline stage
D = 128         # feature dimension (specialised per shape by assign_d.contract.toml)
DP = (D + 63) // 64 * 64   # D padded to whole 64-column panels: TMA fills the padding with zeros,
                           # which add nothing to x·c (a 96-wide row is not a whole number of panels)
STAGES = 5      # x 48 KiB + 5 × 32 KiB of centroids = 208 KiB of shared memory
EVICT_FIRST = 0  # 1: X's rows (read once) leave L2 first: measured 1.01x (0.99-1.07), not adopted
X_EVICT = "first" if EVICT_FIRST == 1 else None


def wg_rows(index):
    return index * 64


@cake.schedule(targets=["sm_90a"], persistent=True)
def kmeans_assign(X: lm.tensor[lm.bf16, "B", "N", D],
                  Cen: lm.tensor[lm.bf16, "B", "K", D],
                  XSQ: lm.tensor[lm.f32, "B", "N"],
                  CSQ: lm.tensor[lm.f32, "B", "K"],
                  IDS: lm.tensor[lm.i32, "B", "N"]):
    pool = lm.smem()
    # 256 B rows with 128B swizzle: stored as two 64-column panels, the layout TMA writes.
    sX = pool.view(shape=(BN, DP), dtype=lm.bf16, swizzle=128)
    sC = pool.view(shape=(BC, DP), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # 512 threads: 128 × 56 + 384 × 152 = 65536 registers.
    load = lm.role(warpgroup=0, regs=56)
    math = lm.role(warpgroups=[1, 2, 3], regs=152)

    pipe = lm.pipeline(stages=STAGES)
    x_full = lm.barrier(producers=[math], consumers=[math])
    c_full = lm.barrier(pipe, producers=[load], consumers=[math])
    c_empty = lm.barrier(pipe, producers=[math], consumers=[load])

    # Per consumer warpgroup: a 64 × BC dot-product tile and the running best per row.
    acc = math.fragment(shape=(64, BC), dtype=lm.f32)
    best_d = math.fragment(shape=(64,), dtype=lm.f32)
    best_i = math.fragment(shape=(64,), dtype=lm.i32)

    for b, tn in lm.tiles(B, lm.cdiv(N, BN)):
        with load:
            for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                lm.wait(c_empty)
                sC.tma_load(Cen, coords=(b, c * BC, 0), barrier=c_full)
        with math:
            sX.rows(wg_rows(math.index), 64).tma_load(
                X, coords=(b, tn * BN + wg_rows(math.index), 0), barrier=x_full, evict=X_EVICT)
            best_d[:] = lm.inf
            best_i[:] = 0
            lm.wait(x_full)
            for c in lm.range(lm.cdiv(K, BC), pipeline=pipe):
                lm.wait(c_full)
                lm.mma(acc, sX.rows(wg_rows(math.index), 64), sC.T,
                       accumulate=False, release=c_empty)
                csq = lm.load(CSQ, coords=(b, c * BC), shape=(BC,), fill=lm.inf)
                dist = csq[None, :] - 2.0 * acc                 # ‖c‖² − 2·x·c, (64, BC)
                tile_d = lm.min(dist, axis=1, packed=True)
                tile_i = lm.argmin(dist, axis=1, packed=True) + c * BC   # global centroid index
                # A name binds an expression, not a snapshot: `better` reads best_d where it is
                # used, so best_i is updated first and best_d last.
                better = tile_d < best_d
                best_i[:] = lm.select(better, tile_i, best_i)
                best_d[:] = lm.select(better, tile_d, best_d)
            lm.store(IDS, best_i, coords=(b, tn * BN + wg_rows(math.index)))
    del XSQ  # in the signature for the usual API; the kernel never reads it
