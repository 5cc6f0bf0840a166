# @cake.schedule(zero=[...]) names the tensors the launcher zeroes before the kernel: each a
# tensor parameter of the schedule, once.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], zero=["SUM", "S", "S", "n", 3])  # error[CAKE-L003]: which is not a parameter of the schedule error[CAKE-L010]: named twice error[CAKE-L004]: `n` is a scalar error[CAKE-L004]: found an integer
def zeroes(X: lm.tensor[lm.f32, "N", 128], S: lm.tensor[lm.f32, "N", 128], n: lm.i32):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(4, 128), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(N, 4)):
        with rows:
            x[:] = lm.load(X, coords=(t * 4, 0), shape=(4, 128))
            lm.store(S, x, coords=(t * 4, 0))
