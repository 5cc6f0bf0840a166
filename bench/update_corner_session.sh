#!/usr/bin/env bash
# One GPU call: the k-means update's few-centroid corner (issue #18). `cake test` of the
# per-CTA-sums schedule at its contract's check shapes, then every candidate route at
# representative shards of
# bench/update_corner.family.toml (CUPTI spans against flash-kmeans in the same process, every
# output checked against the oracle first).
#
# On the build machine first (no GPU), so the GPU host compiles nothing:
#   CAKE_CACHE_DIR=$PWD/.carry/cache bench/update_corner_session.sh --prebuild
# then on the GPU host (carry dist, .carry, .whl):   bench/update_corner_session.sh
# Settings: SEEDS (representative draws of the corner), N (shapes per draw).
set -u
SEEDS=${SEEDS:-51 52}
N=${N:-30}
FILE=bench/update_corner.family.toml
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    for s in $SEEDS; do
        "$CAKE" family measure $FILE --shard representative --n "$N" --seed "$s" --every-route \
            --prebuild --target sm_90a | tail -1
    done
    rm -rf "${CAKE_CACHE_DIR:?}/eval"
    exit 0
fi
OUT=${OUT:-out/update-corner}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/update-corner; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
echo "== cake test: kmeans_update_private at the check shapes"
timeout 200 "$CAKE" test kernels/kmeans/update_private.contract.toml --record "$R/private-test.json" \
    2>&1 | tail -14
for s in $SEEDS; do
    echo "== corner, representative seed $s, every route"
    timeout 240 "$CAKE" family measure $FILE --every-route --shard representative --n "$N" --seed "$s" \
        --warmup 5 --samples 20 --out "$R/corner-rep$s" 2> "$R/corner-rep$s.log" | sed -n 1,12p
done
tar czf "$OUT/update-corner.tgz" -C "$R" .
