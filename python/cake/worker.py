"""The evaluation worker: `python3 -m cake.worker`, protocol cake.worker/v0 (docs/worker.md).

Reads one JSON request per line on stdin and writes one JSON answer per line on stdout; logs
go to stderr. stdout is reserved for answers: at start the worker keeps a private duplicate
of fd 1 for them and points fd 1 (and sys.stdout) at stderr, so stray prints, from Python
or from native libraries, cannot corrupt the stream. Blank lines are skipped; any other
line that is not a valid request gets a `protocol` error (id null when unknown).

After a *sticky* error (the CUDA context is poisoned) the worker exits with status 3 right
after the answer; after `shutdown`, or at end of input, with status 0.

The GPU work goes through a backend (see `Backend`); the default one uses torch and
`cake.load_kernel`. CAKE_WORKER_BACKEND=module:factory picks another (the tests use a numpy
one), which is how the whole protocol is testable on a CPU.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import traceback
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from cake import LaunchError, __version__

from .harness import inputs as I
from .harness import protocol as P
from .harness.guard import GuardedOutput
from .harness.stats import summarize
from .harness.tolerance import OutputReport, ToleranceError, compare
from .harness.xp import bits_equal, is_array, namespace

BACKEND_ENV = "CAKE_WORKER_BACKEND"
DEFAULT_BACKEND = "cake.harness.torch_backend:TorchBackend"
STICKY_EXIT_CODE = 3


class Backend:
    """What the session needs from the device side. Arrays are the backend's own type
    (torch CUDA tensors, or numpy arrays in the tests); dtypes are the contract's names.

    env() -> dict                          hello's `env`
    load_kernel(path) -> callable          a Cake kernel from its launch.json
    generator(seed) -> rng                 the RNG handed to contract generators
    random_input(dtype, shape, distribution, rng) -> array   a built-in distribution
    adopt(value, dtype, shape) -> array    check (ValueError) and place a generator's tensor
    empty(dtype, shape) -> array           (outputs: a flat buffer, see harness.guard)
    poison(array, dtype)                   floats: the bits inputs.POISON_BITS gives for the
                                           array's own dtype, written through an integer view;
                                           integers: inputs.poison_value(dtype)
    clone(array) -> array;  copy_into(dst, src)
    synchronize()                          wait for the device; raises the device's errors
    prepare_call(fn, kwargs) -> () -> Any  what `time` calls (binding kept out of the timing)
    time_events(calls, warmup, samples, flush_l2, before_last) -> per call, a list of ms
                                           (interleaved); before_last(j), when given, runs
                                           untimed before call j's last sample
    time_cupti(calls, samples, flush_l2, before_last) -> per call, a timing.CuptiResult
    """


class _Unavailable(Backend):
    """Stands in when the backend cannot be made: every request that needs it fails."""

    def __init__(self, exc: BaseException):
        self.message = f"the worker's backend is unavailable: {type(exc).__name__}: {exc}"

    def synchronize(self) -> None:  # nothing ran, nothing to wait for
        return None

    def __getattr__(self, name: str) -> Any:
        def fail(*_a: Any, **_k: Any) -> Any:
            raise RuntimeError(self.message)

        return fail


def make_backend(spec: Optional[str]) -> Any:
    """The backend named by "module:factory" (default: the torch one)."""
    spec = spec or DEFAULT_BACKEND
    module, _, factory = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), factory or "make_backend")()
    except Exception as e:  # keep serving: every request will say why
        traceback.print_exc(file=sys.stderr)
        return _Unavailable(e)


# --------------------------------------------------------------------------------------
# contract code: "/abs/file.py:fn"
# --------------------------------------------------------------------------------------


class RefLoader:
    """Imports functions from contract files, once per file version (path, mtime)."""

    def __init__(self) -> None:
        self._modules: Dict[str, Tuple[int, Any]] = {}

    def load(self, ref: str, kind: str) -> Callable[..., Any]:
        path, fn_name = P.split_ref(ref, kind)
        module = self._module(path, kind)
        fn = getattr(module, fn_name, None)
        if not callable(fn):
            raise P.RequestError(kind, f"{path} has no function `{fn_name}`")
        return fn

    def _module(self, path: str, kind: str) -> Any:
        try:
            mtime = os.stat(path).st_mtime_ns
        except OSError as e:
            raise P.RequestError(kind, f"cannot read {path}: {e.strerror}") from None
        cached = self._modules.get(path)
        if cached and cached[0] == mtime:
            return cached[1]
        name = f"cake_contract_{len(self._modules)}_{os.path.basename(path).split('.')[0]}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise P.RequestError(kind, f"{path} is not a Python file")
        module = importlib.util.module_from_spec(spec)
        folder = os.path.dirname(os.path.abspath(path))
        if folder not in sys.path:  # contracts may import their neighbours
            sys.path.insert(0, folder)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as e:
            sys.modules.pop(name, None)
            traceback.print_exc(file=sys.stderr)
            raise P.RequestError(kind, f"importing {path} raised {type(e).__name__}: {e}") from None
        self._modules[path] = (mtime, module)
        return module


# --------------------------------------------------------------------------------------
# the session
# --------------------------------------------------------------------------------------


class Session:
    """Answers requests one at a time; holds the loaded callables."""

    def __init__(self, backend: Any, launch_errors: Tuple[type, ...] = (LaunchError,)):
        self.backend = backend
        self.launch_errors = launch_errors
        self.callables: Dict[str, Callable[..., Any]] = {}
        self.refs = RefLoader()

    # ---- framing ------------------------------------------------------------------------

    def handle_line(self, line: Any) -> Optional[Tuple[Dict[str, Any], bool]]:
        """(answer, exit_after) for one input line; None for a blank line."""
        if not line.strip():
            return None
        rid: Optional[int] = None
        try:
            req = P.parse_line(line)
            rid = P.request_id(req)
            op = P.check_envelope(req)
            fields = getattr(self, "op_" + op)(req)
            return P.ok(rid, **fields), op == "shutdown"
        except P.RequestError as e:
            err = e
        except (Exception, SystemExit) as e:  # a bug here, or contract code calling exit()
            err = self.classify(e, "python", "worker")
        return P.error(rid, err.kind, err.message, err.sticky), err.sticky

    def classify(self, exc: BaseException, kind: str, what: str) -> P.RequestError:
        """The answer for an exception raised while doing `what` (default kind `kind`)."""
        if isinstance(exc, P.RequestError):
            return exc
        text = str(exc)
        message = f"{what}: {type(exc).__name__}: {text}"
        if kind in ("python", "oracle", "load"):
            traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
        # cake.CudaError carries the CUresult name in `result` as well as in the message
        sticky = P.is_sticky_message(text) or P.is_sticky_message(str(getattr(exc, "result", "") or ""))
        if is_cuda_error(exc) and (sticky or kind != "load"):
            kind = "cuda"  # but a module that would not load (wrong arch...) stays `load`
        elif kind == "python" and isinstance(exc, self.launch_errors):
            kind = "launch"
        if not sticky:
            # An asynchronous fault surfaces only at the next synchronize.
            late = self.probe()
            if late is not None:
                return P.RequestError("cuda", f"{message}; then synchronize raised: {late}", sticky=True)
        return P.RequestError(kind, message, sticky)

    def probe(self) -> Optional[str]:
        """The device's pending error, if synchronizing raises one."""
        try:
            self.backend.synchronize()
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        return None

    @contextlib.contextmanager
    def phase(self, kind: str, what: str) -> Iterator[None]:
        """Errors inside are answered as `kind` (CUDA errors as `cuda`)."""
        try:
            yield
        except P.RequestError:
            raise
        except (Exception, SystemExit) as e:
            raise self.classify(e, kind, what) from None

    # ---- ops ----------------------------------------------------------------------------

    def op_hello(self, req: Dict[str, Any]) -> Dict[str, Any]:
        with self.phase("python", "hello"):
            env = dict(self.backend.env())
        env.setdefault("cake", __version__)
        return {"env": env}

    def op_shutdown(self, req: Dict[str, Any]) -> Dict[str, Any]:
        return {"bye": True}

    def op_load(self, req: Dict[str, Any]) -> Dict[str, Any]:
        name, how, target = P.parse_load(req)
        if how == "launch":
            with self.phase("load", f"loading {target}"):
                fn = self.backend.load_kernel(target)
        else:
            fn = self.refs.load(target, "load")
        self.callables[name] = fn
        return {"loaded": name}

    def op_check(self, req: Dict[str, Any]) -> Dict[str, Any]:
        r = P.parse_check(req)
        fn = self.callable(r.callable)
        p = r.problem
        inputs = self.make_inputs(p, r.distribution, r.seed)
        scalars = p.scalar_values()
        judge = self.make_judge(p, inputs, scalars)
        assert judge is not None  # check requires an oracle
        outputs = self.make_outputs(p)
        kwargs = call_kwargs(p, inputs, {n: o.view for n, o in outputs.items()}, scalars)
        return CheckRun(self, r, fn, kwargs, inputs, outputs, judge).run()

    def op_time(self, req: Dict[str, Any]) -> Dict[str, Any]:
        r = P.parse_time(req)
        fns = [self.callable(name) for name in r.callables]
        p, b = r.problem, self.backend
        inputs = self.make_inputs(p, r.distribution, r.seed)
        scalars = p.scalar_values()
        judge = self.make_judge(p, inputs, scalars)  # None without an oracle: outputs not checked
        # Shared inputs, outputs of its own for each callable.
        outputs = [self.make_outputs(p) for _ in fns]
        calls = []
        names = ", ".join(r.callables)
        with self.phase("python", f"preparing {names}"):
            for fn, outs in zip(fns, outputs):
                calls.append(b.prepare_call(fn, call_kwargs(p, inputs, {n: o.view for n, o in outs.items()}, scalars)))

        def poison(j: int) -> None:  # untimed: before the loops, and before each callable's last sample
            for o in outputs[j].values():
                o.poison()

        verdicts: List[List[Tuple[Optional[bool], Optional[str]]]] = [[] for _ in fns]
        with self.phase("python", f"poisoning the outputs of {names}"):
            for j in range(len(fns)):
                poison(j)
        with self.phase("python", f"timing {names}"):
            events = b.time_events(calls, r.warmup, r.samples, r.flush_l2, poison)
            b.synchronize()
        if judge is not None:
            for j in range(len(fns)):
                verdicts[j].append(judge.verdict(outputs[j]))
        cupti = None
        if r.cupti:
            with self.phase("python", f"poisoning the outputs of {names}"):
                for j in range(len(fns)):
                    poison(j)
            cupti = self.time_cupti(r, calls, poison)
            if cupti is not None and judge is not None:
                with self.phase("python", f"timing {names} under the profiler"):
                    b.synchronize()
                for j in range(len(fns)):
                    verdicts[j].append(judge.verdict(outputs[j]))
        results = {}
        for j, name in enumerate(r.callables):
            ok, why = merge_verdicts(verdicts[j], ["", "after the CUPTI loop: "])
            results[name] = {
                "events_ms": summarize(events[j]),
                "cupti_ms": summarize(cupti[j].spans_ms) if cupti else None,
                "kernels_per_call": cupti[j].kernels_per_call if cupti else None,
                "kernel_names": list(cupti[j].kernel_names) if cupti else [],
                # The flush after each profiled call: what it left dirty in L2 (timing.py).
                "flush_after_ms": summarize(cupti[j].flush_after_ms) if cupti and cupti[j].flush_after_ms else None,
                "outputs_ok": ok,
                "outputs_reason": why,
            }
            launch = launch_facts(fns[j])
            if launch is not None:
                results[name]["launch"] = launch
        if "callables" in req:
            return {"results": results}
        return results[r.callables[0]]

    def op_timeline(self, req: Dict[str, Any]) -> Dict[str, Any]:
        """One launch of a timeline build (`cake build --timeline`) on fresh inputs, L2 flushed:
        every CTA's stamps, summarized (cake.timeline). Its outputs are not judged."""
        name, p, dist, seed = P.parse_timeline(req)
        fn = self.callable(name)
        inputs = self.make_inputs(p, dist, seed)
        outputs = self.make_outputs(p)
        kwargs = call_kwargs(p, inputs, {n: o.view for n, o in outputs.items()}, p.scalar_values())
        with self.phase("python", f"recording the timeline of {name}"):
            from cake import timeline
            summary = timeline.record(fn, **kwargs).summary()
        return {"summary": summary, "text": timeline.format_summary(summary)}

    def time_cupti(self, r: P.TimeRequest, calls: List[Callable[[], Any]],
                   before_last: Optional[Callable[[int], None]] = None) -> Any:
        """CUPTI spans, or None (logged) when only the profiler failed: the events still count."""
        try:
            return self.backend.time_cupti(calls, r.samples, r.flush_l2, before_last)
        except Exception as e:
            err = self.classify(e, "python", f"timing {', '.join(r.callables)} under the profiler")
            if err.kind in ("cuda", "launch"):
                raise err from None
            print(f"cake.worker: no CUPTI timing: {err.message}", file=sys.stderr)
            return None

    # ---- helpers ------------------------------------------------------------------------

    def callable(self, name: str) -> Callable[..., Any]:
        if name not in self.callables:
            known = ", ".join(sorted(self.callables)) or "none"
            raise P.ProtocolError(f"no callable named {name!r} is loaded (loaded: {known})")
        return self.callables[name]

    def make_inputs(self, p: P.Problem, distribution: str, seed: int) -> Dict[str, Any]:
        """The inputs; every failure here is the harness's or the contract's: `oracle` (but a
        CUDA error stays `cuda`)."""
        b = self.backend
        with self.phase("oracle", "making the random generator"):
            rng = b.generator(seed)
        if p.generator is None:
            with self.phase("oracle", f"drawing the inputs ({distribution})"):
                return {t.name: b.random_input(t.dtype, p.shapes[t.name], distribution, rng) for t in p.inputs}
        gen = self.refs.load(p.generator, "oracle")
        with self.phase("oracle", f"generator {p.generator}"):
            got = gen(dict(p.dims), distribution, rng)
        return self.adopt_all(p, got, f"generator {p.generator}")

    def adopt_all(self, p: P.Problem, got: Any, who: str) -> Dict[str, Any]:
        if not isinstance(got, dict):
            raise P.RequestError("oracle", f"{who} returned {type(got).__name__}, expected a dict of tensors")
        out = {}
        for t in p.inputs:
            if t.name not in got:
                raise P.RequestError("oracle", f"{who} returned no tensor {t.name}")
            try:
                out[t.name] = self.backend.adopt(got[t.name], t.dtype, p.shapes[t.name])
            except ValueError as e:
                raise P.RequestError("oracle", f"{who}: tensor {t.name}: {e}") from None
        return out

    def make_outputs(self, p: P.Problem) -> Dict[str, GuardedOutput]:
        """Each output in a buffer with guard bands (harness.guard)."""
        with self.phase("python", "allocating the outputs"):
            return {t.name: GuardedOutput(self.backend, t.dtype, p.shapes[t.name]) for t in p.outputs}

    def make_judge(self, p: P.Problem, inputs: Dict[str, Any], scalars: Dict[str, Any]) -> Optional["Judge"]:
        """The oracle's outputs and the score functions, or None when the problem has no oracle."""
        if p.oracle is None:
            return None
        with self.phase("python", "copying the inputs"):
            pristine = {n: self.backend.clone(x) for n, x in inputs.items()}
        ref = self.run_oracle(p, inputs, scalars, pristine)
        scores = {name: self.score_fn(spec["score"], pristine)
                  for name, spec in p.tolerance.items() if spec["policy"] == "argmin_ties"}
        return Judge(self, p, ref, scores, inputs, pristine)

    def run_oracle(self, p: P.Problem, inputs: Dict[str, Any], scalars: Dict[str, Any],
                   pristine: Dict[str, Any]) -> Dict[str, Any]:
        oracle = self.refs.load(p.oracle or "", "oracle")
        who = f"oracle {p.oracle}"
        with self.phase("oracle", who):
            got = oracle(**inputs, **scalars)
            self.backend.synchronize()
        if not isinstance(got, dict):
            raise P.RequestError("oracle", f"{who} returned {type(got).__name__}, expected a dict of tensors")
        for t in p.outputs:
            if t.name not in got:
                raise P.RequestError("oracle", f"{who} returned no tensor {t.name}")
            value = got[t.name]
            if not is_array(value):
                raise P.RequestError("oracle", f"{who}: {t.name} is a {type(value).__name__}, expected a tensor")
            if not namespace(value).is_real(value):
                raise P.RequestError("oracle", f"{who}: {t.name} has dtype {value.dtype}, expected a real "
                                               f"(integer or floating) one")
            shape = tuple(value.shape)
            if shape != p.shapes[t.name]:
                raise P.RequestError("oracle", f"{who}: {t.name} has shape {list(shape)}, "
                                               f"the contract says {list(p.shapes[t.name])}")
        with self.phase("oracle", f"{who}: comparing the inputs with their copies"):
            changed = [n for n in inputs if not bits_equal(inputs[n], pristine[n])]
        if changed:
            raise P.RequestError("oracle", f"{who} modified its inputs {changed}")
        return got

    def score_fn(self, ref: str, pristine: Dict[str, Any]) -> Callable[[Any], Any]:
        """score(index) for argmin_ties, on the unmodified inputs. tolerance.compare tells its
        failures on the oracle's indices (the contract's: `oracle`) from those on the
        candidate's (a failed check)."""
        fn = self.refs.load(ref, "oracle")

        def score(index: Any) -> Any:
            return fn(**pristine, index=index)

        return score


