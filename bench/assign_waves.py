"""Speedup of one assign route by how full its last wave of tiles is, over committed measurements.

    python3 bench/assign_waves.py ROUTE D ROWS_PER_TILE MEASUREMENT.json...

A persistent schedule runs ceil(tiles / 132) rounds of tiles on the H200's 132 SMs; where the
last round is nearly empty (144 tiles: 12 SMs run a second tile) it takes about twice one
round's time for 1.09 rounds of work. This groups the route's measured speedups at feature
dimension D by the number of rounds and by how full they are (tiles / (rounds × 132)).
"""
import collections
import json
import math
import sys

SMS = 132


def main():
    route, d, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    seen = {}
    for path in sys.argv[4:]:
        for s in json.load(open(path))["shapes"]:
            shape = s["shape"]
            o = s["timed"].get(route)
            if shape["D"] != d or not o or not o.get("speedup") or not o.get("correct"):
                continue
            tiles = shape["B"] * math.ceil(shape["N"] / rows)
            rounds = math.ceil(tiles / SMS)
            # A shape measured in several files keeps its first timing (as `cake family choose`).
            seen.setdefault((shape["B"], shape["N"], shape["K"]), (rounds, tiles / (rounds * SMS), o["speedup"]))
    groups = collections.defaultdict(list)
    for rounds, full, speedup in seen.values():
        r = str(rounds) if rounds <= 3 else ("4-7" if rounds < 8 else "8+")
        f = "< 60 %" if full < 0.6 else ("60-80 %" if full < 0.8 else ">= 80 %")
        groups[(r, f)].append(speedup)
    order = {"1": 0, "2": 1, "3": 2, "4-7": 3, "8+": 4, "< 60 %": 0, "60-80 %": 1, ">= 80 %": 2}
    print(f"{route} at D = {d}, {rows} rows per tile: rounds of tiles, how full, shapes, geomean, worst")
    for key in sorted(groups, key=lambda k: (order[k[0]], order[k[1]])):
        a = groups[key]
        g = math.exp(sum(map(math.log, a)) / len(a))
        print(f"  {key[0]:>4} {key[1]:>8} {len(a):4d}  {g:.3f}x  {min(a):.3f}x")


if __name__ == "__main__":
    main()
