# Fragments assigned together lower as row-layout tiles, or per-row values, of one shape and
# holder: one loop nest. Anything else is reported at the statement.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def pairs(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024], S: lm.tensor[lm.f32, "R"]):
    rows = lm.role(warpgroup=0)
    p = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    q = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warp")
    h = rows.fragment(shape=(4, 1024), dtype=lm.f32, rows="warpgroup")
    s = rows.fragment(shape=(4,), dtype=lm.f32, rows="warp")
    u = rows.fragment(shape=(4,), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            x = lm.cast(lm.load(X, coords=(t * 4, 0), shape=(4, 1024)), lm.f32)
            p[:], q[:] = x, x * x
            s[:], u[:] = lm.sum(p, axis=1), lm.max(q, axis=1)
            p[:], h[:] = x, x  # note[CAKE-V001]: one shape and row holder
            s[:], q[:] = lm.sum(p, axis=1), x  # note[CAKE-V001]: `q` differs from `s`
            lm.store(Y, lm.cast(p + q * s[:, None], lm.bf16), coords=(t * 4, 0))
            lm.store(S, u, coords=(t * 4,))
            lm.store(Y, lm.cast(h, lm.bf16), coords=(t * 4, 0))


@cake.schedule(targets=["sm_90a"])
def accumulators(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"],
                 C: lm.tensor[lm.bf16, "M", "N"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    sB = pool.view(shape=(64, 64), dtype=lm.bf16, swizzle=128)
    math = lm.role(warpgroup=0)
    full = lm.barrier(producers=[math], consumers=[math])
    acc = math.fragment(shape=(64, 64), dtype=lm.f32)
    two = math.fragment(shape=(64, 64), dtype=lm.f32)
    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 64)):
        with math:
            sA.tma_load(A, coords=(tm * 64, 0), barrier=full)
            sB.tma_load(B, coords=(tn * 64, 0), barrier=full)
            lm.wait(full)
            lm.mma(acc, sA, sB.T, accumulate=False)
            lm.mma(two, sA, sB.T, accumulate=False)
            acc[:], two[:] = acc * 2.0, acc  # note[CAKE-V001]: `acc` is neither
            lm.store(C, lm.cast(acc + two, lm.bf16), coords=(tm * 64, tn * 64))
