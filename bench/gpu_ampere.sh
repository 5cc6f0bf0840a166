#!/usr/bin/env bash
# One GPU session for the mma.sync family (sm_80 / sm_89) on a later GPU (docs/gpu.md): the GEMM
# example built for sm_80 and sm_89 with its PTX embedded (--embed-ptx), run through the driver's
# JIT on the H200 under the GEMM contract (`cake test`, then `cake bench` against torch.matmul;
# also the copy-warp variant examples/gemm_sm80_ws.py),
# the refusal without --embed-ptx, the same choice through the Python API, and the FP8 (e4m3)
# GEMM for sm_89 (bench/gpu_ampere_fp8.py). Everything it
# measures lands under $OUT; a short summary is printed last.
#
#   bench/gpu_ampere.sh        # on the GPU host, from a directory holding dist/, examples/, kernels/
set -u
OUT=${OUT:-out/gpu-ampere}
. "$(dirname "$0")/gpu_env.sh" || exit 1

CONTRACT=kernels/gemm/gemm.contract.toml
KERNEL=examples/gemm_sm80.py
{
echo "== refusal: sm_80 on this GPU without --embed-ptx"
timeout 60 "$CAKE" test $CONTRACT --kernel $KERNEL --target sm_80; echo "exit $?"
for t in sm_80 sm_89; do
    echo "== cake test $t --embed-ptx"
    timeout 150 "$CAKE" test $CONTRACT --kernel $KERNEL --target $t --embed-ptx \
        --record "$OUT/gemm-$t-test.json"; echo "exit $?"
done
echo "== cake bench sm_80 --embed-ptx"
timeout 240 "$CAKE" bench $CONTRACT --kernel $KERNEL --target sm_80 --embed-ptx \
    --record "$OUT/gemm-sm_80-bench.json"; echo "exit $?"
echo "== copy-warp variant (examples/gemm_sm80_ws.py): cake bench sm_80 --embed-ptx"
timeout 240 "$CAKE" bench $CONTRACT --kernel examples/gemm_sm80_ws.py --target sm_80 --embed-ptx \
    --record "$OUT/gemm-ws-sm_80-bench.json"; echo "exit $?"
echo "== python: cake.compile(target='sm_80') with and without embed_ptx"
timeout 120 python3 - <<'PY'
import torch, cake
A = torch.randn(1000, 520, device="cuda", dtype=torch.bfloat16)
B = torch.randn(777, 520, device="cuda", dtype=torch.bfloat16)
ref = (A.float() @ B.float().T)
for embed in (True, False):
    C = torch.full((1000, 777), float("nan"), device="cuda", dtype=torch.bfloat16)
    try:
        mod = cake.compile("examples/gemm_sm80.py", target="sm_80", embed_ptx=embed)
        mod.gemm(A, B, C)
        torch.cuda.synchronize()
        err = (C.float() - ref).abs().max().item()
        print(f"embed_ptx={embed}: ran, max abs error {err:.4f} (|ref| max {ref.abs().max().item():.1f})")
    except Exception as e:
        print(f"embed_ptx={embed}: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
PY
echo "exit $?"
echo "== fp8: examples/gemm_fp8_sm89.py for sm_89 (--embed-ptx), e4m3 mma.sync"
timeout 120 python3 bench/gpu_ampere_fp8.py --out "$OUT/gemm-fp8-sm_89.json"; echo "exit $?"
} 2>&1 | tee "$OUT/log.txt"

echo "== summary"
grep -E "^== |^exit|passed|FAILED|FAIL|speedup|embed_ptx=|does not run|x torch|^time|^fp8" "$OUT/log.txt" | tail -40
