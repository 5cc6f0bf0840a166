"""Kernels with a workspace (docs/launch.md, `state`) launched so that launches overlap, and
timed against the same kernels built before the workspace was a kernel argument.

A dynamic tile loop keeps its tile counter, and stream-K its partials and ready flags, in the
launch's workspace, which the runtime provides per stream, and inside a CUDA graph capture per
captured launch. Two checks per kernel, each in a child process with a timeout (a launch that
hangs is reported, not waited on):

- `per-stream`: each iteration launches the kernel twice, on two streams with different inputs
  and nothing between, so the second starts while the first runs;
- `graphs`: the two launches captured into two CUDA graphs on torch's one capture stream, and
  each iteration replays the two graphs at once on two streams.

Every output must equal, bit for bit, the same kernel's output on that input launched alone
(each kernel here is deterministic), and that output must pass the torch oracle.

With `--old DIR` (the same kernels built by the compiler before the change: their state in
module globals), each kernel is also timed new against old, interleaved, at two shapes: eager
launches under CUPTI (L2 flushed before each), and CUDA graphs of 20 launches each, replayed
(the new one's graph allocates and zeroes a workspace per launch).

    python3 bench/stream_state.py --dir BUILDS [--old OLD_BUILDS] --out OUT.json   # on the GPU host
BUILDS holds one `cake build` output folder per kernel (bench/stream_state.sh makes them).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile

KERNELS = {
    # name: its build folder under --dir
    "rmsnorm_ring_dynamic": "rms_ring_dyn",
    "attention_causal_dynamic": "attn_dyn",
    "gemm_streamk": "gemm_streamk",
    "tinygemm_streamk": "tinygemm_streamk",
}
ITERS = 40
# The shapes each kernel is timed at (the first is the one checked).
SHAPES = {
    "rmsnorm_ring_dynamic": [(16384, 4096), (4096, 4096)],
    "attention_causal_dynamic": [(16, 4096), (32, 1024)],
    "gemm_streamk": [(1536, 2048, 8192), (2048, 2048, 4096)],
    "tinygemm_streamk": [(4096, 4096), (14336, 4096)],
}
GRAPH_LAUNCHES = 20


def problem(name, seed, torch, shape=None):
    shape = shape or SHAPES[name][0]
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(torch.bfloat16)

    if name == "rmsnorm_ring_dynamic":
        rows, hidden = shape
        X, W = randn(rows, hidden), randn(hidden)
        Y = torch.empty_like(X)
        args = dict(X=X, W=W, Y=Y, eps=1e-6)
        ref = torch.nn.functional.rms_norm(X.float(), (hidden,), W.float(), 1e-6)
        return args, "Y", ref, 2e-2
    if name == "attention_causal_dynamic":
        BH, S = shape
        Q, K, V = (randn(BH, S, 128) for _ in range(3))
        O = torch.empty_like(Q)
        args = dict(Q=Q, K=K, V=V, O=O)
        ref = torch.nn.functional.scaled_dot_product_attention(
            Q.float(), K.float(), V.float(), is_causal=True)
        return args, "O", ref, 2e-2
    if name == "gemm_streamk":
        M, N, K = shape
        A, B = randn(M, K, scale=K ** -0.25), randn(N, K, scale=K ** -0.25)
        C = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        return dict(A=A, B=B, C=C), "C", A.float() @ B.float().T, 2e-2
    if name == "tinygemm_streamk":
        N, K = shape
        A, B = randn(8, K, scale=K ** -0.25), randn(N, K, scale=K ** -0.25)
        C = torch.empty(8, N, device="cuda", dtype=torch.bfloat16)
        return dict(A=A, B=B, C=C), "C", A.float() @ B.float().T, 2e-2
    raise ValueError(name)


def check_alone(name, kernel, sets, streams, torch):
    """Each input launched alone on its stream: oracle-checked, returned as the reference."""
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
    return alone


def child(name, folder, mode, queue):
    import torch
    import cake

    try:
        kernel = cake.load_kernel(folder)
        assert "state" in kernel.meta, f"{name}: built without a workspace"
        streams = [torch.cuda.Stream(), torch.cuda.Stream()]
        sets = [problem(name, seed, torch) for seed in (1, 2)]
        torch.cuda.synchronize()
        alone = check_alone(name, kernel, sets, streams, torch)
        graphs = []
        if mode == "graphs":
            for args, _, _, _ in sets:  # both captured on torch's one capture stream
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    kernel(**args)
                graphs.append(g)
        bad = [0, 0]
        for _ in range(ITERS):
            for s, (args, out, _, _) in zip(streams, sets):
                with torch.cuda.stream(s):
                    args[out].fill_(float("nan"))
            torch.cuda.synchronize()
            for i, (s, (args, _, _, _)) in enumerate(zip(streams, sets)):
                if mode == "graphs":
                    with torch.cuda.stream(s):
                        graphs[i].replay()
                else:
                    kernel(**args, stream=s)  # back to back: the second starts while the first runs
            torch.cuda.synchronize()
            for i, (args, out, _, _) in enumerate(sets):
                bad[i] += not torch.equal(args[out], alone[i])
        queue.put({"kernel": name, "mode": mode, "iterations": ITERS,
                   "wrong_stream_1": bad[0], "wrong_stream_2": bad[1], "status": "ran",
                   "workspaces": kernel._k.workspace_streams()})
    except Exception as e:  # noqa: BLE001 - reported, not raised
        queue.put({"kernel": name, "mode": mode, "status": f"error: {e}"})


def single_stream(folder):
    """A copy of an old build whose launch.json no longer says `module_state`: this runtime
    refuses such a kernel (launches on two streams would share its globals), and the timing
    launches it on one stream only."""
    copy = tempfile.mkdtemp()
    for f in os.listdir(folder):
        shutil.copy(os.path.join(folder, f), copy)
        if f.endswith(".launch.json"):
            p = os.path.join(copy, f)
            meta = json.load(open(p))
            assert meta.pop("module_state", False), f"{folder}: not an old build"
            json.dump(meta, open(p, "w"))
    return copy


def timer(name, new_folder, old_folder, queue):
    """New build against old, interleaved, at each of the kernel's shapes."""
    import torch
    import cake
    from cake.harness import timing

    try:
        kernels = {"new": cake.load_kernel(new_folder), "old": cake.load_kernel(single_stream(old_folder))}
        assert "state" in kernels["new"].meta and "state" not in kernels["old"].meta
        props = torch.cuda.get_device_properties(0)
        flush = timing.make_flush_buffer(torch, props.L2_cache_size, "cuda:0")
        rows = []
        for shape in SHAPES[name]:
            args, out, ref, tol = problem(name, 3, torch, shape)
            for which, k in kernels.items():  # correct first: no speed without it
                args[out].fill_(float("nan"))
                k(**args)
                torch.cuda.synchronize()
                err = (args[out].float() - ref).abs().max().item()
                assert err <= tol * max(1.0, ref.abs().max().item()), f"{name} {which} {shape}: error {err}"
            calls = [kernels["new"].prepare(**args), kernels["old"].prepare(**args)]
            res = timing.time_cupti_interleaved(torch, [c.launch for c in calls], 30, flush)
            eager = [statistics.median(r.spans_ms) * 1e3 for r in res]
            graphs = []
            for k in (kernels["new"], kernels["old"]):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(GRAPH_LAUNCHES):
                        k(**args)
                graphs.append(g)
            for g in graphs:
                g.replay()
            torch.cuda.synchronize()
            per = timing.time_events_interleaved(torch, [g.replay for g in graphs], 3, 15, flush)
            graph = [statistics.median(t) * 1e3 / GRAPH_LAUNCHES for t in per]
            rows.append({"kernel": name, "shape": list(shape), "eager_new_us": eager[0],
                         "eager_old_us": eager[1], "graph_new_us": graph[0], "graph_old_us": graph[1],
                         "activities_new": res[0].kernels_per_call, "activities_old": res[1].kernels_per_call})
        queue.put({"kernel": name, "status": "timed", "rows": rows})
    except Exception as e:  # noqa: BLE001 - reported, not raised
        queue.put({"kernel": name, "status": f"error: {e}"})


