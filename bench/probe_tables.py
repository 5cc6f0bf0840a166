"""The bench probes' shared driver: build a table of probes (`cake.calibrate` probe entries) on
the build machine into a folder with a launches.json, and time them on the GPU host, one line and
one JSON record per probe. Used by bench/grid_probe.py, bench/ldg_probe.py and
bench/stream_probe.py (run as `python3 bench/<script>.py`, which puts bench/ on the path)."""
import argparse
import json
import os
from typing import Any, Callable, Dict, List, Optional

Probe = Dict[str, Any]


def time_all(probes: List[Probe], launches: Dict[str, str], samples: int) -> Dict[str, Any]:
    """Time every probe from its prebuilt launch (or compile it here where there is none); a
    failing probe records its error and the others still run."""
    from cake.calibrate import run_probe
    out = {}
    for p in probes:
        try:
            r = run_probe(p, p.get("dir", ""), "sm_90a", samples, launches.get(p["name"]))
        except Exception as e:  # one failing probe must not lose the others
            r = dict(error=str(e)[-500:])
        out[p["name"]] = r
        span = r.get("span_median_ms")
        print(f"{p['name']:<30} " + (f"{span * 1e3:7.2f} us  {p['work']['bytes'] / span / 1e9:6.2f} TB/s"
                                     if span else "FAILED " + r.get("error", "")[-200:]), flush=True)
    return out


def cli(probes: List[Probe], built_elsewhere: Optional[Callable[[str], Dict[str, str]]] = None) -> int:
    """`build --cake BIN --dir DIR` (build machine): every probe with a schedule `dir` is built
    with `cake build`; `built_elsewhere(DIR)` names the launch.json of the rest. `run --dir DIR
    --out OUT.json` (GPU host): times them all."""
    from cake.calibrate import build_probes
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["build", "run"])
    ap.add_argument("--cake")
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out")
    ap.add_argument("--samples", type=int, default=30)
    a = ap.parse_args()
    index = os.path.join(a.dir, "launches.json")
    if a.mode == "build":
        scheduled = [p for p in probes if "dir" in p]
        launches = {}
        for d in sorted({p["dir"] for p in scheduled}):
            launches.update(build_probes([p for p in scheduled if p["dir"] == d], d, "sm_90a", a.cake, a.dir))
        if built_elsewhere:
            launches.update(built_elsewhere(a.dir))
        with open(index, "w", encoding="utf-8") as fh:
            json.dump({k: os.path.relpath(v, a.dir) for k, v in launches.items()}, fh, indent=1)
        missing = [p["name"] for p in probes if p["name"] not in launches]
        print(f"built {len(launches)} of {len(probes)} probes" + (f"; failed: {missing}" if missing else ""))
        return 1 if missing else 0
    with open(index, encoding="utf-8") as fh:
        launches = {k: os.path.join(a.dir, v) for k, v in json.load(fh).items()}
    out = time_all(probes, launches, a.samples)
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh, indent=1)
    return 0
