"""Timeline builds (docs/timeline.md): the stamps' layout in the launch metadata, a timeline build
through `cake.compile`, and the summary of recorded stamps. Recording itself needs a GPU
(bench/timeline_session.sh runs it on one)."""

from __future__ import annotations

import os
import shutil
from types import SimpleNamespace

import pytest

import cake
from cake import timeline

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINYGEMM = os.path.join(ROOT, "examples", "tinygemm_sm90.py")
POINTS = ["cta.start", "cta.sm", "cta.prologue", "load.start", "load.first_wait", "load.end",
          "math.start", "math.first_wait", "math.end"]


def cta(start, sm, prologue, load, math):
    """One CTA's row: times in ns (load and math: start, first wait, end)."""
    return [start, sm, prologue, *load, *math]


def test_the_summary_reads_phases_tail_and_sms_from_the_stamps():
    rows = [
        cta(1000, 0, 1500, (1600, 1700, 9000), (1600, 3600, 10_000)),
        cta(1200, 1, 1700, (1800, 1900, 9300), (1800, 4000, 11_000)),
        cta(1100, 0, 1600, (1700, 1800, 9100), (1700, 3700, 14_000)),   # the last to end
        [0] * 9,                                                           # never ran (no stamps)
    ]
    s = timeline.summarize(POINTS, rows)
    assert (s["ctas"], s["sms"], s["ctas_per_sm_max"]) == (3, 2, 2)
    assert s["span_us"] == 13.0                 # 1000 -> 14000 ns
    # SM 0 last ended at 14000, SM 1 at 11000: the median of the SMs' last ends is 12500.
    assert s["tail_us"] == 1.5
    assert s["start_skew"] == {"median_us": 0.1, "max_us": 0.2}
    assert s["prologue"]["median_us"] == 0.5
    math = s["roles"]["math"]
    assert math["to_first_wait"]["median_us"] == 2.0 and math["to_first_wait"]["max_us"] == 2.2
    assert math["after_first_wait"]["median_us"] == 7.0
    assert s["cta_life"]["max_us"] == 12.9
    text = timeline.format_summary(s)
    assert "3 CTAs on 2 SMs" in text and "role math: start to first completed wait 2.00 (max 2.20) us" in text


def test_a_point_no_cta_reached_is_reported_as_missing_not_as_zero():
    rows = [cta(1000, 3, 1500, (1600, 0, 9000), (1600, 3600, 10_000))]
    s = timeline.summarize(POINTS, rows)
    assert s["roles"]["load"]["to_first_wait"] == {"median_us": None, "max_us": None, "ctas": 0}
    assert "start to first completed wait - " in timeline.format_summary(s)
    assert timeline.summarize(POINTS, [[0] * 9]) == {"ctas": 0}


def test_a_stream_k_kernel_summarises_its_fixup():
    # The lowering adds these points for the roles that own a fix-up's fragment only.
    points = POINTS + ["math.publish", "math.fixup_wait", "math.fixup_done", "cta.shared_out"]
    rows = [
        # CTA 0 publishes its partial 5 us after the math role starts and adds none.
        cta(1000, 0, 1500, (1600, 1700, 9000), (1600, 3600, 10_000)) + [6600, 0, 0, 3000],
        # CTA 1 ends the tile CTA 0 began: waits at 9 us, has the partial added at 9.8 us.
        cta(1000, 1, 1500, (1600, 1700, 9000), (1600, 3600, 10_000)) + [0, 9000, 9800, 5000],
    ]
    s = timeline.summarize(points, rows)
    sk = s["roles"]["math"]["stream_k"]
    assert sk["publish"] == {"median_us": 5.0, "max_us": 5.0, "ctas": 1}
    assert sk["fixup"] == {"median_us": 0.8, "max_us": 0.8, "ctas": 1}
    assert sk["after_fixup"]["median_us"] == 0.2
    assert "stream_k" not in s["roles"]["load"]
    assert s["shared_out"] == {"median_us": 3.0, "max_us": 4.0, "ctas": 2}
    text = timeline.format_summary(s)
    assert "stream-K: 1 partials published 5.00 (max 5.00) us after the role's start" in text
    assert "1 runs add theirs in 0.80 (max 0.80) us" in text
    assert "2 CTAs reach their shared-out steps 3.00 (max 4.00) us after their start" in text
    assert text.count("stream-K") == 2, "a role that never fixes up prints nothing"
    # A kernel without stream-K has no such entry.
    plain = timeline.summarize(POINTS, [r[:9] for r in rows])
    assert "stream_k" not in plain["roles"]["math"] and "shared_out" not in plain


def test_recording_needs_a_timeline_build():
    plain = SimpleNamespace(meta={"kernel": "gemm", "timeline": {"slots": 9, "points": POINTS, "enabled": False}})
    with pytest.raises(ValueError, match="gemm was built without its timeline"):
        timeline.record(plain)
    with pytest.raises(ValueError, match="built without its timeline"):
        timeline.layout(SimpleNamespace(meta={}))


def test_every_lowering_describes_the_stamps_and_a_timeline_build_takes_the_buffer(tmp_path):
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no CUDA toolchain (scripts/toolchain.sh installs one)")
    plain = cake.compile(TINYGEMM, target="sm_90a", cache_dir=tmp_path).tinygemm
    assert plain.meta["timeline"] == {"slots": 9, "points": POINTS, "enabled": False}
    assert "CAKE_TIMELINE" not in plain.param_names
    built = cake.compile(TINYGEMM, target="sm_90a", cache_dir=tmp_path, timeline=True).tinygemm
    assert built.path != plain.path, "another cache entry"
    assert timeline.layout(built)["enabled"]
    assert built.meta["args"][-2:] == [{"kind": "ptr", "tensor": "CAKE_TIMELINE"},
                                        {"kind": "dim", "name": "CAKE_TIMELINE_LEN"}]
    with open(os.path.join(os.path.dirname(built.path), "tinygemm.cu"), encoding="utf-8") as fh:
        assert fh.readline().strip() == "#define CAKE_TIMELINE 1"
