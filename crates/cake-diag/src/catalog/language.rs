//! Language rules (`CAKE-Lxxx`): front-end codes, the file is not a well-formed, well-typed Cake
//! schedule. Examples are the test files under tests/check/, so every documented example is also
//! a regression test.

use super::CodeInfo;
use crate::finding::{Category, Severity};

pub const SYNTAX_ERROR: CodeInfo = CodeInfo {
    code: "CAKE-L001",
    name: "syntax-error",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"The file is not valid Python."#,
    explanation: r#"Cake schedules are ordinary Python files, read by a real Python parser and never executed. When the parser cannot read the file, nothing else can be checked, so syntax errors are reported first; the parser recovers where it can, so several may be reported at once.

The span is where the parser gave up, which is often just after the real mistake: look for an unclosed bracket, a missing `:` after `def`, `for`, `if` or `with`, or inconsistent indentation on the lines above."#,
    bad: include_str!("../../../../tests/check/CAKE-L001-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L001-good.py"),
};

pub const UNSUPPORTED_PYTHON: CodeInfo = CodeInfo {
    code: "CAKE-L002",
    name: "unsupported-python",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A Python construct outside the Cake subset."#,
    explanation: r#"Cake reads Python syntax but interprets only a small subset of it: functions, assignments of constants and resources, arithmetic on compile-time values, `for` loops over `range`, `lm.range` or `lm.tiles`, `with role:` regions, `if`, and calls into `lm`. Everything else (`while`, `lambda`, `class`, comprehensions, f-strings, imports other than `cake`, `try`, `global`, `async`, `yield`, ...) is rejected, because the compiler must know every loop bound, resource and role before the kernel runs, and because the file is only read, never run, so constructs that only mean something when executed have no meaning here.

The message names the construct and what to write instead: a `while` loop becomes `for k in lm.range(n, pipeline=pipe)`, a comprehension becomes an unrolled `for` over `range(...)`, an f-string becomes a plain string."#,
    bad: include_str!("../../../../tests/check/CAKE-L002-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L002-good.py"),
};

pub const UNKNOWN_NAME: CodeInfo = CodeInfo {
    code: "CAKE-L003",
    name: "unknown-name",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A name is used that is not defined at that point."#,
    explanation: r#"Every name in a schedule must be defined before it is used: a parameter, a symbolic dimension of a parameter's shape (`"M"` in `lm.tensor[lm.bf16, "M", "K"]` defines `M`), an earlier assignment in the same function, a helper function in the same file, or an attribute of `lm`. Names are resolved in source order at compile time; there are no globals from other modules and no Python builtins beyond the ones the subset documents.

When a defined name is close in spelling, the finding's help suggests it. Otherwise define the value before its first use."#,
    bad: include_str!("../../../../tests/check/CAKE-L003-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L003-good.py"),
};

pub const TYPE_MISMATCH: CodeInfo = CodeInfo {
    code: "CAKE-L004",
    name: "type-mismatch",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"An operand has the wrong kind or type."#,
    explanation: r#"Every value in a schedule has a kind (tensor, pool, view, fragment, role, pipeline, barrier, integer, dtype, ...) and every operand position accepts only some kinds: `producers=` takes roles, `barrier=` takes a barrier, `lm.mma` takes a fragment accumulator and two views or fragments. Cake checks this before anything else looks at the schedule, so ill-typed programs never reach the verifier or lowering.

The finding's expected and actual values name the kinds. The usual cause is passing the wrong one of two similar names, such as the pipeline where its barrier belongs.

Operators are typed the same way. `/` on two integer values (indices, i32 registers or scalars) is refused: Python's gives a float and C's truncates, and Cake picks neither silently; write `//` (which floors, as in Python) or `lm.cdiv`, or cast one side to a float."#,
    bad: include_str!("../../../../tests/check/CAKE-L004-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L004-good.py"),
};

pub const BAD_ARGUMENTS: CodeInfo = CodeInfo {
    code: "CAKE-L005",
    name: "bad-arguments",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A call has the wrong number of arguments or a wrong, missing or repeated keyword."#,
    explanation: r#"Each `lm` operation and each helper function has a fixed signature. A call is rejected when it passes too many or too few positional arguments, an unknown keyword, the same keyword twice, or omits a required one. Keywords are how a schedule states its commitments (`stages=`, `swizzle=`, `producers=`), so a misspelled keyword would otherwise silently fall back to a default that the author did not choose.

The message names the parameter; for an unknown keyword the help suggests the closest valid one."#,
    bad: include_str!("../../../../tests/check/CAKE-L005-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L005-good.py"),
};

