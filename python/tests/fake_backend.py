"""A numpy stand-in for the worker's torch backend (CAKE_WORKER_BACKEND=fake_backend:make_backend).

Same interface as cake.harness.torch_backend.TorchBackend. "Kernels" are loaded from fake
launch.json files holding {"fake": BEHAVIOUR} (and, for some, "good_calls": n); each computes
C = A + alpha * B on numpy arrays, with a flaw chosen by BEHAVIOUR. Outputs are stored in the
numpy dtype NP_DTYPES gives (bf16 as float32, fp8 as float16) and poisoned with the poison
bits of that storage dtype. A "CUDA error" is simulated by raising torch's messages, and
an asynchronous fault by making the next synchronize() raise.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from cake import LaunchError
from cake.harness import inputs as I
from cake.harness.timing import CuptiResult
from cake.harness.xp import namespace

NP_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32,
             "fp8e4m3": np.float16, "fp8e5m2": np.float16, "i32": np.int32, "i64": np.int64,
             "u8": np.uint8, "i8": np.int8}


def _good(b, A, B, C, alpha):
    C[...] = A + alpha * B


def _half(b, A, B, C, alpha):
    n = C.shape[0] // 2  # rows from n on are never written
    C[:n] = A[:n] + alpha * B[:n]


def _modifies_input(b, A, B, C, alpha):
    _good(b, A, B, C, alpha)
    A[0, 0] += 1


def _nondeterministic(b, A, B, C, alpha):
    b.calls += 1
    _good(b, A, B, C, alpha)
    C[0, 0] += np.float32(1e-6) * b.calls  # within allclose, but not bitwise repeatable


def _wrong(b, A, B, C, alpha):
    _good(b, A, B, C, alpha)
    C[1, 2] += 5


def _launch_error(b, A, B, C, alpha):
    raise LaunchError("tensor `C`: expected dtype f32, got f16")


def _sticky(b, A, B, C, alpha):
    raise RuntimeError("CUDA error: an illegal memory access was encountered")


def _async_fault(b, A, B, C, alpha):
    _good(b, A, B, C, alpha)
    b.pending_error = "unspecified launch failure"  # surfaces at the next synchronize


def _oom(b, A, B, C, alpha):
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


def _chatty(b, A, B, C, alpha):
    print("a stray print on stdout")
    os.write(1, b"a stray write on fd 1\n")
    _good(b, A, B, C, alpha)


def _exits(b, A, B, C, alpha):
    sys.exit(2)


def _flat_owner(C):
    """The flat buffer C is a view of, and C's offset in it (elements): what a kernel writing
    out of bounds reaches."""
    owner = C.base
    while owner is not None and owner.base is not None:
        owner = owner.base
    assert owner is not None, "the output is not a view of a guarded buffer"
    offset = (C.__array_interface__["data"][0] - owner.__array_interface__["data"][0]) // C.itemsize
    return owner.reshape(-1), offset


def _oob_after(b, A, B, C, alpha):
    _good(b, A, B, C, alpha)
    flat, off = _flat_owner(C)
    flat[off + C.size:off + C.size + 3] = 0  # 3 elements past the end


def _oob_before(b, A, B, C, alpha):
    _good(b, A, B, C, alpha)
    flat, off = _flat_owner(C)
    flat[off - 2:off] = 1  # 2 elements before the start
    flat[off + C.size] = 1  # and 1 past the end


def _writes_nan(b, A, B, C, alpha):
    _good(b, A, B, C, alpha)
    C[0, 1] = np.nan  # a NaN it computed: not the poison's payload
    C[2, 3] = np.inf


def _decays(b, A, B, C, alpha):
    """Right for the first `good_calls` calls, then wrong (a counter that is never reset)."""
    _good(b, A, B, C, alpha)
    if b.call_index > b.good_calls:
        C[0, 0] += 1


def _stale(b, A, B, C, alpha):
    """Right for the first `good_calls` calls, then writes nothing (a "done" flag never reset)."""
    if b.call_index <= b.good_calls:
        _good(b, A, B, C, alpha)


class CudaError(Exception):
    """Shaped like cake.CudaError: the CUresult name in `result`, maybe not in the message."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result


def _driver_fault(b, A, B, C, alpha):
    raise CudaError("cuCtxSynchronize failed (700)", result="CUDA_ERROR_ILLEGAL_ADDRESS")


KERNELS: Dict[str, Callable[..., None]] = {
    "good": _good, "half": _half, "modifies_input": _modifies_input, "nondeterministic": _nondeterministic,
    "wrong": _wrong, "launch_error": _launch_error, "sticky": _sticky, "async_fault": _async_fault,
    "oom": _oom, "chatty": _chatty, "exits": _exits, "driver_fault": _driver_fault,
    "oob_after": _oob_after, "oob_before": _oob_before, "writes_nan": _writes_nan, "decays": _decays,
    "stale": _stale,
}


