"""PyTorch integration without a GPU: outputs allocated from the launch metadata, Cake kernels as
torch.library custom operators that torch.compile(fullgraph=True) traces on fake and meta
tensors, source strings for check/lower/compile, and cake.autotune's search and per-shape cache
(with a stand-in timer: the real one needs a GPU, see test_gpu.py)."""

import os
import shutil
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(__file__))

import cake  # noqa: E402
from cake import LaunchError  # noqa: E402
from test_package import GEMM, GEMM_META, FakeTensor, write_kernel  # noqa: E402

torch = pytest.importorskip("torch", reason="PyTorch is in .ci/requirements.txt")


@pytest.fixture
def gemm(tmp_path):
    return cake.load_kernel(write_kernel(tmp_path))


# ---- outputs allocated for the caller -----------------------------------------------------------


def test_outputs_are_the_write_only_tensors(gemm):
    assert gemm.output_names == ["C"]


def test_output_specs_bind_extents_from_the_inputs(gemm):
    specs = gemm.output_specs(FakeTensor((100, 64)), FakeTensor((300, 64)), 1.0)
    assert specs == {"C": ((100, 300), "bfloat16")}
    # By name, and an output given is not allocated.
    assert gemm.output_specs(A=FakeTensor((8, 64)), B=FakeTensor((16, 64)), alpha=1.0) == {"C": ((8, 16), "bfloat16")}
    assert gemm.output_specs(FakeTensor((8, 64)), FakeTensor((16, 64)), 1.0, C=FakeTensor((8, 16))) == {}


def test_output_specs_errors(gemm):
    with pytest.raises(LaunchError, match="extent K is 64 in one tensor and 32 in `B`"):
        gemm.output_specs(FakeTensor((8, 64)), FakeTensor((16, 32)), 1.0)
    with pytest.raises(LaunchError, match="cannot allocate `C`: its extent N is in no tensor given"):
        gemm.output_specs(A=FakeTensor((8, 64)), alpha=1.0)
    with pytest.raises(LaunchError, match="takes 3 inputs .* got 4 positional"):
        gemm.output_specs(1, 2, 3, 4)
    with pytest.raises(LaunchError, match="unknown argument `D`"):
        gemm.output_specs(D=1)


def test_run_refuses_before_allocating_when_no_tensor_is_given(gemm):
    with pytest.raises(LaunchError, match="cannot allocate `C`: its extent M is in no tensor given"):
        gemm.run(alpha=1.0)


# ---- torch.library custom operators -------------------------------------------------------------

_ops = iter(range(1_000_000))


def op_for(kernel):
    # Operator names are process-global: one per test.
    return cake.torch_op(kernel, name=f"gemm_test_{next(_ops)}")


def test_the_operator_schema_is_the_kernels_inputs_and_outputs(gemm):
    op = op_for(gemm)
    schema = str(getattr(torch.ops.cake, op._name).default._schema)
    assert schema.endswith("(Tensor A, Tensor B, float alpha) -> Tensor"), schema


def test_fake_implementation_on_meta_and_fake_tensors(gemm):
    op = op_for(gemm)
    A = torch.empty(100, 64, device="meta", dtype=torch.bfloat16)
    B = torch.empty(200, 64, device="meta", dtype=torch.bfloat16)
    C = op(A, B, 2.0)
    assert C.shape == (100, 200) and C.dtype == torch.bfloat16 and C.device.type == "meta"
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(33, 64, device="cuda", dtype=torch.bfloat16)
        b = torch.empty(17, 64, device="cuda", dtype=torch.bfloat16)
        c = op(a, b, 1.0)
    assert c.shape == (33, 17) and c.device.type == "cuda"


def test_torch_compile_fullgraph_traces_through_the_operator(gemm):
    from torch._dynamo.testing import CompileCounterWithBackend

    op = op_for(gemm)
    counter = CompileCounterWithBackend("eager")
    f = torch.compile(lambda A, B: (op(A, B, 1.5).float() * 2).sum(dim=1), fullgraph=True, backend=counter)
    A = torch.empty(64, 64, device="meta", dtype=torch.bfloat16)
    B = torch.empty(48, 64, device="meta", dtype=torch.bfloat16)
    out = f(A, B)
    assert out.shape == (64,)
    assert counter.frame_count == 1, "one graph, no break at the Cake call"
    graph = counter.graphs[0]
    targets = [str(n.target) for n in graph.graph.nodes if n.op == "call_function"]
    assert any(op._name in t for t in targets), targets


