"""Where a small-M GEMM's time goes (issue #19): the shipped schedules with %globaltimer stamps.

Superseded by the compiler's own stamps (`cake build --timeline`, `cake.timeline`,
docs/timeline.md; bench/timeline_api.py); kept because bench/results/2026-12-06-timeline/ came
from it.

On the H200 the GEMV streams a 4096 x 4096 weight in 11.0 us and the swapped TMA schedule in
12.4 us, although both read the same 32 MB (bench/results/2026-12-06-regs-gemm/). This probe
asks which part of a CTA's life holds the difference. Each CTA's first consumer thread records
%globaltimer at its entry, after the prologue's barrier, when its first stage of data has
arrived, when its main loop is done, before the closing cluster barrier and at its exit, with the
SM it ran on.

   python3 bench/timeline_probe.py build [OUTDIR]   (build machine: cake lower, patch, nvcc)
   PROBE=OUTDIR python3 bench/timeline_probe.py run  (GPU: writes $OUT/timeline.json, a table)
   (ONLY=a,b runs the kernels whose names hold one of those words; REPS, default 30)

The stamps are patched into `cake lower`'s output at markers of the generated code; a marker
that is missing stops the build with its name (the lowering changed: update the marker).

Every probed kernel is checked against the contract's oracle before its stamps count, and timed
(CUPTI, L2 flushed) beside the same source built without stamps, so the stamps' own cost shows.
"""
import json, os, re, shutil, subprocess, sys

