"""Time the hand-written small-M references of bench/gemv_hand.cu (built by bench/gemv_hand.sh)
against cuBLAS (torch.matmul) in one process at issue #19's shapes with M ≤ 16: the weight-read
floor (`read_sum`, `read_sum_ef`: every byte of B once, no math), six hand GEMVs per M and the
tensor-core ones (`tc_*`, GEMVS=0 leaves the CUDA-core ones out). Every GEMV is checked
against the contract's f64 oracle (rtol = atol = 0.02, as tinygemm.contract.toml) before it is
timed; a wrong kernel gets no time. CUPTI kernel spans, L2 flushed before each call, samples
interleaved, median of SAMPLES (50). Writes $OUT/gemv_hand.json and prints a table.
   GEMV=.carry/gemv python3 bench/gemv_hand.py"""
import json, os, re, statistics, sys
import torch
sys.path.insert(0, "kernels/gemm")
import contract as C
import cake
from cake.harness import timing

GEMV = os.environ.get("GEMV", ".carry/gemv")
OUT = os.environ.get("OUT", "out")
SAMPLES = int(os.environ.get("SAMPLES", "50"))
MS = [int(m) for m in os.environ.get("MS", "1,2,4,8,16").split(",")]
# GEMVS=0 leaves the CUDA-core GEMVs out (they lose from M = 4: 1-hand-floor/).
GEMVS = os.environ.get("GEMVS", "1") != "0"
NK = [(4096, 4096), (14336, 4096), (4096, 14336), (7168, 2048), (2048, 7168)]
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)
kernels = {n: cake.load_kernel(os.path.join(GEMV, n)) for n in sorted(os.listdir(GEMV))
           if os.path.isdir(os.path.join(GEMV, n))}
# Cake's own GEMV (examples/gemv_sm90.py built per K, M and ROWS into CAKE_GEMV/cake_k<K>_m<M>_r<R>).
CAKE_GEMV = os.environ.get("CAKE_GEMV")
if CAKE_GEMV:
    kernels.update({n: cake.load_kernel(os.path.join(CAKE_GEMV, n)) for n in sorted(os.listdir(CAKE_GEMV))})

records = []
for M in MS:
    for N, K in NK:
        g = torch.Generator(device=dev); g.manual_seed(M * 1000003 + N * 31 + K)
        ins = C.make_inputs({"M": M, "N": N, "K": K}, "normal", g)
        ref = C.oracle(**ins)["C"].float()
        calls, names = [], []
        for name, k in kernels.items():
            mt = next(t for t in (8, 16, 32, 64) if t >= M)   # a tensor-core GEMV's token blocks
            built = re.fullmatch(r"cake\w*_k(\d+)_m(\d+)(?:_n(\d+))?(?:_r\d+)?", name)
            if built:   # Cake's builds for one K and M (and N: bench/tinygemm_hand_builds.sh)
                if (int(built[1]), int(built[2])) != (K, M) or (built[3] and int(built[3]) != N):
                    continue
            elif not name.startswith("read_sum") and not name.startswith(f"gemv_m{M}_") \
                    and not name.startswith(f"tc_m{mt}_"):
                continue
            if name.startswith("gemv_") and not GEMVS:
                continue
            out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=dev)
            try:
                k(**ins, C=out); torch.cuda.synchronize()
                ok = name.startswith("read_sum") or bool(torch.allclose(out.float(), ref, rtol=0.02, atol=0.02))
            except Exception as e:
                records.append({"M": M, "N": N, "K": K, "kernel": name, "error": f"{type(e).__name__}: {e}"[:300]})
                continue
            if not ok:
                records.append({"M": M, "N": N, "K": K, "kernel": name, "correct": False,
                                "max_err": float((out.float() - ref).abs().nan_to_num(1e9).max())})
                continue
            calls.append(lambda k=k, out=out: k(**ins, C=out)); names.append(name)
        Ct = torch.empty((M, N), dtype=torch.bfloat16, device=dev)
        C.torch_matmul(**ins, C=Ct); torch.cuda.synchronize()
        assert torch.allclose(Ct.float(), ref, rtol=0.02, atol=0.02)
        calls.append(lambda: C.torch_matmul(**ins, C=Ct)); names.append("cublas")
        res = timing.time_cupti_interleaved(torch, calls, SAMPLES, flush)
        for name, r in zip(names, res):
            us = statistics.median(r.spans_ms) * 1e3
            records.append({"M": M, "N": N, "K": K, "kernel": name, "correct": True, "us": us,
                            "weight_tbs": 2 * N * K / us / 1e6, "spans_ms": r.spans_ms})
json.dump(records, open(f"{OUT}/gemv_hand.json", "w"), indent=1)

print(f"{'M':>3} {'N':>6} {'K':>6} {'cuBLAS':>8} {'read':>7} {'read_ef':>7} {'best GEMV':>10}  {'kernel':<20} {'vs cuBLAS':>9} {'TB/s':>5}  {'best tc':>7} {'vs cuBLAS':>9} {'kernel':<22}  {'Cake':>7} {'vs cuBLAS':>9}")
for M in MS:
    for N, K in NK:
        rs = [r for r in records if (r["M"], r["N"], r["K"]) == (M, N, K) and "us" in r]
        by = {r["kernel"]: r for r in rs}
        gem = [r for r in rs if r["kernel"].startswith("gemv")]
        tcs = [r for r in rs if r["kernel"].startswith("tc_")]
        tbest = min(tcs, key=lambda r: r["us"]) if tcs else None
        ck = [r for r in rs if r["kernel"].startswith("cake_")]
        cbest = min(ck, key=lambda r: r["us"]) if ck else None
        best = min(gem, key=lambda r: r["us"]) if gem else None
        bad = [r["kernel"] for r in records if (r["M"], r["N"], r["K"]) == (M, N, K) and "us" not in r]
        print(f"{M:>3} {N:>6} {K:>6} {by['cublas']['us']:>8.1f} {by['read_sum']['us']:>7.1f} "
              f"{by['read_sum_ef']['us'] if 'read_sum_ef' in by else float('nan'):>7.1f} "
              f"{best['us'] if best else float('nan'):>10.1f}  {best['kernel'] if best else '-':<20} "
              f"{by['cublas']['us'] / best['us'] if best else 0:>8.3f}x {best['weight_tbs'] if best else 0:>5.2f}"
              + (f"  {tbest['us']:>7.1f} {by['cublas']['us'] / tbest['us']:>8.3f}x {tbest['kernel']:<22}" if tbest else "")
              + (f"  {cbest['us']:>7.1f} {by['cublas']['us'] / cbest['us']:>8.3f}x {cbest['kernel']}" if cbest else "")
              + (f"  FAILED: {bad}" if bad else ""))