def test_torch_compile_dynamic_shapes(gemm):
    from torch._dynamo.testing import CompileCounterWithBackend

    op = op_for(gemm)
    counter = CompileCounterWithBackend("eager")
    f = torch.compile(lambda A, B: op(A, B, 1.0), fullgraph=True, dynamic=True, backend=counter)
    for m, n in ((16, 32), (40, 24), (7, 9)):
        out = f(torch.empty(m, 64, device="meta", dtype=torch.bfloat16),
                torch.empty(n, 64, device="meta", dtype=torch.bfloat16))
        assert out.shape == (m, n)
    assert counter.frame_count == 1, "one graph for every shape"


def test_read_write_tensors_are_declared_mutated(tmp_path):
    meta = dict(GEMM_META, tensors=[dict(t) for t in GEMM_META["tensors"]])
    meta["tensors"][2]["access"] = "readwrite"
    k = cake.load_kernel(write_kernel(tmp_path, meta))
    assert k.output_names == []
    op = cake.torch_op(k, name=f"gemm_rw_{next(_ops)}")
    schema = str(getattr(torch.ops.cake, op._name).default._schema)
    assert "Tensor(a2!) C" in schema and schema.endswith("-> ()"), schema


def test_bad_operator_names(gemm):
    with pytest.raises(ValueError, match="not a valid operator name"):
        cake.torch_op(gemm, name="has space")
    with pytest.raises(ValueError, match="not a valid operator name"):
        cake.torch_op(gemm, namespace="def")


# ---- source strings -----------------------------------------------------------------------------


def test_check_and_lower_a_source_string():
    text = open(GEMM, encoding="utf-8").read()
    doc = cake.check(source=text)
    assert doc["errors"] == 0 and doc["kernels"] == ["gemm"] and doc["file"] == "<string>"
    bad = text.replace("STAGES = 3", "STAGES = 300")
    doc = cake.check("mine.py", source=bad)
    assert doc["errors"] > 0 and doc["findings"][0]["span"]["file"] == "mine.py"
    lowered = cake.lower(source=text, target="sm_90a")
    assert lowered["kernels"][0]["kernel"] == "gemm"
    assert cake.lower(GEMM, "sm_90a", source=text) == cake.lower(GEMM, "sm_90a")
    with pytest.raises(TypeError, match="path, or its text as source="):
        cake.check()
    with pytest.raises(TypeError, match="exact target"):
        cake.lower(source=text)


def test_a_source_string_has_the_file_size_limit():
    with pytest.raises(ValueError, match="limited to 4194304 bytes"):
        cake.check(source="#" * (4 << 20) + "\n")


# ---- knobs and autotune -------------------------------------------------------------------------


def test_knobs_are_the_module_level_integer_constants():
    assert cake.knobs(GEMM) == {"BM": 128, "BN": 256, "BK": 64, "STAGES": 3}
    text = open(GEMM, encoding="utf-8").read()
    edited = cake.with_knobs(text, {"STAGES": 4, "BN": 128})
    assert cake.knobs(source=edited) == {"BM": 128, "BN": 128, "BK": 64, "STAGES": 4}
    assert edited.replace("STAGES = 4", "STAGES = 3").replace("128, 64", "256, 64", 1) == text
    with pytest.raises(ValueError, match="no knob `XX` in the schedule \\(knobs: BM, BN, BK, STAGES\\)"):
        cake.with_knobs(text, {"XX": 1})


def test_specialize_sets_a_fixed_extent_that_knobs_leave_out():
    text = open(os.path.join(ROOT, "examples", "rmsnorm_sm90.py"), encoding="utf-8").read()
    assert "H" not in cake.knobs(source=text)  # a tensor type's extent: not a tuning knob
    edited = cake.specialize(text, H=5000)
    assert "H = 5000 " in edited and edited.replace("H = 5000 ", "H = 4096 ", 1) == text
    # The specialised schedule is a clean kernel of that width.
    checked = cake.check(source=edited, target="sm_90a")
    assert checked["errors"] == 0, checked
    with pytest.raises(ValueError, match="no module-level integer constant `W`"):
        cake.specialize(text, W=1)


def needs_nvcc():
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no CUDA toolchain (scripts/toolchain.sh installs one)")


def fake_gemm_args():
    return (FakeTensor((256, 128)), FakeTensor((512, 128)), FakeTensor((256, 512)))


