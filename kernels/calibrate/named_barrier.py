"""Calibration probe: named-barrier latency. Two warpgroups of one role sync on a named barrier
(`bar.sync`, docs/language.md §7.8) REPS (the length of `R`) times in a row and then store a
token value; nothing else runs in the loop, so with REPS large the time per round is one
`bar.sync` of 256 threads (named_barrier_us). `python -m cake.calibrate` runs one CTA, so no
other CTA shares the SM."""
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def named_barrier(R: lm.tensor[lm.i32, "REPS"],
                  C: lm.tensor[lm.f32, "M"]):
    del R, C  # a calibration kernel: nothing to read or write
    math = lm.role(warpgroups=[0, 1])
    sync = lm.named_barrier(roles=[math])
    for (tm,) in lm.tiles(lm.cdiv(M, 256)):
        with math:
            for r in lm.range(REPS):
                lm.sync(sync)
