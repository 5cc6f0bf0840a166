#!/usr/bin/env bash
# Build the small-M GEMM variants that bench/tinygemm_variants.py times (issue #19): the
# example at several M with the split-K cluster size, the ring depth and the stage width varied.
# Runs on the build machine (compile-only CUDA toolchain); writes one folder per variant under
# ${VARIANTS:-.carry/tg-variants}, named M<m>__p<split>s<stages>k<bk>, holding what `cake build`
# writes.
set -euo pipefail
CAKE=${CAKE:-target/release/cake}
OUTDIR=${VARIANTS:-.carry/tg-variants}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d)
# A variant is p<split>s<stages>k<bk>; "x" in any place keeps the example's own choice.
for m in ${MS:-1 8 16 64 128}; do
    for spec in ${SPECS:-pxsxkx p2sxkx pxs8k128}; do
        name="M${m}__${spec}"
        p=$(echo "$spec" | sed -E 's/^p([0-9x]+)s([0-9x]+)k([0-9x]+)$/\1/')
        s=$(echo "$spec" | sed -E 's/^p([0-9x]+)s([0-9x]+)k([0-9x]+)$/\2/')
        bk=$(echo "$spec" | sed -E 's/^p([0-9x]+)s([0-9x]+)k([0-9x]+)$/\3/')
        src="$tmp/tinygemm_$name.py"
        sed -e "s/^M = 8 /M = $m /" examples/tinygemm_sm90.py > "$src"
        [ "$p" = x ] || sed -i -e "s/^SPLIT = .*/SPLIT = $p/" "$src"
        [ "$s" = x ] || sed -i -e "s/^STAGES = .*/STAGES = $s/" "$src"
        [ "$bk" = x ] || sed -i -e "s/^BK = [0-9]* /BK = $bk /" "$src"
        dir="$OUTDIR/$name"
        if "$CAKE" build "$src" --target sm_90a -o "$dir" > "$dir.log" 2>&1; then
            printf '%-28s %s\n' "$name" "$(grep -o '[0-9]* registers, [0-9]* B stack, [0-9]* B spill stores' "$dir.log" | head -1)"
        else
            echo "$name: rejected ($(grep -m1 -o 'CAKE-[A-Z][0-9]*[^\n]*' "$dir.log" | cut -c1-100))"; rm -rf "$dir"
        fi
        rm -f "$dir.log"
    done
done
rm -rf "$tmp"
