"""Small-M BF16 GEMM C = A · Bᵀ for Hopper with stream-K: the weight B (N × K) streams once
through a deep TMA pipeline with the operands swapped, as in examples/tinygemm_sm90.py, but
instead of one CTA per 64-row weight tile (too few for the SMs at 2048 or 4096 rows, 1.7 waves
at 14336), a persistent grid of one CTA per SM splits every tile's K steps evenly between them:

    Cᵀ[n0 : n0 + 64, :] = Σ over the tile's runs  B[n0 : n0 + 64, k0 : k1] · Aᵀ[k0 : k1, :]

CTA c takes the c-th of `grid` equal shares of all tiles × KB steps, as runs of whole or partial
tiles (docs/language.md §8.1a). `lm.stream_fixup(acc)` publishes the partial of a run that stops
before its tile's end, and adds the earlier runs' partials into the run that ends the tile, which
stores it. Every SM streams the same number of weight bytes, whatever the tile count.

Measured on the H200 (bench/results/2026-12-05-offm/, call 1): correct, and 0.82-1.09x cuBLAS
at the contract's 40 shapes, slower than the table's routes everywhere but M = 1 at 14336 x 4096.
On an H100 with BK = 256 (bench/results/2026-12-08-streamk-fixup/): 0.98-1.10x where the swapped
routes run 1.10-1.29x; its timeline shows why: with fewer tiles than SMs most CTAs' shares lie
inside one tile, their partials arrive at the end of their lives, and the run that ends the tile
waits 1-3 us for them, while the equal static shares finish 2-5 us apart. An example of the
language's stream-K, not a route.
"""
import cake
from cake import lm

M = 8                                   # tokens (specialised per shape by the contract)
NW = 4096                               # weight rows (the contract specialises it; unused here)
MP = 8 if M <= 8 else 16 if M <= 16 else 32 if M <= 32 else 64 if M <= 64 else 128
BN = 64                                 # weight rows per tile (wgmma's M)
BK = 64                                 # K per step (one 128-byte swizzle row)
# Ring depth: the weight bytes in flight, as in examples/tinygemm_sm90.py (wider stages, fewer
# of them: BK = 256 in four stages at M <= 16, BK = 128 in six at M 17-64).
STAGES = (16 if MP <= 16 else 12 if MP <= 64 else 8) // (BK // 64)
# The weight is read once: its lines go first when L2 needs room.
EVICT_FIRST = 1
WEIGHT_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"], persistent=True)
def tinygemm(A: lm.tensor[lm.bf16, M, "K"],
             B: lm.tensor[lm.bf16, "N", "K"],
             C: lm.tensor[lm.bf16, M, "N"]):
    pool = lm.smem()
    sW = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sX = pool.view(shape=(MP, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=40)
    math = lm.role(warpgroup=1, regs=232)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[math])
    empty = lm.barrier(pipe, producers=[math], consumers=[load])
    acc = math.fragment(shape=(BN, MP), dtype=lm.f32)

    KB = lm.cdiv(K, BK)                                      # K steps per weight tile
    for tn, k0, k1 in lm.tiles(lm.cdiv(N, BN), stream=KB):  # a run: steps k0..k1 of tile tn
        with load:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(empty)
                sW.tma_load(B, coords=(tn * BN, k * BK), barrier=full, evict=WEIGHT_EVICT)
                sX.tma_load(A, coords=(0, k * BK), barrier=full)
        with math:
            for k in lm.range(k0, k1, pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sW, sX.T, accumulate=k > k0, release=empty)
            lm.stream_fixup(acc)
            if k1 == KB:                                     # this run ends the tile: acc is its sum
                lm.store(C, lm.cast(acc, lm.bf16), coords=(0, tn * BN), transpose=True)
