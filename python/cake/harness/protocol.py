"""cake.worker/v0 framing: request parsing and validation, answers, error classification.

Requests are JSON objects, one per line; answers are `{"id", "ok": true, ...}` or
`{"id", "ok": false, "error": {"kind", "message", "sticky"}}` (docs/worker.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from . import inputs as I
from .tolerance import ToleranceError, resolve_bound, validate_policy

PROTOCOL = "cake.worker/v0"
OPS = ("hello", "load", "check", "time", "timeline", "shutdown")
ERROR_KINDS = ("protocol", "load", "launch", "cuda", "oracle", "python")
ROLES = ("input", "output")

# Lower-cased fragments of CUDA errors after which the context cannot be trusted: the runtime's
# messages (as torch shows them) and the driver's enum names (as cake.launch shows them).
STICKY_MARKERS = (
    "illegal memory access", "misaligned address", "unspecified launch failure", "illegal instruction",
    "an illegal", "device-side assert", "hardware stack error", "invalid program counter",
    "uncorrectable ecc", "launch timed out", "cuda_error_illegal_address", "cuda_error_misaligned_address",
    "cuda_error_launch_failed", "cuda_error_illegal_instruction", "cuda_error_assert",
    "cuda_error_hardware_stack_error", "cuda_error_invalid_pc", "cuda_error_launch_timeout",
    "cuda_error_invalid_address_space", "cuda_error_ecc_uncorrectable",
)
CUDA_MARKERS = ("cuda error", "cuda_error_", "cuda out of memory", "cudaerror", "cuda driver error",
                "cuda runtime error", "cublas_status_", "cudnn_status_")


class RequestError(Exception):
    """A failure answered as an error: `kind` is one of ERROR_KINDS."""

    def __init__(self, kind: str, message: str, sticky: bool = False):
        super().__init__(message)
        self.kind, self.message, self.sticky = kind, message, sticky


class ProtocolError(RequestError):
    def __init__(self, message: str):
        super().__init__("protocol", message)


def is_sticky_message(message: str) -> bool:
    m = message.lower()
    return any(s in m for s in STICKY_MARKERS)


def is_cuda_message(message: str) -> bool:
    m = message.lower()
    return is_sticky_message(m) or any(s in m for s in CUDA_MARKERS)


# --------------------------------------------------------------------------------------
# answers
# --------------------------------------------------------------------------------------


def ok(id: Optional[int], **fields: Any) -> Dict[str, Any]:
    return {"id": id, "ok": True, **fields}


def error(id: Optional[int], kind: str, message: str, sticky: bool = False) -> Dict[str, Any]:
    assert kind in ERROR_KINDS, kind
    return {"id": id, "ok": False, "error": {"kind": kind, "message": message, "sticky": bool(sticky)}}


def encode(answer: Dict[str, Any]) -> str:
    """One JSON line. NaN and infinities, which JSON lacks, become null."""
    return json.dumps(_finite(answer), allow_nan=False, separators=(",", ":"))


def _finite(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


# --------------------------------------------------------------------------------------
# requests
# --------------------------------------------------------------------------------------


def parse_line(line: Union[bytes, str]) -> Dict[str, Any]:
    """The request object of one line; ProtocolError when it is not one."""
    if isinstance(line, bytes):
        try:
            line = line.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolError(f"the line is not UTF-8: {e}") from None
    try:
        req = json.loads(line)
    except json.JSONDecodeError as e:
        raise ProtocolError(f"the line is not JSON: {e}") from None
    if not isinstance(req, dict):
        raise ProtocolError(f"a request must be a JSON object, got {type(req).__name__}")
    return req


def request_id(req: Any) -> Optional[int]:
    """The request's id when it is a usable one, else None (answered as null)."""
    rid = req.get("id") if isinstance(req, dict) else None
    return rid if _is_int(rid) else None


def check_envelope(req: Dict[str, Any]) -> str:
    """Validate `id` and `op`; return the op."""
    if "id" not in req:
        raise ProtocolError("the request has no `id`")
    if not _is_int(req["id"]):
        raise ProtocolError(f"`id` must be an integer, got {req['id']!r}")
    op = req.get("op")
    if op not in OPS:
        raise ProtocolError(f"unknown op {op!r} (known: {', '.join(OPS)})")
    return op


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


_MISSING = object()


