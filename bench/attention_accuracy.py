"""The cost model against the attention variants measured on the H200 (issue #17 item 4):
every (variant, shape) of a variant-probe run (bench/attention_variants.py's JSON), its
measured time beside `cake cost`'s prediction for the same schedule and shape, with the
median relative error and the Spearman rank correlation overall and per shape (does the model
order the variants of one shape?).

    python3 bench/attention_accuracy.py RUN/attention_variants.json [OUT.json]

Runs on the build machine: the variant sources are regenerated with the edits of
bench/attention_variants.sh (which must be the ones the run measured)."""
import json, os, statistics, subprocess, sys, tempfile

CAKE = os.environ.get("CAKE", "target/release/cake")


def variant_source(d, c, v):
    """The variant's schedule, through the same sed edits as bench/attention_variants.sh."""
    script = open("bench/attention_variants.sh").read()
    edits = {}
    for line in script.split("\n"):
        line = line.strip()
        if ") echo " in line and line.endswith(";;"):
            name, rest = line.split(") echo ", 1)
            edits[name] = rest[:-2].strip().strip('"')
    e = edits[v].replace('\\\\', '\\')
    cmd = ["sed", "-e", f"s/^D = 128 /D = {d} /", "-e", f"s/^CAUSAL = 0 /CAUSAL = {c} /"]
    if e:
        cmd += ["-e", e]
    return subprocess.run(cmd + ["examples/attention_sm90.py"], capture_output=True, text=True, check=True).stdout


def predict(src, shape):
    with tempfile.NamedTemporaryFile("w", suffix=".py", dir=".", delete=False) as f:
        f.write(src)
    try:
        out = subprocess.run([CAKE, "cost", f.name, "--target", "sm_90a", "--shape", shape, "--format", "json"],
                             capture_output=True, text=True)
        return json.loads(out.stdout)["estimates"][0]["time_us"] / 1e3
    finally:
        os.unlink(f.name)


def spearman(xs, ys):
    def ranks(v):
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for rank, i in enumerate(order):
            r[i] = rank
        return r
    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = sum((a - mx) ** 2 for a in rx) ** 0.5
    sy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (sx * sy) if sx and sy else float("nan")


rows = [r for r in json.load(open(sys.argv[1]))["rows"] if r.get("correct")]
points = []
for r in rows:
    shape = f"BH={r['BH']},BHKV={r['BHKV']},S={r['S']}"
    pred = predict(variant_source(r["D"], r["causal"], r["variant"]), shape)
    points.append(dict(r, predicted_ms=pred, error=abs(pred - r["ms"]) / r["ms"]))
groups = {}
for p in points:
    groups.setdefault((p["D"], p["causal"], p["BH"], p["BHKV"], p["S"]), []).append(p)
per_shape = []
for key, ps in sorted(groups.items()):
    rho = spearman([p["predicted_ms"] for p in ps], [p["ms"] for p in ps])
    per_shape.append({"shape": key, "variants": len(ps), "spearman": rho,
                      "median_error": statistics.median(p["error"] for p in ps)})
report = {
    "points": points,
    "overall": {"n": len(points),
                "spearman": spearman([p["predicted_ms"] for p in points], [p["ms"] for p in points]),
                "median_error": statistics.median(p["error"] for p in points)},
    "per_shape": per_shape,
}
if len(sys.argv) > 2:
    json.dump(report, open(sys.argv[2], "w"), indent=1)
print(f"{'D':>4} {'C':>2} {'BH':>4} {'KV':>4} {'S':>6} {'variant':9} {'measured':>9} {'predicted':>9} {'err':>6}")
for p in points:
    print(f"{p['D']:4} {p['causal']:2} {p['BH']:4} {p['BHKV']:4} {p['S']:6} {p['variant']:9} {p['ms']:9.3f} {p['predicted_ms']:9.3f} {p['error'] * 100:5.1f}%")
for s in per_shape:
    print(f"shape {s['shape']}: {s['variants']} variants, spearman {s['spearman']:.2f}, median error {s['median_error'] * 100:.1f}%")
o = report["overall"]
print(f"overall: {o['n']} points, spearman {o['spearman']:.3f}, median error {o['median_error'] * 100:.1f}%")
