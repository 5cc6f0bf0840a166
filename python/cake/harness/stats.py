"""Summary statistics of timing samples (milliseconds).

Quantiles use linear interpolation between order statistics (Hyndman & Fan type 7: numpy's
default "linear" method, `statistics.quantiles(method="inclusive")`): with the samples
sorted as x[0..n-1], the p-quantile is x[h] interpolated at h = (n - 1) * p. The median is
the 0.5-quantile, so it agrees with the usual median for odd and even n.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence


def as_floats(samples: Any) -> List[float]:
    """A flat list of floats from a list, a numpy array or a torch tensor."""
    if hasattr(samples, "tolist"):
        samples = samples.reshape(-1).tolist() if hasattr(samples, "reshape") else samples.tolist()
    out = [float(x) for x in samples]
    if not out:
        raise ValueError("no samples")
    if not all(math.isfinite(x) for x in out):
        raise ValueError(f"non-finite sample in {out}")
    return out


def quantile(sorted_xs: Sequence[float], p: float) -> float:
    """Type-7 quantile of already sorted samples."""
    if not sorted_xs:
        raise ValueError("no samples")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"quantile p={p} outside [0, 1]")
    h = (len(sorted_xs) - 1) * p
    lo = math.floor(h)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (h - lo) * (sorted_xs[hi] - sorted_xs[lo])


def median(samples: Any) -> float:
    return quantile(sorted(as_floats(samples)), 0.5)


def summarize(samples: Any) -> Dict[str, Any]:
    """STATS: {n, median, mean, min, max, q1, q3, iqr, samples} (samples in call order)."""
    xs = as_floats(samples)
    s = sorted(xs)
    q1, q3 = quantile(s, 0.25), quantile(s, 0.75)
    return {
        "n": len(xs),
        "median": quantile(s, 0.5),
        "mean": math.fsum(xs) / len(xs),
        "min": s[0],
        "max": s[-1],
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "samples": xs,
    }
