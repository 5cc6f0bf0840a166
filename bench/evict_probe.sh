#!/usr/bin/env bash
# Build machine side of bench/evict_probe.py: examples/tinygemm_sm90.py built for each M and N
# without (`base`, EVICT_FIRST = 0) and with (`ef`, EVICT_FIRST = 1) its weight's TMA loads
# evict-first, into .carry/ef/m<M>_n<N>/{base,ef}. (Call 3 of 2026-12-03-cost-model ran this
# with the policy edited into the generated CUDA by hand, before `evict=` existed; the language
# now emits the same createpolicy + .L2::cache_hint.) Needs target/release/cake and nvcc.
set -eu
CAKE=${CAKE:-target/release/cake}
for shape in "1 4096" "8 4096" "1 14336" "16 2048" "64 7168"; do
  set -- $shape
  for v in "base 0" "ef 1"; do
    set -- $1 $2 $v
    D=.carry/ef/m$1_n$2/$3; S=$(mktemp -d)
    mkdir -p "$D"
    sed -e "s/^M = 8 /M = $1 /" -e "s/^NW = 2048 /NW = $2 /" -e "s/^EVICT_FIRST = 1/EVICT_FIRST = $4/" \
        examples/tinygemm_sm90.py > "$S/tinygemm.py"
    "$CAKE" build "$S/tinygemm.py" --target sm_90a -o "$D" > /dev/null
    rm -f "$D/tinygemm.cu"; rm -rf "$S"
  done
done
