"""Per route and shape, the medians of bench/cluster_session.sh's runs: new (deferred cluster
wait) against old (cluster barrier in the prologue), each run's time, and new/old.
   python3 bench/cluster_table.py OUTDIR"""
import json, os, statistics, sys

out = sys.argv[1]
runs = {}
for name in sorted(os.listdir(out)):
    path = os.path.join(out, name, "measurement.json")
    if not os.path.exists(path):
        continue
    version = name.split("-")[0]
    for s in json.load(open(path))["shapes"]:
        sh = s["shape"]
        for route, t in s["timed"].items():
            if route == "fallback":
                continue
            key = (route, sh["N"], sh["K"], sh["M"])
            entry = runs.setdefault(key, {"new": [], "old": [], "wrong": []})
            if not t.get("correct"):
                entry["wrong"].append(name)
            elif t.get("cupti_ms"):
                entry[version].append(t["cupti_ms"] * 1e3)
print(f"{'route':14} {'N':>5} {'K':>5} {'M':>3} {'old us':>14} {'new us':>14} {'old/new':>7}")
ratios = {}
for (route, n, k, m), e in sorted(runs.items()):
    old = statistics.median(e["old"]) if e["old"] else None
    new = statistics.median(e["new"]) if e["new"] else None
    r = old / new if old and new else None
    if r:
        ratios.setdefault(route, []).append(r)
    fmt = lambda xs: "/".join(f"{x:.2f}" for x in xs) or "-"
    print(f"{route:14} {n:5} {k:5} {m:3} {fmt(e['old']):>14} {fmt(e['new']):>14} "
          + (f"{r:7.3f}" if r else "      -") + (f" WRONG in {e['wrong']}" if e["wrong"] else ""))
for route, rs in sorted(ratios.items()):
    g = statistics.geometric_mean(rs)
    print(f"{route}: old/new geomean {g:.3f} over {len(rs)} shapes (min {min(rs):.3f}, max {max(rs):.3f})")
