#!/usr/bin/env python3
"""Does the grid set the weight's streaming rate? (issue #19) A bare evict-first TMA stream
(bench/probes/stream_grid.py) at the tinygemm's five weights on the swapped schedule's grid (one
long CTA per 64-row tile) and on grids of short CTAs (each tile's K cut into SPLIT runs, PER_SM
CTAs per SM), against the GEMV at M = 1 (examples/gemv_sm90.py: plain loads, short CTAs) and the
swapped tinygemm at M = 8, timed by CUPTI with L2 flushed, like `cake family measure`.

    python3 bench/grid_probe.py build --cake target/release/cake --dir DIR   # build machine
    python3 bench/grid_probe.py run --dir DIR --out OUT.json                  # GPU host
"""
import argparse
import json
import os
import sys

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (7168, 2048), (2048, 7168)]
# name: (BK, STAGES, SPLIT, PER_SM, ORDER)
GRIDS = {
    "long": (256, 4, 1, 1, 0),
    "long-p2": (256, 2, 1, 2, 0),
    "s2": (256, 4, 2, 1, 0),
    "s4": (256, 4, 4, 1, 0),
    "s4-p2": (256, 2, 4, 2, 0),
    "s4-p2-o1": (256, 2, 4, 2, 1),
    "s4-p3": (256, 2, 4, 3, 0),
    "s8-p3": (256, 2, 8, 3, 0),
    "s8-p3-o1": (256, 2, 8, 3, 1),
    "bk128-s8-p4": (128, 3, 8, 4, 0),
}


def table():
    out = []
    for n, k in WEIGHTS:
        for g, (bk, st, sp, per, order) in GRIDS.items():
            out.append(dict(name=f"w{n}x{k}-{g}", dir="bench/probes", schedule="stream_grid", kernel="stream",
                            consts=dict(BK=bk, STAGES=st, SPLIT=sp, PER_SM=per, ORDER=order),
                            dims=dict(M=n, K=k), work=dict(bytes=n * k * 2), span=True))
        if k <= 7168:
            out.append(dict(name=f"w{n}x{k}-gemv-m1", dir="examples", schedule="gemv_sm90", kernel="gemv",
                            consts=dict(K=k, MT=1), dims=dict(M=1, N=n), work=dict(bytes=n * k * 2), span=True))
        out.append(dict(name=f"w{n}x{k}-swapped-m8", dir="examples", schedule="tinygemm_sm90", kernel="tinygemm",
                        consts=dict(M=8, NW=n, TIGHT=1, BK=256), dims=dict(N=n, K=k),
                        work=dict(bytes=n * k * 2), span=True))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["build", "run"])
    ap.add_argument("--cake")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out")
    ap.add_argument("--samples", type=int, default=30)
    a = ap.parse_args()
    from cake.calibrate import build_probes, run_probe
    probes = table()
    if a.mode == "build":
        launches = {}
        for d in sorted({p["dir"] for p in probes}):
            launches.update({k: os.path.relpath(v, a.dir) for k, v in
                             build_probes([p for p in probes if p["dir"] == d], d, "sm_90a", a.cake, a.dir).items()})
        with open(os.path.join(a.dir, "launches.json"), "w", encoding="utf-8") as fh:
            json.dump(launches, fh, indent=1)
        missing = [p["name"] for p in probes if p["name"] not in launches]
        print(f"built {len(launches)} of {len(probes)} probes" + (f"; failed: {missing}" if missing else ""))
        return 1 if missing else 0
    with open(os.path.join(a.dir, "launches.json"), encoding="utf-8") as fh:
        launches = {k: os.path.join(a.dir, v) for k, v in json.load(fh).items()}
    out = {}
    for p in probes:
        try:
            r = run_probe(p, p["dir"], "sm_90a", a.samples, launches[p["name"]])
        except Exception as e:  # one failing probe must not lose the others
            r = dict(error=str(e)[-500:])
        out[p["name"]] = r
        span = r.get("span_median_ms")
        print(f"{p['name']:<30} " + (f"{span * 1e3:7.2f} us  {p['work']['bytes'] / span / 1e9:6.2f} TB/s"
                                     if span else "FAILED " + r.get("error", "")[-200:]), flush=True)
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
