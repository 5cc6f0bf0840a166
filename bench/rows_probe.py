"""A quick read of the row kernels (issue #20) on the GPU, before the contract runner times
them: prebuilt specialisations (bench/rows_probe.sh builds them, one per family and H), checked
against the f32 oracles of kernels/rows/contract.py on normal inputs, then timed against the
torch op and a copy in the same run: CUDA events around each call, L2 flushed before each,
median of 50 after 10 warm-up calls. Writes $OUT/rows_probe.json; prints a table."""
import json, os, sys, statistics
import torch
sys.path.insert(0, "bench")
from rows_common import C, FAMILIES, mismatches, outputs
import cake
from cake.harness import timing

SHAPES = [(32768, 4096), (1, 4096), (65536, 1024), (8192, 16384), (4096, 5000), (256, 8192), (1000, 1032)]
OUT = os.environ.get("OUT", "out")
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)


def med(call):
    return statistics.median(timing.time_events(torch, call, 10, 50, flush)) * 1e3  # us


rows = []
for fam, (gen, orc, base, outs, scalars, per_elem) in FAMILIES.items():
    for R, H in SHAPES:
        path = f"{os.environ.get('PREBUILT', 'prebuilt')}/{fam}_{H}"
        rec = {"family": fam, "R": R, "H": H}
        try:
            k = cake.load_kernel(path)
            g = torch.Generator(device=dev); g.manual_seed(R * 7 + H)
            ins = getattr(C, gen)({"R": R, "H": H}, "normal", g)
            out = outputs(fam, R, H, dev)
            call = lambda: k(**ins, **out, **scalars)
            call(); torch.cuda.synchronize()
            ref = getattr(C, orc)(**ins, **scalars)
            bad = mismatches(fam, out, ref)
            rec.update({f"maxerr_{n}": e for n, e in bad.items()})
            rec["correct"] = not bad
            bytes_ = per_elem * R * H
            tk = med(call)
            tb = med(lambda: base(**ins, **out, **scalars))
            x = ins["X"]; y = torch.empty_like(x)
            tc = med(lambda: y.copy_(x))
            rec.update(cake_us=tk, torch_us=tb, copy_us=tc, bytes=bytes_,
                       cake_tbs=bytes_ / tk / 1e6, copy_tbs=4 * R * H / tc / 1e6,
                       vs_torch=tb / tk)
        except Exception as e:  # keep going: one bad specialisation must not hide the others
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
        rows.append(rec)
        print(json.dumps(rec), flush=True)
json.dump(rows, open(f"{OUT}/rows_probe.json", "w"), indent=1)
print(f"\n{'family':12} {'R':>6} {'H':>6} ok   cake_us torch_us  vs_torch cake_TB/s copy_TB/s")
for r in rows:
    if "error" in r:
        print(f"{r['family']:12} {r['R']:6} {r['H']:6} ERROR {r['error'][:80]}")
        continue
    print(f"{r['family']:12} {r['R']:6} {r['H']:6} {'y' if r['correct'] else 'N'} {r['cake_us']:9.1f} {r['torch_us']:8.1f} {r['vs_torch']:8.2f}x {r['cake_tbs']:8.2f} {r['copy_tbs']:8.2f}")
