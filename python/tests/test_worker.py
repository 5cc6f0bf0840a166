"""The worker end to end: `python3 -m cake.worker` as a subprocess, with the numpy fake backend.

Covers the real framing (one JSON line each way, stray output kept off stdout), malformed
lines, every op, error kinds, the sticky-error exit and shutdown.
"""

import copy
import json
import os
import select
import subprocess
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
CONTRACT = os.path.join(HERE, "fake_contract.py")
FAKE = "fake_backend:make_backend"
TIMEOUT = 30

ADD = {
    "tensors": [{"name": "A", "dtype": "f32", "shape": ["M", "N"], "role": "input"},
                {"name": "B", "dtype": "f32", "shape": ["M", "N"], "role": "input"},
                {"name": "C", "dtype": "f32", "shape": ["M", "N"], "role": "output"}],
    "scalars": [{"name": "alpha", "dtype": "f32", "value": 2.0}],
    "generator": None,
    "oracle": f"{CONTRACT}:oracle",
    "tolerance": {"C": {"policy": "allclose", "rtol": 1e-5, "atol": 1e-5}},
    "check": {"require_deterministic": True},
}
ASSIGN = {
    "tensors": [{"name": "X", "dtype": "f32", "shape": ["N", "D"], "role": "input"},
                {"name": "Cen", "dtype": "f32", "shape": ["K", "D"], "role": "input"},
                {"name": "I", "dtype": "i32", "shape": ["N"], "role": "output"}],
    "scalars": [],
    "generator": None,
    "oracle": f"{CONTRACT}:assign_oracle",
    "tolerance": {"I": {"policy": "argmin_ties", "score": f"{CONTRACT}:assign_score", "rtol": 0.0, "atol": 0.0}},
}
SHAPE = {"M": 6, "N": 4}


