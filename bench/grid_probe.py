#!/usr/bin/env python3
"""Does the grid set the weight's streaming rate? (issue #19) A bare evict-first TMA stream
(bench/probes/stream_grid.py) at the tinygemm's five weights on the swapped schedule's grid (one
long CTA per 64-row tile) and on grids of short CTAs (each tile's K cut into SPLIT runs, PER_SM
CTAs per SM), against the GEMV at M = 1 (examples/gemv_sm90.py: plain loads, short CTAs) and the
swapped tinygemm at M = 8, timed by CUPTI with L2 flushed, like `cake family measure`.

    python3 bench/grid_probe.py build --cake target/release/cake --dir DIR   # build machine
    python3 bench/grid_probe.py run --dir DIR --out OUT.json                  # GPU host
"""
import sys

import probe_tables

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


if __name__ == "__main__":
    sys.exit(probe_tables.cli(table()))
