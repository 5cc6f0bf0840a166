#!/usr/bin/env bash
# Where a one-tile GEMM's time goes (issue #18's small shapes): copies of the generated
# examples/gemm_sm90.py kernel with one part removed each, built into $SPAN/gemm_<part> beside
# bench/span_probe.sh's builds for bench/span_probe.py to time. The copies without their MMAs or
# stores compute wrong outputs by design: they are timed for where the time goes, not as kernels.
#   bench/gemm_parts.sh [SPAN]      (default .carry/span; run bench/span_probe.sh first)
set -euo pipefail
SPAN=${1:-.carry/span}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
base="$SPAN/gemm"
cu=$(ls "$base"/*.cu)
part() {  # name sed-script
    local d="$SPAN/gemm_$1"
    rm -rf "$d"; cp -r "$base" "$d"
    sed -i -e "$2" "$d/gemm.cu"
    "$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -w -o "$d/gemm.cubin" "$d/gemm.cu"
}
part noprefetch '/cake_prefetch_tensormap(&/d'
part nosetmaxnreg '/cake_setmaxnreg_\(inc\|dec\)<[0-9]*>();/d'
part nostore '/cake_tma_store_2d(&tmap_C/d'
part noepilogue '/cake_tma_store_2d(&tmap_C/d; /cake_st_shared_b32(addr/d'
part nomma '/cake_wgmma_m64n256k16_f32_bf16(acc/d'
part loadonly '/cake_wgmma_m64n256k16_f32_bf16(acc/d; /cake_tma_store_2d(&tmap_C/d; /cake_st_shared_b32(addr/d'
part skeleton '/cake_wgmma_m64n256k16_f32_bf16(acc/d; /cake_tma_store_2d(&tmap_C/d; /cake_st_shared_b32(addr/d; /cake_tma_load_2d((s/d; /cake_mbar_arrive_expect_tx(full/d; /cake_mbar_wait(full/d'
