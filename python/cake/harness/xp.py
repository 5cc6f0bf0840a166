"""A tiny array namespace: the handful of operations the policies need, for torch and numpy.

The GPU worker compares torch tensors; the CPU tests compare numpy arrays. Both go through
`namespace(a)`, which picks by the array's module without importing torch.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from .inputs import storage_poison_bits


def namespace(a: Any) -> "_Ops":
    root = type(a).__module__.split(".")[0]
    if root == "torch":
        return _TORCH
    if root == "numpy":
        return _numpy_ops()
    raise TypeError(f"expected a torch tensor or a numpy array, got {type(a).__name__}")


def unravel(flat: int, shape: Sequence[int]) -> List[int]:
    """Row-major multi-index of a flat index."""
    out = []
    for n in reversed(tuple(shape)):
        out.append(flat % n if n else 0)
        flat = flat // n if n else 0
    return list(reversed(out))


class _Ops:
    def count(self, mask: Any) -> int:
        return int(mask.sum())

    def first_true(self, mask: Any) -> Optional[List[int]]:
        """Multi-index of the first True (row-major), or None."""
        if self.count(mask) == 0:
            return None
        # argmax returns the first maximum in both numpy and torch
        flat = int(self._flat_u8(mask).argmax())
        return unravel(flat, tuple(mask.shape))

    def max(self, a: Any, mask: Any) -> Optional[float]:
        """Max of a over mask, None when the mask is empty."""
        if self.count(mask) == 0:
            return None
        return float(self.where(mask, a, -float("inf")).max())

    def poison_bits(self, a: Any) -> Optional[int]:
        """The poison bit pattern of a floating array's own dtype (inputs.POISON_BITS)."""
        if not self.is_floating(a):
            return None
        bits = storage_poison_bits(self.dtype_name(a))
        if bits is None:
            raise TypeError(f"no poison bit pattern for dtype {self.dtype_name(a)}")
        return bits

    def is_poison(self, a: Any, sentinel: Any) -> Any:
        """Elementwise: still the poison (floats: the poison's bits exactly; integers: the
        sentinel). Every poison pattern has its sign bit clear, so it compares the same
        through a signed or an unsigned integer view."""
        bits = self.poison_bits(a)
        if bits is None:
            return a == sentinel
        return self.bits(a) == bits

    def count_not_poison(self, a: Any, sentinel: Any) -> int:
        return int(_numel(a)) - self.count(self.is_poison(a, sentinel))


class _NumpyOps(_Ops):
    def __init__(self) -> None:
        import numpy as np

        self.np = np

    def f64(self, a: Any, like: Any = None) -> Any:
        with self.np.errstate(invalid="ignore"):  # casting a signalling NaN (the poison) warns
            return self.np.asarray(a).astype(self.np.float64)

    def dtype_name(self, a: Any) -> str:
        return str(a.dtype.name)

    def is_real(self, a: Any) -> bool:
        """A real numeric (or boolean) dtype: what an oracle may return."""
        return a.dtype.kind in "biuf"

    def fill_poison(self, a: Any, sentinel: Any) -> None:
        """Fill with the poison: floats through an unsigned view of the same width."""
        bits = self.poison_bits(a)
        if bits is None:
            a.fill(sentinel)
        else:
            a.view(f"u{a.dtype.itemsize}").fill(bits)

    def cast_like(self, a: Any, like: Any) -> Any:
        return self.np.asarray(a).astype(like.dtype)

    def is_floating(self, a: Any) -> bool:
        return self.np.issubdtype(a.dtype, self.np.floating)

    def isfinite(self, a: Any) -> Any:
        return self.np.isfinite(a)

    def isnan(self, a: Any) -> Any:
        return self.np.isnan(a)

    def where(self, mask: Any, a: Any, b: Any) -> Any:
        return self.np.where(mask, a, b)

    def bits(self, a: Any) -> Any:
        shape = a.shape  # ascontiguousarray makes 0-d arrays 1-d
        a = self.np.ascontiguousarray(a)
        return a.view(f"u{a.dtype.itemsize}").reshape(shape)

    def _flat_u8(self, mask: Any) -> Any:
        return mask.reshape(-1).astype(self.np.uint8)

    def same_device(self, a: Any, like: Any) -> Any:
        return self.np.asarray(a)


class _TorchOps(_Ops):
    _BITS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}

    @property
    def torch(self) -> Any:
        import torch

        return torch

    def f64(self, a: Any, like: Any = None) -> Any:
        device = like.device if like is not None else a.device
        return a.to(device=device, dtype=self.torch.float64)

    def cast_like(self, a: Any, like: Any) -> Any:
        return a.to(device=like.device, dtype=like.dtype)

    def dtype_name(self, a: Any) -> str:
        return str(a.dtype).replace("torch.", "")

    def is_real(self, a: Any) -> bool:
        return not a.dtype.is_complex

    def is_floating(self, a: Any) -> bool:
        return bool(a.dtype.is_floating_point)

    def isfinite(self, a: Any) -> Any:
        return self.torch.isfinite(a)

    def isnan(self, a: Any) -> Any:
        return self.torch.isnan(a)

    def where(self, mask: Any, a: Any, b: Any) -> Any:
        return self.torch.where(mask, a, b)

    def bits(self, a: Any) -> Any:
        return a.contiguous().view(getattr(self.torch, self._BITS[a.element_size()]))

    def _flat_u8(self, mask: Any) -> Any:
        return mask.reshape(-1).to(self.torch.uint8)

    def same_device(self, a: Any, like: Any) -> Any:
        return a.to(device=like.device)


_NUMPY: "Optional[_NumpyOps]" = None  # made on first use: numpy is imported lazily
_TORCH = _TorchOps()


def _numpy_ops() -> _NumpyOps:
    global _NUMPY
    if _NUMPY is None:
        _NUMPY = _NumpyOps()
    return _NUMPY


def _numel(a: Any) -> int:
    n = 1
    for d in tuple(a.shape):
        n *= int(d)
    return n


def is_array(a: Any) -> bool:
    """A torch tensor or a numpy array (what `namespace` accepts)."""
    return type(a).__module__.split(".")[0] in ("torch", "numpy") and hasattr(a, "shape") and hasattr(a, "dtype")


def bits_equal(a: Any, b: Any) -> bool:
    """Whole-array bitwise equality (same shape, same dtype)."""
    if tuple(a.shape) != tuple(b.shape) or a.dtype != b.dtype:
        return False
    ops = namespace(a)
    return bool((ops.bits(a) == ops.same_device(ops.bits(b), a)).all())