def field_of(req: Dict[str, Any], key: str, kind: Union[type, Tuple[type, ...]], default: Any = _MISSING,
             where: str = "request") -> Any:
    """req[key], type-checked (bool is no int here); default when absent and one is given."""
    if key not in req or req[key] is None:
        if default is _MISSING:
            raise ProtocolError(f"{where}: missing `{key}`")
        return default
    v = req[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(v, bool) and bool not in kinds:
        raise ProtocolError(f"{where}: `{key}` must be {_kind_name(kinds)}, got {v!r}")
    if not isinstance(v, kinds):
        raise ProtocolError(f"{where}: `{key}` must be {_kind_name(kinds)}, got {v!r}")
    return v


def _kind_name(kinds: Tuple[type, ...]) -> str:
    names = {int: "an integer", float: "a number", str: "a string", bool: "a boolean", dict: "an object",
             list: "a list"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def int_at_least(req: Dict[str, Any], key: str, low: int, default: Any = _MISSING) -> int:
    v = field_of(req, key, int, default)
    if v < low:
        raise ProtocolError(f"request: `{key}` must be >= {low}, got {v}")
    return v


def split_ref(ref: str, where: str) -> Tuple[str, str]:
    """"/abs/file.py:fn" -> ("/abs/file.py", "fn")."""
    path, sep, fn = ref.rpartition(":")
    if not sep or not path or not fn.isidentifier():
        raise ProtocolError(f"{where}: expected \"/path/file.py:function\", got {ref!r}")
    return path, fn


@dataclass
class TensorSpec:
    name: str
    dtype: str
    shape: List[Union[str, int]]
    role: str


@dataclass
class ScalarSpec:
    name: str
    dtype: str
    value: Union[int, float]


@dataclass
class Problem:
    tensors: List[TensorSpec]
    scalars: List[ScalarSpec]
    generator: Optional[str]
    oracle: Optional[str]
    tolerance: Dict[str, Dict[str, Any]]
    require_deterministic: bool = True
    dims: Dict[str, int] = field(default_factory=dict)  # the request's `shape`, set by bind()
    shapes: Dict[str, Tuple[int, ...]] = field(default_factory=dict)  # per tensor, set by bind()

    @property
    def inputs(self) -> List[TensorSpec]:
        return [t for t in self.tensors if t.role == "input"]

    @property
    def outputs(self) -> List[TensorSpec]:
        return [t for t in self.tensors if t.role == "output"]

    def scalar_values(self) -> Dict[str, Union[int, float]]:
        return {s.name: s.value for s in self.scalars}

    def bind(self, dims: Any) -> None:
        """Resolve every tensor's shape against the request's dimension sizes."""
        try:
            d = I.check_dims(dims)
            self.dims = d
            self.shapes = {t.name: I.bind_shape(t.name, t.shape, d) for t in self.tensors}
            # argmin_ties' `bound` may name a dimension: its size from here on
            self.tolerance = {name: resolve_bound(name, spec, d) for name, spec in self.tolerance.items()}
        except (I.InputError, ToleranceError) as e:
            raise ProtocolError(str(e)) from None


def parse_problem(obj: Any, need_oracle: bool) -> Problem:
    if not isinstance(obj, dict):
        raise ProtocolError(f"`problem` must be an object, got {obj!r}")
    tensors = [_tensor_spec(i, t) for i, t in enumerate(field_of(obj, "tensors", list, where="problem"))]
    scalars = [_scalar_spec(i, s) for i, s in enumerate(field_of(obj, "scalars", list, [], where="problem"))]
    names = [t.name for t in tensors] + [s.name for s in scalars]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ProtocolError(f"problem: duplicate names {dup}")
    if not any(t.role == "output" for t in tensors):
        raise ProtocolError("problem: no tensor has role `output`")
    generator = field_of(obj, "generator", str, None, where="problem")
    oracle = field_of(obj, "oracle", str, None, where="problem")
    for key, ref in (("generator", generator), ("oracle", oracle)):
        if ref is not None:
            split_ref(ref, f"problem.{key}")
    if need_oracle and oracle is None:
        raise ProtocolError("problem: `oracle` is required for check")
    # With an oracle, every output needs its policy: `time` checks the outputs too.
    tolerance = _tolerances(field_of(obj, "tolerance", dict, {}, where="problem"), tensors,
                            need_oracle or oracle is not None)
    check = field_of(obj, "check", dict, {}, where="problem")
    require_det = field_of(check, "require_deterministic", bool, True, where="problem.check")
    return Problem(tensors, scalars, generator, oracle, tolerance, require_det)


def _tensor_spec(i: int, t: Any) -> TensorSpec:
    where = f"problem.tensors[{i}]"
    if not isinstance(t, dict):
        raise ProtocolError(f"{where}: expected an object, got {t!r}")
    name = field_of(t, "name", str, where=where)
    dtype = field_of(t, "dtype", str, where=where)
    try:
        I.dtype_info(dtype)
    except I.InputError as e:
        raise ProtocolError(f"tensor {name}: {e}") from None
    shape = field_of(t, "shape", list, where=where)
    role = field_of(t, "role", str, where=where)
    if role not in ROLES:
        raise ProtocolError(f"tensor {name}: role must be one of {', '.join(ROLES)}, got {role!r}")
    return TensorSpec(name, dtype, shape, role)


def _scalar_spec(i: int, s: Any) -> ScalarSpec:
    where = f"problem.scalars[{i}]"
    if not isinstance(s, dict):
        raise ProtocolError(f"{where}: expected an object, got {s!r}")
    name = field_of(s, "name", str, where=where)
    dtype = field_of(s, "dtype", str, where=where)
    value = field_of(s, "value", (int, float), where=where)
    try:
        floating = I.is_float(dtype)
    except I.InputError as e:
        raise ProtocolError(f"scalar {name}: {e}") from None
    if not floating and not (isinstance(value, int) or float(value).is_integer()):
        raise ProtocolError(f"scalar {name}: {dtype} value must be an integer, got {value!r}")
    return ScalarSpec(name, dtype, float(value) if floating else int(value))


def _tolerances(obj: Dict[str, Any], tensors: List[TensorSpec], required: bool) -> Dict[str, Dict[str, Any]]:
    outputs = [t.name for t in tensors if t.role == "output"]
    unknown = sorted(set(obj) - set(outputs))
    if unknown:
        raise ProtocolError(f"problem.tolerance: {unknown} are not outputs (outputs: {outputs})")
    out = {}
    for name in outputs:
        if name not in obj:
            if required:
                raise ProtocolError(f"problem.tolerance: no policy for output {name}")
            continue
        try:
            out[name] = validate_policy(name, obj[name])
        except ToleranceError as e:
            raise ProtocolError(str(e)) from None
        if out[name]["policy"] == "argmin_ties":
            split_ref(out[name]["score"], f"problem.tolerance.{name}.score")
    return out


def _distribution(req: Dict[str, Any], problem: Problem) -> str:
    dist = field_of(req, "distribution", str)
    if problem.generator is None:  # a contract's generator may know other names
        try:
            I.check_distribution(dist)
        except I.InputError as e:
            raise ProtocolError(str(e)) from None
    return dist


@dataclass
class CheckRequest:
    callable: str
    problem: Problem
    distribution: str
    seed: int
    runs: int


@dataclass
class TimeRequest:
    callables: List[str]
    problem: Problem
    distribution: str
    seed: int
    warmup: int
    samples: int
    flush_l2: bool
    cupti: bool


def _common(req: Dict[str, Any], need_oracle: bool) -> Tuple[str, Problem, str, int]:
    name = field_of(req, "callable", str)
    problem = parse_problem(field_of(req, "problem", dict), need_oracle)
    problem.bind(field_of(req, "shape", dict))
    return name, problem, _distribution(req, problem), field_of(req, "seed", int)


def parse_check(req: Dict[str, Any]) -> CheckRequest:
    name, problem, dist, seed = _common(req, need_oracle=True)
    return CheckRequest(name, problem, dist, seed, int_at_least(req, "runs", 1, 1))


def parse_time(req: Dict[str, Any]) -> TimeRequest:
    """`callable` (one name) or `callables` (several, timed interleaved)."""
    names = req.get("callables")
    if names is not None:
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ProtocolError("time: `callables` must be a non-empty list of names")
        if len(set(names)) != len(names):
            raise ProtocolError("time: `callables` names a callable twice")
        req = dict(req, callable=names[0])
    name, problem, dist, seed = _common(req, need_oracle=False)
    return TimeRequest(names or [name], problem, dist, seed, int_at_least(req, "warmup", 0, 10),
                       int_at_least(req, "samples", 1, 30), field_of(req, "flush_l2", bool, True),
                       field_of(req, "cupti", bool, False))


def parse_timeline(req: Dict[str, Any]) -> Tuple[str, Problem, str, int]:
    """(callable, problem, distribution, seed): one stamped launch of a timeline build."""
    return _common(req, need_oracle=False)


def parse_load(req: Dict[str, Any]) -> Tuple[str, str, str]:
    """(name, "launch" | "python", path or ref)."""
    name = field_of(req, "name", str)
    if not name:
        raise ProtocolError("load: `name` is empty")
    given = [k for k in ("launch", "python") if req.get(k) is not None]
    if len(given) != 1:
        raise ProtocolError("load: give exactly one of `launch` (a launch.json path) or `python` (\"/file.py:fn\")")
    target = field_of(req, given[0], str)
    if given[0] == "python":
        split_ref(target, "load.python")
    return name, given[0], target
