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
