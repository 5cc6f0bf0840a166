# Unknown names, attributes and methods, with "did you mean" help where a name is close.
import cake
from cake import lm

TILE = 128


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(TILES, 64), dtype=lm.bf16, stages=2, swizzle=128)  # error[CAKE-L003]: did you mean `TILE`?
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sX = pool.view(shape=(128, 64), dtype=lm.bfloat16)  # error[CAKE-L003]: `lm.bfloat16` does not exist
    load = lm.role(warpgroup=0)
    pipe = lm.pipline(stages=2)  # error[CAKE-L003]: did you mean `lm.pipeline`?
    full = lm.barrier(lm.pipeline(stages=2), producers=[load], consumers=[load])
    for tm, tk in lm.tiles(lm.cdiv(M, 128), lm.cdiv(K, 64)):
        with load:
            sC.tma_load(A, coords=(tm * 128, tk * 64), barrier=full)  # error[CAKE-L003]: did you mean `sA`?
            sB.tma_laod(A, coords=(tm * 128, tk * 64), barrier=full)  # error[CAKE-L003]: did you mean `tma_load`?
            x = cake.compile  # error[CAKE-L003]: `cake.compile` does not exist
            y = load.indx  # error[CAKE-L003]: a role has no attribute `indx`
            count += 1  # error[CAKE-L003]: `count` is not defined
            z = undefined_thing + Q  # error[CAKE-L003]: `undefined_thing` error[CAKE-L003]: `Q` is not defined
            fulll = lm.barrier(pipe, producers=[load], consumers=[load])
