#!/usr/bin/env bash
# The cost model's calibration tables per card (docs/cost-model.md, "One table per card") against
# committed family measurements from both cards: each run predicted with the H200's table, the
# H100's table, and the table of the GPU it ran on (the default). No GPU.
#
#   bench/card_accuracy.sh [CAKE] > bench/results/2026-12-14-h100-calibration/accuracy.txt
set -u
CAKE=${1:-target/release/cake}
R=bench/results
run() { # label, family file, measurements...
  local label=$1; shift
  echo "### $label"
  for table in "--gpu H200" "--gpu H100" ""; do
    echo "  [${table:-the table of the GPU each run was on}]"
    "$CAKE" family accuracy "$@" $table --worst 0 | sed 's#^#    #'
  done
  echo
}
run "tinygemm table, H100 (2026-12-07-clusters c10)" kernels/tinygemm/tinygemm.family.toml \
  $R/2026-12-07-clusters/c10/shipped/measurement.json
run "tinygemm table, H200 (2026-12-06-grid c6)" kernels/tinygemm/tinygemm.family.toml \
  $R/2026-12-06-grid/c6/shipped/measurement.json
run "RMSNorm candidates, H100 (2026-12-05-persistent c1, 2026-12-05-mcast c3)" \
  kernels/rows/rmsnorm.candidates.family.toml $R/2026-12-05-persistent/c1/rms/measurement.json \
  $R/2026-12-05-persistent/c1/rms_held/measurement.json $R/2026-12-05-mcast/c3/rms/measurement.json
run "RMSNorm candidates, H200 (2026-12-04-row-evict c1)" kernels/rows/rmsnorm.candidates.family.toml \
  $R/2026-12-04-row-evict/c1/rmsnorm-1/measurement.json $R/2026-12-04-row-evict/c1/rmsnorm-2/measurement.json
run "causal attention, H100 (2026-12-11-attention-dynamic c1)" \
  $R/2026-12-11-attention-dynamic/attention_causal_dynamic.family.toml \
  $R/2026-12-11-attention-dynamic/c1/*/measurement.json