def test_autotune_picks_the_fastest_variant_and_caches_it_per_shape(tmp_path):
    needs_nvcc()
    timed = []

    def timer(kernel, args, kwargs, warmup, reps):
        # A stand-in cost: fewer stages and a narrower tile are "faster" here.
        text = open(os.path.join(os.path.dirname(kernel.path), "gemm.cu"), encoding="utf-8").read()
        timed.append(kernel.path)
        return float(kernel.meta["dynamic_smem"]) / 1000 + len(text) * 1e-9

    space = {"STAGES": [2, 3, 4], "BN": [128, 256, 512]}
    tuned = cake.autotune(GEMM, "gemm", fake_gemm_args(), knobs=space, target="sm_90a",
                          cache_dir=tmp_path, check=False, timer=timer)
    assert not tuned.cached
    outcomes = {(t.knobs["STAGES"], t.knobs["BN"]): t.outcome for t in tuned.trials}
    assert len(outcomes) == 9
    rejected = [t for t in tuned.trials if t.outcome == "rejected"]
    assert rejected and all(t.detail.startswith("CAKE-") for t in rejected), tuned.trials
    ok = [t for t in tuned.trials if t.outcome == "ok"]
    assert tuned.us == min(t.us for t in ok)
    assert tuned.knobs == min(ok, key=lambda t: t.us).knobs
    assert cake.knobs(source=tuned.source)["STAGES"] == tuned.knobs["STAGES"]
    assert len(timed) == len(ok)

    # Same shapes: the cached winner, nothing checked or timed again.
    again = cake.autotune(GEMM, "gemm", fake_gemm_args(), knobs=space, target="sm_90a",
                          cache_dir=tmp_path, check=False, timer=timer)
    assert again.cached and again.knobs == tuned.knobs and again.us == tuned.us
    assert again.kernel.path == tuned.kernel.path and len(timed) == len(ok)
    # Another shape is another entry.
    other = (FakeTensor((128, 128)), FakeTensor((512, 128)), FakeTensor((128, 512)))
    third = cake.autotune(GEMM, "gemm", other, knobs=space, target="sm_90a",
                          cache_dir=tmp_path, check=False, timer=timer)
    assert not third.cached and third.cache_file != tuned.cache_file


def test_autotune_default_space_is_each_knob_alone_over_its_neighbours(tmp_path, monkeypatch):
    from cake import tuning

    space = tuning._space({"BM": 128, "STAGES": 3}, None)
    assert space[0] == {"BM": 128, "STAGES": 3}
    assert {"BM": 64, "STAGES": 3} in space and {"BM": 256, "STAGES": 3} in space
    assert {"BM": 128, "STAGES": 2} in space and {"BM": 128, "STAGES": 4} in space
    assert all(sum(v != {"BM": 128, "STAGES": 3}[k] for k, v in s.items()) <= 1 for s in space)
    with pytest.raises(ValueError, match="no knob XX"):
        tuning._space({"BM": 128}, {"XX": [1]})
    with pytest.raises(ValueError, match="at most 256"):
        tuning._space({"A": 1, "B": 1, "C": 1}, {"A": range(10), "B": range(10), "C": range(10)})


def test_autotune_with_no_variant_that_builds_raises(tmp_path):
    needs_nvcc()
    # Every variant, the one as written included, needs more shared memory than the GPU has.
    text = open(GEMM, encoding="utf-8").read().replace("STAGES = 3", "STAGES = 300")
    with pytest.raises(cake.CompileError, match="no variant of `gemm` built and ran"):
        cake.autotune(None, "gemm", fake_gemm_args(), source=text, knobs={"STAGES": [400, 500]},
                      target="sm_90a", cache_dir=tmp_path, check=False, timer=lambda *a: 1.0)


def test_autotune_restores_what_the_kernel_writes(tmp_path):
    needs_nvcc()
    # The timer's launches write C (here: the stand-in adds 1); every variant must start from,
    # and the caller get back, the C it passed.
    C = torch.zeros(256, 512, dtype=torch.bfloat16)
    seen = []

    def timer(kernel, args, kwargs, warmup, reps):
        seen.append(float(args[2].sum()))
        args[2].add_(1)
        return 1.0

    cake.autotune(GEMM, "gemm", (FakeTensor((256, 128)), FakeTensor((512, 128)), C),
                  knobs={"STAGES": [2, 3]}, target="sm_90a", cache_dir=tmp_path, check=False, timer=timer)
    assert seen and all(s == 0.0 for s in seen), seen
    assert float(C.sum()) == 0.0


def test_scalars_given_as_0d_tensors_key_the_cache_by_value():
    from cake import tuning

    assert tuning._describe(torch.tensor(2.5)) == ["scalar", "2.5"]
    assert tuning._describe(torch.tensor(2.5)) != tuning._describe(torch.tensor(3.5))
    import numpy as np

    assert tuning._describe(np.float32(1.5)) == ["scalar", "1.5"]
    assert tuning._describe(FakeTensor((4, 8)))[0] == "tensor"
