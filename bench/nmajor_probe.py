"""A numeric check of wgmma's N-major `b` with `a` in registers (issue #17 item 2): the
gemm-chain example with its second weight stored (K, N), prebuilt by the session
(.carry/nmajor/chain), against torch on the same inputs: O = bf16(A · B1ᵀ) · B2. Prints the
largest error against an f32 reference and writes $OUT/nmajor_probe.json."""
import glob, json, os
import torch
import cake

dev = torch.device("cuda")
k = cake.load_kernel(glob.glob(os.environ.get("CHAIN", ".carry/nmajor/chain") + "/*.launch.json")[0])
g = torch.Generator(device=dev); g.manual_seed(17)
M, K1, N1, N2 = 4096, 128, 64, 128
A = (torch.randn(M, K1, device=dev, generator=g) * K1 ** -0.25).to(torch.bfloat16)
B1 = (torch.randn(N1, K1, device=dev, generator=g) * K1 ** -0.25).to(torch.bfloat16)
B2 = (torch.randn(N1, N2, device=dev, generator=g) * N1 ** -0.5).to(torch.bfloat16)   # (K, N)
O = torch.full((M, N2), float("nan"), device=dev)
k(A=A, B1=B1, B2=B2, O=O); torch.cuda.synchronize()
P = (A.float() @ B1.float().T).to(torch.bfloat16)
ref = P.float() @ B2.float()
err = float((O - ref).abs().nan_to_num(1e9).max())
ok = bool(torch.allclose(O, ref, rtol=2e-2, atol=2e-2))
rec = {"max_abs_err": err, "correct": ok, "M": M, "K1": K1, "N1": N1, "N2": N2}
print(json.dumps(rec))
json.dump(rec, open(f"{os.environ.get('OUT', '.')}/nmajor_probe.json", "w"))
