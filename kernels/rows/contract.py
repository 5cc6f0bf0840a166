"""Python side of the row-kernel contracts (rmsnorm, layernorm, softmax, add_rmsnorm, quant_fp8;
issue #20): input generators, oracles and baselines.

Every tensor is (R, H) bf16 unless said otherwise. The contract runner only accepts the
built-in distribution names (docs/contracts.md), so the generators give them the meanings
these families need:

  normal        N(0, 1).
  heavy_tailed  extreme magnitudes, by row (row r % 3): 0: N(0, 1)·1e4 (softmax overflows
                without a max subtraction); 1: ±1e4 + 64·round(s·N(0, 1)), s ∈ [0.2, 2] per
                row: on bf16's grid at 1e4 (spacing 64) with a variance down to ~1e-6 of the
                mean's square, so E[x²] − E[x]² in f32 cancels (a one-pass LayerNorm fails,
                two-pass or Welford pass); 2: N(0, 1)·1e-13, below quant_fp8's amax clamp.
  ties          every row constant (all its elements equal), row 0 zero: softmax is uniform,
                LayerNorm's variance is 0 (Y = Bias), quant_fp8's zero row takes the clamp.

The oracles compute in f64 from the bf16 inputs and return f32 (no bf16 rounding: the
tolerances absorb the kernel's one rounding), except add_rmsnorm's Hs (bf16, exact).

Baselines are called like the kernel (inputs, outputs, scalars by name). The runner times
them and records whether their outputs match (`outputs_ok`) but judges only the candidate's.
`copy` (every family) copies bf16 (R, H) data: the issue's bandwidth reference, not the op,
so its outputs are wrong by design; so are those of the baselines below that cannot write
into a given tensor without an extra pass.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

E4M3_MAX = 448.0  # largest finite float8_e4m3fn
AMAX_FLOOR = 1e-12  # quant_fp8: S = max(amax, 1e-12) / 448, so an all-zero row has a finite scale
_EQUAL_VALUES = (0.0, 1.0, -2.5, 0.375, 7.0, -0.0078125)  # ties: exact in bf16, |c| small (see make_layernorm_inputs)


def _rows(R: int, H: int, distribution: str, g: torch.Generator, *, equal_large: bool = True) -> torch.Tensor:
    """An (R, H) f32 tensor drawn as the module docstring says (not yet rounded to bf16), on the
    generator's device. `equal_large`: ties may use ±1e4 as a row's constant."""
    kw = dict(device=g.device, generator=g)
    if distribution == "normal":
        return torch.randn(R, H, **kw)
    if distribution == "heavy_tailed":
        kind = torch.arange(R, device=g.device)[:, None] % 3
        big = torch.randn(R, H, **kw) * 1e4
        sign = torch.where(torch.rand(R, 1, **kw) < 0.5, -1.0, 1.0)
        spread = 0.2 + 1.8 * torch.rand(R, 1, **kw)
        offset = sign * 1e4 + 64 * (spread * torch.randn(R, H, **kw)).round()
        tiny = torch.randn(R, H, **kw) * 1e-13
        return torch.where(kind == 0, big, torch.where(kind == 1, offset, tiny))
    if distribution == "ties":
        values = list(_EQUAL_VALUES) + ([1e4, -1e4] if equal_large else [])
        table = torch.tensor(values, device=g.device)
        pick = torch.randint(0, len(values), (R, 1), **kw)
        pick[0] = 0  # row 0 all zeros
        return table[pick].expand(R, H).contiguous()
    raise ValueError(f"unknown distribution {distribution!r}")


def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).contiguous()


def _vector(H: int, g: torch.Generator, mean: float = 0.0) -> torch.Tensor:
    """A weight or bias vector (H,) in bf16: mean + N(0, 1)."""
    return _bf16(mean + torch.randn(H, device=g.device, generator=g))


# --- inputs ---------------------------------------------------------------------------------

def make_rmsnorm_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    R, H = shape["R"], shape["H"]
    return {"X": _bf16(_rows(R, H, distribution, generator)), "W": _vector(H, generator, 1.0)}


def make_layernorm_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """No ±1e4 constant rows: their exact mean is the constant, but a kernel's f32 sum·(1/H)
    may miss it by an ulp (~1e-3 at 1e4), which 1/sqrt(eps) = 316 turns into 0.3: the contract's
    eps, not the kernel, would be judged. The cancellation at 1e4 is exercised by heavy_tailed's
    offset rows instead."""
    R, H = shape["R"], shape["H"]
    return {
        "X": _bf16(_rows(R, H, distribution, generator, equal_large=False)),
        "W": _vector(H, generator, 1.0),
        "Bias": _vector(H, generator),
    }


def make_softmax_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    R, H = shape["R"], shape["H"]
    return {"X": _bf16(_rows(R, H, distribution, generator))}


def make_add_rmsnorm_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """X and Res drawn alike; under ties, Res = -X on every other row, so h = X + Res is an
    all-zero row there (Y = 0), and 2·X on the others."""
    R, H = shape["R"], shape["H"]
    x = _rows(R, H, distribution, generator)
    if distribution == "ties":
        res = torch.where(torch.arange(R, device=x.device)[:, None] % 2 == 0, -x, x)
    else:
        res = _rows(R, H, distribution, generator)
    return {"X": _bf16(x), "Res": _bf16(res), "W": _vector(H, generator, 1.0)}


def make_quant_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    R, H = shape["R"], shape["H"]
    return {"X": _bf16(_rows(R, H, distribution, generator))}


# --- oracles (f64 math on the bf16 inputs) ----------------------------------------------------

def _rms_scale(h: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.rsqrt(h.square().mean(-1, keepdim=True) + eps)


def rmsnorm_oracle(X, W, eps) -> dict:
    x = X.double()
    return {"Y": (x * _rms_scale(x, eps) * W.double()).float()}


def layernorm_oracle(X, W, Bias, eps) -> dict:
    """Two-pass mean and biased variance."""
    x = X.double()
    d = x - x.mean(-1, keepdim=True)
    var = d.square().mean(-1, keepdim=True)
    return {"Y": (d * torch.rsqrt(var + eps) * W.double() + Bias.double()).float()}


def softmax_oracle(X) -> dict:
    return {"Y": torch.softmax(X.double(), dim=-1).float()}


def add_rmsnorm_oracle(X, Res, W, eps) -> dict:
    """Hs is bf16(X + Res), as any kernel rounds it (one rounding of the f32 sum, which is
    exact for these inputs); Y normalizes the unrounded sum."""
    h = X.double() + Res.double()
    return {
        "Hs": (X.float() + Res.float()).to(torch.bfloat16),
        "Y": (h * _rms_scale(h, eps) * W.double()).float(),
    }


def quant_oracle(X) -> dict:
    """S in f32 as the formula says; Q = X / S in f32, saturated to ±448 (torch's float8
    conversion turns out-of-range values into NaN, and X / S can round just above 448), rounded
    to e4m3 (nearest, ties to even) and returned as f32."""
    amax = X.float().abs().amax(-1)
    S = amax.clamp(min=AMAX_FLOOR) / E4M3_MAX
    q = (X.float() / S[:, None]).clamp(-E4M3_MAX, E4M3_MAX)
    return {"Q": q.to(torch.float8_e4m3fn).float(), "S": S}


# --- baselines ------------------------------------------------------------------------------
# F.rms_norm and F.layer_norm have no out= variant (aten's native_layer_norm.out is generated:
# it computes, then copies). Copying their result into Y would add a full pass over R·H to the
# baseline's time (2× at 32768 × 4096), so these baselines time the op alone and drop its
# result: Y stays poisoned and their `outputs_ok` in the evidence is false by design. Their
# values are the `*_result` functions', which test_rows_contracts.py compares with the oracles.

def rms_norm_result(X, W, eps) -> torch.Tensor:
    return F.rms_norm(X, (X.shape[-1],), W, eps)


def layer_norm_result(X, W, Bias, eps) -> torch.Tensor:
    return F.layer_norm(X, (X.shape[-1],), W, Bias, eps)


def torch_rms_norm(X, W, Y, eps) -> None:
    """torch.nn.functional.rms_norm (one fused kernel on CUDA); Y is not written (above)."""
    rms_norm_result(X, W, eps)


def torch_layer_norm(X, W, Bias, Y, eps) -> None:
    """torch.nn.functional.layer_norm; Y is not written (above)."""
    layer_norm_result(X, W, Bias, eps)


def torch_softmax(X, Y) -> None:
    """torch.softmax in bf16, written into Y by its out= kernel."""
    torch.softmax(X, dim=-1, out=Y)


def torch_add_rms_norm(X, Res, W, Hs, Y, eps) -> None:
    """The unfused composition: the bf16 add into Hs, then rms_norm of Hs (Y not written)."""
    torch.add(X, Res, out=Hs)
    rms_norm_result(Hs, W, eps)


def torch_quant_fp8(X, Q, S) -> None:
    """torch's reference composition for per-token e4m3 quantization: amax, scale, divide,
    saturate, convert (the copy into Q is the f32 → e4m3 conversion)."""
    amax = X.abs().amax(-1, keepdim=True).float()
    s = amax.clamp(min=AMAX_FLOOR) / E4M3_MAX
    Q.copy_((X.float() / s).clamp_(-E4M3_MAX, E4M3_MAX))
    S.copy_(s.squeeze(-1))


def copy_to_y(X, Y, **_) -> None:
    """Bandwidth reference (rmsnorm, layernorm, softmax): X copied into Y, the op's traffic
    less the vectors."""
    Y.copy_(X)


def copy_two(X, Res, Hs, Y, **_) -> None:
    """Bandwidth reference (add_rmsnorm): X into Hs and Res into Y, the op's traffic."""
    Hs.copy_(X)
    Y.copy_(Res)


