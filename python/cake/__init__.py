"""Cake from Python: check, lower and compile schedules, and launch the kernels on torch tensors.

    import cake
    cake.check("examples/gemm_sm90.py")                  # findings (no GPU needed)
    cake.lower("examples/gemm_sm90.py", "sm_90a")        # CUDA C++ + launch metadata
    mod = cake.compile("examples/gemm_sm90.py")          # build for the current GPU (cached)
    mod.gemm(A, B, C)                                    # launch on torch's current stream
    C = mod.gemm.run(A, B)                               # outputs allocated for you
    cake.check(source=text)                              # a schedule given as a string
    gemm = cake.torch_op(mod.gemm)                       # torch.ops.cake.gemm for torch.compile
    tuned = cake.autotune(path, "gemm", (A, B, C), knobs={"STAGES": [2, 3, 4]})  # cached per shape

    from cake import load_kernel, LaunchError            # a kernel built by `cake build`
    k = load_kernel("out/gemm/gemm.launch.json")

The work is done by the compiled extension `cake._native` (Rust: the compiler and cake-runtime,
which launches through the CUDA driver API). It is imported on first use, as is torch, so
`import cake` and the exception classes work without either. See docs/python.md.
"""

from .compiler import (
    Module,
    build,
    capability_targets,
    check,
    compile,
    current_target,
    default_cache_dir,
    lower,
    target_for_capability,
)
from .family import Family, family
from .tuning import Trial, Tuned, autotune, knobs, specialize, with_knobs
from .errors import CakeError, CompileError, CudaError, LaunchError, TargetError
from .runtime import Kernel, PreparedLaunch, load_kernel
from .torch_ops import torch_op
from . import timeline

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "Module", "build", "capability_targets", "check", "compile", "current_target",
    "default_cache_dir", "lower", "target_for_capability",
    "CakeError", "CompileError", "CudaError", "LaunchError", "TargetError",
    "Kernel", "PreparedLaunch", "load_kernel", "torch_op",
    "Trial", "Tuned", "autotune", "knobs", "specialize", "with_knobs", "Family", "family",
    "timeline",
]
