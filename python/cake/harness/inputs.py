"""Problem tensors: dtype table, shape binding, poison values, built-in distributions.

The table and the binding are plain Python (testable without torch); the samplers take
the torch module and a torch.Generator as arguments so that importing this module never
imports torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

Dim = Union[str, int]


class InputError(ValueError):
    """A problem or shape that cannot be bound (unknown dtype, unknown dimension name...)."""


@dataclass(frozen=True)
class DTypeInfo:
    name: str  # the contract's spelling
    torch_name: str  # attribute of the torch module
    kind: str  # "float" | "int" | "uint"
    bits: int


_DTYPE_LIST = [
    DTypeInfo("bf16", "bfloat16", "float", 16),
    DTypeInfo("f16", "float16", "float", 16),
    DTypeInfo("f32", "float32", "float", 32),
    DTypeInfo("f64", "float64", "float", 64),
    DTypeInfo("i32", "int32", "int", 32),
    DTypeInfo("i64", "int64", "int", 64),
    DTypeInfo("u8", "uint8", "uint", 8),
    DTypeInfo("i8", "int8", "int", 8),
    DTypeInfo("fp8e4m3", "float8_e4m3fn", "float", 8),
    DTypeInfo("fp8e5m2", "float8_e5m2", "float", 8),
]
DTYPES: Dict[str, DTypeInfo] = {d.name: d for d in _DTYPE_LIST}

DISTRIBUTIONS = ("normal", "uniform", "heavy_tailed", "clustered", "ties")
CLUSTER_CENTRES = 16
CLUSTER_SPREAD = 0.05
INT_INPUT_HIGH = 1024  # integer inputs draw from [0, 1024), capped at the dtype's range


def dtype_info(name: Any) -> DTypeInfo:
    if not isinstance(name, str) or name not in DTYPES:
        raise InputError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})")
    return DTYPES[name]


def is_float(dtype: str) -> bool:
    return dtype_info(dtype).kind == "float"


def int_range(dtype: str) -> Tuple[int, int]:
    """Inclusive [min, max] of an integer dtype."""
    d = dtype_info(dtype)
    if d.kind == "uint":
        return 0, (1 << d.bits) - 1
    if d.kind == "int":
        return -(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1
    raise InputError(f"{dtype} is not an integer dtype")


def poison_value(dtype: str) -> Union[float, int]:
    """What outputs are filled with before a call: NaN for floats (the NaN of POISON_BITS,
    written through an integer view), the minimum for signed integers and the maximum for
    unsigned ones (0, the minimum, is too common a result)."""
    if is_float(dtype):
        return math.nan
    lo, hi = int_range(dtype)
    return hi if dtype_info(dtype).kind == "uint" else lo


# The poison of floating outputs: a NaN with a payload no arithmetic produces (a GPU's NaN is
# 0x7FFF... / 0x7FC0...), so an element still holding these bits was never written, while any
# other NaN was written by the call. float8_e4m3fn has a single NaN encoding (0x7F).
POISON_BITS: Dict[str, int] = {
    "f16": 0x7EA5,
    "bf16": 0x7FA5,
    "f32": 0x7FA5A5A5,
    "f64": 0x7FF4A5A5A5A5A5A5,
    "fp8e4m3": 0x7F,
    "fp8e5m2": 0x7D,
}
_BY_STORAGE = {d.torch_name: d.name for d in _DTYPE_LIST}


def poison_bits(dtype: str) -> Optional[int]:
    """The bit pattern floating outputs of `dtype` are poisoned with; None for integers."""
    return POISON_BITS.get(dtype_info(dtype).name)


def storage_poison_bits(storage_name: str) -> Optional[int]:
    """poison_bits for an array's own dtype, named as torch and numpy name it ("bfloat16",
    "float32", "float8_e4m3fn"...); None for integer (or unknown) dtypes."""
    name = _BY_STORAGE.get(storage_name)
    return POISON_BITS.get(name) if name else None


def torch_dtype(torch: Any, dtype: str) -> Any:
    return getattr(torch, dtype_info(dtype).torch_name)


def check_distribution(name: Any) -> str:
    if name not in DISTRIBUTIONS:
        raise InputError(f"unknown distribution {name!r} (known: {', '.join(DISTRIBUTIONS)})")
    return name


def check_dims(dims: Any) -> Dict[str, int]:
    """The request's `shape`: dimension name -> non-negative int."""
    if not isinstance(dims, dict):
        raise InputError(f"shape: expected an object of dimension sizes, got {dims!r}")
    for k, v in dims.items():
        if not _is_int(v) or v < 0:
            raise InputError(f"shape: dimension {k!r} must be a non-negative integer, got {v!r}")
    return dict(dims)


