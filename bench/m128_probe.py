#!/usr/bin/env python3
"""Where does the swapped tinygemm's time go as M grows to 128? (issue #19: at M = 128 it runs
at cuBLAS's speed, 1.0-1.1x, where at M <= 16 it runs 1.12-1.24x.) At three weights and
M = 16, 64 and 128, each with the BK and ring depth the family table gives that M, four kernels
on the same grid of one long CTA per 64-row tile (bench/probes/tokens_stream.py):

    w       the weight alone (bench/probes/stream_grid.py)
    wx      the weight and the tokens' K-slice into every stage, no MMA
    wxm     ... and the GEMM's MMAs (the accumulator's row sums stored, 256 B a CTA)
    gemm    examples/tinygemm_sm90.py itself (the MMAs and the transposed store)
    staged  ... with STAGED_STORE = 1 (stmatrix into shared memory, one TMA store)

CUPTI spans with L2 flushed, like `cake family measure`. These are timings of parts, not
kernels with results: none is checked against an oracle, and none is a route.

    python3 bench/m128_probe.py build --cake BIN --dir DIR     # build machine
    python3 bench/m128_probe.py run --dir DIR --out OUT.json   # GPU host
"""
import sys

import probe_tables

WEIGHTS = [(4096, 4096), (14336, 4096), (4096, 14336)]
# M: (BK, ring stages) as examples/tinygemm_sm90.py sets them for the family's routes.
RING = {16: (256, 4), 64: (128, 6), 128: (64, 8)}


def table():
    out = []
    for n, k in WEIGHTS:
        work = dict(bytes=n * k * 2)
        for m, (bk, stages) in RING.items():
            tag = f"w{n}x{k}-m{m}"
            out.append(dict(name=f"{tag}-w", dir="bench/probes", schedule="stream_grid", kernel="stream",
                            consts=dict(BK=bk, STAGES=stages, SPLIT=1, PER_SM=1, ORDER=0),
                            dims=dict(M=n, K=k), work=work, span=True))
            for part, (tokens, mma) in {"wx": (1, 0), "wxm": (1, 1)}.items():
                out.append(dict(name=f"{tag}-{part}", dir="bench/probes", schedule="tokens_stream",
                                kernel="tokens_stream",
                                consts=dict(M=m, BK=bk, STAGES=stages, TOKENS=tokens, MMA=mma),
                                dims=dict(N=n, K=k), work=work, span=True))
            for part, staged in {"gemm": 0, "staged": 1}.items():
                out.append(dict(name=f"{tag}-{part}", dir="examples", schedule="tinygemm_sm90", kernel="tinygemm",
                                consts=dict(M=m, NW=n, TIGHT=1, BK=bk, RING_STAGES=stages, STAGED_STORE=staged),
                                dims=dict(N=n, K=k), work=work, span=True))
    return out


if __name__ == "__main__":
    sys.exit(probe_tables.cli(table()))