pub const NOT_CONSTANT: CodeInfo = CodeInfo {
    code: "CAKE-L006",
    name: "not-constant",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A value that must be known at compile time is not."#,
    explanation: r#"Everything that decides resources, layout or code shape must be a compile-time constant: view shapes, stage counts, swizzles, role warpgroups and register budgets, and the bounds of `range(...)` loops that the front-end unrolls. Constants are literals, names bound to constants, and arithmetic on them. The symbolic dimensions of tensor parameters (`M`, `N`, `K`) are known only at launch, so they may appear in tensor coordinates and in `lm.range` and `lm.tiles` trip counts, but not in a shape.

Shared memory, registers and instruction forms are fixed when the kernel is compiled, which is why these values cannot wait for the launch. Name a constant tile size (`BK = 64`) and iterate over the dimension instead."#,
    bad: include_str!("../../../../tests/check/CAKE-L006-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L006-good.py"),
};

pub const SHAPE_MISMATCH: CodeInfo = CodeInfo {
    code: "CAKE-L007",
    name: "shape-mismatch",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"Operand shapes disagree or do not divide evenly."#,
    explanation: r#"Shapes are part of a value's type and are checked like types: an MMA of `(M, K)` by `(K, N)` accumulates into `(M, N)`, a copy needs equal shapes on both sides, and a tile split across warpgroups or stages must divide evenly. A mismatch here would otherwise become out-of-bounds shared-memory traffic or an instruction shape the hardware does not have.

The finding's expected and actual values give both shapes. Fix the declaration the label points at, or take a sub-view (`sA.rows(i, n)`) of the right size."#,
    bad: include_str!("../../../../tests/check/CAKE-L007-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L007-good.py"),
};

pub const DTYPE_MISMATCH: CodeInfo = CodeInfo {
    code: "CAKE-L008",
    name: "dtype-mismatch",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"Operand element types disagree."#,
    explanation: r#"Cake never converts element types implicitly. Copies (TMA, cp.async, loads and stores) move bytes, so source and destination must have the same dtype; MMA operands must have a dtype pair the instruction accepts, and the accumulator one it can accumulate into. An implicit conversion would hide either a bug or a cost, and a performance-transparent schedule shows both.

Declare the view with the tensor's dtype, or convert explicitly with `lm.cast` where the conversion is intended."#,
    bad: include_str!("../../../../tests/check/CAKE-L008-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L008-good.py"),
};

pub const NO_SCHEDULE: CodeInfo = CodeInfo {
    code: "CAKE-L009",
    name: "no-schedule",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"The file defines no `@cake.schedule` function."#,
    explanation: r#"A Cake file must contain at least one function decorated with `@cake.schedule(...)`; that function is the kernel. Undecorated functions are helpers, inlined where they are called, and are never compiled on their own. An empty file gets this finding too.

Add the decorator with the targets the schedule supports, e.g. `@cake.schedule(targets=["sm_90a"])`, and check that the file is the one you meant to compile."#,
    bad: include_str!("../../../../tests/check/CAKE-L009-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L009-good.py"),
};

pub const INVALID_VALUE: CodeInfo = CodeInfo {
    code: "CAKE-L010",
    name: "invalid-value",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A value is outside its legal range."#,
    explanation: r#"Some parameters only make sense in a range, independent of the target: stage counts and shape extents are at least 1, a swizzle is one of 0, 32, 64 or 128 bytes, warpgroup indices are not negative, a register budget is a multiple of 8 between 24 and 256, a swizzled view's row wider than the swizzle span is a whole number of span-wide panels (96 bf16 columns under 128B swizzle are one and a half 64-column panels: the copies into the last panel would write past the view; use a narrower swizzle or pad the row), `zero=` names each tensor once, a TMA store's `reduce` is `"add"`. Values outside the range describe no hardware configuration at all, so they are rejected where they are written rather than deep inside lowering.

The finding's expected value lists the legal values or range, and actual the value found."#,
    bad: include_str!("../../../../tests/check/CAKE-L010-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L010-good.py"),
};

