#!/usr/bin/env bash
# Build the small-M GEMM variants that bench/tinygemm_variants.py times (issue #19): the
# example at several M with the ring depth varied. Runs on the build machine (compile-only CUDA
# toolchain); writes one folder per variant under ${VARIANTS:-.carry/tg-variants}, named
# M<m>__s<stages>, holding what `cake build` writes.
set -euo pipefail
CAKE=${CAKE:-target/release/cake}
OUTDIR=${VARIANTS:-.carry/tg-variants}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d)
for m in ${MS:-1 8 16 64 128}; do
    for s in ${STAGES:-shipped 6 8 12 16}; do
        src="$tmp/tinygemm_M${m}_s${s}.py"
        if [ "$s" = shipped ]; then
            sed -e "s/^M = 8 /M = $m /" examples/tinygemm_sm90.py > "$src"
        else
            sed -e "s/^M = 8 /M = $m /" -e "s/^STAGES = .*/STAGES = $s/" examples/tinygemm_sm90.py > "$src"
        fi
        dir="$OUTDIR/M${m}__s${s}"
        if "$CAKE" build "$src" --target sm_90a -o "$dir" > "$dir.log" 2>&1; then
            printf '%-16s %s\n' "M${m}__s${s}" "$(grep -o '[0-9]* registers, [0-9]* B stack, [0-9]* B spill stores' "$dir.log" | head -1)"
        else
            echo "M${m}__s${s}: rejected ($(grep -m1 -o 'CAKE-[A-Z][0-9]*[^\n]*' "$dir.log" | cut -c1-100))"; rm -rf "$dir"
        fi
        rm -f "$dir.log"
    done
done
rm -rf "$tmp"
