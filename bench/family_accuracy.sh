#!/usr/bin/env bash
# The cost model (this checkout's, with the committed calibration table) against every family
# measurement of bench/results/2026-12-02-cost-family-accuracy/, 2026-12-03-cost-model/, 2026-12-03-cost-model-2/ and 2026-12-03-gemm-align/, the earlier representative
# measurements the shipped tables were chosen from, and the row-layout kernels' (the five row
# families and the CUDA-core GEMV, 2026-12-04-row-evict/ and 2026-12-05-gemv-fused/)
# (docs/cost-model.md, "Accuracy per family").
# No GPU. Prints one report per (family file, measurement); `--json DIR` also writes each as JSON.
#
#   bench/family_accuracy.sh [CAKE] > accuracy.txt
set -u
CAKE=${1:-target/release/cake}
R=bench/results
A=$R/2026-12-02-cost-family-accuracy
run() { # label, family file, measurements...
  echo "### $1"
  shift
  "$CAKE" family accuracy "$@" --worst 6 | sed 's#^#    #'
  echo
}
RE=$R/2026-12-04-row-evict
echo "## Row-layout kernels (rows=): the five row families and the CUDA-core GEMV"
for f in rmsnorm layernorm softmax add_rmsnorm quant_fp8; do
  run "$f, every candidate at the bench shapes (two runs)" kernels/rows/$f.candidates.family.toml $RE/c1/$f-1/measurement.json $RE/c1/$f-2/measurement.json
done
run "tinygemm, the GEMV at M = 1 against the swapped schedule (two calls)" kernels/tinygemm/tinygemm.candidates.family.toml $RE/c2/every/measurement.json $RE/c3/every/measurement.json
run "tinygemm, the GEMV at M = 2 and 4 (fused row sums of loads)" $R/2026-12-05-gemv-fused/gemv_fused.family.toml $R/2026-12-05-gemv-fused/c1/gemv/measurement.json
G=$R/2026-12-03-gemm-align/c1
echo "## Session 22: rows off 32-byte sectors (tma_misaligned_rows_per_us was fitted on the pairs' misaligned points)"
run "GEMM 128-row routes, pairs that differ only in K by 8" kernels/gemm/gemm-align.candidates.family.toml $G/gemm-align/measurement.json
run "GEMM large-M short-K pocket, seed 17" kernels/gemm/gemm.candidates.family.toml $R/2026-12-03-cost-model-2/c2/gemm-pocket17/measurement.json
C2=$R/2026-12-03-cost-model-2/c1
echo "## Test sets of 2026-12-03 (session 21): GEMM's small-M routes, with and without evict-first"
run "GEMM small-M, seeds 15 and 16" kernels/gemm/gemm-small.candidates.family.toml $C2/gemm-small15/measurement.json $C2/gemm-small16/measurement.json
C=$R/2026-12-03-cost-model/c1
echo "## Test sets of 2026-12-03: seeds 13 and 14, drawn after acc_issue_ratio was fixed"
run "GEMM, seed 13" kernels/gemm/gemm.candidates.family.toml $C/gemm-rep13/measurement.json
run "k-means assign, seed 13" kernels/kmeans/assign.candidates.family.toml $C/assign-rep13/measurement.json
run "GEMM, seed 14 (call 3)" kernels/gemm/gemm.candidates.family.toml $C/../c3/gemm-rep14/measurement.json
run "k-means assign, seed 14 (call 3)" kernels/kmeans/assign.candidates.family.toml $C/../c3/assign-rep14/measurement.json
run "k-means assign, seed 10 (the measurement acc_issue_ratio was fitted on)" kernels/kmeans/assign.candidates.family.toml $R/2026-12-03-lowering-loads/c3/assign-v2/measurement.json
echo "## Test sets of 2026-12-02: shapes drawn after the model and table they judged were fixed"
run "update, seed 9 (call 4)" bench/accuracy/update.variants.family.toml $A/call4/update-seed9/measurement.json
run "RMSNorm, seed 9 (call 4)" bench/accuracy/rmsnorm.variants.family.toml $A/call4/rmsnorm-seed9/measurement.json
run "GEMM, seed 9 (call 4)" kernels/gemm/gemm.candidates.family.toml $A/call4/gemm-seed9/measurement.json
run "k-means assign, seed 9 (call 4)" kernels/kmeans/assign.candidates.family.toml $A/call4/assign-seed9/measurement.json
echo "## Earlier draws (seen while the model changed)"
run "update, seeds 6-8" bench/accuracy/update.variants.family.toml $A/call1/update-seed6/measurement.json $A/call2/update-seed7/measurement.json $A/call3/update-seed8/measurement.json
run "update, the shipped candidates' representative measurement" kernels/kmeans/update.candidates.family.toml $R/2026-12-02-kmeans-update-family/2-family/1-representative/measurement.json
run "RMSNorm, seeds 6-7" bench/accuracy/rmsnorm.variants.family.toml $A/call1/rmsnorm-seed6/measurement.json $A/call2/rmsnorm-seed7/measurement.json
run "GEMM, seed 7 and the shipped table's representative measurement" kernels/gemm/gemm.candidates.family.toml $A/call2/gemm-seed7/measurement.json $R/2026-12-02-gemm-family/run2-06587ad/1-representative/measurement.json
run "k-means assign, seeds 7-8 and the shipped table's two representative measurements" kernels/kmeans/assign.candidates.family.toml $A/call2/assign-seed7/measurement.json $A/call3/assign-seed8/measurement.json $R/2026-12-02-kmeans-assign-stream/3-representative-140-wide/1-representative/measurement.json $R/2026-12-02-kmeans-assign-stream/5-representative-seed2/1-representative/measurement.json
run "tinygemm, the contract's 40 shapes through the table of 2026-12-03 (weight evict-first)" kernels/tinygemm/tinygemm.family.toml $C/../c5/tinygemm/measurement.json
run "tinygemm, every candidate at the contract's 40 shapes (with and without evict-first)" kernels/tinygemm/tinygemm.candidates.family.toml $C/../c4/tiny-every/measurement.json