pub const DUPLICATE_DEFINITION: CodeInfo = CodeInfo {
    code: "CAKE-L011",
    name: "duplicate-definition",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A name is defined twice where it must be unique."#,
    explanation: r#"Resources (pools, views, roles, pipelines, barriers, fragments), schedules and helper functions are declared once per scope. Findings, generated code and the cost report all name resources by the name they were declared with, so a second declaration under the same name would make every later mention ambiguous; in Python it would silently replace the first.

The label points at the first definition. Rename one of the two, or delete the one that is not needed."#,
    bad: include_str!("../../../../tests/check/CAKE-L011-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L011-good.py"),
};

pub const UNKNOWN_TARGET: CodeInfo = CodeInfo {
    code: "CAKE-L012",
    name: "unknown-target",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A target name is not one Cake knows."#,
    explanation: r#"A schedule lists the exact targets it supports, and Cake compiles for exactly one of them; it never steps down to a nearby architecture. The known targets are sm_80, sm_89, sm_90a, sm_100a, sm_103a, sm_120a and sm_121a, and the finding lists them. Architecture-specific features such as wgmma and setmaxnreg exist only on the `a` variants, so `sm_90` is not a spelling of `sm_90a`: it names a target without those instructions, which Cake does not support.

Use one of the listed names."#,
    bad: include_str!("../../../../tests/check/CAKE-L012-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L012-good.py"),
};

pub const NOT_TEXT: CodeInfo = CodeInfo {
    code: "CAKE-L013",
    name: "not-text",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"The file is not UTF-8 text."#,
    explanation: r#"Schedules are Python source, which Cake reads as UTF-8. A file that does not decode (a binary, a compiled `.pyc`, or text saved in another encoding) is rejected before parsing; the span points at the first byte that is not valid UTF-8.

Check that the path names the schedule source, and re-save it as UTF-8."#,
    bad: "",
    good: "",
};

pub const INLINE_DEPTH: CodeInfo = CodeInfo {
    code: "CAKE-L014",
    name: "inline-depth",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"Helper functions recurse, or nest deeper than the inlining limit."#,
    explanation: r#"Helper functions are inlined at compile time: a kernel has no call stack for them. A helper that calls itself, directly or through other helpers, or a chain of calls deeper than the inlining limit, would never finish inlining, so Cake stops at the limit and reports the call that crossed it; the expected value is the limit.

Compute the value without recursion, or unroll with a `for` loop over `range(...)`."#,
    bad: include_str!("../../../../tests/check/CAKE-L014-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L014-good.py"),
};

pub const MISPLACED_OPERATION: CodeInfo = CodeInfo {
    code: "CAKE-L015",
    name: "misplaced-operation",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"An operation is used where it is not allowed."#,
    explanation: r#"Some operations are only meaningful in some places. Work done by threads (TMA copies, MMAs, waits, stores) happens inside a `with role:` region, because every instruction must belong to the warps that execute it; role regions do not nest, because a warp has one role; resources are declared at the top level of the schedule, not inside loops or roles; and a schedule does not `return`, since a kernel's results are the tensors it writes.

Move the operation to where it belongs; when an enclosing construct is the problem (a role region inside another, a declaration inside a loop), a label points at it."#,
    bad: include_str!("../../../../tests/check/CAKE-L015-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L015-good.py"),
};

pub const UNUSED_VALUE: CodeInfo = CodeInfo {
    code: "CAKE-L016",
    name: "unused-value",
    category: Category::Language,
    severity: Severity::Warning,
    summary: r#"An expression statement computes a value that is thrown away."#,
    explanation: r#"Operations with an effect (copies, MMAs, waits, arrives, stores) are written as statements. An expression without one, such as a sub-view, an arithmetic result or a comparison, does nothing as a statement; it is almost always a forgotten assignment or an argument that was meant to go to a call. Docstrings are exempt.

Assign the value to a name, pass it where it was meant to go, or delete the line."#,
    bad: include_str!("../../../../tests/check/CAKE-L016-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L016-good.py"),
};

pub const STALE_VALUE: CodeInfo = CodeInfo {
    code: "CAKE-L017",
    name: "stale-value",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A name is used after the fragment its value was computed from was overwritten."#,
    explanation: r#"In Cake a name bound to a register expression (`better = d < best_d`) names the computation, which the compiler places where the name is used. If a fragment the expression reads is overwritten in between (`best_d[:] = ...`), the use would see the new contents, while the same Python would see the old value. Rather than silently differ, Cake reports the use.

The same goes for a run-time loop: a name bound before the loop and read in its body, whose fragment the body overwrites later, would read the new contents from the second iteration on.

Use the name before the fragment changes, compute it again after the update, or keep the old value in a fragment of its own."#,
    bad: include_str!("../../../../tests/check/CAKE-L017-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L017-good.py"),
};

