"""Python side of gemm.contract.toml: inputs, the oracle and the baseline for C = A · Bᵀ."""

from __future__ import annotations

import torch


def make_inputs(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """A (M, K) and B (N, K) in bf16, scaled by K^-1/4 so every dot product of K terms has
    variance about 1 and C stays O(1) whatever K is (an absolute tolerance stays meaningful)."""
    M, N, K = shape["M"], shape["N"], shape["K"]
    scale = K ** -0.25

    def draw(rows: int) -> torch.Tensor:
        g = dict(device=generator.device, generator=generator)  # the harness: CUDA
        if distribution == "normal":
            x = torch.randn(rows, K, **g)
        elif distribution == "uniform":
            x = torch.rand(rows, K, **g) * 2 - 1
        elif distribution == "heavy_tailed":
            # Student's t with 3 degrees of freedom: normal / sqrt(chi2_3 / 3).
            chi2 = torch.randn(3, rows, K, **g).square().sum(0) / 3
            x = torch.randn(rows, K, **g) / chi2.sqrt()
            x = x.clamp(-64, 64)
        elif distribution == "ties":
            # Small integers: exact in bf16, many equal products; sums stay exact in f32.
            return torch.randint(-2, 3, (rows, K), **g).to(torch.bfloat16)
        else:
            raise ValueError(f"unknown distribution {distribution!r}")
        return (x * scale).to(torch.bfloat16)

    return {"A": draw(M), "B": draw(N)}


def oracle(A: torch.Tensor, B: torch.Tensor) -> dict:
    """f64 product of the bf16 inputs, rounded once to bf16 like the kernel's epilogue."""
    C = (A.double() @ B.double().T).to(torch.bfloat16)
    return {"C": C}


def torch_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> None:
    """cuBLAS through torch, writing the preallocated output."""
    torch.matmul(A, B.T, out=C)


# --- C = A · B with B stored (K, N) (gemm_nn.contract.toml) ---------------------------------

def make_inputs_nn(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """As make_inputs, B drawn (N, K) and stored transposed, (K, N) row-major."""
    ins = make_inputs(shape, distribution, generator)
    return {"A": ins["A"], "B": ins["B"].T.contiguous()}


def oracle_nn(A: torch.Tensor, B: torch.Tensor) -> dict:
    """f64 product of the bf16 inputs, rounded once to bf16."""
    return {"C": (A.double() @ B.double()).to(torch.bfloat16)}


def torch_matmul_nn(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> None:
    """cuBLAS through torch (B as stored, (K, N)), writing the preallocated output."""
    torch.matmul(A, B, out=C)


# --- C = Aᵀ · B with A stored (K, M) and B stored (K, N) (gemm_tn.contract.toml) -------------

def make_inputs_tn(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """As make_inputs, both drawn K-minor and stored transposed: A (K, M), B (K, N) row-major
    (a weight gradient's layout: dW = Xᵀ · dY with X and dY stored one row per token)."""
    ins = make_inputs(shape, distribution, generator)
    return {"A": ins["A"].T.contiguous(), "B": ins["B"].T.contiguous()}


def oracle_tn(A: torch.Tensor, B: torch.Tensor) -> dict:
    """f64 product of the bf16 inputs, rounded once to bf16."""
    return {"C": (A.double().T @ B.double()).to(torch.bfloat16)}


def torch_matmul_tn(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor) -> None:
    """cuBLAS through torch (A and B as stored; the transpose is a flag to cuBLAS, no copy)."""
    torch.matmul(A.T, B, out=C)


# --- Row-wise scaled FP8: C = (A · Bᵀ) · sa[:, None] · sb[None, :] (gemm_fp8.contract.toml) ----

E4M3_MAX = 448.0


def make_inputs_fp8(shape: dict, distribution: str, generator: torch.Generator) -> dict:
    """The bf16 contract's draws (products O(1) whatever K is), each row times its own
    magnitude in [1/4, 4) so that the rows' scales differ (a kernel that reads a scale by the
    wrong index then fails), quantized per row as a serving stack quantizes activations and
    weights: each row scaled so its largest magnitude is e4m3's largest finite value, rounded to
    e4m3, and its scale kept in f32."""
    x = make_inputs(shape, distribution, generator)

    def quantize(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        rows = t.shape[0]
        spread = torch.rand(rows, device=generator.device, generator=generator) * 4 - 2
        t = t.float() * torch.exp2(spread)[:, None]
        scale = t.abs().amax(dim=1).clamp(min=1e-12) / E4M3_MAX
        q = (t / scale[:, None]).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
        return q, scale.contiguous()

    A, SA = quantize(x["A"])
    B, SB = quantize(x["B"])
    return {"A": A, "B": B, "SA": SA, "SB": SB}


def oracle_fp8(A: torch.Tensor, B: torch.Tensor, SA: torch.Tensor, SB: torch.Tensor) -> dict:
    """f64 product of the dequantized e4m3 inputs, rounded once to bf16."""
    a = A.double() * SA.double()[:, None]
    b = B.double() * SB.double()[:, None]
    return {"C": (a @ b.T).to(torch.bfloat16)}


def torch_scaled_mm(A, B, SA, SB, C) -> None:
    """torch._scaled_mm with row-wise scales (f32 accumulation promoted as cuBLAS does by
    default: `use_fast_accum=False`), writing the preallocated output."""
    torch._scaled_mm(A, B.T, scale_a=SA[:, None], scale_b=SB[None, :],
                     out_dtype=torch.bfloat16, out=C)


def torch_scaled_mm_fast(A, B, SA, SB, C) -> None:
    """As torch_scaled_mm with `use_fast_accum=True`: the tensor cores' accumulation over the
    whole of K, no promotion (the faster, less accurate mode)."""
    torch._scaled_mm(A, B.T, scale_a=SA[:, None], scale_b=SB[None, :],
                     out_dtype=torch.bfloat16, use_fast_accum=True, out=C)
