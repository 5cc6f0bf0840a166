"""CPU checks of the row-kernel contracts (kernels/rows/*.contract.toml and contract.py): the
files agree with each other, the generators draw what they promise, an f32 kernel written the
usual way and torch's ops pass each contract's tolerance against its oracle, and known defects
(a one-pass variance, a softmax without its max, a mean over a padded H, a missing amax
clamp) fail it. Runs with the CPU suite (torch, no GPU)."""

from __future__ import annotations

import inspect
import math
import os
import sys
import tomllib

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE = os.path.join(ROOT, "kernels", "rows")
sys.path.insert(0, os.path.join(ROOT, "python"))

torch = pytest.importorskip("torch", reason="PyTorch is in .ci/requirements.txt")

import importlib.util  # noqa: E402

# Loaded under its own name: other contracts' Python files are also called contract.py.
_spec = importlib.util.spec_from_file_location("rows_contract", os.path.join(HERE, "contract.py"))
C = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(C)
from cake.harness.inputs import poison_value, torch_dtype  # noqa: E402
from cake.harness.tolerance import compare, validate_policy  # noqa: E402

FAMILIES = ["rmsnorm", "layernorm", "softmax", "add_rmsnorm", "quant_fp8"]
ROW_CAP = 64  # rows per check shape here (tails in R are 1 and 3; 1000 only costs time)


def load(family: str) -> dict:
    with open(os.path.join(HERE, f"{family}.contract.toml"), "rb") as f:
        return tomllib.load(f)


def fn(ref: str):
    return getattr(C, ref)


def shapes(c: dict, which: str = "check"):
    return [{"R": min(s["R"], ROW_CAP), "H": s["H"]} for s in c["shapes"][which]]


def draw(c: dict, shape: dict, dist: str, seed: int = 0) -> dict:
    g = torch.Generator()
    g.manual_seed(seed)
    return fn(c["inputs"]["generator"])(dict(shape), dist, g)


def scalars(c: dict) -> dict:
    return {k: v["value"] for k, v in c.get("scalars", {}).items()}


def outputs(c: dict):
    return [n for n, t in c["tensors"].items() if t["role"] == "output"]


def judge(c: dict, name: str, cand, ref):
    spec = validate_policy(name, c["tolerance"][name])
    return compare(cand, ref, spec, poison_value(c["tensors"][name]["dtype"]))


def bound(t: dict, shape: dict):
    return tuple(shape[d] if isinstance(d, str) else d for d in t["shape"])


# --- emulations: f32 kernels written the usual way, and defective ones ----------------------

def rms_f32(h, W, eps, H_div=None):
    H = H_div or h.shape[-1]
    r = torch.rsqrt(h.square().sum(-1, keepdim=True) * (1.0 / H) + eps)
    return (h * r * W.float()).bfloat16()


def ln_f32(X, W, Bias, eps, one_pass=False):
    x = X.float()
    H = x.shape[-1]
    m = x.sum(-1, keepdim=True) * (1.0 / H)
    if one_pass:
        var = (x.square().sum(-1, keepdim=True) * (1.0 / H) - m * m).clamp(min=0)
    else:
        var = (x - m).square().sum(-1, keepdim=True) * (1.0 / H)
    return ((x - m) * torch.rsqrt(var + eps) * W.float() + Bias.float()).bfloat16()


def softmax_f32(X, stable=True):
    x = X.float()
    e = torch.exp(x - x.amax(-1, keepdim=True)) if stable else torch.exp(x)
    return (e * (1.0 / e.sum(-1, keepdim=True))).bfloat16()


def quant_f32(X, clamp=True):
    """S by division, Q by a multiplication with 1/S (rounds differently from X / S)."""
    amax = X.float().abs().amax(-1)
    S = (amax.clamp(min=C.AMAX_FLOOR) if clamp else amax) / C.E4M3_MAX
    q = (X.float() * (1.0 / S)[:, None]).clamp(-C.E4M3_MAX, C.E4M3_MAX)
    return {"Q": q.to(torch.float8_e4m3fn), "S": S}


