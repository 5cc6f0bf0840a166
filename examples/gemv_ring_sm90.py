"""Small-M C = A · Bᵀ on the CUDA cores with the weight streamed through a shared-memory ring:

    C[m, n] = Σ_k A[m, k] · B[n, k]        (bf16 in and out, f32 math; M = MT rows of A, 1 or 2)

examples/gemv_sm90.py has each CTA load its weight rows straight into registers, one tile per
CTA, so an SM asks for the next rows only when one of its CTAs ends and another starts. Here one
CTA per SM walks its tiles (persistent): a producer warp copies each tile's weight rows into a
ring of STAGES stages with `cp_async`, up to STAGES tiles ahead, and the consumer warpgroups read
them from shared memory in the row layout (docs/language.md §9.8a), ROWS weight rows each, and
reduce each against A's rows (read from L2, as in the one-tile form).

Measured (H100, bench/results/2026-12-05-persistent/ c2): correct, and 0.74-0.82x the speed of
the one-tile GEMV (examples/gemv_sm90.py) at every weight of the contract, M = 1 and 2; no route
takes it. Several one-tile CTAs per SM already overlap one another's loads with their math.
"""
import cake
from cake import lm

K = 4096                       # the weight's columns (specialised per shape)
MT = 1                         # rows of A (specialised per shape: 1 or 2)
ROWS = 2 if K <= 4096 else 1   # weight rows per consumer warpgroup and tile
# Two consumer warpgroups make a block of 12 warps (warp 0, warps 4-11), whose threads may
# hold 168 registers: enough for a weight row of up to 4096 columns; longer rows take one.
CONSUMERS = 2 if K <= 4096 else 1
BR = ROWS * CONSUMERS          # weight rows per tile
# About 64 KB of weight in flight per SM.
STAGES = max(2, min(8, 65536 // (BR * K * 2)))


@cake.schedule(targets=["sm_90a"], persistent=True)
def gemv_ring(A: lm.tensor[lm.bf16, "M", K], B: lm.tensor[lm.bf16, "N", K],
              C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sB = pool.view(shape=(BR, K), dtype=lm.bf16, stages=STAGES)
    load = lm.role(warp=0)
    rows = lm.role(warpgroups=[1, 2] if CONSUMERS == 2 else [1])
    pipe = lm.pipeline(stages=STAGES)     # one stage per tile, carried from tile to tile
    full = lm.barrier(pipe, producers=[load], consumers=[rows])
    empty = lm.barrier(pipe, producers=[rows], consumers=[load])
    w = rows.fragment(shape=(ROWS, K), dtype=lm.f32, rows="warpgroup")
    s0 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    if MT == 2:
        s1 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    for t in lm.tiles(lm.cdiv(N, BR)):
        with load:
            for _ in lm.range(1, pipeline=pipe):
                lm.wait(empty)
                sB.cp_async(B, coords=(t * BR, 0), barrier=full)
        with rows:
            r0 = rows.index * ROWS
            for _ in lm.range(1, pipeline=pipe):
                lm.wait(full)
                w[:] = lm.cast(sB.rows(r0, ROWS).load(), lm.f32)
                lm.arrive(empty)
            a0 = lm.cast(lm.load(A, coords=(0, 0), shape=(K,)), lm.f32)
            if MT == 1:
                s0[:] = lm.sum(w * a0[None, :], axis=1)
            else:
                a1 = lm.cast(lm.load(A, coords=(1, 0), shape=(K,)), lm.f32)
                s0[:], s1[:] = lm.sum(w * a0[None, :], axis=1), lm.sum(w * a1[None, :], axis=1)
                lm.store(C, lm.cast(s1, lm.bf16), coords=(1, t * BR + r0))
            lm.store(C, lm.cast(s0, lm.bf16), coords=(0, t * BR + r0))
