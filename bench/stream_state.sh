#!/usr/bin/env bash
# Build, on the build machine, the kernels bench/stream_state.py launches on two streams at once
# and times: the dynamic RMSNorm ring, the dynamic causal attention (D = 128), the stream-K GEMM
# and the stream-K tinygemm (M = 8).
#   bench/stream_state.sh DIR CAKE_BINARY     # repository root; needs scripts/toolchain.sh's CUDA_HOME
# Run it once per binary to compare two compilers' builds (stream_state.py --old DIR).
set -euo pipefail
dir=$1 cake=$2
mkdir -p "$dir"
tmp=$(mktemp -d)
knob() {  # knob FILE NAME VALUE: the example with one module constant set
    sed -i "s/^$2 = [0-9]*\( .*\)\?$/$2 = $3\1/" "$1"
    grep -q "^$2 = $3\b" "$1" || { echo "stream_state: $2 not set in $1" >&2; exit 1; }
}
cp examples/rmsnorm_ring_sm90.py "$tmp/rms.py"; knob "$tmp/rms.py" DYNAMIC 1
cp examples/attention_sm90.py "$tmp/attn.py"
knob "$tmp/attn.py" CAUSAL 1; knob "$tmp/attn.py" PERSISTENT 1; knob "$tmp/attn.py" DYNAMIC 1
"$cake" build "$tmp/rms.py" --target sm_90a --out "$dir/rms_ring_dyn" > /dev/null
"$cake" build "$tmp/attn.py" --target sm_90a --out "$dir/attn_dyn" > /dev/null
"$cake" build examples/gemm_streamk_sm90.py --target sm_90a --out "$dir/gemm_streamk" > /dev/null
"$cake" build examples/tinygemm_streamk_sm90.py --target sm_90a --out "$dir/tinygemm_streamk" > /dev/null
# Each keeps state across its CTAs: in the launch's workspace (`state`), or, built by a compiler
# from before it, in module globals (`module_state`).
grep -lE '"(state|module_state)":' "$dir"/*/*.launch.json
