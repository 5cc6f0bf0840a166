"""Summary statistics (cake.harness.stats)."""

import os
import statistics
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cake.harness.stats import median, quantile, summarize  # noqa: E402


def test_odd_sample():
    s = summarize([5.0, 1.0, 4.0, 2.0, 3.0])
    assert s == {"n": 5, "median": 3.0, "mean": 3.0, "min": 1.0, "max": 5.0, "q1": 2.0, "q3": 4.0,
                 "iqr": 2.0, "samples": [5.0, 1.0, 4.0, 2.0, 3.0]}


def test_even_sample_interpolates():
    s = summarize([4, 1, 3, 2])
    assert (s["median"], s["q1"], s["q3"], s["iqr"]) == (2.5, 1.75, 3.25, 1.5)


@pytest.mark.parametrize("xs", [[0.1, 0.7, 0.2], [3, 1, 4, 1, 5, 9, 2, 6], list(np.linspace(0, 1, 31) ** 2)])
def test_quantiles_match_numpy_linear_and_statistics_inclusive(xs):
    s = summarize(xs)
    assert s["q1"] == pytest.approx(np.quantile(xs, 0.25))
    assert s["q3"] == pytest.approx(np.quantile(xs, 0.75))
    assert s["median"] == pytest.approx(np.median(xs))
    q = statistics.quantiles(xs, n=4, method="inclusive")
    assert [s["q1"], s["median"], s["q3"]] == pytest.approx(q)


def test_single_sample():
    s = summarize([0.25])
    assert s["median"] == s["q1"] == s["q3"] == s["min"] == s["max"] == 0.25 and s["iqr"] == 0.0


def test_numpy_input():
    s = summarize(np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert s["n"] == 4 and s["samples"] == [1.0, 2.0, 3.0, 4.0] and median(np.array([3.0, 1.0])) == 2.0


def test_bad_samples():
    with pytest.raises(ValueError, match="no samples"):
        summarize([])
    with pytest.raises(ValueError, match="non-finite"):
        summarize([1.0, float("nan")])
    with pytest.raises(ValueError, match="outside"):
        quantile([1.0], 1.5)
