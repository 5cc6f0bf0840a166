"""Tolerance policies and error metrics (cake.harness.tolerance) on numpy arrays."""

import json
import math
import os
import re
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cake.harness.tolerance import ToleranceError, compare, resolve_bound, validate_policy  # noqa: E402

NAN = float("nan")
POISON32 = np.array(0x7FA5A5A5, np.uint32).view(np.float32)  # the worker's f32 poison
ALLCLOSE = validate_policy("C", {"policy": "allclose", "rtol": 0.01, "atol": 0.001})
REL_L2 = validate_policy("C", {"policy": "rel_l2", "max": 0.01})
EXACT = validate_policy("C", {"policy": "exact"})
ARGMIN = validate_policy("I", {"policy": "argmin_ties", "score": "/x.py:score", "rtol": 0.01, "atol": 0.0})


def f32(x):
    return np.array(x, dtype=np.float32)


def test_allclose_passes_within_tolerance():
    ref = np.array([[1.0, -2.0], [100.0, 0.0]])
    cand = f32([[1.005, -2.01], [100.9, 0.0009]])
    r = compare(cand, ref, ALLCLOSE, NAN)
    assert r.passed and r.mismatches == 0 and r.unwritten == 0 and r.nonfinite == 0
    assert r.first_mismatch is None and r.elements == 4
    assert r.max_abs_err == pytest.approx(0.9, rel=1e-5)
    assert r.reason("C") is None


def test_allclose_fails_beyond_tolerance_with_first_index():
    ref = np.zeros((3, 4))
    cand = np.zeros((3, 4), np.float32)
    cand[1, 2] = 0.0011  # > atol
    cand[2, 0] = 0.5
    r = compare(cand, ref, ALLCLOSE, NAN)
    assert not r.passed and r.mismatches == 2 and r.unwritten == 0
    assert r.first_mismatch == [1, 2]
    assert all(type(i) is int for i in r.first_mismatch)
    assert r.max_abs_err == pytest.approx(0.5)
    assert r.max_rel_err is None  # the oracle is 0 everywhere
    assert "2 of 12 elements outside allclose(rtol=0.01, atol=0.001)" in r.reason("C")
    assert r.reason("C").endswith("first at [1, 2]")


def test_unwritten_nan_is_counted_and_named_in_the_reason():
    ref = np.ones((4, 3))
    cand = np.ones((4, 3), np.float32)
    cand.view(np.uint32)[2:] = 0x7FA5A5A5  # never written: still the poison
    r = compare(cand, ref, ALLCLOSE, NAN)
    assert (r.mismatches, r.unwritten, r.nonfinite) == (6, 6, 6)
    assert r.first_mismatch == [2, 0]
    assert r.reason("C") == "C: 6 elements never written (still poisoned), first at [2, 0]"
    # metrics only over the pairs where both are finite
    assert r.max_abs_err == 0.0 and r.rel_l2_err == 0.0


def test_nan_where_the_oracle_is_nan_is_neither_unwritten_nor_a_mismatch():
    ref = np.array([NAN, 1.0, np.inf, -np.inf])
    cand = f32([NAN, 1.0, np.inf, -np.inf])
    r = compare(cand, ref, ALLCLOSE, NAN)
    assert r.passed and r.unwritten == 0 and r.mismatches == 0
    assert r.nonfinite == 3  # counts the candidate's NaN/inf, agreeing or not


def test_nonfinite_disagreements_are_mismatches_but_not_unwritten():
    ref = np.array([1.0, np.inf, 2.0])
    cand = f32([np.inf, -np.inf, 2.0])
    r = compare(cand, ref, ALLCLOSE, NAN)
    assert (r.mismatches, r.unwritten, r.nonfinite) == (2, 0, 2)
    assert r.first_mismatch == [0]
    assert r.reason("C") == ("C: 1 non-finite value where the oracle is finite, first at [0]; "
                             "C: 1 of 3 elements outside allclose(rtol=0.01, atol=0.001), max_abs_err 0, first at [1]")


