"""Pure logic of the evaluation worker (`python3 -m cake.worker`, protocol cake.worker/v0).

Every module here imports without torch: the ones that need it (input sampling, timing)
take the torch module as an argument, so the policies, statistics and request validation
are testable on a CPU with numpy. `torch_backend` is the GPU side and imports torch when
its backend is constructed.
"""
