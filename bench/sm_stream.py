#!/usr/bin/env python3
"""What one SM's TMA copies draw from DRAM as the grid keeps more SMs busy (issue #23, the cost
model's `sm_dram_gbps`): `kernels/calibrate/stream.py` (persistent, one CTA per SM) at box rows
BM with 128 KiB of stages, from DRAM, on n CTAs, each streaming 65536 columns of its own rows.
Timed like `cake calibrate`'s probes (CUDA events, L2 flushed, median of 30). Prints one line
per point and writes JSON to the path given.

    python3 bench/sm_stream.py OUT.json        (on the GPU host, with the cake wheel installed)
"""
import json
import sys

from cake import calibrate

K = 65536
points = []
for bm, stages in ((64, 16), (128, 8)):
    for n in (4, 8, 16, 33, 66, 99, 132):
        p = dict(name=f"sm_stream_bm{bm}_n{n}", schedule="stream", kernel="stream",
                 consts=dict(BM=bm, STAGES=stages), dims=dict(M=bm * n, K=K),
                 work=dict(bytes=bm * n * K * 2, ctas=n))
        r = calibrate.run_probe(p, "kernels/calibrate", "sm_90a", calibrate.SAMPLES)
        total = r["bytes"] / (r["median_ms"] * 1e-3) / 1e9
        points.append(dict(bm=bm, stages=stages, ctas=n, median_ms=r["median_ms"],
                           gbps=round(total, 1), gbps_per_sm=round(total / n, 2)))
        print(f"BM={bm:<4} stages={stages:<3} CTAs={n:<4} {r['median_ms']:.4f} ms  "
              f"{total:8.1f} GB/s  {total / n:6.1f} GB/s per SM", flush=True)
json.dump(dict(K=K, points=points), open(sys.argv[1], "w"), indent=1)
