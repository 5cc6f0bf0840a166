"""What the row-kernel GPU scripts (bench/rows_probe.py, rows_variants.py, rows_steady.py) share:
the five families of kernels/rows/ with their inputs, oracles, torch ops and outputs, and the
check of a kernel's outputs against the oracle at the tolerances of the family's contract
(kernels/rows/<family>.contract.toml, [tolerance])."""
import functools
import sys
import tomllib
from typing import NamedTuple

import torch

sys.path.insert(0, "kernels/rows")
import contract as C  # noqa: E402


class Family(NamedTuple):
    inputs: str           # contract.py's input generator
    oracle: str           # contract.py's f32 oracle
    torch_op: object      # the baseline (writes its outputs)
    outputs: list         # the output tensors' names
    scalars: dict         # the scalar arguments
    bytes_per_elem: int   # bytes each element moves (reads and writes)


FAMILIES = {
    "rmsnorm": Family("make_rmsnorm_inputs", "rmsnorm_oracle", C.torch_rms_norm, ["Y"], {"eps": 1e-6}, 4),
    "layernorm": Family("make_layernorm_inputs", "layernorm_oracle", C.torch_layer_norm, ["Y"], {"eps": 1e-5}, 4),
    "softmax": Family("make_softmax_inputs", "softmax_oracle", C.torch_softmax, ["Y"], {}, 4),
    "add_rmsnorm": Family("make_add_rmsnorm_inputs", "add_rmsnorm_oracle", C.torch_add_rms_norm, ["Hs", "Y"], {"eps": 1e-6}, 8),
    "quant_fp8": Family("make_quant_inputs", "quant_oracle", C.torch_quant_fp8, ["Q", "S"], {}, 3),
}


@functools.cache
def tolerances(fam):
    """Each output's `allclose` tolerances from the family's contract (None: bitwise equal),
    read once per family."""
    with open(f"kernels/rows/{fam}.contract.toml", "rb") as f:
        table = tomllib.load(f)["tolerance"]
    return {name: None if t["policy"] == "exact" else dict(rtol=t["rtol"], atol=t["atol"])
            for name, t in table.items()}


def outputs(fam, R, H, dev):
    """Empty output tensors of one call."""
    if fam == "quant_fp8":
        return {"Q": torch.empty(R, H, dtype=torch.float8_e4m3fn, device=dev),
                "S": torch.empty(R, dtype=torch.float32, device=dev)}
    return {n: torch.empty(R, H, dtype=torch.bfloat16, device=dev) for n in FAMILIES[fam].outputs}


def mismatches(fam, out, ref):
    """The outputs that differ from the oracle's beyond the contract's tolerance, with their
    largest absolute error (empty: correct)."""
    tol = tolerances(fam)
    bad = {}
    for n, t in ref.items():
        got, want = out[n].float(), t.float()
        same = torch.equal(got, want) if tol[n] is None else torch.allclose(got, want, **tol[n])
        if not same:
            bad[n] = float((got - want).abs().max())
    return bad
