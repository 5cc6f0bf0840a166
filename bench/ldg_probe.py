#!/usr/bin/env python3
"""Does the load-unit path stream a weight faster than TMA? (issue #19) The hand probes of
bench/probes/ldg_stream.cu (evict-first ld.global into registers: on the GEMV's grid, on the
swapped schedule's grid of one long CTA per 64-row tile, and that grid through a shared-memory
ring) beside the bare evict-first TMA stream on the swapped grid (bench/probes/stream_grid.py,
the `long` grid of bench/grid_probe.py) and the GEMV at M = 1, at the tinygemm's five weights;
CUPTI spans with L2 flushed, like `cake family measure`.

    bench/ldg_probe.sh DIR CAKE_BINARY                         # build machine (calls `build`)
    python3 bench/ldg_probe.py run --dir DIR --out OUT.json   # GPU host
"""
import argparse
import json
import os
import shutil
import sys

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336), (7168, 2048), (2048, 7168)]
# hand kernel: (block, dynamic shared memory, rows per CTA)
HAND = {
    "ldg_rows1": (128, 0, 1), "ldg_rows2": (128, 0, 2), "ldg_rows4": (128, 0, 4),
    "ldg_tile1": (256, 0, 64), "ldg_tile2": (256, 0, 64), "ldg_tile4": (256, 0, 64),
    "ldg_sts_tile2": (288, 4 * 32768, 64), "ldg_sts_tile4": (288, 4 * 32768, 64),
}


def table():
    out = []
    for n, k in WEIGHTS:
        work = dict(bytes=n * k * 2)
        out.append(dict(name=f"w{n}x{k}-tma-long", dir="bench/probes", schedule="stream_grid", kernel="stream",
                        consts=dict(BK=256, STAGES=4, SPLIT=1, PER_SM=1, ORDER=0), dims=dict(M=n, K=k),
                        work=work, span=True))
        if k <= 7168:
            out.append(dict(name=f"w{n}x{k}-gemv-m1", dir="examples", schedule="gemv_sm90", kernel="gemv",
                            consts=dict(K=k, MT=1), dims=dict(M=1, N=n), work=work, span=True))
        for h in HAND:
            out.append(dict(name=f"w{n}x{k}-{h}", hand=h, schedule="ldg_stream", kernel=h, consts={},
                            dims=dict(N=n, K=k), work=work, span=True))
    return out


def write_hand(d: str) -> dict:
    """One folder per hand kernel: the shared cubin and its launch.json."""
    launches = {}
    for sym, (block, smem, rows) in HAND.items():
        kd = os.path.join(d, "hand", sym)
        os.makedirs(kd, exist_ok=True)
        shutil.copy(os.path.join(d, "hand", "ldg_stream.cubin"), os.path.join(kd, "k.cubin"))
        meta = {
            "schema": "cake.launch/v0", "kernel": sym, "symbol": sym, "target": "sm_90a",
            "cubin": "k.cubin", "block": [block, 1, 1], "cluster": [1, 1, 1], "dynamic_smem": smem,
            "grid": {"kind": "tiles", "tiles": [["cdiv", "N", rows]]},
            "tensors": [{"name": "B", "dtype": "bf16", "dims": ["N", "K"], "access": "read"},
                        {"name": "OUT", "dtype": "f32", "dims": ["N"], "access": "write"}],
            "scalars": [],
            "args": [{"kind": "ptr", "tensor": "B"}, {"kind": "ptr", "tensor": "OUT"},
                     {"kind": "dim", "name": "N"}, {"kind": "dim", "name": "K"}],
        }
        with open(os.path.join(kd, "k.launch.json"), "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=1)
        launches[sym] = os.path.join(kd, "k.launch.json")
    return launches


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
        built = [p for p in probes if "hand" not in p]
        launches = {}
        for d in sorted({p["dir"] for p in built}):
            launches.update({k: os.path.relpath(v, a.dir) for k, v in
                             build_probes([p for p in built if p["dir"] == d], d, "sm_90a", a.cake, a.dir).items()})
        hand = write_hand(a.dir)
        for p in probes:
            if "hand" in p:
                launches[p["name"]] = os.path.relpath(hand[p["hand"]], a.dir)
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
            r = run_probe(p, p.get("dir", ""), "sm_90a", a.samples, launches[p["name"]])
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
