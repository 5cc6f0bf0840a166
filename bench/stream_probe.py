"""The TMA streaming probe (kernels/calibrate/stream.py) at the tinygemm's weights: a producer
warp streams 64-row boxes of a weight of N rows x K through a ring, a consumer only releases each
stage after a token MMA, one CTA per SM walking the 64-row tiles. What the swapped tinygemm
schedule would take if its MMAs, its token loads and its epilogue cost nothing: the weight's
streaming ceiling at that shape, timed by CUPTI like `cake family measure`.

    python3 bench/stream_probe.py --cake dist/cake --out OUT.json     # on the GPU host
"""
import argparse
import json
import sys
import tempfile

import probe_tables
from cake.calibrate import build_probes

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (7168, 2048), (2048, 7168)]
# (BK, stages, evict-first): the BK = 64 ring and the wider one, A's lines loaded plainly or
# evict-first (as the tinygemm loads its weight).
RINGS = [(64, 16, 0), (256, 4, 0), (64, 16, 1), (256, 4, 1)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cake", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--samples", type=int, default=30)
    a = ap.parse_args()
    table = [dict(name=f"w{n}x{k}_bk{bk}_s{st}" + ("_ef" if ef else ""), dir="kernels/calibrate", schedule="stream",
                  kernel="stream", consts=dict(BM=64, BK=bk, STAGES=st, EVICT_FIRST=ef),
                  dims=dict(M=n, K=k), work=dict(bytes=n * k * 2), span=True)
             for n, k in WEIGHTS for bk, st, ef in RINGS]
    launches = build_probes(table, "kernels/calibrate", "sm_90a", a.cake,
                            tempfile.mkdtemp(prefix="stream-probe-"))
    out = probe_tables.time_all(table, launches, a.samples)
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
