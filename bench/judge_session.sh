#!/usr/bin/env bash
# One GPU call that judges shipped family tables (docs/dispatch.md, issue #18): each table
# through dispatch on a held-out shard and on the boundary shard of a seed no earlier judgement
# drew, CUPTI spans against the contract's baseline in the same process, every output checked
# against the oracle before it is timed.
#
# On the build machine first (no GPU), so the GPU host compiles nothing:
#   CAKE_CACHE_DIR=$PWD/.carry/cache bench/judge_session.sh --prebuild
# then on the GPU host (carry dist, .carry, .whl):   bench/judge_session.sh
# Settings: TABLES (family files, each with its seed: `file:seed`), HELD (held-out shapes),
# BOUNDARY (boundary shapes), TIMEOUT (seconds per shard).
set -u
TABLES=${TABLES:-kernels/kmeans/update.family.toml:11 kernels/kmeans/assign.family.toml:18}
HELD=${HELD:-100}
BOUNDARY=${BOUNDARY:-30}
TIMEOUT=${TIMEOUT:-400}
shards() {  # seed
    echo "held_out:$HELD:$1 boundary:$BOUNDARY:$1"
}
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    for t in $TABLES; do
        for s in $(shards "${t#*:}"); do
            IFS=: read -r shard n seed <<< "$s"
            "$CAKE" family measure "${t%:*}" --shard "$shard" --n "$n" --seed "$seed" \
                --prebuild --target sm_90a | tail -1
        done
    done
    rm -rf "${CAKE_CACHE_DIR:?}/eval"
    exit 0
fi
OUT=${OUT:-out/judge}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/judge; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
for t in $TABLES; do
    file=${t%:*}
    name=$(basename "$file" .family.toml)
    for s in $(shards "${t#*:}"); do
        IFS=: read -r shard n seed <<< "$s"
        echo "== $name, $shard seed $seed ($n) through dispatch"
        timeout "$TIMEOUT" "$CAKE" family measure "$file" --shard "$shard" --n "$n" --seed "$seed" \
            --warmup 5 --samples 30 --out "$R/$name-$shard$seed" 2> "$R/$name-$shard$seed.log" | sed -n 2,10p
        tar czf "$OUT/judge.tgz" -C "$R" .   # after every shard: what finished survives a cut-off call
    done
done