def emulate(family: str, inp: dict, sc: dict) -> dict:
    if family == "rmsnorm":
        return {"Y": rms_f32(inp["X"].float(), inp["W"], sc["eps"])}
    if family == "layernorm":
        return {"Y": ln_f32(inp["X"], inp["W"], inp["Bias"], sc["eps"])}
    if family == "softmax":
        return {"Y": softmax_f32(inp["X"])}
    if family == "add_rmsnorm":
        h = inp["X"].float() + inp["Res"].float()
        return {"Hs": h.bfloat16(), "Y": rms_f32(h, inp["W"], sc["eps"])}
    return quant_f32(inp["X"])


def torch_op(family: str, inp: dict, sc: dict) -> dict:
    """The torch baseline's values (the baselines themselves may not write Y: contract.py)."""
    if family == "rmsnorm":
        return {"Y": C.rms_norm_result(inp["X"], inp["W"], sc["eps"])}
    if family == "layernorm":
        return {"Y": C.layer_norm_result(inp["X"], inp["W"], inp["Bias"], sc["eps"])}
    if family == "softmax":
        Y = torch.empty_like(inp["X"])
        C.torch_softmax(inp["X"], Y)
        return {"Y": Y}
    if family == "add_rmsnorm":
        Hs = torch.empty_like(inp["X"])
        C.torch_add_rms_norm(inp["X"], inp["Res"], inp["W"], Hs, torch.empty_like(Hs), sc["eps"])
        return {"Hs": Hs, "Y": C.rms_norm_result(Hs, inp["W"], sc["eps"])}
    R, H = inp["X"].shape
    Q = torch.empty(R, H, dtype=torch.float8_e4m3fn, device=inp["X"].device)
    S = torch.empty(R, device=inp["X"].device)
    C.torch_quant_fp8(inp["X"], Q, S)
    return {"Q": Q, "S": S}


# --- the files ------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_contract_is_consistent(family):
    c = load(family)
    assert c["kernel"] == f"../../examples/{family}_sm90.py" and c["entry"] == family
    assert c["targets"] == ["sm_90a"] and c["specialize"] == {"H": "H"}
    assert c["inputs"]["distributions"][0] == "normal"  # bench times the first one
    assert set(c["tolerance"]) == set(outputs(c))
    dims = c["dims"]
    for which in ("check", "bench", "held_out"):
        for s in c["shapes"][which]:
            assert set(s) == {"R", "H"}
            for d, v in s.items():
                assert dims[d]["min"] <= v <= dims[d]["max"] and v % dims[d].get("multiple_of", 1) == 0
    assert {"R": 32768, "H": 4096} in c["shapes"]["bench"]
    assert len({s["H"] for s in c["shapes"]["check"]}) <= 6  # one build per H
    for name, ref in [("generator", c["inputs"]["generator"]), ("oracle", c["oracle"]["function"]),
                      *c["baselines"].items()]:
        assert callable(fn(ref)), (name, ref)
    # The oracle takes the inputs and scalars; each baseline is callable like the kernel.
    inputs = [n for n, t in c["tensors"].items() if t["role"] == "input"]
    assert list(inspect.signature(fn(c["oracle"]["function"])).parameters) == inputs + list(scalars(c))
    for ref in c["baselines"].values():
        inspect.signature(fn(ref)).bind(**{n: None for n in c["tensors"]}, **scalars(c))


@pytest.mark.parametrize("family", FAMILIES)
def test_generators_and_oracles_match_the_tensors(family):
    c = load(family)
    for dist in c["inputs"]["distributions"]:
        shape = {"R": 5, "H": 1032}
        inp = draw(c, shape, dist)
        for n, t in c["tensors"].items():
            if t["role"] == "input":
                assert inp[n].dtype == torch_dtype(torch, t["dtype"]) and inp[n].shape == bound(t, shape)
                assert inp[n].is_contiguous() and torch.isfinite(inp[n].float()).all()
        ref = fn(c["oracle"]["function"])(**inp, **scalars(c))
        for n in outputs(c):
            assert tuple(ref[n].shape) == bound(c["tensors"][n], shape)
            assert torch.isfinite(ref[n].float()).all(), (dist, n)
        assert draw(c, shape, dist, seed=1)["X"].ne(inp["X"]).any() or dist == "ties"