class FakeBackend:
    def __init__(self) -> None:
        self.pending_error: "str | None" = None
        self.calls = 0
        self.call_index = 0  # calls of the kernel being called, since it was loaded
        self.good_calls = 0

    def env(self) -> Dict[str, Any]:
        return {"python": platform.python_version(), "torch": None, "cuda_runtime": None, "driver": None,
                "gpu": "fake numpy device", "cc": [0, 0], "sm_count": 1, "l2_bytes": 0, "clocks": None,
                "measured_bandwidth_gbps": None}

    def load_kernel(self, path: str) -> Callable[..., None]:
        try:
            with open(path, encoding="utf-8") as fh:
                meta = json.load(fh)
            behaviour = meta["fake"]
        except (OSError, ValueError, KeyError) as e:
            raise LaunchError(f"cannot load {path}: {e}") from None
        if "load_error" in meta:  # e.g. a CUDA error while loading the module
            raise RuntimeError(meta["load_error"])
        if behaviour not in KERNELS:
            raise LaunchError(f"{path}: unknown fake kernel {behaviour!r}")
        kernel = KERNELS[behaviour]
        state = {"calls": 0, "good_calls": int(meta.get("good_calls", 3))}

        def call(**kw: Any) -> None:
            state["calls"] += 1
            self.call_index, self.good_calls = state["calls"], state["good_calls"]
            kernel(self, **kw)
            if "grid" in meta:
                call.last_grid = tuple(meta["grid"])

        if "residency" in meta:  # a Cake kernel's driver facts (cake.runtime.Kernel.residency)
            def residency() -> Dict[str, Any]:
                if meta["residency"] == "fails":
                    raise RuntimeError("cuOccupancyMaxActiveClusters failed")
                return dict(meta["residency"])

            call.residency = residency
        return call

    def generator(self, seed: int) -> Any:
        return np.random.default_rng(seed)

    def random_input(self, dtype: str, shape: Tuple[int, ...], distribution: str, rng: Any) -> Any:
        I.check_distribution(distribution)
        if not I.is_float(dtype):
            return rng.integers(0, 1024, size=shape).astype(NP_DTYPES[dtype])
        if distribution == "ties":
            return rng.integers(-2, 3, size=shape).astype(NP_DTYPES[dtype])
        return rng.standard_normal(shape).astype(NP_DTYPES[dtype])

    def adopt(self, value: Any, dtype: str, shape: Tuple[int, ...]) -> Any:
        if not isinstance(value, np.ndarray):
            raise ValueError(f"expected a numpy array, got {type(value).__name__}")
        if value.dtype != NP_DTYPES[dtype]:
            raise ValueError(f"dtype is {value.dtype}, the contract says {dtype}")
        if value.shape != tuple(shape):
            raise ValueError(f"shape is {list(value.shape)}, the contract says {list(shape)}")
        return np.ascontiguousarray(value)

    def empty(self, dtype: str, shape: Tuple[int, ...]) -> Any:
        return np.empty(shape, NP_DTYPES[dtype])

    def poison(self, a: Any, dtype: str) -> None:
        namespace(a).fill_poison(a, I.poison_value(dtype))

    def clone(self, a: Any) -> Any:
        return a.copy()

    def copy_into(self, dst: Any, src: Any) -> None:
        np.copyto(dst, src)

    def synchronize(self) -> None:
        if self.pending_error:
            raise RuntimeError(f"CUDA error: {self.pending_error}")

    def prepare_call(self, fn: Callable[..., Any], kwargs: Dict[str, Any]) -> Callable[[], Any]:
        return lambda: fn(**kwargs)

    def time_events(self, calls: List[Callable[[], Any]], warmup: int, samples: int,
                    flush_l2: bool, before_last: Any = None) -> List[List[float]]:
        out: List[List[float]] = [[] for _ in calls]
        self.timing_order = []
        for i in range(warmup + samples):
            for j, call in enumerate(calls):
                if before_last is not None and i == warmup + samples - 1:
                    before_last(j)
                self.timing_order.append(j)
                t0 = time.perf_counter()
                call()
                if i >= warmup:
                    out[j].append((time.perf_counter() - t0) * 1e3)
        return out

    def time_cupti(self, calls: List[Callable[[], Any]], samples: int, flush_l2: bool,
                   before_last: Any = None) -> List[CuptiResult]:
        # A flush after every call when flushing (its span: a fixed 0.05 ms).
        return [CuptiResult(spans, 1, ["fake_kernel"], [0.05] * len(spans) if flush_l2 else [])
                for spans in self.time_events(calls, 0, samples, flush_l2, before_last)]


def make_backend() -> FakeBackend:
    return FakeBackend()
