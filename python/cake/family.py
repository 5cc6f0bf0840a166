"""Families: one callable for a contract's whole shape domain (docs/dispatch.md).

    rmsnorm = cake.family("kernels/rows/rmsnorm.family.toml")
    rmsnorm(X=x, W=w, Y=y, eps=1e-6)          # routed at call time; compiled once per route/width

A family file lists routes in order, each a schedule with a guard over the contract's
dimensions, and a fallback for what no route takes. A call binds the dimensions from the
tensors' shapes (the contract says which axis of which tensor is which dimension), takes the
first route whose guard holds, and launches its kernel, built for those shapes' compile-time
constants (`[specialize]`) and cached on disk by `cake.compile`. Shapes outside the domain, or
that no route takes, go to the fallback. A route that names `cards` serves only the GPUs
whose names hold one of them as a word (`H100` serves "NVIDIA H100 80GB HBM3"); such a family
decides per binding and device. The decision is cached per distinct binding, so a repeated
call costs a tuple and a dictionary lookup (bench/family_overhead.py measures it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import time
from typing import Any, Callable

from ._native_loader import native


def _import(ref: str) -> Callable[..., Any]:
    """`/abs/file.py:fn` -> the function (the file loaded under a name of its own)."""
    path, fn = ref.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location(f"cake_family_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, fn)


def _value(dims: tuple, at: tuple) -> int:
    """A guard key's value: one dimension, or the product of several (`"B*N"`)."""
    v = 1
    for i in at:
        v *= dims[i]
    return v


def _holds(v: int, lo, hi, vals, m) -> bool:
    return ((lo is None or v >= lo) and (hi is None or v <= hi)
            and (vals is None or v in vals) and v % m == 0)


def _serves(cards: list[str] | None, gpu: str | None) -> bool:
    """Whether a route naming `cards` (none: every GPU) serves the GPU named `gpu`: a card is
    one of the name's words, case aside (as `Route::serves` in crates/cake-eval)."""
    if not cards:
        return True
    if gpu is None:
        return False
    words = {w.lower() for w in re.split(r"[^A-Za-z0-9]+", gpu)}
    return any(c.lower() in words for c in cards)


