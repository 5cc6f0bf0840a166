"""`python -m cake.calibrate`: run the cost model's calibration probes on this GPU.

`cake calibrate --target sm_90a -o FILE` starts this module; it writes the raw measurements
(`cake.calibrate/v0` JSON) and the Rust side derives the calibration table from them
(crates/cake-cost, docs/cost-model.md). Each probe is a Cake schedule in kernels/calibrate/
whose module-level constants are substituted (`substitute_constants`), compiled with
`cake.compile`, and timed like the harness times candidates (L2 flushed before each sample,
CUDA events, median). Every probe runs in its own child process with a timeout, so a probe that
fails or hangs is recorded as such and the others still run.

Probes (name: schedule, constants, shape → what it measures):
  dram_stream: stream.py, 8 tiles per SM, K = 4096 → bytes ÷ time = DRAM rate (dram_gbps)
  l2_stream:   stream.py with REUSE = 8 (8 row blocks, 2 MiB) → L2 rate (l2_gbps)
  tma_latency: stream.py, 1 CTA, STAGES = 1 → µs per iteration (tma_latency_us)
  barrier:     stream.py, 1 CTA, STAGES = 8, L2-resident → µs per iteration (barrier_us, an upper bound)
  wgmma:       wgmma.py, 12 tiles per SM, REPS = 2048 → FLOP/s (mma_tflops_16bit, and N = 256 of
               [mma_tflops_16bit_by_n]). 12 tiles per SM are whole waves at 2, 3, 4 or 6 CTAs
               per SM, however many the N's registers let reside: a last wave of one CTA per
               SM would time one dependent chain's latency, not the rate
  wgmma_n64, wgmma_n128, wgmma_n192: wgmma.py with BN = 64, 128, 192 → the per-N table
               [mma_tflops_16bit_by_n]
  wgmma_fp8:   wgmma.py with FP8 = 1 (e4m3 tiles 128 deep), 12 tiles per SM → FLOP/s
               (mma_tflops_8bit)
  wgmma_chain_n64, _n128, _n256: wgmma.py, one tile per SM → what one warpgroup's dependent
               MMAs draw from an SM's tensor cores ([mma_chain_tflops_16bit_by_n])
  stream_bm<BM>_s<S>: stream.py with REUSE = 8 at BM in {64, 128, 256} x STAGES in {1, 2, 4}, 8
               tiles of 128 rows per SM, one CTA per SM → L2 rate by box and depth
               ([tma_stream_gbps]; BM = 128, 4 stages is l2_stream); the Rust side derives the
               loaded TMA latency from it (Little's law)
  dram_bk<BK>_s<S>: stream.py from DRAM with 64-row boxes BK wide (BK / 64 swizzle panels per
               stage) in S stages, one CTA per SM → the DRAM rate by the contiguous bytes a
               stage asks of each row and the bytes in flight. Nothing in the table derives
               from them: they check the model's assumption that the DRAM rate depends on
               neither beyond ~64 KB in flight per SM (docs/cost-model.md)
  sm_stream:   stream.py, BM = 64, 16 stages, from DRAM, 16 CTAs (one per SM), K = 65536 → bytes ÷
               time ÷ 16: what one SM's TMA copies draw at most when few SMs stream (sm_dram_gbps)
  named_barrier: named_barrier.py, one CTA of two warpgroups, REPS = 65536 syncs → µs per
               `bar.sync` (named_barrier_us)
  alu:         alu.py, 2 CTAs (8 warps) per SM, REPS = 2048 → element operations/s (alu_gops_per_sm)
  alu_minmax:  alu.py with MINMAX = 1, minimum and maximum only → their rate over
               alu_gops_per_sm (alu_int_ratio)
  store, tma_store: store.py, C of 262144 x 256 bf16 → bytes/s (store_gbps, tma_store_gbps)
  launch:      store.py (store_direct), one CTA → time of a near-empty launch (launch_us)
  empty_span:  atomic.py, one CTA of 16 rows → its span under CUPTI (kernel_span_us): what a
               kernel that loads and adds a few rows spans on the GPU
  cluster_span: atomic.py with CLUSTER = 2, one cluster of two such CTAs → its CUPTI span less
               empty_span's (cluster_start_us): what a cluster launch adds
  atomic_mid, atomic_spread, atomic_contended, atomic_contended64: atomic.py, N = 1M rows of
               128 columns added into K rows drawn uniformly: K = N / 1024 (512 KiB of sums, in
               L2) → adds per second (red_gops); K = N (512 MiB) → adds per second from DRAM
               (red_dram_gops); K = 1 (32 destinations) → the contended rate
               (red_contended_gops); K = 64 (2048) → how the rate grows with the destinations
               (red_contention_exponent)
  cluster_c2, _c4, _c8: stream.py with CLUSTER = n and a 192 KiB ring (one CTA per SM) → not
               timed: the driver's clusters of n at once (Kernel.residency) × n, the CTAs that
               run at once ([cluster_ctas]; a cluster's CTAs share a GPC)
  memset:      atomic.py with ZERO = 1, 16 rows into K = 1M zero-filled rows → the fill rate
               (memset_gbps)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional

SCHEMA = "cake.calibrate/v0"
ATOMIC_ROWS = 1 << 20  # rows of the atomic probes (and K of the spread one)
SM_STREAM_CTAS = 16  # SMs streaming in the sm_stream probe: few enough that DRAM is not the limit
SAMPLES = 30
WARMUP = 5

_CONST = re.compile(r"^([A-Z][A-Z0-9_]*(?:\s*,\s*[A-Z][A-Z0-9_]*)*)\s*=\s*(.+?)(\s*#.*)?$")


def module_constants(text: str) -> Dict[str, str]:
    """The module-level `NAME = value` (and `A, B = x, y`) assignments of a schedule, as text."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        m = _CONST.match(line)
        if not m:
            continue
        names = [n.strip() for n in m.group(1).split(",")]
        values = [v.strip() for v in m.group(2).split(",")] if len(names) > 1 else [m.group(2).strip()]
        if len(values) != len(names):
            continue
        out.update(zip(names, values))
    return out


