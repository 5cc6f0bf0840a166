"""cake.family (docs/dispatch.md) on the CPU: a family file routes each call by the shapes of its
tensors; out-of-domain shapes run the fallback (torch here, on CPU tensors); an in-domain shape
builds its route's schedule specialised for that width."""

import os
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

import cake  # noqa: E402

torch = pytest.importorskip("torch", reason="PyTorch is in .ci/requirements.txt")
RMSNORM = os.path.join(ROOT, "kernels", "rows", "rmsnorm.family.toml")


class Shaped:
    def __init__(self, *shape):
        self.shape = shape


def test_calls_are_routed_by_the_tensors_shapes():
    fam = cake.family(RMSNORM)
    assert [r["name"] for r in fam.routes] == ["rows"]
    assert fam.binding({"X": Shaped(3, 4096), "W": Shaped(4096), "Y": Shaped(3, 4096)}) == (3, 4096)
    assert fam.route_of((3, 4096)) == "rows"
    assert fam.route_of((65536, 16384)) == "rows"
    # Outside the contract's domain: H not a multiple of 8, past 16384, no rows.
    assert fam.route_of((3, 1000)) is None
    assert fam.route_of((3, 20000)) is None
    assert fam.route_of((0, 4096)) is None


def test_an_out_of_domain_shape_runs_the_fallback_into_the_outputs():
    fam = cake.family(RMSNORM)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5, 1000, generator=g).to(torch.bfloat16)
    w = torch.randn(1000, generator=g).to(torch.bfloat16)
    y = torch.zeros_like(x)
    fam(X=x, W=w, Y=y, eps=1e-6)
    want = torch.nn.functional.rms_norm(x, (1000,), w, 1e-6)
    assert torch.equal(y, want)
    assert fam.compile_seconds == {}  # nothing was built for it


def needs_nvcc():
    import shutil
    if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
        pytest.skip("no CUDA toolchain (scripts/toolchain.sh installs one)")


def test_an_in_domain_shape_builds_its_route_for_that_width(tmp_path):
    needs_nvcc()
    fam = cake.family(RMSNORM, target="sm_90a", cache_dir=tmp_path)
    kernel = fam._decide((7, 5000))
    assert isinstance(kernel, cake.Kernel)
    # Built with H = 5000: the tensors' fixed extent in the launch metadata.
    shapes = {t["name"]: t["dims"] for t in kernel.meta["tensors"]}
    assert shapes["X"] == ["R", 5000], shapes
    assert list(fam.compile_seconds) == [("rows", ("H", 5000))]
    # The same width again is the same build.
    assert fam._decide((9, 5000)) is kernel


def test_a_bad_family_file_names_every_error(tmp_path):
    bad = tmp_path / "bad.family.toml"
    rows = os.path.join(ROOT, "kernels", "rows")
    bad.write_text(
        f'name = "bad"\ncontract = "{rows}/rmsnorm.contract.toml"\n'
        '[[route]]\nname = "a"\nwhen = { D = { max = 64 } }\n'
        f'[fallback]\npython = "{rows}/contract.py:rms_norm_into"\n'
    )
    with pytest.raises(ValueError, match="`D` is not a dimension of the contract"):
        cake.family(bad)


def carded_family(tmp_path, cards='["H100"]'):
    rows = os.path.join(ROOT, "kernels", "rows")
    f = tmp_path / "carded.family.toml"
    f.write_text(
        f'name = "carded"\ncontract = "{rows}/rmsnorm.contract.toml"\n'
        f'[[route]]\nname = "narrow"\ncards = {cards}\nwhen = {{ H = {{ max = 4096 }} }}\n'
        '[[route]]\nname = "rows"\n'
        f'[fallback]\npython = "{rows}/contract.py:rms_norm_into"\n'
    )
    return f


def test_a_route_that_names_cards_serves_only_those_gpus(tmp_path):
    fam = cake.family(carded_family(tmp_path))
    assert fam.route_of((3, 4096), "NVIDIA H100 80GB HBM3") == "narrow"
    assert fam.route_of((3, 4096), "nvidia h100 nvl") == "narrow"
    assert fam.route_of((3, 8192), "NVIDIA H100 80GB HBM3") == "rows"
    # Another card, a name that only contains the word, and no card at all: the other routes.
    assert fam.route_of((3, 4096), "NVIDIA H200") == "rows"
    assert fam.route_of((3, 4096), "NVIDIA GH100X") == "rows"
    assert fam.route_of((3, 4096)) == "rows"
    # A call on the CPU names no GPU: out of the domain, the fallback as for any family.
    x = torch.ones(2, 1000, dtype=torch.bfloat16)
    y = torch.zeros_like(x)
    fam(X=x, W=torch.ones(1000, dtype=torch.bfloat16), Y=y, eps=1e-6)
    assert torch.equal(y, torch.nn.functional.rms_norm(x, (1000,), torch.ones(1000, dtype=torch.bfloat16), 1e-6))


