"""Minimal launcher for kernels built by `cake build` (launch.json schema cake.launch/v0).

    from cake import load_kernel
    gemm = load_kernel("out/gemm.launch.json")
    gemm(A, B, C)                      # positional: meta["tensors"] then meta["scalars"]
    gemm(A=A, B=B, C=C, stream=s)      # or by name

The module is split in two layers:

* a pure layer (dtype table, expression evaluator, launch.json validation, argument
  binding, tensor-map field computation, parameter packing) that works on plain Python
  data and duck-typed tensor objects, so it is testable without torch or a GPU;
* a driver layer that talks to `libcuda.so.1` through ctypes (the C driver API, spelled
  exactly as in cuda.h) and uses torch only for the device, the stream and the tensors.

torch is imported lazily, so `import cake.launch` works on machines without torch.
Every user-facing failure raises `LaunchError`; nothing is launched after a failed check.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

SCHEMA = "cake.launch/v0"


class LaunchError(Exception):
    """Validation or driver failure; the message names the tensor/arg/field involved."""


# --------------------------------------------------------------------------------------
# dtypes
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DType:
    name: str  # canonical name used in launch.json
    nbytes: int  # element size in bytes
    tma: int | None  # CUtensorMapDataType, None if TMA cannot move it
    storage: str  # torch dtype attribute name of the storage this dtype lives in
    kind: str  # "int" | "uint" | "float"


# CUtensorMapDataType values from cuda.h. fp8 and i8 have no TMA type of their own; TMA
# only moves bytes, so they travel as UINT8 (and i16 as UINT16).
_DTYPE_LIST = [
    DType("u8", 1, 0, "uint8", "uint"),
    DType("i8", 1, 0, "int8", "int"),
    DType("u16", 2, 1, "uint16", "uint"),
    DType("i16", 2, 1, "int16", "int"),
    DType("u32", 4, 2, "uint32", "uint"),
    DType("i32", 4, 3, "int32", "int"),
    DType("u64", 8, 4, "uint64", "uint"),
    DType("i64", 8, 5, "int64", "int"),
    DType("f16", 2, 6, "float16", "float"),
    DType("f32", 4, 7, "float32", "float"),
    DType("f64", 8, 8, "float64", "float"),
    DType("bf16", 2, 9, "bfloat16", "float"),
    # f32 storage, read by TMA with flush-to-zero / tf32 rounding.
    DType("f32_ftz", 4, 10, "float32", "float"),
    DType("tf32", 4, 11, "float32", "float"),
    DType("tf32_ftz", 4, 12, "float32", "float"),
    DType("f8e4m3", 1, 0, "float8_e4m3fn", "float"),
    DType("f8e5m2", 1, 0, "float8_e5m2", "float"),
]
DTYPES: dict[str, DType] = {d.name: d for d in _DTYPE_LIST}

# Other spellings accepted for the same dtype: torch attribute names (so a torch dtype,
# whose str() is "torch.bfloat16", maps too) and common fp8 spellings.
_DTYPE_ALIASES = {
    "uint8": "u8", "int8": "i8", "uint16": "u16", "int16": "i16", "uint32": "u32",
    "int32": "i32", "uint64": "u64", "int64": "i64", "float16": "f16", "half": "f16",
    "float32": "f32", "float": "f32", "float64": "f64", "double": "f64",
    "bfloat16": "bf16",
    "e4m3": "f8e4m3", "fp8e4m3": "f8e4m3", "fp8_e4m3": "f8e4m3", "f8_e4m3": "f8e4m3",
    "float8_e4m3fn": "f8e4m3", "e4m3fn": "f8e4m3",
    "e5m2": "f8e5m2", "fp8e5m2": "f8e5m2", "fp8_e5m2": "f8e5m2", "f8_e5m2": "f8e5m2",
    "float8_e5m2": "f8e5m2",
}


def normalize_dtype(x: Any) -> DType:
    """A DType from a canonical name, an alias, or a torch dtype (via its str())."""
    if isinstance(x, DType):
        return x
    s = x if isinstance(x, str) else str(x)
    s = s.strip().lower()
    if s.startswith("torch."):
        s = s[len("torch."):]
    s = _DTYPE_ALIASES.get(s, s)
    if s not in DTYPES:
        raise LaunchError(f"unknown dtype {x!r} (known: {', '.join(DTYPES)})")
    return DTYPES[s]


# --------------------------------------------------------------------------------------
# expressions: int | "name" | [op, a, b]
# --------------------------------------------------------------------------------------


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


_OPS: dict[str, Callable[[int, int], int]] = {
    "cdiv": _cdiv,
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a // b,  # floor division
    "mod": lambda a, b: a % b,
    "min": min,
    "max": max,
}
_DIVIDING_OPS = {"cdiv", "div", "mod"}


def eval_expr(expr: Any, env: dict[str, int], where: str = "expression") -> int:
    """Evaluate a grid expression against `env` (dim and integer-scalar values)."""
    if isinstance(expr, bool):  # bool is an int subclass; never a valid literal here
        raise LaunchError(f"{where}: expected an int, a name or [op, a, b], got {expr!r}")
    if isinstance(expr, int):
        return expr
    if isinstance(expr, str):
        if expr not in env:
            known = ", ".join(sorted(env)) or "none"
            raise LaunchError(f"{where}: unknown name `{expr}` (known: {known})")
        return env[expr]
    if isinstance(expr, (list, tuple)):
        if len(expr) != 3 or not isinstance(expr[0], str):
            raise LaunchError(f"{where}: malformed expression {expr!r}, expected [op, a, b]")
        op = expr[0]
        if op not in _OPS:
            raise LaunchError(f"{where}: unknown op `{op}` (known: {', '.join(_OPS)})")
        a = eval_expr(expr[1], env, where)
        b = eval_expr(expr[2], env, where)
        if op in _DIVIDING_OPS and b == 0:
            raise LaunchError(f"{where}: division by zero in {expr!r}")
        return _OPS[op](a, b)
    raise LaunchError(f"{where}: expected an int, a name or [op, a, b], got {expr!r}")


def expr_names(expr: Any, where: str = "expression") -> set[str]:
    """Names referenced by an expression; also checks its structure and ops statically."""
    if isinstance(expr, bool):
        raise LaunchError(f"{where}: expected an int, a name or [op, a, b], got {expr!r}")
    if isinstance(expr, int):
        return set()
    if isinstance(expr, str):
        return {expr}
    if isinstance(expr, (list, tuple)):
        if len(expr) != 3 or not isinstance(expr[0], str):
            raise LaunchError(f"{where}: malformed expression {expr!r}, expected [op, a, b]")
        if expr[0] not in _OPS:
            raise LaunchError(f"{where}: unknown op `{expr[0]}` (known: {', '.join(_OPS)})")
        return expr_names(expr[1], where) | expr_names(expr[2], where)
    raise LaunchError(f"{where}: expected an int, a name or [op, a, b], got {expr!r}")


# --------------------------------------------------------------------------------------
# launch.json validation
# --------------------------------------------------------------------------------------

SWIZZLE_CODES = {0: 0, 32: 1, 64: 2, 128: 3}  # CU_TENSOR_MAP_SWIZZLE_{NONE,32B,64B,128B}
INTERLEAVE_CODES = {"none": 0, "16B": 1, "32B": 2}  # CU_TENSOR_MAP_INTERLEAVE_*
OOB_FILL_CODES = {"zero": 0, "nan": 1}  # CU_TENSOR_MAP_FLOAT_OOB_FILL_{NONE,NAN_REQUEST_ZERO_FMA}
L2_PROMOTION_CODES = {0: 0, 64: 1, 128: 2, 256: 3}  # CU_TENSOR_MAP_L2_PROMOTION_*
_TMA_FLOAT_TYPES = {6, 7, 8, 9, 10, 11, 12}  # NaN OOB fill needs a floating-point type

SCALAR_DTYPES = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64"}

MAX_TMA_RANK = 5
MAX_BOX_DIM = 256
MAX_GLOBAL_DIM = 1 << 32
MAX_GLOBAL_STRIDE = 1 << 40
INT32_MAX = (1 << 31) - 1


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _int_triple(meta: dict, key: str, default: list[int] | None = None) -> tuple[int, int, int]:
    v = meta.get(key, default)
    if not isinstance(v, list) or len(v) != 3 or not all(_is_int(e) and e >= 1 for e in v):
        raise LaunchError(f"launch.json field `{key}`: expected 3 positive ints, got {v!r}")
    return (v[0], v[1], v[2])


@dataclass
class TensorSpec:
    name: str
    dtype: DType
    dims: list  # str (symbolic) or int (fixed)
    access: str


@dataclass
class ScalarSpec:
    name: str
    dtype: DType


@dataclass
class ArgSpec:
    index: int
    kind: str  # tensormap | ptr | dim | scalar
    name: str  # tensor name (tensormap, ptr), dim name or scalar name
    box: list[int] = field(default_factory=list)
    swizzle: int = 0
    interleave: str = "none"
    oob_fill: str = "zero"
    l2_promotion: int = 0

    @property
    def label(self) -> str:
        return f"arg {self.index} ({self.kind} `{self.name}`)"


class LaunchSpec:
    """A validated cake.launch/v0 document. Raises LaunchError on any contract violation."""

    def __init__(self, meta: dict):
        if not isinstance(meta, dict):
            raise LaunchError(f"launch.json: expected a JSON object, got {type(meta).__name__}")
        self.meta = meta
        if meta.get("schema") != SCHEMA:
            raise LaunchError(f"launch.json field `schema`: expected {SCHEMA!r}, got {meta.get('schema')!r}")
        for key in ("kernel", "symbol", "cubin"):
            if not isinstance(meta.get(key), str) or not meta[key]:
                raise LaunchError(f"launch.json field `{key}`: expected a non-empty string, got {meta.get(key)!r}")
        self.kernel: str = meta["kernel"]
        self.symbol: str = meta["symbol"]
        self.cubin: str = meta["cubin"]
        self.target: str = str(meta.get("target", ""))
        self.block = _int_triple(meta, "block")
        if self.block[0] * self.block[1] * self.block[2] > 1024:
            raise LaunchError(f"launch.json field `block`: {list(self.block)} has more than 1024 threads")
        self.cluster = _int_triple(meta, "cluster", [1, 1, 1])
        smem = meta.get("dynamic_smem", 0)
        if not _is_int(smem) or smem < 0:
            raise LaunchError(f"launch.json field `dynamic_smem`: expected an int >= 0, got {smem!r}")
        self.dynamic_smem: int = smem

        self.tensors = self._parse_tensors(meta.get("tensors", []))
        self.scalars = self._parse_scalars(meta.get("scalars", []))
        self.tensor_by_name = {t.name: t for t in self.tensors}
        self.scalar_by_name = {s.name: s for s in self.scalars}
        dupes = set(self.tensor_by_name) & set(self.scalar_by_name)
        if dupes:
            raise LaunchError(f"launch.json: names used both as tensor and scalar: {sorted(dupes)}")
        self.dim_names: list[str] = []
        for t in self.tensors:
            for d in t.dims:
                if isinstance(d, str) and d not in self.dim_names:
                    self.dim_names.append(d)
        clash = set(self.dim_names) & set(self.scalar_by_name)
        if clash:
            raise LaunchError(f"launch.json: names used both as dim and scalar: {sorted(clash)}")
        self.int_scalar_names = {s.name for s in self.scalars if s.dtype.kind in ("int", "uint")}

        if not isinstance(meta.get("args"), list):
            raise LaunchError(f"launch.json field `args`: expected a list, got {meta.get('args')!r}")
        self.args = [self._parse_arg(i, a) for i, a in enumerate(meta["args"])]
        self.ctas_per_sm = 1
        self._parse_grid(meta.get("grid"))
        # The positional calling convention: tensors first, then scalars.
        self.param_names = [t.name for t in self.tensors] + [s.name for s in self.scalars]

    # ---- pieces -------------------------------------------------------------------

    def _parse_tensors(self, tensors: Any) -> list[TensorSpec]:
        if not isinstance(tensors, list):
            raise LaunchError(f"launch.json field `tensors`: expected a list, got {tensors!r}")
        out, seen = [], set()
        for i, t in enumerate(tensors):
            where = f"launch.json tensors[{i}]"
            if not isinstance(t, dict) or not isinstance(t.get("name"), str) or not t["name"]:
                raise LaunchError(f"{where}: expected an object with a string `name`, got {t!r}")
            name = t["name"]
            where = f"launch.json tensor `{name}`"
            if name in seen:
                raise LaunchError(f"{where}: duplicate tensor name")
            seen.add(name)
            dtype = normalize_dtype(t.get("dtype", "?")) if isinstance(t.get("dtype"), str) else None
            if dtype is None:
                raise LaunchError(f"{where} field `dtype`: expected a string, got {t.get('dtype')!r}")
            dims = t.get("dims")
            if not isinstance(dims, list) or not all(
                (isinstance(d, str) and d) or (_is_int(d) and d >= 0) for d in dims
            ):
                raise LaunchError(f"{where} field `dims`: expected a list of names or ints >= 0, got {dims!r}")
            access = t.get("access", "read")
            if not isinstance(access, str):
                raise LaunchError(f"{where} field `access`: expected a string, got {access!r}")
            out.append(TensorSpec(name, dtype, list(dims), access))
        return out

    def _parse_scalars(self, scalars: Any) -> list[ScalarSpec]:
        if not isinstance(scalars, list):
            raise LaunchError(f"launch.json field `scalars`: expected a list, got {scalars!r}")
        out, seen = [], set()
        for i, s in enumerate(scalars):
            if not isinstance(s, dict) or not isinstance(s.get("name"), str) or not s["name"]:
                raise LaunchError(f"launch.json scalars[{i}]: expected an object with a string `name`, got {s!r}")
            name = s["name"]
            if name in seen:
                raise LaunchError(f"launch.json scalar `{name}`: duplicate scalar name")
            seen.add(name)
            dt = s.get("dtype")
            dtype = normalize_dtype(dt) if isinstance(dt, str) else None
            if dtype is None or dtype.name not in SCALAR_DTYPES:
                raise LaunchError(
                    f"launch.json scalar `{name}` field `dtype`: expected one of {sorted(SCALAR_DTYPES)}, got {dt!r}"
                )
            out.append(ScalarSpec(name, dtype))
        return out

    def _parse_arg(self, i: int, a: Any) -> ArgSpec:
        where = f"launch.json args[{i}]"
        if not isinstance(a, dict):
            raise LaunchError(f"{where}: expected an object, got {a!r}")
        kind = a.get("kind")
        if kind in ("tensormap", "ptr"):
            name = a.get("tensor")
            if name not in self.tensor_by_name:
                raise LaunchError(f"{where} ({kind}) field `tensor`: unknown tensor {name!r} "
                                  f"(known: {', '.join(self.tensor_by_name) or 'none'})")
        elif kind == "dim":
            name = a.get("name")
            if name not in self.dim_names:
                raise LaunchError(f"{where} (dim) field `name`: unknown dim {name!r} "
                                  f"(known: {', '.join(self.dim_names) or 'none'})")
        elif kind == "scalar":
            name = a.get("name")
            if name not in self.scalar_by_name:
                raise LaunchError(f"{where} (scalar) field `name`: unknown scalar {name!r} "
                                  f"(known: {', '.join(self.scalar_by_name) or 'none'})")
        else:
            raise LaunchError(f"{where} field `kind`: expected tensormap|ptr|dim|scalar, got {kind!r}")
        arg = ArgSpec(i, kind, name)
        if kind == "tensormap":
            self._parse_tensormap(arg, a)
        return arg

    def _parse_tensormap(self, arg: ArgSpec, a: dict) -> None:
        """Static TMA checks: everything that depends only on launch.json."""
        t = self.tensor_by_name[arg.name]
        where = f"launch.json {arg.label}"
        rank = len(t.dims)
        if not 1 <= rank <= MAX_TMA_RANK:
            raise LaunchError(f"{where}: tensor rank must be in [1, {MAX_TMA_RANK}] for TMA, got {rank}")
        if t.dtype.tma is None:
            raise LaunchError(f"{where}: dtype {t.dtype.name} has no CUtensorMapDataType")
        box = a.get("box")
        if not isinstance(box, list) or len(box) != rank or not all(_is_int(b) for b in box):
            raise LaunchError(f"{where} field `box`: expected {rank} ints (innermost first), got {box!r}")
        for j, b in enumerate(box):
            if not 1 <= b <= MAX_BOX_DIM:
                raise LaunchError(f"{where} field `box`: box[{j}] must be in [1, {MAX_BOX_DIM}], got {b}")
        swizzle = a.get("swizzle")
        if swizzle not in SWIZZLE_CODES or isinstance(swizzle, bool):
            raise LaunchError(f"{where} field `swizzle`: expected one of 0, 32, 64, 128, got {swizzle!r}")
        interleave = a.get("interleave", "none")
        if interleave not in INTERLEAVE_CODES:
            raise LaunchError(f"{where} field `interleave`: expected one of {list(INTERLEAVE_CODES)}, got {interleave!r}")
        oob = a.get("oob_fill", "zero")
        if oob not in OOB_FILL_CODES:
            raise LaunchError(f"{where} field `oob_fill`: expected one of {list(OOB_FILL_CODES)}, got {oob!r}")
        if oob == "nan" and t.dtype.tma not in _TMA_FLOAT_TYPES:
            raise LaunchError(f"{where} field `oob_fill`: 'nan' needs a floating-point TMA type, "
                              f"tensor dtype is {t.dtype.name}")
        l2 = a.get("l2_promotion", 0)
        if l2 not in L2_PROMOTION_CODES or isinstance(l2, bool):
            raise LaunchError(f"{where} field `l2_promotion`: expected one of 0, 64, 128, 256, got {l2!r}")
        es = a.get("element_strides", [1] * rank)
        if es != [1] * rank:
            raise LaunchError(f"{where} field `element_strides`: v0 supports only all-ones, got {es!r}")
        arg.box, arg.swizzle, arg.interleave, arg.oob_fill, arg.l2_promotion = list(box), swizzle, interleave, oob, l2
        check_box(arg.box, t.dtype.nbytes, swizzle, interleave, where)

    def _parse_grid(self, grid: Any) -> None:
        if not isinstance(grid, dict):
            raise LaunchError(f"launch.json field `grid`: expected an object, got {grid!r}")
        kind = grid.get("kind")
        known = set(self.dim_names) | self.int_scalar_names
        if kind == "persistent":
            tiles = grid.get("tiles")
            if not isinstance(tiles, list) or not tiles:
                raise LaunchError(f"launch.json grid field `tiles`: expected a non-empty list of expressions, got {tiles!r}")
            exprs = tiles
            cps = grid.get("ctas_per_sm", 1)
            if not _is_int(cps) or cps < 1:
                raise LaunchError(f"launch.json grid field `ctas_per_sm`: expected an int >= 1, got {cps!r}")
            self.ctas_per_sm = cps
        elif kind == "explicit":
            dims = grid.get("dims")
            if not isinstance(dims, list) or len(dims) != 3:
                raise LaunchError(f"launch.json grid field `dims`: expected 3 expressions, got {dims!r}")
            exprs = dims
        else:
            raise LaunchError(f"launch.json grid field `kind`: expected 'persistent' or 'explicit', got {kind!r}")
        for i, e in enumerate(exprs):
            where = f"launch.json grid {'tiles' if kind == 'persistent' else 'dims'}[{i}]"
            for n in expr_names(e, where):
                if n not in known:
                    raise LaunchError(f"{where}: unknown name `{n}` (known: {', '.join(sorted(known)) or 'none'})")
        self.grid_kind = kind
        self.grid_exprs = exprs


def check_box(box: list[int], elem_bytes: int, swizzle: int, interleave: str, where: str) -> None:
    """TMA box rules from cuTensorMapEncodeTiled's documentation."""
    inner = box[0] * elem_bytes
    if interleave == "none":
        if inner % 16:
            raise LaunchError(f"{where}: box[0]*elem_bytes must be a multiple of 16, got "
                              f"{box[0]}*{elem_bytes} = {inner}")
        if swizzle and inner > swizzle:
            raise LaunchError(f"{where}: with swizzle {swizzle} the inner box extent must be <= {swizzle} "
                              f"bytes, got box[0]*elem_bytes = {box[0]}*{elem_bytes} = {inner}")
    elif interleave == "32B" and swizzle not in (0, 32):
        # With 32B interleave the driver allows only 32B swizzle (or none).
        raise LaunchError(f"{where}: interleave 32B requires swizzle 0 or 32, got {swizzle}")