def call_kwargs(p: P.Problem, inputs: Dict[str, Any], outputs: Dict[str, Any],
                scalars: Dict[str, Any]) -> Dict[str, Any]:
    """fn(**tensors, **scalars), tensors in the contract's order."""
    tensors = {t.name: (inputs if t.role == "input" else outputs)[t.name] for t in p.tensors}
    return {**tensors, **scalars}


def launch_facts(fn: Any) -> Optional[Dict[str, Any]]:
    """The last launch's grid and how its CTAs fit the device (a Cake kernel's `residency`):
    the waves it ran, counting only the clusters that fit at once. None for other callables, or
    (logged) when the driver cannot say."""
    residency = getattr(fn, "residency", None)
    grid = getattr(fn, "last_grid", None)
    if residency is None or grid is None:
        return None
    try:
        r = dict(residency())
    except Exception as e:  # the timing stands without it
        print(f"cake.worker: no residency: {e}", file=sys.stderr)
        return None
    ctas = grid[0] * grid[1] * grid[2]
    r["grid"] = list(grid)
    r["waves"] = ctas / r["resident_ctas"] if r.get("resident_ctas") else None
    return r


def is_cuda_error(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"AcceleratorError", "OutOfMemoryError", "CudaError"}) or P.is_cuda_message(str(exc))


