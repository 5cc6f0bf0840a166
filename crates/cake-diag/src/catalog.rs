//! The catalog: every finding code Cake can report, described once.
//!
//! A code is `CAKE-` + its category's letter + three digits, and never
//! changes meaning once released: agents, CI filters and rule statistics key
//! on it. The entries here are the single source for `cake explain CODE`,
//! for the SARIF `rules` array and for `docs/rules.md` ([`rules_markdown`];
//! a test keeps the file in sync).
//!
//! To add a code: define a `pub const` in the module of its category, append
//! it to [`ALL`], and regenerate docs/rules.md with
//! `CAKE_BLESS=1 cargo test -p cake-diag`.

use std::fmt::Write as _;

use serde::Serialize;

use crate::finding::{Category, Severity};

/// One entry of the catalog: everything `cake explain CODE` prints and
/// docs/rules.md contains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct CodeInfo {
    /// The stable code, e.g. `CAKE-L003`.
    pub code: &'static str,
    /// Kebab-case slug, e.g. `unknown-name`; also stable.
    pub name: &'static str,
    pub category: Category,
    /// Severity of a finding of this code unless the reporter overrides it.
    pub severity: Severity,
    /// One line.
    pub summary: &'static str,
    /// A paragraph or two: the contract, the reason behind it, how to fix.
    pub explanation: &'static str,
    /// A schedule that gets this finding (empty when no source can show it).
    pub bad: &'static str,
    /// The nearest schedule that does not.
    pub good: &'static str,
}

pub mod conformance;
pub mod consistency;
pub mod coverage;
pub mod performance;
pub mod safety;
pub mod semantics;

/// Front-end codes: the file is not a well-formed, well-typed Cake schedule.
pub mod language {
    use super::CodeInfo;
    use crate::finding::{Category, Severity};

    pub const SYNTAX_ERROR: CodeInfo = CodeInfo {
        code: "CAKE-L001",
        name: "syntax-error",
        category: Category::Language,
        severity: Severity::Error,
        summary: "The file is not valid Python.",
        explanation: "\
Cake schedules are ordinary Python files, read by a real Python parser and \
never executed. When the parser cannot read the file, nothing else can be \
checked, so syntax errors are reported first; the parser recovers where it \
can, so several may be reported at once.\n\n\
The span is where the parser gave up, which is often just after the real \
mistake: look for an unclosed bracket, a missing `:` after `def`, `for`, `if` \
or `with`, or inconsistent indentation on the lines above.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem(
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
"#,
    };

    pub const UNSUPPORTED_PYTHON: CodeInfo = CodeInfo {
        code: "CAKE-L002",
        name: "unsupported-python",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A Python construct outside the Cake subset.",
        explanation: "\
Cake reads Python syntax but interprets only a small subset of it: \
functions, assignments of constants and resources, arithmetic on \
compile-time values, `for` loops over `range`, `lm.range` or `lm.tiles`, \
`with role:` regions, `if`, and calls into `lm`. Everything else (`while`, \
`lambda`, `class`, comprehensions, f-strings, imports other than `cake`, \
`try`, `global`, `async`, `yield`, ...) is rejected, because the compiler \
must know every loop bound, resource and role before the kernel runs, and \
because the file is only read, never run, so constructs that only mean \
something when executed have no meaning here.\n\n\
The message names the construct and what to write instead: a `while` loop \
becomes `for k in lm.range(n, pipeline=pipe)`, a comprehension becomes an \
unrolled `for` over `range(...)`, an f-string becomes a plain string.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        k = 0
        while k < lm.cdiv(K, 64):
            sA.tma_load(A, coords=(0, k * 64), barrier=full)
            k = k + 1
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=4)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):
            sA.tma_load(A, coords=(0, k * 64), barrier=full)
