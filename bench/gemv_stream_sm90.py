"""Experiment (issue #19): the GEMV of examples/gemv_sm90.py with a loop over K in KC-column steps,
so a CTA holds a ROWS × KC slice of partial products instead of whole rows; built per K, ROWS
and KC by sed for bench/gemv_hand.py (bench/results/2026-12-02-gemv-floor/4-stream/)."""
import cake
from cake import lm

K = 14336
MT = 1
ROWS = 2
KC = 2048                      # columns per step of the K loop

@cake.schedule(targets=["sm_90a"])
def gemv(A: lm.tensor[lm.bf16, "M", K], B: lm.tensor[lm.bf16, "N", K],
         C: lm.tensor[lm.bf16, "M", "N"]):
    rows = lm.role(warpgroup=0)
    p = rows.fragment(shape=(ROWS, KC), dtype=lm.f32, rows="warpgroup")
    for t in lm.tiles(lm.cdiv(N, ROWS)):
        with rows:
            p[:] = 0.0
            for kc in lm.range(lm.cdiv(K, KC)):
                p[:] = p + (lm.cast(lm.load(B, coords=(t * ROWS, kc * KC), shape=(ROWS, KC)), lm.f32)
                            * lm.cast(lm.load(A, coords=(0, kc * KC), shape=(KC,)), lm.f32)[None, :])
            lm.store(C, lm.cast(lm.sum(p, axis=1), lm.bf16), coords=(0, t * ROWS))
