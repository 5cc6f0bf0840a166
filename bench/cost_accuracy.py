#!/usr/bin/env python3
"""Cost-model accuracy: predicted (`cake cost`) against measured time for schedule variants.

Variants are generated from the corpus schedules by substituting module-level constants (and,
for the consumer count and persistence, the role and decorator text): GEMM (BN, stages,
consumer warpgroups, persistent or not) at two shapes, k-means assign (centroids per stage,
stages, two or three consumer warpgroups), attention (the deferral and the turns on or off,
stages, key tile, the lazy rescale, consumer warpgroups; D 64 and 128) at two shapes. Only variants that `cake check` accepts are kept;
the rest are listed with the reason.

On the GPU each variant is built (`cake build`, in parallel), checked against torch on a small
shape (a variant that fails is reported, not timed), then timed at the bench shape with the
harness's protocol (L2 flushed, CUDA events, median). The GPU work runs in one child process
that reports one JSON line per variant; the parent gives each variant a deadline and restarts
the child after a hang or crash, so one bad variant never ends the run.

  bench/cost_accuracy.py --cake dist/cake --calibration out/sm_90a.toml --out FILE   # GPU host
  bench/cost_accuracy.py --cake target/debug/cake --dry-run                            # CPU: variants + predictions

Writes Spearman's rho and the median absolute relative error (overall and per family).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import math
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from cake.calibrate import substitute_constants  # noqa: E402

GEMM_SHAPES = [dict(M=4096, N=7168, K=4096), dict(M=4096, N=4096, K=4096)]
KMEANS_SHAPES = [dict(B=32, N=65536, K=1024)]
SAMPLES = 30
WARMUP = 5
FIRST_GRACE_S = 30.0  # extra time for the first variant of a child: torch's import, CUDA init


# ---------------------------------------------------------------------------------------------
# Variants

def gemm_variants() -> List[Dict[str, Any]]:
    text = open(os.path.join(ROOT, "examples/gemm_sm90.py"), encoding="utf-8").read()
    out = []
    for consumers in (1, 2, 3):
        for bn in (128, 256):
            for stages in (2, 3, 4):
                for persistent in (True, False):
                    if consumers == 3 and bn == 256:
                        continue  # 3 x 64 x 256 f32 accumulators do not fit a 152-register budget
                    t = substitute_constants(text, dict(BM=64 * consumers, BN=bn, STAGES=stages))
                    wgs = ", ".join(str(i + 1) for i in range(consumers))
                    regs = {1: 232, 2: 232, 3: 152}[consumers]
                    t = t.replace("math = lm.role(warpgroups=[1, 2], regs=232)",
                                  f"math = lm.role(warpgroups=[{wgs}], regs={regs})")
                    if not persistent:
                        t = t.replace("persistent=True", "persistent=False")
                    name = f"gemm-c{consumers}-bn{bn}-s{stages}-{'p' if persistent else 'np'}"
                    out.append(dict(name=name, family="gemm", kernel="gemm", text=t, shapes=GEMM_SHAPES))
    # A deeper K step: 128 columns per stage (two 64-column panels per row).
    for bn, stages in ((128, 2), (128, 3), (256, 2)):
        t = substitute_constants(text, dict(BN=bn, BK=128, STAGES=stages))
        out.append(dict(name=f"gemm-c2-bn{bn}-bk128-s{stages}-p", family="gemm", kernel="gemm", text=t,
                        shapes=GEMM_SHAPES))
    return out


def kmeans_variants() -> List[Dict[str, Any]]:
    out = []
    for consumers, path in ((3, "examples/kmeans_assign_sm90.py"),
                            (2, "kernels/kmeans/variants/kmeans_assign_2wg_sm90.py")):
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        # BC 96 and 192 joined on 2026-12-03, after the model's last change: variants no
        # version of the model was fitted or judged on.
        for bc in (64, 96, 128, 192, 256):
            for stages in (2, 3, 4):
                t = substitute_constants(text, dict(BC=bc, STAGES=stages))
                out.append(dict(name=f"kmeans-c{consumers}-bc{bc}-s{stages}", family="kmeans",
                                kernel="kmeans_assign", text=t, shapes=KMEANS_SHAPES))
    return out


ATTENTION_SHAPES = [dict(BH=128, BHKV=128, S=8192), dict(BH=64, BHKV=8, S=4096)]


def attention_variants() -> List[Dict[str, Any]]:
    """The attention example (non-causal) at D 64 and 128: as shipped, without the deferral or
    the turns (or both), three stages, 160/176/192/208-key tiles, the lazy rescale and (D 64)
    two consumer warpgroups instead of three."""
    text = open(os.path.join(ROOT, "examples/attention_sm90.py"), encoding="utf-8").read()
    edits = {
        "shipped": ({}, []),
        "nodefer": ({}, [(", defer=True)", ")")]),
        "noturns": ({}, [(", turns=True)", ")")]),
        "plain": ({}, [(", defer=True)", ")"), (", turns=True)", ")")]),
        "s3": (dict(STAGES=3), []),
        "bn176": (dict(BN=176), []),
        "bn192": (dict(BN=192), []),
        "bn160": (dict(BN=160), []),
        "bn208": (dict(BN=208), []),
        "lazy": (dict(LAZY=1), []),
        "wg2": (dict(CONSUMERS=2), []),
        # Joined on 2026-12-03, after the model's last change (warpgroups whose element-wise
        # results feed an MMA overlap): variants no version of the model was fitted or judged on.
        "wg2-nodefer": (dict(CONSUMERS=2), [(", defer=True)", ")")]),
        "bn96": (dict(BN=96), []),
        "bn144": (dict(BN=144), []),
    }
    out = []
    for d in (64, 128):
        for name, (consts, repl) in edits.items():
            if name in ("wg2", "wg2-nodefer") and d != 64:
                continue
            if name in ("bn176", "bn208") and d == 64:
                continue
            t = substitute_constants(text, dict(D=d, **consts))
            for a, b in repl:
                assert a in t, a
                t = t.replace(a, b)
            out.append(dict(name=f"attention-d{d}-{name}", family="attention", kernel="attention",
                            text=t, shapes=ATTENTION_SHAPES, head_dim=d))
    return out


def shape_text(s: Dict[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in s.items())


def run(cmd: List[str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def prepare(variants: List[Dict[str, Any]], cake: str, work: str, calibration: Optional[str]) -> None:
    """Write each variant, check it, and predict it at each of its shapes."""
    for v in variants:
        v["path"] = os.path.join(work, v["name"] + ".py")
        with open(v["path"], "w", encoding="utf-8") as fh:
            fh.write(v["text"])
        r = run([cake, "check", v["path"], "--target", "sm_90a", "--format", "json"])
        if r.returncode != 0:
            try:
                doc = json.loads(r.stdout)
                errs = [f["code"] + ": " + f["message"] for f in doc.get("findings", [])
                        if f.get("severity") == "error"]
            except ValueError:
                errs = [r.stderr.strip()]
            v["rejected"] = "; ".join(errs)[:300] or "check failed"
            continue
        v["predicted_us"] = {}
        for s in v["shapes"]:
            cmd = [cake, "cost", v["path"], "--target", "sm_90a", "--shape", shape_text(s), "--format", "json"]
            if calibration:
                cmd += ["--calibration", calibration]
            r = run(cmd)
            if r.returncode == 0:
                e = json.loads(r.stdout)["estimates"][0]
                v["predicted_us"][shape_text(s)] = e["time_us"]
                v.setdefault("bound", {})[shape_text(s)] = e["bound"]
            else:
                v.setdefault("predict_error", {})[shape_text(s)] = r.stderr.strip()[-300:]


def build_all(variants: List[Dict[str, Any]], cake: str, work: str, jobs: int) -> None:
    def one(v):
        d = os.path.join(work, "build", v["name"])
        r = run([cake, "build", v["path"], "--target", "sm_90a", "-o", d], timeout=300)
        if r.returncode == 0:
            v["launch"] = os.path.join(d, v["kernel"] + ".launch.json")
        else:
            v["build_error"] = (r.stdout + r.stderr).strip()[-500:]
    todo = [v for v in variants if "rejected" not in v]
    with cf.ThreadPoolExecutor(max_workers=jobs) as ex:
        list(ex.map(one, todo))


# ---------------------------------------------------------------------------------------------
# GPU child: one JSON line per variant

def fake_child(jobs: List[Dict[str, Any]]) -> int:
    """CAKE_ACCURACY_FAKE=1: answer without a GPU (tests of the parent's supervision): a name
    containing `hang` never answers, `crash` exits, anything else measures 100 µs."""
    for job in jobs:
        if "hang" in job["name"]:
            time.sleep(3600)
        if "crash" in job["name"]:
            os._exit(3)
        print(json.dumps(dict(name=job["name"], correct=True,
                              measured_us={shape_text(s): 100.0 for s in job["shapes"]})), flush=True)
    return 0


def child(job_file: str) -> int:
    if os.environ.get("CAKE_ACCURACY_FAKE"):
        return fake_child(json.load(open(job_file, encoding="utf-8")))
    import torch

    from cake import load_kernel
    from cake.harness.stats import summarize
    from cake.harness.timing import make_flush_buffer, time_events

    jobs = json.load(open(job_file, encoding="utf-8"))
    props = torch.cuda.get_device_properties(0)
    flush = make_flush_buffer(torch, getattr(props, "L2_cache_size", None), "cuda")
    g = torch.Generator(device="cuda").manual_seed(7)

    def gemm_args(M, N, K):
        A = (torch.randn(M, K, device="cuda", generator=g) * K ** -0.25).to(torch.bfloat16)
        B = (torch.randn(N, K, device="cuda", generator=g) * K ** -0.25).to(torch.bfloat16)
        C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        return [A, B, C]

    def gemm_ok(args):
        A, B, C = args
        ref = (A.double() @ B.double().T)
        return bool(torch.allclose(C.double(), ref, rtol=0.02, atol=0.02))

    def kmeans_args(B, N, K, D=128):
        X = torch.randn(B, N, D, device="cuda", generator=g).to(torch.bfloat16)
        Cn = torch.randn(B, K, D, device="cuda", generator=g).to(torch.bfloat16)
        XSQ = (X.float() ** 2).sum(-1)
        CSQ = (Cn.float() ** 2).sum(-1)
        IDS = torch.full((B, N), -1, device="cuda", dtype=torch.int32)
        return [X, Cn, XSQ, CSQ, IDS]

    def kmeans_ok(args):
        X, Cn, XSQ, CSQ, IDS = args
        K = Cn.shape[1]
        if bool(((IDS < 0) | (IDS >= K)).any()):
            return False
        d = CSQ[:, None, :] - 2.0 * torch.einsum("bnd,bkd->bnk", X.float(), Cn.float())
        best = d.min(-1).values
        got = d.gather(-1, IDS.long()[..., None])[..., 0]
        return bool(((got - best) <= 1e-3 * best.abs().clamp(min=1.0)).all())

    def attention_args(BH, BHKV, S, D):
        Q = torch.randn(BH, S, D, device="cuda", generator=g).to(torch.bfloat16)
        K = torch.randn(BHKV, S, D, device="cuda", generator=g).to(torch.bfloat16)
        V = torch.randn(BHKV, S, D, device="cuda", generator=g).to(torch.bfloat16)
        O = torch.full((BH, S, D), float("nan"), device="cuda", dtype=torch.bfloat16)
        return [Q, K, V, O]

    def attention_ok(args):
        Q, K, V, O = args
        rep = Q.shape[0] // K.shape[0]
        k, v = K.float().repeat_interleave(rep, 0), V.float().repeat_interleave(rep, 0)
        p = torch.softmax(Q.float() @ k.transpose(1, 2) / Q.shape[-1] ** 0.5, dim=-1)
        return bool(torch.allclose(O.float(), p @ v, rtol=0.02, atol=0.02))

    for job in jobs:
        res: Dict[str, Any] = dict(name=job["name"])
        try:
            k = load_kernel(job["launch"])
            if job["family"] == "attention":
                D = job["head_dim"]
                small = attention_args(4, 2, 300, D)
                k(*small)
                torch.cuda.synchronize()
                res["correct"] = attention_ok(small)
                if res["correct"]:
                    res["measured_us"] = {}
                    for s in job["shapes"]:
                        args = attention_args(D=D, **s)
                        times = time_events(torch, lambda: k(*args), WARMUP, SAMPLES, flush)
                        res["measured_us"][shape_text(s)] = summarize(times)["median"] * 1e3
                        del args
            elif job["family"] == "gemm":
                small = gemm_args(200, 264, 136)
                k(*small)
                torch.cuda.synchronize()
                res["correct"] = gemm_ok(small)
            else:
                small = kmeans_args(2, 1000, 300)
                k(*small)
                torch.cuda.synchronize()
                res["correct"] = kmeans_ok(small)
            if res["correct"] and job["family"] != "attention":
                res["measured_us"] = {}
                for s in job["shapes"]:
                    args = gemm_args(**s) if job["family"] == "gemm" else kmeans_args(**s)
                    times = time_events(torch, lambda: k(*args), WARMUP, SAMPLES, flush)
                    res["measured_us"][shape_text(s)] = summarize(times)["median"] * 1e3
                    del args
        except Exception as e:  # noqa: BLE001 - reported per variant
            res["error"] = f"{type(e).__name__}: {e}"[:500]
        print(json.dumps(res), flush=True)
    return 0


def measure(variants: List[Dict[str, Any]], timeout: float, work: str) -> None:
    todo = [v for v in variants if v.get("launch")]
    by_name = {v["name"]: v for v in todo}
    i = 0
    while i < len(todo):
        jobs = [dict(name=v["name"], family=v["family"], launch=v["launch"], shapes=v["shapes"],
                     head_dim=v.get("head_dim")) for v in todo[i:]]
        job_file = os.path.join(work, f"jobs-{i}.json")
        json.dump(jobs, open(job_file, "w", encoding="utf-8"))
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", job_file],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True, cwd=ROOT)
        # Lines are read on a thread so a deadline never misses a line already buffered.
        lines: "queue.Queue[Optional[str]]" = queue.Queue()

        def pump(stream=p.stdout, q=lines):
            for line in stream:
                q.put(line)
            q.put(None)
        threading.Thread(target=pump, daemon=True).start()
        deadline = time.time() + timeout + FIRST_GRACE_S
        while i < len(todo):
            try:
                line = lines.get(timeout=max(deadline - time.time(), 0.01))
            except queue.Empty:
                todo[i]["error"] = f"no answer within {timeout:.0f} s (hang?); child killed"
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                i += 1
                break
            if line is None:
                p.wait()
                err = p.stderr.read()[-500:]
                todo[i]["error"] = f"the child died (exit {p.returncode}): {err.strip()}"
                i += 1
                break
            try:
                res = json.loads(line.strip())
            except ValueError:
                continue  # stray output from a library
            if res.get("name") not in by_name:
                continue
            by_name[res.pop("name")].update(res)
            i += 1
            deadline = time.time() + timeout
            v = todo[i - 1]
            print(f"  {v['name']:<28} {json.dumps(v.get('measured_us') or v.get('error') or 'wrong results')}", flush=True)
        else:
            p.wait()


# ---------------------------------------------------------------------------------------------
# Statistics

def ranks(xs: List[float]) -> List[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    j = 0
    while j < len(order):
        k = j
        while k + 1 < len(order) and xs[order[k + 1]] == xs[order[j]]:
            k += 1
        for m in range(j, k + 1):
            r[order[m]] = (j + k) / 2 + 1
        j = k + 1
    return r


def spearman(a: List[float], b: List[float]) -> Optional[float]:
    if len(a) < 3:
        return None
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = math.sqrt(sum((x - ma) ** 2 for x in ra))
    vb = math.sqrt(sum((y - mb) ** 2 for y in rb))
    return cov / (va * vb) if va and vb else None


def median(xs: List[float]) -> Optional[float]:
    if not xs:
        return None
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def summarize_points(points: List[Dict[str, Any]]) -> Dict[str, Any]:
    pred = [p["predicted_us"] for p in points]
    meas = [p["measured_us"] for p in points]
    errs = [abs(p - m) / m for p, m in zip(pred, meas)]
    return dict(points=len(points), spearman_rho=spearman(pred, meas), median_abs_rel_error=median(errs),
                mean_signed_rel_error=(sum((p - m) / m for p, m in zip(pred, meas)) / len(points)) if points else None)


def points_of(variants: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    out = []
    for v in variants:
        for s, m in (v.get("measured_us") or {}).items():
            p = (v.get("predicted_us") or {}).get(s)
            if p is not None and m:
                out.append(dict(variant=v["name"], family=v["family"], shape=s, predicted_us=p,
                                measured_us=m, bound=(v.get("bound") or {}).get(s)))
    return out


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return child(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cake", default=os.path.join(ROOT, "dist", "cake"))
    ap.add_argument("--calibration", help="calibration TOML (default: the committed table)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                  f"cost-accuracy-{datetime.date.today().isoformat()}.json"))
    ap.add_argument("--timeout", type=float, default=45.0, help="seconds per variant on the GPU")
    ap.add_argument("--jobs", type=int, default=max(2, (os.cpu_count() or 4) // 2))
    ap.add_argument("--dry-run", action="store_true", help="variants and predictions only (no GPU)")
    a = ap.parse_args()
    t0 = time.time()
    work = tempfile.mkdtemp(prefix="cake-cost-accuracy-")
    variants = gemm_variants() + kmeans_variants() + attention_variants()
    prepare(variants, a.cake, work, a.calibration)
    ok = [v for v in variants if "rejected" not in v]
    print(f"{len(variants)} variants, {len(ok)} check clean "
          f"({sum(len(v['shapes']) for v in ok)} points) in {time.time() - t0:.1f} s", flush=True)
    for v in variants:
        if "rejected" in v:
            print(f"  rejected {v['name']}: {v['rejected'][:160]}")
    if not a.dry_run:
        build_all(variants, a.cake, work, a.jobs)
        print(f"built in {time.time() - t0:.1f} s", flush=True)
        measure(variants, a.timeout, work)
    points = points_of(variants)
    doc = dict(schema="cake.cost-accuracy/v0", date=datetime.date.today().isoformat(),
               commit=os.environ.get("COMMIT"),
               # The table's file name, not where this machine kept it (results are committed).
               calibration=os.path.basename(a.calibration) if a.calibration else "committed table",
               samples=SAMPLES, wall_s=time.time() - t0,
               summary=summarize_points(points),
               families={f: summarize_points([p for p in points if p["family"] == f]) for f in ("gemm", "kmeans", "attention")},
               points=points,
               variants=[{k: v[k] for k in v if k not in ("text", "path", "launch")} for v in variants])
    if not a.dry_run:
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=1)
    print(f"\n{'variant':<28} {'shape':<22} {'predicted':>10} {'measured':>10} {'error':>7}  bound")
    for p in points:
        print(f"{p['variant']:<28} {p['shape']:<22} {p['predicted_us']:>9.1f}u {p['measured_us']:>9.1f}u "
              f"{(p['predicted_us'] - p['measured_us']) / p['measured_us']:>+6.0%}  {p['bound']}")
    if a.dry_run:
        for v in ok:
            print(f"  {v['name']:<28} " + " ".join(f"{s}: {t:.1f} us" for s, t in v["predicted_us"].items()))
    s = doc["summary"]
    print(f"\n{s['points']} points · Spearman rho {s['spearman_rho']} · median |rel. error| {s['median_abs_rel_error']}")
    for f, fs in doc["families"].items():
        print(f"  {f}: {fs['points']} points · rho {fs['spearman_rho']} · median |err| {fs['median_abs_rel_error']}")
    for v in variants:
        if v.get("build_error"):
            print(f"  build failed {v['name']}: {v['build_error'].strip().splitlines()[-1][:200]}")
    failed = [v for v in variants if v.get("launch") and not v.get("measured_us")]
    for v in failed:
        print(f"  not timed {v['name']}: {v.get('error') or ('wrong results' if v.get('correct') is False else '?')}")
    print(f"wrote {a.out}" if not a.dry_run else "(dry run: nothing written)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