"#,
    };

    pub const UNKNOWN_NAME: CodeInfo = CodeInfo {
        code: "CAKE-L003",
        name: "unknown-name",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A name is used that is not defined at that point.",
        explanation: "\
Every name in a schedule must be defined before it is used: a parameter, a \
symbolic dimension of a parameter's shape (`\"M\"` in \
`lm.tensor[lm.bf16, \"M\", \"K\"]` defines `M`), an earlier assignment in \
the same function, a helper function in the same file, or an attribute of \
`lm`. Names are resolved in source order at compile time; there are no \
globals from other modules and no Python builtins beyond the ones the \
subset documents.\n\n\
When a defined name is close in spelling, the finding's help suggests it. \
Otherwise define the value before its first use.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        sB.tma_load(A, coords=(0, 0), barrier=full)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        sA.tma_load(A, coords=(0, 0), barrier=full)
"#,
    };

    pub const TYPE_MISMATCH: CodeInfo = CodeInfo {
        code: "CAKE-L004",
        name: "type-mismatch",
        category: Category::Language,
        severity: Severity::Error,
        summary: "An operand has the wrong kind or type.",
        explanation: "\
Every value in a schedule has a kind (tensor, pool, view, fragment, role, \
pipeline, barrier, integer, dtype, ...) and every operand position accepts \
only some kinds: `producers=` takes roles, `barrier=` takes a barrier, \
`lm.mma` takes a fragment accumulator and two views or fragments. Cake \
checks this before anything else looks at the schedule, so ill-typed \
programs never reach the verifier or lowering.\n\n\
The finding's expected and actual values name the kinds. The usual cause is \
passing the wrong one of two similar names, such as the pipeline where its \
barrier belongs.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        sA.tma_load(A, coords=(0, 0), barrier=pipe)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        sA.tma_load(A, coords=(0, 0), barrier=full)
"#,
    };

    pub const BAD_ARGUMENTS: CodeInfo = CodeInfo {
        code: "CAKE-L005",
        name: "bad-arguments",
        category: Category::Language,
        severity: Severity::Error,
        summary:
            "A call has the wrong number of arguments or a wrong, missing or repeated keyword.",
        explanation: "\
Each `lm` operation and each helper function has a fixed signature. A call \
is rejected when it passes too many or too few positional arguments, an \
unknown keyword, the same keyword twice, or omits a required one. Keywords \
are how a schedule states its commitments (`stages=`, `swizzle=`, \
`producers=`), so a misspelled keyword would otherwise silently fall back \
to a default that the author did not choose.\n\n\
The message names the parameter; for an unknown keyword the help suggests \
the closest valid one.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stage=2, swizzle=128)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
"#,
    };

    pub const NOT_CONSTANT: CodeInfo = CodeInfo {
        code: "CAKE-L006",
        name: "not-constant",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A value that must be known at compile time is not.",
        explanation: "\
Everything that decides resources, layout or code shape must be a \
compile-time constant: view shapes, stage counts, swizzles, role \
warpgroups and register budgets, and the bounds of `range(...)` loops that \
the front-end unrolls. Constants are literals, names bound to constants, \
and arithmetic on them. The symbolic dimensions of tensor parameters (`M`, \
`N`, `K`) are known only at launch, so they may appear in tensor \
coordinates and in `lm.range` and `lm.tiles` trip counts, but not in a \
shape.\n\n\
Shared memory, registers and instruction forms are fixed when the kernel is \
compiled, which is why these values cannot wait for the launch. Name a \
constant tile size (`BK = 64`) and iterate over the dimension instead.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, K), dtype=lm.bf16, stages=2, swizzle=128)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    BK = 64
    pool = lm.smem()
    sA = pool.view(shape=(128, BK), dtype=lm.bf16, stages=2, swizzle=128)
"#,
    };

    pub const SHAPE_MISMATCH: CodeInfo = CodeInfo {
        code: "CAKE-L007",
        name: "shape-mismatch",
        category: Category::Language,
        severity: Severity::Error,
        summary: "Operand shapes disagree or do not divide evenly.",
        explanation: "\
Shapes are part of a value's type and are checked like types: an MMA of \
`(M, K)` by `(K, N)` accumulates into `(M, N)`, a copy needs equal shapes on \
both sides, and a tile split across warpgroups or stages must divide \
evenly. A mismatch here would otherwise become out-of-bounds shared-memory \
traffic or an instruction shape the hardware does not have.\n\n\
The finding's expected and actual values give both shapes. Fix the \
declaration the label points at, or take a sub-view (`sA.rows(i, n)`) of the \
right size.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)
    math = lm.role(warpgroup=0)
    acc = math.fragment(shape=(64, 128), dtype=lm.f32)
    with math:
        lm.mma(acc, sA, sB.T)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)
    math = lm.role(warpgroup=0)
    acc = math.fragment(shape=(64, 256), dtype=lm.f32)
    with math:
        lm.mma(acc, sA, sB.T)
