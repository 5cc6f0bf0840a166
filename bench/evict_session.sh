#!/usr/bin/env bash
# One GPU call: what an L2 evict-first policy on row-layout loads (`lm.load(..., evict="first")`,
# the examples' EVICT_FIRST knob) does to the kernels that stream their input once: the five row
# families at their contracts' bench shapes, the M = 1 GEMV of the tinygemm family, and the
# k-means atomic update at its representative shapes. Each `cake family measure --every-route`
# times a route and the same route with EVICT_FIRST = 1 in one process, against the contract's
# baseline (CUPTI spans, L2 flushed by a write before each sample), every output checked first.
#
# On the build machine first (no GPU), so the GPU host compiles nothing:
#   CAKE_CACHE_DIR=$PWD/.carry/cache bench/evict_session.sh --prebuild
# then on the GPU host (carry dist, .carry, .whl):   bench/evict_session.sh
set -u
FAMILIES=${FAMILIES:-rmsnorm layernorm softmax add_rmsnorm quant_fp8}
REPEAT=${REPEAT:-2}
measure() {  # name file args...
    local name=$1 file=$2; shift 2
    "$CAKE" family measure "$file" --every-route "$@"
}
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    for f in $FAMILIES; do
        measure $f kernels/rows/$f.candidates.family.toml --shard bench --prebuild --target sm_90a | tail -1
    done
    measure tinygemm kernels/tinygemm/tinygemm.candidates.family.toml --shard bench --route gemv \
        --route gemv-evict --route swapped --prebuild --target sm_90a | tail -1
    measure update kernels/kmeans/update.candidates.family.toml --shard representative --n 60 --seed 1 \
        --route atomic --route atomic-evict --prebuild --target sm_90a | tail -1
    rm -rf "${CAKE_CACHE_DIR:?}/eval"
    exit 0
fi
OUT=${OUT:-out/evict-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/evict-session; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
for i in $(seq 1 "$REPEAT"); do
    for f in $FAMILIES; do
        echo "== $f, run $i"
        timeout 240 "$CAKE" family measure kernels/rows/$f.candidates.family.toml --every-route --shard bench \
            --out "$R/$f-$i" 2> "$R/$f-$i.log" | sed -n 1,8p
    done
done
echo "== tinygemm M = 1"
timeout 240 "$CAKE" family measure kernels/tinygemm/tinygemm.candidates.family.toml --every-route --shard bench \
    --route gemv --route gemv-evict --route swapped --out "$R/tinygemm" 2> "$R/tinygemm.log" | sed -n 1,8p
echo "== k-means update, representative seed 1"
timeout 300 "$CAKE" family measure kernels/kmeans/update.candidates.family.toml --every-route --shard representative \
    --n 60 --seed 1 --route atomic --route atomic-evict --warmup 5 --samples 20 --out "$R/update" \
    2> "$R/update.log" | sed -n 1,8p
tar czf "$OUT/evict-session.tgz" -C "$R" .
python3 bench/evict_table.py "$R" | tee "$OUT/table.txt"
