#!/usr/bin/env bash
# GPU call for bench/results/2026-12-06-timeline/ (issue #19): the cluster barrier's deferred wait.
# Every clustered route of bench/results/2026-12-06-timeline/cluster.family.toml, every route,
# with the compiler before the change ($OLD, carried as .carry/cake-old.gz) and after (dist/cake),
# alternated twice, each build prebuilt into one carried cache; then the other clustered schedules
# through their contracts' correctness protocol with the new compiler.
#   OUT=... CACHE=... OLD=... [PAIRS=2] [TESTS=1] [VERSIONS="new old"] bench/cluster_session.sh
# (on the GPU host, from the repository root; VERSIONS=old runs $OLD as dist/cake, for calls
# that can carry one binary only)
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
FAM=bench/results/2026-12-06-timeline/cluster.family.toml
NEW=$CAKE
for i in $(seq 1 "${PAIRS:-2}"); do
    for v in ${VERSIONS:-new old}; do
        [ $v = new ] && CAKE=$NEW || CAKE=$OLD
        part $v-$i 150 $FAM --shard bench --every-route
    done
done
CAKE=$NEW
python3 bench/cluster_table.py "$OUT" | tee "$OUT/table.txt"
# Correctness of the other clustered schedules, built by the new compiler on this host
# (TESTS=0: not in this call).
[ "${TESTS:-1}" = 0 ] && exit 0
# (gpu_env.sh's `record`: $OUT/test-NAME.json and .log, the exit status and the output's tail)
t() { local name=$1; shift; record test-$name 240 test "$@"; }
t gemm-cluster kernels/gemm/gemm.contract.toml --kernel examples/gemm_cluster_sm90.py
t gemm-splitk kernels/gemm/gemm.contract.toml --kernel examples/gemm_splitk_sm90.py
t assign-mc kernels/kmeans/assign.contract.toml --kernel kernels/kmeans/variants/kmeans_assign_mc_sm90.py
# Two schedules whose kernel is not named as their contract's entry: a copy renamed.
mkdir -p /tmp/renamed
sed 's/^def kmeans_assign_split(/def kmeans_assign(/' examples/kmeans_assign_split_sm90.py > /tmp/renamed/kmeans_assign_split_sm90.py
sed 's/^def tinygemm_rings(/def tinygemm(/' examples/tinygemm_rings_sm90.py > /tmp/renamed/tinygemm_rings_sm90.py
t assign-split kernels/kmeans/assign.contract.toml --kernel /tmp/renamed/kmeans_assign_split_sm90.py
t tinygemm-rings kernels/tinygemm/tinygemm.contract.toml --kernel /tmp/renamed/tinygemm_rings_sm90.py
true
