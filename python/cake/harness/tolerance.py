"""Per-output tolerance policies and error metrics (cake.worker/v0, `check`).

Policies (docs/worker.md):
  allclose     |x - y| <= atol + rtol * |y| elementwise
  rel_l2       ||x - y||_2 / ||y||_2 <= max
  exact        bitwise equal (the oracle cast to the output's dtype first)
  argmin_ties  an index output; a chosen index is accepted where
               score(cand) <= score(oracle) + atol + rtol * |score(oracle)|

Counts reported for every policy:
  unwritten   still poisoned: NaN where the oracle is finite (floats), the sentinel where
              the oracle is not the sentinel (integers); always mismatches
  nonfinite   candidate elements that are NaN or +-inf (0 for integer outputs)
  mismatches  elements that fail the policy (for rel_l2, which has no elementwise test:
              unwritten elements and nonfinite disagreements with the oracle)
Error metrics are computed in float64 over the pairs where both values are finite, and are
None when there are none. For argmin_ties they compare the scores, not the indices.

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
    """A malformed policy, or arrays that cannot be compared (shape mismatch)."""


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
    return out


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
    # not part of the answer: what the reason line needs
    first_unwritten: Optional[List[int]] = None
    spec: Dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> Dict[str, Any]:
        return {k: getattr(self, k) for k in ("policy", "passed", "elements", "mismatches", "unwritten",
                                              "nonfinite", "max_abs_err", "max_rel_err", "rel_l2_err",
                                              "first_mismatch")}

    def reason(self, name: str) -> Optional[str]:
        """One line saying why this output failed, None when it passed."""
        if self.passed:
            return None
        if self.unwritten:
            return (f"{name}: {_count(self.unwritten)} never written (still poisoned), "
                    f"first at {self.first_unwritten}")
        extra = f", {self.nonfinite} nonfinite" if self.nonfinite else ""
        if self.policy == "rel_l2" and not self.mismatches:
            return f"{name}: rel_l2_err {_g(self.rel_l2_err)} > max {_g(self.spec.get('max'))}{extra}"
        what = {
            "allclose": f"outside allclose(rtol={_g(self.spec.get('rtol'))}, atol={_g(self.spec.get('atol'))})",
            "exact": "not bitwise equal to the oracle",
            "rel_l2": "nonfinite where the oracle is finite (or the reverse)",
            "argmin_ties": (f"choose an index scoring worse than the oracle's beyond "
                            f"rtol={_g(self.spec.get('rtol'))}, atol={_g(self.spec.get('atol'))}"),
        }[self.policy]
        err = f", max_abs_err {_g(self.max_abs_err)}" if self.max_abs_err is not None else ""
        return (f"{name}: {self.mismatches} of {_count(self.elements)} {what}{err}{extra}, "
                f"first at {self.first_mismatch}")


def _count(n: int) -> str:
    return f"{n} element" if n == 1 else f"{n} elements"


def _g(x: Optional[float]) -> str:
    return "null" if x is None else f"{x:.3g}"


def compare(cand: Any, ref: Any, spec: Dict[str, Any], poison: Any,
            score: Optional[Callable[[Any], Any]] = None) -> OutputReport:
    """Compare a candidate output with the oracle's under one (validated) policy.

    `poison` is what the output was filled with before the call; `score(index)` is needed
    by argmin_ties only and returns the distance of each chosen index.
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
    report = _report(ops, spec, cand, c, bad, unwritten, metrics)
    if spec["policy"] == "rel_l2":
        report.passed = report.passed and metrics[2] is not None and metrics[2] <= spec["max"]
    return report


def within(ops: Any, c: Any, r: Any, finite: Any, rtol: float, atol: float) -> Any:
    """|c - r| <= atol + rtol * |r| on the finite pairs (False elsewhere)."""
    c0, r0 = ops.where(finite, c, 0.0), ops.where(finite, r, 0.0)
    return finite & (abs(c0 - r0) <= atol + rtol * abs(r0))


def _unwritten(ops: Any, cand: Any, c64: Any, r64: Any, poison: Any) -> Any:
    if ops.is_floating(cand):
        return ops.isnan(c64) & ops.isfinite(r64)
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
            metrics: Tuple[Optional[float], Optional[float], Optional[float]]) -> OutputReport:
    mismatches = ops.count(bad)
    # on the float64 copy: torch has no isfinite for float8
    nonfinite = ops.count(~ops.isfinite(c64)) if c64 is not None and ops.is_floating(cand) else 0
    return OutputReport(
        policy=spec["policy"], passed=mismatches == 0, elements=_numel(cand), mismatches=mismatches,
        unwritten=ops.count(unwritten), nonfinite=nonfinite,
        max_abs_err=metrics[0], max_rel_err=metrics[1], rel_l2_err=metrics[2],
        first_mismatch=ops.first_true(bad), first_unwritten=ops.first_true(unwritten), spec=spec,
    )


def _argmin_ties(ops: Any, cand: Any, ref: Any, spec: Dict[str, Any], poison: Any,
                 score: Callable[[Any], Any]) -> OutputReport:
    r_idx = ops.cast_like(ref, cand)
    unwritten = (cand == poison) & (r_idx != poison)
    # Score the oracle's index where the candidate wrote nothing: the poison is no valid index.
    safe = ops.where(unwritten, r_idx, cand)
    s_c, s_r = _scores(ops, score, safe, cand), _scores(ops, score, r_idx, cand)
    finite = ops.isfinite(s_c) & ops.isfinite(s_r)
    ok = within_score(ops, s_c, s_r, finite, spec["rtol"], spec["atol"]) | (~finite & (cand == r_idx))
    return _report(ops, spec, cand, None, ~ok | unwritten, unwritten, error_metrics(ops, s_c, s_r, finite))


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
