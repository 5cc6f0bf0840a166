"""A quick read of the row kernels (issue #20) on the GPU, before the contract runner times
them: prebuilt specialisations (bench/rows_probe.sh builds them, one per family and H), checked
against the f32 oracles of kernels/rows/contract.py on normal inputs, then timed against the
torch op and a copy in the same run: CUDA events around each call, L2 flushed before each,
median of 50 after 10 warm-up calls. Writes $OUT/rows_probe.json; prints a table."""
import json, os, sys, statistics
import torch
sys.path.insert(0, "kernels/rows")
import contract as C
import cake
from cake.harness import timing

FAMILIES = {
    "rmsnorm": ("make_rmsnorm_inputs", "rmsnorm_oracle", C.torch_rms_norm, ["Y"], {"eps": 1e-6}),
    "layernorm": ("make_layernorm_inputs", "layernorm_oracle", C.torch_layer_norm, ["Y"], {"eps": 1e-5}),
    "softmax": ("make_softmax_inputs", "softmax_oracle", C.torch_softmax, ["Y"], {}),
    "add_rmsnorm": ("make_add_rmsnorm_inputs", "add_rmsnorm_oracle", C.torch_add_rms_norm, ["Hs", "Y"], {"eps": 1e-6}),
    "quant_fp8": ("make_quant_inputs", "quant_oracle", C.torch_quant_fp8, ["Q", "S"], {}),
}
SHAPES = [(32768, 4096), (1, 4096), (65536, 1024), (8192, 16384), (4096, 5000), (256, 8192), (1000, 1032)]
OUT = os.environ.get("OUT", "out")
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)


def outputs(fam, R, H):
    if fam == "quant_fp8":
        return {"Q": torch.empty(R, H, dtype=torch.float8_e4m3fn, device=dev),
                "S": torch.empty(R, dtype=torch.float32, device=dev)}
    names = FAMILIES[fam][3]
    return {n: torch.empty(R, H, dtype=torch.bfloat16, device=dev) for n in names}


def med(call):
    return statistics.median(timing.time_events(torch, call, 10, 50, flush)) * 1e3  # us


rows = []
for fam, (gen, orc, base, outs, scalars) in FAMILIES.items():
    for R, H in SHAPES:
        path = f"{os.environ.get('PREBUILT', 'prebuilt')}/{fam}_{H}"
        rec = {"family": fam, "R": R, "H": H}
        try:
            k = cake.load_kernel(path)
            g = torch.Generator(device=dev); g.manual_seed(R * 7 + H)
            ins = getattr(C, gen)({"R": R, "H": H}, "normal", g)
            out = outputs(fam, R, H)
            call = lambda: k(**ins, **out, **scalars)
            call(); torch.cuda.synchronize()
            ref = getattr(C, orc)(**ins, **scalars)
            ok = True
            for n, t in ref.items():
                got = out[n].float()
                tol = dict(rtol=0.13, atol=1e-3) if n == "Q" else dict(rtol=1e-2, atol=1e-3)
                if not torch.allclose(got, t.float(), **tol):
                    ok = False
                    rec[f"maxerr_{n}"] = float((got - t.float()).abs().max())
            rec["correct"] = ok
            bytes_ = {"rmsnorm": 4, "layernorm": 4, "softmax": 4, "add_rmsnorm": 8, "quant_fp8": 3}[fam] * R * H
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
