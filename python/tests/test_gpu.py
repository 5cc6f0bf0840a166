"""The Python package on a GPU: `cake.compile` → a module of callables on torch tensors.

Skipped where a CUDA device is absent (CI: the reason starts "needs a GPU:", which conftest.py
lets pass under CAKE_REQUIRE_ALL=1); run on the H200 by bench/gpu_session.sh.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():  # pragma: no cover - CPU machines
    pytest.skip("needs a GPU: torch sees no CUDA device", allow_module_level=True)

import cake  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
GEMM = os.path.join(ROOT, "examples", "gemm_sm90.py")


@pytest.fixture(scope="module")
def mod():
    return cake.compile(GEMM)


def inputs(M, N, K, seed=0):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    A = (torch.randn(M, K, device="cuda", generator=g) * K ** -0.25).to(torch.bfloat16)
    B = (torch.randn(N, K, device="cuda", generator=g) * K ** -0.25).to(torch.bfloat16)
    C = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
    return A, B, C


def reference(A, B):
    return (A.double() @ B.double().T).float()


@pytest.mark.parametrize("M,N,K", [(128, 256, 64), (1000, 1000, 512), (777, 1000, 136)])
def test_compile_targets_this_gpu_and_the_kernel_is_correct(mod, M, N, K):
    A, B, C = inputs(M, N, K)
    mod.gemm(A, B, C)
    torch.cuda.synchronize()
    assert not torch.isnan(C).any(), "every element written"
    torch.testing.assert_close(C.float(), reference(A, B), rtol=2e-2, atol=2e-2)


def test_keyword_arguments_and_a_side_stream(mod):
    A, B, C = inputs(512, 512, 256, seed=1)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        mod.gemm(C=C, A=A, B=B)  # launched on s, torch's current stream inside the block
    s.synchronize()
    torch.testing.assert_close(C.float(), reference(A, B), rtol=2e-2, atol=2e-2)


def untouched(C):
    torch.cuda.synchronize()
    return bool(torch.isnan(C).all())


def test_wrong_dtype_is_refused_before_launch(mod):
    A, B, C = inputs(256, 256, 64)
    with pytest.raises(cake.LaunchError, match="A"):
        mod.gemm(A.float(), B, C)
    assert untouched(C)


def test_wrong_device_is_refused(mod):
    A, B, C = inputs(256, 256, 64)
    with pytest.raises(cake.LaunchError):
        mod.gemm(A.cpu(), B, C)
    assert untouched(C)


def test_inconsistent_shapes_are_refused(mod):
    A, B, C = inputs(256, 256, 64)
    with pytest.raises(cake.LaunchError, match="K"):
        mod.gemm(A, B[:, :32].contiguous(), C)
    assert untouched(C)


def test_non_contiguous_tensors_are_refused(mod):
    A, B, C = inputs(256, 256, 64)
    with pytest.raises(cake.LaunchError):
        mod.gemm(A, B, C.T.contiguous().T)
    assert untouched(C)


def test_unaligned_row_pitch_is_refused(mod):
    # K = 60 bf16 elements: a 120-byte row pitch, not the multiple of 16 a TMA descriptor needs.
    A, B, C = inputs(256, 256, 60)
    with pytest.raises(cake.LaunchError):
        mod.gemm(A, B, C)
    assert untouched(C)


# ---- PyTorch integration on the GPU (docs/python.md "PyTorch") ---------------------------------


def test_run_allocates_the_output(mod):
    A, B, _ = inputs(300, 520, 128, seed=2)
    C = mod.gemm.run(A, B)
    torch.cuda.synchronize()
    assert C.shape == (300, 520) and C.dtype == torch.bfloat16 and C.device == A.device
    torch.testing.assert_close(C.float(), reference(A, B), rtol=2e-2, atol=2e-2)


def test_torch_compile_fullgraph_with_inductor(mod):
    from torch._dynamo.testing import CompileCounterWithBackend

    op = cake.torch_op(mod.gemm, name="gemm_gpu_compile")
    counter = CompileCounterWithBackend("inductor")

    def f(A, B):
        return torch.relu(op(A, B).float()) * 0.5

    compiled = torch.compile(f, fullgraph=True, backend=counter)
    for M, N, K in ((256, 512, 128), (1000, 1000, 512)):
        A, B, _ = inputs(M, N, K, seed=3)
        out = compiled(A, B)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, torch.relu(reference(A, B)) * 0.5, rtol=2e-2, atol=2e-2)
    assert counter.frame_count >= 1 and all(
        any("gemm_gpu_compile" in str(n.target) for n in g.graph.nodes) for g in counter.graphs)


def test_cuda_graph_capture_of_a_prepared_launch_and_of_a_call(mod):
    A, B, C = inputs(512, 768, 256, seed=4)
    mod.gemm(A, B, C)  # loads the cubin: module loading is not captured
    torch.cuda.synchronize()
    prepared = mod.gemm.prepare(A, B, C)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    g1, g2 = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
    with torch.cuda.graph(g1, stream=s):
        # A launch prepared outside the capture is bound to the stream it was prepared for: a
        # captured one is prepared inside, on the capture stream.
        mod.gemm.prepare(A, B, C).launch()
    with torch.cuda.graph(g2, stream=s):
        mod.gemm(A, B, C)
    for g, seed in ((g1, 5), (g2, 6)):
        A2, B2, _ = inputs(512, 768, 256, seed=seed)
        A.copy_(A2)
        B.copy_(B2)
        C.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(C.float(), reference(A2, B2), rtol=2e-2, atol=2e-2)
    prepared.launch()  # still valid outside the graph
    torch.cuda.synchronize()


def test_autotune_on_the_gpu_is_correct_and_cached(tmp_path):
    A, B, C = inputs(1024, 1024, 512, seed=7)
    tuned = cake.autotune(GEMM, "gemm", (A, B, C), knobs={"STAGES": [2, 3, 4], "BN": [128, 256]},
                          cache_dir=tmp_path, warmup=2, reps=5)
    ok = [t for t in tuned.trials if t.outcome == "ok"]
    assert len(ok) >= 2 and tuned.us == min(t.us for t in ok) and tuned.us > 0
    C.fill_(float("nan"))
    tuned(A, B, C)
    torch.cuda.synchronize()
    torch.testing.assert_close(C.float(), reference(A, B), rtol=2e-2, atol=2e-2)
    again = cake.autotune(GEMM, "gemm", (A, B, C), knobs={"STAGES": [2, 3, 4], "BN": [128, 256]},
                          cache_dir=tmp_path)
    assert again.cached and again.knobs == tuned.knobs and not again.trials


def test_torch_compile_reduce_overhead_captures_the_operator(mod):
    op = cake.torch_op(mod.gemm, name="gemm_gpu_graphs")
    f = torch.compile(lambda A, B: op(A, B).float() + 1.0, mode="reduce-overhead", fullgraph=True)
    A, B, _ = inputs(256, 384, 128, seed=8)
    for _ in range(3):  # the third call replays the recorded graph
        out = f(A, B)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, reference(A, B) + 1.0, rtol=2e-2, atol=2e-2)


def test_run_on_a_side_stream_records_the_stream_on_its_outputs(mod):
    A, B, _ = inputs(256, 512, 128, seed=9)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    C = mod.gemm.run(A, B, stream=s)
    s.synchronize()
    torch.testing.assert_close(C.float(), reference(A, B), rtol=2e-2, atol=2e-2)


def test_autotune_leaves_the_callers_output_as_it_was(tmp_path):
    A, B, C = inputs(512, 512, 256, seed=10)
    before = C.clone()
    cake.autotune(GEMM, "gemm", (A, B, C), knobs={"STAGES": [2, 3]}, cache_dir=tmp_path, warmup=1, reps=2)
    torch.cuda.synchronize()
    assert torch.equal(C.isnan(), before.isnan()) and torch.equal(C.nan_to_num(), before.nan_to_num())


RING = os.path.join(ROOT, "examples", "rmsnorm_ring_sm90.py")


@pytest.fixture(scope="module")
def ring_dynamic():
    """The RMSNorm ring with a dynamic tile loop: its tile counter is in the launch's workspace."""
    source = open(RING).read()
    assert "\nDYNAMIC = 0\n" in source
    k = cake.compile(RING, source=source.replace("\nDYNAMIC = 0\n", "\nDYNAMIC = 1\n")).rmsnorm_ring
    assert k.meta["state"]["zeroed"] == 8, k.meta.get("state")
    return k


