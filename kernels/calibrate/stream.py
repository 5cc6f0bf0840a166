"""Calibration probe: a TMA streaming ring. A producer warp streams (BM, BK) boxes of A through
a STAGES-deep ring; a consumer warpgroup only waits for each stage and releases it. Nothing is
computed but a token MMA per stage (64 x 8 x BK: wgmma is the cheapest way to read a stage and
release it, which is what lets the ring start free), so the time is the copy rate (DRAM or L2) or, with one CTA, the ring's latency.

`python -m cake.calibrate` substitutes the module constants: REUSE bounds the distinct row
blocks read (tm % REUSE), so a small REUSE keeps A's working set in L2 (the L2 probe) and a
large one streams from DRAM; one tile and one stage measure the TMA latency; a tiny box with
many stages measures the handoff."""
import cake
from cake import lm

BM, BK = 128, 64
STAGES = 4
EVICT_FIRST = 0        # 1: A's lines are loaded evict-first (L2 keeps other lines over them)
REUSE = 1048576
CLUSTER = 1            # CTAs per cluster (the residency probes: clusters that fit at once)


@cake.schedule(targets=["sm_90a"], persistent=True, cluster=(CLUSTER, 1, 1))
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    load = lm.role(warp=0)
    drain = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[drain])
    empty = lm.barrier(pipe, producers=[drain], consumers=[load])
    token = drain.fragment(shape=(64, 8), dtype=lm.f32)
    for (tm,) in lm.tiles(lm.cdiv(M, BM)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=((tm % REUSE) * BM, k * BK), barrier=full,
                            evict="first" if EVICT_FIRST == 1 else None)
        with drain:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(token, sA.rows(0, 64), sA.rows(0, 8).T, accumulate=False, release=empty)
