"""Request parsing and validation, answers, error classification (cake.harness.protocol)."""

import copy
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from cake.harness import protocol as P  # noqa: E402

PROBLEM = {
    "tensors": [{"name": "A", "dtype": "bf16", "shape": ["M", "K"], "role": "input"},
                {"name": "C", "dtype": "bf16", "shape": ["M", "N"], "role": "output"}],
    "scalars": [{"name": "alpha", "dtype": "f32", "value": 1}],
    "generator": None,
    "oracle": "/abs/kernels/gemm/contract.py:oracle",
    "tolerance": {"C": {"policy": "allclose", "rtol": 0.02, "atol": 0.02}},
    "check": {"require_deterministic": True},
}
CHECK = {"id": 3, "op": "check", "callable": "candidate", "problem": PROBLEM,
         "shape": {"M": 1000, "N": 1000, "K": 512}, "distribution": "normal", "seed": 1234, "runs": 2}


def req(**changes):
    r = copy.deepcopy(CHECK)
    r.update(changes)
    return r


def problem(**changes):
    p = copy.deepcopy(PROBLEM)
    p.update(changes)
    return p


def test_parse_check_binds_shapes():
    r = P.parse_check(CHECK)
    assert r.callable == "candidate" and r.runs == 2 and r.seed == 1234
    assert r.problem.shapes == {"A": (1000, 512), "C": (1000, 1000)}
    assert r.problem.dims == {"M": 1000, "N": 1000, "K": 512}
    assert r.problem.scalar_values() == {"alpha": 1.0} and isinstance(r.problem.scalars[0].value, float)
    assert [t.name for t in r.problem.inputs] == ["A"] and [t.name for t in r.problem.outputs] == ["C"]
    assert P.parse_check({k: v for k, v in CHECK.items() if k != "runs"}).runs == 1


def test_parse_time_defaults():
    r = P.parse_time({"id": 4, "op": "time", "callable": "c", "problem": problem(oracle=None, tolerance={}),
                      "shape": {"M": 1, "N": 2, "K": 3}, "distribution": "uniform", "seed": 99})
    assert (r.warmup, r.samples, r.flush_l2, r.cupti) == (10, 30, True, False)


@pytest.mark.parametrize("request_,msg", [
    (req(shape={"M": 1, "N": 2}), "tensor A: unknown dimension name 'K'"),
    (req(problem=problem(tensors=[{"name": "A", "dtype": "float32", "shape": [1], "role": "input"}])),
     "tensor A: unknown dtype 'float32'"),
    (req(problem=problem(tensors=[{"name": "C", "dtype": "f32", "shape": [1], "role": "inout"}])), "role must be"),
    (req(problem=problem(tensors=[PROBLEM["tensors"][0]])), "no tensor has role `output`"),
    (req(problem=problem(scalars=[{"name": "A", "dtype": "f32", "value": 1}])), "duplicate names ['A']"),
    (req(problem=problem(scalars=[{"name": "k", "dtype": "i32", "value": 1.5}])), "i32 value must be an integer"),
    (req(problem=problem(scalars=[{"name": "k", "dtype": "i33", "value": 1}])), "scalar k: unknown dtype"),
    (req(problem=problem(oracle=None)), "`oracle` is required for check"),
    (req(problem=problem(oracle="no_colon")), "problem.oracle: expected \"/path/file.py:function\""),
    (req(problem=problem(tolerance={})), "no policy for output C"),
    (req(problem=problem(tolerance={"C": PROBLEM["tolerance"]["C"], "A": {"policy": "exact"}})), "are not outputs"),
    (req(problem=problem(tolerance={"C": {"policy": "fuzzy"}})), "unknown policy 'fuzzy'"),
    (req(problem=problem(tolerance={"C": {"policy": "argmin_ties", "score": "x"}})), "tolerance.C.score"),
    (req(distribution="gaussian"), "unknown distribution 'gaussian'"),
    (req(seed="1"), "`seed` must be an integer"),
    (req(seed=True), "`seed` must be an integer"),
    (req(runs=0), "`runs` must be >= 1"),
    (req(callable=None), "missing `callable`"),
    (req(problem=[1]), "`problem` must be an object"),
])
def test_check_request_errors(request_, msg):
    with pytest.raises(P.ProtocolError) as e:
        P.parse_check(request_)
    assert msg in str(e.value)
    assert e.value.kind == "protocol" and not e.value.sticky


ARGMIN_PROBLEM = {
    "tensors": [{"name": "X", "dtype": "f32", "shape": ["N", "D"], "role": "input"},
                {"name": "I", "dtype": "i32", "shape": ["N"], "role": "output"}],
    "oracle": "/abs/c.py:oracle",
    "tolerance": {"I": {"policy": "argmin_ties", "score": "/abs/c.py:score", "bound": "K"}},
}