@pytest.mark.parametrize("cards", ['["H 100"]', "[]"])
def test_cards_must_name_gpus(tmp_path, cards):
    with pytest.raises(ValueError, match="not one word of a GPU's name|names no GPU"):
        cake.family(carded_family(tmp_path, cards))


GEMM = os.path.join(ROOT, "kernels", "gemm", "gemm.family.toml")


def test_the_gemm_family_routes_inside_its_narrowed_domain():
    fam = cake.family(GEMM)
    # The family's [domain]: N and K from 256, M to 16384 (the contract allows more).
    assert fam.route_of((4, 64, 4096)) is None
    assert fam.route_of((20000, 4096, 4096)) is None
    # The small-M schedule is built per M and N, whatever route name its guard got.
    tiny = next(r for r in fam.routes if r["kernel"].endswith("tinygemm_sm90.py"))
    assert tiny["specialize"] == {"M": "M", "NW": "N"}
    hi = tiny["when"]["M"]["max"]
    n, k = tiny["when"]["N"]["max"], tiny["when"]["K"]["max"]
    assert fam.route_of((hi, n, k)) == tiny["name"]
    assert fam.route_of((hi + 1, n, k)) != tiny["name"]
    # The 128-row TMA routes take only K a multiple of 16 (rows on 32-byte boundaries).
    tiles = next(r for r in fam.routes if r["name"] == "tiles")
    assert tiles["when"]["K"]["multiple_of"] == 16
    assert fam.route_of((8192, 8192, 512)) == "tiles"
    assert fam.route_of((8192, 8192, 520)) != "tiles"


def test_a_route_with_constants_builds_that_variant(tmp_path):
    needs_nvcc()
    gemm = os.path.join(ROOT, "kernels", "gemm")
    path = tmp_path / "narrow.family.toml"
    path.write_text(
        f'name = "narrow"\ncontract = "{gemm}/gemm.contract.toml"\n'
        '[[route]]\nname = "n128"\nconstants = { BN = 128, STAGES = 5 }\n'
        f'[fallback]\npython = "{gemm}/contract.py:torch_matmul"\n'
    )
    fam = cake.family(path, target="sm_90a", cache_dir=tmp_path)
    kernel = fam._decide((256, 512, 128))
    # 128-column tiles: the second tile count of the grid is cdiv(N, 128).
    assert kernel.meta["grid"]["tiles"][1] == ["cdiv", "N", 128], kernel.meta["grid"]
    assert list(fam.compile_seconds) == [("n128", ("BN", 128), ("STAGES", 5))]


def test_a_dimension_that_is_a_set_admits_only_its_members(tmp_path):
    rows = os.path.join(ROOT, "kernels", "rows")
    text = open(os.path.join(rows, "rmsnorm.contract.toml"), encoding="utf-8").read()
    text = text.replace("H = { min = 1024, max = 16384, multiple_of = 8 }", "H = { in = [1024, 4096, 16384] }")
    text = text.replace('kernel = "../../examples/rmsnorm_sm90.py"',
                        f'kernel = "{os.path.join(ROOT, "examples", "rmsnorm_sm90.py")}"')
    text = text.replace('python = "contract.py"', f'python = "{os.path.join(rows, "contract.py")}"')
    keep = [l for l in text.splitlines() if not any(f"H = {h} " in l or f"H = {h}}}" in l
                                                    for h in (1032, 5000, 8192, 12288, 3000, 2048))]
    (tmp_path / "set.contract.toml").write_text("\n".join(keep) + "\n")
    (tmp_path / "set.family.toml").write_text(
        'name = "set"\ncontract = "set.contract.toml"\n[[route]]\nname = "rows"\n'
        f'[fallback]\npython = "{rows}/contract.py:rms_norm_into"\n')
    fam = cake.family(tmp_path / "set.family.toml")
    assert fam.route_of((3, 4096)) == "rows"
    assert fam.route_of((3, 2048)) is None  # in range, not a member: the fallback


def test_a_limit_on_a_product_of_dimensions_sends_larger_shapes_to_the_fallback(tmp_path):
    rows = os.path.join(ROOT, "kernels", "rows")
    text = open(os.path.join(rows, "rmsnorm.contract.toml"), encoding="utf-8").read()
    text = text.replace('kernel = "../../examples/rmsnorm_sm90.py"',
                        f'kernel = "{os.path.join(ROOT, "examples", "rmsnorm_sm90.py")}"')
    text = text.replace('python = "contract.py"', f'python = "{os.path.join(rows, "contract.py")}"')
    (tmp_path / "lim.contract.toml").write_text(text + '\n[limits]\n"R*H" = { max = 268435456 }\n')
    (tmp_path / "lim.family.toml").write_text(
        'name = "lim"\ncontract = "lim.contract.toml"\n[[route]]\nname = "rows"\n'
        f'[fallback]\npython = "{rows}/contract.py:rms_norm_into"\n')
    fam = cake.family(tmp_path / "lim.family.toml")
    assert fam.route_of((16384, 16384)) == "rows"       # 2^28: at the limit
    assert fam.route_of((16385, 16384)) is None         # past it: the fallback


