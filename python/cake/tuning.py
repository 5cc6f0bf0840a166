"""Per-shape autotuning of a schedule's knobs from Python, with an on-disk cache.

    import cake
    tuned = cake.autotune("examples/gemm_sm90.py", "gemm", (A, B, C),
                          knobs={"BN": [128, 256], "STAGES": [2, 3, 4]})
    tuned(A, B, C)                 # the fastest correct variant for these shapes
    tuned.knobs, tuned.us          # {"BN": 256, "STAGES": 3}, its median time

Knobs are the schedule's module-level integer constants (what `cake tune` edits; `cake.knobs`
lists them). Each variant is the schedule with those literals replaced, every other byte kept:
it is checked (a variant with verifier findings is rejected with their codes, never run),
compiled (through `cake.compile`'s cache), run once and compared with the schedule as written,
then timed with CUDA events (median of `reps`, after `warmup` calls, L2 flushed before each).
The winner is stored under `cache_dir/autotune/<key>.json`, the key a hash of the source, the
target, the kernel, the compiler build, the search space and the arguments' shapes, dtypes and
scalar values: a later call with the same shapes compiles nothing new and times nothing.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from ._native_loader import native, native_build_id
from .errors import CakeError, CompileError
from .runtime import Kernel

CACHE_SCHEMA = "cake.autotune/v0"
MAX_VARIANTS = 256


@dataclass
class Trial:
    knobs: dict[str, int]
    outcome: str                       # "ok", "rejected", "compile-error", "launch-error", "mismatch"
    us: float | None = None
    detail: str = ""


@dataclass
class Tuned:
    """The winning variant: call it as the kernel. `trials` is empty on a cache hit."""
    kernel: Kernel
    knobs: dict[str, int]
    us: float | None
    source: str
    cached: bool
    cache_file: str
    trials: list[Trial] = field(default_factory=list)

    def __call__(self, *args, **kwargs):
        return self.kernel(*args, **kwargs)

    def run(self, *args, **kwargs):
        return self.kernel.run(*args, **kwargs)


def knobs(path: str | os.PathLike | None = None, *, source: str | None = None) -> dict[str, int]:
    """The schedule's knobs and their values as written, in source order."""
    text = _source(path, source)
    return {k["name"]: k["value"] for k in native().knobs(text)}


def with_knobs(source: str, values: dict[str, int]) -> str:
    """`source` with the given knobs set; ValueError for a name that is not a knob."""
    return native().with_knobs(source, {k: int(v) for k, v in values.items()})


def specialize(source: str, **values: int) -> str:
    """`source` with module-level integer constants set, fixed tensor extents included: a
    family's schedule at one compile-time width, as a contract's `[specialize]` builds it.

        src = open("examples/rmsnorm_sm90.py").read()
        k = cake.compile(source=cake.specialize(src, H=x.shape[-1]))["rmsnorm"]  # cached per H

    ValueError for a name that is not such a constant."""
    return native().specialize(source, {k: int(v) for k, v in values.items()})


def _source(path, source) -> str:
    if source is not None:
        return source
    if path is None:
        raise TypeError("give a schedule path or source=")
    with open(os.fspath(path), encoding="utf-8") as fh:
        return fh.read()


def _space(written: dict[str, int], space: dict[str, list[int]] | None) -> list[dict[str, int]]:
    """Every assignment to try, the schedule as written first. Without `space`, each knob alone
    over the neighbours `cake tune` would try (halving, doubling, ±1 for small counts)."""
    if space is None:
        out = [dict(written)]
        for name, value in written.items():
            out.extend({**written, name: v} for v in native().knob_neighbours(value))
        return out
    unknown = sorted(set(space) - set(written))
    if unknown:
        raise ValueError(f"no knob {', '.join(unknown)} in the schedule (knobs: {', '.join(written) or 'none'})")
    names = list(space)
    combos = [dict(zip(names, vals)) for vals in itertools.product(*(list(space[n]) for n in names))]
    if len(combos) > MAX_VARIANTS:
        raise ValueError(f"{len(combos)} variants to try; at most {MAX_VARIANTS} (narrow `knobs=`)")
    out = [dict(written)]
    for c in combos:
        v = {**written, **{k: int(x) for k, x in c.items()}}
        if v not in out:
            out.append(v)
    return out


