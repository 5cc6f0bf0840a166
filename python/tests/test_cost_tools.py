"""The CPU half of the cost model's GPU tools: constant substitution (cake.calibrate), the probe
table, variant generation and the accuracy statistics (bench/cost_accuracy.py)."""

import importlib.util
import os
import sys

import pytest

HERE = os.path.dirname(__file__)
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))

from cake.calibrate import module_constants, probes, substitute_constants  # noqa: E402


def _accuracy():
    spec = importlib.util.spec_from_file_location("cost_accuracy", os.path.join(ROOT, "bench", "cost_accuracy.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SRC = '''"""doc"""
import cake
BM, BN, BK = 128, 256, 64
STAGES = 3  # a comment stays
X = 1
'''


def test_module_constants_and_substitution():
    assert module_constants(SRC) == {"BM": "128", "BN": "256", "BK": "64", "STAGES": "3", "X": "1"}
    out = substitute_constants(SRC, {"BN": 128, "STAGES": 4})
    assert "BM, BN, BK = 128, 128, 64\n" in out
    assert "STAGES = 4  # a comment stays\n" in out
    assert out.count("\n") == SRC.count("\n")
    with pytest.raises(KeyError):
        substitute_constants(SRC, {"NOPE": 1})


def test_probe_table_names_existing_schedules_and_constants():
    names = [p["name"] for p in probes(132)]
    assert len(names) == len(set(names))
    for p in probes(132):
        text = open(os.path.join(ROOT, "kernels", "calibrate", p["schedule"] + ".py"), encoding="utf-8").read()
        assert f"def {p['kernel']}(" in text
        substitute_constants(text, p["consts"])  # every substituted name is a module constant
        # Every probe measures some work, a launch, a span (CUPTI), or asks the driver how its
        # CTAs fit (residency).
        assert p["work"] or p["name"] == "launch" or p.get("span") or p.get("residency")
    # The residency probes: one CTA per SM (a 192 KiB ring), clusters of 2, 4 and 8.
    clusters = [p for p in probes(132) if p.get("residency")]
    assert [p["consts"]["CLUSTER"] for p in clusters] == [2, 4, 8]
    assert all(p["consts"]["BM"] * 64 * 2 * p["consts"]["STAGES"] > 232448 // 2 for p in clusters)
    # The atomic probes draw their indices uniformly from [0, K): contention is N / K per row.
    atomic = [p for p in probes(132) if p["schedule"] == "atomic"]
    assert {p["name"] for p in atomic} >= {"atomic_spread", "atomic_contended", "atomic_contended64",
                                           "atomic_mid", "memset", "empty_span"}
    assert all(p["ids"] == "uniform" for p in atomic)


def test_variants_cover_both_families():
    acc = _accuracy()
    vs = acc.gemm_variants() + acc.kmeans_variants()
    assert len(vs) >= 30 and len({v["name"] for v in vs}) == len(vs)
    one = next(v for v in vs if v["name"] == "gemm-c1-bn128-s2-np")
    assert "BM, BN, BK = 64, 128, 64" in one["text"] and "persistent=False" in one["text"]
    assert "warpgroups=[1], regs=232" in one["text"]
    assert any(v["family"] == "kmeans" for v in vs)


def test_statistics():
    acc = _accuracy()
    assert acc.ranks([3.0, 1.0, 2.0, 2.0]) == [4.0, 1.0, 2.5, 2.5]
    assert acc.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert acc.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert acc.spearman([1, 2], [1, 2]) is None
    assert acc.median([3.0, 1.0, 2.0]) == 2.0 and acc.median([1.0, 2.0]) == 1.5 and acc.median([]) is None
    s = acc.summarize_points([dict(predicted_us=110.0, measured_us=100.0), dict(predicted_us=90.0, measured_us=100.0),
                              dict(predicted_us=300.0, measured_us=200.0)])
    assert s["points"] == 3 and s["median_abs_rel_error"] == pytest.approx(0.1)
    assert s["spearman_rho"] == pytest.approx(0.8660254, rel=1e-6)


def test_a_hanging_or_crashing_variant_does_not_end_the_run(tmp_path, monkeypatch):
    acc = _accuracy()
    monkeypatch.setenv("CAKE_ACCURACY_FAKE", "1")
    monkeypatch.setattr(acc, "FIRST_GRACE_S", 0.0)
    shapes = [dict(M=1, N=8, K=8)]
    vs = [dict(name=n, family="gemm", launch="x", shapes=shapes) for n in ("a", "b-hang", "c", "d-crash", "e")]
    acc.measure(vs, 3.0, str(tmp_path))
    got = {v["name"]: (v.get("measured_us"), v.get("error", "")) for v in vs}
    assert got["a"][0] == {"M=1,N=8,K=8": 100.0}
    assert "no answer within" in got["b-hang"][1]
    assert got["c"][0] and got["e"][0]
    assert "the child died" in got["d-crash"][1]
