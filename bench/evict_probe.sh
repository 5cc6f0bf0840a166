#!/usr/bin/env bash
# Build machine side of bench/evict_probe.py: examples/tinygemm_sm90.py built for each M and N
# (`cake build`), and the same CUDA with the weight's TMA load given an L2 evict_first policy
# (createpolicy + .L2::cache_hint, edited in by hand: Cake has no cache hint yet), into
# .carry/ef/m<M>_n<N>/{base,ef}. Needs nvcc (scripts/toolchain.sh) and target/release/cake.
set -eu
CAKE=${CAKE:-target/release/cake}
for shape in "1 4096" "8 4096" "1 14336" "16 2048" "64 7168"; do
  set -- $shape
  D=.carry/ef/m$1_n$2; S=$(mktemp -d)
  mkdir -p $D/base $D/ef
  sed -e "s/^M = 8 /M = $1 /" -e "s/^NW = 2048 /NW = $2 /" examples/tinygemm_sm90.py > $S/tinygemm.py
  "$CAKE" build $S/tinygemm.py --target sm_90a -o $D/base > /dev/null
  cp $D/base/tinygemm.launch.json $D/ef/
  python3 - $D <<'PY'
import sys
d = sys.argv[1]
s = open(d + "/base/tinygemm.cu").read()
fn = '''static __device__ __forceinline__ void cake_tma_load_2d_ef(uint32_t dst, const CakeTensorMap* map, uint32_t bar, int c0, int c1) {
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;"
      :: "r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1), "l"(pol) : "memory");
}
'''
i = s.index("static __device__ __forceinline__ void cake_tma_load_3d")
s = s[:i] + fn + s[i:]
assert s.count("cake_tma_load_2d((sW") == 1
open(d + "/ef/tinygemm.cu", "w").write(s.replace("cake_tma_load_2d((sW", "cake_tma_load_2d_ef((sW"))
PY
  "$CUDA_HOME/bin/nvcc" -gencode arch=compute_90a,code=sm_90a -cubin -O3 -std=c++17 -diag-suppress 177 \
      -o $D/ef/tinygemm.cubin $D/ef/tinygemm.cu
  rm -f $D/base/tinygemm.cu $D/ef/tinygemm.cu; rm -rf $S
done
