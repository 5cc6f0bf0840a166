"""Python side of chain.contract.toml: inputs, the oracle and the torch baseline for
O = bf16(A · B1ᵀ) · B2ᵀ."""

from __future__ import annotations

import torch


def make_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """A (M, 128), B1 (64, 128), B2 (128, 64) in bf16, each scaled by its K^-1/4 so each
    product's sums have variance about 1 (an absolute tolerance stays meaningful)."""
    M = shape["M"]
    g = dict(device="cuda", generator=generator)

    def draw(rows: int, cols: int) -> torch.Tensor:  # cols is the K the tensor is summed over
        if distribution == "normal":
            x = torch.randn(rows, cols, **g)
        elif distribution == "uniform":
            x = torch.rand(rows, cols, **g) * 2 - 1
        elif distribution == "ties":
            # Small integers: exact in bf16 and in the f32 sums; S's rounding to bf16 is exact too
            # while |S| <= 256.
            return torch.randint(-1, 2, (rows, cols), **g).to(torch.bfloat16)
        else:
            raise ValueError(f"unknown distribution {distribution!r}")
        return (x * cols ** -0.25).to(torch.bfloat16)

    return {"A": draw(M, 128), "B1": draw(64, 128), "B2": draw(128, 64)}


def oracle(A: torch.Tensor, B1: torch.Tensor, B2: torch.Tensor) -> dict:
    """f64 products of the bf16 inputs, the intermediate rounded to bf16 as the kernel does."""
    P = (A.double() @ B1.double().T).to(torch.bfloat16)
    return {"O": (P.double() @ B2.double().T).float()}


def torch_chain(A: torch.Tensor, B1: torch.Tensor, B2: torch.Tensor, O: torch.Tensor) -> None:
    """The same two products through cuBLAS: bf16 intermediate, f32 output."""
    P = torch.matmul(A, B1.T)
    torch.matmul(P.float(), B2.float().T, out=O)
