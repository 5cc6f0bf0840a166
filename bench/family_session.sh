#!/usr/bin/env bash
# One GPU call that chooses and judges a family (docs/dispatch.md, issue #18): every candidate
# route timed at every representative shape, guards chosen from that, the chosen table judged
# through dispatch on a held-out shard and the boundary shard. Everything lands in one tarball
# under $OUT (the device returns a handful of files per call).
#
# On the build machine first (no GPU), so the GPU host compiles nothing:
#   CAKE_CACHE_DIR=$PWD/.carry/cache bench/family_session.sh --prebuild
# then on the GPU host (carry dist, .carry, and .whl for pure-Python baselines):
#   bench/family_session.sh
# Settings: CANDIDATES (the candidates family file), REP (representative shapes), HELD (held-out
# shapes), SEED (draws; the held-out stream of the same seed never chose anything), JUDGE_SEED
# (the held-out and boundary draws, default SEED: another seed judges a new table on shapes no
# earlier judgement saw), REP_TIMEOUT and JUDGE_TIMEOUT (seconds for the representative
# measurement and for each judging shard).
set -u
CANDIDATES=${CANDIDATES:-kernels/gemm/gemm.candidates.family.toml}
REP=${REP:-120}
HELD=${HELD:-100}
SEED=${SEED:-1}
JUDGE_SEED=${JUDGE_SEED:-$SEED}
REP_TIMEOUT=${REP_TIMEOUT:-240}
JUDGE_TIMEOUT=${JUDGE_TIMEOUT:-150}
CHOSEN=${CANDIDATES%.candidates.family.toml}.family.toml
if [ "${1:-}" = "--prebuild" ]; then
    CAKE=${CAKE:-target/release/cake}
    for shard in "representative $REP $SEED" "held_out $HELD $JUDGE_SEED" "boundary 30 $JUDGE_SEED"; do
        set -- $shard
        "$CAKE" family measure "$CANDIDATES" --shard "$1" --n "$2" --seed "$3" --every-route \
            --prebuild --target sm_90a 2>/dev/null | tail -1
    done
    rm -rf "${CAKE_CACHE_DIR:?}/eval"   # the builds/ entries are the cache; eval/ is rebuilt there
    exit 0
fi
OUT=${OUT:-out/family-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
export CAKE_CACHE_DIR=$PWD/.carry/cache
R=/tmp/family-session; rm -rf "$R"; mkdir -p "$R"
cp "$OUT/gpu.txt" "$OUT/commit.txt" "$R/"
echo "== representative ($REP) every route"
timeout "$REP_TIMEOUT" "$CAKE" family measure "$CANDIDATES" --shard representative --n "$REP" --seed "$SEED" \
    --every-route --warmup 5 --samples 20 --out "$R/1-representative" 2> "$R/1-representative.log" | sed -n 1,12p
"$CAKE" family choose "$CANDIDATES" "$R/1-representative/measurement.json" > "$CHOSEN"
cp "$CHOSEN" "$R/"
grep -v "^#" "$CHOSEN" | grep "name\|when"
for shard in "held_out $HELD 2" "boundary 30 3"; do
    set -- $shard
    echo "== $1 ($2) through dispatch"
    timeout "$JUDGE_TIMEOUT" "$CAKE" family measure "$CHOSEN" --shard "$1" --n "$2" --seed "$JUDGE_SEED" --warmup 5 \
        --samples 30 --out "$R/$3-$1" 2> "$R/$3-$1.log" | sed -n 2,10p
done
tar czf "$OUT/family-session.tgz" -C "$R" .