def ring_problems(n, rows=8192, seed=11):
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    xs = [torch.randn(rows, 4096, device="cuda", generator=g).to(torch.bfloat16) for _ in range(n)]
    w = torch.randn(4096, device="cuda", generator=g).to(torch.bfloat16)
    refs = [torch.nn.functional.rms_norm(x.float(), (4096,), w.float(), 1e-6) for x in xs]
    return xs, w, refs


def test_a_kernel_with_a_workspace_runs_on_two_streams_at_once(ring_dynamic):
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    xs, w, refs = ring_problems(2)
    torch.cuda.synchronize()  # the inputs, made on the current stream, are ready for both
    alone = []
    for s, x, ref in zip(streams, xs, refs):
        y = torch.empty_like(x)
        ring_dynamic(X=x, W=w, Y=y, eps=1e-6, stream=s)
        s.synchronize()
        torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)
        alone.append(y)
    assert len(ring_dynamic._k.workspace_streams()) >= 2
    ys = [torch.empty_like(x) for x in xs]
    for _ in range(20):
        for y in ys:
            y.fill_(float("nan"))
        torch.cuda.synchronize()
        for s, x, y in zip(streams, xs, ys):  # back to back: the launches overlap
            ring_dynamic(X=x, W=w, Y=y, eps=1e-6, stream=s)
        torch.cuda.synchronize()
        for y, a in zip(ys, alone):
            assert torch.equal(y, a), "each stream's launch took every tile of its own"


