# CAKE-M003: in a two-ring schedule the view of the outer ring, read in the inner loop, takes
# the inner loop's stage unless it names its own; the help says which
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
SPLIT_WAYS = 2                          # CTAs per tile where it splits
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
                    lm.mma(acc, sW.rows(wrow, 64), sX.rows(kw * MP, MP).T,  # error[CAKE-M003]: name its stage, `sX.stage(xpipe.stage)`
                           accumulate=kx * R + kw > 0, release=wempty)
                lm.commit(xempty)      # once the MMAs reading the stage have retired
            if SPLIT > 1:
                part.rows(wrow, 64).store(acc)
                lm.arrive(parts)
                lm.wait(parts)
                if ks == 0:
                    total = acc
                    for r in range(1, SPLIT):
                        total = total + part.rows(wrow, 64).load(cta=r)
                    lm.store(C, lm.cast(total, lm.bf16), coords=(0, tn * BN + wrow), transpose=True)
            else:
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * BN + wrow), transpose=True)