_SCRATCH: dict = {}


def copy_to_scratch(X, **_) -> None:
    """Bandwidth reference (quant_fp8): X copied into a bf16 buffer of its size (4·R·H bytes
    against the op's 3·R·H), kept between calls (allocated on the first, a warmup call); Q and S
    are left alone."""
    key = (tuple(X.shape), X.device)
    buf = _SCRATCH.get(key)
    if buf is None:
        _SCRATCH.clear()  # one shape at a time: free the previous shape's buffer
        buf = _SCRATCH[key] = torch.empty_like(X)
    buf.copy_(X)


# --- fallbacks (the families' *.family.toml): the torch op, written into the outputs --------

def rms_norm_into(X, W, Y, eps) -> None:
    Y.copy_(rms_norm_result(X, W, eps))


def layer_norm_into(X, W, Bias, Y, eps) -> None:
    Y.copy_(layer_norm_result(X, W, Bias, eps))


def softmax_into(X, Y) -> None:
    torch.softmax(X, dim=-1, out=Y)


def add_rms_norm_into(X, Res, W, Hs, Y, eps) -> None:
    torch.add(X, Res, out=Hs)
    Y.copy_(rms_norm_result(Hs, W, eps))


def quant_fp8_into(X, Q, S) -> None:
    torch_quant_fp8(X, Q, S)