def test_grouped_query_heads_that_do_not_divide_the_query_heads_take_the_fallback():
    # The attention contracts' BH = { multiple_of = "BHKV" }: the kernel maps query head bh to
    # key/value head bh // (BH / BHKV), which is wrong for any other BH.
    fam = cake.family(os.path.join(ROOT, "kernels", "attention", "attention_causal.family.toml"))
    assert fam.dims == ["BH", "BHKV", "S", "D", "CAUSAL"]
    # CAUSAL is named by no tensor: its one value binds it.
    q, kv = Shaped(64, 4096, 128), Shaped(8, 4096, 128)
    assert fam.binding({"Q": q, "K": kv, "V": kv, "O": q}) == (64, 8, 4096, 128, 1)
    assert fam.route_of((64, 8, 4096, 128, 1)) == "fa3-d128"
    assert fam.route_of((12, 8, 4096, 128, 1)) is None
    assert fam.route_of((8, 64, 4096, 128, 1)) is None


def test_a_guard_over_a_product_of_dimensions_routes_by_problem_size(tmp_path):
    rows = os.path.join(ROOT, "kernels", "rows")
    (tmp_path / "size.family.toml").write_text(
        f'name = "size"\ncontract = "{rows}/rmsnorm.contract.toml"\n'
        '[[route]]\nname = "large"\nwhen = { "R*H" = { min = 1048576 }, H = { max = 8192 } }\n'
        f'[fallback]\npython = "{rows}/contract.py:rms_norm_into"\n')
    fam = cake.family(tmp_path / "size.family.toml")
    assert fam.route_of((256, 4096)) == "large"        # 2^20 elements: at the bound
    assert fam.route_of((255, 4096)) is None           # one row fewer: the fallback
    assert fam.route_of((4096, 16384)) is None         # large, but past the H bound


def test_a_product_guard_names_only_dimensions(tmp_path):
    rows = os.path.join(ROOT, "kernels", "rows")
    (tmp_path / "bad.family.toml").write_text(
        f'name = "bad"\ncontract = "{rows}/rmsnorm.contract.toml"\n'
        '[[route]]\nname = "a"\nwhen = { "R*Q" = { min = 4 } }\n'
        f'[fallback]\npython = "{rows}/contract.py:rms_norm_into"\n')
    with pytest.raises(ValueError, match="`Q` in `R\\*Q` is not a dimension of the contract"):
        cake.family(tmp_path / "bad.family.toml")


def test_the_causal_attention_family_runs_its_fallback_from_tensors():
    # D = 96 is outside the domain: SDPA (on the CPU here) writes O, and CAUSAL came from its
    # one value, not from a tensor.
    fam = cake.family(os.path.join(ROOT, "kernels", "attention", "attention_causal.family.toml"))
    g = torch.Generator().manual_seed(0)
    q = torch.randn(4, 50, 96, generator=g).to(torch.bfloat16)
    k = torch.randn(2, 50, 96, generator=g).to(torch.bfloat16)
    v = torch.randn(2, 50, 96, generator=g).to(torch.bfloat16)
    o = torch.zeros_like(q)
    fam(Q=q, K=k, V=v, O=o)
    want = torch.nn.functional.scaled_dot_product_attention(
        q, k.repeat_interleave(2, 0), v.repeat_interleave(2, 0), is_causal=True)
    assert torch.allclose(o.float(), want.float(), atol=2e-2, rtol=2e-2)


def test_the_h100_takes_the_dynamic_causal_attention_where_its_guard_holds():
    fam = cake.family(os.path.join(ROOT, "kernels", "attention", "attention_causal.family.toml"))
    h100, h200 = "NVIDIA H100 80GB HBM3", "NVIDIA H200"
    assert fam.route_of((128, 128, 8192, 128, 1), h100) == "dynamic-d128-h100"
    assert fam.route_of((128, 128, 8192, 128, 1), h200) == "fa3-d128"
    # Under a wave of tiles, or short sequences: one CTA per tile on every card.
    assert fam.route_of((4, 4, 2048, 128, 1), h100) == "fa3-d128"
    assert fam.route_of((413, 59, 4, 128, 1), h100) == "fa3-d128"
    assert fam.route_of((128, 128, 8192, 64, 1), h100) == "dynamic-d64-h100"
    assert fam.route_of((128, 32, 2048, 64, 1), h100) is None
