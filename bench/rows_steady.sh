#!/usr/bin/env bash
# Build RMSNorm (FAMILIES: other row examples that have the STORE_EVICT knob) with and without its
# output's L2 evict-last priority (STORE_EVICT = 2: `lm.store(..., evict="last")`) at the hidden
# sizes bench/rows_steady.py times.
# Runs on the build machine; one folder per build under ${VARIANTS:-.carry/steady}, named
# <family>__<H>__<variant>, holding what `cake build` writes.
#   CAKE=target/release/cake bench/rows_steady.sh
set -euo pipefail
CAKE=${CAKE:-target/release/cake}
OUTDIR=${VARIANTS:-.carry/steady}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d)
for fam in ${FAMILIES:-rmsnorm}; do
    for H in 1024 4096 16384; do
        for v in "shipped 0" "last 2"; do
            set -- $v
            src="$tmp/${fam}_${H}_$1.py"
            sed -e "s/^H = 4096 /H = $H /" -e "s/^STORE_EVICT = 0 /STORE_EVICT = $2 /" "examples/${fam}_sm90.py" > "$src"
            grep -q "^STORE_EVICT = $2 " "$src" || { echo "no STORE_EVICT knob in examples/${fam}_sm90.py"; exit 1; }
            "$CAKE" build "$src" --target sm_90a -o "$OUTDIR/${fam}__${H}__$1" > /dev/null
        done
    done
done
rm -rf "$tmp"
ls "$OUTDIR"
