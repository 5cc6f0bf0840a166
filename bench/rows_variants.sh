#!/usr/bin/env bash
# Build the row-kernel variants that bench/rows_variants.py times (issue #20's tuning): each
# family's schedule at several hidden sizes, with the row owner, the rows per CTA and the
# CTAs-per-SM hint of __launch_bounds__ varied. Runs on the build machine (compile-only CUDA
# toolchain); writes one folder per variant under ${VARIANTS:-.carry/variants}, named
# <family>__<H>__<variant>, holding what `cake build` writes.
#   CAKE=target/release/cake bench/rows_variants.sh
set -euo pipefail
CAKE=${CAKE:-target/release/cake}
OUTDIR=${VARIANTS:-.carry/variants}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d)
variant() {  # family H name owner rows min_ctas [hint]
    local fam=$1 H=$2 name=$3 owner=$4 rows=$5 ctas=$6 hint=${7:-}
    local dir="$OUTDIR/${fam}__${H}__${name}" src="$tmp/${fam}_${H}_${name}.py"
    if [ "$owner" = shipped ]; then  # the example's own choice for this H
        sed -e "s/^H = 4096 /H = $H /" "examples/${fam}_sm90.py" > "$src"
    else
        sed -e "s/^H = 4096 /H = $H /" -e "s/^OWNER = .*/OWNER = \"$owner\"/" -e "s/^ROWS = .*/ROWS = $rows/" \
            "examples/${fam}_sm90.py" > "$src"
    fi
    "$CAKE" build "$src" --target sm_90a -o "$dir" > "$dir.log" 2>&1 || { echo "FAIL $dir"; tail -5 "$dir.log"; return; }
    if [ "$ctas" != 1 ] || [ -n "$hint" ]; then
        local cu=$(ls "$dir"/*.cu) cubin=$(ls "$dir"/*.cubin)
        sed -i "s/__launch_bounds__(\([0-9]*\), 1)/__launch_bounds__(\1, $ctas)/" "$cu"
        # Cache hints on the batched path's 16-byte reads and writes: streaming (evict-first)
        # stores; reads streaming too (cs) or kept out of L1 (na).
        case "$hint" in
            cs) sed -i -e 's/return __ldg(reinterpret_cast<const uint4\*>(p));/return __ldcs(reinterpret_cast<const uint4*>(p));/' \
                       -e 's/  \*reinterpret_cast<uint4\*>(p) = u;/  __stcs(reinterpret_cast<uint4*>(p), u);/' "$cu" ;;
            na) sed -i -e 's/return __ldg(reinterpret_cast<const uint4\*>(p));/uint4 u; asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w) : "l"(p)); return u;/' \
                       -e 's/  \*reinterpret_cast<uint4\*>(p) = u;/  __stcs(reinterpret_cast<uint4*>(p), u);/' "$cu" ;;
        esac
        "$NVCC" -gencode=arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -Xptxas -v -o "$cubin" "$cu" > "$dir.log" 2>&1
    fi
    if [ "$ctas" != 1 ]; then
        printf '%-36s %s\n' "$(basename "$dir")" "$(grep -o 'Used [0-9]* registers\|[0-9]* bytes spill stores' "$dir.log" | tr '\n' ' ')"
    else
        printf '%-36s %s\n' "$(basename "$dir")" "$(grep -o '"registers": *[0-9]*\|"spill_stores": *[0-9]*' "$dir"/*.resources.json | tr '\n' ' ')"
    fi
    rm -f "$dir.log"
}
for fam in ${FAMILIES:-rmsnorm layernorm softmax add_rmsnorm quant_fp8}; do
    variant $fam 4096 shipped shipped 0 1
    variant $fam 4096 cs shipped 0 1 cs
    variant $fam 4096 na shipped 0 1 na
    variant $fam 4096 wg4 warpgroup 4 1
    variant $fam 4096 wg1 warpgroup 1 1
done
rm -rf "$tmp"
