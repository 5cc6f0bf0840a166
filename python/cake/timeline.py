"""Per-CTA timelines of a kernel built with its stamps compiled in (docs/timeline.md).

A kernel compiled with `cake build --timeline` (or `cake.compile(..., timeline=True)`) writes,
for every CTA, `%globaltimer` when the CTA starts, the SM it runs on, when its prologue (barrier
setup) is done, and for each role when it starts, when it first completes a wait (for a consumer:
its first data) and when it ends. `record` launches it once and reads them back; `summarize`
turns them into the phases an agent can act on: how long CTAs wait for their first data, how long
they stream, and how long after the median SM finished the slowest one did (the tail).

    k = cake.compile("tinygemm.py", "sm_90a", timeline=True)["tinygemm"]
    rec = cake.timeline.record(k, A=a, B=b, C=c)
    print(cake.timeline.format_summary(rec.summary()))
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

TENSOR = "CAKE_TIMELINE"


@dataclass
class Recording:
    """Stamps of one launch: `points` names the slots, `rows[c]` holds CTA c's (nanoseconds of
    %globaltimer; the SM id in `cta.sm`; 0 where the point was not reached)."""
    points: List[str]
    rows: List[List[int]] = field(default_factory=list)

    def summary(self) -> Dict[str, Any]:
        return summarize(self.points, self.rows)


def layout(kernel: Any) -> Dict[str, Any]:
    """The kernel's timeline layout from its launch metadata; ValueError unless the stamps are
    compiled in."""
    meta = getattr(kernel, "meta", None) or {}
    t = meta.get("timeline")
    if not t or not t.get("enabled"):
        raise ValueError(
            f"{meta.get('kernel', 'the kernel')} was built without its timeline: build it "
            "with `cake build --timeline` or `cake.compile(..., timeline=True)`")
    return t


def record(kernel: Any, *args: Any, flush: bool = True, **kwargs: Any) -> Recording:
    """Launch `kernel` (a timeline build) once with these arguments, after flushing L2 when
    `flush`, and return every CTA's stamps. Needs torch and the GPU."""
    import torch

    t = layout(kernel)
    slots = int(t["slots"])
    probe = torch.zeros(slots, dtype=torch.int64, device="cuda")
    grid = kernel.bind(*args, **kwargs, **{TENSOR: probe})["grid"]
    ctas = int(grid[0]) * int(grid[1]) * int(grid[2])
    buf = torch.zeros(max(ctas, 1) * slots, dtype=torch.int64, device="cuda")
    if flush:
        from .harness.timing import flush_l2
        flush_l2(_flush_buffer(torch))
    torch.cuda.synchronize()
    kernel(*args, **kwargs, **{TENSOR: buf})
    torch.cuda.synchronize()
    return Recording(points=list(t["points"]), rows=buf.view(-1, slots).cpu().tolist()[:ctas])


_FLUSH: Dict[int, Any] = {}


def _flush_buffer(torch: Any) -> Any:
    """One L2-sized flush buffer per device, kept across recordings (not 60 MB per call)."""
    from .harness.timing import make_flush_buffer
    device = torch.cuda.current_device()
    if device not in _FLUSH:
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        _FLUSH[device] = make_flush_buffer(torch, l2, f"cuda:{device}")
    return _FLUSH[device]


def _median(xs: List[float]) -> Optional[float]:
    return statistics.median(xs) if xs else None