pub const EXPRESSION_TOO_LARGE: CodeInfo = CodeInfo {
    code: "CAKE-L018",
    name: "expression-too-large",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"An expression expands to more terms than the compiler accepts."#,
    explanation: r#"A name bound to a register expression stands for the whole expression wherever it is used, so `x = x + x` repeated twenty times builds a value of a million terms. The IR printer and the code generator see the expanded expression, so Cake stops at 65,536 terms rather than emit megabytes of code.

Keep intermediate values in a fragment (`frag[:] = value`), which is computed once and then read."#,
    bad: include_str!("../../../../tests/check/CAKE-L018-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L018-good.py"),
};

pub const LOOP_CARRIED_NAME: CodeInfo = CodeInfo {
    code: "CAKE-L019",
    name: "loop-carried-name",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"A name read in a run-time loop is bound again later in the same loop body."#,
    explanation: r#"The body of a run-time loop (`lm.range`, the tile loop) is written once and runs many times. Python would carry a name bound again in the body into the next iteration: `col = col + 16` at the end of the body moves the next iteration's `col`. Cake cannot: the body reads the binding from before the loop on every iteration. Rather than silently differ, Cake reports the read.

Compute the value from the loop variable (`k * 16`), or carry run-time state in a fragment (`frag[:] = ...`), which is storage and does carry over."#,
    bad: include_str!("../../../../tests/check/CAKE-L019-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L019-good.py"),
};

pub const NESTING_TOO_DEEP: CodeInfo = CodeInfo {
    code: "CAKE-L020",
    name: "nesting-too-deep",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"The source, or its evaluation, nests deeper than the compiler accepts."#,
    explanation: r#"The front-end reads a schedule by walking its syntax tree recursively, so nesting is bounded: statements and expressions may nest at most 200 levels deep (brackets, operators in a chain such as `3 + 0 + 0 + ...`, a run of unary minus), a logical line may hold at most 20,000 brackets, operators and indentation before it is parsed at all, evaluation may nest at most 1,000 levels counted through inlined helpers, and an IR expression built through names bound to expressions (`x = x + 1` repeated) may nest at most 512 levels. Rather than overflow its stack, Cake stops at the limit and reports where it was crossed.

Split the expression over several assignments, or keep intermediate values in a fragment (`frag[:] = value`). docs/language.md, "Limits", lists every bound."#,
    bad: include_str!("../../../../tests/check/CAKE-L020-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L020-good.py"),
};

pub const EVALUATION_BUDGET: CodeInfo = CodeInfo {
    code: "CAKE-L021",
    name: "evaluation-budget",
    category: Category::Language,
    severity: Severity::Error,
    summary: r#"Compile-time evaluation does more work than the compiler accepts."#,
    explanation: r#"Schedules are evaluated at compile time: `range(...)` loops are unrolled and helpers are inlined at every call. Each unrolled iteration, inlined call, IR statement and expression created and tuple element built counts against a budget of 1,048,576 units per file; a helper that calls itself twice per level, or nested `range(4096)` loops, would otherwise run for hours or exhaust memory. Cake stops at the budget, reports the construct that was being evaluated, and evaluates nothing more in the file.

Unroll less: use `lm.range(...)` for loops that may run at run time, and do not multiply unrolled loops or recursive helpers."#,
    bad: include_str!("../../../../tests/check/CAKE-L021-bad.py"),
    good: include_str!("../../../../tests/check/CAKE-L021-good.py"),
};

/// Every code of this module, in number order; [`super::ALL`] is made of these lists.
pub const ALL: &[&CodeInfo] = &[
    &SYNTAX_ERROR,
    &UNSUPPORTED_PYTHON,
    &UNKNOWN_NAME,
    &TYPE_MISMATCH,
    &BAD_ARGUMENTS,
    &NOT_CONSTANT,
    &SHAPE_MISMATCH,
    &DTYPE_MISMATCH,
    &NO_SCHEDULE,
    &INVALID_VALUE,
    &DUPLICATE_DEFINITION,
    &UNKNOWN_TARGET,
    &NOT_TEXT,
    &INLINE_DEPTH,
    &MISPLACED_OPERATION,
    &UNUSED_VALUE,
    &STALE_VALUE,
    &EXPRESSION_TOO_LARGE,
    &LOOP_CARRIED_NAME,
    &NESTING_TOO_DEEP,
    &EVALUATION_BUDGET,
];