def test_distributions_mean_what_the_docstring_says():
    g = torch.Generator()
    g.manual_seed(3)
    x = C._rows(300, 1032, "ties", g)
    assert (x == x[:, :1]).all() and (x[0] == 0).all()
    assert (x.abs() == 1e4).any()
    x = C._rows(300, 1032, "heavy_tailed", g).bfloat16().float()
    assert x[0::3].abs().amax() > 1e4
    off = x[1::3]
    ratio = off.var(-1) / off.mean(-1) ** 2
    assert ((off.mean(-1).abs() - 1e4).abs() < 200).all() and (ratio < 1e-3).all() and ratio.min() < 1e-5
    assert x[2::3].abs().amax() < C.AMAX_FLOOR
    assert (C.make_layernorm_inputs({"R": 300, "H": 1032}, "ties", g)["X"].float().abs() < 1e4).all()
    inp = C.make_add_rmsnorm_inputs({"R": 8, "H": 1024}, "ties", g)
    h = inp["X"].float() + inp["Res"].float()
    assert (h[0::2] == 0).all()


# --- tolerances -----------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_f32_kernels_and_torch_pass(family):
    c = load(family)
    sc = scalars(c)
    for shape in shapes(c):
        for dist in c["inputs"]["distributions"]:
            inp = draw(c, shape, dist)
            ref = fn(c["oracle"]["function"])(**inp, **sc)
            for who, got in (("f32 kernel", emulate(family, inp, sc)), ("torch", torch_op(family, inp, sc))):
                for n in outputs(c):
                    assert got[n].dtype == torch_dtype(torch, c["tensors"][n]["dtype"])
                    rep = judge(c, n, got[n], ref[n])
                    assert rep.passed, (who, shape, dist, rep.reason(n))


def test_known_defects_fail():
    sc = {"eps": 1e-5}
    c = load("layernorm")
    inp = draw(c, {"R": 64, "H": 5000}, "heavy_tailed")  # fails at every check shape with R = 1000 too
    ref = C.layernorm_oracle(**inp, **sc)["Y"]
    assert not judge(c, "Y", ln_f32(inp["X"], inp["W"], inp["Bias"], 1e-5, one_pass=True), ref).passed

    c = load("softmax")
    inp = draw(c, {"R": 64, "H": 1032}, "heavy_tailed")
    assert not judge(c, "Y", softmax_f32(inp["X"], stable=False), C.softmax_oracle(**inp)["Y"]).passed

    c = load("rmsnorm")
    inp = draw(c, {"R": 64, "H": 1032}, "normal")
    padded = rms_f32(inp["X"].float(), inp["W"], 1e-6, H_div=1152)  # a mean over 9 × 128 columns
    assert not judge(c, "Y", padded, C.rmsnorm_oracle(**inp, eps=1e-6)["Y"]).passed

    c = load("quant_fp8")
    inp = draw(c, {"R": 8, "H": 1024}, "ties")  # row 0 is zero
    ref = C.quant_oracle(**inp)
    got = quant_f32(inp["X"], clamp=False)
    assert not judge(c, "S", got["S"], ref["S"]).passed and not judge(c, "Q", got["Q"], ref["Q"]).passed
    assert ref["S"][0] == torch.tensor(C.AMAX_FLOOR / C.E4M3_MAX) and (ref["Q"][0] == 0).all()
    # Q one step off everywhere passes (the tolerance), two steps do not.
    q = ref["Q"]
    bits = q.to(torch.float8_e4m3fn).view(torch.uint8)
    for steps, ok in ((1, True), (2, False)):
        moved = torch.where(q.abs() < 400, bits + steps, bits).view(torch.float8_e4m3fn)
        assert judge(c, "Q", moved, q).passed == ok


# --- baselines ------------------------------------------------------------------------------

@pytest.mark.parametrize("family", FAMILIES)
def test_baselines_run_as_the_runner_calls_them(family):
    c = load(family)
    shape = {"R": 3, "H": 1032}
    inp = draw(c, shape, "normal")
    for name, ref in c["baselines"].items():
        outs = {n: torch.full(bound(c["tensors"][n], shape), math.nan).to(torch_dtype(torch, c["tensors"][n]["dtype"]))
                for n in outputs(c)}
        kwargs = {n: (inp if t["role"] == "input" else outs)[n] for n, t in c["tensors"].items()}
        before = {n: x.clone() for n, x in inp.items()}
        fn(ref)(**kwargs, **scalars(c))
        assert all(torch.equal(inp[n], before[n]) for n in inp), name
        if name == "copy" and family != "quant_fp8":
            assert torch.equal(outs["Hs" if family == "add_rmsnorm" else "Y"], inp["X"])
