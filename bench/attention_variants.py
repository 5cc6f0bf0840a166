"""Time the attention variants built by bench/attention_variants.sh (issue #17) on the GPU:
each variant checked against the f32 oracle of kernels/attention/contract.py (normal inputs,
the contract's tolerance), then timed with torch SDPA (the backend torch picks, and cuDNN)
interleaved in the same loop (CUDA events, L2 flushed before each call, median of 20 after 5
warm-up calls). Writes $OUT/attention_variants.json; prints a table, the best variant per
shape marked."""
import json, os, sys, statistics, glob, collections
import torch
sys.path.insert(0, "kernels/attention")
import contract as A
import cake
from cake.harness import timing

# (BH, BHKV, S): the B = 4, H = 32, S = 8192; a short sequence; grouped-query 8:1.
# SHAPES="BH:BHKV:S,..." replaces them (for every D; by default D = 64 runs at S = 8192 only).
SHAPES = [(128, 128, 8192), (256, 256, 2048), (64, 8, 4096)]
CUSTOM = os.environ.get("SHAPES")
if CUSTOM:
    SHAPES = [tuple(int(x) for x in s.split(":")) for s in CUSTOM.split(",")]
VARIANTS = os.environ.get("VARIANTS", ".carry/att-variants")
OUT = os.environ.get("OUT", "out")
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)

groups = collections.defaultdict(list)
for d in sorted(glob.glob(f"{VARIANTS}/D*_C*__*")):
    dc, v = os.path.basename(d).split("__")
    D, C = dc.split("_")
    groups[(int(D[1:]), int(C[1:]))].append((v, d))

rows = []
for (D, C), variants in sorted(groups.items()):
    for BH, BHKV, S in SHAPES:
        if D == 64 and S != 8192 and not CUSTOM:
            continue
        g = torch.Generator(device=dev); g.manual_seed(BH * 7 + S + D + C)
        shape = {"BH": BH, "BHKV": BHKV, "S": S, "D": D}
        ins = A.make_inputs(shape, "normal", g)
        ref = (A.oracle_causal if C else A.oracle)(**ins)["O"].float()
        flops = (2 if C else 4) * BH * S * S * D
        calls, recs = [], []
        for name, d in variants:
            rec = {"D": D, "causal": C, "BH": BH, "BHKV": BHKV, "S": S, "variant": name}
            try:
                k = cake.load_kernel(glob.glob(f"{d}/*.launch.json")[0])
                O = torch.full_like(ins["Q"], float("nan"))
                call = (lambda k, O: lambda: k(**ins, O=O))(k, O)
                call(); torch.cuda.synchronize()
                err = (O.float() - ref).abs().nan_to_num(1e9).max().item()
                rec["maxerr"] = err
                rec["correct"] = bool(torch.allclose(O.float(), ref, rtol=0.02, atol=0.02))
                calls.append(call); recs.append(rec)
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
                rows.append(rec)
        Ob = torch.empty_like(ins["Q"])
        base = {"sdpa": A.torch_sdpa_causal if C else A.torch_sdpa,
                "cudnn": A.torch_sdpa_cudnn_causal if C else A.torch_sdpa_cudnn}
        usable = {}
        for bname, fn in base.items():
            try:
                fn(**ins, O=Ob); torch.cuda.synchronize()
                usable[bname] = (lambda fn: lambda: fn(**ins, O=Ob))(fn)
            except Exception as e:
                print(f"baseline {bname} unavailable at {shape}: {type(e).__name__}: {str(e)[:120]}", flush=True)
        times = timing.time_events_interleaved(torch, calls + list(usable.values()), 5, 20, flush)
        meds = [statistics.median(t) for t in times]
        bmeds = dict(zip(usable.keys(), meds[len(calls):]))
        for rec, t in zip(recs, meds):
            rec.update(ms=t, tflops=flops / (t * 1e-3) / 1e12)
            for bname, bt in bmeds.items():
                rec[f"{bname}_ms"] = bt
                rec[f"vs_{bname}"] = bt / t
            rows.append(rec)
            print(json.dumps(rec), flush=True)
        del ins, ref
json.dump({"rows": rows}, open(f"{OUT}/attention_variants.json", "w"), indent=1)
best = {}
key = lambda r: (r["D"], r["causal"], r["BH"], r["BHKV"], r["S"])
for r in rows:
    if r.get("correct") and (key(r) not in best or r["ms"] < best[key(r)]["ms"]):
        best[key(r)] = r
print(f"\n{'D':>4} {'C':>2} {'BH':>4} {'KV':>4} {'S':>6} {'variant':8} ok     ms  TF/s  sdpa_ms vs_sdpa cudnn_ms vs_cudnn maxerr")
for r in rows:
    if "error" in r:
        print(f"{r['D']:4} {r['causal']:2} {r['BH']:4} {r['BHKV']:4} {r['S']:6} {r['variant']:8} ERROR {r['error'][:70]}")
        continue
    mark = "*" if best.get(key(r)) is r else " "
    print(f"{r['D']:4} {r['causal']:2} {r['BH']:4} {r['BHKV']:4} {r['S']:6} {r['variant']:8} {'y' if r['correct'] else 'N'}{mark} "
          f"{r['ms']:6.3f} {r['tflops']:5.0f} {r.get('sdpa_ms', float('nan')):8.3f} {r.get('vs_sdpa', float('nan')):6.2f}x "
          f"{r.get('cudnn_ms', float('nan')):8.3f} {r.get('vs_cudnn', float('nan')):6.2f}x {r['maxerr']:.4f}")
