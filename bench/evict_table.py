"""Pairs each route with its evict-first twin in the measurements of bench/evict_session.sh.

    python3 bench/evict_table.py DIR

For every measurement.json under DIR (one per family and run), and every shape where both a route
R and R-evict (or gemv and gemv-evict) were timed and correct: the shape, both CUPTI medians, the
baseline's, each speedup, and the ratio R / R-evict (above 1: evict-first is faster). Ends with
the geomean of the ratio per family and run.
"""
import json
import math
import pathlib
import sys

PAIRS = [("rows", "rows-evict"), ("gemv", "gemv-evict"), ("atomic", "atomic-evict")]


def main(root: pathlib.Path) -> None:
    summary = []
    for m in sorted(root.glob("*/measurement.json")):
        data = json.loads(m.read_text())
        ratios = []
        print(f"== {m.parent.name} ({data['family']}, shard {data['shard']})")
        for row in data["shapes"]:
            timed = row.get("timed", {})
            for plain, hinted in PAIRS:
                a, b = timed.get(plain), timed.get(hinted)
                if not a or not b or not (a.get("correct") and b.get("correct")):
                    continue
                r = a["cupti_ms"] / b["cupti_ms"]
                ratios.append(r)
                shape = " ".join(f"{k}={v}" for k, v in row["shape"].items())
                extra = ""
                if "swapped" in timed and timed["swapped"].get("correct"):
                    extra = f"  swapped {timed['swapped']['speedup']:.3f}x"
                print(f"  {shape:<28} {plain} {a['cupti_ms'] * 1e3:8.2f} us ({a['speedup']:.3f}x)  "
                      f"{hinted} {b['cupti_ms'] * 1e3:8.2f} us ({b['speedup']:.3f}x)  "
                      f"baseline {a['baseline_cupti_ms'] * 1e3:8.2f} us  ratio {r:.3f}{extra}")
        wrong = sum(1 for row in data["shapes"] for t in row.get("timed", {}).values() if not t.get("correct"))
        if ratios:
            g = math.exp(sum(map(math.log, ratios)) / len(ratios))
            summary.append((m.parent.name, len(ratios), g, min(ratios), max(ratios), wrong))
    print("\nmeasurement        pairs  plain/evict geomean  min    max    incorrect")
    for name, n, g, lo, hi, wrong in summary:
        print(f"{name:<18} {n:5}  {g:19.3f}  {lo:.3f}  {hi:.3f}  {wrong}")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