def test_only_the_poison_bits_count_as_unwritten_any_other_nan_was_written():
    ref = np.ones(6)
    cand = np.ones(6, np.float32)
    cand[1] = POISON32
    cand[2] = NAN  # the canonical NaN: computed, not left over
    cand[3] = np.array(0x7FA5A5A4, np.uint32).view(np.float32)  # a NaN one bit away from the poison
    cand[5] = -np.inf
    for policy in (ALLCLOSE, REL_L2, EXACT):
        r = compare(cand, ref, policy, NAN)
        assert (r.unwritten, r.nonfinite, r.mismatches) == (1, 4, 4), policy
        assert r.first_unwritten == [1] and r.first_mismatch == [1]
        assert r.reason("C") == ("C: 1 element never written (still poisoned), first at [1]; "
                                 "C: 3 non-finite values where the oracle is finite, first at [2]")


@pytest.mark.parametrize("dtype,bits", [(np.float16, 0x7EA5), (np.float32, 0x7FA5A5A5),
                                        (np.float64, 0x7FF4A5A5A5A5A5A5)])
def test_the_poison_of_each_float_dtype_is_recognised(dtype, bits):
    from cake.harness.xp import namespace

    cand = np.ones(4, dtype)
    namespace(cand).fill_poison(cand[1:3], NAN)
    assert cand.view(f"u{cand.itemsize}")[1] == bits and np.isnan(cand[1])
    r = compare(cand, np.ones(4), ALLCLOSE, NAN)
    assert (r.unwritten, r.mismatches, r.first_unwritten) == (2, 2, [1])


def test_out_of_bounds_fails_the_report_and_is_named():
    r = compare(f32([1.0, 2.0]), np.array([1.0, 2.0]), ALLCLOSE, NAN)
    assert r.passed and r.out_of_bounds == 0 and r.to_json()["out_of_bounds"] == 0
    r.set_out_of_bounds(0, 3)
    assert not r.passed and r.to_json()["out_of_bounds"] == 3 and r.mismatches == 0
    assert r.reason("C") == "C: 3 elements written outside the tensor (after its end)"
    r.set_out_of_bounds(1, 0)
    assert r.reason("C") == "C: 1 element written outside the tensor (before its start)"
    r.set_out_of_bounds(2, 1)
    assert r.reason("C") == "C: 3 elements written outside the tensor (2 before its start, 1 after its end)"


def test_no_finite_pairs_gives_null_metrics():
    r = compare(f32([NAN, NAN]), np.array([1.0, 2.0]), ALLCLOSE, NAN)
    assert r.max_abs_err is None and r.max_rel_err is None and r.rel_l2_err is None


def test_max_rel_err_skips_zero_oracle_values():
    r = compare(f32([0.5, 2.2]), np.array([0.0, 2.0]), ALLCLOSE, NAN)
    assert r.max_rel_err == pytest.approx(0.1, rel=1e-5)


def test_rel_l2_passes_and_fails_on_the_norm():
    ref = np.arange(1.0, 101.0)
    good = (ref * (1 + 0.005)).astype(np.float32)
    r = compare(good, ref, REL_L2, NAN)
    assert r.passed and r.rel_l2_err == pytest.approx(0.005, rel=1e-4)
    bad = (ref * 1.02).astype(np.float32)
    r = compare(bad, ref, REL_L2, NAN)
    assert not r.passed and r.mismatches == 0
    assert r.reason("C") == "C: rel_l2_err 0.02 > max 0.01"


def test_rel_l2_fails_on_an_unwritten_element_even_when_the_norm_is_fine():
    ref = np.ones(1000)
    cand = np.ones(1000, np.float32)
    cand[999] = POISON32
    r = compare(cand, ref, REL_L2, NAN)
    assert r.rel_l2_err == 0.0
    assert not r.passed and r.unwritten == 1 and r.mismatches == 1 and r.first_mismatch == [999]
    assert r.reason("C") == "C: 1 element never written (still poisoned), first at [999]"


def test_rel_l2_with_a_zero_oracle():
    assert compare(f32([0, 0]), np.zeros(2), REL_L2, NAN).passed
    r = compare(f32([0, 1]), np.zeros(2), REL_L2, NAN)
    assert not r.passed and r.rel_l2_err == math.inf


def test_exact_is_bitwise_after_casting_the_oracle():
    ref = np.array([1.0, 1 / 3, -2.5])  # float64 oracle, float32 output
    assert compare(ref.astype(np.float32), ref, EXACT, NAN).passed
    cand = ref.astype(np.float32)
    cand[1] = np.nextafter(cand[1], np.float32(1))
    r = compare(cand, ref, EXACT, NAN)
    assert not r.passed and r.mismatches == 1 and r.first_mismatch == [1]
    assert "not bitwise equal" in r.reason("C")


