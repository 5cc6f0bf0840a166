#!/usr/bin/env bash
# Fifth GPU call for bench/results/2026-12-05-bk/ (issue #19, session 39): the TMA streaming
# probe (kernels/calibrate/stream.py) from DRAM, one CTA per SM, 64-row boxes BK = 64-512 wide
# in 2-24 stages (`dram_bk<BK>_s<S>`, python/cake/calibrate.py): the DRAM rate by the bytes a
# stage asks of each row and the bytes in flight, with nothing but a token MMA per stage.
#
#   OUT=... CACHE=... bench/bk5_session.sh     # on the GPU host, from the repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
ONLY=$(python3 -c "
from cake.calibrate import probes
print(' '.join('--only ' + p['name'] for p in probes(132) if p['name'].startswith('dram_') or p['name'] == 'dram_stream'))")
timeout 300 python3 -m cake.calibrate --target sm_90a --schedules kernels/calibrate --cake "$CAKE" \
    $ONLY --out "$OUT/dram_width.json" 2>&1 | tail -20
python3 - "$OUT/dram_width.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["probes"]
for name, r in sorted(d.items()):
    ms = r.get("median_ms")
    if ms:
        print(f"{name:<16} {ms:.4f} ms  {135168 * 4096 * 2 / ms / 1e9:.0f} GB/s")
PY
# On an H200 (the card issue #19's targets name), the shipped table against session 38's too.
if grep -q H200 "$OUT/gpu.txt"; then
    [ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
    D=bench/results/2026-12-05-bk
    part table-1 45 kernels/tinygemm/tinygemm.family.toml --shard bench
    part s38-1 45 $D/tinygemm_table_s38.family.toml --shard bench
    part offm 45 $D/tinygemm_table_offm.family.toml --shard bench
    part table-2 45 kernels/tinygemm/tinygemm.family.toml --shard bench
    part s38-2 45 $D/tinygemm_table_s38.family.toml --shard bench
fi
