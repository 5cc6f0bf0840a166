"""CPU checks of the row-wise scaled FP8 GEMM contract (kernels/gemm/gemm_fp8.contract.toml and
its functions in contract.py): the file names its functions and tensors consistently, the
generator quantizes per row as it says (largest magnitude at e4m3's largest finite value, an f32
scale per row), the oracle is the dequantized product, a kernel that promotes in f32 passes the
tolerance, and known defects (a scale dropped, the column scales applied per row) fail it. Runs
with the CPU suite (torch, no GPU)."""

from __future__ import annotations

import importlib.util
import os
import sys
import tomllib

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE = os.path.join(ROOT, "kernels", "gemm")
sys.path.insert(0, os.path.join(ROOT, "python"))

torch = pytest.importorskip("torch", reason="PyTorch is in .ci/requirements.txt")

# Loaded under its own name: other contracts' Python files are also called contract.py.
_spec = importlib.util.spec_from_file_location("gemm_contract", os.path.join(HERE, "contract.py"))
C = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(C)
from cake.harness.inputs import poison_value  # noqa: E402
from cake.harness.tolerance import compare, validate_policy  # noqa: E402

with open(os.path.join(HERE, "gemm_fp8.contract.toml"), "rb") as f:
    CONTRACT = tomllib.load(f)
DISTS = CONTRACT["inputs"]["distributions"]
SHAPE = {"M": 37, "N": 48, "K": 272}  # K: two 128-deep blocks and a partial one


def draw(dist: str, seed: int = 0) -> dict:
    g = torch.Generator()
    g.manual_seed(seed)
    return C.make_inputs_fp8(dict(SHAPE), dist, g)


def check(out: torch.Tensor, ref: torch.Tensor) -> bool:
    spec = validate_policy("C", CONTRACT["tolerance"]["C"])
    return compare(out, ref, spec, poison_value("bf16")).passed


def test_contract_names_its_functions_and_tensors():
    for ref in (CONTRACT["inputs"]["generator"], CONTRACT["oracle"]["function"],
                *CONTRACT["baselines"].values()):
        assert callable(getattr(C, ref)), ref
    inputs = [n for n, t in CONTRACT["tensors"].items() if t["role"] == "input"]
    assert sorted(draw("normal")) == sorted(inputs)
    assert CONTRACT["tensors"]["A"]["dtype"] == "fp8e4m3"


@pytest.mark.parametrize("dist", DISTS)
def test_generator_quantizes_each_row_to_the_e4m3_range(dist):
    x = draw(dist)
    for q, s, rows in ((x["A"], x["SA"], SHAPE["M"]), (x["B"], x["SB"], SHAPE["N"])):
        assert q.dtype == torch.float8_e4m3fn and s.dtype == torch.float32
        assert s.shape == (rows,) and bool((s > 0).all())
        amax = q.float().abs().amax(dim=1)
        nonzero = amax > 0
        # Each row's largest magnitude is e4m3's largest finite value (rows of zeros stay 0).
        assert bool((amax[nonzero] == C.E4M3_MAX).all()), dist
        assert bool(torch.isfinite(q.float()).all())


@pytest.mark.parametrize("dist", DISTS)
def test_a_promoting_kernel_passes_and_defects_fail(dist):
    x = draw(dist, seed=3)
    ref = C.oracle_fp8(**x)["C"]
    a, b = x["A"].float(), x["B"].float()
    # What the kernel does: f32 sums of 128-deep blocks, then both scales, rounded to bf16.
    total = sum(a[:, k:k + 128] @ b[:, k:k + 128].T for k in range(0, SHAPE["K"], 128))
    good = (total * x["SA"][:, None] * x["SB"][None, :]).to(torch.bfloat16)
    assert check(good, ref), dist
    no_b_scale = (total * x["SA"][:, None]).to(torch.bfloat16)
    assert not check(no_b_scale, ref), dist
    # SB applied along the rows (a transposed broadcast): only possible where M and N agree, so
    # compare on the leading square block.
    n = min(SHAPE["M"], SHAPE["N"])
    swapped = (total[:n, :n] * x["SA"][:n, None] * x["SB"][:n, None]).to(torch.bfloat16)
    assert not check(swapped, ref[:n, :n]), dist
