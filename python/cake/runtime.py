"""Calling kernels built by Cake on torch tensors.

    from cake import load_kernel, LaunchError
    gemm = load_kernel("out/gemm.launch.json")
    gemm(A, B, C)                      # positional: the tensors, then the scalars, as declared
    gemm(A=A, B=B, C=C, stream=s)      # or by name; stream: a torch.cuda.Stream or a raw handle
    C = gemm.run(A, B)                 # outputs allocated from the launch metadata's shapes

All checking, binding, tensor-map encoding and the launch itself happen in Rust (cake-runtime,
through the CUDA driver API); this module only reads each tensor's description (`.shape`,
`.stride()`, `.dtype`, `.data_ptr()`, `.device`) and picks the stream. torch is imported only
when a launch needs the current stream, so validation works on duck-typed objects without torch.
"""

from __future__ import annotations

import os
from typing import Any

from ._native_loader import native
from .errors import LaunchError


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


_DTYPE_NAMES: dict = {}  # torch dtype object -> its str(), which the runtime parses


def describe_tensor(name: str, obj: Any) -> tuple:
    """`(name, dtype, shape, strides, data_ptr, device)` of a torch tensor or a duck-typed
    stand-in; `device` is the CUDA ordinal, or the device's name when it is not a CUDA device."""
    get_device = getattr(obj, "get_device", None)
    if get_device is not None and getattr(obj, "is_cuda", False):
        # A CUDA torch tensor: the few attribute reads a launch needs, and no torch.device
        # object (this path runs on every call; bench/launch_overhead.py measures it).
        dtype = obj.dtype
        text = _DTYPE_NAMES.get(dtype)
        if text is None:
            text = _DTYPE_NAMES.setdefault(dtype, str(dtype))
        return (name, text, list(obj.shape), list(obj.stride()), obj.data_ptr(), get_device())
    try:
        shape = [int(s) for s in obj.shape]
        strides = [int(s) for s in obj.stride()]
        ptr = int(obj.data_ptr())
        dtype = str(obj.dtype)
    except Exception:  # not tensor-like at all
        raise LaunchError(f"tensor `{name}`: expected a tensor, got {type(obj).__name__}") from None
    dev = getattr(obj, "device", None)
    if dev is None:
        device: Any = None
    elif getattr(dev, "type", None) == "cuda":
        index = getattr(dev, "index", None)
        device = 0 if index is None else int(index)
    else:
        device = str(getattr(dev, "type", dev))
    return (name, dtype, shape, strides, ptr, device)


def _scalar(v: Any) -> Any:
    if not isinstance(v, (int, float)) and hasattr(v, "item"):
        return v.item()  # 0-d tensors, numpy scalars
    return v


def _torch():
    try:
        import torch
    except ImportError as e:
        raise LaunchError(f"launching without stream= needs torch for the current stream: {e}") from None
    return torch


class PreparedLaunch:
    """A bound, packed launch: `launch()` (or calling it) re-issues exactly the same launch.

    The tensor maps hold raw addresses: valid only while the bound tensors stay alive and
    unchanged in shape (this object keeps references to them). Benchmarks use it to keep
    host-side binding out of timed regions.
    """

    def __init__(self, kernel: "Kernel", prepared: Any, keep: list):
        self.kernel = kernel
        self._prepared = prepared
        self._keep = keep
        self.grid = tuple(prepared.grid)

    def launch(self) -> None:
        self.kernel.last_grid = self.grid
        self._prepared.launch()

    __call__ = launch