"#,
    };

    pub const DTYPE_MISMATCH: CodeInfo = CodeInfo {
        code: "CAKE-L008",
        name: "dtype-mismatch",
        category: Category::Language,
        severity: Severity::Error,
        summary: "Operand element types disagree.",
        explanation: "\
Cake never converts element types implicitly. Copies (TMA, cp.async, \
loads and stores) move bytes, so source and destination must have the same \
dtype; MMA operands must have a dtype pair the instruction accepts, and the \
accumulator one it can accumulate into. An implicit conversion would hide \
either a bug or a cost, and a performance-transparent schedule shows both.\n\n\
Declare the view with the tensor's dtype, or convert explicitly with \
`lm.cast` where the conversion is intended.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.f16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        sA.tma_load(A, coords=(0, 0), barrier=full)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.f16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.f16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    with load:
        sA.tma_load(A, coords=(0, 0), barrier=full)
"#,
    };

    pub const NO_SCHEDULE: CodeInfo = CodeInfo {
        code: "CAKE-L009",
        name: "no-schedule",
        category: Category::Language,
        severity: Severity::Error,
        summary: "The file defines no `@cake.schedule` function.",
        explanation: "\
A Cake file must contain at least one function decorated with \
`@cake.schedule(...)`; that function is the kernel. Undecorated functions \
are helpers, inlined where they are called, and are never compiled on \
their own. An empty file gets this finding too.\n\n\
Add the decorator with the targets the schedule supports, e.g. \
`@cake.schedule(targets=[\"sm_90a\"])`, and check that the file is the one \
you meant to compile.",
        bad: r#"import cake
from cake import lm


def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
"#,
    };

    pub const INVALID_VALUE: CodeInfo = CodeInfo {
        code: "CAKE-L010",
        name: "invalid-value",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A value is outside its legal range.",
        explanation: "\
Some parameters only make sense in a range, independent of the target: \
stage counts and shape extents are at least 1, a swizzle is one of 0, 32, \
64 or 128 bytes, warpgroup indices are not negative, a register budget is a \
multiple of 8 between 24 and 256. Values outside the range describe no \
hardware configuration at all, so they are rejected where they are \
written rather than deep inside lowering.\n\n\
The finding's expected value lists the legal values or range, and actual \
the value found.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=96)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
"#,
    };

    pub const DUPLICATE_DEFINITION: CodeInfo = CodeInfo {
        code: "CAKE-L011",
        name: "duplicate-definition",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A name is defined twice where it must be unique.",
        explanation: "\
Resources (pools, views, roles, pipelines, barriers, fragments), schedules \
and helper functions are declared once per scope. Findings, generated code \
and the cost report all name resources by the name they were declared \
with, so a second declaration under the same name would make every later \
mention ambiguous; in Python it would silently replace the first.\n\n\
The label points at the first definition. Rename one of the two, or delete \
the one that is not needed.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sA = pool.view(shape=(256, 64), dtype=lm.bf16, stages=4, swizzle=128)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=4, swizzle=128)
"#,
    };

    pub const UNKNOWN_TARGET: CodeInfo = CodeInfo {
        code: "CAKE-L012",
        name: "unknown-target",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A target name is not one Cake knows.",
        explanation: "\
A schedule lists the exact targets it supports, and Cake compiles for \
exactly one of them; it never steps down to a nearby architecture. The \
known targets are sm_80, sm_89, sm_90a, sm_100a, sm_103a, sm_120a and \
sm_121a, and the finding lists them. Architecture-specific features such \
as wgmma and setmaxnreg exist only on the `a` variants, so `sm_90` is not a \
spelling of `sm_90a`: it names a target without those instructions, which \
Cake does not support.\n\n\
Use one of the listed names.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
"#,
    };

    pub const NOT_TEXT: CodeInfo = CodeInfo {
        code: "CAKE-L013",
        name: "not-text",
        category: Category::Language,
        severity: Severity::Error,
        summary: "The file is not UTF-8 text.",
        explanation: "\
Schedules are Python source, which Cake reads as UTF-8. A file that does \
not decode (a binary, a compiled `.pyc`, or text saved in another encoding) \
is rejected before parsing; the span points at the first byte that is not \
valid UTF-8.\n\n\
Check that the path names the schedule source, and re-save it as UTF-8.",
        bad: "",
        good: "",
    };

    pub const INLINE_DEPTH: CodeInfo = CodeInfo {
        code: "CAKE-L014",
        name: "inline-depth",
        category: Category::Language,
        severity: Severity::Error,
        summary: "Helper functions recurse, or nest deeper than the inlining limit.",
        explanation: "\
Helper functions are inlined at compile time: a kernel has no call stack \
for them. A helper that calls itself, directly or through other helpers, \
or a chain of calls deeper than the inlining limit, would never finish \
inlining, so Cake stops at the limit and reports the call that crossed it; \
the expected value is the limit.\n\n\
Compute the value without recursion, or unroll with a `for` loop over \
`range(...)`.",
        bad: r#"import cake
from cake import lm


def tile_rows(n):
    return tile_rows(n)


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    BM = tile_rows(256)
    pool = lm.smem()
    sA = pool.view(shape=(BM, 64), dtype=lm.bf16, stages=2, swizzle=128)
"#,
        good: r#"import cake
from cake import lm


def tile_rows(n):
    return n // 2


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    BM = tile_rows(256)
    pool = lm.smem()
    sA = pool.view(shape=(BM, 64), dtype=lm.bf16, stages=2, swizzle=128)
"#,
    };

    pub const MISPLACED_OPERATION: CodeInfo = CodeInfo {
        code: "CAKE-L015",
        name: "misplaced-operation",
        category: Category::Language,
        severity: Severity::Error,
        summary: "An operation is used where it is not allowed.",
        explanation: "\
Some operations are only meaningful in some places. Work done by threads \
(TMA copies, MMAs, waits, stores) happens inside a `with role:` region, \
because every instruction must belong to the warps that execute it; role \
regions do not nest, because a warp has one role; resources are declared \
at the top level of the schedule, not inside loops or roles; and a \
schedule does not `return`, since a kernel's results are the tensors it \
writes.\n\n\
Move the operation to where it belongs; when an enclosing construct is \
the problem (a role region inside another, a declaration inside a loop), \
a label points at it.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    sA.tma_load(A, coords=(0, 0), barrier=full)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    load = lm.role(warpgroup=0)
    pipe = lm.pipeline(stages=2)
    full = lm.barrier(pipe, producers=[load], consumers=[load])
    for tm in lm.tiles(1):
        with load:
            sA.tma_load(A, coords=(0, 0), barrier=full)
"#,
    };

    pub const UNUSED_VALUE: CodeInfo = CodeInfo {
        code: "CAKE-L016",
        name: "unused-value",
        category: Category::Language,
        severity: Severity::Warning,
        summary: "An expression statement computes a value that is thrown away.",
        explanation: "\
Operations with an effect (copies, MMAs, waits, arrives, stores) are \
written as statements. An expression without one, such as a sub-view, an \
arithmetic result or a comparison, does nothing as a statement; it is \
almost always a forgotten assignment or an argument that was meant to go \
to a call. Docstrings are exempt.\n\n\
Assign the value to a name, pass it where it was meant to go, or delete \
the line.",
        bad: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    sA.rows(0, 64)
"#,
        good: r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(128, 64), dtype=lm.bf16, stages=2, swizzle=128)
    top = sA.rows(0, 64)
