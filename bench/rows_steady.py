"""Whether the row kernels' output evict-last gain (bench/results/2026-12-05-gemv-fused/) is
time saved or writeback moved past the end of the timed kernel. Each build of
bench/rows_steady.sh is checked against the f32 oracle of kernels/rows/contract.py, then timed
with the torch op and a copy of the same rows, two ways, in one process:

- flushed: one call per sample, L2 flushed by a write before it (as `cake family measure`
  does, L2's persisting lines first returned to normal priority), CUDA events, median of 30
  after 10 warm-up calls;
- flushed, no reset: the same without returning persisting lines to normal priority (as the
  harness flushed before this change): lines kept evict-last survive the flush;
- steady: BURST calls back to back between two events, no flush, so each call pays for the
  dirty lines the previous one left in L2 (the rows are several times the L2); median over 10
  bursts of the time per call.

Writes $OUT/rows_steady.json and prints a table."""
import json, os, sys, statistics, glob
import torch
sys.path.insert(0, "bench")
from rows_common import C, FAMILIES, mismatches, outputs
import cake
from cake.harness import timing

ROWS_FOR_H = {1024: 65536, 4096: 32768, 16384: 8192}
VARIANTS = os.environ.get("VARIANTS", ".carry/steady")
OUT = os.environ.get("OUT", "out")
BURST = int(os.environ.get("BURST", "20"))
dev = torch.device("cuda")
flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)


def flushed_no_reset(calls, warmup=10, samples=30):
    per = [[] for _ in calls]
    for i in range(warmup + samples):
        for j, c in enumerate(calls):
            flush.zero_()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            c()
            b.record()
            torch.cuda.synchronize()
            if i >= warmup:
                per[j].append(a.elapsed_time(b) * 1e3)
    return [statistics.median(p) for p in per]


def steady(calls, bursts=10):
    per = [[] for _ in calls]
    for c in calls:  # warm-up
        c()
    for _ in range(bursts):
        for i, c in enumerate(calls):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record()
            for _ in range(BURST):
                c()
            b.record()
            b.synchronize()
            per[i].append(a.elapsed_time(b) * 1e3 / BURST)
    return [statistics.median(p) for p in per]


rows = []
for fam in [f for f in FAMILIES if glob.glob(f"{VARIANTS}/{f}__*")]:
    gen, orc, base, outs, scalars, _ = FAMILIES[fam]
    for H, R in ROWS_FOR_H.items():
        g = torch.Generator(device=dev); g.manual_seed(R * 7 + H)
        ins = getattr(C, gen)({"R": R, "H": H}, "normal", g)
        ref = getattr(C, orc)(**ins, **scalars)
        names, calls, oks = [], [], []
        for d in sorted(glob.glob(f"{VARIANTS}/{fam}__{H}__*")):
            k = cake.load_kernel(glob.glob(f"{d}/*.launch.json")[0])
            out = outputs(fam, R, H, dev)
            call = (lambda k, out: lambda: k(**ins, **out, **scalars))(k, out)
            call(); torch.cuda.synchronize()
            ok = not mismatches(fam, out, ref)
            names.append(os.path.basename(d).split("__")[2]); calls.append(call); oks.append(ok)
        bo = outputs(fam, R, H, dev)
        x = ins["X"]; y = torch.empty_like(x)
        names += ["torch", "copy"]; oks += [None, None]
        calls += [lambda: base(**ins, **bo, **scalars), lambda: y.copy_(x)]
        fl = [statistics.median(t) * 1e3 for t in timing.time_events_interleaved(torch, calls, 10, 30, flush)]
        nr = flushed_no_reset(calls)
        st = steady(calls)
        for n, ok, f, u, s in zip(names, oks, fl, nr, st):
            rec = dict(family=fam, R=R, H=H, variant=n, correct=ok, flushed_us=f, no_reset_us=u, steady_us=s,
                       vs_torch_flushed=fl[-2] / f, vs_torch_steady=st[-2] / s)
            rows.append(rec)
            print(json.dumps(rec), flush=True)
json.dump(rows, open(f"{OUT}/rows_steady.json", "w"), indent=1)
print(f"\n{'family':12} {'R':>6} {'H':>6} {'variant':8} ok  flushed no-reset steady  ×torch(fl) ×torch(st)")
for r in rows:
    ok = "-" if r["correct"] is None else "y" if r["correct"] else "N"
    print(f"{r['family']:12} {r['R']:6} {r['H']:6} {r['variant']:8} {ok}  {r['flushed_us']:7.1f} {r['no_reset_us']:8.1f} {r['steady_us']:7.1f}  {r['vs_torch_flushed']:8.3f}x {r['vs_torch_steady']:8.3f}x")
