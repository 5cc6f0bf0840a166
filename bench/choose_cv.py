"""Pick `cake family choose`'s options by cross-validation on representative shapes alone
(docs/dispatch.md): every combination of a small grid is chosen with --cross-validate, and the
table kept is the one with the highest cross-validated geomean among those with no shape below
0.95x (ties: the first, most permissive one). Held-out shards never enter. Prints the grid and
writes the chosen table.

    python3 bench/choose_cv.py CAKE CANDIDATES OUT.toml MEASUREMENT.json...
"""
import itertools
import re
import subprocess
import sys

cake, candidates, out, *measurements = sys.argv[1:]
grid = itertools.product(["0.97", "1.0", "1.03"], ["3", "5"], ["1", "2", "3"], [False, True])
best = None
for worst, min_shapes, boxes, open_above in grid:
    args = [cake, "family", "choose", candidates, *measurements, "--worst", worst,
            "--min-shapes", min_shapes, "--boxes", boxes, "--cross-validate", "5"]
    if open_above:
        args.append("--open-above")
    table = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    cv = re.search(r"Cross-validated .*?geomean ([0-9.]+)x; (\d+) of (\d+) shapes below", table)
    gm, below = float(cv.group(1)), int(cv.group(2))
    print(f"worst={worst} min-shapes={min_shapes} boxes={boxes} open-above={open_above}: "
          f"cross-validated {gm:.3f}x, {below} below 0.95x")
    if below == 0 and (best is None or gm > best[0]):
        best = (gm, args[4 + len(measurements):], table)
if best is None:
    sys.exit("no option set kept every cross-validated shape at 0.95x or more")
print("chosen:", " ".join(best[1]))
with open(out, "w") as f:
    f.write(best[2])