def bind_shape(tensor: str, shape: Sequence[Dim], dims: Dict[str, int]) -> Tuple[int, ...]:
    """Resolve a contract shape (names or ints) against the request's dimension sizes."""
    out: List[int] = []
    for i, d in enumerate(shape):
        if _is_int(d):
            if d < 0:
                raise InputError(f"tensor {tensor}: dimension {i} is negative ({d})")
            out.append(int(d))
        elif isinstance(d, str):
            if d not in dims:
                known = ", ".join(sorted(dims)) or "none"
                raise InputError(f"tensor {tensor}: unknown dimension name {d!r} (the request's shape has {known})")
            out.append(dims[d])
        else:
            raise InputError(f"tensor {tensor}: dimension {i} must be a name or an integer, got {d!r}")
    return tuple(out)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


# --------------------------------------------------------------------------------------
# built-in distributions (torch)
# --------------------------------------------------------------------------------------


def random_tensor(torch: Any, dtype: str, shape: Tuple[int, ...], distribution: str, gen: Any,
                  device: Any) -> Any:
    """One input tensor of `dtype` drawn from `distribution` with the generator `gen`."""
    info = dtype_info(dtype)
    target = torch_dtype(torch, dtype)
    if info.kind != "float":
        lo, hi = int_range(dtype)
        high = min(INT_INPUT_HIGH, hi + 1)
        return torch.randint(0, high, shape, generator=gen, device=device, dtype=torch.int64).to(target)
    work = torch.float64 if dtype == "f64" else torch.float32
    x = sample_float(torch, distribution, shape, gen, device, work)
    if info.bits < 32:
        # Narrow dtypes (fp8 above all) turn out-of-range values into inf/NaN: clamp first.
        fmax = torch.finfo(target).max
        x = x.clamp_(-fmax, fmax)
    return x.to(target).contiguous()


def sample_float(torch: Any, distribution: str, shape: Tuple[int, ...], gen: Any, device: Any,
                 work: Any) -> Any:
    check_distribution(distribution)
    kw = {"generator": gen, "device": device, "dtype": work}
    if distribution == "normal":
        return torch.randn(shape, **kw)
    if distribution == "uniform":
        return torch.rand(shape, **kw).mul_(2).sub_(1)
    if distribution == "heavy_tailed":
        return student_t3(torch, shape, kw)
    if distribution == "clustered":
        return clustered(torch, shape, kw)
    # ties: small integers, so many values and distances are exactly equal
    return torch.randint(-2, 3, shape, generator=gen, device=device).to(work)


def student_t3(torch: Any, shape: Tuple[int, ...], kw: dict) -> Any:
    """Student's t with 3 degrees of freedom: z / sqrt(chi2_3 / 3)."""
    z = torch.randn(shape, **kw)
    chi2 = torch.randn((3,) + tuple(shape), **kw).square_().sum(0)
    return z / (chi2 / 3).sqrt_()


def clustered(torch: Any, shape: Tuple[int, ...], kw: dict) -> Any:
    """Rows (last dimension) drawn around 16 random centres; rank 1 falls back to normal."""
    if len(shape) < 2:
        return torch.randn(shape, **kw)
    d = shape[-1]
    rows = math.prod(shape[:-1])
    centres = torch.randn((CLUSTER_CENTRES, d), **kw)
    pick = torch.randint(0, CLUSTER_CENTRES, (rows,), generator=kw["generator"], device=kw["device"])
    x = centres[pick] + CLUSTER_SPREAD * torch.randn((rows, d), **kw)
    return x.reshape(shape)