"#,
    };

    pub const STALE_VALUE: CodeInfo = CodeInfo {
        code: "CAKE-L017",
        name: "stale-value",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A name is used after the fragment its value was computed from was overwritten.",
        explanation: "\
In Cake a name bound to a register expression (`better = d < best_d`) \
names the computation, which the compiler places where the name is used. If \
a fragment the expression reads is overwritten in between \
(`best_d[:] = ...`), the use would see the new contents, while the same \
Python would see the old value. Rather than silently differ, Cake reports \
the use.\n\n\
The same goes for a run-time loop: a name bound before the loop and read \
in its body, whose fragment the body overwrites later, would read the new \
contents from the second iteration on.\n\n\
Use the name before the fragment changes, compute it again after the \
update, or keep the old value in a fragment of its own.",
        bad: include_str!("../../../tests/check/CAKE-L017-bad.py"),
        good: include_str!("../../../tests/check/CAKE-L017-good.py"),
    };

    pub const EXPRESSION_TOO_LARGE: CodeInfo = CodeInfo {
        code: "CAKE-L018",
        name: "expression-too-large",
        category: Category::Language,
        severity: Severity::Error,
        summary: "An expression expands to more terms than the compiler accepts.",
        explanation: "\
A name bound to a register expression stands for the whole expression \
wherever it is used, so `x = x + x` repeated twenty times builds a value of a \
million terms. The IR printer and the code generator see the expanded \
expression, so Cake stops at 65,536 terms rather than emit megabytes of \
code.\n\n\
Keep intermediate values in a fragment (`frag[:] = value`), which is \
computed once and then read.",
        bad: include_str!("../../../tests/check/CAKE-L018-bad.py"),
        good: include_str!("../../../tests/check/CAKE-L018-good.py"),
    };

    pub const LOOP_CARRIED_NAME: CodeInfo = CodeInfo {
        code: "CAKE-L019",
        name: "loop-carried-name",
        category: Category::Language,
        severity: Severity::Error,
        summary: "A name read in a run-time loop is bound again later in the same loop body.",
        explanation: "\
The body of a run-time loop (`lm.range`, the tile loop) is written once and \
runs many times. Python would carry a name bound again in the body into the \
next iteration: `col = col + 16` at the end of the body moves the next \
iteration's `col`. Cake cannot: the body reads the binding from before the \
loop on every iteration. Rather than silently differ, Cake reports the read.\n\n\
Compute the value from the loop variable (`k * 16`), or carry run-time state \
in a fragment (`frag[:] = ...`), which is storage and does carry over.",
        bad: include_str!("../../../tests/check/CAKE-L019-bad.py"),
        good: include_str!("../../../tests/check/CAKE-L019-good.py"),
    };
}

