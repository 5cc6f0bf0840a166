"""A GEMM with K = 64 for Blackwell whose A operand the tensor cores read from tensor memory:
C = A · Bᵀ, A (M, 64), B (N, 64), f32 accumulation, bf16 output (the shape of an attention
block's Q · Kᵀ with a head dimension of 64).

Per (128 × 128) output tile: one load warp TMA-loads the A and B tiles; the MMA warp copies the A
tile from shared memory into TMEM with `lm.tmem_copy` (tcgen05.cp: four 128-lane × 256-bit
copies, each the same shared-memory descriptor a tcgen05.mma K step would read) and issues
tcgen05.mma with A from TMEM and B from shared memory; the epilogue warpgroup reads the f32
accumulator from TMEM and stores it as bf16. tcgen05.cp and the tcgen05.mma after it are issued
by the same thread, which the hardware runs in order, so no barrier sits between them. With one K
step there is no second copy that could overwrite A while an MMA still reads it.

No Blackwell GPU is available here: this is proven by ptxas accepting the generated code and by
its golden file, not by a run.
"""
import cake
from cake import lm

BM, BN, K = 128, 128, 64


@cake.schedule(targets=["sm_100a", "sm_103a"])
def gemm_tmem_a(A: lm.tensor[lm.bf16, "M", K],
                B: lm.tensor[lm.bf16, "N", K],
                C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, K), dtype=lm.bf16, swizzle=128)
    sB = pool.view(shape=(BN, K), dtype=lm.bf16, swizzle=128)

    # A in TMEM: 128 lanes, K bf16 elements two per 32-bit column. The accumulator: 128 f32 columns.
    a_tmem = lm.tmem(cols=K // 2, shape=(BM, K), dtype=lm.bf16)
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)

    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    full = lm.barrier(producers=[load], consumers=[mma])
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])

    out = epilogue.fragment(shape=(BM, BN), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            sA.tma_load(A, coords=(tm * BM, 0), barrier=full)
            sB.tma_load(B, coords=(tn * BN, 0), barrier=full)
        with mma:
            lm.wait(full)
            lm.tmem_copy(a_tmem, sA)
            lm.mma(acc, a_tmem, sB.T, accumulate=False)
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            lm.tmem_load(out, acc)
            lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN))
