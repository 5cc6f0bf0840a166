"""GPU timing: CUDA events around each call, and the kernels' span as CUPTI saw it.

The loops take the torch module as an argument (this module imports without torch). The
attribution of profiled GPU activities to samples is plain Python, testable on a CPU.

Several callables timed together are interleaved: sample i times each of them in turn, so a
drift of clocks or power during the series lands on all of them alike instead of on whichever
ran last.

CUPTI span. Under torch.profiler (CPU + CUDA activities, i.e. Kineto over CUPTI) every
sample runs as: flush L2; synchronize; with record_function("cake.sample.<i>"): call;
synchronize. The synchronize inside the range means every GPU activity the call launched,
on any stream, starts and ends inside the sample's CPU range, while the flush finished
before it. Kineto puts CPU events and GPU activities on one clock (microseconds since the
trace start, FunctionEvent.time_range.start/.end), so an activity belongs to the sample
whose CPU range contains its start. The span is then last end - first start.

Deferred writeback. What a call leaves in L2 is dealt with by the reset and the flush that
follow it, outside the call's span: a kernel that keeps its output's lines in L2 (an
`evict_last` store) looks faster flushed than it is back to back, and the GPU span between
samples after it is ~5 us longer (bench/results/2026-12-05-mcast/). So that span, between two
samples' ranges, is kept as the `flush_after_ms` of the call before it; callers compare it
across the callables timed together.
"""

from __future__ import annotations

import bisect
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

SAMPLE_PREFIX = "cake.sample."
MIN_FLUSH_BYTES = 256 << 20  # the protocol asks for >= 2 x L2; more costs little


@dataclass(frozen=True)
class Activity:
    """One GPU activity (kernel, memcpy or memset) on the trace clock, in microseconds."""

    name: str
    start_us: float
    end_us: float


@dataclass
class CuptiResult:
    spans_ms: List[float]
    kernels_per_call: int
    kernel_names: List[str]
    # After each call but the last, the GPU span between its sample and the next one (the reset
    # and the flush: they deal with what the call left in L2).
    flush_after_ms: List[float] = field(default_factory=list)


def flush_bytes(l2_bytes: Optional[int]) -> int:
    return max(2 * int(l2_bytes or 0), MIN_FLUSH_BYTES)


def make_flush_buffer(torch: Any, l2_bytes: Optional[int], device: Any) -> Any:
    return torch.empty(flush_bytes(l2_bytes), dtype=torch.uint8, device=device)


def flush_l2(buf: Any) -> None:
    """Write the whole buffer: evicts whatever the previous call left in L2.

    Lines the previous call read or wrote with an L2 `evict_last` policy would survive the write
    (L2 evicts normal lines first) and slow the next call: a kernel could win its comparison by
    leaving them for the baseline timed after it (measured: RMSNorm's output stored evict-last
    made torch's `rms_norm` timed after it 6 % slower, bench/results/2026-12-05-gemv-fused/).
    So persisting lines are returned to normal priority first (measured since to change nothing
    for lines a PTX `createpolicy` evict-last access kept, bench/results/2026-12-05-mcast/ call 2;
    what such a kernel leaves behind is charged instead, see Deferred writeback). The device is
    synchronised before the reset, which is not ordered on a stream."""
    if buf is not None:
        reset_persisting_l2(buf.device)
        buf.zero_()


def reset_persisting_l2(device: Any) -> None:
    """cuCtxResetPersistingL2Cache in the device's primary context (torch's), after the work
    queued before it has finished."""
    import torch
    from cake._native_loader import native

    torch.cuda.synchronize(device)
    native().reset_persisting_l2(device.index if device.index is not None else torch.cuda.current_device())


def time_events(torch: Any, call: Callable[[], Any], warmup: int, samples: int,
                flush: Any = None) -> List[float]:
    """Milliseconds between two events on the current stream around each call."""
    return time_events_interleaved(torch, [call], warmup, samples, flush)[0]


def time_events_interleaved(torch: Any, calls: Sequence[Callable[[], Any]], warmup: int, samples: int,
                            flush: Any = None, before_last: Optional[Callable[[int], Any]] = None) -> List[List[float]]:
    """Per call, its event times; sample i times every call in turn.

    before_last(j), when given, runs before call j's last sample, ahead of the flush and out of
    the timed window (the worker re-poisons that call's outputs there, so that what they hold
    afterwards is what the last call wrote).
    """
    stream = torch.cuda.current_stream()
    out: List[List[float]] = [[] for _ in calls]
    last = warmup + samples - 1
    for i in range(warmup + samples):
        for j, call in enumerate(calls):
            if before_last is not None and i == last:
                before_last(j)
            # No synchronisation after the flush: it keeps the GPU busy while the host reaches
            # the launch, so host-side latency stays out of the measured window.
            flush_l2(flush)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
            call()
            end.record(stream)
            torch.cuda.synchronize()
            if i >= warmup:
                out[j].append(float(start.elapsed_time(end)))
    return out