class Kernel:
    """A Cake kernel: call it with torch CUDA tensors (and scalars) to launch it.

    Launches go to the stream given as `stream=` (a torch.cuda.Stream or a raw CUstream handle
    int), by default torch's current stream of the tensors' device, in that device's primary
    context (the one torch uses). Nothing synchronises.
    """

    def __init__(self, native_kernel: Any):
        self._k = native_kernel
        self.meta: dict = native_kernel.meta
        self.name: str = native_kernel.name
        self.param_names: list[str] = list(native_kernel.param_names)
        self.tensor_names: list[str] = list(native_kernel.tensor_names)
        self.scalar_names: list[str] = list(native_kernel.scalar_names)
        # Tensors the kernel only writes: what `run` allocates and returns.
        self.output_names: list[str] = [t["name"] for t in self.meta.get("tensors", [])
                                        if t.get("access") == "write"]
        self.last_grid: tuple[int, int, int] | None = None

    @property
    def path(self) -> str | None:
        p = self._k.path
        return None if p is None else os.fspath(p)

    def __repr__(self) -> str:
        return f"<cake.Kernel {self.name} ({', '.join(self.param_names)}) from {self.path}>"

    # ---- arguments ----------------------------------------------------------------------

    def _gather(self, args: tuple, kwargs: dict) -> dict:
        values = self._bind(self.param_names, args, kwargs, "arguments")
        missing = [n for n in self.param_names if n not in values]
        if missing:
            raise LaunchError(f"kernel `{self.name}`: missing argument(s) {', '.join(missing)} "
                              f"(expected: {', '.join(self.param_names)})")
        return values

    def _bind(self, positional: list[str], args: tuple, kwargs: dict, what: str) -> dict:
        """`args` over the names in `positional`, then `kwargs` by any parameter's name."""
        if len(args) > len(positional):
            raise LaunchError(f"kernel `{self.name}` takes {len(positional)} {what} ({', '.join(positional)}), "
                              f"got {len(args)} positional")
        values = dict(zip(positional, args))
        for k, v in kwargs.items():
            if k not in self.param_names:
                raise LaunchError(f"kernel `{self.name}`: unknown argument `{k}` "
                                  f"(expected: {', '.join(self.param_names)})")
            if k in values:
                raise LaunchError(f"kernel `{self.name}`: argument `{k}` given both positionally and by name")
            values[k] = v
        return values

    def _describe(self, args: tuple, kwargs: dict) -> tuple[list, dict, list]:
        values = self._gather(args, kwargs)
        tensors = [describe_tensor(n, values[n]) for n in self.tensor_names]
        scalars = {n: _scalar(values[n]) for n in self.scalar_names}
        keep = [values[n] for n in self.tensor_names]
        return tensors, scalars, keep

    @staticmethod
    def _device(tensors: list) -> int | None:
        """The launch device: the first tensor's, when it is a CUDA tensor (the runtime checks
        that every tensor is on it)."""
        if tensors and _is_int(tensors[0][5]):
            return tensors[0][5]
        return None

    def _stream(self, stream: Any, device: int | None) -> tuple[int, int | None]:
        if _is_int(stream):
            return stream, device
        if stream is None:
            torch = _torch()
            if device is None:
                if self.tensor_names:
                    return 0, None  # the first tensor is not on a CUDA device: the runtime says so
                device = torch.cuda.current_device()
            return int(torch.cuda.current_stream(device).cuda_stream), device
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            raise LaunchError(f"stream: expected a torch.cuda.Stream, a raw CUstream handle int or None, got {stream!r}")
        index = getattr(getattr(stream, "device", None), "index", None)
        if device is not None and index is not None and index != device:
            raise LaunchError(f"stream: is on cuda:{index}, but the tensors are on cuda:{device}")
        return int(handle), device if device is not None else index

    # ---- calls --------------------------------------------------------------------------

    def bind(self, *args, num_sms: int | None = None, device: int | None = None, **kwargs) -> dict:
        """Check and bind the arguments without launching (no GPU needed when `num_sms` is
        given): `{"device", "dims", "grid", "empty", "tensormaps"}`, the tensor maps as the
        cuTensorMapEncodeTiled fields they would be encoded from."""
        tensors, scalars, _ = self._describe(args, kwargs)
        return self._k.bind(tensors, scalars, num_sms=num_sms, device=device)

    def prepare(self, *args, stream: Any = None, **kwargs) -> PreparedLaunch:
        """Check, bind, load the cubin (first time on the device) and encode the tensor maps,
        without launching."""
        tensors, scalars, keep = self._describe(args, kwargs)
        handle, device = self._stream(stream, self._device(tensors))
        prepared = self._k.prepare(tensors, scalars, handle, device)
        return PreparedLaunch(self, prepared, keep)

    def __call__(self, *args, stream: Any = None, **kwargs) -> None:
        """Launch asynchronously (default: torch's current stream of the tensors' device)."""
        tensors, scalars, _ = self._describe(args, kwargs)
        handle, device = self._stream(stream, self._device(tensors))
        self.last_grid = tuple(self._k.launch(tensors, scalars, handle, device))

    # ---- outputs allocated for the caller -------------------------------------------------

    def output_specs(self, *args, **kwargs) -> dict[str, tuple[tuple, str]]:
        """`{name: (shape, torch dtype name)}` of each output (a write-only tensor) not given,
        its extents bound from the tensors that are given: what `run` allocates. Raises
        LaunchError when an extent appears in no given tensor, or given tensors disagree."""
        values = self._gather_inputs(args, kwargs)
        tensors = {t["name"]: t for t in self.meta.get("tensors", [])}
        dims: dict[str, Any] = {}
        for name, value in values.items():
            spec = tensors.get(name)
            if spec is None:
                continue
            shape = getattr(value, "shape", None)
            if shape is None or len(shape) != len(spec["dims"]):
                continue  # the launch reports the mismatch with its own words
            for d, extent in zip(spec["dims"], shape):
                if isinstance(d, str):
                    seen = dims.setdefault(d, extent)
                    if _known(seen) and _known(extent) and seen != extent:
                        raise LaunchError(f"kernel `{self.name}`: extent {d} is {seen} in one tensor "
                                          f"and {extent} in `{name}`")
        storage = _storage_names()
        out = {}
        for name in self.output_names:
            if name in values:
                continue
            shape = []
            for d in tensors[name]["dims"]:
                if isinstance(d, str):
                    if d not in dims:
                        raise LaunchError(f"kernel `{self.name}`: cannot allocate `{name}`: its extent {d} "
                                          f"is in no tensor given; pass `{name}` yourself")
                    shape.append(dims[d])
                else:
                    shape.append(int(d))
            out[name] = (tuple(shape), storage[tensors[name]["dtype"]])
        return out

    def _gather_inputs(self, args: tuple, kwargs: dict) -> dict:
        """Arguments of a call that may leave outputs out: positionally, the parameters in
        order without the outputs; by name, any parameter."""
        inputs = [n for n in self.param_names if n not in self.output_names]
        return self._bind(inputs, args, kwargs, "inputs when its outputs are allocated")

    def run(self, *args, stream: Any = None, **kwargs):
        """Launch with every output not given allocated (torch.empty on the first tensor's
        device, shapes from the launch metadata), and return the outputs in declaration order:
        one tensor, or a tuple when the kernel has several. `C = gemm.run(A, B)`."""
        torch = _torch()
        values = self._gather_inputs(args, kwargs)
        specs = self.output_specs(**values)
        device = next((v.device for v in values.values() if hasattr(v, "data_ptr")), None)
        if device is None:
            raise LaunchError(f"kernel `{self.name}`: run() allocates outputs on the inputs' device, "
                              "but no tensor was given")
        for name, (shape, dtype) in specs.items():
            values[name] = torch.empty(shape, dtype=getattr(torch, dtype), device=device)
        if stream is not None and specs:
            # Allocated on the current stream, written on `stream`: tell the caching allocator,
            # so it does not hand the memory out again while `stream` may still write it.
            side = stream if hasattr(stream, "cuda_stream") else torch.cuda.ExternalStream(int(stream), device=device)
            for name in specs:
                values[name].record_stream(side)
        self(stream=stream, **values)
        outs = tuple(values[n] for n in self.output_names)
        return outs[0] if len(outs) == 1 else outs

    def func_attributes(self, device: int | None = None) -> dict:
        """Registers, static shared memory, local memory and limits of the loaded function."""
        if device is None:
            device = _torch().cuda.current_device()
        return dict(self._k.func_attributes(device))

    def residency(self, device: int | None = None) -> dict:
        """How the kernel's CTAs fit the device, as the driver reckons it: `sm_count`,
        `ctas_per_sm`, `cluster` (CTAs per cluster), `clusters_at_once` (clustered kernels; a
        cluster's CTAs share a GPC, so fewer may fit than the SMs suggest, `None` otherwise) and
        `resident_ctas`, the CTAs that run at once."""
        if device is None:
            device = _torch().cuda.current_device()
        return dict(self._k.residency(device))

    def waves(self, grid: tuple, device: int | None = None) -> float:
        """The waves a launch of `grid` (x, y, z CTAs, e.g. `last_grid`) takes on the device."""
        r = self.residency(device)
        ctas = grid[0] * grid[1] * grid[2]
        return ctas / r["resident_ctas"] if r["resident_ctas"] else 0.0


def _known(extent: Any) -> bool:
    """A concrete extent (a torch SymInt while tracing is not compared here)."""
    return isinstance(extent, int)


_STORAGE: dict[str, str] = {}


def _storage_names() -> dict[str, str]:
    """Cake dtype name -> torch dtype attribute, from the compiled extension's table."""
    if not _STORAGE:
        _STORAGE.update(native().dtypes())
    return _STORAGE


def load_kernel(launch_json_path: str | os.PathLike) -> Kernel:
    """Load DIR/<kernel>.launch.json (or a directory holding exactly one) and its cubin.

    Needs neither torch nor a GPU: the cubin is loaded into the device's context at the first
    launch there. Raises LaunchError for a missing or invalid file.
    """
    return Kernel(native().Kernel.load(os.fspath(launch_json_path)))


__all__ = ["Kernel", "PreparedLaunch", "load_kernel", "describe_tensor"]
