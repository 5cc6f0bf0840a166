"""The clustered GEMMs under compute-sanitizer (issue #19's deferred cluster wait): each kernel
built by bench/sanitize_clusters.sh runs once on one GEMM-contract shape and is checked against
the oracle; run this file under `compute-sanitizer --tool racecheck|synccheck|memcheck`.
   SANITIZE_DIR=.carry/sanitize python3 bench/sanitize_clusters.py"""
import os, sys
import torch
sys.path.insert(0, "kernels/gemm")
import contract as C
import cake

root = os.environ.get("SANITIZE_DIR", ".carry/sanitize")
bad = 0
for name in sorted(os.listdir(root)):
    parts = name.split("_")[-3:]
    if not (os.path.isdir(os.path.join(root, name)) and all(p.isdigit() for p in parts)):
        print("skipped", name, flush=True)
        continue
    M, N, K = map(int, name.split("_")[-3:])
    g = torch.Generator(device="cuda"); g.manual_seed(M + N + K)
    ins = C.make_inputs({"M": M, "N": N, "K": K}, "normal", g)
    out = torch.full((M, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    cake.load_kernel(os.path.join(root, name))(**ins, C=out)
    torch.cuda.synchronize()
    ok = torch.allclose(out.float(), C.oracle(**ins)["C"].float(), rtol=0.02, atol=0.02)
    bad += not ok
    print(name, "correct" if ok else "WRONG", flush=True)
sys.exit(1 if bad else 0)