# (name, schedule, constants, shape, stamp kind[, fields set on every tensor-map argument])
CONFIGS = [
    ("swapped-bk256-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1}, (8, 4096, 4096), "ws"),
    ("swapped-bk256-m1-4096", "examples/tinygemm_sm90.py", {"M": 1, "NW": 4096, "BK": 256, "TIGHT": 1}, (1, 4096, 4096), "ws"),
    ("swapped-bk256-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "BK": 256, "TIGHT": 1}, (8, 14336, 4096), "ws"),
    ("swapped-bk256-m8-2048x7168", "examples/tinygemm_sm90.py", {"M": 8, "NW": 2048, "BK": 256, "TIGHT": 1}, (8, 2048, 7168), "ws"),
    ("split-bk256-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1, "SPLIT_UPTO": 4096}, (8, 4096, 4096), "ws"),
    ("cpasync-bk256-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1, "CP_ASYNC": 1}, (8, 4096, 4096), "ws"),
    ("2persm-bk256-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "BK": 256, "TIGHT": 1, "PER_SM": 2}, (8, 14336, 4096), "ws"),
    ("persistent-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "TIGHT": 1, "PERSISTENT": 1}, (8, 14336, 4096), "ws"),
    ("streamk-m8-4096", "examples/tinygemm_streamk_sm90.py", {"M": 8, "NW": 4096}, (8, 4096, 4096), "ws"),
    # The weight's tensor map with other L2 promotions (the lowering asks for 256-byte).
    ("l2p128-bk256-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1}, (8, 4096, 4096), "ws", {"l2_promotion": 128}),
    ("l2p0-bk256-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1}, (8, 4096, 4096), "ws", {"l2_promotion": 0}),
    ("l2p128-bk256-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "BK": 256, "TIGHT": 1}, (8, 14336, 4096), "ws", {"l2_promotion": 128}),
    ("l2p0-bk256-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "BK": 256, "TIGHT": 1}, (8, 14336, 4096), "ws", {"l2_promotion": 0}),
    # Wider stages: 1 KB of each weight row per stage (BK = 512) in two or three stages.
    ("bk512x2-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 512, "RING_STAGES": 2, "TIGHT": 1}, (8, 4096, 4096), "ws"),
    ("bk512x3-m8-4096", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 512, "RING_STAGES": 3, "TIGHT": 1}, (8, 4096, 4096), "ws"),
    ("bk512x3-m8-14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 14336, "BK": 512, "RING_STAGES": 3, "TIGHT": 1}, (8, 14336, 4096), "ws"),
    ("bk512x3-m8-4096x14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 512, "RING_STAGES": 3, "TIGHT": 1}, (8, 4096, 14336), "ws"),
    ("swapped-bk256-m8-4096x14336", "examples/tinygemm_sm90.py", {"M": 8, "NW": 4096, "BK": 256, "TIGHT": 1}, (8, 4096, 14336), "ws"),
    ("gemv-m1-4096", "examples/gemv_sm90.py", {"K": 4096, "MT": 1}, (1, 4096, 4096), "rows"),
    ("gemv-m1-14336", "examples/gemv_sm90.py", {"K": 4096, "MT": 1}, (1, 14336, 4096), "rows"),
]
# Per CTA: entry, after the prologue barrier, first data, loop done, before the closing cluster
# barrier, exit; then the SM id and the cluster rank.
SLOTS = 8

NOW = "static __device__ __forceinline__ unsigned long long cake_probe_now() {\n" \
      "  unsigned long long t; asm volatile(\"mov.u64 %0, %globaltimer;\" : \"=l\"(t)); return t;\n}\n"


def _once(src, old, new, what):
    if src.count(old) < 1:
        raise SystemExit(f"probe: marker for {what} not found: {old!r}")
    return src.replace(old, new, 1)


def patch(src, kind, recorder):
    """The kernel source with stamps; `recorder`: the threadIdx.x that writes the CTA's record."""
    src = _once(src, 'extern "C" __global__', NOW + 'extern "C" __global__', "the kernel")
    src = re.sub(r"(extern \"C\" __global__[^{]*?)\) \{", r"\1,\n    long long* __restrict__ cake_probe) {", src, count=1)
    src = _once(src, "  const uint32_t cake_smem = (cake_smem_addr(cake_smem_raw) + 1023u) & ~1023u;\n",
                "  const uint32_t cake_smem = (cake_smem_addr(cake_smem_raw) + 1023u) & ~1023u;\n"
                "  unsigned long long cake_t[6] = {cake_probe_now(), 0, 0, 0, 0, 0};\n", "entry")
    if kind == "ws":
        sync = "  cake_cluster_sync();\n" if "  cake_cluster_sync();\n  const uint32_t cta_rank" in src else "  __syncthreads();\n"
        src = _once(src, sync, sync + "  cake_t[1] = cake_probe_now();\n", "prologue")
        i = src.index("// role math")
        j = src.index("// wait full", i)
        j = src.index("\n", j) + 1
        src = src[:j] + "        if (pipe_it == 0) cake_t[2] = cake_probe_now();\n" + src[j:]
        src = _once(src, "      cake_wgmma_wait<0>();  // every MMA of the loop has retired\n",
                    "      cake_wgmma_wait<0>();  // every MMA of the loop has retired\n      cake_t[3] = cake_probe_now();\n", "loop end")
        tail = "  cake_cluster_sync();\n}"
        if not src.rstrip().endswith(tail):
            tail = None
        rank = "cta_rank" if "const uint32_t cta_rank" in src else "0u"
    else:
        src = _once(src, "      float red2_v[2];", "      cake_t[1] = cake_t[0]; cake_t[2] = cake_t[3] = cake_probe_now();\n      float red2_v[2];", "data")
        tail = None
        rank = "0u"
    record = (f"  if (threadIdx.x == {recorder}) {{\n"
              "    unsigned int smid; asm volatile(\"mov.u32 %0, %smid;\" : \"=r\"(smid));\n"
              "    long long* r = cake_probe + (size_t)blockIdx.x * 8;\n"
              "    for (int i = 0; i < 6; ++i) r[i] = (long long)cake_t[i];\n"
              f"    r[6] = smid; r[7] = {rank};\n  }}\n")
    if tail:
        k = src.rindex(tail)
        src = src[:k] + "  cake_t[4] = cake_probe_now();\n" + tail[:-1] + "  cake_t[5] = cake_probe_now();\n" + record + "}" + src[k + len(tail):]
    else:
        # No closing cluster barrier: the end of the roles' tile loops is the end of the kernel.
        k = src.rindex("\n}")
        src = src[:k] + "\n  cake_t[4] = cake_t[5] = cake_probe_now();\n" + record.rstrip("\n") + src[k:]
    return src


def build(outdir):
    cake = os.environ.get("CAKE", "target/release/cake")
    nvcc = os.environ.get("NVCC", os.path.join(os.environ.get("CUDA_HOME", ""), "bin", "nvcc"))
    shutil.rmtree(outdir, ignore_errors=True); os.makedirs(outdir)
    for name, schedule, consts, shape, kind, *tmap in CONFIGS:
        text = open(schedule).read()
        for k, v in consts.items():
            text, n = re.subn(rf"^{k} = .*$", f"{k} = {v}", text, count=1, flags=re.M)
            assert n == 1, f"{schedule} has no constant {k}"
        tmp = os.path.join(outdir, f"{name}.py")
        open(tmp, "w").write(text)
        cu = subprocess.run([cake, "lower", tmp, "--target", "sm_90a"], check=True, capture_output=True, text=True).stdout
        launch = json.loads(subprocess.run([cake, "lower", tmp, "--target", "sm_90a", "--launch"], check=True, capture_output=True, text=True).stdout)
        for arg in launch["args"]:
            if arg["kind"] == "tensormap" and tmap:
                arg.update(tmap[0])
        recorder = 128 if kind == "ws" else 0
        for variant, source in (("plain", cu), ("probed", patch(cu, kind, recorder))):
            d = os.path.join(outdir, f"{name}.{variant}"); os.makedirs(d)
            open(os.path.join(d, "k.cu"), "w").write(source)
            subprocess.run([nvcc, "-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-O3", "-std=c++17",
                            "-o", os.path.join(d, "k.cubin"), os.path.join(d, "k.cu")], check=True)
            meta = dict(launch, cubin="k.cubin")
            if variant == "probed":
                meta["tensors"] = launch["tensors"] + [{"name": "P", "dtype": "i64", "dims": ["PN"], "access": "write"}]
                meta["args"] = launch["args"] + [{"kind": "ptr", "tensor": "P"}]
            json.dump(meta, open(os.path.join(d, "k.launch.json"), "w"), indent=1)
        json.dump({"name": name, "shape": shape, "kind": kind}, open(os.path.join(outdir, f"{name}.json"), "w"))
        print("built", name, flush=True)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))]


def run():
    import statistics
    import torch
    sys.path.insert(0, "kernels/gemm")
    import contract as C
    import cake
    from cake.harness import timing
    probe_dir = os.environ.get("PROBE", ".carry/probe")
    out = os.environ.get("OUT", "out"); os.makedirs(out, exist_ok=True)
    reps = int(os.environ.get("REPS", "30"))
    dev = torch.device("cuda")
    flush = timing.make_flush_buffer(torch, torch.cuda.get_device_properties(0).L2_cache_size, dev)
    results = []
    only = [w for w in os.environ.get("ONLY", "").split(",") if w]   # names holding one of these
    for cfg in sorted(f for f in os.listdir(probe_dir) if f.endswith(".json")):
        if only and not any(w in cfg for w in only):
            continue
        info = json.load(open(os.path.join(probe_dir, cfg)))
        name, (M, N, K) = info["name"], info["shape"]
        plain = cake.load_kernel(os.path.join(probe_dir, f"{name}.plain"))
        probed = cake.load_kernel(os.path.join(probe_dir, f"{name}.probed"))
        g = torch.Generator(device=dev); g.manual_seed(M * 100003 + N + K)
        ins = C.make_inputs({"M": M, "N": N, "K": K}, "normal", g)
        ref = C.oracle(**ins)["C"].float()
        P = torch.zeros(1 << 16, dtype=torch.int64, device=dev)
        rec = {"name": name, "M": M, "N": N, "K": K}
        outs = {}
        for v, k, extra in (("plain", plain, {}), ("probed", probed, {"P": P})):
            o = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device=dev)
            k(**ins, C=o, **extra); torch.cuda.synchronize()
            rec[f"{v}_correct"] = bool(torch.allclose(o.float(), ref, rtol=0.02, atol=0.02))
            outs[v] = o
        if not (rec["plain_correct"] and rec["probed_correct"]):
            results.append(rec); print(name, "WRONG", flush=True); continue
        spans = timing.time_cupti_interleaved(torch, [lambda: plain(**ins, C=outs["plain"]),
                                                      lambda: probed(**ins, C=outs["probed"], P=P)], reps, flush)
        rec["plain_us"] = statistics.median(spans[0].spans_ms) * 1e3
        rec["probed_us"] = statistics.median(spans[1].spans_ms) * 1e3
        runs = []
        for _ in range(reps):
            P.zero_(); timing.flush_l2(flush); torch.cuda.synchronize()
            probed(**ins, C=outs["probed"], P=P); torch.cuda.synchronize()
            t = P.view(-1, SLOTS).cpu()
            t = t[t[:, 0] != 0]
            runs.append(t.tolist())
        rec["ctas"] = len(runs[0])
        keys = ["skew_p50", "skew_max", "prologue", "first_data", "stream", "epilogue", "exit_sync",
                "cta_life", "inside_span", "exit_spread"]
        per = {k: [] for k in keys}
        for t in runs:
            t0 = min(r[0] for r in t)
            ends = [r[5] for r in t]
            per["skew_p50"].append(pct([r[0] - t0 for r in t], 0.5))
            per["skew_max"].append(max(r[0] - t0 for r in t))
            per["prologue"].append(pct([r[1] - r[0] for r in t], 0.5))
            per["first_data"].append(pct([r[2] - r[1] for r in t], 0.5))
            per["stream"].append(pct([r[3] - r[2] for r in t], 0.5))
            per["epilogue"].append(pct([r[4] - r[3] for r in t], 0.5))
            per["exit_sync"].append(pct([r[5] - r[4] for r in t], 0.5))
            per["cta_life"].append(pct([r[5] - r[0] for r in t], 0.5))
            per["inside_span"].append(max(ends) - t0)
            per["exit_spread"].append(max(ends) - pct(ends, 0.5))
        for k in keys:
            rec[k + "_ns"] = statistics.median(per[k])
        rec["ctas_per_sm_max"] = max(sum(1 for r in runs[0] if r[6] == s) for s in {r[6] for r in runs[0]})
        rec["sms"] = len({r[6] for r in runs[0]})
        if len(runs[0]) <= 512:   # one run's stamps, where they are few enough to keep
            rec["sample"] = runs[len(runs) // 2]
        results.append(rec)
        print(name, "done", flush=True)
    json.dump(results, open(os.path.join(out, "timeline.json"), "w"), separators=(",", ":"))
    cols = ["plain_us", "probed_us", "ctas", "sms", "ctas_per_sm_max", "skew_p50_ns", "skew_max_ns", "prologue_ns",
            "first_data_ns", "stream_ns", "epilogue_ns", "exit_sync_ns", "cta_life_ns", "inside_span_ns", "exit_spread_ns"]
    print("\n" + " ".join(f"{c[:-3] if c.endswith('_ns') else c:>12}" for c in ["name"] + cols))
    for r in results:
        if "plain_us" not in r:
            print(f"{r['name']:>28} WRONG"); continue
        cells = [f"{r[c]:12.2f}" if c.endswith("_us") else f"{r[c]:12.0f}" for c in cols]
        print(f"{r['name'][:28]:>28} " + " ".join(cells))


if __name__ == "__main__":
    if sys.argv[1:2] == ["build"]:
        build(sys.argv[2] if len(sys.argv) > 2 else ".carry/probe")
    elif sys.argv[1:2] == ["run"]:
        run()
    else:
        raise SystemExit(__doc__)
