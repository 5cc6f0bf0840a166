#!/usr/bin/env bash
# Build the attention variants that bench/attention_variants.py times (issue #17): the example
# at D 64 / 128, non-causal and causal, with the P·V deferral and the warpgroups' turns on and
# off, the lazy rescale on and off, 128 / 176 / 192-key tiles, a three-stage ring and (D 64)
# two consumer warpgroups instead of three. Runs on the build machine (compile-only CUDA toolchain); writes
# one folder per variant under ${VARIANTS:-.carry/att-variants}, named D<d>_C<c>__<variant>.
set -euo pipefail
CAKE=${CAKE:-target/release/cake}
OUTDIR=${VARIANTS:-.carry/att-variants}
rm -rf "$OUTDIR"; mkdir -p "$OUTDIR"
tmp=$(mktemp -d)
edits() {
    case "$1" in
        shipped) echo "" ;;
        nodefer) echo "s/, defer=True)/)/" ;;
        noturns) echo "s/, turns=True)/)/" ;;
        plain) echo "s/, defer=True)/)/; s/, turns=True)/)/" ;;
        bn176) echo "s/^BN = 128 /BN = 176 /" ;;
        bn176nt) echo "s/^BN = 128 /BN = 176 /; s/, turns=True)/)/" ;;
        bn192) echo "s/^BN = 128 /BN = 192 /" ;;
        fa3order) echo "/^                    o\[:\] = o \* alpha\[:, None\]      # waits/d; s/^\( *\)lm.wait(v_full)/\1o[:] = o * alpha[:, None]\n\1lm.wait(v_full)/" ;;
        s3) echo "s/^STAGES = 2/STAGES = 3/" ;;
        pers) echo "s/^PERSISTENT = 0 /PERSISTENT = 1 /" ;;
        lazy) echo "s/^LAZY = 0 /LAZY = 1 /" ;;
        wg2) echo "s/^CONSUMERS = .*/CONSUMERS = 2/" ;;
        wg2lazy) echo "s/^CONSUMERS = .*/CONSUMERS = 2/; s/^LAZY = 0 /LAZY = 1 /" ;;
    esac
}
for d in ${DS:-64 128}; do
    for c in ${CS:-0 1}; do
        for v in ${VS:-shipped fa3order noturns nodefer s3 bn176}; do
            case "$v" in wg2*) [ "$d" = 64 ] || continue ;; esac
            name="D${d}_C${c}__${v}"
            src="$tmp/attention_$name.py"
            sed -e "s/^D = 128 /D = $d /" -e "s/^CAUSAL = 0 /CAUSAL = $c /" -e "$(edits "$v")" \
                examples/attention_sm90.py > "$src"
            dir="$OUTDIR/$name"
            if "$CAKE" build "$src" --target sm_90a -o "$dir" > "$dir.log" 2>&1; then
                printf '%-20s %s\n' "$name" "$(grep -o '[0-9]* registers, [0-9]* B stack, [0-9]* B spill stores' "$dir.log" | head -1)"
            else
                echo "$name: rejected ($(grep -m1 -o 'CAKE-[A-Z][0-9]*.*' "$dir.log" | cut -c1-120))"; rm -rf "$dir"
            fi
            rm -f "$dir.log"
        done
    done
done
rm -rf "$tmp"