def test_exact_tells_zero_from_negative_zero():
    r = compare(f32([0.0, -0.0]), np.array([0.0, 0.0]), EXACT, NAN)
    assert not r.passed and r.first_mismatch == [1]
    assert compare(f32([0.0, -0.0]), np.array([0.0, 0.0]), ALLCLOSE, NAN).passed


def test_integer_outputs_count_the_sentinel_as_unwritten():
    sentinel = -(2 ** 31)
    ref = np.array([[3, 4], [5, sentinel]], np.int32)  # the oracle may produce the sentinel itself
    cand = np.array([[3, sentinel], [5, sentinel]], np.int32)
    r = compare(cand, ref, EXACT, sentinel)
    assert (r.unwritten, r.mismatches, r.nonfinite) == (1, 1, 0)
    assert r.first_mismatch == [0, 1]
    assert r.reason("I") == "I: 1 element never written (still poisoned), first at [0, 1]"


def test_shape_mismatch_raises():
    with pytest.raises(ToleranceError, match="shape"):
        compare(f32([1, 2]), np.zeros(3), ALLCLOSE, NAN)


def test_report_json_has_exactly_the_protocol_fields():
    r = compare(f32([1.0]), np.array([1.0]), ALLCLOSE, NAN)
    assert list(r.to_json()) == ["policy", "passed", "elements", "mismatches", "unwritten", "nonfinite",
                                 "out_of_bounds", "max_abs_err", "max_rel_err", "rel_l2_err", "first_mismatch"]
    json.dumps(r.to_json())


# ---- argmin_ties --------------------------------------------------------------------------

DIST = np.array([[1.0, 1.0, 3.0],     # a tie between 0 and 1
                 [2.0, 2.015, 5.0],   # 1 is within rtol 1% of 0
                 [4.0, 4.1, 0.5]])    # 2 is best; 0 and 1 are far worse


def score(index):
    return DIST[np.arange(3), index]


def test_argmin_ties_accepts_ties_and_choices_within_tolerance():
    ref = np.array([0, 0, 2], np.int32)
    cand = np.array([1, 1, 2], np.int32)
    r = compare(cand, ref, ARGMIN, -(2 ** 31), score=score)
    assert r.passed and r.mismatches == 0
    assert r.max_abs_err == pytest.approx(0.015)  # metrics compare the scores


def test_argmin_ties_rejects_choices_beyond_tolerance():
    tight = validate_policy("I", {"policy": "argmin_ties", "score": "/x.py:s", "rtol": 0.001})
    ref = np.array([0, 0, 2], np.int32)
    cand = np.array([1, 1, 2], np.int32)
    r = compare(cand, ref, tight, -(2 ** 31), score=score)
    assert not r.passed and r.mismatches == 1 and r.first_mismatch == [1]
    cand = np.array([0, 0, 0], np.int32)
    r = compare(cand, ref, ARGMIN, -(2 ** 31), score=score)
    assert r.mismatches == 1 and r.first_mismatch == [2]
    assert "scoring worse than the oracle's" in r.reason("I")


def test_argmin_ties_counts_unwritten_and_never_scores_the_sentinel():
    seen = []

    def checked_score(index):
        seen.append(index.copy())
        return score(index)

    sentinel = -(2 ** 31)
    ref = np.array([0, 0, 2], np.int32)
    cand = np.array([1, sentinel, 2], np.int32)
    r = compare(cand, ref, ARGMIN, sentinel, score=checked_score)
    assert (r.unwritten, r.mismatches) == (1, 1) and r.first_mismatch == [1]
    assert all((s >= 0).all() for s in seen)


def test_argmin_ties_score_must_return_one_value_per_index():
    with pytest.raises(ToleranceError, match="score function returned shape"):
        compare(np.zeros(3, np.int32), np.zeros(3, np.int32), ARGMIN, -1, score=lambda i: np.zeros(2))


SENTINEL = -(2 ** 31)


def _recording(fn):
    seen = []

    def rec(index):
        seen.append(index.copy())
        return fn(index)

    return rec, seen


