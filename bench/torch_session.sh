#!/usr/bin/env bash
# The PyTorch integration on the GPU (issue #22): Kernel.run, torch.library ops under
# torch.compile (Inductor, fullgraph, and reduce-overhead's CUDA graphs), CUDA-graph capture of
# prepared launches and calls, cake.autotune with its cache; then the CPU suite of the same
# features against the carried wheel. Carry dist/ (a wheel from maturin or scripts/wheel.sh).
set -u
OUT=${OUT:-out/torch-session}
. "$(dirname "$0")/gpu_env.sh" || exit 1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$OUT/versions.txt"
timeout 900 python3 -m pytest -q -rs python/tests/test_gpu.py python/tests/test_torch_integration.py \
    --junitxml="$OUT/pytest.xml" 2>&1 | tee "$OUT/pytest.txt" | tail -25
