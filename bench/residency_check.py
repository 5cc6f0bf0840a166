"""GPU check of `Kernel.residency` (bench/results/2026-12-07-clusters/): the tinygemm at
2048 x 7168, M = 8, BK = 128, split two and four ways (clusters of 2 and 4) and unsplit, built
with cake.compile from examples/tinygemm_sm90.py; for each, the driver's residency, the waves
of its grid, the cost model's waves, correctness against torch and a CUPTI-free events median
(L2 flushed by a write before each sample; a check of the waves, not a performance claim).

    python3 bench/residency_check.py --out FILE.json
"""
import argparse
import json
import re
import subprocess

import torch

import cake

SRC = open("examples/tinygemm_sm90.py").read()
M, N, K = 8, 2048, 7168


def variant(**consts):
    text = SRC
    for name, value in consts.items():
        text, n = re.subn(rf"^{name} = [^\n#]*", f"{name} = {value} ", text, count=1, flags=re.M)
        assert n == 1, name
    return text


def model_waves(text):
    with open("/tmp/residency_variant.py", "w") as fh:
        fh.write(text)
    r = subprocess.run(["dist/cake", "cost", "/tmp/residency_variant.py", "--target", "sm_90a",
                        "--shape", f"N={N},K={K}"], capture_output=True, text=True)
    m = re.search(r"([0-9.]+) waves", r.stdout)
    return (float(m.group(1)) if m else None), r.stdout.splitlines()[:1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(0)
    A = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    B = torch.randn(N, K, device="cuda", dtype=torch.bfloat16)
    ref = (A.float() @ B.float().T)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for label, consts in [("unsplit", dict(SPLIT_UPTO=1024)), ("split2", dict(SPLIT_WAYS=2)),
                          ("split4", dict(SPLIT_WAYS=4))]:
        text = variant(M=M, NW=N, BK=128, TIGHT=1, **consts)
        k = cake.compile(source=text, path="examples/tinygemm_sm90.py").tinygemm
        C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        k(A, B, C)
        torch.cuda.synchronize()
        err = ((C.float() - ref).abs() / (ref.abs() + 1.0)).max().item()
        times = []
        for _ in range(30):
            flush.fill_(1)
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            k(A, B, C)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e3)
        times.sort()
        res = k.residency()
        mw, head = model_waves(text)
        row = dict(route=label, grid=list(k.last_grid), residency=res, waves=k.waves(k.last_grid),
                   model_waves=mw, model=head, max_rel_err=err, events_us_median=times[len(times) // 2])
        rows.append(row)
        print(f"{label:8} grid {row['grid'][0]:4} CTAs · cluster {res['cluster']} · at once "
              f"{res['clusters_at_once']} clusters / {res['resident_ctas']} CTAs · waves {row['waves']:.2f} "
              f"(model {mw}) · err {err:.3g} · events {row['events_us_median']:.1f} us")
    json.dump(dict(gpu=torch.cuda.get_device_name(), rows=rows), open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
