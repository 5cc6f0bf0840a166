#!/usr/bin/env bash
# On a GPU host: `cake bench` of RMSNorm, softmax and the GEMM (or $RECORDS) at their contracts' bench shapes,
# then, per record, the calibration table its estimates used and the CUPTI span measured over
# the predicted span at each shape: a bench run must predict with the table of the GPU it is on
# (docs/cost-model.md, "One table per card"). Everything lands in $OUT.
#
#   bench/card_check.sh        # on the GPU host, from the repository root; carry: dist
#   RECORDS="causal=kernels/attention/attention_causal.contract.toml" bench/card_check.sh
set -u
OUT=${OUT:-out/card-check}
RECORDS=${RECORDS:-"rmsnorm=kernels/rows/rmsnorm.contract.toml softmax=kernels/rows/softmax.contract.toml gemm=kernels/gemm/gemm.contract.toml"}
. "$(dirname "$0")/gpu_env.sh" || exit 1
for r in $RECORDS; do
    record "${r%%=*}" 240 bench "${r#*=}"
done
python3 - "$OUT" $RECORDS <<'PY'
import json, os, sys
out = sys.argv[1]
print(f"{'record':<10} {'table':<24} {'shape':<34} {'measured/predicted span':>24}")
for name in (r.split("=")[0] for r in sys.argv[2:]):
    path = os.path.join(out, f"{name}.json")
    if not os.path.exists(path):
        print(f"{name:<10} no record")
        continue
    d = json.load(open(path))
    ests = (d.get("cost_estimate") or {}).get("estimates") or [{}]
    table = (ests[0].get("calibration") or {}).get("gpu", "?")
    for s in (d.get("timing") or {}).get("shapes", []):
        p = s.get("predicted") or {}
        r = p.get("cupti_over_predicted_span")
        shape = ",".join(f"{k}={v}" for k, v in s["shape"].items())
        print(f"{name:<10} {table:<24} {shape:<34} {r if r is None else round(r, 3)!s:>24}")
PY
