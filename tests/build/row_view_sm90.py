"""Row-layout reads of shared views (docs/language.md §9.8a), for the build test: a producer warp
copies each tile's rows of X and the weight W into a ring with cp_async; the consumer warpgroup
reads the rows as its row-layout tile (`sX.load()`) and the weight as a per-column vector
(`sW.load()[None, :]`), 16 bytes at a time from shared memory, next to a vector from global
memory (`lm.load(B)`), and a per-row scale as a per-row vector (`sS.load()[:, None]`)."""
import cake
from cake import lm

H = 2048
ROWS = 2
STAGES = 4


@cake.schedule(targets=["sm_90a"], persistent=True)
def row_view(X: lm.tensor[lm.bf16, "R", H], W: lm.tensor[lm.bf16, H], B: lm.tensor[lm.bf16, H],
             S: lm.tensor[lm.f32, "R"], Y: lm.tensor[lm.bf16, "R", H], eps: lm.f32):
    pool = lm.smem()
    sX = pool.view(shape=(ROWS, H), dtype=lm.bf16, stages=STAGES)
    sW = pool.view(shape=(H,), dtype=lm.bf16, stages=STAGES)
    sS = pool.view(shape=(ROWS,), dtype=lm.f32, stages=STAGES)
    load = lm.role(warp=0)
    rows = lm.role(warpgroup=1)
    pipe = lm.pipeline(stages=STAGES)
    full = lm.barrier(pipe, producers=[load], consumers=[rows])
    empty = lm.barrier(pipe, producers=[rows], consumers=[load])
    x = rows.fragment(shape=(ROWS, H), dtype=lm.f32, rows="warpgroup")
    for t in lm.tiles(lm.cdiv(R, ROWS)):
        with load:
            for _ in lm.range(1, pipeline=pipe):
                lm.wait(empty)
                sX.cp_async(X, coords=(t * ROWS, 0), barrier=full)
                sW.cp_async(W, coords=(0,), barrier=full)
                sS.cp_async(S, coords=(t * ROWS,), barrier=full)
        with rows:
            for _ in lm.range(1, pipeline=pipe):
                lm.wait(full)
                x[:] = lm.cast(sX.load(), lm.f32)
                rstd = lm.rsqrt(lm.sum(x * x, axis=1) * (1.0 / H) + eps)
                w = lm.cast(sW.load(), lm.f32)
                b = lm.cast(lm.load(B, coords=(0,), shape=(H,)), lm.f32)
                x[:] = x * (rstd * sS.load())[:, None] * w[None, :] + b[None, :]
                lm.arrive(empty)
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t * ROWS, 0))
