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
import json
import os
import shutil
import sys

import probe_tables

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
    """One folder per hand kernel beside the shared cubin (bench/ldg_probe.sh compiled it into
    DIR/hand) with its launch.json; each probe's name -> that launch.json."""
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
    return {p["name"]: launches[p["hand"]] for p in table() if "hand" in p}


if __name__ == "__main__":
    sys.exit(probe_tables.cli(table(), write_hand))