def merge_verdicts(verdicts: List[Tuple[Optional[bool], Optional[str]]],
                   prefixes: List[str]) -> Tuple[Optional[bool], Optional[str]]:
    """(outputs_ok, outputs_reason) over the checks after each timing loop: the first failure's
    reason, prefixed with its loop; (None, None) when nothing was checked."""
    if not verdicts:
        return None, None
    for (ok, why), prefix in zip(verdicts, prefixes):
        if not ok:
            return False, prefix + (why or "failed")
    return True, None


class Judge:
    """Compares a callable's outputs with the oracle's, as `check` and `time` both do: the
    tolerance policy, then the guard bands. Only the contract's faults raise `oracle`."""

    def __init__(self, session: Session, p: P.Problem, ref: Dict[str, Any],
                 scores: Dict[str, Callable[[Any], Any]], inputs: Dict[str, Any], pristine: Dict[str, Any]):
        self.s, self.p, self.ref, self.scores = session, p, ref, scores
        self.inputs, self.pristine = inputs, pristine

    def compare(self, outputs: Dict[str, GuardedOutput]) -> Dict[str, OutputReport]:
        return {t.name: self.compare_one(t, outputs[t.name]) for t in self.p.outputs}

    def compare_one(self, t: P.TensorSpec, out: GuardedOutput) -> OutputReport:
        spec = self.p.tolerance[t.name]
        try:
            rep = compare(out.view, self.ref[t.name], spec, I.poison_value(t.dtype), self.scores.get(t.name))
        except ToleranceError as e:  # the oracle's data or the score function: the contract's fault
            cause = e.__cause__
            if cause is not None and is_cuda_error(cause):
                raise self.s.classify(cause, "oracle", f"comparing {t.name}: {e}") from None
            raise P.RequestError("oracle", f"comparing {t.name}: {e}") from None
        except P.RequestError:
            raise
        except (Exception, SystemExit) as e:  # never `oracle`: this is the candidate's data
            raise self.s.classify(e, "python", f"comparing {t.name}") from None
        exc = rep.score_exception
        if exc is not None and is_cuda_error(exc):  # the candidate's indices broke the device
            raise self.s.classify(exc, "python", f"score {spec['score']} on the candidate's indices") from None
        with self.s.phase("python", f"checking the guard bands of {t.name}"):
            before, after = out.out_of_bounds()
        rep.set_out_of_bounds(before, after)
        return rep

    def modified_inputs(self) -> List[str]:
        with self.s.phase("python", "comparing the inputs with their copies"):
            return [n for n, x in self.inputs.items() if not bits_equal(x, self.pristine[n])]

    def verdict(self, outputs: Dict[str, GuardedOutput]) -> Tuple[bool, Optional[str]]:
        """(outputs_ok, outputs_reason) for `time`; inputs modified meanwhile fail it too (the
        outputs were computed from other inputs than the oracle's)."""
        reports = self.compare(outputs)
        reasons = [why for name, rep in reports.items() for why in [rep.reason(name)] if why]
        reasons += [f"input {n} modified during timing" for n in self.modified_inputs()]
        return not reasons, "; ".join(reasons) if reasons else None


