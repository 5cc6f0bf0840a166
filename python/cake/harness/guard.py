"""Outputs inside guard bands, to catch writes out of bounds (cake.worker/v0, `check`, `time`).

Each output is the interior of a flat buffer of guard + numel + guard elements: the callable
gets the contiguous view buf[guard:guard + numel] reshaped to the output's shape (a view, in
torch as in numpy). The whole buffer is poisoned before a call; afterwards every guard element
must still be the poison, else the call wrote outside its tensor.

The guard is 64 KiB worth of elements, so the interior starts 64 KiB into the allocation: a
256-byte-aligned allocation (torch's caching allocator gives 512) keeps the interior 256-byte
aligned, as TMA descriptors and vector accesses want.
"""

from __future__ import annotations

from typing import Any, Tuple

from . import inputs as I
from .xp import namespace

GUARD_BYTES = 64 << 10
ALIGNMENT = 256


def guard_elements(dtype: str) -> int:
    """Elements in each guard band of an output of `dtype`."""
    size = I.dtype_info(dtype).bits // 8
    g = GUARD_BYTES // size
    assert (g * size) % ALIGNMENT == 0, (dtype, g)
    return g


class GuardedOutput:
    """One output: `buf` (flat, with the guards) and `view` (what the callable writes)."""

    def __init__(self, backend: Any, dtype: str, shape: Tuple[int, ...]):
        self.backend, self.dtype, self.shape = backend, dtype, tuple(shape)
        n = 1
        for d in self.shape:
            n *= int(d)
        self.numel = n
        self.guard = g = guard_elements(dtype)
        self.buf = backend.empty(dtype, (g + n + g,))
        self.view = self.buf[g:g + n].reshape(self.shape)

    def poison(self) -> None:
        """Poison the whole buffer, guards included."""
        self.backend.poison(self.buf, self.dtype)

    def out_of_bounds(self) -> Tuple[int, int]:
        """(elements before, elements after) the output that are no longer the poison."""
        ops = namespace(self.buf)
        sentinel = I.poison_value(self.dtype)
        g, n = self.guard, self.numel
        return (ops.count_not_poison(self.buf[:g], sentinel),
                ops.count_not_poison(self.buf[g + n:], sentinel))