class Worker:
    """One worker process; request() sends a line and returns the parsed answer."""

    def __init__(self, backend=FAKE):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([PYTHON_DIR, HERE, env.get("PYTHONPATH", "")])
        env["CAKE_WORKER_BACKEND"] = backend
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([sys.executable, "-m", "cake.worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env=env)
        self.next_id = 100

    def send(self, line):
        if isinstance(line, dict):
            line = json.dumps(line)
        if isinstance(line, str):
            line = line.encode()
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def recv(self):
        ready, _, _ = select.select([self.proc.stdout], [], [], TIMEOUT)
        assert ready, f"no answer within {TIMEOUT}s; stderr:\n{self.log()}"
        line = self.proc.stdout.readline()
        assert line.endswith(b"\n"), f"stdout closed or partial line {line!r}; stderr:\n{self.log()}"
        return json.loads(line)  # every stdout line must be an answer

    def request(self, op, **fields):
        self.next_id += 1
        self.send({"id": self.next_id, "op": op, **fields})
        answer = self.recv()
        assert answer["id"] == self.next_id
        return answer

    def log(self):
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def wait(self):
        return self.proc.wait(timeout=TIMEOUT)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            f.close()
        self.stderr.close()


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """Fake launch.json files, one per fake behaviour: name -> path."""
    d = tmp_path_factory.mktemp("kernels")
    out = {}
    metas = {b: {"fake": b} for b in (
        "good", "half", "modifies_input", "nondeterministic", "wrong", "launch_error", "sticky", "async_fault",
        "oom", "chatty", "exits", "driver_fault", "oob_after", "oob_before", "writes_nan", "decays", "stale")}
    metas["stale_late"] = {"fake": "stale", "good_calls": 9}  # right through the events loop below
    metas["clustered"] = {"fake": "good", "grid": [128, 1, 1],
                          "residency": {"sm_count": 132, "ctas_per_sm": 1, "cluster": 4,
                                        "clusters_at_once": 30, "resident_ctas": 120}}
    metas["no_residency"] = {"fake": "good", "grid": [8, 1, 1], "residency": "fails"}
    for b, meta in metas.items():
        p = d / f"{b}.launch.json"
        p.write_text(json.dumps(meta))
        out[b] = str(p)
    return out


@pytest.fixture(scope="module")
def worker():
    w = Worker()
    yield w
    w.close()


@pytest.fixture
def fresh():
    w = Worker()
    yield w
    w.close()


def ok(answer):
    assert answer["ok"], answer
    return answer


def failed(answer, kind, sticky=False):
    assert not answer["ok"], answer
    assert answer["error"]["kind"] == kind and answer["error"]["sticky"] is sticky, answer
    return answer["error"]["message"]


def check(w, name, problem=ADD, shape=SHAPE, **kw):
    fields = {"callable": name, "problem": problem, "shape": shape, "distribution": "normal", "seed": 1234,
              "runs": 2}
    fields.update(kw)
    return w.request("check", **fields)


def load(w, name, kernels):
    return ok(w.request("load", name=name, launch=kernels[name]))


def with_(problem, **changes):
    p = copy.deepcopy(problem)
    p.update(changes)
    return p


# ---- hello, framing, malformed lines -------------------------------------------------------

def test_hello(worker):
    env = ok(worker.request("hello"))["env"]
    assert env["gpu"] == "fake numpy device" and env["cake"] and env["python"]


@pytest.mark.parametrize("line,rid,msg", [
    ("this is not json", None, "not JSON"),
    ("[1, 2, 3]", None, "must be a JSON object"),
    (b"\xff\xfe\n"[:-1], None, "not UTF-8"),
    ('{"op": "hello"}', None, "no `id`"),
    ('{"id": "7", "op": "hello"}', None, "`id` must be an integer"),
    ('{"id": 7, "op": "dance"}', 7, "unknown op 'dance'"),
    ('{"id": 8, "op": "load", "name": "x"}', 8, "exactly one"),
    ('{"id": 9, "op": "check", "callable": "nothing"}', 9, "missing `problem`"),
])
def test_malformed_lines_get_protocol_errors(worker, line, rid, msg):
    worker.send(line)
    answer = worker.recv()
    assert answer["id"] == rid
    assert msg in failed(answer, "protocol")
    ok(worker.request("hello"))  # and the worker is still serving


def test_blank_lines_are_skipped(worker):
    worker.send("")
    worker.send("   ")
    ok(worker.request("hello"))


# ---- check ------------------------------------------------------------------------------------

def test_check_passes_a_correct_kernel(worker, kernels):
    load(worker, "good", kernels)
    a = ok(check(worker, "good"))
    assert a["passed"] is True and a["reason"] is None
    assert a["inputs_unmodified"] is True and a["deterministic"] is True
    c = a["outputs"]["C"]
    assert c["policy"] == "allclose" and c["passed"] and c["elements"] == 24
    assert (c["mismatches"], c["unwritten"], c["nonfinite"], c["first_mismatch"]) == (0, 0, 0, None)
    assert c["out_of_bounds"] == 0
    assert c["max_abs_err"] is not None and c["max_abs_err"] < 1e-5


def test_check_fails_unwritten_outputs_naming_the_output_and_count(worker, kernels):
    load(worker, "half", kernels)
    a = ok(check(worker, "half"))
    assert a["passed"] is False
    c = a["outputs"]["C"]
    assert (c["passed"], c["mismatches"], c["unwritten"], c["nonfinite"]) == (False, 12, 12, 12)
    assert c["first_mismatch"] == [3, 0]
    assert a["reason"] == "C: 12 elements never written (still poisoned), first at [3, 0]"


def test_check_reports_a_wrong_element(worker, kernels):
    load(worker, "wrong", kernels)
    a = ok(check(worker, "wrong"))
    c = a["outputs"]["C"]
    assert not a["passed"] and c["mismatches"] == 1 and c["unwritten"] == 0 and c["first_mismatch"] == [1, 2]
    assert c["max_abs_err"] == pytest.approx(5, rel=1e-4)
    assert a["reason"].startswith("C: 1 of 24 elements outside allclose(rtol=1e-05, atol=1e-05)")


def test_check_detects_modified_inputs(worker, kernels):
    load(worker, "modifies_input", kernels)
    a = ok(check(worker, "modifies_input"))
    assert a["passed"] is False and a["inputs_unmodified"] is False
    assert a["outputs"]["C"]["passed"] is True
    assert "input A modified by the call" in a["reason"]


def test_check_detects_nondeterminism_unless_not_required(worker, kernels):
    load(worker, "nondeterministic", kernels)
    a = ok(check(worker, "nondeterministic"))
    assert a["outputs"]["C"]["passed"] and a["deterministic"] is False and a["passed"] is False
    assert "C differs bitwise between runs" in a["reason"]
    lax = with_(ADD, check={"require_deterministic": False})
    a = ok(check(worker, "nondeterministic", problem=lax))
    assert a["deterministic"] is False and a["passed"] is True and a["reason"] is None
    a = ok(check(worker, "nondeterministic", runs=1))
    assert a["deterministic"] is True and a["passed"] is True  # not checked with one run


def test_check_python_callable_and_contract_generator(worker):
    ok(worker.request("load", name="add", python=f"{CONTRACT}:add"))
    assert ok(check(worker, "add"))["passed"]
    gen = with_(ADD, generator=f"{CONTRACT}:generator")
    assert ok(check(worker, "add", problem=gen, distribution="my_own"))["passed"]


@pytest.mark.parametrize("changes,msg", [
    ({"generator": f"{CONTRACT}:generator_missing_b"}, "returned no tensor B"),
    ({"generator": f"{CONTRACT}:generator_wrong_dtype"}, "tensor A: dtype is float64, the contract says f32"),
    ({"generator": f"{CONTRACT}:no_such_function"}, "has no function `no_such_function`"),
    ({"oracle": f"{CONTRACT}:broken_oracle"}, "ValueError: the oracle is broken"),
    ({"oracle": f"{CONTRACT}:oracle_wrong_shape"}, "C has shape [1, 1], the contract says [6, 4]"),
    ({"oracle": "/nonexistent/contract.py:oracle"}, "cannot read /nonexistent/contract.py"),
    ({"oracle": f"{CONTRACT}:oracle_not_a_tensor"}, "C is a list, expected a tensor"),
    ({"oracle": f"{CONTRACT}:oracle_complex"}, "C has dtype complex128, expected a real"),
])
def test_generator_and_oracle_failures_are_oracle_errors(worker, changes, msg):
    ok(worker.request("load", name="add", python=f"{CONTRACT}:add"))
    assert msg in failed(check(worker, "add", problem=with_(ADD, **changes)), "oracle")


ASSIGN_SHAPE = {"N": 200, "K": 8, "D": 2}


def assign_with(**policy):
    return with_(ASSIGN, tolerance={"I": dict(ASSIGN["tolerance"]["I"], **policy)})


@pytest.mark.parametrize("bound", ["K", 8])
def test_argmin_ties_indices_beyond_the_bound_fail(worker, bound):
    ok(worker.request("load", name="past", python=f"{CONTRACT}:assign_past_the_end"))
    a = ok(check(worker, "past", problem=assign_with(bound=bound), shape=ASSIGN_SHAPE, distribution="ties"))
    i = a["outputs"]["I"]
    assert not a["passed"] and i["mismatches"] == 2 and i["first_mismatch"] == [0]
    assert a["reason"] == "I: 2 indices out of range [0, 8), first at [0]"


def test_argmin_ties_without_a_bound_a_score_failing_on_the_candidates_indices_fails_the_check(worker):
    ok(worker.request("load", name="past", python=f"{CONTRACT}:assign_past_the_end"))
    a = ok(check(worker, "past", problem=ASSIGN, shape=ASSIGN_SHAPE, distribution="ties"))
    assert not a["passed"] and a["outputs"]["I"]["mismatches"] >= 2
    assert a["reason"].startswith(f"I: score {CONTRACT}:assign_score raised IndexError")
    assert a["reason"].endswith("on the candidate's indices")


def test_argmin_ties_negative_indices_fail_without_a_bound(worker):
    ok(worker.request("load", name="neg", python=f"{CONTRACT}:assign_negative"))
    a = ok(check(worker, "neg", problem=ASSIGN, shape=ASSIGN_SHAPE, distribution="ties"))
    assert not a["passed"] and a["outputs"]["I"]["mismatches"] == 1
    assert a["reason"] == "I: 1 index negative, first at [3]"


def test_argmin_ties_contract_faults_are_oracle_or_protocol_errors(worker):
    ok(worker.request("load", name="last_tie", python=f"{CONTRACT}:assign_last_tie"))
    broken = assign_with(score=f"{CONTRACT}:assign_score_broken")
    msg = failed(check(worker, "last_tie", problem=broken, shape=ASSIGN_SHAPE), "oracle")
    assert "on the oracle's indices" in msg and "the score function is broken" in msg
    assert "the oracle chose" in failed(check(worker, "last_tie", problem=assign_with(bound=4), shape=ASSIGN_SHAPE),
                                        "oracle")
    msg = failed(check(worker, "last_tie", problem=assign_with(bound="Q"), shape=ASSIGN_SHAPE), "protocol")
    assert "unknown dimension 'Q'" in msg


def test_argmin_ties_accepts_tied_choices_and_rejects_worse_ones(worker):
    ok(worker.request("load", name="last_tie", python=f"{CONTRACT}:assign_last_tie"))
    ok(worker.request("load", name="second", python=f"{CONTRACT}:assign_second_best"))
    shape = {"N": 200, "K": 8, "D": 2}
    # ties: integer coordinates, duplicate centres: the last tied index differs from the oracle's
    a = ok(check(worker, "last_tie", problem=ASSIGN, shape=shape, distribution="ties"))
    assert a["passed"], a
    a = ok(check(worker, "second", problem=ASSIGN, shape=shape, distribution="normal"))
    i = a["outputs"]["I"]
    assert not a["passed"] and i["policy"] == "argmin_ties" and i["mismatches"] > 100 and i["unwritten"] == 0
    assert a["reason"].startswith(f"I: {i['mismatches']} of 200 elements choose an index scoring worse")


# ---- guard bands, poison ----------------------------------------------------------------------

def test_check_catches_writes_past_the_end(worker, kernels):
    load(worker, "oob_after", kernels)
    a = ok(check(worker, "oob_after"))
    c = a["outputs"]["C"]
    assert a["passed"] is False and c["passed"] is False
    assert (c["out_of_bounds"], c["mismatches"], c["unwritten"]) == (3, 0, 0)
    assert a["reason"] == "C: 3 elements written outside the tensor (after its end)"


def test_check_catches_writes_before_the_start(worker, kernels):
    load(worker, "oob_before", kernels)
    a = ok(check(worker, "oob_before", runs=1))
    assert a["outputs"]["C"]["out_of_bounds"] == 3
    assert a["reason"] == "C: 3 elements written outside the tensor (2 before its start, 1 after its end)"


def test_a_written_nan_is_not_unwritten(worker, kernels):
    load(worker, "writes_nan", kernels)
    a = ok(check(worker, "writes_nan"))
    c = a["outputs"]["C"]
    assert (c["unwritten"], c["nonfinite"], c["mismatches"], c["first_mismatch"]) == (0, 2, 2, [0, 1])
    assert a["reason"] == "C: 2 non-finite values where the oracle is finite, first at [0, 1]"


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f64", "i32", "u8"])
def test_guards_and_poison_work_for_other_dtypes(worker, dtype):
    ok(worker.request("load", name="add", python=f"{CONTRACT}:add"))
    tensors = [dict(t, dtype=dtype) if t["name"] == "C" else t for t in ADD["tensors"]]
    tol = {"C": {"policy": "allclose", "rtol": 1e-2, "atol": 1e-2} if dtype[0] in "fb" else
           {"policy": "rel_l2", "max": 1.0}}
    a = ok(check(worker, "add", problem=with_(ADD, tensors=tensors, tolerance=tol)))
    c = a["outputs"]["C"]
    assert (c["out_of_bounds"], c["unwritten"]) == (0, 0), a


def test_guard_buffers_hand_out_aligned_views():
    sys.path[:0] = [PYTHON_DIR, HERE]
    import numpy as np

    from cake.harness.guard import GUARD_BYTES, GuardedOutput
    from fake_backend import FakeBackend

    b = FakeBackend()
    for dtype in ("f16", "f32", "f64", "i8", "i64"):
        o = GuardedOutput(b, dtype, (3, 5))
        assert o.view.shape == (3, 5) and np.shares_memory(o.view, o.buf) and o.view.flags.c_contiguous
        offset = o.view.__array_interface__["data"][0] - o.buf.__array_interface__["data"][0]
        assert offset == o.guard * o.buf.itemsize and offset % 256 == 0
        assert o.buf.size == 2 * o.guard + 15 and o.guard * (I_BITS[dtype] // 8) == GUARD_BYTES
        o.poison()
        assert o.out_of_bounds() == (0, 0)
        o.buf[0] = 1
        o.buf[-2:] = 1
        assert o.out_of_bounds() == (1, 2)
    empty = GuardedOutput(b, "f32", (0, 4))
    empty.poison()
    assert empty.view.shape == (0, 4) and empty.out_of_bounds() == (0, 0)


I_BITS = {"f16": 16, "f32": 32, "f64": 64, "i8": 8, "i64": 64}


def test_check_binding_errors_are_protocol_errors(worker, kernels):
    load(worker, "good", kernels)
    assert "unknown dimension name 'N'" in failed(check(worker, "good", shape={"M": 3}), "protocol")
    bad = with_(ADD, tensors=[dict(ADD["tensors"][0], dtype="f33")] + ADD["tensors"][1:])
    assert "tensor A: unknown dtype 'f33'" in failed(check(worker, "good", problem=bad), "protocol")
    assert "no callable named 'nobody'" in failed(check(worker, "nobody"), "protocol")


# ---- errors that leave the worker usable -------------------------------------------------------

def test_load_errors(worker, kernels):
    assert "cannot load" in failed(worker.request("load", name="x", launch="/nonexistent.launch.json"), "load")
    assert "has no function `nope`" in failed(worker.request("load", name="x", python=f"{CONTRACT}:nope"), "load")


def test_a_cuda_error_while_loading_is_a_load_error(worker, tmp_path):
    p = tmp_path / "wrong_arch.launch.json"
    p.write_text(json.dumps({"fake": "good", "load_error": "CUDA error: no kernel image is available"}))
    assert "no kernel image" in failed(worker.request("load", name="x", launch=str(p)), "load")
    ok(worker.request("hello"))


def test_launch_error_is_not_sticky(worker, kernels):
    load(worker, "launch_error", kernels)
    assert "expected dtype f32" in failed(check(worker, "launch_error"), "launch")
    ok(worker.request("hello"))


def test_out_of_memory_is_a_cuda_error_but_not_sticky(worker, kernels):
    load(worker, "oom", kernels)
    assert "CUDA out of memory" in failed(check(worker, "oom"), "cuda", sticky=False)
    ok(worker.request("hello"))


def test_a_callable_calling_exit_is_a_python_error(worker, kernels):
    load(worker, "exits", kernels)
    assert "SystemExit" in failed(check(worker, "exits"), "python")
    ok(worker.request("hello"))


def test_stray_output_stays_off_stdout(worker, kernels):
    load(worker, "chatty", kernels)
    assert ok(check(worker, "chatty"))["passed"]  # recv() parses every stdout line as JSON
    ok(worker.request("hello"))
    log = worker.log()
    assert "a stray print on stdout" in log and "a stray write on fd 1" in log


# ---- time -----------------------------------------------------------------------------------------

def test_time(worker, kernels):
    load(worker, "good", kernels)
    fields = {"callable": "good", "problem": with_(ADD, oracle=None, tolerance={}), "shape": SHAPE,
              "distribution": "normal", "seed": 99, "warmup": 2, "samples": 7, "flush_l2": True}
    a = ok(worker.request("time", cupti=False, **fields))
    ev = a["events_ms"]
    assert set(ev) == {"n", "median", "mean", "min", "max", "q1", "q3", "iqr", "samples"}
    assert ev["n"] == 7 and len(ev["samples"]) == 7 and ev["min"] <= ev["q1"] <= ev["median"] <= ev["q3"] <= ev["max"]
    assert a["cupti_ms"] is None and a["kernels_per_call"] is None and a["kernel_names"] == []
    assert a["flush_after_ms"] is None
    a = ok(worker.request("time", cupti=True, **fields))
    assert a["cupti_ms"]["n"] == 7 and a["kernels_per_call"] == 1 and a["kernel_names"] == ["fake_kernel"]
    assert a["flush_after_ms"]["median"] == 0.05
    a = ok(worker.request("time", cupti=True, **dict(fields, flush_l2=False)))
    assert a["flush_after_ms"] is None, "no flush, nothing to time after the call"


def test_time_reports_the_launch_and_its_waves(worker, kernels):
    for name in ("clustered", "no_residency", "good"):
        load(worker, name, kernels)
    fields = {"problem": with_(ADD, oracle=None, tolerance={}), "shape": SHAPE, "distribution": "normal",
              "seed": 99, "warmup": 1, "samples": 3, "flush_l2": False, "cupti": False}
    a = ok(worker.request("time", callable="clustered", **fields))
    assert a["launch"] == {"sm_count": 132, "ctas_per_sm": 1, "cluster": 4, "clusters_at_once": 30,
                           "resident_ctas": 120, "grid": [128, 1, 1], "waves": 128 / 120}
    # A driver that cannot say leaves the timing standing, without `launch`; so does a callable
    # that is not a Cake kernel.
    for name in ("no_residency", "good"):
        a = ok(worker.request("time", callable=name, **fields))
        assert "launch" not in a and a["events_ms"]["n"] == 3


def test_timeline_needs_a_timeline_build(worker, kernels):
    # The fake kernels are not Cake kernels built with their stamps: a clear python error, and
    # the worker lives on.
    load(worker, "good", kernels)
    a = worker.request("timeline", callable="good", problem=with_(ADD, oracle=None, tolerance={}), shape=SHAPE,
                       distribution="normal", seed=5)
    assert a["ok"] is False and a["error"]["kind"] == "python", a
    assert "built without its timeline" in a["error"]["message"], a
    assert ok(worker.request("hello"))["env"]


def time_fields(**kw):
    fields = {"problem": ADD, "shape": SHAPE, "distribution": "normal", "seed": 99, "warmup": 2, "samples": 7,
              "flush_l2": True, "cupti": False}
    fields.update(kw)
    return fields


def test_time_checks_the_outputs_of_a_correct_kernel(worker, kernels):
    load(worker, "good", kernels)
    a = ok(worker.request("time", callable="good", **time_fields(cupti=True)))
    assert a["outputs_ok"] is True and a["outputs_reason"] is None and a["events_ms"]["n"] == 7
    a = ok(worker.request("time", callable="good", **time_fields(problem=with_(ADD, oracle=None, tolerance={}))))
    assert a["outputs_ok"] is None and a["outputs_reason"] is None  # no oracle: not checked


@pytest.mark.parametrize("kernel,reason", [
    ("half", "C: 12 elements never written (still poisoned), first at [3, 0]"),
    ("decays", "C: 1 of 24 elements outside allclose(rtol=1e-05, atol=1e-05)"),  # wrong after call 3
    ("stale", "C: 24 elements never written (still poisoned), first at [0, 0]"),  # silent after call 3
    ("oob_after", "C: 3 elements written outside the tensor (after its end)"),
    ("writes_nan", "C: 2 non-finite values where the oracle is finite"),
    ("modifies_input", "input A modified during timing"),
])
def test_time_fails_outputs_that_the_timed_calls_got_wrong(worker, kernels, kernel, reason):
    load(worker, kernel, kernels)
    a = ok(worker.request("time", callable=kernel, **time_fields()))
    assert a["outputs_ok"] is False and reason in a["outputs_reason"], a["outputs_reason"]
    assert a["outputs_reason"].startswith(reason) or kernel == "modifies_input"


def test_time_rechecks_the_outputs_after_the_cupti_loop(worker, kernels):
    load(worker, "stale_late", kernels)  # right for 9 calls: the whole events loop (2 + 7)
    a = ok(worker.request("time", callable="stale_late", **time_fields(cupti=True)))
    assert a["outputs_ok"] is False
    assert a["outputs_reason"] == "after the CUPTI loop: C: 24 elements never written (still poisoned), first at [0, 0]"


def test_time_checks_each_callable_on_its_own(worker, kernels):
    load(worker, "good", kernels)
    load(worker, "half", kernels)
    a = ok(worker.request("time", callables=["good", "half"], **time_fields(cupti=True)))
    good, half = a["results"]["good"], a["results"]["half"]
    assert good["outputs_ok"] is True and good["outputs_reason"] is None
    assert half["outputs_ok"] is False and half["outputs_reason"].startswith("C: 12 elements never written")


def test_time_with_an_oracle_needs_every_policy(worker, kernels):
    load(worker, "good", kernels)
    a = worker.request("time", callable="good", **time_fields(problem=with_(ADD, tolerance={})))
    assert "no policy for output C" in failed(a, "protocol")
    a = worker.request("time", callable="good", **time_fields(problem=with_(ADD, oracle=f"{CONTRACT}:broken_oracle")))
    assert "the oracle is broken" in failed(a, "oracle")


def test_time_validates_its_knobs(worker, kernels):
    load(worker, "good", kernels)
    a = worker.request("time", callable="good", problem=ADD, shape=SHAPE, distribution="normal", seed=1, samples=0)
    assert "`samples` must be >= 1" in failed(a, "protocol")


# ---- exits -------------------------------------------------------------------------------------------

def test_sticky_error_is_answered_then_the_worker_exits(fresh, kernels):
    load(fresh, "sticky", kernels)
    msg = failed(check(fresh, "sticky"), "cuda", sticky=True)
    assert "illegal memory access" in msg
    assert fresh.wait() == 3
    assert fresh.proc.stdout.read() == b""


def test_async_fault_surfaces_at_synchronize_and_is_sticky(fresh, kernels):
    load(fresh, "async_fault", kernels)
    msg = failed(check(fresh, "async_fault"), "cuda", sticky=True)
    assert "unspecified launch failure" in msg
    assert fresh.wait() == 3


def test_a_driver_error_is_sticky_by_its_result_name(fresh, kernels):
    load(fresh, "driver_fault", kernels)
    assert "cuCtxSynchronize failed" in failed(check(fresh, "driver_fault"), "cuda", sticky=True)
    assert fresh.wait() == 3


def test_shutdown(fresh):
    assert ok(fresh.request("shutdown"))["bye"] is True
    assert fresh.wait() == 0


def test_end_of_input_exits_cleanly(fresh):
    fresh.proc.stdin.close()
    assert fresh.wait() == 0


def test_an_unavailable_backend_still_answers():
    w = Worker(backend="no_such_module_for_cake:make")
    try:
        assert "backend is unavailable" in failed(w.request("hello"), "python")
        assert ok(w.request("shutdown"))["bye"]
        assert w.wait() == 0
    finally:
        w.close()


def test_time_several_callables_together(worker, kernels):
    load(worker, "good", kernels)
    load(worker, "chatty", kernels)
    fields = {"problem": with_(ADD, oracle=None, tolerance={}), "shape": SHAPE,
              "distribution": "normal", "seed": 5, "warmup": 1, "samples": 4, "cupti": True}
    a = ok(worker.request("time", callables=["good", "chatty"], **fields))
    assert set(a["results"]) == {"good", "chatty"}
    assert all(r["events_ms"]["n"] == 4 and r["cupti_ms"]["n"] == 4 for r in a["results"].values())
    a = worker.request("time", callables=["good", "good"], **fields)
    assert "names a callable twice" in failed(a, "protocol")
    a = worker.request("time", callables=[], **fields)
    assert "non-empty list" in failed(a, "protocol")


# ---- error kinds, in process ---------------------------------------------------------------------

def _session(**overrides):
    sys.path[:0] = [PYTHON_DIR, HERE]
    from cake.worker import Session
    from fake_backend import FakeBackend

    b = FakeBackend()
    for name, fn in overrides.items():
        setattr(b, name, fn)
    s = Session(b)
    s.callables["add"] = s.refs.load(f"{CONTRACT}:add", "load")
    return s


def _answer(session, op, **fields):
    answer, _ = session.handle_line(json.dumps({"id": 1, "op": op, **fields}))
    return answer


@pytest.mark.parametrize("what", ["random_input", "generator"])
def test_failures_while_drawing_inputs_are_oracle_errors(what):
    def boom(*a, **k):
        raise ValueError("cannot draw")

    s = _session(**{what: boom})
    a = _answer(s, "check", callable="add", problem=ADD, shape=SHAPE, distribution="normal", seed=1, runs=1)
    assert "cannot draw" in failed(a, "oracle")


def test_a_failure_comparing_the_candidates_data_is_never_an_oracle_error(monkeypatch):
    s = _session()
    import cake.worker as W

    def broken(*a, **k):
        raise RuntimeError("comparison exploded")

    monkeypatch.setattr(W, "compare", broken)
    a = _answer(s, "check", callable="add", problem=ADD, shape=SHAPE, distribution="normal", seed=1, runs=1)
    assert "comparison exploded" in failed(a, "python")