def test_graphs_captured_on_one_stream_replay_at_once_on_two(ring_dynamic):
    xs, w, refs = ring_problems(2, seed=12)
    ys = [torch.empty_like(x) for x in xs]
    ring_dynamic(X=xs[0], W=w, Y=ys[0], eps=1e-6)  # loads the module: a capture cannot
    torch.cuda.synchronize()
    graphs = [torch.cuda.CUDAGraph() for _ in xs]
    for g, x, y in zip(graphs, xs, ys):  # both on torch's one capture stream
        with torch.cuda.graph(g):
            ring_dynamic(X=x, W=w, Y=y, eps=1e-6)
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    for _ in range(20):
        for y in ys:
            y.fill_(float("nan"))
        torch.cuda.synchronize()
        for s, g in zip(streams, graphs):  # each replay has the workspace its graph allocates
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                g.replay()
        torch.cuda.synchronize()
        for y, ref in zip(ys, refs):
            torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)


def test_torch_compile_reduce_overhead_captures_a_kernel_with_a_workspace(ring_dynamic):
    op = cake.torch_op(ring_dynamic, name="rmsnorm_ring_dynamic_graphs")
    f = torch.compile(lambda X, W: op(X, W, 1e-6).float() * 2.0, mode="reduce-overhead", fullgraph=True)
    xs, w, refs = ring_problems(3, rows=2048, seed=13)
    for x, ref in zip(xs, refs):  # the later calls replay the recorded graph, its workspace its own
        out = f(x, w)
        torch.cuda.synchronize()
        torch.testing.assert_close(out, ref * 2.0, rtol=2e-2, atol=4e-2)


def test_the_first_launch_on_a_device_is_refused_in_a_capture():
    k = cake.compile(RING).rmsnorm_ring  # a fresh kernel object: its module is not loaded
    x = torch.randn(256, 4096, device="cuda").to(torch.bfloat16)
    w, y = torch.ones(4096, device="cuda", dtype=torch.bfloat16), torch.empty_like(x)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(cake.LaunchError, match="launch it once on any stream before capturing"):
        with torch.cuda.graph(g):
            k(X=x, W=w, Y=y, eps=1e-6)
    k(X=x, W=w, Y=y, eps=1e-6)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        k(X=x, W=w, Y=y, eps=1e-6)
    y.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    ref = torch.nn.functional.rms_norm(x.float(), (4096,), w.float(), 1e-6)
    torch.testing.assert_close(y.float(), ref, rtol=2e-2, atol=2e-2)
