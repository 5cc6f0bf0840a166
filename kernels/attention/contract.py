"""Python side of the attention contracts (issue #17): inputs, the f32 oracle and the torch
SDPA baselines for O = softmax(Q·Kᵀ / √D) · V.

Q and O are (BH, S, D), K and V (BHKV, S, D), bf16: the B·H heads flattened, query head bh
reading key/value head bh // (BH / BHKV) (grouped-query attention; with B folded in this is
the same head as torch's `enable_gqa`). The two contracts differ only in the mask:
attention.contract.toml is non-causal, attention_causal.contract.toml causal (query i attends
to keys 0..i, the top-left alignment torch uses when the query and key lengths are equal).

Distributions (the contract runner's built-in names):
  normal        N(0, 1) for Q, K and V.
  uniform       U(-1, 1).
  heavy_tailed  Q and K N(0, 1)·8: scores up to ~±500 in base e, so a softmax without the
                running max overflows, and most rows are dominated by one key.
  ties          K all equal within each head (every score of a row ties), V N(0, 1): the
                softmax is uniform over the keys a query sees.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def _draw(n: int, S: int, D: int, distribution: str, g: torch.Generator, *, key: bool) -> torch.Tensor:
    kw = dict(device=g.device, generator=g)
    if distribution == "normal":
        x = torch.randn(n, S, D, **kw)
    elif distribution == "uniform":
        x = torch.rand(n, S, D, **kw) * 2 - 1
    elif distribution == "heavy_tailed":
        x = torch.randn(n, S, D, **kw) * 8
    elif distribution == "ties":
        x = torch.randn(n, 1, D, **kw).expand(n, S, D) if key else torch.randn(n, S, D, **kw)
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return x.to(torch.bfloat16).contiguous()


def make_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    BH, BHKV, S, D = shape["BH"], shape["BHKV"], shape["S"], shape["D"]
    if BH % BHKV:
        raise ValueError(f"BH = {BH} is not a multiple of BHKV = {BHKV}")
    q = _draw(BH, S, D, distribution, generator, key=False)
    k = _draw(BHKV, S, D, distribution, generator, key=True)
    v_dist = "normal" if distribution in ("ties", "heavy_tailed") else distribution
    v = _draw(BHKV, S, D, v_dist, generator, key=False)
    return {"Q": q, "K": k, "V": v}


def _oracle(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool) -> dict:
    """f32 attention from the bf16 inputs, one head at a time (an S × S score matrix per head),
    rounded once to bf16 like the kernel's output."""
    BH, S, D = Q.shape
    group = BH // K.shape[0]
    scale = 1.0 / math.sqrt(D)
    out = torch.empty_like(Q)
    mask = None
    if causal:
        mask = torch.ones(S, S, dtype=torch.bool, device=Q.device).tril()
    for bh in range(BH):
        q = Q[bh].float()
        k = K[bh // group].float()
        v = V[bh // group].float()
        s = (q @ k.T) * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        out[bh] = (torch.softmax(s, dim=-1) @ v).to(torch.bfloat16)
    return {"O": out}


def oracle(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> dict:
    return _oracle(Q, K, V, causal=False)


def oracle_causal(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor) -> dict:
    return _oracle(Q, K, V, causal=True)


def _sdpa(Q, K, V, O, causal: bool, backend=None) -> None:
    q, k, v = Q.unsqueeze(0), K.unsqueeze(0), V.unsqueeze(0)
    gqa = Q.shape[0] != K.shape[0]
    if backend is None:
        O.copy_(F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)[0])
        return
    from torch.nn.attention import sdpa_kernel
    with sdpa_kernel(backend):
        O.copy_(F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)[0])


def torch_sdpa(Q, K, V, O) -> None:
    """torch's scaled_dot_product_attention, the backend torch picks (the output copied into
    O: one extra pass over O, ~1 % of the time at the bench shapes)."""
    _sdpa(Q, K, V, O, causal=False)


def torch_sdpa_causal(Q, K, V, O) -> None:
    _sdpa(Q, K, V, O, causal=True)


def torch_sdpa_cudnn(Q, K, V, O) -> None:
    """torch SDPA forced to cuDNN's fused attention."""
    from torch.nn.attention import SDPBackend
    _sdpa(Q, K, V, O, causal=False, backend=SDPBackend.CUDNN_ATTENTION)


def torch_sdpa_cudnn_causal(Q, K, V, O) -> None:
    from torch.nn.attention import SDPBackend
    _sdpa(Q, K, V, O, causal=True, backend=SDPBackend.CUDNN_ATTENTION)


def torch_sdpa_flash(Q, K, V, O) -> None:
    """torch SDPA forced to its FlashAttention-2 kernel."""
    from torch.nn.attention import SDPBackend
    _sdpa(Q, K, V, O, causal=False, backend=SDPBackend.FLASH_ATTENTION)


def torch_sdpa_flash_causal(Q, K, V, O) -> None:
    from torch.nn.attention import SDPBackend
    _sdpa(Q, K, V, O, causal=True, backend=SDPBackend.FLASH_ATTENTION)