def compute_grid(spec: LaunchSpec, env: dict[str, int], num_sms: int) -> tuple[int, int, int]:
    """Grid dims for the launch. A zero in any component means: launch nothing."""
    if spec.grid_kind == "persistent":
        total = 1
        for i, e in enumerate(spec.grid_exprs):
            n = eval_expr(e, env, f"grid tiles[{i}]")
            if n < 0:
                raise LaunchError(f"grid tiles[{i}]: evaluates to {n} < 0 ({e!r})")
            total *= n
        if total == 0:
            return (0, 1, 1)
        x = min(num_sms * spec.ctas_per_sm, total)
        # A cluster launch needs gridDim.x divisible by the cluster width. Round up: the
        # extra CTAs find no tile in a persistent loop, while rounding down could give 0.
        cx = spec.cluster[0]
        x = _cdiv(x, cx) * cx
        grid = (x, 1, 1)
    else:
        grid = tuple(eval_expr(e, env, f"grid dims[{i}]") for i, e in enumerate(spec.grid_exprs))
        if any(g < 0 for g in grid):
            raise LaunchError(f"grid dims: evaluate to {list(grid)}, negative")
        if 0 in grid:
            return grid  # type: ignore[return-value]
        for axis, (g, c) in enumerate(zip(grid, spec.cluster)):
            if g % c:
                raise LaunchError(f"grid dims[{axis}] = {g} is not a multiple of cluster[{axis}] = {c}")
    limits = (INT32_MAX, 65535, 65535)
    for axis, (g, lim) in enumerate(zip(grid, limits)):
        if g > lim:
            raise LaunchError(f"grid dim {axis} = {g} exceeds the CUDA limit {lim}")
    return grid  # type: ignore[return-value]


