"""FlashAttention forward for Hopper: O = softmax(Q·Kᵀ / √D) · V, bf16 in and out, f32 math.

Q and O are (B·H, S, D); K and V are (B·H_kv, S, D) with H a multiple of H_kv (grouped-query
attention: query head h reads key/value head h // (H / H_kv), which over the flattened B·H
axis is bh // (BH / BHKV)). V is read as stored, (keys, D): the P·V MMA takes it N-major.

One CTA per (head, query tile), a producer warpgroup and two consumer warpgroups (three at
D = 64, whose smaller fragments fit the register budget three leave):
- `load` (warpgroup 0, 40 registers; 32 beside three consumers) issues the TMA copies: the Q
  tile once, then each key tile's K and V into a two-stage ring, with a full/empty barrier pair
  per operand so K can be released as soon as the scores are read and V only when P·V has
  retired. One elected thread issues them.
- `math` (232 registers each; 160 with three) each own 64 query rows. Per key tile:
  S = Q·Kᵀ (wgmma, shared operands), the online softmax in base 2 (row max, exp2, row sum,
  the running output rescaled), then O += P·V with P cast to bf16 in registers (the wgmma's
  register A operand) and V N-major from shared memory.
- Lazy rescale (`LAZY = 1`, off by default): a warp keeps its rows' running maximum until
  one of them grows by more than 8 (in base 2), decided by a warp vote (`lm.any`), so most key
  tiles skip the rescale of o; the result is exact either way (o and the row sums share the
  scale). Measured 1–6 % slower on the H200: the exp2 of each tile then waits for the vote.
- `defer=True` on the P·V MMA overlaps it with the next tile's softmax inside each warpgroup
  (FlashAttention-3's intra-warpgroup overlap): iteration j issues Q·K_jᵀ, then P_{j-1}·V_{j-1},
  waits for the scores only (`wgmma.wait_group 1`), and computes the softmax of tile j while
  P·V runs. Cake rotates the loop; the schedule stays the natural one.

`PERSISTENT = 1` makes one CTA per SM walk the tiles, the next tile's Q waiting on `q_empty`
until the consumers are done with this one's (measured no better: off); with `DYNAMIC = 1` each
CTA takes its next tile from a counter when it comes to it (`lm.tiles(..., dynamic=True)`), so
the causal tiles of unequal length spread over the SMs as they free. On an H100 (causal, kernel
times, 2026-12-11-attention-dynamic/) 0.98-1.09x one CTA per tile with 128-wide heads (geomean
1.02-1.05x), 1.01-1.07x with 64-wide, slower only at S <= 33: the causal family's H100 routes
take it (kernels/attention/attention_causal.family.toml); the H200 keeps one CTA per tile.

Masks: keys past S (the last tile) and, with CAUSAL, keys after the query, by `lm.iota` on the
tiles that need them. Causal CTAs take their query tiles longest first. Rows past S read zeros
(TMA) and are not stored.
"""
import cake
from cake import lm

D = 128            # head dimension: 64 or 128 (the contract specialises it)
CAUSAL = 0         # 1: query i attends to keys 0..i
# Consumer warpgroups, 64 query rows each: three at D = 64 (their fragments fit the 160
# registers each that three leave), two at D = 128.
CONSUMERS = 3 if D == 64 else 2
BM = 64 * CONSUMERS  # query rows per CTA
BN = 128           # keys per tile
STAGES = 2
LAZY = 0           # 1: rescale the output only when a row's maximum grew by more than 2^8
PERSISTENT = 0     # 1: one CTA per SM walks the tiles (the next tile's loads overlap this one's end)
DYNAMIC = 0        # 1 (with PERSISTENT): each CTA takes its next tile from a counter as it frees
# softmax scale in base 2: log2(e) / sqrt(D)
SCALE = 0.18033688011112042 if D == 64 else 0.12751743074941037


