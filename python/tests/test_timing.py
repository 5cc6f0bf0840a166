"""CUPTI attribution and flush sizing (cake.harness.timing), with synthetic profiler events."""

import os
import sys
from types import SimpleNamespace

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cake.harness import timing as T  # noqa: E402
from cake.harness.timing import Activity  # noqa: E402

CPU, CUDA = "CPU", "CUDA"
FAKE_TORCH = SimpleNamespace(autograd=SimpleNamespace(DeviceType=SimpleNamespace(CPU=CPU, CUDA=CUDA)))


def ev(name, device, start, end, annotation=False):
    return SimpleNamespace(name=name, device_type=device, time_range=SimpleNamespace(start=start, end=end),
                           is_user_annotation=annotation)


def test_activities_go_to_the_sample_whose_range_holds_their_start():
    ranges = [(100.0, 200.0), (300.0, 450.0)]
    acts = [Activity("flush", 50, 90), Activity("k1", 110, 150), Activity("k2", 140, 190),  # two streams
            Activity("flush", 250, 290), Activity("k1", 320, 400), Activity("late", 460, 470)]
    per = T.attribute(ranges, acts)
    assert [[a.name for a in s] for s in per] == [["k1", "k2"], ["k1"]]
    assert [T.span_ms(s) for s in per] == [pytest.approx(0.08), pytest.approx(0.08)]


def test_ranges_need_not_be_given_in_time_order():
    per = T.attribute([(300.0, 400.0), (100.0, 200.0)], [Activity("a", 150, 160), Activity("b", 350, 360)])
    assert [[a.name for a in s] for s in per] == [["b"], ["a"]]


def test_summary_counts_names_and_empty_calls():
    per = [[Activity("gemm", 10, 20), Activity("reduce", 21, 25)], [Activity("gemm", 30, 41)], []]
    r = T.summarize_cupti(per)
    assert r.kernel_names == ["gemm", "reduce"] and r.kernels_per_call == 2
    assert r.spans_ms == [pytest.approx(0.015), pytest.approx(0.011), 0.0]


def test_trace_records_skip_gpu_annotations_and_foreign_ranges():
    events = [
        ev("cake.sample.0", CPU, 100, 200), ev("cake.sample.1", CPU, 300, 400),
        ev("cake.sample.0", CUDA, 110, 190, annotation=True),  # the range's GPU-side mirror
        ev("cake.sample.x", CPU, 0, 1000),  # not ours
        ev("cudaLaunchKernel", CPU, 101, 105),
        ev("cake_gemm", CUDA, 120, 180), ev("Memset (Device)", CUDA, 320, 330),
        ev("other_annotation", CUDA, 310, 390, annotation=True),
    ]
    ranges, acts = T.trace_records(FAKE_TORCH, events)
    assert ranges == {0: (100.0, 200.0), 1: (300.0, 400.0)}
    assert [a.name for a in acts] == ["cake_gemm", "Memset (Device)"]


def test_flush_buffer_is_at_least_twice_l2():
    assert T.flush_bytes(60 << 20) == 256 << 20
    assert T.flush_bytes(200 << 20) == 400 << 20
    assert T.flush_bytes(None) == T.MIN_FLUSH_BYTES


class _FakeCuda:
    """Just enough of torch.cuda for the event loop: events read a clock the calls advance."""

    def __init__(self):
        self.now = 0.0

    def current_stream(self):
        return None

    def synchronize(self):
        pass

    def Event(self, enable_timing=True):  # noqa: N802 - torch's name
        cuda = self

        class Event:
            def record(self, stream=None):
                self.t = cuda.now

            def elapsed_time(self, other):
                return other.t - self.t

        return Event()


def test_interleaved_events_alternate_the_calls_and_keep_their_times_apart():
    from types import SimpleNamespace

    cuda = _FakeCuda()
    order = []

    def call(name, ms):
        def run():
            order.append(name)
            cuda.now += ms
        return run

    torch = SimpleNamespace(cuda=cuda)
    times = T.time_events_interleaved(torch, [call("a", 1.0), call("b", 3.0)], warmup=1, samples=3)
    assert order == ["a", "b"] * 4, "sample i times every call in turn"
    assert times == [[1.0] * 3, [3.0] * 3]
    assert T.time_events(torch, call("c", 2.0), warmup=0, samples=2) == [2.0, 2.0]


def test_before_last_runs_once_per_call_right_before_its_last_sample():
    cuda = _FakeCuda()
    log = []

    def call(name):
        def run():
            log.append(name)
            cuda.now += 1.0
        return run

    torch = SimpleNamespace(cuda=cuda)
    T.time_events_interleaved(torch, [call("a"), call("b")], warmup=1, samples=2,
                              before_last=lambda j: log.append(f"poison {j}"))
    assert log == ["a", "b", "a", "b", "poison 0", "a", "poison 1", "b"]
    log.clear()
    T.time_events_interleaved(torch, [call("a")], warmup=0, samples=1, before_last=lambda j: log.append("p"))
    assert log == ["p", "a"]


def test_the_flush_between_two_samples_is_credited_to_the_call_before_it():
    ranges = [(100.0, 200.0), (300.0, 400.0), (500.0, 600.0)]
    acts = [Activity("flush", 50, 90),                                   # before the first: nobody's
            Activity("k", 110, 150), Activity("flush", 210, 290),        # after sample 0: 80 us
            Activity("k", 310, 350), Activity("flush", 410, 470), Activity("flush2", 460, 480),
            Activity("k", 510, 550)]
    assert T.flush_spans(ranges, acts) == [None, pytest.approx(0.08), pytest.approx(0.07)]
    assert T.flush_spans([(0.0, 10.0), (20.0, 30.0)], [Activity("k", 1, 2)]) == [None, None]
