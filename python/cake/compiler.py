"""Checking, lowering and compiling schedules from Python.

    import cake
    cake.check("examples/gemm_sm90.py")              # findings, no GPU or toolchain needed
    cake.lower("examples/gemm_sm90.py", "sm_90a")    # CUDA source + launch metadata per kernel
    mod = cake.compile("examples/gemm_sm90.py")      # target = the current GPU, exactly
    mod.gemm(A, B, C)
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from typing import Any

from ._native_loader import native, native_build_id
from .errors import CompileError, TargetError
from .runtime import Kernel

def capability_targets() -> dict[tuple[int, int], str]:
    """Compute capability -> the exact target Cake compiles for on that GPU (the architecture-
    specific "a" targets where Cake generates their features), read from the compiler's target
    table — the one `cake targets` prints — so Python keeps no copy of it."""
    return {tuple(t["cc"]): t["name"] for t in native().targets()["targets"]}


CACHE_SCHEMA = "cake.compile/v0"


def target_for_capability(major: int, minor: int) -> str:
    """The exact Cake target for a GPU of compute capability `major.minor`."""
    table = capability_targets()
    try:
        return table[(int(major), int(minor))]
    except KeyError:
        known = ", ".join(f"{a}.{b} -> {t}" for (a, b), t in table.items())
        raise TargetError(
            f"no Cake target for a GPU of compute capability {major}.{minor} (known: {known}); "
            "pass target= explicitly"
        ) from None


def current_target(device: int | None = None) -> str:
    """The exact target of the current GPU (torch's current device, else device 0)."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        if not torch.cuda.is_available():
            raise TargetError("target=None picks the current GPU's target, but torch sees no CUDA GPU; "
                              "pass target= (e.g. 'sm_90a') explicitly")
        if device is None:
            device = torch.cuda.current_device()
        return target_for_capability(*torch.cuda.get_device_capability(device))
    try:
        info = native().device_info(0 if device is None else device)
    except Exception as e:
        raise TargetError(f"target=None picks the current GPU's target, but no GPU could be queried ({e}); "
                          "pass target= (e.g. 'sm_90a') explicitly") from None
    return target_for_capability(*info["compute_capability"])


def _name(path, source) -> str:
    """The name findings use: the path, or `<string>` for a source without one."""
    if path is None:
        if source is None:
            raise TypeError("give a schedule path, or its text as source=")
        return "<string>"
    return os.fspath(path)


def check(path: str | os.PathLike | None = None, target: str | None = None, *, source: str | None = None) -> dict:
    """Every finding of a schedule as the `cake.findings/v1` document, plus `errors` (the error
    count) and `kernels` (the schedule names). `target`: one exact target, or each one the
    schedules declare. `source`: the schedule's text instead of a file (`path`, if given, only
    names it). Needs no GPU and no CUDA toolchain."""
    return native().check(_name(path, source), target, source)


def lower(path: str | os.PathLike | None = None, target: str | None = None, *, source: str | None = None) -> dict:
    """Check and lower for one exact target: `{"schema": "cake.lower/v0", "kernels": [{"kernel",
    "symbol", "target", "cuda", "launch"}], "findings"}`. Raises CompileError on errors.
    `source`: the schedule's text instead of a file."""
    if target is None:
        raise TypeError("lower() needs an exact target, e.g. target='sm_90a'")
    return native().lower(_name(path, source), target, source)


def build(path: str | os.PathLike | None, target: str, out_dir: str | os.PathLike, embed_ptx: bool = False, *,
          source: str | None = None, timeline: bool = False) -> dict:
    """Check, lower and compile into `out_dir` (`<kernel>.{cu,cubin,launch.json,
    resources.json}`), as `cake build` does. Needs the CUDA toolchain (nvcc), not a GPU.
    `source`: the schedule's text instead of a file; `timeline`: the stamps compiled in, as
    `cake build --timeline` (docs/timeline.md)."""
    return native().build(_name(path, source), target, os.fspath(out_dir), embed_ptx, source, timeline)


def default_cache_dir() -> str:
    """`$CAKE_CACHE_DIR`, else `$XDG_CACHE_HOME/cake`, else `~/.cache/cake` (as the toolchain's
    cubin cache)."""
    if os.environ.get("CAKE_CACHE_DIR"):
        return os.environ["CAKE_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "cake")
    return os.path.join(os.path.expanduser("~"), ".cache", "cake")


class Module:
    """The kernels of one compiled schedule file, as attributes: `mod.gemm(A, B, C)`."""

    def __init__(self, path: str, target: str, directory: str, kernels: dict[str, Kernel],
                 findings: Any = None, cached: bool = False):
        self.path = path
        self.target = target
        self.directory = directory
        self.kernels = kernels
        self.findings = findings
        self.cached = cached

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"{self.path} has no kernel `{name}` (kernels: {', '.join(kernels) or 'none'})")

    def __getitem__(self, name: str) -> Kernel:
        return self.kernels[name]

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self.kernels))

    def __repr__(self) -> str:
        return f"<cake.Module {self.path} for {self.target}: {', '.join(self.kernels)}>"


