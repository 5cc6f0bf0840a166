"""BF16 GEMM C = A · Bᵀ for Blackwell (sm_100a / sm_103a): TMA + tcgen05.mma with the
accumulator in tensor memory. One CTA per 128 × 128 output tile, three roles:
- `load` (one warp) streams A and B tiles through a 4-stage TMA ring;
- `mma` (one warp; one elected thread issues) runs tcgen05.mma (cta_group::1, M=128, N=128,
  K=16 per instruction) into the TMEM accumulator `acc`; each MMA's `release=empty` is a
  tcgen05.commit that frees the stage once the MMAs reading it completed; after the K loop,
  `lm.commit(acc_full)` signals that the whole accumulator has been written;
- `epilogue` (one warpgroup, one thread per TMEM lane, i.e. per output row) waits for
  `acc_full`, reads the accumulator with tcgen05.ld (warp w reads lanes 32w..32w+31), casts it to
  bf16 and stores C.

Not persistent: each CTA computes one tile, so the accumulator is written once and read once
and needs no second ("acc_empty") barrier. The epilogue reads the accumulator EPI columns at a
time (`acc.cols(...)`, docs/language.md §9.7), so a thread holds EPI f32 registers of its row
whatever BN is: BN = 256 with EPI = 64 lowers too."""
import cake
from cake import lm

BM, BN, BK = 128, 128, 64
EPI = BN    # accumulator columns the epilogue loads and stores at a time (a multiple of 32)
STAGES = 4  # 4 × 32 KiB of operands


@cake.schedule(targets=["sm_100a", "sm_103a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"],
         B: lm.tensor[lm.bf16, "N", "K"],
         C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(BM, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sB = pool.view(shape=(BN, BK), dtype=lm.bf16, stages=STAGES, swizzle=128)

    # 128 lanes (one per output row) × BN f32 columns.
    acc = lm.tmem(cols=BN, shape=(BM, BN), dtype=lm.f32)

    epilogue = lm.role(warpgroup=0)
    load = lm.role(warp=4)
    mma = lm.role(warp=5)

    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[mma])
    empty = lm.barrier(pipe, producers=[mma], consumers=[load])
    acc_full = lm.barrier(producers=[mma], consumers=[epilogue])

    out = epilogue.fragment(shape=(BM, EPI), dtype=lm.f32)

    for tm, tn in lm.tiles(lm.cdiv(M, BM), lm.cdiv(N, BN)):
        with load:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(empty)
                sA.tma_load(A, coords=(tm * BM, k * BK), barrier=full)
                sB.tma_load(B, coords=(tn * BN, k * BK), barrier=full)
        with mma:
            for k in lm.range(lm.cdiv(K, BK), pipeline=pipe):
                lm.wait(full)
                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)
            lm.commit(acc_full)
        with epilogue:
            lm.wait(acc_full)
            for c in range(BN // EPI):
                lm.tmem_load(out, acc.cols(c * EPI, EPI))
                lm.store(C, lm.cast(out, lm.bf16), coords=(tm * BM, tn * BN + c * EPI))