@cake.schedule(targets=["sm_90a"], persistent=PERSISTENT == 1)
def attention(Q: lm.tensor[lm.bf16, "BH", "S", D],
              K: lm.tensor[lm.bf16, "BHKV", "S", D],
              V: lm.tensor[lm.bf16, "BHKV", "S", D],
              O: lm.tensor[lm.bf16, "BH", "S", D]):
    pool = lm.smem()
    sQ = pool.view(shape=(BM, D), dtype=lm.bf16, swizzle=128)
    sK = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)
    sV = pool.view(shape=(BN, D), dtype=lm.bf16, stages=STAGES, swizzle=128)

    load = lm.role(warpgroup=0, regs=32 if CONSUMERS == 3 else 40)
    math = lm.role(warpgroups=[1, 2, 3] if CONSUMERS == 3 else [1, 2], regs=160 if CONSUMERS == 3 else 232)

    kv = lm.pipeline(stages=STAGES)
    q_full = lm.barrier(producers=[load], consumers=[math])
    if PERSISTENT:
        q_empty = lm.barrier(producers=[math], consumers=[load])   # sQ free again (starts free)
    k_full = lm.barrier(kv, producers=[load], consumers=[math])
    v_full = lm.barrier(kv, producers=[load], consumers=[math])
    k_empty = lm.barrier(kv, producers=[math], consumers=[load])
    v_empty = lm.barrier(kv, producers=[math], consumers=[load])

    s = math.fragment(shape=(64, BN), dtype=lm.f32)       # scores, then probabilities
    p = math.fragment(shape=(64, BN), dtype=lm.bf16)      # P: wgmma's register A operand
    o = math.fragment(shape=(64, D), dtype=lm.f32)
    m_i = math.fragment(shape=(64,), dtype=lm.f32)        # running row max (base 2, scaled)
    m_new = math.fragment(shape=(64,), dtype=lm.f32)
    alpha = math.fragment(shape=(64,), dtype=lm.f32)      # this tile's rescale of o
    l_i = math.fragment(shape=(64,), dtype=lm.f32)        # running row sum

    for bh, t in lm.tiles(BH, lm.cdiv(S, BM), dynamic=DYNAMIC == 1 and PERSISTENT == 1):
        # Causal: the longest query tiles first.
        tq = lm.cdiv(S, BM) - 1 - t if CAUSAL else t
        kvh = bh // (BH // BHKV)
        # Key tiles this query tile reads: all of them, or those up to its last query.
        n_kv = lm.cdiv(min(S, (tq + 1) * BM), BN) if CAUSAL else lm.cdiv(S, BN)
        with load:
            if PERSISTENT:
                lm.wait(q_empty)
            sQ.tma_load(Q, coords=(bh, tq * BM, 0), barrier=q_full)
            for j in lm.range(n_kv, pipeline=kv):
                lm.wait(k_empty)
                sK.tma_load(K, coords=(kvh, j * BN, 0), barrier=k_full)
                lm.wait(v_empty)
                sV.tma_load(V, coords=(kvh, j * BN, 0), barrier=v_full)
        with math:
            q0 = tq * BM + 64 * math.index           # this warpgroup's first query
            o[:] = 0.0
            m_i[:] = -lm.inf
            l_i[:] = 0.0
            lm.wait(q_full)
            for j in lm.range(n_kv, pipeline=kv):
                lm.wait(k_full)
                lm.mma(s, sQ.rows(64 * math.index, 64), sK.T, accumulate=False, release=k_empty, turns=True)
                # Keys past S, and with CAUSAL keys after the query, score -inf.
                if CAUSAL:
                    if (j + 1) * BN > q0:
                        keys = j * BN + lm.iota((64, BN), axis=1)
                        s[:] = lm.select((keys < S) & (q0 + lm.iota((64, BN), axis=0) >= keys), s, -lm.inf)
                elif (j + 1) * BN > S:
                    s[:] = lm.select(j * BN + lm.iota((64, BN), axis=1) < S, s, -lm.inf)
                m_new[:] = lm.maximum(m_i, lm.max(s, axis=1) * SCALE)
                # exp2 flushes subnormals (ftz): one MUFU.EX2 each, no fix-ups.
                if LAZY:
                    # The running maximum moves only when a row of the warp grew by more than
                    # 8 (base 2): P stays below 2^8, and most tiles skip rescaling o.
                    if lm.any(m_new - m_i > 8.0):
                        alpha[:] = lm.exp2(m_i - m_new, ftz=True)
                        m_i[:] = m_new
                    else:
                        alpha[:] = 1.0
                    s[:] = lm.exp2(s * SCALE - m_i[:, None], ftz=True)
                    l_i[:] = l_i * alpha + lm.sum(s, axis=1)
                    if lm.any(alpha < 1.0):
                        o[:] = o * alpha[:, None]  # waits for the previous P·V
                else:
                    alpha[:] = lm.exp2(m_i - m_new, ftz=True)
                    s[:] = lm.exp2(s * SCALE - m_new[:, None], ftz=True)
                    l_i[:] = l_i * alpha + lm.sum(s, axis=1)
                    m_i[:] = m_new
                    o[:] = o * alpha[:, None]      # waits for the previous P·V
                p[:] = lm.cast(s, lm.bf16)         # P·V has retired: the rescale waited
                lm.wait(v_full)
                lm.mma(o, p, sV, release=v_empty, defer=True)
            if PERSISTENT:
                lm.arrive(q_empty)                 # every MMA reading sQ has retired
            lm.store(O, lm.cast(o * (1.0 / l_i)[:, None], lm.bf16), coords=(bh, q0, 0))
