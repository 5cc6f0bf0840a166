"""Small-M C = A · Bᵀ on the CUDA cores: a GEMV that streams the weight once.

    C[m, n] = Σ_k A[m, k] · B[n, k]        (bf16 in and out, f32 math; M = MT rows of A)

At M = 1 or 2 a token's projection does 2·M flops per weight element: far too few for the tensor
cores to matter, so the time is the weight's bytes over HBM bandwidth. Each CTA of one warpgroup
takes ROWS rows of the weight (row layout, docs/language.md §9.8a), multiplies them by the rows
of A (per-column vectors) as they load, and reduces each product along K. At MT = 2 and 4 one
statement reads the weight once with every row of A in flight and keeps one running sum per
weight row and row of A (`s0[:], s1[:] = lm.sum(...), lm.sum(...)`). Measured on the H200: at
M = 1, 1.23–1.40× cuBLAS where K ≤ 7168 (bench/results/2026-12-04-row-evict/); at M = 2,
1.15–1.31× at the five contract weights, faster than the swapped tensor-core schedule at each
(bench/results/2026-12-05-gemv-fused/); at M = 4 A's rows, reread from L2 by every CTA, make
it slower than that schedule, and the family routes those shapes there.
"""
import cake
from cake import lm

K = 4096                       # the weight's columns (specialised per shape)
MT = 1                         # rows of A (specialised per shape: 1, 2 or 4)
# Weight rows per CTA: ~16 KB of weight each (WEIGHT_ROWS > 0 overrides it).
WEIGHT_ROWS = 0
ROWS = WEIGHT_ROWS if WEIGHT_ROWS > 0 else 4 if K <= 2048 else 2 if K <= 4096 else 1
# FUSED = 1: at M = 1 too, the row sum of the loads alone (no product tile held in registers).
FUSED = 0
# The weight is read once: its lines leave L2 first, so they evict neither A's row nor other
# kernels' dirty lines (1.12-1.21x faster at M = 1: bench/results/2026-12-04-row-evict/).
EVICT_FIRST = 1
B_EVICT = "first" if EVICT_FIRST == 1 else None


@cake.schedule(targets=["sm_90a"])
def gemv(A: lm.tensor[lm.bf16, "M", K], B: lm.tensor[lm.bf16, "N", K],
         C: lm.tensor[lm.bf16, "M", "N"]):
    rows = lm.role(warpgroup=0)
    if MT == 1 and FUSED == 0:
        p = rows.fragment(shape=(ROWS, K), dtype=lm.f32, rows="warpgroup")
    elif MT == 1:
        s0 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    else:
        # One sum per weight row and row of A; no product tile is held (§9.8a).
        s0 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
        s1 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
        if MT == 4:
            s2 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
            s3 = rows.fragment(shape=(ROWS,), dtype=lm.f32, rows="warpgroup")
    for t in lm.tiles(lm.cdiv(N, ROWS)):
        with rows:
            w = lm.cast(lm.load(B, coords=(t * ROWS, 0), shape=(ROWS, K), evict=B_EVICT), lm.f32)
            if MT == 1 and FUSED == 1:
                s0[:] = lm.sum(w * lm.cast(lm.load(A, coords=(0, 0), shape=(K,)), lm.f32)[None, :], axis=1)
                lm.store(C, lm.cast(s0, lm.bf16), coords=(0, t * ROWS))
            elif MT == 1:
                # The weight rows and A's row in one statement: every load of both is in flight
                # before the first is used (a statement's loads are batched, §9.8a).
                p[:] = w * lm.cast(lm.load(A, coords=(0, 0), shape=(K,)), lm.f32)[None, :]
                lm.store(C, lm.cast(lm.sum(p, axis=1), lm.bf16), coords=(0, t * ROWS))
            else:
                a0 = lm.cast(lm.load(A, coords=(0, 0), shape=(K,)), lm.f32)
                a1 = lm.cast(lm.load(A, coords=(1, 0), shape=(K,)), lm.f32)
                if MT == 2:
                    # The weight read once, A's rows in flight with it, one pass of two sums.
                    s0[:], s1[:] = lm.sum(w * a0[None, :], axis=1), lm.sum(w * a1[None, :], axis=1)
                else:
                    a2 = lm.cast(lm.load(A, coords=(2, 0), shape=(K,)), lm.f32)
                    a3 = lm.cast(lm.load(A, coords=(3, 0), shape=(K,)), lm.f32)
                    s0[:], s1[:], s2[:], s3[:] = (lm.sum(w * a0[None, :], axis=1), lm.sum(w * a1[None, :], axis=1),
                                                  lm.sum(w * a2[None, :], axis=1), lm.sum(w * a3[None, :], axis=1))
                    lm.store(C, lm.cast(s2, lm.bf16), coords=(2, t * ROWS))
                    lm.store(C, lm.cast(s3, lm.bf16), coords=(3, t * ROWS))
                lm.store(C, lm.cast(s0, lm.bf16), coords=(0, t * ROWS))
                lm.store(C, lm.cast(s1, lm.bf16), coords=(1, t * ROWS))
