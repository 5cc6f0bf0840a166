"""Per-output tolerance policies and error metrics (cake.worker/v0, `check`).

Policies (docs/worker.md):
  allclose     |x - y| <= atol + rtol * |y| elementwise
  rel_l2       ||x - y||_2 / ||y||_2 <= max
  exact        bitwise equal (the oracle cast to the output's dtype first)
  argmin_ties  an index output; a chosen index is accepted where
               score(cand) <= score(oracle) + atol + rtol * |score(oracle)|

Counts reported for every policy:
  unwritten      still poisoned: the poison NaN's exact bits where the oracle is finite
                 (floats; inputs.POISON_BITS), the sentinel where the oracle is not the
                 sentinel (integers); always mismatches
  nonfinite      candidate elements that are NaN or +-inf (0 for integer outputs); those
                 where the oracle is finite and that are not the poison are mismatches of
                 their own ("non-finite values")
  mismatches     elements that fail the policy (for rel_l2, which has no elementwise test:
                 unwritten elements and nonfinite disagreements with the oracle); for
                 argmin_ties also indices out of range [0, bound) (negative ones always)
  out_of_bounds  set by the worker from the guard bands around the output (0 here)
Error metrics are computed in float64 over the pairs where both values are finite, and are
None when there are none. For argmin_ties they compare the scores, not the indices.

ToleranceError means the contract is at fault (a malformed policy, the oracle's data, the
score function failing on the oracle's indices); whatever the candidate wrote only ever
makes a failing report.

Works on torch tensors (the worker) and numpy arrays (the CPU tests) through `xp`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .xp import namespace

POLICIES = ("allclose", "rel_l2", "exact", "argmin_ties")
_REQUIRED = {"allclose": ("rtol", "atol"), "rel_l2": ("max",), "exact": (), "argmin_ties": ("score",)}


class ToleranceError(ValueError):
    """A malformed policy, or an oracle (or score function) result that cannot be used."""


def validate_policy(output: str, spec: Any) -> Dict[str, Any]:
    """A checked copy of one output's policy; argmin_ties' rtol/atol default to 0."""
    if not isinstance(spec, dict):
        raise ToleranceError(f"tolerance for {output}: expected an object, got {spec!r}")
    policy = spec.get("policy")
    if policy not in POLICIES:
        raise ToleranceError(f"tolerance for {output}: unknown policy {policy!r} (known: {', '.join(POLICIES)})")
    out = dict(spec)
    for key in _REQUIRED[policy]:
        if key not in spec:
            raise ToleranceError(f"tolerance for {output}: policy {policy} needs `{key}`")
    for key in ("rtol", "atol", "max"):
        if key in out or (policy == "argmin_ties" and key != "max"):
            out[key] = _non_negative(output, key, out.get(key, 0.0))
    if policy == "argmin_ties" and not isinstance(spec["score"], str):
        raise ToleranceError(f"tolerance for {output}: `score` must be a \"/path/file.py:fn\" string")
    if out.get("bound", 0) is None:
        del out["bound"]
    if "bound" in out:
        b = out["bound"]
        if policy != "argmin_ties":
            raise ToleranceError(f"tolerance for {output}: `bound` applies to argmin_ties only")
        if isinstance(b, bool) or not ((isinstance(b, int) and b >= 0) or (isinstance(b, str) and b)):
            raise ToleranceError(f"tolerance for {output}: `bound` must be an integer >= 0 or a dimension name, "
                                 f"got {b!r}")
    return out


def resolve_bound(output: str, spec: Dict[str, Any], dims: Dict[str, int]) -> Dict[str, Any]:
    """The policy with a `bound` given as a dimension name replaced by its size."""
    b = spec.get("bound")
    if not isinstance(b, str):
        return spec
    if b not in dims:
        known = ", ".join(sorted(dims)) or "none"
        raise ToleranceError(f"tolerance for {output}: `bound` names the unknown dimension {b!r} "
                             f"(the request's shape has {known})")
    return dict(spec, bound=int(dims[b]))


def _non_negative(output: str, key: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0 or math.isinf(v):
        raise ToleranceError(f"tolerance for {output}: `{key}` must be a finite number >= 0, got {v!r}")
    return float(v)


@dataclass
class OutputReport:
    policy: str
    passed: bool
    elements: int
    mismatches: int
    unwritten: int
    nonfinite: int
    max_abs_err: Optional[float]
    max_rel_err: Optional[float]
    rel_l2_err: Optional[float]
    first_mismatch: Optional[List[int]]
    out_of_bounds: int = 0
    # not part of the answer: what the reason line needs
    first_unwritten: Optional[List[int]] = None
    spec: Dict[str, Any] = field(default_factory=dict)
    nonfinite_bad: int = 0  # NaN/inf where the oracle is finite, not the poison
    first_nonfinite_bad: Optional[List[int]] = None
    out_of_range: int = 0  # argmin_ties: indices outside [0, bound)
    first_out_of_range: Optional[List[int]] = None
    residual: int = 0  # the other mismatches: those the policy itself rejects
    first_residual: Optional[List[int]] = None
    oob_before: int = 0
    oob_after: int = 0
    score_error: Optional[str] = None  # argmin_ties: the score function raised on the candidate's indices
    score_exception: Optional[BaseException] = None

    def to_json(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("policy", "passed", "elements", "mismatches", "unwritten",
                                              "nonfinite", "out_of_bounds", "max_abs_err", "max_rel_err",
                                              "rel_l2_err", "first_mismatch")}

    def set_out_of_bounds(self, before: int, after: int) -> None:
        """Elements written in the guard bands before and after the output (a failure)."""
        self.oob_before, self.oob_after = int(before), int(after)
        self.out_of_bounds = self.oob_before + self.oob_after
        if self.out_of_bounds:
            self.passed = False

    def reason(self, name: str) -> Optional[str]:
        """Why this output failed ("C: ..."; several causes joined by "; "), None when it passed."""
        if self.passed:
            return None
        parts = []
        if self.out_of_bounds:
            where = [f"{n} {w}" for n, w in ((self.oob_before, "before its start"), (self.oob_after, "after its end"))
                     if n]
            detail = where[0].split(" ", 1)[1] if len(where) == 1 else ", ".join(where)
            parts.append(f"{_count(self.out_of_bounds)} written outside the tensor ({detail})")
        if self.unwritten:
            parts.append(f"{_count(self.unwritten)} never written (still poisoned), first at {self.first_unwritten}")
        if self.out_of_range:
            n = self.out_of_range
            noun = "index" if n == 1 else "indices"
            bound = self.spec.get("bound")
            what = f"out of range [0, {bound})" if bound is not None else "negative"
            parts.append(f"{n} {noun} {what}, first at {self.first_out_of_range}")
        if self.nonfinite_bad:
            n = self.nonfinite_bad
            parts.append(f"{n} non-finite {'value' if n == 1 else 'values'} where the oracle is finite, "
                         f"first at {self.first_nonfinite_bad}")
        if self.score_error:
            parts.append(f"score {self.spec.get('score')} raised {self.score_error} on the candidate's indices")
        if self.residual:
            what = {
                "allclose": f"outside allclose(rtol={_g(self.spec.get('rtol'))}, atol={_g(self.spec.get('atol'))})",
                "exact": "not bitwise equal to the oracle",
                "rel_l2": "differ from the oracle's non-finite values",
                "argmin_ties": (f"choose an index scoring worse than the oracle's beyond "
                                f"rtol={_g(self.spec.get('rtol'))}, atol={_g(self.spec.get('atol'))}"),
            }[self.policy]
            err = f", max_abs_err {_g(self.max_abs_err)}" if self.max_abs_err is not None else ""
            parts.append(f"{self.residual} of {_count(self.elements)} {what}{err}, first at {self.first_residual}")
        if self.policy == "rel_l2" and (self.rel_l2_err is not None or not parts):
            if self.rel_l2_err is None:
                parts.append("no finite pairs to compute rel_l2_err")
            elif not self.rel_l2_err <= self.spec.get("max", math.inf):
                parts.append(f"rel_l2_err {_g(self.rel_l2_err)} > max {_g(self.spec.get('max'))}")
        if not parts:  # not reached: every failure above has its part
            parts.append(f"{self.mismatches} of {_count(self.elements)} mismatch")
        return "; ".join(f"{name}: {p}" for p in parts)


def _count(n: int) -> str:
    return f"{n} element" if n == 1 else f"{n} elements"


def _g(x: Optional[float]) -> str:
    return "null" if x is None else f"{x:.3g}"


def compare(cand: Any, ref: Any, spec: Dict[str, Any], poison: Any,
            score: Optional[Callable[[Any], Any]] = None) -> OutputReport:
    """Compare a candidate output with the oracle's under one (validated) policy.

    `poison` is the sentinel integer outputs were filled with before the call; floating
    outputs hold the poison NaN of their own dtype (inputs.POISON_BITS), whatever `poison`
    says. `score(index)` is needed by argmin_ties only and returns the distance of each
    chosen index.
    """
    if tuple(ref.shape) != tuple(cand.shape):
        raise ToleranceError(f"the oracle's shape {list(ref.shape)} differs from the output's {list(cand.shape)}")
    ops = namespace(cand)
    if spec["policy"] == "argmin_ties":
        if score is None:
            raise ToleranceError("argmin_ties needs a score function")
        return _argmin_ties(ops, cand, ref, spec, poison, score)
    c, r = ops.f64(cand), ops.f64(ref, like=cand)
    finite = ops.isfinite(c) & ops.isfinite(r)
    unwritten = _unwritten(ops, cand, c, r, poison)
    same_nonfinite = ~finite & ((c == r) | (ops.isnan(c) & ops.isnan(r)))
    metrics = error_metrics(ops, c, r, finite)
    if spec["policy"] == "allclose":
        ok = within(ops, c, r, finite, spec["rtol"], spec["atol"]) | same_nonfinite
    elif spec["policy"] == "exact":
        ok = ops.bits(cand) == ops.bits(ops.cast_like(ref, cand))
    else:  # rel_l2: the norm decides; elementwise, only nonfinite disagreements fail
        ok = finite | same_nonfinite
    bad = ~ok | unwritten
    nonfinite_bad = ~ops.isfinite(c) & ops.isfinite(r) & ~unwritten
    report = _report(ops, spec, cand, c, bad, unwritten, metrics, nonfinite_bad)
    if spec["policy"] == "rel_l2":
        report.passed = report.passed and metrics[2] is not None and metrics[2] <= spec["max"]
    return report


def within(ops: Any, c: Any, r: Any, finite: Any, rtol: float, atol: float) -> Any:
    """|c - r| <= atol + rtol * |r| on the finite pairs (False elsewhere)."""
    c0, r0 = ops.where(finite, c, 0.0), ops.where(finite, r, 0.0)
    return finite & (abs(c0 - r0) <= atol + rtol * abs(r0))


def _unwritten(ops: Any, cand: Any, c64: Any, r64: Any, poison: Any) -> Any:
    if ops.is_floating(cand):
        return ops.is_poison(cand, poison) & ops.isfinite(r64)
    return (cand == poison) & (r64 != float(poison))


def error_metrics(ops: Any, c: Any, r: Any, finite: Any) -> Tuple[Optional[float], Optional[float], Optional[float]]:
    """(max_abs_err, max_rel_err, rel_l2_err) over the finite pairs, in float64.

    max_rel_err skips pairs where the oracle is 0; rel_l2_err is inf when the oracle's norm is
    0 and the candidate's is not (the answer writes inf as null).
    """
    if ops.count(finite) == 0:
        return None, None, None
    c0, r0 = ops.where(finite, c, 0.0), ops.where(finite, r, 0.0)
    diff = abs(c0 - r0)
    nonzero = finite & (r0 != 0)
    rel = diff / ops.where(nonzero, abs(r0), 1.0)
    num, den = _norm(diff), _norm(r0)
    rel_l2 = num / den if den > 0 else (0.0 if num == 0 else math.inf)
    return ops.max(diff, finite), ops.max(rel, nonzero), rel_l2


def _norm(x: Any) -> float:
    """Euclidean norm, scaled by the max so that squares of large values do not overflow."""
    m = float(abs(x).max()) if _numel(x) else 0.0
    if m == 0 or not math.isfinite(m):
        return m
    return m * math.sqrt(float(((x / m) ** 2).sum()))


def _numel(x: Any) -> int:
    return int(math.prod(tuple(x.shape)))


def _report(ops: Any, spec: Dict[str, Any], cand: Any, c64: Any, bad: Any, unwritten: Any,
            metrics: Tuple[Optional[float], Optional[float], Optional[float]], nonfinite_bad: Any = None,
            out_of_range: Any = None) -> OutputReport:
    mismatches = ops.count(bad)
    # on the float64 copy: torch has no isfinite for float8
    nonfinite = ops.count(~ops.isfinite(c64)) if c64 is not None and ops.is_floating(cand) else 0
    residual = bad & ~unwritten
    for extra in (nonfinite_bad, out_of_range):
        if extra is not None:
            residual = residual & ~extra
    return OutputReport(
        policy=spec["policy"], passed=mismatches == 0, elements=_numel(cand), mismatches=mismatches,
        unwritten=ops.count(unwritten), nonfinite=nonfinite,
        max_abs_err=metrics[0], max_rel_err=metrics[1], rel_l2_err=metrics[2],
        first_mismatch=ops.first_true(bad), first_unwritten=ops.first_true(unwritten), spec=spec,
        nonfinite_bad=ops.count(nonfinite_bad) if nonfinite_bad is not None else 0,
        first_nonfinite_bad=ops.first_true(nonfinite_bad) if nonfinite_bad is not None else None,
        out_of_range=ops.count(out_of_range) if out_of_range is not None else 0,
        first_out_of_range=ops.first_true(out_of_range) if out_of_range is not None else None,
        residual=ops.count(residual), first_residual=ops.first_true(residual),
    )


def _argmin_ties(ops: Any, cand: Any, ref: Any, spec: Dict[str, Any], poison: Any,
                 score: Callable[[Any], Any]) -> OutputReport:
    bound = spec.get("bound")
    if bound is not None and not (isinstance(bound, int) and not isinstance(bound, bool)):
        raise ToleranceError(f"argmin_ties: `bound` {bound!r} is not resolved to an integer")
    r_idx = ops.cast_like(ref, cand)
    bad_ref = _outside(r_idx, bound)
    if ops.count(bad_ref):
        raise ToleranceError(f"the oracle chose {ops.count(bad_ref)} indices out of range "
                             f"[0, {'inf' if bound is None else bound}), first at {ops.first_true(bad_ref)}")
    unwritten = (cand == poison) & (r_idx != poison)
    out_of_range = _outside(cand, bound) & ~unwritten
    # Where the candidate wrote nothing usable, score the oracle's index instead: the poison,
    # or an index out of range, must never reach the score function (it may index with it).
    skip = unwritten | out_of_range
    safe = ops.where(skip, r_idx, cand)
    try:
        s_r = _scores(ops, score, r_idx, cand)
    except ToleranceError as e:
        raise ToleranceError(f"score {spec.get('score')} on the oracle's indices: {e}") from None
    except (Exception, SystemExit) as e:
        raise ToleranceError(f"score {spec.get('score')} on the oracle's indices: {type(e).__name__}: {e}") from e
    try:
        s_c = _scores(ops, score, safe, cand)
    except (Exception, SystemExit) as e:  # the candidate's indices: its failure, not the contract's
        bad = skip | (safe != r_idx)  # an index equal to the oracle's needs no score
        report = _report(ops, spec, cand, None, bad, unwritten, (None, None, None), None, out_of_range)
        report.residual, report.first_residual = 0, None
        report.score_error, report.score_exception = f"{type(e).__name__}: {e}", e
        return report
    finite = ops.isfinite(s_c) & ops.isfinite(s_r)
    ok = within_score(ops, s_c, s_r, finite, spec["rtol"], spec["atol"]) | (~finite & (cand == r_idx))
    return _report(ops, spec, cand, None, ~ok | skip, unwritten, error_metrics(ops, s_c, s_r, finite),
                   None, out_of_range)


def _outside(idx: Any, bound: Optional[int]) -> Any:
    """Indices < 0, or >= bound when there is one."""
    below = idx < 0
    return below if bound is None else below | (idx >= bound)


def within_score(ops: Any, s_c: Any, s_r: Any, finite: Any, rtol: float, atol: float) -> Any:
    """score(cand) <= score(oracle) + atol + rtol * |score(oracle)|: ties and better are fine."""
    c0, r0 = ops.where(finite, s_c, 0.0), ops.where(finite, s_r, 0.0)
    return finite & (c0 <= r0 + atol + rtol * abs(r0))


def _scores(ops: Any, score: Callable[[Any], Any], idx: Any, like: Any) -> Any:
    s = score(idx)
    if tuple(getattr(s, "shape", ())) != tuple(idx.shape):
        raise ToleranceError(f"the score function returned shape {list(getattr(s, 'shape', ()))}, "
                             f"expected {list(idx.shape)} (one score per index)")
    return ops.f64(s, like=like)
