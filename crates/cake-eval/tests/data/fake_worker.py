"""A stand-in for `python3 -m cake.worker` that needs no GPU: it speaks cake.worker/v0 and
behaves as the loaded candidate's launch metadata says (its `kernel` field): `good` passes,
`unwritten` leaves outputs unwritten, `hang` never answers a check, `chatter` prints stray lines
instead of answering, `crash` exits mid-check, `sticky` reports an illegal address (checked) or instruction (timed), `toofast`
times below any physical floor, `drifts` passes its checks but its timed calls end with wrong
outputs, `contractbug` meets a failing oracle. A kernel whose launch metadata fixes an extent
(`"dims": ["R", 64]`) gives wrong results on a shape that binds that dimension otherwise, as a
real one would; check answers name the callable that ran."""

import json
import os
import sys
import time

behaviour = {}
fixed = {}  # callable -> [(tensor, axis, extent)] its launch metadata fixes


def wrong_extents(req):
    """Why the loaded kernel cannot take the request's shape, or None."""
    shapes = {t["name"]: t["shape"] for t in req["problem"]["tensors"]}
    for tensor, axis, extent in fixed.get(req["callable"], []):
        entry = shapes.get(tensor, [None] * (axis + 1))[axis]
        value = req["shape"].get(entry, entry)
        if value != extent:
            return f"{tensor}: axis {axis} is {value}, the kernel's fixed extent is {extent}"
    return None


def answer(req, **fields):
    print(json.dumps({"id": req.get("id"), "ok": True, **fields}), flush=True)


def error(req, kind, message, sticky=False):
    print(json.dumps({"id": req.get("id"), "ok": False,
                      "error": {"kind": kind, "message": message, "sticky": sticky}}), flush=True)


def stats(ms):
    return {"n": 30, "median": ms, "mean": ms, "min": ms, "max": ms, "q1": ms, "q3": ms,
            "iqr": 0.0, "samples": [ms] * 30}


for line in sys.stdin:
    req = json.loads(line)
    op = req.get("op")
    print(f"fake worker got {op}", file=sys.stderr, flush=True)
    if op == "hello":
        answer(req, env={"gpu": "Fake GPU", "cc": [9, 0], "sm_count": 132,
                         "measured_bandwidth_gbps": 4000.0, "pid": os.getpid()})
    elif op == "load":
        if "launch" in req:
            with open(req["launch"]) as f:
                meta = json.load(f)
            behaviour[req["name"]] = meta["kernel"]
            fixed[req["name"]] = [(t["name"], i, d) for t in meta["tensors"]
                                  for i, d in enumerate(t["dims"]) if isinstance(d, int)]
        else:
            behaviour[req["name"]] = "baseline"
        answer(req, loaded=req["name"])
    elif op == "check":
        b = behaviour[req["callable"]]
        if b == "hang":
            time.sleep(3600)
        if b == "chatter":  # never answers, but keeps printing lines that are not answers
            for _ in range(7200):
                print("{\"progress\": true}", flush=True)
                time.sleep(0.5)
        if b == "crash":
            print("fake worker: segmentation fault (pretend)", file=sys.stderr, flush=True)
            os._exit(139)
        if b == "contractbug":
            error(req, "oracle", "the oracle raised: ZeroDivisionError")
            continue
        if b == "sticky":
            error(req, "cuda", "CUDA error: an illegal memory access was encountered", sticky=True)
            sys.exit(1)
        wrong = wrong_extents(req)
        ok = b != "unwritten" and wrong is None
        out = {"policy": "allclose", "passed": ok, "elements": 64, "mismatches": 0 if ok else 8,
               "unwritten": 0 if ok else 8, "nonfinite": 0 if ok else 8}
        answer(req, passed=ok, outputs={"C": out}, inputs_unmodified=True, deterministic=True,
               callable=req["callable"],
               reason=None if ok else wrong or "C: 8 elements never written (still poisoned), first at [7, 0]")
    elif op == "time":
        results = {}
        for name in req["callables"]:
            b = behaviour[name]
            if b == "sticky":
                error(req, "cuda", "CUDA error: an illegal instruction was encountered", sticky=True)
                sys.exit(1)
            if b == "baseline" and "--baseline-fails" in sys.argv:
                error(req, "python", "the baseline raised")
                break
            ms = {"baseline": 2.0, "toofast": 1e-6}.get(b, 1.0)
            wrong = wrong_extents({**req, "callable": name})
            drifts = b == "drifts"  # right at first, wrong after many calls
            results[name] = {"events_ms": stats(ms), "cupti_ms": stats(ms * 0.9),
                             "kernels_per_call": 1, "kernel_names": ["fake"],
                             "outputs_ok": not drifts and wrong is None,
                             "outputs_reason": "C: 64 elements differ" if drifts else wrong}
        else:
            answer(req, results=results)
    elif op == "timeline":
        # A canned summary naming what it was asked to launch (the real one: cake.timeline).
        name = req["callable"]
        answer(req, summary={"ctas": 4, "callable": name, "shape": req["shape"], "tail_us": 0.5},
               text=f"4 CTAs of {name}\n  role math: first wait 1.00 us")
    elif op == "shutdown":
        answer(req, bye=True)
        break
    else:
        error(req, "protocol", f"unknown op {op!r}")
