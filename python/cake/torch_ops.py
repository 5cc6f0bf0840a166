"""Cake kernels as PyTorch custom operators, so `torch.compile` traces through them.

    import cake, torch
    mod = cake.compile("examples/gemm_sm90.py")
    gemm = cake.torch_op(mod.gemm)              # torch.ops.cake.gemm, functional: C = gemm(A, B)
    f = torch.compile(lambda A, B: gemm(A, B).relu(), fullgraph=True)

The operator takes the kernel's inputs in declaration order (tensors, then scalars) and returns
its outputs (the tensors it only writes), allocated from the launch metadata's shapes: a
functional op, which torch.compile, torch.export and CUDA graphs handle without a graph break.
Tensors the kernel reads and writes are passed in and mutated in place (`mutates_args`). The
fake (meta) implementation computes the outputs' shapes and dtypes without a GPU, so tracing
works on fake tensors and on `device="meta"`.
"""

from __future__ import annotations

import inspect
import keyword
import re
from typing import Any

from .errors import LaunchError
from .runtime import Kernel, _storage_names

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# torch's schema types for Cake's scalar types.
_SCALAR = {"u8": int, "i8": int, "u16": int, "i16": int, "u32": int, "i32": int, "u64": int,
           "i64": int, "f16": float, "bf16": float, "f32": float, "f64": float, "bool": bool}


def _torch():
    try:
        import torch
    except ImportError as e:
        raise LaunchError(f"cake.torch_op needs torch: {e}") from None
    return torch


def torch_op(kernel: Kernel, name: str | None = None, namespace: str = "cake"):
    """Register `kernel` as the custom operator `torch.ops.<namespace>.<name>` (default: the
    kernel's name) and return it. Registering the same name twice raises torch's error; pick
    another `name` for a second build of the same kernel."""
    torch = _torch()
    name = name or kernel.name
    for part in (namespace, name):
        if not _NAME.match(part) or keyword.iskeyword(part):
            raise ValueError(f"cake.torch_op: `{part}` is not a valid operator name part")
    meta_tensors = {t["name"]: t for t in kernel.meta.get("tensors", [])}
    meta_scalars = {s["name"]: s for s in kernel.meta.get("scalars", [])}
    outputs = list(kernel.output_names)
    inputs = [p for p in kernel.param_names if p not in outputs]
    mutated = [n for n in inputs if meta_tensors.get(n, {}).get("access") == "readwrite"]

    params = []
    for p in inputs:
        if p in meta_tensors:
            ann: Any = torch.Tensor
        else:
            dtype = meta_scalars[p]["dtype"]
            if dtype not in _SCALAR:
                raise ValueError(f"cake.torch_op: scalar `{p}` of type {dtype} has no torch schema type")
            ann = _SCALAR[dtype]
        params.append(inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=ann))
    if not outputs:
        returns: Any = None
    elif len(outputs) == 1:
        returns = torch.Tensor
    else:
        returns = tuple[tuple(torch.Tensor for _ in outputs)]

    def impl(*args, **kwargs):
        values = _bind(args, kwargs)
        out = kernel.run(**values)
        return None if not outputs else out

    def fake(*args, **kwargs):
        values = _bind(args, kwargs)
        specs = kernel.output_specs(**values)
        device = next((v.device for v in values.values() if isinstance(v, torch.Tensor)), None)
        if device is None:
            raise LaunchError(f"cake::{name}: no tensor argument to allocate the outputs beside")
        outs = tuple(torch.empty(shape, dtype=getattr(torch, dtype), device=device)
                     for shape, dtype in (specs[n] for n in outputs))
        if not outs:
            return None
        return outs[0] if len(outs) == 1 else outs

    signature = inspect.Signature(params, return_annotation=returns)

    def _bind(args, kwargs):
        return dict(signature.bind(*args, **kwargs).arguments)

    for f in (impl, fake):
        f.__signature__ = signature
        f.__name__ = name
    op = torch.library.custom_op(f"{namespace}::{name}", impl, mutates_args=tuple(mutated),
                                 device_types="cuda")
    op.register_fake(fake)
    return op


__all__ = ["torch_op"]