def _describe(v: Any) -> Any:
    # A 0-d tensor or a numpy scalar passed as a scalar is keyed by its value, as the runtime
    # reads it.
    if getattr(v, "ndim", None) == 0 or (hasattr(v, "item") and not callable(getattr(v, "stride", None))):
        return ["scalar", repr(v.item())]
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return ["tensor", [int(s) for s in v.shape], str(v.dtype), [int(s) for s in v.stride()]]
    if hasattr(v, "item") and not isinstance(v, (int, float, bool)):
        v = v.item()
    return ["scalar", repr(v)]


def _key(source: str, target: str, kernel: str, variants: list[dict], args: tuple, kwargs: dict) -> str:
    doc = {"schema": CACHE_SCHEMA, "build": native_build_id(), "target": target, "kernel": kernel,
           "source": hashlib.sha256(source.encode()).hexdigest(), "variants": variants,
           "args": [_describe(a) for a in args],
           "kwargs": {k: _describe(v) for k, v in sorted(kwargs.items())}}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def _event_timer(kernel: Kernel, args: tuple, kwargs: dict, warmup: int, reps: int) -> float:
    """Median microseconds of a prepared launch, CUDA events, L2 flushed before each."""
    import torch

    from .harness import timing

    prepared = kernel.prepare(*args, **kwargs)
    device = next((t.device for t in args if getattr(t, "is_cuda", False)), torch.device("cuda"))
    props = torch.cuda.get_device_properties(device)
    flush = timing.make_flush_buffer(torch, getattr(props, "L2_cache_size", None), device)
    ms = timing.time_events(torch, prepared.launch, warmup, reps, flush)
    return statistics.median(ms) * 1e3


