"""The exceptions of the cake package.

They live in pure Python so that `import cake` always has them, with or without the compiled
extension; `cake._native` raises these same classes.
"""

from __future__ import annotations

from typing import Any


class CakeError(Exception):
    """Base class of every error the cake package raises on purpose."""


class CompileError(CakeError):
    """The schedule has errors (the message is the human rendering of the findings), or the
    CUDA generated for it did not compile (a bug in Cake) or no CUDA toolchain was found.

    `findings` is the `cake.findings/v1` document (a dict, see docs/diagnostics.md) when the
    error comes from findings, else None.
    """

    def __init__(self, message: str, findings: Any = None):
        super().__init__(message)
        self.findings = findings


class LaunchError(CakeError):
    """Arguments or launch metadata rejected before anything reached the GPU: wrong dtype,
    shape, device, stride or alignment, a missing argument, an invalid launch.json. The message
    names the tensor, argument or field and says what was expected and what was found."""


class CudaError(CakeError):
    """A CUDA driver call failed. `result` is the CUresult's name (e.g.
    `CUDA_ERROR_ILLEGAL_ADDRESS`), `code` its number."""

    def __init__(self, message: str, result: str | None = None, code: int | None = None):
        super().__init__(message)
        self.result = result
        self.code = code


class TargetError(CakeError, ValueError):
    """No exact Cake target could be chosen for the current GPU (pass `target=` explicitly)."""


__all__ = ["CakeError", "CompileError", "LaunchError", "CudaError", "TargetError"]
