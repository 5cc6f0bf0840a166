"""Time the hand-written reference kernels of bench/rows_hand.cu (built by bench/rows_hand.sh)
against the shipped RMSNorm schedule, torch's rms_norm and a torch copy, in one process at
H = 4096 and several row counts (issue #20's ceiling question). Every RMSNorm is checked against
the contract's f32 oracle (the copies against X) before it is timed; a wrong kernel gets no time.
CUPTI kernel spans, L2 flushed before each call, samples interleaved; median of 50.
Writes $OUT/rows_hand.json and prints a table.
   HAND=.carry/hand SHIPPED=<dir of `cake build examples/rmsnorm_sm90.py`> [CAKE_BUILDS=name=dir,...] \
       python3 bench/rows_hand.py"""
import json, os, statistics, sys
import torch
sys.path.insert(0, "kernels/rows")
import contract as C
import cake
from cake.harness import timing

HAND = os.environ.get("HAND", ".carry/hand")
OUT = os.environ.get("OUT", "out")
ROWS = [int(r) for r in os.environ.get("ROWS", "32768,8192,65536").split(",")]
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)

kernels = {"shipped": cake.load_kernel(os.environ["SHIPPED"])} if os.environ.get("SHIPPED") else {}
# More Cake builds beside it: CAKE_BUILDS="name=dir,name=dir" (`cake build` output folders).
for item in filter(None, os.environ.get("CAKE_BUILDS", "").split(",")):
    name, path = item.split("=", 1)
    if not os.path.isdir(path):
        print(f"rows_hand: {name} not carried ({path}), skipped", file=sys.stderr)
        continue
    kernels[name] = cake.load_kernel(path)
for name in sorted(os.listdir(HAND)):
    if os.path.isdir(os.path.join(HAND, name)):
        kernels[name] = cake.load_kernel(os.path.join(HAND, name))

records = []
for R in ROWS:
    g = torch.Generator(device=dev); g.manual_seed(R)
    ins = C.make_rmsnorm_inputs({"R": R, "H": 4096}, "normal", g)
    ref = C.rmsnorm_oracle(**ins, eps=1e-6)["Y"].float()
    def run_and_check(name, k):
        """One call of k into a NaN-filled Y: whether Y matches want (X for copies), Y, want."""
        Y = torch.full((R, 4096), float("nan"), dtype=torch.bfloat16, device=dev)
        k(**ins, Y=Y, eps=1e-6); torch.cuda.synchronize()
        want = ins["X"].float() if name.startswith("copy") else ref
        tol = dict(rtol=0, atol=0) if name.startswith("copy") else dict(rtol=1e-2, atol=1e-3)
        return bool(torch.allclose(Y.float(), want, **tol)), Y, want

    calls, names = [], []
    for name, k in kernels.items():
        try:
            ok, Y, want = run_and_check(name, k)
        except Exception as e:
            print(f"{name} R={R}: {type(e).__name__}: {e}"[:300], flush=True)
            records.append({"R": R, "kernel": name, "error": f"{type(e).__name__}: {e}"[:300]})
            continue
        if not ok:
            records.append({"R": R, "kernel": name, "correct": False,
                            "max_err": float((Y.float() - want).abs().nan_to_num(1e9).max())})
            continue
        calls.append(lambda k=k, Y=Y: k(**ins, Y=Y, eps=1e-6)); names.append(name)
    Yt = torch.empty_like(ins["X"])
    calls += [lambda: C.torch_rms_norm(**ins, Y=Yt, eps=1e-6), lambda: Yt.copy_(ins["X"])]
    names += ["torch_rms_norm", "torch_copy"]
    res = timing.time_cupti_interleaved(torch, calls, 50, flush)
    # Checked again after timing: a kernel whose result changes from launch to launch (the
    # dynamic counters' reset, say) is caught here.
    rechecked = {name: run_and_check(name, k)[0] for name, k in kernels.items() if name in names}
    for name, r in zip(names, res):
        us = statistics.median(r.spans_ms) * 1e3
        records.append({"R": R, "kernel": name, "correct": rechecked.get(name, True), "us": us,
                        "tbs": 4 * R * 4096 / us / 1e6, "spans_ms": r.spans_ms})
    by = {r["kernel"]: r for r in records if r["R"] == R and "us" in r}
    for r in by.values():
        r["vs_torch"] = by["torch_rms_norm"]["us"] / r["us"]
        r["of_copy"] = by["torch_copy"]["us"] / r["us"]
json.dump(records, open(f"{OUT}/rows_hand.json", "w"), indent=1)
print(f"\n{'R':>6} {'kernel':20} {'us':>8} {'TB/s':>6} {'vs torch':>8} {'of copy':>7}")
for r in records:
    if "us" in r:
        bad = "" if r["correct"] else "  WRONG AFTER TIMING"
        print(f"{r['R']:6} {r['kernel']:20} {r['us']:8.1f} {r['tbs']:6.2f} {r['vs_torch']:8.3f} {r['of_copy']:7.3f}{bad}")
    else:
        print(f"{r['R']:6} {r['kernel']:20} {'WRONG' if 'correct' in r else 'ERROR'} {r.get('max_err', r.get('error', ''))}")