def autotune(path: str | os.PathLike | None, kernel: str, args: tuple = (), kwargs: dict | None = None, *,
             source: str | None = None, knobs: dict[str, list[int]] | None = None, target: str | None = None,
             cache_dir: str | os.PathLike | None = None, warmup: int = 5, reps: int = 20,
             check: bool = True, rtol: float = 2e-2, atol: float = 2e-2,
             timer: Callable[[Kernel, tuple, dict, int, int], float] | None = None,
             retune: bool = False) -> Tuned:
    """Try the schedule's knob assignments on these arguments and return the fastest variant
    that builds and (with `check`) writes what the schedule as written writes, within
    `rtol`/`atol`. `knobs`: `{name: [values]}`, every combination tried (at most 256); default:
    each knob alone over its neighbours. The arguments are the kernel's, outputs included; the
    tensors it writes are restored between variants. `timer(kernel, args, kwargs, warmup,
    reps) -> µs` replaces the CUDA-event timer. `retune=True` ignores a cached result."""
    from .compiler import compile as cake_compile
    from .compiler import current_target, default_cache_dir

    kwargs = dict(kwargs or {})
    text = _source(path, source)
    name = os.fspath(path) if path is not None else "<autotune>.py"
    target = target or current_target()
    written = {k["name"]: k["value"] for k in native().knobs(text)}
    variants = _space(written, knobs)
    root = os.path.join(os.fspath(cache_dir) if cache_dir is not None else default_cache_dir(), "autotune")
    cache_file = os.path.join(root, _key(text, target, kernel, variants, args, kwargs) + ".json")

    def load(values: dict[str, int]) -> tuple[str, Kernel]:
        src = with_knobs(text, values)
        mod = cake_compile(name, target=target, cache_dir=cache_dir, source=src)
        return src, mod[kernel]

    if not retune:
        try:
            with open(cache_file, encoding="utf-8") as fh:
                doc = json.load(fh)
            if doc.get("schema") == CACHE_SCHEMA:
                src, k = load(doc["knobs"])
                return Tuned(k, doc["knobs"], doc.get("us"), src, True, cache_file)
        except (OSError, ValueError, KeyError, CakeError):
            pass  # unreadable, stale or no longer building: search again

    time = timer or _event_timer
    trials: list[Trial] = []
    reference = None
    best: tuple[float, dict, str, Kernel] | None = None
    # The tensors the kernel writes, as the caller gave them: restored after every variant's
    # runs (a read-write tensor is an input to the next variant) and before returning.
    saved: list | None = None

    def restore() -> None:
        for t, copy in saved or ():
            t.copy_(copy)

    for values in variants:
        src = with_knobs(text, values)
        found = native().check(name, target, src)
        if found["errors"]:
            codes = sorted({f["code"] for f in found["findings"] if f.get("severity") == "error"})
            trials.append(Trial(values, "rejected", detail=", ".join(codes)))
            continue
        try:
            src, k = load(values)
        except CompileError as e:
            trials.append(Trial(values, "compile-error", detail=str(e).splitlines()[0] if str(e) else ""))
            continue
        if saved is None:
            saved = [(t, t.clone()) for t in _written(k, args, kwargs) if hasattr(t, "clone")]
        if check:
            try:
                outs = _run_and_capture(k, args, kwargs)
            except CakeError as e:
                trials.append(Trial(values, "launch-error", detail=str(e)))
                continue
            if reference is None:
                reference = outs  # the schedule as written, or the first variant that runs
            else:
                bad = _mismatch(reference, outs, rtol, atol)
                if bad:
                    trials.append(Trial(values, "mismatch", detail=bad))
                    continue
        try:
            us = float(time(k, args, kwargs, warmup, reps))
        except CakeError as e:
            trials.append(Trial(values, "launch-error", detail=str(e)))
            continue
        finally:
            restore()
        trials.append(Trial(values, "ok", us))
        if best is None or us < best[0]:
            best = (us, values, src, k)
    if best is None:
        lines = "\n".join(f"  {t.knobs}: {t.outcome} {t.detail}" for t in trials)
        raise CompileError(f"autotune: no variant of `{kernel}` built and ran:\n{lines}", None)
    us, values, src, k = best
    os.makedirs(root, exist_ok=True)
    tmp = f"{cache_file}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"schema": CACHE_SCHEMA, "kernel": kernel, "target": target, "knobs": values, "us": us,
                   "trials": [t.__dict__ for t in trials]}, fh, indent=1)
    os.replace(tmp, cache_file)  # atomic: a reader sees the old entry or the whole new one
    return Tuned(k, values, us, src, False, cache_file, trials)


def _written(kernel: Kernel, args: tuple, kwargs: dict) -> list:
    """The tensors among the arguments that the kernel writes."""
    values = kernel._gather(args, kwargs)
    access = {t["name"]: t.get("access") for t in kernel.meta.get("tensors", [])}
    return [values[n] for n in kernel.tensor_names if access.get(n) in ("write", "readwrite")]


def _run_and_capture(kernel: Kernel, args: tuple, kwargs: dict) -> list:
    """Run once and return copies of what it wrote; the written tensors are restored, so every
    variant starts from the same inputs (a read-write tensor is an input too)."""
    import torch

    written = _written(kernel, args, kwargs)
    saved = [t.clone() for t in written]
    kernel(*args, **kwargs)
    torch.cuda.synchronize()
    outs = [t.clone() for t in written]
    for t, s in zip(written, saved):
        t.copy_(s)
    return outs


def _mismatch(reference: list, outs: list, rtol: float, atol: float) -> str:
    import torch

    for i, (r, o) in enumerate(zip(reference, outs)):
        if not torch.allclose(o.float(), r.float(), rtol=rtol, atol=atol, equal_nan=True):
            diff = (o.float() - r.float()).abs().nan_to_num(float("inf")).max().item()
            return f"output {i} differs from the schedule as written (max abs diff {diff:.3g})"
    return ""


__all__ = ["Trial", "Tuned", "autotune", "knobs", "with_knobs"]
