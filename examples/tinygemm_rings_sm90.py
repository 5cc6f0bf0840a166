"""Small-M BF16 GEMM C = A · Bᵀ for Hopper with two rings: the weight and the tokens each stream
through their own stage ring, loaded by their own warp, so the weight's ring is as deep as the
shared memory left over by a shallow token ring.

examples/tinygemm_sm90.py keeps both operands of a K step in one stage. At M = 128 the tokens of a
step are 16 KB against the weight's 8 KB, so its 8 stages hold 64 KB of weight in flight per CTA
where M = 16's 16 stages hold 128 KB; an H100 under ncu read 59 % of DRAM's peak at M = 128 and
68 % at M = 16 (bench/results/2026-12-05-tall/, call 2). The tokens come from L2 (every CTA reads
the same few rows), the weight from DRAM: the tokens need a shallow ring, the weight a deep one.

    weight ring   W_STAGES stages of one BN × BK weight tile        (loaded by `wload`, warp 0)
    token ring    X_STAGES stages of R K-steps of the MP tokens     (loaded by `xload`, warp 1)

The consumer walks the token ring in its outer loop and, inside each token stage, R steps of the
weight ring: the MMA of each step releases its weight stage (one MMA group stays in flight), and
after the R steps `lm.commit` releases the token stage once every MMA that read it has retired
(one arrival per warpgroup, as a tcgen05 commit would be). The weight warp runs ahead of the
consumer by up to W_STAGES steps, whatever the token ring's depth.

    Cᵀ[n0 : n0 + BN, :] = B[n0 : n0 + BN, :] · Aᵀ          (BN × MP tile, MP = M rounded up)

Measured, the premise failed: on an H100 this schedule ran 1-18 % slower than the one-ring one
at each of the 20 contract shapes with M >= 16 and read DRAM more slowly (ncu: 45-53 % of peak at
M = 64 against 65 %), the shallow token ring waiting on L2 (bench/results/2026-12-05-rings/). It
stays as the language's two-ring example; no family routes to it.

Split over K as the one-ring schedule is (SPLIT CTAs of a cluster each take KB steps; CTA 0 adds
the partials through distributed shared memory), with KB a multiple of R: the last CTA's steps
past K read zeros.
"""

import cake
from cake import lm

M = 128                                 # tokens (specialised per shape by the contract)
NW = 2048                               # weight rows N (specialised per shape: it sets SPLIT)
MP = (M + 7) // 8 * 8                   # the tokens rounded up to wgmma's N step
BK = 64                                 # K per step: BK / 64 128-byte swizzle panels
R = 2                                   # K steps per token stage
X_STAGES = 2                            # token stages: the tokens come from L2
# ROW_WGS: consumer warpgroups per tile, each multiplying its own 64 weight rows by all the
# tokens: tiles of 64 * ROW_WGS rows (14336 rows: 112 tiles of 128 run in one wave, where 224 of
# 64 take 1.7), each token stage serving ROW_WGS times the weight. Three warpgroups leave 168
# registers a thread: split as well, at M = 128 ptxas spills 4 bytes of the peers' sum.
ROW_WGS = 1
BN = 64 * ROW_WGS                       # weight rows per tile
SPLIT_UPTO = 2048                       # the most weight rows split over K
SPLIT_WAYS = 2                          # CTAs per tile where it splits (2, 4 or 8)
SPLIT = SPLIT_WAYS if NW <= SPLIT_UPTO else 1
# The weight ring takes what the token ring and the partial tile leave of ~216 KB.
W_STAGES = min(32 * 64 // BK,
               (221184 - X_STAGES * R * MP * BK * 2 - (BN * MP * 4 if SPLIT > 1 else 0))
               // (BN * BK * 2))
EVICT_FIRST = 1                         # the weight is read once (examples/tinygemm_sm90.py)
WEIGHT_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"], cluster=(SPLIT, 1, 1))
def tinygemm_rings(A: lm.tensor[lm.bf16, M, "K"],
                   B: lm.tensor[lm.bf16, "N", "K"],
                   C: lm.tensor[lm.bf16, M, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=W_STAGES, swizzle=128)
    sX = pool.view(shape=(R * MP, BK), dtype=lm.bf16, stages=X_STAGES, swizzle=128)

    wload = lm.role(warp=0)
    xload = lm.role(warp=1)
    math = lm.role(warpgroups=[1, 2] if ROW_WGS == 2 else [1])

    wpipe = lm.pipeline(stages=W_STAGES)
    xpipe = lm.pipeline(stages=X_STAGES)
    wfull = lm.barrier(wpipe, producers=[wload], consumers=[math])
    wempty = lm.barrier(wpipe, producers=[math], consumers=[wload])
    xfull = lm.barrier(xpipe, producers=[xload], consumers=[math])
    xempty = lm.barrier(xpipe, producers=[math], consumers=[xload])
    acc = math.fragment(shape=(64, MP), dtype=lm.f32)
    if SPLIT > 1:
        part = pool.view(shape=(BN, MP), dtype=lm.f32)      # this CTA's partial tile
        parts = lm.barrier(producers=[math], consumers=[math], cluster=True)

    KX = lm.cdiv(lm.cdiv(K, BK), SPLIT * R)                  # token stages per CTA
    KB = KX * R                                              # K steps per CTA
    for ks, tn in lm.tiles(SPLIT, lm.cdiv(N, BN)):
        with wload:
            for kx in lm.range(KX):
                for kw in lm.range(R, pipeline=wpipe):
                    lm.wait(wempty)
                    sW.tma_load(B, coords=(tn * BN, (ks * KB + kx * R + kw) * BK), barrier=wfull,
                                evict=WEIGHT_EVICT)
        with xload:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xempty)
                for kw in range(R):
                    sX.rows(kw * MP, MP).tma_load(A, coords=(0, (ks * KB + kx * R + kw) * BK),
                                                  barrier=xfull)
        with math:
            wrow = 64 * math.index                           # this warpgroup's weight rows
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xfull)
                for kw in lm.range(R, pipeline=wpipe):
                    lm.wait(wfull)
                    lm.mma(acc, sW.rows(wrow, 64), sX.stage(xpipe.stage).rows(kw * MP, MP).T,
                           accumulate=kx * R + kw > 0, release=wempty)
                lm.commit(xempty)      # once the MMAs reading the stage have retired
            if SPLIT > 1:
                part.rows(wrow, 64).store(acc)
                lm.arrive(parts)
                lm.wait(parts)
                if ks == 0:
                    if (SPLIT - 1) * MP <= 128:
                        # The peers' partials read together, all in registers at once.
                        total = acc
                        for r in range(1, SPLIT):
                            total = total + part.rows(wrow, 64).load(cta=r)
                        lm.store(C, lm.cast(total, lm.bf16), coords=(0, tn * BN + wrow), transpose=True)
                    else:
                        # One peer at a time: SPLIT - 1 partials of MP columns at once would spill.
                        for r in range(1, SPLIT):
                            acc[:] = acc + part.rows(wrow, 64).load(cta=r)
                        lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * BN + wrow), transpose=True)
            else:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * BN + wrow), transpose=True)
