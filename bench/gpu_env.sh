# Sourced by the GPU session scripts (bench/*_session.sh, bench/gpu_ampere.sh) on the GPU host,
# after they set OUT: installs the carried wheel (dist/cake-*.whl) and any pure-Python baselines
# carried in .whl/ into /tmp/cake-site, points Python and the build cache there, finds CUDA, and
# records the GPU and the commit under $OUT. Sets CAKE (the carried binary) and COMMIT.
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
CAKE=$PWD/dist/cake
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/cake-site dist/cake-*.whl $(ls .whl/*.whl 2>/dev/null) || return 1
export PYTHONPATH=/tmp/cake-site
export CAKE_CACHE_DIR=/tmp/cake-cache
if [ -z "${CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export CUDA_HOME=/usr/local/cuda; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
    --format=csv,noheader | tee "$OUT/gpu.txt"
# COMMIT: given where the copy on the GPU host has no git history.
export COMMIT=${COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
echo "$COMMIT" | tee "$OUT/commit.txt"
# The session scripts' parts: `part NAME SECONDS FAMILY-FILE ARGS...` runs one `cake family
# measure` under its own time limit into $OUT/NAME (so a call cut short still returns what ran)
# and prints its exit status, the seconds since this file was sourced and the report's head.
SESSION_START=$(date +%s)
part() {
    local name=$1 limit=$2 file=$3; shift 3
    timeout "$limit" "$CAKE" family measure "$file" "$@" --out "$OUT/$name" > "$OUT/$name.log" 2>&1
    echo "== $name: exit $? at $(( $(date +%s) - SESSION_START )) s"
    head -3 "$OUT/$name/report.txt" 2>/dev/null
}
# `record NAME SECONDS SUBCOMMAND ARGS...`: one `cake test` or `cake bench` under its own time
# limit, its evidence record in $OUT/NAME.json and its output in $OUT/NAME.log; prints its exit
# status and the output's last lines.
record() {
    local name=$1 limit=$2; shift 2
    timeout "$limit" "$CAKE" "$@" --record "$OUT/$name.json" > "$OUT/$name.log" 2>&1
    echo "== $name: exit $? at $(( $(date +%s) - SESSION_START )) s"
    tail -6 "$OUT/$name.log"
}
