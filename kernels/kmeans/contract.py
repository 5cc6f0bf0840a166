"""Python side of the k-means contracts (assign, assign_d, update): inputs, the oracles, the
distance score and the flash-kmeans baselines."""

from __future__ import annotations

import torch

ROWS = 16384  # rows per chunk of the distance matrices (bounds the oracle's memory)


def make_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """X (B, N, D) and Cen (B, K, D) in bf16, and their squared norms in f32 computed from the
    bf16 values, as a caller of an assign kernel passes them. D is the shape's (assign_d) or 128
    (assign, whose kernel fixes it)."""
    B, N, K, D = shape["B"], shape["N"], shape["K"], shape.get("D", 128)
    g = dict(device="cuda", generator=generator)
    if distribution == "normal":
        x = torch.randn(B, N, D, **g)
        c = torch.randn(B, K, D, **g)
    elif distribution == "clustered":
        # Points near their centroid: small gaps between the nearest and the runner-up.
        c = torch.randn(B, K, D, **g) * 3
        pick = torch.randint(0, K, (B, N), **g)
        x = torch.gather(c, 1, pick[..., None].expand(B, N, D)) + 0.1 * torch.randn(B, N, D, **g)
    elif distribution == "ties":
        # Every centroid appears twice: exact ties, which the lowest index (or either) may win.
        half = torch.randn(B, (K + 1) // 2, D, **g)
        c = torch.cat([half, half], dim=1)[:, :K]
        x = torch.randn(B, N, D, **g)
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    x, c = x.to(torch.bfloat16).contiguous(), c.to(torch.bfloat16).contiguous()
    return {
        "X": x,
        "Cen": c,
        "XSQ": x.float().square().sum(-1).contiguous(),
        "CSQ": c.float().square().sum(-1).contiguous(),
    }


def _distances(X, Cen, XSQ, CSQ, b: int, n0: int) -> torch.Tensor:
    """f32 distances of rows n0.. of batch b to every centroid (‖x‖² + ‖c‖² − 2·x·c)."""
    xb = X[b, n0:n0 + ROWS].float()
    return XSQ[b, n0:n0 + ROWS, None] + CSQ[b][None, :] - 2.0 * (xb @ Cen[b].float().T)


def oracle(X, Cen, XSQ, CSQ) -> dict:
    """The nearest centroid of every row, in f32 from the bf16 inputs (the lowest index on ties)."""
    B, N = XSQ.shape
    ids = torch.empty(B, N, dtype=torch.int32, device=X.device)
    for b in range(B):
        for n0 in range(0, N, ROWS):
            ids[b, n0:n0 + ROWS] = _distances(X, Cen, XSQ, CSQ, b, n0).argmin(dim=1).int()
    return {"IDS": ids}


def assigned_distance(X, Cen, XSQ, CSQ, index) -> torch.Tensor:
    """The distance from each row to the centroid `index` names (indices already in [0, K))."""
    B, N = XSQ.shape
    out = torch.empty(B, N, dtype=torch.float32, device=X.device)
    for b in range(B):
        for n0 in range(0, N, ROWS):
            d = _distances(X, Cen, XSQ, CSQ, b, n0)
            out[b, n0:n0 + ROWS] = d.gather(1, index[b, n0:n0 + ROWS].long()[:, None])[:, 0]
    return out


def flash_kmeans_assign(X, Cen, XSQ, CSQ, IDS) -> None:
    """flash-kmeans 0.3.1's Triton assign kernel, given the same norms."""
    from flash_kmeans.assign_euclid_triton import euclid_assign_triton

    euclid_assign_triton(X, Cen, XSQ, IDS, CSQ)


# --- Centroid update (update.contract.toml) -------------------------------------------------

def make_update_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """X (B, N, D) bf16 (D = 128 unless the shape names it), the current centroids Cen (B, K, D)
    bf16 (the update API passes them; they fix K) and unsorted ids (B, N) i32 in [0, K): spread
    evenly ("uniform"), 90% of the rows on four centroids ("clustered": contention on the same
    sums), or K·u⁴ for uniform u ("heavy_tailed": a few large clusters and many empty ones, which
    must come out as zero sums and counts)."""
    B, N, K, D = shape["B"], shape["N"], shape["K"], shape.get("D", 128)
    g = dict(device="cuda", generator=generator)
    x = torch.randn(B, N, D, **g).to(torch.bfloat16).contiguous()
    c = torch.randn(B, K, D, **g).to(torch.bfloat16).contiguous()
    if distribution == "uniform":
        ids = torch.randint(0, K, (B, N), **g)
    elif distribution == "clustered":
        hot = torch.randint(0, min(K, 4), (B, N), **g)
        ids = torch.where(torch.rand(B, N, **g) < 0.9, hot, torch.randint(0, K, (B, N), **g))
    elif distribution == "heavy_tailed":
        ids = (K * torch.rand(B, N, **g) ** 4).long().clamp(max=K - 1)
    else:
        raise ValueError(f"unknown distribution {distribution!r}")
    return {"X": x, "Cen": c, "IDS": ids.to(torch.int32).contiguous()}


def update_oracle(X, Cen, IDS) -> dict:
    """Per-cluster f32 sums of the bf16 rows (index_add_) and the cluster sizes (bincount)."""
    B, N, D = X.shape
    K = Cen.shape[1]
    flat = (IDS.long() + K * torch.arange(B, device=X.device)[:, None]).reshape(-1)
    sums = torch.zeros(B * K, D, dtype=torch.float32, device=X.device)
    sums.index_add_(0, flat, X.reshape(-1, D).float())
    counts = torch.bincount(flat, minlength=B * K).to(torch.int32)
    return {"SUMS": sums.reshape(B, K, D), "COUNTS": counts.reshape(B, K)}


def flash_kmeans_update(X, Cen, IDS, SUMS, COUNTS) -> None:
    """flash-kmeans 0.3.1's update from unsorted ids up to sums and counts: its zeroed
    accumulators and its atomic Triton kernel, launched as `triton_centroid_update_euclid`
    launches it. The division into centroids that follows there is left out here, as it is
    of the Cake kernel (the same element-wise pass over B·K·D for both)."""
    from flash_kmeans.centroid_update_triton import _centroid_update_kernel

    B, N, D = X.shape
    K = Cen.shape[1]
    SUMS.zero_()
    COUNTS.zero_()
    _centroid_update_kernel[(B * N,)](
        X, IDS, SUMS, COUNTS,
        X.stride(0), X.stride(1), X.stride(2),
        SUMS.stride(0), SUMS.stride(1), SUMS.stride(2),
        COUNTS.stride(0), COUNTS.stride(1),
        B, N, D, K,
        BLOCK_D=128,
    )
