"""Problem tensors (cake.harness.inputs): dtype table, binding, poison; samplers when torch is there."""

import math
import os
import sys
from types import SimpleNamespace

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cake.harness import inputs as I  # noqa: E402


def test_dtype_table_covers_the_protocol():
    assert set(I.DTYPES) == {"bf16", "f16", "f32", "f64", "i32", "i64", "u8", "i8", "fp8e4m3", "fp8e5m2"}
    fake_torch = SimpleNamespace(bfloat16="BF", float8_e4m3fn="E4M3", int8="I8")
    assert I.torch_dtype(fake_torch, "bf16") == "BF"
    assert I.torch_dtype(fake_torch, "fp8e4m3") == "E4M3"
    assert I.torch_dtype(fake_torch, "i8") == "I8"


@pytest.mark.parametrize("bad", ["float32", "bfloat16", "F32", "", None, 32])
def test_unknown_dtype(bad):
    with pytest.raises(I.InputError, match="unknown dtype"):
        I.dtype_info(bad)


def test_poison_values():
    for d in ("bf16", "f16", "f32", "f64", "fp8e4m3", "fp8e5m2"):
        assert math.isnan(I.poison_value(d))
    assert I.poison_value("i32") == -(2 ** 31)
    assert I.poison_value("i64") == -(2 ** 63)
    assert I.poison_value("i8") == -128
    assert I.poison_value("u8") == 255
    assert I.int_range("u8") == (0, 255)
    with pytest.raises(I.InputError, match="not an integer dtype"):
        I.int_range("f32")


def test_poison_bits_are_distinctive_nans():
    import numpy as np

    assert I.POISON_BITS == {"f16": 0x7EA5, "bf16": 0x7FA5, "f32": 0x7FA5A5A5, "f64": 0x7FF4A5A5A5A5A5A5,
                             "fp8e4m3": 0x7F, "fp8e5m2": 0x7D}
    for dtype, np_dtype, u in (("f16", np.float16, np.uint16), ("f32", np.float32, np.uint32),
                               ("f64", np.float64, np.uint64)):
        assert np.isnan(np.array(I.poison_bits(dtype), u).view(np_dtype))
        assert I.storage_poison_bits(np.dtype(np_dtype).name) == I.poison_bits(dtype)
    # bf16 (1 sign, 8 exponent, 7 mantissa bits), fp8 e4m3fn (S.1111.111 is its only NaN), e5m2 (exponent
    # all ones, mantissa not zero): all NaN, sign bit clear
    assert (0x7FA5 >> 7) & 0xFF == 0xFF and 0x7FA5 & 0x7F
    assert (0x7D >> 2) & 0x1F == 0x1F and 0x7D & 0x3
    assert all(bits < 1 << (I.dtype_info(d).bits - 1) for d, bits in I.POISON_BITS.items())
    assert I.storage_poison_bits("bfloat16") == 0x7FA5 and I.storage_poison_bits("float8_e4m3fn") == 0x7F
    for d in ("i32", "i64", "u8", "i8"):
        assert I.poison_bits(d) is None
    assert I.storage_poison_bits("int32") is None


def test_bind_shape_names_and_integers():
    assert I.bind_shape("A", ["M", 4, "K"], {"M": 10, "K": 3, "N": 7}) == (10, 4, 3)
    assert I.bind_shape("s", [], {}) == ()


@pytest.mark.parametrize("shape,dims,msg", [
    (["M", "Q"], {"M": 1, "N": 2}, "tensor A: unknown dimension name 'Q' (the request's shape has M, N)"),
    (["M"], {}, "unknown dimension name 'M' (the request's shape has none)"),
    ([-1], {}, "dimension 0 is negative"),
    ([1.5], {}, "dimension 0 must be a name or an integer"),
    ([True], {}, "dimension 0 must be a name or an integer"),
])
def test_bind_shape_errors(shape, dims, msg):
    with pytest.raises(I.InputError) as e:
        I.bind_shape("A", shape, dims)
    assert msg in str(e.value)


@pytest.mark.parametrize("dims", [{"M": -1}, {"M": 1.0}, {"M": True}, {"M": "3"}, [1, 2]])
def test_check_dims_errors(dims):
    with pytest.raises(I.InputError, match="shape"):
        I.check_dims(dims)


def test_distributions():
    for d in I.DISTRIBUTIONS:
        assert I.check_distribution(d) == d
    with pytest.raises(I.InputError, match="unknown distribution 'gauss'"):
        I.check_distribution("gauss")


# ---- samplers: need torch (CPU is enough); skipped where torch is absent ------------------

def _gen(torch, seed=7):
    g = torch.Generator(device="cpu")
    g.manual_seed(seed)
    return g


def test_random_tensor_dtypes_and_ranges():
    torch = pytest.importorskip("torch")
    for dtype in ("bf16", "f16", "f32", "f64", "fp8e4m3", "fp8e5m2"):
        for dist in I.DISTRIBUTIONS:
            x = I.random_tensor(torch, dtype, (33, 8), dist, _gen(torch), "cpu")
            assert x.dtype == I.torch_dtype(torch, dtype) and tuple(x.shape) == (33, 8)
            assert bool(torch.isfinite(x.double()).all()), (dtype, dist)
    ties = I.random_tensor(torch, "f32", (1000,), "ties", _gen(torch), "cpu")
    assert set(ties.unique().tolist()) <= {-2.0, -1.0, 0.0, 1.0, 2.0}
    ints = I.random_tensor(torch, "i32", (10000,), "normal", _gen(torch), "cpu")
    assert 0 <= int(ints.min()) and int(ints.max()) < 1024
    small = I.random_tensor(torch, "i8", (10000,), "normal", _gen(torch), "cpu")
    assert 0 <= int(small.min()) and int(small.max()) <= 127


def test_random_tensor_is_reproducible_and_clustered_rows_cluster():
    torch = pytest.importorskip("torch")
    a = I.random_tensor(torch, "f32", (64, 16), "heavy_tailed", _gen(torch, 3), "cpu")
    b = I.random_tensor(torch, "f32", (64, 16), "heavy_tailed", _gen(torch, 3), "cpu")
    assert torch.equal(a, b)
    x = I.random_tensor(torch, "f32", (512, 32), "clustered", _gen(torch), "cpu")
    d = torch.cdist(x, x)
    near = (d < 0.05 * 32 ** 0.5 * 4).float().sum(1)  # each row has its cluster-mates close by
    assert float(near.min()) > 5
    assert tuple(I.random_tensor(torch, "f32", (50,), "clustered", _gen(torch), "cpu").shape) == (50,)
