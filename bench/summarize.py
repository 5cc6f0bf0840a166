#!/usr/bin/env python3
"""Summarise `cake bench` evidence records into one JSON and a Markdown table.

    python3 bench/summarize.py OUT_JSON RECORD.json...

For each record and bench shape: the candidate's and each baseline's median time (CUDA events
and CUPTI kernel spans), the speedups the record computed, and the candidate's rate against the
floor. Records that did not pass are listed with their verdict and no time."""
import json
import sys


def median(result, key):
    stats = (result or {}).get(key) or {}
    return stats.get("median")


def rows(path):
    with open(path, encoding="utf-8") as f:
        rec = json.load(f)
    cand = rec.get("candidate", {})
    base = {"record": path.split("/")[-1], "kernel": cand.get("path"), "target": cand.get("target"),
            "contract": rec.get("contract", {}).get("name"), "verdict": rec.get("verdict")}
    timing = rec.get("timing") or {}
    if rec.get("verdict") != "passed" or not timing.get("shapes"):
        yield base
        return
    for s in timing["shapes"]:
        c = (s.get("candidate") or {}).get("result")
        row = dict(base, shape=s.get("shape"), candidate_ms={"events": median(c, "events_ms"), "cupti": median(c, "cupti_ms")},
                   rate=s.get("candidate_rate"), baselines={}, speedup=s.get("speedup"))
        for name, b in (s.get("baselines") or {}).items():
            r = (b or {}).get("result")
            row["baselines"][name] = {"events": median(r, "events_ms"), "cupti": median(r, "cupti_ms")}
        yield row


def fmt(v):
    return "—" if v is None else f"{v:.3f}"


def main():
    out, records = sys.argv[1], sys.argv[2:]
    table = [r for p in records for r in rows(p)]
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"schema": "cake.bench-summary/v0", "rows": table}, f, indent=1)
    print("| contract | kernel (target) | shape | Cake ms (events / CUPTI) | baseline ms (events / CUPTI) | speedup (events / CUPTI) | of floor |")
    print("|---|---|---|---|---|---|---|")
    for r in table:
        if "shape" not in r:
            print(f"| {r['contract']} | {r['kernel']} ({r['target']}) | — | {r['verdict']} | | | |")
            continue
        shape = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        for name, b in r["baselines"].items():
            x = (r.get("speedup") or {}).get(name) or {}
            print(f"| {r['contract']} | {r['kernel']} ({r['target']}) | {shape} | {fmt(r['candidate_ms']['events'])} / {fmt(r['candidate_ms']['cupti'])} "
                  f"| {name} {fmt(b['events'])} / {fmt(b['cupti'])} | {fmt(x.get('events'))}x / {fmt(x.get('cupti'))}x "
                  f"| {fmt((r.get('rate') or {}).get('of_floor'))} |")


if __name__ == "__main__":
    main()