/// Every code, in catalog order (by category, then number).
pub const ALL: &[&CodeInfo] = &[
    &language::SYNTAX_ERROR,
    &language::UNSUPPORTED_PYTHON,
    &language::UNKNOWN_NAME,
    &language::TYPE_MISMATCH,
    &language::BAD_ARGUMENTS,
    &language::NOT_CONSTANT,
    &language::SHAPE_MISMATCH,
    &language::DTYPE_MISMATCH,
    &language::NO_SCHEDULE,
    &language::INVALID_VALUE,
    &language::DUPLICATE_DEFINITION,
    &language::UNKNOWN_TARGET,
    &language::NOT_TEXT,
    &language::INLINE_DEPTH,
    &language::MISPLACED_OPERATION,
    &language::UNUSED_VALUE,
    &language::STALE_VALUE,
    &language::EXPRESSION_TOO_LARGE,
    &language::LOOP_CARRIED_NAME,
    &safety::ARRIVAL_COUNT,
    &safety::TX_LIMIT,
    &safety::WAIT_WITHOUT_ARRIVALS,
    &safety::STAGE_UNBOUND,
    &safety::STAGE_OVERWRITE,
    &safety::READ_BEFORE_READY,
    &safety::RELEASE_BEFORE_RETIRE,
    &safety::PROXY_FENCE,
    &safety::SMEM_ALIGNMENT,
    &safety::VIEW_OVERLAP,
    &safety::POOL_OVERFLOW,
    &safety::DEADLOCK,
    &safety::PHASE_OVERRUN,
    &safety::TMEM_READ_BEFORE_READY,
    &safety::TMA_OOB_FILL,
    &safety::ROWS_OUT_OF_RANGE,
    &safety::MULTICAST_UNGUARDED,
    &safety::CLUSTER_DIVERGENCE,
    &safety::TMEM_OVERWRITE,
    &conformance::INSTRUCTION_UNAVAILABLE,
    &conformance::SMEM_LIMIT,
    &conformance::THREAD_LIMIT,
    &conformance::REGISTER_BUDGET,
    &conformance::WARPGROUP_REQUIRED,
    &conformance::MMA_SHAPE,
    &conformance::TMA_BOX,
    &conformance::CLUSTER_LIMIT,
    &conformance::TMEM_ALLOCATION,
    &conformance::SETMAXNREG_IGNORED,
    &conformance::NAMED_BARRIER_LIMIT,
    &conformance::TMEM_LANES,
    &conformance::MULTICAST_SHAPE,
    &conformance::CLUSTER_BARRIER,
    &consistency::FRAGMENT_OWNERSHIP,
    &consistency::OPERAND_LAYOUT,
    &consistency::LDMATRIX_ROWS,
    &consistency::FP8_ACCUMULATION,
    &consistency::CONTRACTION_MISMATCH,
    &semantics::ROLE_OVERLAP,
    &semantics::BARRIER_ROLES,
    &semantics::STAGE_MISMATCH,
    &semantics::TRIP_COUNT_MISMATCH,
    &semantics::UNUSED_RESOURCE,
    &semantics::NAMED_BARRIER_ROLES,
    &semantics::BUFFERED_FRAGMENT,
    &semantics::REPLICATED_SCATTER,
    &performance::REGISTER_SPILL,
    &performance::WGMMA_SERIALIZED,
    &performance::EXPOSED_LATENCY,
    &performance::TAIL_WAVE,
    &performance::SERIALIZED_EPILOGUE,
    &performance::EXPOSED_EPILOGUE,
    &performance::MEMORY_BOUND,
    &coverage::NOT_LOWERED,
    &coverage::NOT_VERIFIED,
    &coverage::NO_CALIBRATION,
];

