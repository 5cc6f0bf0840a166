"""Calibration probes: global atomic adds and the launcher's zero fill. Each CTA takes ROWS rows
of X (bf16, read as f32, one row per warp at a time) and adds each into row IDS[n] of SUMS with
`lm.scatter_add`: one `red.global.add.v4.f32` per 16 bytes of a row. The probe draws IDS
uniformly from [0, K), so N ÷ K adds meet on each destination. K = N / 1024 keeps the sums in L2
with little contention (the L2's rate, red_gops); K = N spreads them over 512 MiB (the DRAM's,
red_dram_gops); K = 1 sends every row to one row of 32 destinations, whose adds are serialized
(red_contended_gops), and K = 64 to 2048 destinations (how the rate grows with them,
red_contention_exponent).

As written, the kernel leaves SUMS as it was (the probe does not read it). With ZERO = 1, SUMS is
in `zero=`, so the launcher fills it with zeros first: at a few rows and a large K its time is the
fill (memset_gbps). With CLUSTER = 2 it is launched in clusters of two CTAs: at 32 rows (one
cluster) its span less the one-CTA span at 16 rows is what a cluster launch adds
(cluster_start_us)."""
import cake
from cake import lm

D = 128
ROWS = 16
ZERO = 0         # 1: the launcher zeroes SUMS first
CLUSTER = 1      # CTAs per cluster


@cake.schedule(targets=["sm_90a"], cluster=(CLUSTER, 1, 1), zero=["SUMS"] if ZERO == 1 else [])
def atomic(X: lm.tensor[lm.bf16, "N", D],
           IDS: lm.tensor[lm.i32, "N"],
           SUMS: lm.tensor[lm.f32, "K", D]):
    rows = lm.role(warpgroup=0)
    x = rows.fragment(shape=(ROWS, D), dtype=lm.f32, rows="warp")
    for (t,) in lm.tiles(lm.cdiv(N, ROWS)):
        with rows:
            x[:] = lm.cast(lm.load(X, coords=(t * ROWS, 0), shape=(ROWS, D)), lm.f32)
            ids = lm.load(IDS, coords=(t * ROWS,), shape=(ROWS,), fill=-1)
            lm.scatter_add(SUMS, x, index=ids, coords=(0, 0))