def test_argmin_bound_names_resolve_against_the_shape():
    r = P.parse_check(req(problem=ARGMIN_PROBLEM, shape={"N": 10, "D": 2, "K": 7}))
    assert r.problem.tolerance["I"]["bound"] == 7
    given = copy.deepcopy(ARGMIN_PROBLEM)
    given["tolerance"]["I"]["bound"] = 5
    assert P.parse_check(req(problem=given, shape={"N": 10, "D": 2})).problem.tolerance["I"]["bound"] == 5
    with pytest.raises(P.ProtocolError, match="unknown dimension 'K'"):
        P.parse_check(req(problem=ARGMIN_PROBLEM, shape={"N": 10, "D": 2}))
    given["tolerance"]["I"]["bound"] = -5
    with pytest.raises(P.ProtocolError, match="`bound` must be"):
        P.parse_check(req(problem=given, shape={"N": 10, "D": 2}))


def test_time_with_an_oracle_needs_every_policy():
    base = {"id": 4, "op": "time", "callable": "c", "shape": {"M": 1, "N": 2, "K": 3}, "distribution": "normal",
            "seed": 1}
    assert P.parse_time(dict(base, problem=PROBLEM)).problem.oracle == PROBLEM["oracle"]
    with pytest.raises(P.ProtocolError, match="no policy for output C"):
        P.parse_time(dict(base, problem=problem(tolerance={})))
    assert P.parse_time(dict(base, problem=problem(oracle=None, tolerance={}))).problem.tolerance == {}


def test_a_generator_may_name_its_own_distributions():
    r = P.parse_check(req(distribution="sparse", problem=problem(generator="/abs/c.py:gen")))
    assert r.distribution == "sparse"


@pytest.mark.parametrize("line,msg", [
    (b"not json", "not JSON"),
    (b"\xff\xfe{}", "not UTF-8"),
    ("[1, 2]", "must be a JSON object"),
    ("42", "must be a JSON object"),
])
def test_parse_line_errors(line, msg):
    with pytest.raises(P.ProtocolError, match=msg):
        P.parse_line(line)


@pytest.mark.parametrize("r,rid,msg", [
    ({"op": "hello"}, None, "no `id`"),
    ({"id": "7", "op": "hello"}, None, "`id` must be an integer"),
    ({"id": True, "op": "hello"}, None, "`id` must be an integer"),
    ({"id": 7, "op": "explode"}, 7, "unknown op 'explode'"),
    ({"id": 7}, 7, "unknown op None"),
])
def test_envelope_errors(r, rid, msg):
    assert P.request_id(r) == rid
    with pytest.raises(P.ProtocolError, match=msg):
        P.check_envelope(r)


def test_parse_load():
    assert P.parse_load({"name": "c", "launch": "/d/gemm.launch.json"}) == ("c", "launch", "/d/gemm.launch.json")
    assert P.parse_load({"name": "t", "python": "/d/contract.py:mm"}) == ("t", "python", "/d/contract.py:mm")
    for bad, msg in [({"name": "c"}, "exactly one"), ({"name": "c", "launch": "a", "python": "b:c"}, "exactly one"),
                     ({"name": "", "launch": "a"}, "empty"), ({"name": "t", "python": "/d/contract.py"}, "load.python"),
                     ({"name": "t", "python": "/d/c.py:not-a-name"}, "load.python")]:
        with pytest.raises(P.ProtocolError, match=msg):
            P.parse_load(bad)


def test_answers_and_encoding():
    assert P.ok(3, bye=True) == {"id": 3, "ok": True, "bye": True}
    e = P.error(None, "launch", "bad dtype")
    assert e == {"id": None, "ok": False, "error": {"kind": "launch", "message": "bad dtype", "sticky": False}}
    line = P.encode({"id": 1, "x": float("nan"), "y": [float("inf"), 1.5], "z": {"w": -float("inf")}})
    assert "\n" not in line and json.loads(line) == {"id": 1, "x": None, "y": [None, 1.5], "z": {"w": None}}


@pytest.mark.parametrize("message,cuda,sticky", [
    ("CUDA error: an illegal memory access was encountered", True, True),
    ("CUDA error: misaligned address", True, True),
    ("CUDA error: unspecified launch failure", True, True),
    ("CUDA error: an illegal instruction was encountered", True, True),
    ("cuLaunchKernel(grid=(1, 1, 1)) failed: CUDA_ERROR_ILLEGAL_ADDRESS (700)", True, True),
    ("CUDA error: device-side assert triggered", True, True),
    ("CUDA out of memory. Tried to allocate 2.00 GiB", True, False),
    ("CUDA error: invalid argument", True, False),
    ("tensor `C`: expected dtype bf16", False, False),
])
def test_cuda_and_sticky_messages(message, cuda, sticky):
    assert P.is_cuda_message(message) == cuda
    assert P.is_sticky_message(message) == sticky
