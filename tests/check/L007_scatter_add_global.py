# lm.scatter_add (global atomic adds of a row-layout tile's rows by index) and what it checks:
# f32 sums, a 2-D value, one i32 index per row, counts one axis fewer than the sums.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], zero=["S", "C"])
def scatter(X: lm.tensor[lm.bf16, "B", "N", 128], I: lm.tensor[lm.i32, "B", "N"],
            S: lm.tensor[lm.f32, "B", "K", 128], C: lm.tensor[lm.i32, "B", "K"],
            H: lm.tensor[lm.bf16, "B", "K", 128], F: lm.tensor[lm.f32, "B", "K"]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 128), dtype=lm.f32, rows="warp")
    for b, t in lm.tiles(B, lm.cdiv(N, 4)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(b, t * 4, 0), shape=(4, 128)), lm.f32)
            ids = lm.load(I, coords=(b, t * 4), shape=(4,), fill=-1)
            lm.scatter_add(S, x, index=ids, coords=(b, 0, 0), counts=C)
            lm.scatter_add(H, x, index=ids, coords=(b, 0, 0))  # error[CAKE-L008]: scatter_add accumulates in f32; `H` holds bf16
            lm.scatter_add(S, lm.cast(x, lm.bf16), index=ids, coords=(b, 0, 0))  # error[CAKE-L008]: `S` holds f32, but the value is bf16
            lm.scatter_add(S, lm.sum(x, axis=1), index=ids, coords=(b, 0, 0))  # error[CAKE-L007]: the rows of a 2-D value
            lm.scatter_add(S, x, index=x, coords=(b, 0, 0))  # error[CAKE-L007]: one i32 per row of the value
            lm.scatter_add(S, x, index=ids, coords=(b, 0, 0), counts=F)  # error[CAKE-L007]: `counts` holds one i32 per row
            lm.scatter_add(S, x, index=3, coords=(b, 0, 0))  # error[CAKE-L004]: the index is a register value
    del H, F