def substitute_constants(text: str, values: Dict[str, Any]) -> str:
    """`text` with the module-level constants in `values` replaced (tuple assignments too).
    Raises KeyError when a name is not a module constant of the file."""
    missing = set(values) - set(module_constants(text))
    if missing:
        raise KeyError(f"not module constants: {', '.join(sorted(missing))}")
    lines = []
    for line in text.splitlines(keepends=True):
        m = _CONST.match(line.rstrip("\n"))
        if m:
            names = [n.strip() for n in m.group(1).split(",")]
            if any(n in values for n in names):
                old = module_constants(line)
                new = [str(values.get(n, old[n])) for n in names]
                comment = m.group(3) or ""
                line = f"{', '.join(names)} = {', '.join(new)}{comment}\n"
        lines.append(line)
    return "".join(lines)


def probes(sms: int) -> List[Dict[str, Any]]:
    """The probe table for a GPU with `sms` SMs."""
    stream_m = 8 * sms * 128
    # Whole waves whatever the occupancy (2, 3, 4 or 6 CTAs per SM): until 2026-12-03 this was
    # 4 tiles per SM, and BN = 128 (144 registers, 3 CTAs per SM) ran a second wave of one CTA
    # per SM, which measured it slower per flop than BN = 64 and 256.
    wg_m = 12 * sms * 64
    return [
        dict(name="dram_stream", schedule="stream", kernel="stream", consts={},
             dims=dict(M=stream_m, K=4096), work=dict(bytes=stream_m * 4096 * 2)),
        dict(name="l2_stream", schedule="stream", kernel="stream", consts=dict(REUSE=8),
             dims=dict(M=stream_m, K=4096), work=dict(bytes=stream_m * 4096 * 2)),
        dict(name="tma_latency", schedule="stream", kernel="stream", consts=dict(STAGES=1, BM=64),
             dims=dict(M=64, K=64 * 2048), work=dict(iterations=2048)),
        dict(name="barrier", schedule="stream", kernel="stream", consts=dict(STAGES=8, BM=64, REUSE=1),
             dims=dict(M=64, K=64 * 4096), work=dict(iterations=4096)),
        dict(name="wgmma", schedule="wgmma", kernel="wgmma", consts={},
             dims=dict(M=wg_m, REPS=2048), work=dict(flops=2 * wg_m * 256 * 64 * 2048), group="wgmma"),
        *[dict(name=f"wgmma_n{n}", schedule="wgmma", kernel="wgmma", consts=dict(BN=n),
               dims=dict(M=wg_m, REPS=2048), work=dict(flops=2 * wg_m * n * 64 * 2048), group="wgmma")
          for n in (64, 128, 192)],
        # e4m3 tiles 128 deep: the FP8 rate (mma_tflops_8bit), N = 256.
        dict(name="wgmma_fp8", schedule="wgmma", kernel="wgmma", consts=dict(FP8=1),
             dims=dict(M=wg_m, REPS=2048), work=dict(flops=2 * wg_m * 256 * 128 * 2048), group="wgmma"),
        # One tile per SM: a single warpgroup's chain of dependent MMAs on one accumulator,
        # the most a lone consumer warpgroup gets from the tensor cores
        # ([mma_chain_tflops_16bit_by_n]).
        *[dict(name=f"wgmma_chain_n{n}", schedule="wgmma", kernel="wgmma", consts=dict(BN=n),
               dims=dict(M=sms * 64, REPS=2048), work=dict(flops=2 * sms * 64 * n * 64 * 2048),
               group="wgmma")
          for n in (64, 128, 256)],
        *[dict(name=f"stream_bm{bm}_s{st}", schedule="stream", kernel="stream",
               consts=dict(BM=bm, STAGES=st, REUSE=8), dims=dict(M=stream_m, K=4096),
               work=dict(bytes=stream_m * 4096 * 2), group="stream_table")
          for bm in (64, 128, 256) for st in (1, 2, 4) if (bm, st) != (128, 4)],
        # From DRAM, one CTA per SM, 64-row boxes BK wide: the DRAM rate by the bytes each
        # stage asks of a row (BK * 2) and the bytes in flight (STAGES * 64 * BK * 2).
        *[dict(name=f"dram_bk{bk}_s{st}", schedule="stream", kernel="stream",
               consts=dict(BM=64, BK=bk, STAGES=st), dims=dict(M=stream_m, K=4096),
               work=dict(bytes=stream_m * 4096 * 2), group="dram_width")
          for bk, stages in ((64, (4, 8, 12, 16, 24)), (128, (2, 4, 6, 8, 12)),
                             (256, (2, 3, 4, 6)), (512, (2, 3)))
          for st in stages],
        dict(name="sm_stream", schedule="stream", kernel="stream", consts=dict(BM=64, STAGES=16),
             dims=dict(M=64 * SM_STREAM_CTAS, K=65536),
             work=dict(bytes=64 * SM_STREAM_CTAS * 65536 * 2, ctas=SM_STREAM_CTAS)),
        dict(name="named_barrier", schedule="named_barrier", kernel="named_barrier", consts={},
             dims=dict(M=256, REPS=65536), work=dict(iterations=65536)),
        # Two CTAs (eight warps) per SM: the occupancy of the usual two consumer warpgroups.
        dict(name="alu", schedule="alu", kernel="alu", consts={},
             dims=dict(M=2 * sms * 64, REPS=2048), work=dict(ops=3 * 2 * sms * 64 * 256 * 2048)),
        dict(name="alu_minmax", schedule="alu", kernel="alu", consts=dict(MINMAX=1),
             dims=dict(M=2 * sms * 64, REPS=2048), work=dict(ops=2 * 2 * sms * 64 * 256 * 2048)),
        dict(name="store", schedule="store", kernel="store_direct", consts={},
             dims=dict(M=262144), work=dict(bytes=262144 * 256 * 2)),
        dict(name="tma_store", schedule="store", kernel="store_tma", consts={},
             dims=dict(M=262144), work=dict(bytes=262144 * 256 * 2)),
        dict(name="launch", schedule="store", kernel="store_direct", consts={},
             dims=dict(M=64), work={}),
        dict(name="empty_span", schedule="atomic", kernel="atomic", consts={},
             dims=dict(N=16, K=16), ids="uniform", work={}, span=True),
        dict(name="cluster_span", schedule="atomic", kernel="atomic", consts=dict(CLUSTER=2),
             dims=dict(N=32, K=16), ids="uniform", work={}, span=True),
        *[dict(name=f"atomic_{name}", schedule="atomic", kernel="atomic", consts={},
               dims=dict(N=ATOMIC_ROWS, K=k), ids="uniform",
               work=dict(reds=ATOMIC_ROWS * 128 // 4, per_target=ATOMIC_ROWS / k), group="atomic")
          for name, k in (("spread", ATOMIC_ROWS), ("contended", 1), ("contended64", 64),
                          ("mid", ATOMIC_ROWS // 1024))],
        *[dict(name=f"cluster_c{n}", schedule="stream", kernel="stream",
               consts=dict(BM=256, STAGES=6, CLUSTER=n), dims={}, work={}, residency=True, group="cluster")
          for n in (2, 4, 8)],
        dict(name="memset", schedule="atomic", kernel="atomic", consts=dict(ZERO=1),
             dims=dict(N=16, K=ATOMIC_ROWS), ids="uniform", work=dict(bytes=ATOMIC_ROWS * 128 * 4),
             group="atomic"),
    ]


def _tensors(torch: Any, kernel: Any, dims: Dict[str, int], ids: Optional[str] = None) -> Dict[str, Any]:
    """Fresh random inputs (never zeros) for every tensor parameter, by launch.json's dims;
    with `ids="uniform"`, the tensor IDS holds indices drawn uniformly from [0, K)."""
    specs = kernel.meta["tensors"]
    out = {}
    g = torch.Generator(device="cuda").manual_seed(1234)
    for t in specs:
        shape = [d if isinstance(d, int) else dims[d] for d in t["dims"]]
        dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32,
                 "i32": torch.int32, "e4m3": torch.float8_e4m3fn}[t["dtype"]]
        if ids == "uniform" and t["name"] == "IDS":
            out[t["name"]] = torch.randint(0, dims["K"], shape, device="cuda", generator=g, dtype=dtype)
            continue
        if dtype.is_floating_point:
            x = torch.randn(*shape, device="cuda", generator=g).to(dtype)
        else:
            x = torch.randint(0, 7, shape, device="cuda", generator=g, dtype=dtype)
        out[t["name"]] = x
    return out


def probe_source(p: Dict[str, Any], schedules: str) -> str:
    """The probe's schedule text with its constants substituted."""
    with open(os.path.join(schedules, p["schedule"] + ".py"), encoding="utf-8") as fh:
        text = fh.read()
    return substitute_constants(text, p["consts"]) if p["consts"] else text


def build_probes(table: List[Dict[str, Any]], schedules: str, target: str, cake_bin: str,
                 work: str) -> Dict[str, str]:
    """Build every distinct probe schedule with `cake build`, in parallel: probe name → launch.json
    (probes whose build failed are left out; their child reports the compile error)."""
    import concurrent.futures as cf
    import hashlib

    jobs: Dict[str, Dict[str, Any]] = {}
    for p in table:
        text = probe_source(p, schedules)
        key = p["schedule"] + "-" + hashlib.sha256(text.encode()).hexdigest()[:12]
        jobs.setdefault(key, dict(text=text, schedule=p["schedule"], probes=[]))["probes"].append(p)

    def one(item):
        key, job = item
        d = os.path.join(work, key)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, job["schedule"] + ".py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(job["text"])
        r = subprocess.run([cake_bin, "build", path, "--target", target, "-o", os.path.join(d, "build")],
                           capture_output=True, text=True, timeout=300)
        return key, (os.path.join(d, "build") if r.returncode == 0 else None)

    out: Dict[str, str] = {}
    with cf.ThreadPoolExecutor(max_workers=8) as ex:
        for key, built in ex.map(one, jobs.items()):
            for p in jobs[key]["probes"]:
                if built:
                    out[p["name"]] = os.path.join(built, p["kernel"] + ".launch.json")
    return out


def run_probe(p: Dict[str, Any], schedules: str, target: str, samples: int,
              launch: Optional[str] = None) -> Dict[str, Any]:
    """Time one probe in this process: its prebuilt kernel (`launch`), or compiled here."""
    import torch

    import cake
    from cake.harness.stats import summarize
    from cake.harness.timing import make_flush_buffer, time_cupti, time_events

    if launch:
        k = cake.load_kernel(launch)
    else:
        d = tempfile.mkdtemp(prefix="cake-calibrate-")
        path = os.path.join(d, p["schedule"] + ".py")
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(probe_source(p, schedules))
        k = cake.compile(path, target)[p["kernel"]]
    cfg = ", ".join(f"{n}={v}" for n, v in {**p["consts"], **p["dims"]}.items())
    if p.get("residency"):  # not launched: how its CTAs fit, as the driver says
        return dict(schedule=p["schedule"], kernel=p["kernel"], config=cfg, **k.residency())
    args = _tensors(torch, k, p["dims"], p.get("ids"))
    props = torch.cuda.get_device_properties(0)
    flush = make_flush_buffer(torch, getattr(props, "L2_cache_size", None), "cuda")
    k(**args)
    torch.cuda.synchronize()
    times = time_events(torch, lambda: k(**args), WARMUP, samples, flush)
    s = summarize(times)
    out = dict(schedule=p["schedule"], kernel=p["kernel"], config=cfg, samples=samples,
               median_ms=s["median"], stats=s, **p["work"])
    if p.get("span"):
        # The kernel's span on the GPU as CUPTI sees it (what the harness's medians are).
        spans = time_cupti(torch, lambda: k(**args), samples, flush).spans_ms
        out["span_median_ms"] = summarize(spans)["median"]
    return out


def environment() -> Dict[str, Any]:
    import torch

    props = torch.cuda.get_device_properties(0)
    env: Dict[str, Any] = dict(gpu=props.name, sm_count=props.multi_processor_count,
                               l2_bytes=getattr(props, "L2_cache_size", None), torch=torch.__version__)
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm",
                            "--format=csv,noheader,nounits", "-i", "0"],
                           capture_output=True, text=True, timeout=20).stdout.strip().split(",")
        env["driver"] = q[0].strip()
        env["clock_max_mhz"] = float(q[1])
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        env["nvidia_smi_error"] = str(e)
    return env


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m cake.calibrate", description=__doc__.split("\n")[0])
    ap.add_argument("--target", default="sm_90a")
    ap.add_argument("--schedules", default="kernels/calibrate")
    ap.add_argument("--out", required=True)
    ap.add_argument("--cake", help="the cake binary (informational)")
    ap.add_argument("--samples", type=int, default=SAMPLES)
    ap.add_argument("--timeout", type=float, default=45.0, help="seconds per probe")
    ap.add_argument("--only", action="append", help="run only these probes")
    ap.add_argument("--probe", help=argparse.SUPPRESS)  # child mode: one probe, JSON on stdout
    ap.add_argument("--launch", help=argparse.SUPPRESS)  # child mode: the probe's prebuilt kernel
    a = ap.parse_args(argv)
    if a.probe:
        # Child mode: `--probe a,b` with `--launch x,y` (or none) runs each probe in this process
        # and prints one JSON object of name → result (a probe that fails gets its error).
        import torch

        table = {p["name"]: p for p in probes(torch.cuda.get_device_properties(0).multi_processor_count)}
        names = a.probe.split(",")
        launches = a.launch.split(",") if a.launch else [""] * len(names)
        out: Dict[str, Any] = {}
        for name, launch in zip(names, launches):
            try:
                out[name] = run_probe(table[name], a.schedules, a.target, a.samples, launch or None)
            except Exception as e:  # noqa: BLE001 - recorded, the other probes still run
                out[name] = dict(error=f"{type(e).__name__}: {e}"[-2000:])
            print(json.dumps({name: out[name]}), flush=True)
        return 0
    env = environment()
    results: Dict[str, Any] = {}
    table = [p for p in probes(int(env["sm_count"])) if not a.only or p["name"] in a.only]
    # Build every probe up front, in parallel, when the cake binary is known; a child then only
    # loads its cubin (without it, each child compiles its probe with cake.compile).
    launches = build_probes(table, a.schedules, a.target, a.cake, tempfile.mkdtemp(prefix="cake-calibrate-")) \
        if a.cake and os.path.exists(a.cake) else {}
    # Probes of one `group` share a child process (one CUDA start-up for the table probes).
    groups: List[List[Dict[str, Any]]] = []
    for p in table:
        g = next((g for g in groups if p.get("group") and g[0].get("group") == p["group"]), None)
        if g is None:
            groups.append([p])
        else:
            g.append(p)
    for g in groups:
        names = [p["name"] for p in g]
        cmd = [sys.executable, "-m", "cake.calibrate", "--probe", ",".join(names), "--target", a.target,
               "--schedules", a.schedules, "--out", "-", "--samples", str(a.samples)]
        if all(n in launches for n in names):
            cmd += ["--launch", ",".join(launches[n] for n in names)]
        timeout = a.timeout + 10.0 * (len(g) - 1)
        stdout, err = "", None
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
            stdout = r.stdout
            if r.returncode != 0:
                err = (r.stderr or r.stdout)[-2000:]
        except subprocess.TimeoutExpired as e:
            stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = f"timed out after {timeout} s"
        for line in stdout.strip().splitlines():
            try:
                results.update(json.loads(line))
            except ValueError:
                pass
        for n in names:
            results.setdefault(n, dict(error=err or "no result"))
            status = results[n].get("median_ms")
            if status is None and "resident_ctas" in results[n]:
                print(f"probe {n:<18} {results[n]['resident_ctas']} CTAs at once", file=sys.stderr, flush=True)
                continue
            print(f"probe {n:<18} " + (f"{status:.4f} ms" if status is not None else
                  "FAILED: " + (results[n]["error"].strip().splitlines() or ["?"])[-1][:200]),
                  file=sys.stderr, flush=True)
    doc = dict(schema=SCHEMA, target=a.target, date=datetime.date.today().isoformat(),
               commit=os.environ.get("COMMIT"), environment=env, probes=results)
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
