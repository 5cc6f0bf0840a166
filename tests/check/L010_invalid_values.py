# Values outside their legal range.
import cake
from cake import lm

TILE = 128


@cake.schedule(targets=["sm_90a"], cluster=(0, 1))  # error[CAKE-L010]: cluster extents are in 1..=16, got 0
def copy(A: lm.tensor[lm.bf16, "M", 0], B: lm.tensor[lm.bf16, "bad name", "K"]):  # error[CAKE-L010]: must be positive, got 0 error[CAKE-L010]: `bad name` is not a valid dimension name
    pool = lm.smem()
    s1 = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=96)  # error[CAKE-L010]: swizzle must be 0, 32, 64 or 128 (bytes), got 96
    s2 = pool.view(shape=(128, 64), dtype=lm.bf16, stages=0, swizzle=128)  # error[CAKE-L010]: stages must be a positive integer, got 0
    s3 = pool.view(shape=(128, 0), dtype=lm.bf16)  # error[CAKE-L010]: got 0
    s4 = pool.view(shape=(), dtype=lm.bf16)  # error[CAKE-L010]: at least one extent
    s5 = pool.view(shape=(128, 64), dtype=lm.bf16, stages=-1)  # error[CAKE-L010]: got -1
    s6 = pool.view(shape=(128, 64), dtype=lm.bf16, swizzle=256)  # error[CAKE-L010]: got 256
    s7 = pool.view(shape=(128, 64), dtype=lm.bf16, swizzle=128)
    r1 = lm.role(warpgroup=40)  # error[CAKE-L010]: got 40
    r2 = lm.role(warpgroup=0, regs=300)  # error[CAKE-L010]: a register budget must be in
    r3 = lm.role(warps=[])  # error[CAKE-L010]: a role needs at least one warp
    p = lm.pipeline(stages=0)  # error[CAKE-L010]: stages must be a positive integer
    load = lm.role(warpgroup=0)
    b = lm.barrier(producers=[load], consumers=[load], count=0)  # error[CAKE-L010]: an mbarrier count must be in
    for tm in lm.tiles(4):
        with load:
            assert TILE == 64, "tile must be 64"  # error[CAKE-L010]: tile must be 64
            assert TILE == 32  # error[CAKE-L010]: compile-time assertion failed
            x = 1 // 0  # error[CAKE-L010]: division by zero
            y = (1, 2)[5]  # error[CAKE-L010]: index 5 out of range
            for i in range(0, 10, 0):  # error[CAKE-L010]: step must not be zero
                pass
            for i in range(100000):  # error[CAKE-L010]: limit 4096
                pass
            z = 99999999999999999999  # error[CAKE-L010]: does not fit in 64 bits
            w = s7.rows(0, 512)  # error[CAKE-L010]: row count must be in 1..=128, got 512
            q = 9223372036854775807 + 1  # error[CAKE-L010]: overflow
            f = load.fragment(shape=(64, 64), dtype=lm.f32)
            s = lm.sum(f, axis=2)  # error[CAKE-L010]: axis 2 is out of range
            p = lm.sum(f, axis=1, packed=True)  # error[CAKE-L010]: a sum has no index to pack
