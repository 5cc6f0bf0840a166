#!/usr/bin/env bash
# Build the small-M GEMM variants that bench/tinygemm_variants.py times (issue #19): the
# example at several M with the split-K cluster size and the ring depth varied. Runs on the build
# machine (compile-only CUDA toolchain); writes one folder per variant under
# ${VARIANTS:-.carry/tg-variants}, named M<m>__p<split>s<stages> ("shipped" for the example's own
# choice), holding what `cake build` writes.
set -euo pipefail
CAKE=${CAKE:-target/release/cake}
OUTDIR=${VARIANTS:-.carry/tg-variants}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d)
for m in ${MS:-1 8 16 64 128}; do
  for p in ${SPLITS:-shipped}; do
    for s in ${STAGES:-shipped 6 8 12 16}; do
        name="M${m}__p${p}s${s}"
        src="$tmp/tinygemm_$name.py"
        sed -e "s/^M = 8 /M = $m /" examples/tinygemm_sm90.py > "$src"
        [ "$p" = shipped ] || sed -i -e "s/^SPLIT = .*/SPLIT = $p/" "$src"
        [ "$s" = shipped ] || sed -i -e "s/^STAGES = .*/STAGES = $s/" "$src"
        dir="$OUTDIR/$name"
        if "$CAKE" build "$src" --target sm_90a -o "$dir" > "$dir.log" 2>&1; then
            printf '%-20s %s\n' "$name" "$(grep -o '[0-9]* registers, [0-9]* B stack, [0-9]* B spill stores' "$dir.log" | head -1)"
        else
            echo "$name: rejected ($(grep -m1 -o 'CAKE-[A-Z][0-9]*[^\n]*' "$dir.log" | cut -c1-100))"; rm -rf "$dir"
        fi
        rm -f "$dir.log"
    done
  done
done
rm -rf "$tmp"