def run_child(ctx, target, args, timeout, label):
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        return dict(label, status=f"hung (killed after {timeout:.0f} s)")
    return q.get() if not q.empty() else dict(label, status=f"exit {p.exitcode}, no report")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--old", help="the same kernels built before the change, to time against")
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=60)
    a = ap.parse_args()
    ctx = mp.get_context("spawn")
    rows, timed = [], []
    for name, folder in KERNELS.items():
        for mode in ("per-stream", "graphs"):
            row = run_child(ctx, child, (name, os.path.join(a.dir, folder), mode), a.timeout,
                            {"kernel": name, "mode": mode})
            rows.append(row)
            print(json.dumps(row), flush=True)
        if a.old:
            t = run_child(ctx, timer, (name, os.path.join(a.dir, folder), os.path.join(a.old, folder)),
                          2 * a.timeout, {"kernel": name})
            timed.append(t)
            print(json.dumps(t), flush=True)
    json.dump({"checks": rows, "timing": timed}, open(a.out, "w"), indent=1)
    print(f"\n{'kernel':28} {'mode':11} {'wrong (of ' + str(ITERS) + ' per stream)':28} status")
    for r in rows:
        wrong = f"{r['wrong_stream_1']}, {r['wrong_stream_2']}" if r["status"] == "ran" else "-"
        print(f"{r['kernel']:28} {r['mode']:11} {wrong:28} {r['status']}")
    if timed:
        print(f"\n{'kernel':28} {'shape':20} {'eager new/old us':22} {'graph new/old us (per launch)':30}")
        for t in timed:
            if t["status"] != "timed":
                print(f"{t['kernel']:28} {t['status']}")
                continue
            for r in t["rows"]:
                print(f"{r['kernel']:28} {str(r['shape']):20} "
                      f"{r['eager_new_us']:8.2f} / {r['eager_old_us']:8.2f}    "
                      f"{r['graph_new_us']:8.2f} / {r['graph_old_us']:8.2f}")


if __name__ == "__main__":
    sys.exit(main())