def summarize(points: List[str], rows: List[List[int]]) -> Dict[str, Any]:
    """Phases over the CTAs, in microseconds: medians (and the largest) of each CTA's start
    after the first CTA's (`start_skew`), its prologue, and per role the time from its start to
    its first completed wait (`to_first_wait`) and from there to its end (`after_first_wait`);
    the kernel's span (first start to last end), the tail (the last end after the median SM's
    last CTA ended), the CTAs and the SMs they ran on."""
    at = {p: i for i, p in enumerate(points)}
    ran = [r for r in rows if r[at["cta.start"]] > 0]
    if not ran:
        return {"ctas": 0}
    roles = [p[: -len(".start")] for p in points if p.endswith(".start") and not p.startswith("cta.")]
    t0 = min(r[at["cta.start"]] for r in ran)

    def us(ns: float) -> float:
        return round(ns / 1e3, 3)

    def phase(a: str, b: str) -> Dict[str, Optional[float]]:
        d = [r[at[b]] - r[at[a]] for r in ran if r[at[a]] > 0 and r[at[b]] > 0]
        return {"median_us": us(_median(d)) if d else None, "max_us": us(max(d)) if d else None,
                "ctas": len(d)}

    ends = []
    for r in ran:
        e = [r[at[f"{role}.end"]] for role in roles if r[at[f"{role}.end"]] > 0]
        ends.append(max(e) if e else r[at["cta.prologue"]])
    life = [e - r[at["cta.start"]] for e, r in zip(ends, ran)]
    skew = [r[at["cta.start"]] - t0 for r in ran]
    per_sm: Dict[int, int] = {}
    sm_done: Dict[int, int] = {}          # when each SM's last CTA ended
    for r, e in zip(ran, ends):
        sm = r[at["cta.sm"]]
        per_sm[sm] = per_sm.get(sm, 0) + 1
        sm_done[sm] = max(sm_done.get(sm, 0), e)
    out: Dict[str, Any] = {
        "ctas": len(ran),
        "sms": len(per_sm),
        "ctas_per_sm_max": max(per_sm.values()),
        "span_us": us(max(ends) - t0),
        # The kernel's end after the median SM's last CTA: how long part of the GPU sat idle
        # waiting for the slowest SMs (a wave's worth of CTAs per SM or one long CTA alike).
        "tail_us": us(max(ends) - _median(list(sm_done.values()))),
        "start_skew": {"median_us": us(_median(skew)), "max_us": us(max(skew))},
        "prologue": phase("cta.start", "cta.prologue"),
        "cta_life": {"median_us": us(_median(life)), "max_us": us(max(life))},
        "roles": {},
    }
    if "cta.shared_out" in at:
        # Stream-K: when each CTA (its thread 0) left the data-parallel tiles for its share.
        out["shared_out"] = phase("cta.start", "cta.shared_out")
    for role in roles:
        out["roles"][role] = {
            "to_first_wait": phase(f"{role}.start", f"{role}.first_wait"),
            "after_first_wait": phase(f"{role}.first_wait", f"{role}.end"),
            "life": phase(f"{role}.start", f"{role}.end"),
        }
        if f"{role}.fixup_wait" in at:
            # Stream-K: the run that ends a tile begun elsewhere, from its own last step to the
            # partials added (`fixup`) and from there to the role's end; when the runs that stop
            # early have published theirs, after the role's start (`publish`).
            out["roles"][role]["stream_k"] = {
                "publish": phase(f"{role}.start", f"{role}.publish"),
                "fixup": phase(f"{role}.fixup_wait", f"{role}.fixup_done"),
                "after_fixup": phase(f"{role}.fixup_done", f"{role}.end"),
            }
    return out


def format_summary(s: Dict[str, Any]) -> str:
    """The summary as a few lines of text."""
    if not s.get("ctas"):
        return "no CTA recorded a stamp"

    def m(p: Dict[str, Any]) -> str:
        if p.get("median_us") is None:
            return "-"
        return f"{p['median_us']:.2f} (max {p['max_us']:.2f})"

    lines = [
        f"{s['ctas']} CTAs on {s['sms']} SMs (at most {s['ctas_per_sm_max']} per SM); span "
        f"{s['span_us']:.2f} us, the last CTA ends {s['tail_us']:.2f} us after the median SM's last one",
        f"  CTA start after the first: {m(s['start_skew'])} us · prologue {m(s['prologue'])} us · "
        f"CTA life {m(s['cta_life'])} us",
    ]
    if s.get("shared_out", {}).get("ctas"):
        lines.append(f"  stream-K: {s['shared_out']['ctas']} CTAs reach their shared-out steps "
                     f"{m(s['shared_out'])} us after their start")
    for role, r in s["roles"].items():
        lines.append(f"  role {role}: start to first completed wait {m(r['to_first_wait'])} us · "
                     f"then to its end {m(r['after_first_wait'])} us · life {m(r['life'])} us")
        sk = r.get("stream_k")
        if sk and (sk["fixup"]["ctas"] or sk["publish"]["ctas"]):
            lines.append(f"    stream-K: {sk['publish']['ctas']} partials published "
                         f"{m(sk['publish'])} us after the role's start · {sk['fixup']['ctas']} "
                         f"runs add theirs in {m(sk['fixup'])} us, then end {m(sk['after_fixup'])} us later")
    return "\n".join(lines)


__all__ = ["Recording", "format_summary", "layout", "record", "summarize"]
