"""Host time of routing one call through a family (issue #18: at most 2 µs per call), on
whatever machine runs it: `cake.family(...)(**args)` against calling the chosen kernel directly,
with the decision cached (the steady state) and the kernel replaced by a no-op, so the
difference is the routing alone (binding the dimensions from the tensors' shapes, the lookup,
the call through). Median of 31 rounds of 20,000 calls. Prints and writes JSON to $OUT."""
import json
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import cake  # noqa: E402


class Shaped:
    def __init__(self, *shape):
        self.shape = shape


def per_call_ns(fn, args, n=20000, rounds=31):
    out = []
    for _ in range(rounds):
        t = time.perf_counter_ns()
        for _ in range(n):
            fn(**args)
        out.append((time.perf_counter_ns() - t) / n)
    return statistics.median(out)


def main():
    root = os.path.join(os.path.dirname(__file__), "..")
    fam = cake.family(os.path.join(root, "kernels", "rows", "rmsnorm.family.toml"))
    args = {"X": Shaped(32768, 4096), "W": Shaped(4096), "Y": Shaped(32768, 4096), "eps": 1e-6}

    def kernel(**_):
        return None

    fam._decided[fam.binding(args)] = kernel  # the steady state: this shape decided before
    direct = per_call_ns(kernel, args)
    routed = per_call_ns(fam, args)
    doc = {
        "routed_ns": routed,
        "direct_ns": direct,
        "routing_ns": routed - direct,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        if os.path.exists("/proc/cpuinfo") else "?",
    }
    print(json.dumps(doc, indent=1))
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "family_overhead.json"), "w") as f:
            json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