def _cache_key(source: bytes, target: str, embed_ptx: bool = False, timeline: bool = False) -> str:
    h = hashlib.sha256()
    parts = [CACHE_SCHEMA.encode(), native_build_id().encode(), target.encode(), source]
    if embed_ptx:  # another image for the same source: another entry
        parts.append(b"+ptx")
    if timeline:  # the stamps compiled in: another kernel
        parts.append(b"+timeline")
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()[:32]


def _load(path: str, target: str, directory: str, manifest: dict, cached: bool) -> Module:
    from .runtime import load_kernel

    kernels = {name: load_kernel(os.path.join(directory, f"{name}.launch.json")) for name in manifest["kernels"]}
    return Module(path, target, directory, kernels, manifest.get("findings"), cached)


def compile(path: str | os.PathLike | None = None, target: str | None = None,
            cache_dir: str | os.PathLike | None = None, embed_ptx: bool = False, *,
            source: str | None = None, timeline: bool = False) -> Module:
    """Check, lower and build a schedule file for `target` (default: the current GPU's exact
    target) and return its kernels as a module.

    Builds are cached on disk under `cache_dir` (default: default_cache_dir()) in
    `python/<key>/`, the key a hash of the source bytes, the target and the compiler build; a
    hit needs no CUDA toolchain. Raises CompileError when the schedule has errors (or ptxas
    reports one, e.g. a spill the schedule forbids) and TargetError when no target can be chosen.

    `embed_ptx=True` builds a fatbin holding the target's PTX as well as its machine code, so a
    kernel for an older, forward-compatible target runs on a later GPU through the driver's JIT:
    `compile(path, target="sm_80", embed_ptx=True)` on an H200. Without it, a target other than
    the GPU's builds a cubin that GPU cannot load (the launch fails, naming both). Refused for the
    `a` targets, whose PTX runs only on their own architecture (docs/targets.md).

    `source`: the schedule's text instead of a file (`path`, if given, only names it); the
    cache keys on the text either way.

    `timeline=True` compiles the timeline stamps in: each kernel then takes a `CAKE_TIMELINE`
    buffer, which `cake.timeline.record` passes and reads back (docs/timeline.md).
    """
    path = _name(path, source)
    if target is None:
        target = current_target()
    text = source
    if text is None:
        with open(path, "rb") as fh:
            source_bytes = fh.read()
    else:
        source_bytes = text.encode()
    root = os.path.join(os.fspath(cache_dir) if cache_dir is not None else default_cache_dir(), "python")
    directory = os.path.join(root, _cache_key(source_bytes, target, embed_ptx, timeline))
    manifest_path = os.path.join(directory, "manifest.json")
    try:
        with open(manifest_path, encoding="utf-8") as fh:
            manifest = json.load(fh)
        if manifest.get("schema") == CACHE_SCHEMA and all(
            os.path.exists(os.path.join(directory, f"{k}.launch.json")) for k in manifest.get("kernels", [])
        ):
            return _load(path, target, directory, manifest, cached=True)
    except (OSError, ValueError):
        pass

    # Build into a private directory and rename it into place, so a crash or a concurrent
    # compile never leaves a half-written entry that reads as a hit.
    os.makedirs(root, exist_ok=True)
    tmp = f"{directory}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        built = build(path, target, tmp, embed_ptx, source=text, timeline=timeline)
        if built["errors"]:
            raise CompileError(built.get("human") or f"{path}: {built['errors']} error(s)", built["findings"])
        manifest = {
            "schema": CACHE_SCHEMA,
            "source": os.path.abspath(path) if text is None else path,
            "target": target,
            "kernels": [k["kernel"] for k in built["kernels"]],
            "findings": built["findings"],
        }
        with open(os.path.join(tmp, "manifest.json"), "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=1)
        try:
            os.rename(tmp, directory)
        except OSError:  # another process put the same entry in place first
            if not os.path.exists(manifest_path):
                shutil.rmtree(directory, ignore_errors=True)
                os.rename(tmp, directory)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _load(path, target, directory, manifest, cached=False)


__all__ = [
    "Module", "capability_targets", "build", "check", "compile", "current_target",
    "default_cache_dir", "lower", "target_for_capability",
]