class CheckRun:
    """One `check`: poison, call, synchronize, compare, `runs` times (docs/worker.md)."""

    def __init__(self, session: Session, r: P.CheckRequest, fn: Callable[..., Any], kwargs: Dict[str, Any],
                 inputs: Dict[str, Any], outputs: Dict[str, GuardedOutput], judge: Judge):
        self.s, self.r, self.fn, self.kwargs = session, r, fn, kwargs
        self.inputs, self.pristine, self.outputs, self.judge = inputs, judge.pristine, outputs, judge
        self.b = session.backend
        self.reports: Dict[str, Tuple[int, OutputReport]] = {}  # first failing run, else last run
        self.modified: List[str] = []
        self.nondeterministic: List[str] = []
        self.first_outputs: Optional[Dict[str, Any]] = None

    def run(self) -> Dict[str, Any]:
        for k in range(self.r.runs):
            self.one_run(k)
        return self.answer()

    def one_run(self, k: int) -> None:
        p = self.r.problem
        if k:  # every run sees the same inputs, even after a call that wrote to them
            for n, x in self.inputs.items():
                self.b.copy_into(x, self.pristine[n])
        with self.s.phase("python", "poisoning the outputs"):
            for t in p.outputs:
                self.outputs[t.name].poison()
        with self.s.phase("python", f"calling {self.r.callable}"):
            self.fn(**self.kwargs)
            self.b.synchronize()
        for n, x in self.inputs.items():
            if n not in self.modified and not bits_equal(x, self.pristine[n]):
                self.modified.append(n)
        for name, rep in self.judge.compare(self.outputs).items():
            prev = self.reports.get(name)
            if prev is None or prev[1].passed:
                self.reports[name] = (k, rep)
        self.track_determinism(k)

    def track_determinism(self, k: int) -> None:
        if self.r.runs < 2:
            return
        if k == 0:
            self.first_outputs = {n: self.b.clone(o.view) for n, o in self.outputs.items()}
            return
        assert self.first_outputs is not None
        for n, o in self.outputs.items():
            if n not in self.nondeterministic and not bits_equal(o.view, self.first_outputs[n]):
                self.nondeterministic.append(n)

    def answer(self) -> Dict[str, Any]:
        p = self.r.problem
        reasons = []
        for name, (k, rep) in self.reports.items():
            why = rep.reason(name)
            if why:
                reasons.append(f"run {k + 1}: {why}" if k else why)
        reasons += [f"input {n} modified by the call" for n in self.modified]
        deterministic = not self.nondeterministic
        if not deterministic and p.require_deterministic:
            reasons += [f"{n} differs bitwise between runs" for n in self.nondeterministic]
        passed = (all(rep.passed for _, rep in self.reports.values()) and not self.modified
                  and (deterministic or not p.require_deterministic))
        return {
            "passed": passed,
            "outputs": {name: rep.to_json() for name, (_, rep) in self.reports.items()},
            "inputs_unmodified": not self.modified,
            "deterministic": deterministic,
            "reason": "; ".join(reasons) if reasons else None,
        }


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def claim_stdout() -> Any:
    """A private stream on the original stdout for answers; fd 1 and sys.stdout go to stderr."""
    sys.stdout.flush()
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return answers


def serve(session: Session, stdin: Any, answers: Any) -> int:
    """The request loop; returns the exit status."""
    while True:
        line = stdin.readline()
        if not line:
            return 0  # end of input: the CLI went away
        result = session.handle_line(line)
        if result is None:
            continue
        answer, stop = result
        answers.write(P.encode(answer) + "\n")
        answers.flush()
        if stop:
            return 0 if answer["ok"] else STICKY_EXIT_CODE


def main() -> int:
    answers = claim_stdout()
    backend = make_backend(os.environ.get(BACKEND_ENV))
    print(f"cake.worker {__version__} ({P.PROTOCOL}), backend {type(backend).__name__}, pid {os.getpid()}",
          file=sys.stderr)
    code = serve(Session(backend), sys.stdin.buffer, answers)
    if code == STICKY_EXIT_CODE:
        # The CUDA context is poisoned: skip interpreter teardown (torch's can hang or crash).
        sys.stderr.flush()
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(main())
