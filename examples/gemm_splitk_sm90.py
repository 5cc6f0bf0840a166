"""BF16 GEMM C = A · Bᵀ for Hopper with split-K across a cluster: for problems with too few
output tiles to give every SM one (a few hundred rows against a long K). The gemm_sm90 example's
producer and two consumer warpgroups, TMA + wgmma over 128 × 128 tiles, but each tile is shared
by a cluster of SPLIT CTAs: CTA r reduces the r-th of SPLIT runs of K blocks into its
accumulators, writes them to its shared memory as f32 and arrives on a cluster barrier; CTA 0
waits, adds the peers' partials through distributed shared memory and stores the tile with TMA.

Persistent (PERSISTENT = True): each cluster walks its tiles, so the producers load the next
tile while CTA 0 reduces this one. A CTA stores its next partial only after every CTA has
arrived on `drained`, which CTA 0 does once it has read the peers' partials (CAKE-C016).

Measured on the H200 (bench/results/2026-12-03-gemm-routes/): faster than unsplit 128 × 128
tiles only with a handful of tiles and a very long K (1.7–1.9× at M = 900, N = 256, K = 11448),
and still 2× slower than cuBLAS there; elsewhere about half their speed, the exchange of the
partials (plain stores, cluster-scope fences, remote loads) costing ~5 µs per peer and tile. An
example of the language's split-K, not a GEMM route."""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
SPLIT = 2       # CTAs per output tile, each taking 1/SPLIT of K
STAGES = 4      # 4 × 32 KiB of operands + 32 KiB epilogue tile + 64 KiB partial fit in 227 KiB
PERSISTENT = True   # one CTA per SM walking the tiles (False: one CTA per tile and split)
PART_SWIZZLE = 128  # the partial tile in 128-byte swizzled panels: its pair stores and reads conflict 2-way, not 8-way


def wg_rows(index):
    # Each consumer warpgroup owns a 64-row slice of the M tile (wgmma's M is 64).
    return index * 64


@cake.schedule(targets=["sm_90a"], cluster=(SPLIT, 1, 1), persistent=PERSISTENT)
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sC = pool.view(shape=(BM, BN), dtype=lm.bf16, swizzle=128)
    part = pool.view(shape=(BM, BN), dtype=lm.f32, swizzle=PART_SWIZZLE)  # this CTA's partial tile

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroups=[1, 2], regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    parts = lm.barrier(producers=[math], consumers=[math], cluster=True)      # partials stored
    drained = lm.barrier(producers=[math], consumers=[math], cluster=True)    # partials read
    acc = math.fragment(shape=(64, BN), dtype=lm.f32)

    KB = lm.cdiv(lm.cdiv(K, BK), SPLIT)                      # K blocks per CTA of a cluster
    for ks, tm, tn in lm.tiles(SPLIT, lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, (ks * KB + k) * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, (ks * KB + k) * BK), barrier=full)
        with math:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA.rows(wg_rows(math.index), 64), sB.T, accumulate=k > 0, release=empty)
            part.rows(wg_rows(math.index), 64).store(acc)
            lm.arrive(parts)
            lm.wait(parts)
            if ks == 0:
                total = acc
                for r in range(1, SPLIT):
                    total = total + part.rows(wg_rows(math.index), 64).load(cta=r)
                sC.rows(wg_rows(math.index), 64).store(lm.cast(total, lm.bf16))
                lm.fence_proxy_async()
                sC.rows(wg_rows(math.index), 64).tma_store(C, coords=(tm * BM + wg_rows(math.index), tn * BN))
            lm.arrive(drained)
            lm.wait(drained)
