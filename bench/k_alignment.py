"""Where a GEMM's K is an odd multiple of 8 (rows of A and B start 16 bytes into a 32-byte sector)
against a multiple of 16, from committed measurements; no GPU (bench/results/2026-12-03-gemm-align/).

    python3 bench/k_alignment.py measured MEASUREMENT.json...
        geomean speedup over the baseline by route and K % 16 (GEMM: tinygemm routes pooled as
        `tiny`, shapes with M > 128 for the others), or by route, D and K < 64 (k-means assign)
    python3 bench/k_alignment.py model CAKE FAMILY MEASUREMENT.json...
        the cost model's predicted/measured by route group and alignment, with the committed
        table and with `tma_misaligned_rows_per_us` switched off (a rate no kernel reaches)
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def measured(paths):
    by = defaultdict(list)
    for p in paths:
        d = json.load(open(p))
        for s in d["shapes"]:
            sh = s["shape"]
            for route, t in s["timed"].items():
                x = t.get("speedup")
                if x is None or route == "fallback" or not t.get("correct", True):
                    continue
                if d["family"] == "gemm":
                    group = "tiny" if route.startswith("tiny") else route
                    if group != "tiny" and sh["M"] <= 128:
                        continue
                    split = "K%16==0" if sh["K"] % 16 == 0 else "K%16==8"
                else:
                    # k-means: K counts centroids; a 64-wide centroid tile is mostly padding
                    # below 64 of them.
                    group = f"{route} D={sh.get('D')}"
                    split = "K<64" if sh["K"] < 64 else "K>=64"
                by[(group, split)].append(x)
    for (group, split), v in sorted(by.items()):
        below = sum(x < 0.95 for x in v)
        print(f"{group:<22} {split:<8} n={len(v):4d}  geomean {geomean(v):.3f}  below 0.95x {below}")


def model(cake, family, paths):
    table = open(os.path.join(ROOT, "crates/cake-cost/calibration/sm_90a.toml")).read()
    off = re.sub(r"(tma_misaligned_rows_per_us = \{ value = )[0-9.e+]+", r"\g<1>1e9", table)
    for label, text in (("without the term", off), ("committed table", table)):
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
            f.write(text)
        out = subprocess.run([cake, "family", "accuracy", family, *paths, "--format", "json",
                              "--calibration", f.name], capture_output=True, text=True, check=True)
        os.unlink(f.name)
        d = json.loads(out.stdout)
        by = defaultdict(list)
        for p in d["points"]:
            group = next((g for g in ("tiles", "cluster", "tiny") if p["route"].startswith(g)),
                         p["route"])
            by[(group, p["shape"]["K"] % 16 == 0)].append(p["predicted_us"] / p["measured_us"])
        o = d["overall"]
        cells = [f"{g}{'' if a else ' misaligned'} {geomean(v):.2f}" for (g, a), v in sorted(by.items())]
        print(f"{label}: {o['points']} points, rho {o['spearman']:.3f}, median "
              f"{100 * o['median_error']:.1f} %, predicted/measured {o['bias']:.3f} | "
              + " | ".join(cells))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "measured":
        measured(sys.argv[2:])
    elif len(sys.argv) > 4 and sys.argv[1] == "model":
        model(sys.argv[2], sys.argv[3], sys.argv[4:])
    else:
        sys.exit(__doc__)
