#!/usr/bin/env bash
# Schedules of one contract (k-means assign by default; CONTRACT= picks another), each in its
# own `cake bench` against the contract's baselines (issue #6),
# in the order given, so an A B ... A B list measures each candidate twice, interleaved.
#
#   KERNELS="examples/kmeans_assign_sm90.py path/to/variant.py examples/kmeans_assign_sm90.py ..." \
#       bench/kmeans_session.sh        # on the GPU host, from the repository root
#
# Expects dist/cake, dist/cake-*.whl and .whl/flash_kmeans-0.3.1-*.whl (carry: dist, .whl).
set -u
OUT=${OUT:-out/kmeans-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
CONTRACT=${CONTRACT:-kernels/kmeans/assign.contract.toml}
i=0
for kernel in ${KERNELS:-examples/kmeans_assign_sm90.py}; do
    i=$((i + 1))
    name=$i-$(basename "$kernel" .py)
    echo "== $name ($kernel)"
    timeout 240 "$CAKE" bench "$CONTRACT" --kernel "$kernel" --build-dir "/tmp/b-$name" \
        --record "$OUT/$name.json" 2>&1 | grep -E "^bench|correctness|verdict|fail|error"
done
echo "== summary"
python3 bench/summarize.py "$OUT/summary.json" $(ls "$OUT"/*.json | grep -v summary.json | sort -t/ -k2 -V)
tar -czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
