# CAKE-M009: four warp replicas run one store on the same rows (no `rows.index` in its
# coordinates): each repeats the others' work, and the values would race if they differed.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy_rows(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warps=[0, 1, 2, 3])
    x = rows.fragment(shape=(1, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(R):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t, 0), shape=(1, 1024)), lm.f32)
            lm.store(Y, lm.cast(x, lm.bf16), coords=(t, 0))  # error[CAKE-M009]


@cake.schedule(targets=["sm_90a"])
def copy_rows_split(X: lm.tensor[lm.bf16, "R", 1024], Y: lm.tensor[lm.bf16, "R", 1024]):
    rows = lm.role(warps=[0, 1, 2, 3])
    x = rows.fragment(shape=(1, 1024), dtype=lm.f32, rows="warp")
    for t in lm.tiles(lm.cdiv(R, 4)):
        with rows:
            r = t * 4 + rows.index
            x[:] = lm.cast(lm.load(X, coords=(r, 0), shape=(1, 1024)), lm.f32)
            lm.store(Y, lm.cast(x, lm.bf16), coords=(r, 0))
