#!/usr/bin/env bash
# One GPU call that times every route of family files at representative shards, for
# `cake family choose` (docs/dispatch.md): each shape through every route that admits it,
# CUPTI spans against the contract's baseline in the same process, every output checked against
# the oracle before it is timed.
#
# On the build machine first (no GPU), so the GPU host compiles nothing:
#   CAKE_CACHE_DIR=$PWD/.carry/cache bench/every_route_session.sh --prebuild
# then on the GPU host (carry dist, .carry, .whl):   bench/every_route_session.sh
# Settings: RUNS (`file:shapes:seed` each), ROUTES (only these routes, e.g. a candidate added
# after RUNS were first measured: its rows join theirs), TIMEOUT (seconds per run).
set -u
RUNS=${RUNS:-bench/assign_evict_routes.family.toml:30:71 bench/assign_evict_routes.family.toml:30:72}
TIMEOUT=${TIMEOUT:-300}
ONLY=""
for r in ${ROUTES:-}; do ONLY="$ONLY --route $r"; done
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    for r in $RUNS; do
        IFS=: read -r file n seed <<< "$r"
        "$CAKE" family measure "$file" --shard representative --n "$n" --seed "$seed" --every-route \
            $ONLY --prebuild --target sm_90a | tail -1
    done
    rm -rf "${CAKE_CACHE_DIR:?}/eval"
    exit 0
fi
OUT=${OUT:-out/every-route}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/every-route; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
for r in $RUNS; do
    IFS=: read -r file n seed <<< "$r"
    name=$(basename "$file" .family.toml | sed 's/\.candidates//; s/_routes//')
    echo "== $name, representative seed $seed, every route${ROUTES:+ of: $ROUTES}"
    timeout "$TIMEOUT" "$CAKE" family measure "$file" --every-route $ONLY --shard representative \
        --n "$n" --seed "$seed" --warmup 5 --samples 20 --out "$R/$name-rep$seed" \
        2> "$R/$name-rep$seed.log" | sed -n 1,12p
    tar czf "$OUT/every-route.tgz" -C "$R" .   # after every run: what finished survives a cut-off call
done
