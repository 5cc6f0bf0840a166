"""Time the small-M GEMM variants built by bench/tinygemm_variants.sh (issue #19) on the GPU:
each variant checked against the f64 oracle of kernels/gemm/contract.py (normal inputs, the
contract's tolerance), then timed with torch.matmul (cuBLAS) interleaved in the same loop (CUDA
events, L2 flushed before each call, median of 50 after 10 warm-up calls). The weight-streaming
floor of each (N, K) is its weight bytes over the bandwidth of a device copy measured in the
same run. Writes $OUT/tinygemm_variants.json; prints a table, the best variant per shape
marked."""
import json, os, sys, statistics, glob, collections
import torch
sys.path.insert(0, "kernels/gemm")
import contract as G
import cake
from cake.harness import timing

NK = [(4096, 4096), (14336, 4096), (4096, 14336), (7168, 2048), (2048, 7168)]
VARIANTS = os.environ.get("VARIANTS", ".carry/tg-variants")
OUT = os.environ.get("OUT", "out")
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)

# Copy bandwidth (bytes read + written per second) on a 256 MiB buffer.
src = torch.empty(128 << 20, dtype=torch.bfloat16, device=dev); dst = torch.empty_like(src)
copy_ms = statistics.median(timing.time_events(torch, lambda: dst.copy_(src), 10, 50, flush))
copy_bw = 2 * src.numel() * 2 / (copy_ms * 1e-3)
print(f"copy: {copy_bw / 1e12:.2f} TB/s", flush=True)
del src, dst

by_m = collections.defaultdict(list)
for d in sorted(glob.glob(f"{VARIANTS}/M*__*")):
    m, s = os.path.basename(d).split("__")
    by_m[int(m[1:])].append((s, d))

rows = []
for m, variants in sorted(by_m.items()):
    for N, K in NK:
        g = torch.Generator(device=dev); g.manual_seed(m * 131 + N + K)
        ins = G.make_inputs({"M": m, "N": N, "K": K}, "normal", g)
        ref = G.oracle(**ins)["C"].float()
        calls, recs = [], []
        for name, d in variants:
            rec = {"M": m, "N": N, "K": K, "variant": name}
            try:
                k = cake.load_kernel(glob.glob(f"{d}/*.launch.json")[0])
                C = torch.full((m, N), float("nan"), dtype=torch.bfloat16, device=dev)
                call = (lambda k, C: lambda: k(**ins, C=C))(k, C)
                call(); torch.cuda.synchronize()
                rec["correct"] = bool(torch.allclose(C.float(), ref, rtol=0.02, atol=0.02))
                if not rec["correct"]:
                    rec["maxerr"] = float((C.float() - ref).abs().nan_to_num(1e9).max())
                calls.append(call); recs.append(rec)
            except Exception as e:
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
                rows.append(rec)
        Cb = torch.empty((m, N), dtype=torch.bfloat16, device=dev)
        calls.append(lambda: G.torch_matmul(**ins, C=Cb))
        times = timing.time_events_interleaved(torch, calls, 10, 50, flush)
        meds = [statistics.median(t) * 1e3 for t in times]
        floor = N * K * 2 / copy_bw * 1e6
        for rec, t in zip(recs, meds):
            rec.update(cake_us=t, cublas_us=meds[-1], vs_cublas=meds[-1] / t, floor_us=floor, of_floor=floor / t)
            rows.append(rec)
            print(json.dumps(rec), flush=True)
json.dump({"copy_tbps": copy_bw / 1e12, "rows": rows}, open(f"{OUT}/tinygemm_variants.json", "w"), indent=1)
best = {}
for r in rows:
    if r.get("correct"):
        key = (r["M"], r["N"], r["K"])
        if key not in best or r["cake_us"] < best[key]["cake_us"]:
            best[key] = r
print(f"\n{'M':>4} {'N':>6} {'K':>6} {'variant':8} ok  cake_us cublas_us vs_cublas of_floor")
for r in rows:
    if "error" in r:
        print(f"{r['M']:4} {r['N']:6} {r['K']:6} {r['variant']:26} ERROR {r['error'][:60]}")
        continue
    mark = "*" if best.get((r["M"], r["N"], r["K"])) is r else " "
    print(f"{r['M']:4} {r['N']:6} {r['K']:6} {r['variant']:26} {'y' if r['correct'] else 'N'}{mark} {r['cake_us']:8.1f} {r['cublas_us']:8.1f} {r['vs_cublas']:7.2f}x {r['of_floor']:6.2f}")
