#!/usr/bin/env bash
# GPU call 3 of bench/results/2026-12-11-attention-dynamic/: the causal attention table with the
# H100's dynamic routes (kernels/attention/attention_causal.family.toml) against the table before
# them (attention_causal_before.family.toml), through dispatch, alternated twice at the
# contract's bench shapes, then once each at twelve held-out shapes (seed 2, the domain narrowed
# to problems timed in seconds; seed 1 chose the routes' guards).
#   OUT=... CACHE=... bench/attention_ab_session.sh     # on the GPU host, repository root
set -u
. "$(dirname "$0")/gpu_env.sh" || exit 1
[ -n "${CACHE:-}" ] && export CAKE_CACHE_DIR=$CACHE
A=bench/results/2026-12-11-attention-dynamic
for i in 1 2; do
    part before-$i 60 $A/attention_causal_before.family.toml --shard bench
    part new-$i 60 kernels/attention/attention_causal.family.toml --shard bench
done
part off-before 90 $A/off_before.family.toml --shard held_out --n 12 --seed 2
part off-new 90 $A/off_new.family.toml --shard held_out --n 12 --seed 2