def test_argmin_ties_indices_out_of_range_fail_and_are_never_scored():
    bounded = dict(ARGMIN, bound=3)
    ref = np.array([0, 0, 2], np.int32)
    cand = np.array([3, 0, 7], np.int32)
    rec, seen = _recording(score)
    r = compare(cand, ref, bounded, SENTINEL, score=rec)
    assert not r.passed and (r.mismatches, r.out_of_range, r.unwritten) == (2, 2, 0) and r.first_mismatch == [0]
    assert all(((s >= 0) & (s < 3)).all() for s in seen)
    assert r.reason("I") == "I: 2 indices out of range [0, 3), first at [0]"
    # negative indices fail even without a bound (numpy would wrap them around)
    rec, seen = _recording(score)
    r = compare(np.array([0, -1, 2], np.int32), ref, ARGMIN, SENTINEL, score=rec)
    assert (r.mismatches, r.out_of_range) == (1, 1)
    assert r.reason("I") == "I: 1 index negative, first at [1]"
    assert all((s >= 0).all() for s in seen)


def test_argmin_ties_a_score_raising_on_the_candidates_indices_fails_the_report():
    ref = np.array([0, 0, 2], np.int32)
    cand = np.array([1, 5, 2], np.int32)  # 5: no bound given, so it reaches the score function
    r = compare(cand, ref, ARGMIN, SENTINEL, score=score)  # DIST[.., 5] raises IndexError
    assert not r.passed and r.mismatches == 2 and r.first_mismatch == [0]  # [2] equals the oracle's
    assert r.max_abs_err is None and isinstance(r.score_exception, IndexError)
    assert r.reason("I").startswith("I: score /x.py:score raised IndexError: ")
    assert r.reason("I").endswith(" on the candidate's indices")


def test_argmin_ties_faults_of_the_oracle_or_its_scores_raise():
    ref = np.array([0, 0, 2], np.int32)
    with pytest.raises(ToleranceError, match="oracle's indices: ValueError: no"):
        def bad(index):
            raise ValueError("no")
        compare(ref.copy(), ref, ARGMIN, SENTINEL, score=bad)
    with pytest.raises(ToleranceError, match=r"the oracle chose 1 indices out of range \[0, 2\), first at \[2\]"):
        compare(ref.copy(), ref, dict(ARGMIN, bound=2), SENTINEL, score=score)
    with pytest.raises(ToleranceError, match="not resolved"):
        compare(ref.copy(), ref, dict(ARGMIN, bound="K"), SENTINEL, score=score)


def test_argmin_ties_bound_validation_and_resolution():
    spec = validate_policy("I", {"policy": "argmin_ties", "score": "/x.py:s", "bound": "K"})
    assert resolve_bound("I", spec, {"K": 8, "N": 3})["bound"] == 8
    assert resolve_bound("I", dict(spec, bound=5), {})["bound"] == 5
    assert "bound" not in validate_policy("I", {"policy": "argmin_ties", "score": "/x.py:s", "bound": None})
    with pytest.raises(ToleranceError, match="unknown dimension 'K'"):
        resolve_bound("I", spec, {"N": 3})


# ---- policy validation ----------------------------------------------------------------------

@pytest.mark.parametrize("spec,msg", [
    ({"policy": "close"}, "unknown policy 'close'"),
    ({"rtol": 1}, "unknown policy None"),
    ({"policy": "allclose", "rtol": 0.1}, "needs `atol`"),
    ({"policy": "allclose", "rtol": 0.1, "atol": -1}, "`atol` must be a finite number >= 0"),
    ({"policy": "allclose", "rtol": True, "atol": 0}, "`rtol` must be"),
    ({"policy": "rel_l2"}, "needs `max`"),
    ({"policy": "rel_l2", "max": float("inf")}, "`max` must be"),
    ({"policy": "argmin_ties", "rtol": 0.1}, "needs `score`"),
    ({"policy": "argmin_ties", "score": 3}, "`score` must be"),
    ({"policy": "argmin_ties", "score": "/x.py:s", "bound": -1}, "`bound` must be an integer >= 0"),
    ({"policy": "argmin_ties", "score": "/x.py:s", "bound": True}, "`bound` must be"),
    ({"policy": "argmin_ties", "score": "/x.py:s", "bound": ""}, "`bound` must be"),
    ({"policy": "exact", "bound": 3}, "`bound` applies to argmin_ties only"),
    ("allclose", "expected an object"),
])
def test_validate_policy_errors(spec, msg):
    with pytest.raises(ToleranceError, match=re.escape(msg)):
        validate_policy("C", spec)


def test_argmin_ties_tolerances_default_to_zero():
    spec = validate_policy("I", {"policy": "argmin_ties", "score": "/x.py:s"})
    assert spec["rtol"] == 0.0 and spec["atol"] == 0.0
