#!/usr/bin/env python3
"""Re-predict the variants of a cost-accuracy run (bench/cost_accuracy.py's JSON) with another
`cake` binary and the run's calibration, against the same measurements: what a change of the
model does, per family, without a GPU. Regenerates the variants from the current tree, which
must be the ones the run measured.

    python3 bench/cost_repredict.py RUN.json CAKE CALIBRATION.toml [OUT.json]
"""
import json, sys, tempfile
sys.path.insert(0, "bench")
import cost_accuracy as ca
run, cake, cal = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(run))
measured = {(p["variant"], p["shape"]): p["measured_us"] for p in d["points"]}
variants = ca.gemm_variants() + ca.kmeans_variants() + ca.attention_variants()
ca.prepare(variants, cake, tempfile.mkdtemp(), cal)
points = []
for v in variants:
    for s, t in (v.get("predicted_us") or {}).items():
        m = measured.get((v["name"], s))
        if m:
            points.append(dict(variant=v["name"], family=v["family"], shape=s, predicted_us=t, measured_us=m, bound=(v.get("bound") or {}).get(s)))
out = dict(summary=ca.summarize_points(points),
           families={f: ca.summarize_points([p for p in points if p["family"] == f]) for f in ("gemm", "kmeans", "attention")},
           points=points)
print(json.dumps(out["summary"]))
for f, s in out["families"].items():
    print(f, json.dumps(s))
for p in points:
    if p["family"] == "attention":
        print(f"{p['variant']:<26} {p['shape']:<24} {p['predicted_us']:9.1f} {p['measured_us']:9.1f} {(p['predicted_us']-p['measured_us'])/p['measured_us']:+.0%}")
if len(sys.argv) > 4:
    json.dump(out, open(sys.argv[4], "w"), indent=1)
