"""Two chained GEMMs for Hopper, the first product kept in registers:

    S = A · B1ᵀ        (f32, in the accumulator)
    P = bf16(S)        (registers: the A operand of the next wgmma)
    O = P · B2ᵀ        (f32)

the shape of an attention block's two products (scores, then scores · values) without the
softmax between them. Per 64-row tile of A, one warpgroup TMA-loads A's tile and the whole of B1
and B2 (64 × 128 and 128 × 64), multiplies S = A · B1ᵀ from shared memory, casts S to bf16 into
`p`, and multiplies O = P · B2ᵀ with `p` as wgmma's A operand straight from registers
(docs/language.md §9.6): S never goes through shared memory.

The accumulator layout of S is the layout wgmma wants for a register A operand, two bf16 per
register, so the cast is a pack of neighbouring elements. Cake waits for the first MMA group to
retire before the cast reads S, and for the second before the store reads O.
"""
import cake
from cake import lm

BM = 64         # rows of A per tile: one warpgroup, wgmma M
K1 = 128        # A's columns (the first product's K)
N1 = 64         # B1's rows: S's columns, the second product's K
N2 = 128        # B2's rows: O's columns


@cake.schedule(targets=["sm_90a"])
def gemm_chain(A: lm.tensor[lm.bf16, "M", K1],
               B1: lm.tensor[lm.bf16, N1, K1],
               B2: lm.tensor[lm.bf16, N2, N1],
               O: lm.tensor[lm.f32, "M", N2]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, K1), dtype=lm.bf16, swizzle=128)
    sB1 = pool.view(shape=(N1, K1), dtype=lm.bf16, swizzle=128)
    sB2 = pool.view(shape=(N2, N1), dtype=lm.bf16, swizzle=128)

    math = lm.role(warpgroup=0)
    loaded = lm.barrier(producers=[math], consumers=[math])

    s = math.fragment(shape=(BM, N1), dtype=lm.f32)
    p = math.fragment(shape=(BM, N1), dtype=lm.bf16)     # wgmma A operand in registers
    o = math.fragment(shape=(BM, N2), dtype=lm.f32)

    for tm in lm.tiles(lm.cdiv(M, BM)):
        with math:
            sA.tma_load(A, coords=(tm * BM, 0), barrier=loaded)
            sB1.tma_load(B1, coords=(0, 0), barrier=loaded)
            sB2.tma_load(B2, coords=(0, 0), barrier=loaded)
            lm.wait(loaded)
            lm.mma(s, sA, sB1.T, accumulate=False)
            p[:] = lm.cast(s, lm.bf16)
            lm.mma(o, p, sB2.T, accumulate=False)
            lm.store(O, o, coords=(tm * BM, 0))
