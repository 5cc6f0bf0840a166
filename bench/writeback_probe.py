"""Does the time of the L2 flush after a call measure the writeback the call deferred? For the
builds of bench/rows_steady.sh (RMSNorm with and without its output stored evict-last), torch's
rms_norm and a copy of the rows, at three shapes: flush, call, then time the next flush (CUDA
events, median of SAMPLES); against the same flush after a flush alone. The candidate for the
harness's charge of deferred writeback (docs/worker.md). Measured (bench/results/
2026-12-05-mcast/ call 3, H100): within +-0.5 us after every variant, so this probe (no reset
between call and flush) does not see what the harness's between-sample span does.
Writes $OUT/writeback_probe.json.
   VARIANTS=.carry/steady python3 bench/writeback_probe.py"""
import glob, json, os, statistics, sys
import torch
sys.path.insert(0, "bench")
from rows_common import C, FAMILIES, outputs
import cake
from cake.harness import timing

VARIANTS = os.environ.get("VARIANTS", ".carry/steady")
OUT = os.environ.get("OUT", "out")
SAMPLES = int(os.environ.get("SAMPLES", "20"))
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)


def flush_after(call):
    """Median µs of the flush that follows `call` (None: a flush alone), and of the call itself."""
    fl, ca = [], []
    for i in range(SAMPLES + 3):
        timing.flush_l2(flush)
        torch.cuda.synchronize()
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record()
        if call is not None:
            call()
        e[1].record()
        flush.zero_()
        e[2].record()
        torch.cuda.synchronize()
        if i >= 3:
            ca.append(e[0].elapsed_time(e[1]) * 1e3)
            fl.append(e[1].elapsed_time(e[2]) * 1e3)
    return statistics.median(fl), statistics.median(ca)


rows = []
gen, orc, base, outs, scalars, _ = FAMILIES["rmsnorm"]
for H, R in {1024: 65536, 4096: 32768, 16384: 8192}.items():
    g = torch.Generator(device=dev); g.manual_seed(R * 7 + H)
    ins = getattr(C, gen)({"R": R, "H": H}, "normal", g)
    names, calls = ["flush alone"], [None]
    for d in sorted(glob.glob(f"{VARIANTS}/rmsnorm__{H}__*")):
        k = cake.load_kernel(glob.glob(f"{d}/*.launch.json")[0])
        out = outputs("rmsnorm", R, H, dev)
        names.append(os.path.basename(d).split("__")[2])
        calls.append((lambda k, out: lambda: k(**ins, **out, **scalars))(k, out))
    bo = outputs("rmsnorm", R, H, dev)
    x = ins["X"]; y = torch.empty_like(x)
    names += ["torch", "copy"]
    calls += [lambda: base(**ins, **bo, **scalars), lambda: y.copy_(x)]
    for rep in range(2):   # twice, in turn, to see the noise
        for n, c in zip(names, calls):
            f, t = flush_after(c)
            rows.append(dict(R=R, H=H, variant=n, rep=rep, flush_after_us=f, call_us=t))
os.makedirs(OUT, exist_ok=True)
json.dump(rows, open(f"{OUT}/writeback_probe.json", "w"), indent=1)
print(f"{'R':>6} {'H':>6} {'variant':12} rep  call µs  flush after µs  excess over flush alone")
idle = {}
for r in rows:
    if r["variant"] == "flush alone":
        idle[(r["R"], r["H"], r["rep"])] = r["flush_after_us"]
    x = r["flush_after_us"] - idle[(r["R"], r["H"], r["rep"])]
    print(f"{r['R']:6} {r['H']:6} {r['variant']:12} {r['rep']:3}  {r['call_us']:7.1f}  {r['flush_after_us']:14.1f}  {x:+8.1f}")
