# Compile-time Python: folded constants, unrolled `range`, constant `if`, tuples, asserts.
import cake
from cake import lm

SHAPE = (128, 64)
DTYPE = lm.bf16
NAME = "copy"
BIG = 9223372036854775807
STAGES = 3 if NAME == "copy" else 5


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"], C: lm.tensor[lm.bf16, "M", "K"]):
    assert BIG > 0
    assert len(SHAPE) == 2 and SHAPE[-1] == 64, "two axes"
    assert 7 // 2 == 3 and 7 % 2 == 1 and -7 // 2 == -4
    pool = lm.smem()
    sA = pool.view(shape=SHAPE, dtype=DTYPE, stages=STAGES, swizzle=128)
    load = lm.role(warps=[0, 1, 2, 3])
    full = lm.barrier(producers=[load], consumers=[load])
    rows = SHAPE[0] // 4
    for tm, tk in lm.tiles(lm.cdiv(M, SHAPE[0]), lm.cdiv(K, SHAPE[1])):
        with load:
            if STAGES > 4:
                lm.wait(full)
            elif STAGES == 3:
                for i in range(0, 4, 2):
                    sA.rows(i * rows, rows).tma_load(A, coords=(tm * 128 + i * rows, tk * 64), barrier=full)
                for i in range(3, 0, -2):
                    sA.rows(i * rows, rows).tma_load(A, coords=(tm * 128 + i * rows, tk * 64), barrier=full)
            else:
                pass
            lm.wait(full)
            if tm > 0:
                sA.tma_store(C, coords=(tm * 128, tk * 64))
            else:
                sA.tma_store(C, coords=(0, tk * 64))
