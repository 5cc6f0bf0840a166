#!/usr/bin/env bash
# The SASS of the tinygemm's evict-first cp.async copies (issue #19, bench/results/2026-12-06-grid/
# call 3): with the policy from createpolicy (session 43's form) and as a constant (the lowering's
# now). For each LDGSTS that takes a descriptor register desc[URn], whether any instruction of the
# kernel writes URn. Needs cuobjdump (the GPU host's CUDA).   bench/sass_policy.sh DIR
d=${1:-.carry/pol}
dump=$(command -v cuobjdump || echo "${CUDA_HOME:-/usr/local/cuda}/bin/cuobjdump")
for v in createpolicy const; do
    "$dump" -sass "$d/tg_$v.cubin" > "$d/tg_$v.sass" 2>&1 || { echo "$v: cuobjdump failed"; continue; }
    regs=$(grep -o 'LDGSTS[^;]*desc\[UR[0-9]*\]' "$d/tg_$v.sass" | grep -o 'UR[0-9]*' | sort -u)
    echo "$v: $(grep -c LDGSTS "$d/tg_$v.sass") LDGSTS, descriptor registers: ${regs:-none}"
    for r in $regs; do
        w=$(grep -E "^\s*/\*[0-9a-f]+\*/\s+(@\S+\s+)?U[A-Z0-9.]+\s+$r\b" "$d/tg_$v.sass" | head -2 | sed 's/^ *//')
        echo "  $r written by: ${w:-NOTHING}"
    done
done
