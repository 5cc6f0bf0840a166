"""Launches of a kernel with module state on two streams at once (docs/launch.md, `module_state`).

A dynamic tile loop keeps its tile counter, and stream-K its partials and ready flags, in device
globals of the module. Each kernel below runs twice per iteration, on two streams with different
inputs and nothing between the launches, so the second starts while the first runs. Two modes:

- `per-stream`: the build as it is; the runtime loads a copy of the module per stream.
- `shared`: the same build with `module_state` taken out of a copy of its launch.json, so both
  streams share one module: the runtime before this change.

Every concurrent output must equal, bit for bit, the same kernel's output on that input launched
alone (each kernel here is deterministic), and that output must pass the torch oracle. Each
(kernel, mode) runs in a child process with a timeout, so a launch that hangs (stream-K's
flags taken by the other launch) is reported, not waited on.

    python3 bench/stream_state.py --dir BUILDS --out OUT.json      # on the GPU host
BUILDS holds one `cake build` output folder per kernel (bench/stream_state.sh makes them).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import sys
import tempfile

KERNELS = {
    # name: its build folder under --dir
    "rmsnorm_ring_dynamic": "rms_ring_dyn",
    "attention_causal_dynamic": "attn_dyn",
    "gemm_streamk": "gemm_streamk",
}
ITERS = 40


def problem(name, seed, torch):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(torch.bfloat16)

    if name == "rmsnorm_ring_dynamic":
        X, W = randn(16384, 4096), randn(4096)
        Y = torch.empty_like(X)
        args = dict(X=X, W=W, Y=Y, eps=1e-6)
        ref = torch.nn.functional.rms_norm(X.float(), (4096,), W.float(), 1e-6)
        return args, "Y", ref, 2e-2
    if name == "attention_causal_dynamic":
        BH, S, D = 16, 4096, 128
        Q, K, V = (randn(BH, S, D) for _ in range(3))
        O = torch.empty_like(Q)
        args = dict(Q=Q, K=K, V=V, O=O)
        ref = torch.nn.functional.scaled_dot_product_attention(
            Q.float(), K.float(), V.float(), is_causal=True)
        return args, "O", ref, 2e-2
    if name == "gemm_streamk":
        M, N, K = 1536, 2048, 8192
        A, B = randn(M, K, scale=K ** -0.25), randn(N, K, scale=K ** -0.25)
        C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        args = dict(A=A, B=B, C=C)
        ref = A.float() @ B.float().T
        return args, "C", ref, 2e-2
    raise ValueError(name)


def child(name, folder, mode, queue):
    import torch
    import cake

    try:
        path = folder
        if mode == "shared":
            path = tempfile.mkdtemp()
            for f in os.listdir(folder):
                shutil.copy(os.path.join(folder, f), path)
            for f in os.listdir(path):
                if f.endswith(".launch.json"):
                    p = os.path.join(path, f)
                    meta = json.load(open(p))
                    assert meta.pop("module_state", False), f"{name}: not built with module_state"
                    json.dump(meta, open(p, "w"))
        kernel = cake.load_kernel(path)
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        sets = [problem(name, seed, torch) for seed in (1, 2)]
        alone = []
        for s, (args, out, ref, tol) in zip(streams, sets):
            args[out].fill_(float("nan"))
            kernel(**args, stream=s)
            s.synchronize()
            got = args[out].float()
            err = (got - ref).abs().max().item()
            assert not torch.isnan(got).any() and err <= tol * max(1.0, ref.abs().max().item()), \
                f"{name}: alone, max error {err}"
            alone.append(args[out].clone())
        bad = [0, 0]
        for _ in range(ITERS):
            for s, (args, out, _, _) in zip(streams, sets):
                with torch.cuda.stream(s):
                    args[out].fill_(float("nan"))
            torch.cuda.synchronize()
            for s, (args, _, _, _) in zip(streams, sets):
                kernel(**args, stream=s)  # back to back: the second starts while the first runs
            torch.cuda.synchronize()
            for i, (args, out, _, _) in enumerate(sets):
                bad[i] += not torch.equal(args[out], alone[i])
        queue.put({"kernel": name, "mode": mode, "iterations": ITERS,
                   "wrong_stream_1": bad[0], "wrong_stream_2": bad[1], "status": "ran"})
    except Exception as e:  # noqa: BLE001 - reported, not raised
        queue.put({"kernel": name, "mode": mode, "status": f"error: {e}"})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    ctx = mp.get_context("spawn")
    rows = []
    for name, folder in KERNELS.items():
        for mode in ("per-stream", "shared"):
            q = ctx.Queue()
            p = ctx.Process(target=child, args=(name, os.path.join(a.dir, folder), mode, q))
            p.start()
            p.join(a.timeout)
            if p.is_alive():
                p.kill()
                p.join()
                row = {"kernel": name, "mode": mode, "status": f"hung (killed after {a.timeout:.0f} s)"}
            else:
                row = q.get() if not q.empty() else {"kernel": name, "mode": mode,
                                                    "status": f"exit {p.exitcode}, no report"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    print(f"\n{'kernel':28} {'mode':11} {'wrong (of ' + str(ITERS) + ' per stream)':28} status")
    for r in rows:
        wrong = f"{r['wrong_stream_1']}, {r['wrong_stream_2']}" if r["status"] == "ran" else "-"
        print(f"{r['kernel']:28} {r['mode']:11} {wrong:28} {r['status']}")


if __name__ == "__main__":
    sys.exit(main())
