"""Time the row-kernel variants built by bench/rows_variants.sh (issue #20's tuning) on the GPU:
each variant checked against the f32 oracle of kernels/rows/contract.py on normal inputs, then
timed with the torch op and a copy of the same rows interleaved in the same loop (CUDA events,
L2 flushed before each call, median of 50 after 10 warm-up calls). Writes
$OUT/rows_variants.json and prints a table, best variant per (family, shape) marked."""
import json, os, sys, statistics, glob, collections
import torch
sys.path.insert(0, "bench")
from rows_common import C, FAMILIES, mismatches, outputs
import cake
from cake.harness import timing

ROWS_FOR_H = {1024: [65536], 2048: [65536, 1], 4096: [32768, 1, 4096], 8192: [16384], 16384: [8192, 1]}
VARIANTS = os.environ.get("VARIANTS", ".carry/variants")
OUT = os.environ.get("OUT", "out")
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)

by = collections.defaultdict(list)
for d in sorted(glob.glob(f"{VARIANTS}/*__*__*")):
    if os.path.isdir(d):
        fam, H, name = os.path.basename(d).split("__")
        by[(fam, int(H))].append((name, d))


rows = []
for (fam, H), variants in sorted(by.items()):
    gen, orc, base, outs, scalars, per_elem = FAMILIES[fam]
    for R in ROWS_FOR_H[H]:
        g = torch.Generator(device=dev); g.manual_seed(R * 7 + H)
        ins = getattr(C, gen)({"R": R, "H": H}, "normal", g)
        ref = getattr(C, orc)(**ins, **scalars)
        calls, names, recs = [], [], []
        for name, d in variants:
            rec = {"family": fam, "R": R, "H": H, "variant": name}
            try:
                k = cake.load_kernel(glob.glob(f"{d}/*.launch.json")[0])
                out = outputs(fam, R, H, dev)
                call = (lambda k, out: lambda: k(**ins, **out, **scalars))(k, out)
                call(); torch.cuda.synchronize()
                bad = mismatches(fam, out, ref)
                rec.update({f"maxerr_{n}": e for n, e in bad.items()})
                rec["correct"] = not bad
                calls.append(call); recs.append(rec)
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
                rows.append(rec)
        bo = outputs(fam, R, H, dev)
        x = ins["X"]; y = torch.empty_like(x)
        calls += [lambda: base(**ins, **bo, **scalars), lambda: y.copy_(x)]
        times = timing.time_events_interleaved(torch, calls, 10, 50, flush)
        meds = [statistics.median(t) * 1e3 for t in times]
        tb, tc = meds[-2], meds[-1]
        nbytes = per_elem * R * H
        for rec, tk in zip(recs, meds):
            rec.update(cake_us=tk, torch_us=tb, copy_us=tc, cake_tbs=nbytes / tk / 1e6,
                       copy_tbs=4 * R * H / tc / 1e6, vs_torch=tb / tk, of_copy=(nbytes / tk) / (4 * R * H / tc))
            rows.append(rec)
            print(json.dumps(rec), flush=True)
json.dump(rows, open(f"{OUT}/rows_variants.json", "w"), indent=1)
print(f"\n{'family':12} {'R':>6} {'H':>6} {'variant':6} ok  cake_us torch_us vs_torch TB/s  of_copy")
best = {}
for r in rows:
    if r.get("correct"):
        key = (r["family"], r["R"], r["H"])
        if key not in best or r["cake_us"] < best[key]["cake_us"]:
            best[key] = r
for r in rows:
    if "error" in r:
        print(f"{r['family']:12} {r['R']:6} {r['H']:6} {r['variant']:6} ERROR {r['error'][:70]}")
        continue
    mark = "*" if best.get((r["family"], r["R"], r["H"])) is r else " "
    print(f"{r['family']:12} {r['R']:6} {r['H']:6} {r['variant']:6} {'y' if r['correct'] else 'N'}{mark} {r['cake_us']:8.1f} {r['torch_us']:8.1f} {r['vs_torch']:6.2f}x {r['cake_tbs']:5.2f} {r['of_copy']:6.2f}")