/// Every code, in catalog order.
pub fn all() -> &'static [&'static CodeInfo] {
    ALL
}

/// The entry for `query`: a code with or without the `CAKE-` prefix
/// (`CAKE-L003`, `L003`, `cake-l003`) or a slug (`unknown-name`), in any case.
pub fn lookup(query: &str) -> Option<&'static CodeInfo> {
    let query = query.trim();
    let bare = |code: &'static str| code.strip_prefix("CAKE-").unwrap_or(code);
    ALL.iter().copied().find(|info| {
        info.code.eq_ignore_ascii_case(query)
            || bare(info.code).eq_ignore_ascii_case(query)
            || info.name.eq_ignore_ascii_case(query)
    })
}

/// The plain-text page `cake explain CODE` prints. Example sections are
/// left out when the entry has no example.
pub fn explain(info: &CodeInfo) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{} {}", info.code, info.name);
    let _ = writeln!(
        out,
        "category: {}, default severity: {}",
        info.category, info.severity
    );
    let _ = writeln!(out, "\n{}\n", info.summary);
    let _ = writeln!(out, "{}", info.explanation.trim_end());
    for (title, example) in [("Fails:", info.bad), ("Passes:", info.good)] {
        if example.trim().is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}\n");
        for line in example.trim_end().lines() {
            if line.is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    out
}

/// One sentence per category for docs/rules.md.
fn category_description(category: Category) -> &'static str {
    match category {
        Category::Language => {
            "Front-end errors: the file is not a well-formed, well-typed Cake schedule \
             (syntax, unsupported Python, names, types, constants)."
        }
        Category::Safety => {
            "Blocking verifier rules: the schedule could race, deadlock or corrupt memory."
        }
        Category::Conformance => {
            "Blocking verifier rules: an operation breaks the contract of the instruction \
             it lowers to on the chosen target."
        }
        Category::Consistency => {
            "Blocking verifier rules: two declarations or uses of one resource disagree \
             (layout, swizzle, byte counts, stage counts)."
        }
        Category::Semantics => {
            "Blocking verifier rules: the schedule does not compute what it declares."
        }
        Category::Performance => {
            "Non-blocking: the schedule is correct but leaves performance unused."
        }
        Category::Hint => "Non-blocking: a simpler or more canonical spelling exists.",
        Category::Coverage => {
            "Non-blocking: something Cake could not check, stated so it is not assumed."
        }
    }
}