# --------------------------------------------------------------------------------------
# binding: tensors/scalars -> dims, checked
# --------------------------------------------------------------------------------------


@dataclass
class TensorInfo:
    """What the launcher needs from a tensor, read from any duck-typed object."""

    name: str
    shape: tuple[int, ...]
    dtype: DType
    strides: tuple[int, ...]  # in elements
    data_ptr: int
    obj: Any = None

    @property
    def nbytes(self) -> int:
        n = self.dtype.nbytes
        for s in self.shape:
            n *= s
        return n


def row_major_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= s
    return tuple(reversed(out))


def _is_row_major(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    # Same definition as torch.is_contiguous: strides of size-1 dims do not matter.
    expected = row_major_strides(shape)
    return all(sz == 1 or st == ex for sz, st, ex in zip(shape, strides, expected))


def describe_tensor(name: str, obj: Any) -> TensorInfo:
    """Read shape/dtype/strides/data_ptr from a torch tensor or a duck-typed stand-in."""
    try:
        shape = tuple(int(s) for s in obj.shape)
        dtype_raw = obj.dtype
        strides = tuple(int(s) for s in obj.stride())
        ptr = int(obj.data_ptr())
    except LaunchError:
        raise
    except Exception as e:  # not tensor-like at all
        raise LaunchError(f"tensor `{name}`: expected a tensor, got {type(obj).__name__} ({e})") from None
    try:
        dtype = normalize_dtype(dtype_raw)
    except LaunchError:
        raise LaunchError(f"tensor `{name}`: unsupported dtype {dtype_raw!r}") from None
    return TensorInfo(name, shape, dtype, strides, ptr, obj)


@dataclass
class Bound:
    dims: dict[str, int]
    scalars: dict[str, Any]
    tensors: dict[str, TensorInfo]
    grid: tuple[int, int, int]

    @property
    def empty(self) -> bool:
        return 0 in self.grid


def _gather(spec: LaunchSpec, args: tuple, kwargs: dict) -> dict[str, Any]:
    names = spec.param_names
    if len(args) > len(names):
        raise LaunchError(f"kernel `{spec.kernel}` takes {len(names)} arguments ({', '.join(names)}), "
                          f"got {len(args)} positional")
    values = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise LaunchError(f"kernel `{spec.kernel}`: unknown argument `{k}` (expected: {', '.join(names)})")
        if k in values:
            raise LaunchError(f"kernel `{spec.kernel}`: argument `{k}` given both positionally and by name")
        values[k] = v
    missing = [n for n in names if n not in values]
    if missing:
        raise LaunchError(f"kernel `{spec.kernel}`: missing argument(s) {', '.join(missing)} "
                          f"(expected: {', '.join(names)})")
    return values


def _scalar_value(s: ScalarSpec, v: Any) -> int | float:
    if hasattr(v, "item") and not isinstance(v, (int, float)):
        v = v.item()  # 0-d tensors / numpy scalars
    if s.dtype.kind == "float":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise LaunchError(f"scalar `{s.name}`: expected a number for {s.dtype.name}, got {type(v).__name__}")
        return float(v)
    if not _is_int(v):
        raise LaunchError(f"scalar `{s.name}`: expected an int for {s.dtype.name}, got {v!r}")
    bits = s.dtype.nbytes * 8
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if s.dtype.kind == "int" else (0, (1 << bits) - 1)
    if not lo <= v <= hi:
        raise LaunchError(f"scalar `{s.name}`: {v} out of range for {s.dtype.name} [{lo}, {hi}]")
    return v


def _device_str(dev: Any) -> str:
    return str(dev) if dev is not None else "unknown device"


def bind_arguments(
    spec: LaunchSpec,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    num_sms: int,
    device_index: int | None = None,
    tensor_type: type | None = None,
) -> Bound:
    """Bind call arguments to the spec: check every tensor, bind symbolic dims, compute the grid.

    device_index: when given, each tensor's `.device` must be ("cuda", device_index).
    tensor_type: when given, each tensor must be an instance of it (torch.Tensor at launch).
    """
    values = _gather(spec, args, kwargs or {})
    dims: dict[str, int] = {}
    source: dict[str, tuple[str, int]] = {}
    infos: dict[str, TensorInfo] = {}
    for t in spec.tensors:
        obj = values[t.name]
        if tensor_type is not None and not isinstance(obj, tensor_type):
            raise LaunchError(f"tensor `{t.name}`: expected {tensor_type.__module__}.{tensor_type.__name__}, "
                              f"got {type(obj).__name__}")
        info = describe_tensor(t.name, obj)
        if device_index is not None:
            dev = getattr(obj, "device", None)
            if getattr(dev, "type", None) != "cuda" or getattr(dev, "index", None) != device_index:
                raise LaunchError(f"tensor `{t.name}`: expected a CUDA tensor on the current device "
                                  f"cuda:{device_index}, got {_device_str(dev)}")
        if info.dtype.storage != t.dtype.storage:
            raise LaunchError(f"tensor `{t.name}`: expected dtype {t.dtype.name}, got {info.dtype.name}")
        if len(info.shape) != len(t.dims):
            raise LaunchError(f"tensor `{t.name}`: expected rank {len(t.dims)} (dims {t.dims}), "
                              f"got rank {len(info.shape)} (shape {list(info.shape)})")
        for j, (d, n) in enumerate(zip(t.dims, info.shape)):
            if isinstance(d, int):
                if n != d:
                    raise LaunchError(f"tensor `{t.name}` dim {j}: expected fixed extent {d}, got {n}")
            elif d in dims:
                if dims[d] != n:
                    src, sj = source[d]
                    raise LaunchError(f"dim `{d}` is {dims[d]} from {src} (dim {sj}) but {n} from {t.name} (dim {j})")
            else:
                dims[d], source[d] = n, (t.name, j)
        contiguous = _is_row_major(info.shape, info.strides)
        is_contig = getattr(obj, "is_contiguous", None)
        if contiguous and callable(is_contig):
            contiguous = bool(is_contig())
        if not contiguous:
            raise LaunchError(f"tensor `{t.name}`: expected a contiguous row-major tensor, got shape "
                              f"{list(info.shape)} with strides {list(info.strides)} "
                              f"(expected strides {list(row_major_strides(info.shape))}); call .contiguous()")
        if info.data_ptr % 16:
            raise LaunchError(f"tensor `{t.name}`: data_ptr must be 16-byte aligned, got "
                              f"{info.data_ptr:#x} (remainder {info.data_ptr % 16})")
        infos[t.name] = info
    _check_write_aliasing(spec, infos)

    scalars = {s.name: _scalar_value(s, values[s.name]) for s in spec.scalars}
    env = dict(dims)
    env.update({k: v for k, v in scalars.items() if k in spec.int_scalar_names})
    grid = compute_grid(spec, env, num_sms)
    return Bound(dims, scalars, infos, grid)


def _check_write_aliasing(spec: LaunchSpec, infos: dict[str, TensorInfo]) -> None:
    """A tensor the kernel writes must not share memory with any other tensor argument."""
    written = [t.name for t in spec.tensors if "write" in t.access or t.access == "rw"]
    for w in written:
        a = infos[w]
        if a.nbytes == 0:
            continue
        for other, b in infos.items():
            if other == w or b.nbytes == 0:
                continue
            if a.data_ptr < b.data_ptr + b.nbytes and b.data_ptr < a.data_ptr + a.nbytes:
                raise LaunchError(f"tensor `{w}` (access {spec.tensor_by_name[w].access}) overlaps tensor "
                                  f"`{other}` in memory; pass distinct buffers")


# --------------------------------------------------------------------------------------
# tensor maps and parameter packing
# --------------------------------------------------------------------------------------


def tensormap_fields(arg: ArgSpec, info: TensorInfo) -> dict[str, Any]:
    """The cuTensorMapEncodeTiled arguments for a tensormap arg, with the driver's rules checked.

    globalDim is the shape innermost first; globalStrides (bytes) are the strides of the
    outer dims innermost first (rank-1 entries; the innermost stride is implicitly the
    element size). For row-major (M, K): globalDim = [K, M], globalStrides = [K*elem].
    """
    where = f"{arg.label} for tensor `{info.name}`"
    rank = len(info.shape)
    if not 1 <= rank <= MAX_TMA_RANK:
        raise LaunchError(f"{where}: rank must be in [1, {MAX_TMA_RANK}], got {rank}")
    if len(arg.box) != rank:
        raise LaunchError(f"{where}: box has {len(arg.box)} entries, tensor rank is {rank}")
    if info.dtype.tma is None:
        raise LaunchError(f"{where}: dtype {info.dtype.name} has no CUtensorMapDataType")
    elem = info.dtype.nbytes
    align = 32 if arg.interleave == "32B" else 16
    if info.data_ptr % align:
        raise LaunchError(f"{where}: globalAddress must be {align}-byte aligned, got {info.data_ptr:#x}")
    global_dim = list(reversed(info.shape))
    for j, g in enumerate(global_dim):
        if not 1 <= g <= MAX_GLOBAL_DIM:
            raise LaunchError(f"{where}: globalDim[{j}] (tensor dim {rank - 1 - j}) must be in "
                              f"[1, 2^32], got {g}")
    # The tensor is contiguous (checked at bind), so use the canonical row-major strides:
    # torch may report arbitrary strides for size-1 dims, which TMA would then reject.
    strides = row_major_strides(info.shape)
    global_strides = [strides[rank - 2 - j] * elem for j in range(rank - 1)]
    for j, s in enumerate(global_strides):
        if s % align:
            raise LaunchError(f"{where}: globalStrides[{j}] (stride of tensor dim {rank - 2 - j}) must be a "
                              f"multiple of {align} bytes, got {s} (shape {list(info.shape)}, {info.dtype.name})")
        if s >= MAX_GLOBAL_STRIDE:
            raise LaunchError(f"{where}: globalStrides[{j}] must be < 2^40, got {s}")
    check_box(arg.box, elem, arg.swizzle, arg.interleave, where)
    return {
        "data_type": info.dtype.tma,
        "rank": rank,
        "global_address": info.data_ptr,
        "global_dim": global_dim,
        "global_strides": global_strides,
        "box_dim": list(arg.box),
        "element_strides": [1] * rank,
        "interleave": INTERLEAVE_CODES[arg.interleave],
        "swizzle": SWIZZLE_CODES[arg.swizzle],
        "l2_promotion": L2_PROMOTION_CODES[arg.l2_promotion],
        "oob_fill": OOB_FILL_CODES[arg.oob_fill],
    }


TENSORMAP_BYTES = 128
TENSORMAP_ALIGN = 64
TensorMapBuffer = ctypes.c_uint64 * (TENSORMAP_BYTES // 8)


def new_tensormap_buffer() -> ctypes.Array:
    """A zeroed 128-byte buffer at a 64-byte-aligned address (CUtensorMap's alignment).

    ctypes gives no alignment guarantee beyond 16, so carve an aligned view out of a larger
    raw buffer. from_buffer keeps a reference to `raw`, so the view keeps it alive.
    """
    raw = (ctypes.c_char * (TENSORMAP_BYTES + TENSORMAP_ALIGN))()
    offset = (-ctypes.addressof(raw)) % TENSORMAP_ALIGN
    return TensorMapBuffer.from_buffer(raw, offset)


def _pack_scalar(s: ScalarSpec, v: int | float) -> ctypes._SimpleCData:
    n = s.dtype.name
    if n == "f32":
        return ctypes.c_float(v)
    if n == "f64":
        return ctypes.c_double(v)
    if n == "f16":
        try:
            return ctypes.c_uint16(struct.unpack("<H", struct.pack("<e", v))[0])
        except OverflowError:
            raise LaunchError(f"scalar `{s.name}`: {v} out of range for f16") from None
    if n == "bf16":
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:  # NaN: keep it a NaN
            return ctypes.c_uint16((bits >> 16) | 0x40)
        bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
        return ctypes.c_uint16((bits >> 16) & 0xFFFF)
    ctype = {"i8": ctypes.c_int8, "u8": ctypes.c_uint8, "i16": ctypes.c_int16, "u16": ctypes.c_uint16,
             "i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64, "u64": ctypes.c_uint64}[n]
    return ctype(v)


@dataclass
class PackedArgs:
    """Kernel parameters in launch.json order; `params` is the void** for cuLaunchKernel.

    `values` holds the ctypes objects that `params` points into: keep this object alive
    until the launch call has returned (the driver copies the parameters at launch).
    """

    values: list
    params: ctypes.Array
    tensormaps: list[dict]  # fields of each tensormap arg, for debugging


def pack_args(spec: LaunchSpec, bound: Bound, encode_tensormap: Callable[[dict], ctypes.Array]) -> PackedArgs:
    values: list = []
    tmaps: list[dict] = []
    for a in spec.args:
        if a.kind == "tensormap":
            f = tensormap_fields(a, bound.tensors[a.name])
            buf = encode_tensormap(f)
            if ctypes.sizeof(buf) != TENSORMAP_BYTES or ctypes.addressof(buf) % TENSORMAP_ALIGN:
                raise LaunchError(f"{a.label}: tensormap buffer must be {TENSORMAP_BYTES} bytes at a "
                                  f"{TENSORMAP_ALIGN}-byte-aligned address")
            tmaps.append(f)
            values.append(buf)
        elif a.kind == "ptr":
            values.append(ctypes.c_uint64(bound.tensors[a.name].data_ptr))
        elif a.kind == "dim":
            v = bound.dims[a.name]
            if v > INT32_MAX:
                raise LaunchError(f"{a.label}: dim `{a.name}` = {v} does not fit the int32 kernel parameter")
            values.append(ctypes.c_int32(v))
        elif a.kind == "scalar":
            values.append(_pack_scalar(spec.scalar_by_name[a.name], bound.scalars[a.name]))
        else:  # unreachable: LaunchSpec validated the kinds
            raise LaunchError(f"{a.label}: unknown kind")
    params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
    return PackedArgs(values, params, tmaps)


# --------------------------------------------------------------------------------------
# CUDA driver through ctypes
# --------------------------------------------------------------------------------------

CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
_SMEM_DEFAULT_LIMIT = 48 * 1024


class _ClusterDim(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


class CUlaunchAttributeValue(ctypes.Union):
    # The C union is 64 bytes (char pad[64]) and 8-byte aligned (it has pointer members).
    _fields_ = [("pad", ctypes.c_char * 64), ("clusterDim", _ClusterDim), ("_align", ctypes.c_uint64)]


class CUlaunchAttribute(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", CUlaunchAttributeValue)]


class CUlaunchConfig(ctypes.Structure):
    _fields_ = [
        ("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
        ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
        ("sharedMemBytes", ctypes.c_uint),
        ("hStream", ctypes.c_void_p),
        ("attrs", ctypes.POINTER(CUlaunchAttribute)),
        ("numAttrs", ctypes.c_uint),
    ]


_P = ctypes.POINTER
_vp = ctypes.c_void_p
# name -> argtypes. All return CUresult (int). Every one of these is exported unversioned
# by libcuda and cuda.h maps none of them to a _v2 name.
_PROTOTYPES: dict[str, list] = {
    "cuInit": [ctypes.c_uint],
    "cuGetErrorName": [ctypes.c_int, _P(ctypes.c_char_p)],
    "cuDeviceGet": [_P(ctypes.c_int), ctypes.c_int],
    "cuDeviceGetAttribute": [_P(ctypes.c_int), ctypes.c_int, ctypes.c_int],
    "cuCtxGetCurrent": [_P(_vp)],
    "cuCtxSetCurrent": [_vp],
    "cuDevicePrimaryCtxRetain": [_P(_vp), ctypes.c_int],
    "cuModuleLoadData": [_P(_vp), _vp],
    "cuModuleGetFunction": [_P(_vp), _vp, ctypes.c_char_p],
    "cuFuncSetAttribute": [_vp, ctypes.c_int, ctypes.c_int],
    "cuFuncGetAttribute": [_P(ctypes.c_int), ctypes.c_int, _vp],
    "cuTensorMapEncodeTiled": [
        _vp, ctypes.c_int, ctypes.c_uint32, _vp, _P(ctypes.c_uint64), _P(ctypes.c_uint64),
        _P(ctypes.c_uint32), _P(ctypes.c_uint32), ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int,
    ],
    "cuLaunchKernel": [
        _vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
        ctypes.c_uint, _vp, _P(_vp), _P(_vp),
    ],
    "cuLaunchKernelEx": [_P(CUlaunchConfig), _vp, _P(_vp), _P(_vp)],
}


class Driver:
    """The few driver-API entry points the launcher uses. One per process (see get())."""

    _instance: "Driver | None" = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> "Driver":
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise LaunchError(f"cannot load the CUDA driver library libcuda.so.1: {e}") from None
        for name, argtypes in _PROTOTYPES.items():
            try:
                fn = getattr(self.lib, name)
            except AttributeError:
                raise LaunchError(f"libcuda.so.1 has no symbol `{name}`; the driver is too old "
                                  f"(need CUDA 12.0+ for TMA and cluster launch)") from None
            fn.argtypes = argtypes
            fn.restype = ctypes.c_int
            setattr(self, name, fn)
        self.check(self.cuInit(0), "cuInit(0)")
        self._primary: dict[int, int] = {}  # device ordinal -> primary context handle
        self._sm_count: dict[int, int] = {}

    def error_name(self, res: int) -> str:
        s = ctypes.c_char_p()
        if self.cuGetErrorName(res, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return f"CUresult {res}"

    def check(self, res: int, call: str) -> None:
        if res != 0:
            raise LaunchError(f"{call} failed: {self.error_name(res)} ({res})")

    def device(self, ordinal: int) -> int:
        dev = ctypes.c_int()
        self.check(self.cuDeviceGet(ctypes.byref(dev), ordinal), f"cuDeviceGet({ordinal})")
        return dev.value

    def attribute(self, attr: int, ordinal: int) -> int:
        v = ctypes.c_int()
        self.check(self.cuDeviceGetAttribute(ctypes.byref(v), attr, self.device(ordinal)),
                   f"cuDeviceGetAttribute({attr}, device {ordinal})")
        return v.value

    def sm_count(self, ordinal: int) -> int:
        if ordinal not in self._sm_count:
            self._sm_count[ordinal] = self.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, ordinal)
        return self._sm_count[ordinal]

    def ensure_context(self, ordinal: int) -> int:
        """Make torch's context (the device's primary context) current; return its handle.

        torch's runtime API uses the primary context, but a thread that has not made a
        runtime call yet has no current context, so set it when missing or foreign.
        """
        if ordinal not in self._primary:
            ctx = _vp()
            self.check(self.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), self.device(ordinal)),
                       f"cuDevicePrimaryCtxRetain(device {ordinal})")
            self._primary[ordinal] = ctx.value or 0
        primary = self._primary[ordinal]
        cur = _vp()
        self.check(self.cuCtxGetCurrent(ctypes.byref(cur)), "cuCtxGetCurrent")
        if (cur.value or 0) != primary:
            self.check(self.cuCtxSetCurrent(_vp(primary)), f"cuCtxSetCurrent(primary context of device {ordinal})")
        return primary

    def encode_tensormap(self, f: dict) -> ctypes.Array:
        buf = new_tensormap_buffer()
        rank = f["rank"]
        gdim = (ctypes.c_uint64 * rank)(*f["global_dim"])
        # rank-1 strides; pass a valid (unused) array for rank 1.
        gstr = (ctypes.c_uint64 * max(1, rank - 1))(*(f["global_strides"] or [0]))
        box = (ctypes.c_uint32 * rank)(*f["box_dim"])
        estr = (ctypes.c_uint32 * rank)(*f["element_strides"])
        res = self.cuTensorMapEncodeTiled(
            ctypes.addressof(buf), f["data_type"], rank, _vp(f["global_address"]), gdim, gstr, box, estr,
            f["interleave"], f["swizzle"], f["l2_promotion"], f["oob_fill"],
        )
        if res != 0:
            shown = {k: (hex(v) if k == "global_address" else v) for k, v in f.items()}
            raise LaunchError(f"cuTensorMapEncodeTiled({shown}) failed: {self.error_name(res)} ({res})")
        return buf

    def launch(self, func: int, grid, block, smem: int, stream: int, params: ctypes.Array, cluster) -> None:
        if tuple(cluster) == (1, 1, 1):
            self.check(
                self.cuLaunchKernel(_vp(func), *grid, *block, smem, _vp(stream), params, None),
                f"cuLaunchKernel(grid={tuple(grid)}, block={tuple(block)}, smem={smem})",
            )
            return
        attr = CUlaunchAttribute()
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        cfg = CUlaunchConfig(*grid, *block, smem, _vp(stream), ctypes.pointer(attr), 1)
        self.check(
            self.cuLaunchKernelEx(ctypes.byref(cfg), _vp(func), params, None),
            f"cuLaunchKernelEx(grid={tuple(grid)}, block={tuple(block)}, cluster={tuple(cluster)}, smem={smem})",
        )


# --------------------------------------------------------------------------------------
# torch-facing Kernel
# --------------------------------------------------------------------------------------


def _torch():
    try:
        import torch
    except ImportError as e:
        raise LaunchError(f"launching needs torch: {e}") from None
    if not torch.cuda.is_available():
        raise LaunchError("torch.cuda is not available (no GPU or a CPU-only torch build)")
    torch.cuda.init()  # torch must own the primary context before the driver calls
    return torch


class PreparedLaunch:
    """A bound, packed launch: calling launch() re-issues exactly the same kernel launch.

    The tensor maps hold raw addresses: only valid while the bound tensors stay alive and
    unchanged in shape. Used by benchmarks to keep host-side binding out of timed regions.
    """

    def __init__(self, kernel: "Kernel", bound: Bound, func: int, stream: int, packed: PackedArgs | None):
        self.kernel, self.bound, self.func, self.stream, self.packed = kernel, bound, func, stream, packed
        self.grid = bound.grid
        self._keep = [bound.tensors[n].obj for n in bound.tensors]  # keep tensors alive

    def launch(self) -> None:
        k = self.kernel
        k.last_grid = self.grid
        if self.packed is None:  # an empty problem: nothing to do
            return
        k._driver.launch(self.func, self.grid, k.spec.block, k.spec.dynamic_smem, self.stream,
                         self.packed.params, k.spec.cluster)

    __call__ = launch


class Kernel:
    """A cake kernel: call it with torch CUDA tensors (and scalars) to launch it."""

    def __init__(self, meta: dict, cubin: bytes, path: str | None = None):
        self.spec = LaunchSpec(meta)
        self.meta = meta
        self.path = path
        # Keep the image alive for the module's lifetime (the driver may read it lazily).
        self._image = ctypes.create_string_buffer(cubin, len(cubin))
        self._funcs: dict[int, int] = {}  # device ordinal -> CUfunction
        self._lock = threading.Lock()
        self._driver_obj: Driver | None = None
        self.last_grid: tuple[int, int, int] | None = None

    def __repr__(self) -> str:
        return f"<cake.Kernel {self.spec.kernel} ({', '.join(self.spec.param_names)}) from {self.path}>"

    @property
    def _driver(self) -> Driver:
        if self._driver_obj is None:
            self._driver_obj = Driver.get()
        return self._driver_obj

    def _function(self, ordinal: int) -> int:
        """The CUfunction for this device, loading the module into its context once."""
        drv = self._driver
        drv.ensure_context(ordinal)
        with self._lock:
            if ordinal in self._funcs:
                return self._funcs[ordinal]
            mod = _vp()
            res = drv.cuModuleLoadData(ctypes.byref(mod), ctypes.addressof(self._image))
            if res != 0:
                cc = (drv.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ordinal),
                      drv.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ordinal))
                raise LaunchError(f"cuModuleLoadData({self.spec.cubin}) failed: {drv.error_name(res)} ({res}); "
                                  f"target {self.spec.target or '?'}, device {ordinal} is sm_{cc[0]}{cc[1]}")
            func = _vp()
            drv.check(drv.cuModuleGetFunction(ctypes.byref(func), mod, self.spec.symbol.encode()),
                      f"cuModuleGetFunction(`{self.spec.symbol}`)")
            smem = self.spec.dynamic_smem
            if smem > _SMEM_DEFAULT_LIMIT:
                drv.check(drv.cuFuncSetAttribute(func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                          f"cuFuncSetAttribute(`{self.spec.symbol}`, MAX_DYNAMIC_SHARED_SIZE_BYTES, {smem})")
            c = self.spec.cluster
            if c[0] * c[1] * c[2] > 8:  # beyond the portable cluster size
                drv.check(drv.cuFuncSetAttribute(func, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                          f"cuFuncSetAttribute(`{self.spec.symbol}`, NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)")
            self._funcs[ordinal] = func.value
            return func.value

    def func_attributes(self) -> dict[str, int]:
        """Registers, static/local memory, max threads of the loaded function (current device)."""
        torch = _torch()
        ordinal = torch.cuda.current_device()
        func = self._function(ordinal)
        out = {}
        for name, attr in (("num_regs", CU_FUNC_ATTRIBUTE_NUM_REGS),
                           ("static_smem", CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                           ("local_bytes", CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
                           ("max_threads_per_block", CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                           ("max_dynamic_smem", CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)):
            v = ctypes.c_int()
            self._driver.check(self._driver.cuFuncGetAttribute(ctypes.byref(v), attr, _vp(func)),
                               f"cuFuncGetAttribute({name})")
            out[name] = v.value
        return out

    def _bind(self, torch, args, kwargs) -> tuple[Bound, int]:
        ordinal = torch.cuda.current_device()
        bound = bind_arguments(self.spec, args, kwargs, num_sms=self._driver.sm_count(ordinal),
                               device_index=ordinal, tensor_type=torch.Tensor)
        return bound, ordinal

    def bind(self, *args, **kwargs) -> dict:
        """Validate the arguments and bind the symbolic dims without launching."""
        torch = _torch()
        bound, _ = self._bind(torch, args, kwargs)
        return {"dims": dict(bound.dims), "grid": tuple(bound.grid)}

    def prepare(self, *args, stream=None, **kwargs) -> PreparedLaunch:
        """Validate, bind and pack (tensor maps included) without launching."""
        torch = _torch()
        bound, ordinal = self._bind(torch, args, kwargs)
        func = self._function(ordinal)
        handle = self._stream_handle(torch, stream, ordinal)
        packed = None if bound.empty else pack_args(self.spec, bound, self._driver.encode_tensormap)
        return PreparedLaunch(self, bound, func, handle, packed)

    def __call__(self, *args, stream=None, **kwargs) -> None:
        """Launch asynchronously on `stream` (default: torch's current stream). No sync."""
        self.prepare(*args, stream=stream, **kwargs).launch()

    @staticmethod
    def _stream_handle(torch, stream, ordinal: int) -> int:
        if stream is None:
            return int(torch.cuda.current_stream(ordinal).cuda_stream)
        if _is_int(stream):
            return stream
        handle = getattr(stream, "cuda_stream", None)
        if handle is None:
            raise LaunchError(f"stream: expected a torch.cuda.Stream, a raw handle int or None, got {stream!r}")
        dev = getattr(stream, "device", None)
        if dev is not None and getattr(dev, "index", ordinal) not in (ordinal, None):
            raise LaunchError(f"stream: is on {dev}, but the current device is cuda:{ordinal}")
        return int(handle)


def load_kernel(launch_json_path: str | os.PathLike) -> Kernel:
    """Load DIR/<kernel>.launch.json (or a directory holding exactly one) and its cubin.

    Needs neither torch nor a GPU: the module is loaded into the context at first launch.
    """
    path = os.fspath(launch_json_path)
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".launch.json"))
        if len(found) != 1:
            raise LaunchError(f"{path}: expected exactly one *.launch.json, found {found or 'none'}")
        path = os.path.join(path, found[0])
    try:
        with open(path, encoding="utf-8") as fh:
            meta = json.load(fh)
    except OSError as e:
        raise LaunchError(f"cannot read {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise LaunchError(f"{path}: invalid JSON: {e}") from None
    spec = LaunchSpec(meta)  # validate before touching the cubin
    cubin_path = os.path.join(os.path.dirname(os.path.abspath(path)), spec.cubin)
    try:
        with open(cubin_path, "rb") as fh:
            cubin = fh.read()
    except OSError as e:
        raise LaunchError(f"{path} field `cubin`: cannot read {cubin_path}: {e}") from None
    if not cubin:
        raise LaunchError(f"{path} field `cubin`: {cubin_path} is empty")
    return Kernel(meta, cubin, path)