def time_cupti(torch: Any, call: Callable[[], Any], samples: int, flush: Any = None) -> CuptiResult:
    """`samples` calls under torch.profiler; each call's GPU span from its activities."""
    return time_cupti_interleaved(torch, [call], samples, flush)[0]


def time_cupti_interleaved(torch: Any, calls: Sequence[Callable[[], Any]], samples: int,
                           flush: Any = None, before_last: Optional[Callable[[int], Any]] = None) -> List[CuptiResult]:
    """Per call, its CUPTI spans; sample i profiles every call in turn (range k = i * n + j).
    before_last(j) as in time_events_interleaved: before the flush, outside every range."""
    from torch.profiler import ProfilerActivity, profile, record_function

    n = len(calls)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(samples):
            for j, call in enumerate(calls):
                if before_last is not None and i == samples - 1:
                    before_last(j)
                flush_l2(flush)
                torch.cuda.synchronize()
                with record_function(f"{SAMPLE_PREFIX}{i * n + j}"):
                    call()
                    torch.cuda.synchronize()
    ranges, activities = trace_records(torch, prof.events())
    missing = [k for k in range(samples * n) if k not in ranges]
    if missing:
        raise RuntimeError(f"the profiler trace lacks the CPU ranges of samples {missing[:5]}")
    ordered = [ranges[k] for k in range(samples * n)]
    per_sample = attribute(ordered, activities)
    between = flush_spans(ordered, activities)
    results = [summarize_cupti(per_sample[j::n]) for j in range(n)]
    for k in range(1, samples * n):  # the flush before sample k follows sample k - 1's call
        if between[k] is not None:
            results[(k - 1) % n].flush_after_ms.append(between[k])
    return results


def trace_records(torch: Any, events: Any) -> Tuple[Dict[int, Tuple[float, float]], List[Activity]]:
    """The samples' CPU ranges and the GPU activities from the profiler's FunctionEvents.

    Relies on FunctionEvent.name, .device_type (torch.autograd.DeviceType) and
    .time_range.start/.end (us on the trace clock). GPU-side copies of the record_function
    ranges (user annotations, same name) are not activities.
    """
    cpu, cuda = torch.autograd.DeviceType.CPU, torch.autograd.DeviceType.CUDA
    ranges: Dict[int, Tuple[float, float]] = {}
    acts: List[Activity] = []
    for e in events:
        name = e.name
        tr = e.time_range
        is_sample = name.startswith(SAMPLE_PREFIX)
        if e.device_type == cpu and is_sample:
            idx = name[len(SAMPLE_PREFIX):]
            if idx.isdigit():
                ranges[int(idx)] = (float(tr.start), float(tr.end))
        elif e.device_type == cuda and not is_sample and not getattr(e, "is_user_annotation", False):
            acts.append(Activity(name, float(tr.start), float(tr.end)))
    return ranges, acts


def attribute(ranges: Sequence[Tuple[float, float]], activities: Sequence[Activity]) -> List[List[Activity]]:
    """Group activities by the sample whose [start, end] CPU range holds the activity's start.

    Activities outside every range (the flushes) are dropped. Ranges must not overlap.
    """
    order = sorted(range(len(ranges)), key=lambda i: ranges[i][0])
    starts = [ranges[i][0] for i in order]
    out: List[List[Activity]] = [[] for _ in ranges]
    for a in activities:
        k = bisect.bisect_right(starts, a.start_us) - 1
        if k >= 0 and a.start_us <= ranges[order[k]][1]:
            out[order[k]].append(a)
    return out


def flush_spans(ranges: Sequence[Tuple[float, float]], activities: Sequence[Activity]) -> List[Optional[float]]:
    """For each sample k (ranges in sample order, not overlapping), the span in ms of the GPU
    activities that start after sample k - 1's range ends and before sample k's starts (the
    flush between them); None for the first sample and where there was none."""
    out: List[Optional[float]] = [None] * len(ranges)
    for k in range(1, len(ranges)):
        lo, hi = ranges[k - 1][1], ranges[k][0]
        acts = [a for a in activities if lo < a.start_us < hi]
        if acts:
            out[k] = span_ms(acts)
    return out


def span_ms(acts: Sequence[Activity]) -> float:
    """Last end - first start, 0 when the call launched nothing."""
    if not acts:
        return 0.0
    return (max(a.end_us for a in acts) - min(a.start_us for a in acts)) / 1000.0


def summarize_cupti(per_sample: Sequence[Sequence[Activity]]) -> CuptiResult:
    counts = [len(a) for a in per_sample]
    if len(set(counts)) > 1:
        print(f"cake.worker: the calls launched different numbers of GPU activities: {counts}", file=sys.stderr)
    names: List[str] = []
    for acts in per_sample:
        for a in sorted(acts, key=lambda a: a.start_us):
            if a.name not in names:
                names.append(a.name)
    return CuptiResult([span_ms(a) for a in per_sample], max(counts, default=0), names)