/// The Markdown anchor of a code's section: its lowercase code.
fn anchor(info: &CodeInfo) -> String {
    info.code.to_ascii_lowercase()
}

/// The whole of docs/rules.md, generated so the page cannot drift from the
/// catalog. Order: categories in [`Category::ALL`] order, codes sorted
/// within each, so the output depends only on the catalog's contents.
pub fn rules_markdown() -> String {
    let mut codes: Vec<&CodeInfo> = ALL.to_vec();
    codes.sort_by_key(|info| {
        let rank = Category::ALL.iter().position(|&c| c == info.category);
        (rank, info.code)
    });

    let mut out = String::new();
    out.push_str(
        "<!-- Generated from crates/cake-diag/src/catalog.rs by `catalog::rules_markdown()`. \
         Do not edit: change the catalog and run `CAKE_BLESS=1 cargo test -p cake-diag`. -->\n\n",
    );
    out.push_str("# Cake rules\n\n");
    out.push_str(
        "Every finding Cake reports carries one of the codes below. A code is `CAKE-`, \
         the letter of its category and three digits, and keeps its meaning forever. \
         `cake explain CODE` prints the same text as this page. How findings are \
         reported is described in [diagnostics.md](diagnostics.md).\n\n",
    );

    out.push_str("## Categories\n\n");
    out.push_str("| letter | category | codes | meaning |\n|---|---|---|---|\n");
    for category in Category::ALL {
        let count = codes.iter().filter(|i| i.category == category).count();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            category.letter(),
            category,
            count,
            category_description(category)
        );
    }

    out.push_str("\n## Contents\n\n");
    out.push_str("| code | name | category | severity | summary |\n|---|---|---|---|---|\n");
    for info in &codes {
        let _ = writeln!(
            out,
            "| [{}](#{}) | `{}` | {} | {} | {} |",
            info.code,
            anchor(info),
            info.name,
            info.category,
            info.severity,
            info.summary.replace('|', "\\|")
        );
    }

    for info in &codes {
        let _ = write!(
            out,
            "\n<a id=\"{}\"></a>\n\n## {} `{}`\n\n",
            anchor(info),
            info.code,
            info.name
        );
        let _ = writeln!(
            out,
            "Category: {}. Default severity: {}.\n",
            info.category, info.severity
        );
        let _ = writeln!(out, "{}\n", info.summary);
        let _ = writeln!(out, "{}", info.explanation.trim_end());
        for (title, example) in [("Fails:", info.bad), ("Passes:", info.good)] {
            if example.trim().is_empty() {
                continue;
            }
            let _ = write!(out, "\n{title}\n\n```python\n{}\n```\n", example.trim_end());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_accepts_every_spelling() {
        for query in [
            "CAKE-L003",
            "cake-l003",
            "L003",
            "l003",
            " L003 ",
            "unknown-name",
        ] {
            assert_eq!(lookup(query).map(|i| i.code), Some("CAKE-L003"), "{query}");
        }
        assert!(lookup("L999").is_none());
        assert!(lookup("").is_none());
        assert!(lookup("CAKE-").is_none());
    }

    #[test]
    fn explain_has_every_part() {
        let page = explain(&language::UNKNOWN_NAME);
        assert!(page
            .starts_with("CAKE-L003 unknown-name\ncategory: language, default severity: error\n"));
        assert!(page.contains("\nFails:\n\n    import cake\n"));
        assert!(page.contains("\nPasses:\n"));
        let no_examples = explain(&language::NOT_TEXT);
        assert!(!no_examples.contains("Fails:"));
    }
}
