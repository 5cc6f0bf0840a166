#!/usr/bin/env bash
# One GPU call for the tinygemm family (issue #19): the candidate routes named in ROUTES timed at
# every contract shape they admit (`--every-route`, cuBLAS in the same process, CUPTI spans, L2
# flushed, every output checked first), then each table of TABLES through dispatch on the same 40
# shapes. Everything lands in one tarball under $OUT.
#
# On the build machine first (no GPU):  CAKE_CACHE_DIR=$PWD/.carry/cache bench/tinygemm_routes_session.sh --prebuild
# then on the GPU host (carry dist, .carry):  bench/tinygemm_routes_session.sh
set -u
CANDIDATES=kernels/tinygemm/tinygemm.candidates.family.toml
ROUTES=${ROUTES-gemv-evict swapped swapped-2sm split-4096}
TABLES=${TABLES:-}
route_args=$(for r in $ROUTES; do printf -- '--route %s ' "$r"; done)
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    [ -n "$ROUTES" ] && "$CAKE" family measure $CANDIDATES --shard bench --every-route $route_args --prebuild --target sm_90a | tail -1
    for t in $TABLES; do "$CAKE" family measure "$t" --shard bench --prebuild --target sm_90a | tail -1; done
    rm -rf "${CAKE_CACHE_DIR:?}/eval"
    exit 0
fi
OUT=${OUT:-out/tinygemm-routes}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/tinygemm-routes; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
if [ -n "$ROUTES" ]; then
    echo "== every route: $ROUTES"
    timeout 300 "$CAKE" family measure $CANDIDATES --shard bench --every-route $route_args --out "$R/every" \
        2> "$R/every.log" | sed -n 1,12p
fi
for t in $TABLES; do
    name=$(basename "$t" .family.toml)
    for i in 1 2; do
        echo "== $name through dispatch, run $i"
        timeout 200 "$CAKE" family measure "$t" --shard bench --out "$R/$name-$i" 2> "$R/$name-$i.log" | sed -n 1,12p
    done
done
tar czf "$OUT/tinygemm-routes.tgz" -C "$R" .
