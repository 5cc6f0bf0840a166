"""Time the row-kernel variants built by bench/rows_variants.sh (issue #20's tuning) on the GPU:
each variant checked against the f32 oracle of kernels/rows/contract.py on normal inputs, then
timed with the torch op and a copy of the same rows interleaved in the same loop (CUDA events,
L2 flushed before each call, median of 50 after 10 warm-up calls). Writes
$OUT/rows_variants.json and prints a table, best variant per (family, shape) marked."""
import json, os, sys, statistics, glob, collections
import torch
sys.path.insert(0, "kernels/rows")
import contract as C
import cake
from cake.harness import timing

FAMILIES = {
    "rmsnorm": ("make_rmsnorm_inputs", "rmsnorm_oracle", C.torch_rms_norm, ["Y"], {"eps": 1e-6}, 4),
    "layernorm": ("make_layernorm_inputs", "layernorm_oracle", C.torch_layer_norm, ["Y"], {"eps": 1e-5}, 4),
    "softmax": ("make_softmax_inputs", "softmax_oracle", C.torch_softmax, ["Y"], {}, 4),
    "add_rmsnorm": ("make_add_rmsnorm_inputs", "add_rmsnorm_oracle", C.torch_add_rms_norm, ["Hs", "Y"], {"eps": 1e-6}, 8),
    "quant_fp8": ("make_quant_inputs", "quant_oracle", C.torch_quant_fp8, ["Q", "S"], {}, 3),
}
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


def outputs(fam, R, H):
    if fam == "quant_fp8":
        return {"Q": torch.empty(R, H, dtype=torch.float8_e4m3fn, device=dev),
                "S": torch.empty(R, dtype=torch.float32, device=dev)}
    return {n: torch.empty(R, H, dtype=torch.bfloat16, device=dev) for n in FAMILIES[fam][3]}


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
                out = outputs(fam, R, H)
                call = (lambda k, out: lambda: k(**ins, **out, **scalars))(k, out)
                call(); torch.cuda.synchronize()
                ok = True
                for n, t in ref.items():
                    got = out[n].float()
                    # The contracts' tolerances (kernels/rows/*.contract.toml).
                    tol = dict(rtol=0.125, atol=0.002) if n == "Q" else dict(rtol=1e-6, atol=0.0) if n == "S" else dict(rtol=1e-2, atol=1e-3)
                    if not torch.allclose(got, t.float(), **tol):
                        ok = False
                        rec[f"maxerr_{n}"] = float((got - t.float()).abs().max())
                rec["correct"] = ok
                calls.append(call); recs.append(rec)
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
                rows.append(rec)
        bo = outputs(fam, R, H)
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
