"""RMSNorm over the last axis, with a weight, through a ring in shared memory (issue #20):

    Y[r, :] = X[r, :] * rsqrt(mean(X[r, :]²) + eps) * W          (bf16 in and out, f32 math)

The shipped schedule (examples/rmsnorm_sm90.py) has each CTA load its rows straight into
registers, one tile per CTA: the next rows are requested only when a CTA ends and another starts
in its place. Here one CTA per SM walks its tiles (persistent): a producer warp copies each
tile's rows into a ring of STAGES stages with `cp_async`, up to STAGES tiles ahead, and the
consumer warpgroups read the rows from shared memory in a row layout (`sX.load()`,
docs/language.md §9.8a), normalise them and store them, so the SM's loads never stop while it
computes. Rows of up to 2048 columns are held by a warp, longer ones by a warpgroup (its warps'
partial sums meet in shared memory); each consumer warpgroup takes ROWS of a tile's rows.

Measured (H100, bench/results/2026-12-05-persistent/ c1): correct, and slower than the shipped
schedule at every bench shape (0.96x at 32768 x 4096, 0.62x at one row) and at 29 of 30 held-out
shapes; no route takes it. Several one-tile CTAs per SM already overlap one another's loads
with their math, and the ring adds a pass through shared memory.
"""
import cake
from cake import lm

H = 4096                                  # hidden size (specialised per shape by the contract)
OWNER = "warp" if H <= 2048 else "warpgroup"          # who holds a row
ROWS = 4 if H <= 2048 else 2 if H <= 8192 else 1      # rows per consumer warpgroup
# Consumer warpgroups, each ROWS rows of a tile. Two make a block of 12 warps (warp 0, warps
# 4-11), whose threads may hold 168 registers each: enough up to 4096 columns in whole chunks
# (H a multiple of 8 × the threads of a row); ragged rows (3000) spill there, so they take one.
ROW_THREADS = 32 if OWNER == "warp" else 128
CONSUMERS = 2 if H <= 4096 and H % (8 * ROW_THREADS) == 0 else 1
BR = ROWS * CONSUMERS                     # rows per tile
# Stages of the ring: about 64 KB of rows in flight per SM (4 tiles at H = 4096).
STAGES = 8 if BR * H <= 4096 else 4 if BR * H <= 16384 else 2
# DYNAMIC = 1: CTAs take their next tile from a counter as they free (23 % slower on an H100 when
# the grab came at a tile's start, bench/results/2026-12-09-rows-dynamic/; it now follows the copy).
DYNAMIC = 0


@cake.schedule(targets=["sm_90a"], persistent=True)
def rmsnorm_ring(X: lm.tensor[lm.bf16, "R", H], W: lm.tensor[lm.bf16, H],
                 Y: lm.tensor[lm.bf16, "R", H], eps: lm.f32):
    pool = lm.smem()
    sX = pool.view(shape=(BR, H), dtype=lm.bf16, stages=STAGES)
    # One warp copies; without `regs=` every thread may use 65536 / threads registers (255 with
    # one consumer warpgroup: a row of 16384 columns is 128 f32 per thread).
    load = lm.role(warp=0)
    rows = lm.role(warpgroups=[1, 2] if CONSUMERS == 2 else [1])
    pipe = lm.pipeline(stages=STAGES)     # one stage per tile, carried from tile to tile
    full = lm.barrier(pipe, producers=[load], consumers=[rows])
    empty = lm.barrier(pipe, producers=[rows], consumers=[load])
    x = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows=OWNER)
    for t in lm.tiles(lm.cdiv(R, BR), dynamic=DYNAMIC == 1):
        with load:
            for _ in lm.range(1, pipeline=pipe):
                lm.wait(empty)
                sX.cp_async(X, coords=(t * BR, 0), barrier=full)
        with rows:
            r0 = rows.index * ROWS
            for _ in lm.range(1, pipeline=pipe):
                lm.wait(full)
                x[:] = lm.cast(sX.rows(r0, ROWS).load(), lm.f32)
                lm.arrive(empty)
            rstd = lm.rsqrt(lm.sum(x * x, axis=1) * (1.0 / H) + eps)
            w = lm.cast(lm.load(W, coords=(0,), shape=(H,)), lm.f32)
            lm.store(Y, lm.cast(x * rstd[:, None] * w[None, :], lm.bf16), coords=(t * BR + r0, 0))
