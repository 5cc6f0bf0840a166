#!/usr/bin/env bash
# One GPU call: the k-means update's per-CTA-sums schedule with its ids copied and its counts
# added by its own threads (`cp_async`, `copy_to`), so that it serves any N and K (issue #18).
# `cake test` of its contract (check shapes with IDS and COUNTS rows off 16-byte alignment), then
# the new route alone (`--route private-any`) at the shapes of the update table's evidence: the
# family's representative seed 1 and the few-centroid corner's seeds 51 and 52, whose other
# routes' rows `cake family choose` joins.
#
# On the build machine first (no GPU), so the GPU host compiles nothing:
#   CAKE_CACHE_DIR=$PWD/.carry/cache bench/private_any_session.sh --prebuild
# then on the GPU host (carry dist, .carry, .whl):   bench/private_any_session.sh
set -u
# file:shard-size:seed of every measurement the new route joins.
RUNS=${RUNS:-kernels/kmeans/update.candidates.family.toml:60:1 bench/update_corner.family.toml:30:51 bench/update_corner.family.toml:30:52}
ROUTE=${ROUTE:-private-any}
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    for r in $RUNS; do
        IFS=: read -r file n seed <<< "$r"
        "$CAKE" family measure "$file" --shard representative --n "$n" --seed "$seed" --every-route \
            --route "$ROUTE" --prebuild --target sm_90a | tail -1
    done
    rm -rf "${CAKE_CACHE_DIR:?}/eval"
    exit 0
fi
OUT=${OUT:-out/private-any}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/private-any; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
echo "== cake test: kmeans_update_private (any N, K) at the check shapes"
timeout 200 "$CAKE" test kernels/kmeans/update_private.contract.toml --record "$R/private-test.json" \
    2>&1 | tail -14
for r in $RUNS; do
    IFS=: read -r file n seed <<< "$r"
    name=$(basename "$file" .family.toml | sed 's/\.candidates//')
    echo "== $name, representative seed $seed, route $ROUTE"
    timeout 240 "$CAKE" family measure "$file" --every-route --route "$ROUTE" --shard representative \
        --n "$n" --seed "$seed" --warmup 5 --samples 20 --out "$R/$name-rep$seed" \
        2> "$R/$name-rep$seed.log" | sed -n 1,12p
done
tar czf "$OUT/private-any.tgz" -C "$R" .