class Family:
    """A family file loaded for calls; see the module docstring."""

    def __init__(self, path: str | os.PathLike, target: str | None = None,
                 cache_dir: str | os.PathLike | None = None):
        doc = json.loads(native().family(os.fspath(path)))
        self.name: str = doc["name"]
        self.target = target
        self.cache_dir = cache_dir
        self._doc = doc
        self.dims: list[str] = [d["name"] for d in doc["dims"]]
        self._domain = {d["name"]: (d["min"], d["max"], d["multiple_of"], d.get("values"))
                        for d in doc["dims"]}
        self._limits = [([self.dims.index(d) for d in lim["dims"]], lim["max"])
                        for lim in doc.get("limits", [])]
        # Dimensions that are multiples of another (`BH = { multiple_of = "BHKV" }`).
        self._multiples = [(self.dims.index(m["dim"]), self.dims.index(m["of"]))
                           for m in doc.get("multiples", [])]
        # Where each dimension is read: the first tensor (in contract order) that names it, or
        # (None, value) for a dimension no tensor names whose domain is one value (attention's
        # CAUSAL = { min = 1, max = 1 }: a mode of the contract, not an extent).
        self._binders: list[tuple[str | None, int]] = []
        for dim in self.dims:
            at = next(((t["name"], i) for t in doc["tensors"] for i, e in enumerate(t["shape"])
                       if e == dim), None)
            if at is None:
                lo, hi, _, values = self._domain[dim]
                only = values if values else ([lo] if lo == hi else [])
                if len(only) != 1:
                    raise ValueError(f"family {self.name}: no tensor of the contract names dimension "
                                     f"{dim}, and its domain is not one value")
                at = (None, only[0])
            self._binders.append(at)
        self._device_tensor = next(t for t, _ in self._binders if t is not None)
        self.routes: list[dict] = doc["routes"]
        # Per route: (the dimensions' positions whose product the guard bounds — one for a
        # plain dimension, several for `"B*N"` —, min, max, value set, step).
        self._guards = [
            [(tuple(self.dims.index(f.strip()) for f in d.split("*")),
              g.get("min"), g.get("max"), g.get("in"), g.get("multiple_of") or 1)
             for d, g in r["when"].items()]
            for r in self.routes
        ]
        # Routes that serve some GPUs only: decisions then depend on the call's device.
        self._carded = any(r.get("cards") for r in self.routes)
        self._fallback_ref: str = doc["fallback"]
        self._fallback: Callable[..., Any] | None = None
        self._decided: dict[tuple, Callable[..., Any]] = {}
        self._kernels: dict[tuple, Any] = {}
        #: Seconds the first call of each build spent compiling: {(route, constants...): s}.
        self.compile_seconds: dict[tuple, float] = {}

    def __repr__(self) -> str:
        return f"<cake.Family {self.name}: {', '.join(r['name'] for r in self.routes)}, fallback>"

    # ---- routing ----------------------------------------------------------------------------

    def binding(self, tensors: dict[str, Any]) -> tuple:
        """The dimensions' values, in the contract's order, read from the tensors' shapes."""
        return tuple([tensors[t].shape[i] if t else i for t, i in self._binders])

    def in_domain(self, dims: tuple) -> bool:
        if not all(lo <= v <= hi and v % m == 0 and (values is None or v in values)
                   for v, (lo, hi, m, values) in zip(dims, self._domain.values())):
            return False
        for at, bound in self._limits:  # [limits]: products of dimensions
            product = 1
            for i in at:
                product *= dims[i]
            if product > bound:
                return False
        return all(dims[i] % dims[of] == 0 for i, of in self._multiples)

    def route_of(self, dims: tuple, gpu: str | None = None) -> str | None:
        """The route that takes `dims` on the GPU named `gpu` (`torch.cuda.get_device_name()`;
        None: a GPU no route's `cards` names): the first that serves it and whose guard holds,
        or None: the fallback."""
        if not self.in_domain(dims):
            return None
        for r, guard in zip(self.routes, self._guards):
            if _serves(r.get("cards"), gpu) and all(
                    _holds(_value(dims, at), lo, hi, vals, m) for at, lo, hi, vals, m in guard):
                return r["name"]
        return None

    def __call__(self, **args: Any) -> Any:
        # The hot path: the binding inline (no method call), one dictionary lookup.
        dims = tuple([args[t].shape[i] if t else i for t, i in self._binders])
        if self._carded:
            device = args[self._device_tensor].device
            key = (dims, device)
            fn = self._decided.get(key)
            if fn is None:
                import torch
                gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
                fn = self._decided[key] = self._decide(dims, gpu)
            return fn(**args)
        fn = self._decided.get(dims)
        if fn is None:
            fn = self._decided[dims] = self._decide(dims)
        return fn(**args)

    # ---- what a decision builds ---------------------------------------------------------------

    def _decide(self, dims: tuple, gpu: str | None = None) -> Callable[..., Any]:
        name = self.route_of(dims, gpu)
        if name is None:
            if self._fallback is None:
                self._fallback = _import(self._fallback_ref)
            return self._fallback
        route = next(r for r in self.routes if r["name"] == name)
        specialize = route.get("specialize", self._doc["specialize"])  # the route's, else the contract's
        values = dict(route.get("constants", {}))  # a variant of the schedule: fixed constants
        values.update({const: dims[self.dims.index(dim)] for const, dim in specialize.items()})
        key = (name, *sorted(values.items()))
        kernel = self._kernels.get(key)
        if kernel is None:
            from .compiler import compile as compile_schedule
            from .tuning import specialize
            with open(route["kernel"], encoding="utf-8") as fh:
                source = fh.read()
            if values:
                source = specialize(source, **values)
            started = time.perf_counter()
            module = compile_schedule(route["kernel"], self.target, self.cache_dir, source=source)
            self.compile_seconds[key] = time.perf_counter() - started
            kernel = self._kernels[key] = module[route["entry"]]
        return kernel


def family(path: str | os.PathLike, target: str | None = None,
           cache_dir: str | os.PathLike | None = None) -> Family:
    """Load a family file (`kernels/<family>/<name>.family.toml`) as one callable."""
    return Family(path, target, cache_dir)


__all__ = ["Family", "family"]
