"""The worker's GPU backend: torch CUDA tensors, `cake.load_kernel`, events and CUPTI timing.

torch is imported when the backend is made, not when this module is imported.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import inputs as I
from . import timing
from .stats import median

BANDWIDTH_BYTES = 1 << 30  # hello's device-to-device copy
BANDWIDTH_RUNS = 5


class TorchBackend:
    def __init__(self) -> None:
        import torch

        self._INT_VIEWS = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda is not available (no GPU, or a CPU-only torch build)")
        self.torch = torch
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.props = torch.cuda.get_device_properties(self.device)
        self._flush: Any = None

    # ---- hello --------------------------------------------------------------------------

    def env(self) -> Dict[str, Any]:
        import cake

        torch, p = self.torch, self.props
        bandwidth = self.measure_bandwidth_gbps()
        return {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda_runtime": torch.version.cuda,
            "driver": driver_version(),
            "gpu": p.name,
            "cc": [p.major, p.minor],
            "sm_count": p.multi_processor_count,
            "l2_bytes": getattr(p, "L2_cache_size", None),
            "clocks": clocks(self.device.index),  # read right after the copy: clocks are up
            "measured_bandwidth_gbps": bandwidth,
            "cake": getattr(cake, "__version__", None),
        }

    def measure_bandwidth_gbps(self) -> float:
        """Median of 5 timed 1 GiB device-to-device copies, counting bytes read plus written."""
        ms = self._copy_times_ms()
        self.torch.cuda.empty_cache()  # the 2 GiB are free again once the helper returned
        return round(2 * BANDWIDTH_BYTES / (median(ms) * 1e-3) / 1e9, 1)

    def _copy_times_ms(self) -> List[float]:
        torch = self.torch
        src = torch.empty(BANDWIDTH_BYTES, dtype=torch.uint8, device=self.device)
        dst = torch.empty_like(src)
        return timing.time_events(torch, lambda: dst.copy_(src), warmup=1, samples=BANDWIDTH_RUNS)

    # ---- loading ------------------------------------------------------------------------

    def load_kernel(self, path: str) -> Any:
        from cake import load_kernel

        kernel = load_kernel(path)
        attrs = getattr(kernel, "func_attributes", None)
        if attrs is not None:  # load the module into the context now: its failures are `load`
            print(f"cake.worker: {path}: {attrs()}", file=sys.stderr)
        return kernel

    # ---- tensors ------------------------------------------------------------------------

    def generator(self, seed: int) -> Any:
        g = self.torch.Generator(device=self.device)
        g.manual_seed(seed)
        return g

    def random_input(self, dtype: str, shape: Tuple[int, ...], distribution: str, rng: Any) -> Any:
        return I.random_tensor(self.torch, dtype, shape, distribution, rng, self.device)

    def adopt(self, value: Any, dtype: str, shape: Tuple[int, ...]) -> Any:
        torch = self.torch
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"expected a torch.Tensor, got {type(value).__name__}")
        want = I.torch_dtype(torch, dtype)
        if value.dtype != want:
            raise ValueError(f"dtype is {value.dtype}, the contract says {dtype} ({want})")
        if tuple(value.shape) != tuple(shape):
            raise ValueError(f"shape is {list(value.shape)}, the contract says {list(shape)}")
        return value.to(self.device).contiguous()

    def empty(self, dtype: str, shape: Tuple[int, ...]) -> Any:
        return self.torch.empty(shape, dtype=I.torch_dtype(self.torch, dtype), device=self.device)

    def poison(self, a: Any, dtype: str) -> None:
        """Floats: the NaN of inputs.POISON_BITS, written through an integer view of the same
        width (fill_ with a NaN value would write the canonical NaN); integers: the sentinel."""
        bits = I.poison_bits(dtype)
        if bits is None:
            a.fill_(I.poison_value(dtype))
        else:
            a.view(self._INT_VIEWS[a.element_size()]).fill_(bits)  # every pattern is < 2**(8*size-1)

    def clone(self, a: Any) -> Any:
        return a.clone()

    def copy_into(self, dst: Any, src: Any) -> None:
        dst.copy_(src)

    def synchronize(self) -> None:
        self.torch.cuda.synchronize()

    # ---- timing -------------------------------------------------------------------------

    def prepare_call(self, fn: Callable[..., Any], kwargs: Dict[str, Any]) -> Callable[[], Any]:
        """A Cake kernel is bound and packed once (Kernel.prepare), so that only the launch
        sits between the events; any other callable is called as is."""
        prepare = getattr(fn, "prepare", None)
        if prepare is not None:
            return prepare(**kwargs)
        return lambda: fn(**kwargs)

    def flush_buffer(self, flush_l2: bool) -> Any:
        if not flush_l2:
            return None
        if self._flush is None:
            self._flush = timing.make_flush_buffer(self.torch, getattr(self.props, "L2_cache_size", 0), self.device)
        return self._flush

    def time_events(self, calls: List[Callable[[], Any]], warmup: int, samples: int, flush_l2: bool,
                    before_last: Optional[Callable[[int], Any]] = None) -> List[List[float]]:
        return timing.time_events_interleaved(self.torch, calls, warmup, samples, self.flush_buffer(flush_l2),
                                              before_last)

    def time_cupti(self, calls: List[Callable[[], Any]], samples: int, flush_l2: bool,
                   before_last: Optional[Callable[[int], Any]] = None) -> List[timing.CuptiResult]:
        return timing.time_cupti_interleaved(self.torch, calls, samples, self.flush_buffer(flush_l2), before_last)


# --------------------------------------------------------------------------------------
# NVML / nvidia-smi facts (None when neither tells)
# --------------------------------------------------------------------------------------


def _nvml() -> Any:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def _smi(query: str, index: Optional[int] = None) -> Optional[List[str]]:
    cmd = ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"]
    if index is not None:
        cmd.append(f"--id={index}")
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        return None
    return [v.strip() for v in lines[0].split(",")]


def driver_version() -> Optional[str]:
    nvml = _nvml()
    if nvml is not None:
        try:
            v = nvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        except Exception:
            pass
    got = _smi("driver_version")
    return got[0] if got else None


def clocks(index: Optional[int]) -> Optional[Dict[str, int]]:
    """Current SM and memory clocks in MHz. The index is torch's; it matches NVML's when
    CUDA_VISIBLE_DEVICES does not reorder devices."""
    nvml = _nvml()
    if nvml is not None:
        try:
            h = nvml.nvmlDeviceGetHandleByIndex(index or 0)
            return {"sm_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
                    "mem_mhz": int(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM))}
        except Exception:
            pass
    got = _smi("clocks.sm,clocks.mem", index)
    try:
        return {"sm_mhz": int(got[0]), "mem_mhz": int(got[1])} if got else None
    except (ValueError, IndexError):
        return None
