#!/usr/bin/env python3
"""The timeline stamps of the compiler (docs/timeline.md) on the GPU: the small-M GEMM schedules
that bench/timeline_probe.py stamped by patching their source, now built with `cake build
--timeline`. Each kernel is built twice on the build machine (plain and with the stamps), both
are checked against the contract's oracle, timed interleaved (CUPTI, L2 flushed) so the stamps'
cost shows, and the stamped one recorded REPS times with `cake.timeline.record`; the summary of
the median run (by span) is printed and every summary written to $OUT/timeline_api.json.

    python3 bench/timeline_api.py build [DIR]     (build machine: the cake binary, nvcc)
    TL=DIR python3 bench/timeline_api.py run      (GPU host, with the cake wheel)
"""
import json
import os
import re
import statistics
import subprocess
import sys

# (name, schedule, constants, (M, N, K) of the GEMM contract, or (R, H) of the RMSNorm one)
CONFIGS = [
    ("swapped-bk256-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1}, (8, 4096, 4096)),
    ("swapped-bk256-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "BK": 256, "TIGHT": 1}, (8, 14336, 4096)),
    ("split-bk256-m8-2048x7168", "examples/tinygemm_sm90.py", {"M": 8, "NW": 2048, "BK": 256, "TIGHT": 1}, (8, 2048, 7168)),
    ("gemv-m1-4096", "examples/gemv_sm90.py", {"K": 4096, "MT": 1}, (1, 4096, 4096)),
    # A row kernel: (R, H) rows of the RMSNorm contract (kernels/rows/), issue #20's shape.
    ("rmsnorm-32768x4096", "examples/rmsnorm_sm90.py", {"H": 4096}, (32768, 4096)),
]


def build(outdir):
    cake = os.environ.get("CAKE", "target/release/cake")
    os.makedirs(outdir, exist_ok=True)
    for name, schedule, consts, shape in CONFIGS:
        text = open(schedule).read()
        for k, v in consts.items():
            text, n = re.subn(rf"^{k} = .*$", f"{k} = {v}", text, count=1, flags=re.M)
            assert n == 1, f"{schedule} has no constant {k}"
        src = os.path.join(outdir, f"{name}.py")
        open(src, "w").write(text)
        for variant, flags in (("plain", []), ("timeline", ["--timeline"])):
            subprocess.run([cake, "build", src, "--target", "sm_90a", "-o", os.path.join(outdir, f"{name}.{variant}"),
                            *flags], check=True, capture_output=True)
        json.dump({"name": name, "shape": shape}, open(os.path.join(outdir, f"{name}.json"), "w"))
        print("built", name, flush=True)


def run():
    import torch
    import importlib.util

    def module(path):
        spec = importlib.util.spec_from_file_location(path.replace("/", "_"), path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        return m

    C = module("kernels/gemm/contract.py")
    R = module("kernels/rows/contract.py")
    import cake
    from cake.harness import timing
    d = os.environ.get("TL", ".carry/tl")
    out = os.environ.get("OUT", "out")
    os.makedirs(out, exist_ok=True)
    reps = int(os.environ.get("REPS", "20"))
    dev = torch.device("cuda")
    flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)
    results = []
    for cfg in sorted(f for f in os.listdir(d) if f.endswith(".json")):
        info = json.load(open(os.path.join(d, cfg)))
        name, shape = info["name"], info["shape"]
        plain = cake.load_kernel(os.path.join(d, f"{name}.plain"))
        stamped = cake.load_kernel(os.path.join(d, f"{name}.timeline"))
        g = torch.Generator(device=dev)
        g.manual_seed(sum(shape) * 100003)
        if name.startswith("rmsnorm"):
            rows, hidden = shape
            ins = {**R.make_rmsnorm_inputs({"R": rows, "H": hidden}, "normal", g), "eps": 1e-6}
            out_name, out_shape = "Y", (rows, hidden)
            ref = R.rmsnorm_oracle(**ins)["Y"].float()
            rec = {"name": name, "R": rows, "H": hidden}
        else:
            M, N, K = shape
            ins = C.make_inputs({"M": M, "N": N, "K": K}, "normal", g)
            out_name, out_shape = "C", (M, N)
            ref = C.oracle(**ins)["C"].float()
            rec = {"name": name, "M": M, "N": N, "K": K}
        slots = cake.timeline.layout(stamped)["slots"]
        grid = stamped.bind(**ins, **{out_name: torch.empty(out_shape, dtype=torch.bfloat16, device=dev)},
                            CAKE_TIMELINE=torch.zeros(slots, dtype=torch.int64, device=dev))["grid"]
        P = torch.zeros(grid[0] * slots, dtype=torch.int64, device=dev)
        outs = {}
        for v, k, extra in (("plain", plain, {}), ("timeline", stamped, {"CAKE_TIMELINE": P})):
            o = torch.full(out_shape, float("nan"), dtype=torch.bfloat16, device=dev)
            k(**ins, **{out_name: o}, **extra)
            torch.cuda.synchronize()
            rec[f"{v}_correct"] = bool(torch.allclose(o.float(), ref, rtol=0.02, atol=0.02))
            outs[v] = o
        if not (rec["plain_correct"] and rec["timeline_correct"]):
            results.append(rec)
            print(name, "WRONG", flush=True)
            continue
        spans = timing.time_cupti_interleaved(
            torch, [lambda: plain(**ins, **{out_name: outs["plain"]}),
                    lambda: stamped(**ins, **{out_name: outs["timeline"]}, CAKE_TIMELINE=P)], 30, flush)
        rec["plain_us"] = statistics.median(spans[0].spans_ms) * 1e3
        rec["timeline_us"] = statistics.median(spans[1].spans_ms) * 1e3
        recordings = [cake.timeline.record(stamped, **ins, **{out_name: outs["timeline"]}) for _ in range(reps)]
        ranked = sorted(((r.summary(), r) for r in recordings), key=lambda sr: sr[0]["span_us"])
        rec["summary"], median = ranked[len(ranked) // 2]
        rec["spans_us"] = [s["span_us"] for s, _ in ranked]
        if len(median.rows) <= 512:   # the median recording's stamps, where they are few
            rec["points"], rec["rows"] = median.points, median.rows
        results.append(rec)
        print(f"== {name}: plain {rec['plain_us']:.2f} us, stamped {rec['timeline_us']:.2f} us; "
              f"the median of {reps} recordings:\n{cake.timeline.format_summary(rec['summary'])}", flush=True)
    json.dump(results, open(os.path.join(out, "timeline_api.json"), "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["build"]:
        build(sys.argv[2] if len(sys.argv) > 2 else ".carry/tl")
    elif sys.argv[1:2] == ["run"]:
        run()
    else:
        raise SystemExit(__doc__)
