#!/usr/bin/env bash
# GPU host: the launch's workspace (docs/launch.md, `state`) under overlapping launches and
# CUDA graphs, and its cost against the same kernels built before it (module globals).
#   OUT=... [STATE_S=380 PYTEST_S=150] bash bench/state_session.sh   (each part's time limit, s)
# Carried: dist/ (the wheel), .carry/state.tgz (bench/stream_state.sh's builds by this commit's
# binary in new/ and by its parent's in old/), .carry/commit.
set -uo pipefail
source bench/gpu_env.sh || exit 1
tar xzf .carry/state.tgz -C .carry
timeout ${STATE_S:-380} python3 bench/stream_state.py --dir .carry/new --old .carry/old \
    --out "$OUT/stream_state.json" 2>&1 | tee "$OUT/stream_state.log" | tail -22
echo "== stream_state: at $(( $(date +%s) - SESSION_START )) s"
timeout ${PYTEST_S:-150} python3 -m pytest -q -p no:cacheprovider python/tests/test_gpu.py \
    -k "workspace or graphs_captured or refused_in_a_capture" 2>&1 | tee "$OUT/pytest.txt" | tail -4
echo "== pytest: at $(( $(date +%s) - SESSION_START )) s"
