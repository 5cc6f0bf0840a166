#!/usr/bin/env bash
# Build, on the build machine, everything bench/h200_rows_ab_session.sh needs on the GPU host
# (bench/results/2026-12-10-h200-rows-ab/), from a fresh checkout in one command:
#   dist/          the wheel and the release binary (scripts/wheel.sh)
#   .carry/commit  the commit the carry was built from
#   .carry/cake.xz the release binary, xz-compressed (dist/cake is removed: the carry limit)
#   .carry/cache.tgz      the build cache of every family file the session measures
#   .carry/rowsbuilds.tgz hand (bench/rows_hand.sh), rms_shipped, rms_ring, rms_ring_dyn2
#   .carry/ldgp.tgz       the load-unit probes (bench/ldg_probe.sh)
#   .carry/m128p.tgz      the M = 128 decomposition (bench/m128_probe.py)
# Session 48's taker (rms_ring_dyn, built by the binary of 4eb0d10) is not rebuilt: the session
# script runs without it.
#   bench/carry_rows_ab.sh        # repository root; needs scripts/toolchain.sh's CUDA_HOME
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CUDA_HOME:?run scripts/toolchain.sh and export CUDA_HOME}"
bash scripts/wheel.sh > /dev/null
CAKE=$PWD/target/release/cake
mkdir -p .carry
git rev-parse HEAD > .carry/commit
python3 -c "import lzma,shutil; shutil.copyfileobj(open('dist/cake','rb'), lzma.open('.carry/cake.xz','wb'))"
rm -f dist/cake

# The family files' cubins, so the GPU host compiles nothing.
export CAKE_CACHE_DIR=$PWD/.carry/cache
rm -rf "$CAKE_CACHE_DIR"
pre() { "$CAKE" family measure "$@" --prebuild --target sm_90a --out "$(mktemp -d)" > /dev/null; }
pre kernels/tinygemm/tinygemm.family.toml --shard bench
pre bench/results/2026-12-06-grid/tinygemm_h200_candidate.family.toml --shard bench
pre bench/results/2026-12-09-rows-dynamic/tinygemm_dynamic.family.toml --shard bench --every-route
D=bench/results/2026-12-11-attention-dynamic
pre $D/attention_causal_dynamic.family.toml --shard bench --every-route
pre $D/attention_causal_dynamic_off.family.toml --shard held_out --n 10 --seed 1 --every-route
pre $D/attention_causal_dynamic_off64.family.toml --shard held_out --n 6 --seed 1 --every-route
pre bench/results/2026-12-12-m128-parts/staged.family.toml --shard bench --every-route
pre bench/results/2026-12-12-m128-parts/staged_off.family.toml --shard held_out --n 8 --seed 1 --every-route
pre bench/results/2026-12-12-m128-parts/tinygemm_h200_staged_candidate.family.toml --shard bench
tar czf .carry/cache.tgz -C .carry cache

# The row kernels: the hand references and the compiled schedules.
bash bench/rows_hand.sh .carry/hand > /dev/null
"$CAKE" build examples/rmsnorm_sm90.py --target sm_90a --out .carry/rms_shipped > /dev/null
"$CAKE" build examples/rmsnorm_ring_sm90.py --target sm_90a --out .carry/rms_ring > /dev/null
ring=$(mktemp --suffix=.py)
sed 's/^DYNAMIC = 0$/DYNAMIC = 1/' examples/rmsnorm_ring_sm90.py > "$ring"
grep -q '^DYNAMIC = 1$' "$ring" || { echo "carry_rows_ab: DYNAMIC not found in the ring example" >&2; exit 1; }
"$CAKE" build "$ring" --target sm_90a --out .carry/rms_ring_dyn2 > /dev/null
tar czf .carry/rowsbuilds.tgz -C .carry hand rms_shipped rms_ring rms_ring_dyn2

# The probe's builder imports cake (cake.calibrate): the wheel just built, in a scratch site.
site=$(mktemp -d)
python3 -m pip install -q --no-deps --no-compile --target "$site" dist/cake-*.whl
PYTHONPATH=$site bash bench/ldg_probe.sh .carry/ldgp "$CAKE" > /dev/null
tar czf .carry/ldgp.tgz -C .carry ldgp
PYTHONPATH=$site python3 bench/m128_probe.py build --cake "$CAKE" --dir .carry/m128p > /dev/null
tar czf .carry/m128p.tgz -C .carry m128p
rm -rf .carry/cache .carry/hand .carry/rms_shipped .carry/rms_ring .carry/rms_ring_dyn2 .carry/ldgp .carry/m128p
du -ch dist .carry | tail -1
