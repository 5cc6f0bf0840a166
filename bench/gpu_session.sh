#!/usr/bin/env bash
# One GPU session for the runtime and the kernels (docs/gpu.md, issue #6): install the carried
# wheel, run the Python package's GPU tests, `cake test` and `cake bench` on the GEMM contract
# (and the cluster GEMM), `cake bench` on the k-means assign and update contracts and on the
# Ampere-path GEMM, then the planted faults. Everything it measures lands under $OUT, also
# packed as $OUT.tar.gz (the device tool returns few files);
# bench-summary.json and a Markdown table of every bench come last.
#
#   bench/gpu_session.sh            # on the GPU host, from the repository root
#
# Expects dist/cake (the release binary) and dist/cake-*.whl (scripts/wheel.sh builds both), and
# .whl/flash_kmeans-0.3.1-py3-none-any.whl for the k-means baseline (carry: dist, .whl).
set -u
OUT=${OUT:-out/gpu-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1

echo "== pytest (GPU tests of the package, and the CPU suite against the built wheel)"
timeout 300 python3 -m pytest -q python/tests 2>&1 | tee "$OUT/pytest.txt" | tail -5

CONTRACT=kernels/gemm/gemm.contract.toml
echo "== cake test"
timeout 300 "$CAKE" test $CONTRACT --record "$OUT/gemm-test.json"; echo "exit $?"
echo "== cake bench"
timeout 600 "$CAKE" bench $CONTRACT --record "$OUT/gemm-bench.json"; echo "exit $?"

echo "== GEMM in clusters of two, B multicast (examples/gemm_cluster_sm90.py)"
timeout 300 "$CAKE" bench $CONTRACT --kernel examples/gemm_cluster_sm90.py \
    --record "$OUT/gemm-cluster-bench.json" | grep -E "^bench|correctness|verdict"; echo "exit ${PIPESTATUS[0]}"

echo "== k-means assign vs flash-kmeans"
timeout 600 "$CAKE" bench kernels/kmeans/assign.contract.toml --record "$OUT/kmeans-bench.json"; echo "exit $?"
echo "== k-means centroid update vs flash-kmeans"
timeout 600 "$CAKE" bench kernels/kmeans/update.contract.toml --record "$OUT/kmeans-update-bench.json"; echo "exit $?"

echo "== Ampere-path GEMM (examples/gemm_sm80.py, sm_80 code through the driver's PTX JIT)"
timeout 300 "$CAKE" bench $CONTRACT --kernel examples/gemm_sm80.py --target sm_80 --embed-ptx \
    --record "$OUT/gemm-sm80-bench.json" | grep -E "^bench|correctness|verdict"; echo "exit ${PIPESTATUS[0]}"

echo "== planted faults"
"$CAKE" build examples/gemm_sm90.py --target sm_90a -o /tmp/gemm-build >/dev/null &&
    python3 bench/planted.py /tmp/gemm-build /tmp/planted >/dev/null || exit 1
for fault in unwritten deadlock illegal_address; do
    t0=$(date +%s)
    timeout 300 "$CAKE" test $CONTRACT --kernel /tmp/planted/$fault/gemm.launch.json \
        --record "$OUT/planted-$fault.json" | tail -2
    echo "planted $fault: exit ${PIPESTATUS[0]} after $(( $(date +%s) - t0 )) s"
done

echo "== launch overhead (host)"
timeout 120 python3 bench/launch_overhead.py --out "$OUT/launch-overhead.json"

echo "== summary of the benches"
python3 bench/summarize.py "$OUT/bench-summary.json" "$OUT/gemm-bench.json" "$OUT/gemm-cluster-bench.json" "$OUT/kmeans-bench.json" \
    "$OUT/kmeans-update-bench.json" "$OUT/gemm-sm80-bench.json" | tee "$OUT/bench-summary.md"
tar -czf "$OUT.tar.gz" -C "$(dirname "$OUT")" "$(basename "$OUT")"
