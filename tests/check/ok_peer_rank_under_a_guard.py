# Clean: the peer rank `t0 + r` is read only under `if ks == 0:` (ks is t0), so it is r, 1 in a
# cluster of 2 CTAs: the `if` narrows what the rank can be (cake_ir::bounds::bounds_under).
import cake
from cake import lm

M = 8                                   # tokens (specialised per shape by the contract)
NW = 2048                               # weight rows N (specialised per shape: it sets SPLIT)
# TIGHT = 1: MP is M rounded up to 8 (wgmma's N moves in steps of 8), so a token box carries at
# most 7 rows past M; else the next power of two (M = 100: 128, 28 zero-filled rows per box).
TIGHT = 0
MP = (M + 7) // 8 * 8 if TIGHT == 1 else \
    8 if M <= 8 else 16 if M <= 16 else 32 if M <= 32 else 64 if M <= 64 else 128
# ROW_WGS: consumer warpgroups per tile, each multiplying its own 64 weight rows by all the tokens,
# so a tile is 64 * ROW_WGS rows: fewer, taller tiles (14336 rows: 112 of 128 run in one wave
# where 224 of 64 take 1.7) and each token load serves ROW_WGS times the weight. Split too, the
# tall tiles' partials meet in CTA 0 like the short ones' (half the token bytes of 64-row tiles
# on as many CTAs): measured 1.2-2.6x slower than the unsplit 64-row tiles at every M of 32-128
# on an H100 (bench/results/2026-12-05-tall/).
ROW_WGS = 1
BN = 64 * ROW_WGS                       # weight rows per tile
# K per stage: one 128-byte swizzle panel per 64, each its own TMA box. A wider stage asks for
# BK / 64 consecutive panels of every weight row at once (fewer stages hold the same bytes).
BK = 64
# BK = 512 ran 1.8-2.8x slower than 256 on an H100 (bench/results/2026-12-06-timeline/, call 4).
# CTAs per tile: enough tiles × SPLIT to cover the 132 SMs (measured: bench/results/2026-12-02-tinygemm-splitk).
SPLIT_UPTO = 2048                       # the most weight rows split (a family route may raise it)
SPLIT_WAYS = 2                          # CTAs per tile where it splits (2, 4 or 8)
# MCAST: CTAs of a cluster sharing one token load (1, 2 or 4; each loads MP / MCAST rows, a
# multiple of 8, so MP >= 8 * MCAST). The cluster then runs along the weight tiles, so not split.
MCAST = 1
SPLIT = SPLIT_WAYS if NW <= SPLIT_UPTO and MCAST == 1 else 1
# PER_SM = 2: two CTAs share each SM (`ctas_per_sm=2`), each with half the ring, so a weight of
# more tiles than SMs runs in one wave instead of 1.7 (14336 rows: 224 tiles on 132 SMs).
PER_SM = 1
# PERSISTENT = 1: a grid of one CTA per SM walks the tiles, so the producer streams the next tile's
# weight while the consumer finishes the last one and no wave boundary empties the ring
# (14336 rows: 224 tiles, 1.7 per SM). Not with PER_SM = 2 (`ctas_per_sm` is not lowered there).
PERSISTENT = 0
# DYNAMIC = 1 (with PERSISTENT = 1): each CTA takes its next tile from a counter when it comes to
# it (`lm.tiles(..., dynamic=True)`), so the SMs that stream faster take the second tiles. Tiles of
# a cluster (split or sharing tokens) keep the static order. 2.5 % slower than the static split at
# 14336 x 4096 on an H100 with the grab at a tile's start (bench/results/2026-12-09-rows-dynamic/).
DYNAMIC = 0
# Ring depth: the weight bytes in flight (measured); taller tiles fill ~216 KB with fewer stages.
# RING_STAGES > 0 sets it outright (a family route may fix it per M).
RING_STAGES = 0
STAGES = RING_STAGES if RING_STAGES > 0 else \
    (16 if MP <= 16 else 12 if MP <= 64 else 8) // PER_SM // (BK // 64) if ROW_WGS == 1 else \
    min(12, (221184 - (BN * MP * 4 if SPLIT > 1 else 0)) // (2 * BK * (BN + MP)))
# Within 1/PER_SM of the register file, with the producer's 40 (ROW_WGS consumers: what is left).
MATH_REGS = (232 if PER_SM == 1 else 216) if ROW_WGS <= 2 else 152 if ROW_WGS == 3 else 104
# The weight is read once: its lines go first when L2 needs room, so they evict neither the tokens
# nor other kernels' dirty lines (1.10-1.14x measured: bench/results/2026-12-03-cost-model).
EVICT_FIRST = 1
WEIGHT_EVICT = "first" if EVICT_FIRST == 1 else None
# CP_ASYNC = 1: the producer warpgroup's 128 threads copy the weight with cp.async, 16 bytes each,
# a warp's 32 pieces one row's 512 contiguous bytes at BK = 256 (the GEMV's access pattern), instead
# of TMA boxes (one issuing thread); the tokens stay on TMA, and the weight takes L2's default
# priority (cp_async's `evict=` is not lowered, docs/language.md §9.3). On the H200 it ran 2-4 %
# slower than TMA boxes at M <= 8, each copy plain, and up to 44 % slower at M = 16
# (bench/results/2026-12-06-regs-gemm/, call 2): no route takes it.
CP_ASYNC = 0
# The producer's registers: its sixteen pieces' addresses need more than one TMA issuer (with 56
# ptxas spilled 16-184 B in the copy loop; with 104, none).
LOAD_REGS = 40 if CP_ASYNC == 0 else 104
# WIDE = 1: two consumer warpgroups, each multiplying the weight tile by half of the tokens (MP
# of 64 and more, tiles not split). Measured slower at the contract's M = 64 and 128 (0.96x of
# one, bench/results/2026-12-03-cost-model-2/): one warpgroup's MMAs already reach the rate.
WIDE = 0
CONSUMERS = ROW_WGS if ROW_WGS > 1 else 2 if WIDE == 1 and SPLIT == 1 and MP >= 64 else 1
# STAGED_STORE = 1 (one consumer warpgroup): the result tile goes to C through shared memory, as
# the layout of C wants it (`sC.T.store`: stmatrix writes the transposed tile, 16 bytes a lane)
# and one TMA store, instead of one 2-byte global store per element. Where the tile is split,
# CTA 0 stores the sum this way. Costs MP * 128 bytes of shared memory beside the ring. On an H100
# (three runs): 0.3-4.9 % faster at M = 128, 0-2 % at M = 64, within 1 % at M = 16, correct at
# every contract shape and at eight held-out ones, seven with rows past M in the TMA box
# (bench/results/2026-12-12-m128-parts/). Not yet run on the H200, where the table's routes
# were chosen, so no route takes it.
STAGED_STORE = 0
STAGED = STAGED_STORE == 1 and CONSUMERS == 1
MC = MP if ROW_WGS > 1 else MP // CONSUMERS   # tokens per consumer warpgroup


@cake.schedule(targets=["sm_90a"], cluster=(SPLIT * MCAST, 1, 1), ctas_per_sm=PER_SM,
               persistent=PERSISTENT == 1)
def tinygemm(A: lm.tensor[lm.bf16, M, "K"],
             B: lm.tensor[lm.bf16, "N", "K"],
             C: lm.tensor[lm.bf16, M, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sX = pool.view(shape=(MP, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=LOAD_REGS)
    math = lm.role(warpgroups=[1, 2, 3, 4] if CONSUMERS == 4 else [1, 2, 3] if CONSUMERS == 3 else
                   [1, 2] if CONSUMERS == 2 else [1], regs=MATH_REGS)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load], cluster=MCAST > 1)
    acc = math.fragment(shape=(64, MC), dtype=lm.f32)
    if STAGED:
        sC = pool.view(shape=(MP, 64), dtype=lm.bf16, swizzle=128)   # C's rows: the tokens
    if SPLIT > 1:
        part = pool.view(shape=(BN, MP), dtype=lm.f32)      # this CTA's partial tile
        parts = lm.barrier(producers=[math], consumers=[math], cluster=True)
        if PERSISTENT == 1:     # CTA 0 has read the partials: the next tile's may overwrite them
            drained = lm.barrier(producers=[math], consumers=[math], cluster=True)

    KB = lm.cdiv(lm.cdiv(K, BK), SPLIT)                      # K blocks per CTA of a cluster
    # A cluster's CTAs take neighbouring tiles of the first axis: the K runs when split, the
    # weight tiles when the tokens are shared.
    for t0, t1 in lm.tiles(lm.cdiv(N, BN) if MCAST > 1 else SPLIT, 1 if MCAST > 1 else lm.cdiv(N, BN),
                           dynamic=DYNAMIC == 1 and PERSISTENT == 1 and SPLIT * MCAST == 1):
        ks = 0 if MCAST > 1 else t0
        tn = t0 if MCAST > 1 else t1
        with load:
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(empty)
                if CP_ASYNC == 1:
                    sW.cp_async(B, coords=(tn * BN, (ks * KB + k) * BK), barrier=full)
                else:
                    sW.tma_load(B, coords=(tn * BN, (ks * KB + k) * BK), barrier=full, evict=WEIGHT_EVICT)
                sX.tma_load(A, coords=(0, (ks * KB + k) * BK), barrier=full, multicast=MCAST)
        with math:
            wrow = 64 * math.index if ROW_WGS > 1 else 0     # this warpgroup's weight rows in the tile
            tok = 0 if ROW_WGS > 1 else MC * math.index      # and its tokens
            for k in lm.range(KB, pipeline=pipe):
                lm.wait(full)
                if CP_ASYNC == 1:
                    lm.fence_proxy_async()   # cp.async wrote sW through the generic proxy
                lm.mma(acc, sW.rows(wrow, 64), sX.rows(tok, MC).T, accumulate=k > 0, release=empty)
            if SPLIT > 1:
                part.rows(wrow, 64).store(acc)
                lm.arrive(parts)
                lm.wait(parts)
                if ks == 0:
                    if (SPLIT - 1) * MC <= 128:
                        # The peers' partials read together, all in registers at once.
                        total = acc
                        for r in range(1, SPLIT):
                            total = total + part.rows(wrow, 64).load(cta=t0 + r)
                    else:
                        # One peer at a time: SPLIT - 1 partials of MC columns at once would spill.
                        for r in range(1, SPLIT):
                            acc[:] = acc + part.rows(wrow, 64).load(cta=r)
                        total = acc
                    if STAGED:
                        sC.T.store(lm.cast(total, lm.bf16))
                        lm.fence_proxy_async()
                        sC.tma_store(C, coords=(0, tn * BN))
                    else:
                        lm.store(C, lm.cast(total, lm.bf16), coords=(0, tn * BN + wrow), transpose=True)
                if PERSISTENT == 1:
                    lm.arrive(drained)
                    lm.wait(drained)
            elif STAGED:
                sC.T.store(lm.cast(acc, lm.bf16))
                lm.fence_proxy_async()
                sC.tma_store(C, coords=(0, tn * BN))
            else:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(tok, tn * BN + wrow), transpose=True)
