# Unknown, duplicate, missing and surplus arguments.
import cake
from cake import lm


def helper(a, b=2):
    return a + b


@cake.schedule(targets=["sm_90a"], persistant=True)  # error[CAKE-L005]: no parameter `persistant`
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stage=2, swizzle=128)  # error[CAKE-L005]: did you mean `stages`?
    sB = pool.view((128, 64), lm.bf16, 2, 128, 0, 7)  # error[CAKE-L005]: at most 5 positional arguments, got 6
    sC = pool.view(shape=(128, 64), dtype=lm.bf16, shape=(64, 64))  # error[CAKE-L005]: argument `shape` of `view` given twice
    sD = pool.view((128, 64), lm.bf16, dtype=lm.f16)  # error[CAKE-L005]: argument `dtype` of `view` given twice
    sE = pool.view(dtype=lm.bf16)  # error[CAKE-L005]: missing its argument `shape`
    two = lm.role(warpgroup=0, warps=[0, 1])  # error[CAKE-L005]: exactly one of warp=
    none = lm.role(regs=40)  # error[CAKE-L005]: exactly one of warp=
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        with load:
            lm.wait(full, full)  # error[CAKE-L005]: `lm.wait` takes at most 1 positional argument
            lm.wait()  # error[CAKE-L005]: `lm.wait` is missing its argument `barrier`
            x = helper()  # error[CAKE-L005]: `helper` is missing its argument `a`
            y = helper(1, 2, 3)  # error[CAKE-L005]: `helper` takes at most 2
            z = helper(1, c=3)  # error[CAKE-L005]: `helper` has no parameter `c`
            w = range()  # error[CAKE-L005]: `range` takes 1 to 3
            u = len(5)  # error[CAKE-L005]: `len` takes one tuple
            v = min(3)  # error[CAKE-L005]: two or more values
            t = lm.tiles()  # error[CAKE-L005]: 1 to 3 tile counts
