//! Hostile schedules: each once crashed the front-end (a stack overflow aborts the process, and
//! segfaulted Python), hung it, exhausted its memory or mislocated a finding. Each must now end
//! within [`LIMIT`] with a located finding of its own code. The cases are sized so the old
//! behaviour blows far past the bound (hours, gigabytes, or an abort), and each runs from a
//! thread with a small stack, as Python threads and async workers have.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use cake_diag::{Finding, SourceFile};

/// Generous for a debug build on a loaded two-core machine; every case takes well under a
/// second on an idle one.
const LIMIT: Duration = Duration::from_secs(10);

const HEAD: &str = "import cake\nfrom cake import lm\n\n\n";

/// A schedule around `body`, which runs in role `load` inside the tile loop (indented 12
/// spaces), with a pool, a view `sA` (128 x 64 bf16), a fragment `acc` (64 f32), a pipeline
/// and a barrier `full` declared; `top` goes before the schedule.
fn schedule(top: &str, decls: &str, body: &str) -> String {
    let mut s = String::from(HEAD);
    s.push_str(top);
    s.push_str("\n@cake.schedule(targets=[\"sm_90a\"])\n");
    s.push_str("def k(A: lm.tensor[lm.bf16, \"M\", \"K\"]):\n");
    // The skeleton stores nothing; `del` says its tensor is unused on purpose (CAKE-M009).
    s.push_str("    del A\n");
    s.push_str("    pool = lm.smem()\n");
    s.push_str("    sA = pool.view(shape=(128, 64), dtype=lm.bf16)\n");
    s.push_str("    load = lm.role(warpgroup=0)\n");
    s.push_str("    acc = load.fragment(shape=(64,), dtype=lm.f32)\n");
    s.push_str("    pipe = lm.pipeline(stages=1)\n");
    s.push_str("    full = lm.barrier(pipe, producers=[load], consumers=[load])\n");
    for line in decls.lines() {
        s.push_str("    ");
        s.push_str(line);
        s.push('\n');
    }
    s.push_str("    for tm in lm.tiles(lm.cdiv(M, 128)):\n");
    s.push_str("        with load:\n");
    for line in body.lines() {
        s.push_str("            ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// Checks `src` the way `cake check` does, from a thread with a 256 KiB stack, and fails the
/// test if that takes longer than [`LIMIT`].
fn check(src: String) -> (SourceFile, Vec<Finding>) {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let checked = cake_driver::check("hostile.py", src.as_bytes(), None);
            let _ = tx.send((checked.file, checked.findings));
        })
        .expect("a thread");
    match rx.recv_timeout(LIMIT) {
        Ok(out) => out,
        Err(e) => panic!("no answer after {:?}: {e}", start.elapsed()),
    }
}

/// The findings of `code`, as (line, message); fails unless there is at least one.
fn located(src: String, code: &str) -> Vec<(u32, String)> {
    let (file, findings) = check(src);
    let hits: Vec<(u32, String)> = findings
        .iter()
        .filter(|f| f.code == code)
        .map(|f| (file.line_of(f.span.start), f.message.clone()))
        .collect();
    assert!(
        !hits.is_empty(),
        "expected {code}, got {:#?}",
        findings
            .iter()
            .map(|f| (f.code, f.message.as_str()))
            .collect::<Vec<_>>()
    );
    hits
}

/// The 1-based line of the first line of `src` that contains `needle`.
fn line_with(src: &str, needle: &str) -> u32 {
    src.lines()
        .position(|l| l.contains(needle))
        .expect("needle in the source") as u32
        + 1
}

fn assert_at(src: &str, code: &str, needle: &str) {
    let want = line_with(src, needle);
    let hits = located(src.to_string(), code);
    assert!(
        hits.iter().any(|(line, _)| *line == want),
        "{code} expected on line {want} (`{needle}`), got {hits:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Nesting: these overflowed the recursive evaluator's stack.

#[test]
fn a_long_chain_of_additions_is_too_deep() {
    // 6 KB: `STAGES = 3 + 0 + 0 + ...`, 1,500 terms.
    let top = format!("STAGES = 3{}\n", " + 0".repeat(1500));
    let src = schedule(&top, "", "pass");
    assert_at(&src, "CAKE-L020", "STAGES = 3");
}

#[test]
fn a_deeply_nested_list_is_too_deep() {
    let top = format!("X = {}1{}\n", "[".repeat(5000), "]".repeat(5000));
    let src = schedule(&top, "", "pass");
    assert_at(&src, "CAKE-L020", "X = [[[");
}

#[test]
fn a_run_of_unary_minus_is_too_deep() {
    let top = format!("X = {}1\n", "-".repeat(5000));
    let src = schedule(&top, "", "pass");
    assert_at(&src, "CAKE-L020", "X = ---");
}

#[test]
fn a_line_too_deep_to_parse_is_refused_before_parsing() {
    // A million unary minus: parsing alone took gigabytes, dropping the tree overflowed.
    let top = format!("X = {}1\n", "-".repeat(1_000_000));
    let src = schedule(&top, "", "pass");
    let hits = located(src.clone(), "CAKE-L020");
    assert!(
        hits.iter()
            .any(|(l, m)| *l == line_with(&src, "X = ---") && m.contains("20000")),
        "{hits:?}"
    );
}

#[test]
fn helpers_nesting_deep_expressions_stop_at_the_evaluation_depth() {
    // Each helper is shallow enough on its own (150 levels), but 30 of them inlined into each
    // other nest 4,500 levels deep.
    let mut top = String::new();
    for i in 0..30 {
        top.push_str(&format!(
            "def h{i}(x):\n    return {}h{}(x)\n\n\n",
            "-".repeat(150),
            i + 1
        ));
    }
    top.push_str("def h30(x):\n    return x\n");
    let src = schedule(&top, "", "y = h0(tm)");
    let hits = located(src, "CAKE-L020");
    assert!(
        hits.iter().any(|(_, m)| m.contains("evaluation nests")),
        "{hits:?}"
    );
}

#[test]
fn an_expression_nested_through_names_is_too_deep() {
    // No nesting in the source: each unrolled step wraps the expression once more.
    let src = schedule("", "", "x = tm\nfor i in range(4000):\n    x = x + 1");
    let hits = located(src.clone(), "CAKE-L020");
    assert!(
        hits.iter()
            .any(|(l, m)| *l == line_with(&src, "x = x + 1") && m.contains("nests more than")),
        "{hits:?}"
    );
}

#[test]
fn a_long_run_time_elif_chain_is_too_deep_and_a_compile_time_one_is_fine() {
    // Each `elif` was a synthetic `if` holding a copy of the rest of the chain: quadratic,
    // and one stack frame per clause.
    let mut body = String::from("if tm == 0:\n    pass\n");
    for i in 1..3000 {
        body.push_str(&format!("elif tm == {i}:\n    pass\n"));
    }
    let hits = located(schedule("", "", &body), "CAKE-L020");
    assert!(
        hits.iter().any(|(_, m)| m.contains("evaluation nests")),
        "{hits:?}"
    );

    let mut body = String::from("if 0 == 1:\n    pass\n");
    for i in 1..20_000 {
        body.push_str(&format!("elif {i} == 0:\n    pass\n"));
    }
    body.push_str("else:\n    undefined_name\n");
    // The chain is followed to its `else`, which is interpreted.
    let src = schedule("", "", &body);
    assert_at(&src, "CAKE-L003", "undefined_name");
}

// ---------------------------------------------------------------------------------------------
// Work: these ran for hours or exhausted memory.

#[test]
fn a_helper_calling_itself_twice_per_level_runs_out_of_budget() {
    // fan(30): 2^31 inlined calls, about 85 minutes before the budget.
    let top = "def fan(n):\n    if n == 0:\n        return 0\n    return fan(n - 1) + fan(n - 1)\n";
    let src = schedule(top, "", "x = fan(30)");
    let hits = located(src, "CAKE-L021");
    assert_eq!(
        hits.len(),
        1,
        "one finding, then evaluation stops: {hits:?}"
    );
}

#[test]
fn three_nested_unrolled_loops_run_out_of_budget() {
    let body = "for i in range(4096):\n    for j in range(4096):\n        for l in range(4096):\n            pass";
    let hits = located(schedule("", "", body), "CAKE-L021");
    assert_eq!(hits.len(), 1, "{hits:?}");
}

#[test]
fn two_nested_unrolled_loops_around_an_operation_run_out_of_budget() {
    // 16 million fragment updates: 6 GB of IR before the process aborted.
    let body = "for i in range(4096):\n    for j in range(4096):\n        acc[:] = acc + 1.0";
    let hits = located(schedule("", "", body), "CAKE-L021");
    assert_eq!(hits.len(), 1, "{hits:?}");
}

#[test]
fn a_tuple_doubled_through_names_runs_out_of_budget() {
    // 2^40 elements if built.
    let body = "t = (1,)\nfor i in range(40):\n    t = t + t";
    let src = schedule("", "", body);
    assert_at(&src, "CAKE-L021", "t = t + t");
}

#[test]
fn many_module_level_constants_are_read_in_linear_time() {
    // 40,000 constants took 39 s: every constant copied all the ones before it.
    let mut top = String::new();
    for i in 0..40_000 {
        top.push_str(&format!("C{i} = {i}\n"));
    }
    top.push_str("LAST = C39999 + 1\n");
    let (_, findings) = check(schedule(&top, "", "x = LAST\nassert x == 40000"));
    assert!(
        !findings.iter().any(|f| f.is_error()),
        "{:#?}",
        findings.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
}

#[test]
fn many_resources_are_named_in_linear_time() {
    // Each declaration searched every arena for its name.
    let mut decls = String::new();
    for i in 0..100_000 {
        decls.push_str(&format!("p{i} = lm.pipeline(stages=1)\n"));
    }
    decls.push_str("p0 = lm.pipeline(stages=1)\n");
    let src = schedule("", &decls, "pass");
    let want = src.lines().count() as u32 - 3;
    let hits = located(src, "CAKE-L011");
    assert!(hits.iter().any(|(l, _)| *l == want), "{hits:?}");
}

// ---------------------------------------------------------------------------------------------
// Positions and values.

#[test]
fn carriage_returns_alone_end_lines() {
    let src = schedule("", "", "x = undefined_name").replace('\n', "\r");
    let (file, findings) = check(src.clone());
    let f = findings
        .iter()
        .find(|f| f.code == "CAKE-L003")
        .expect("the unknown name");
    let line = src
        .split('\r')
        .position(|l| l.contains("undefined_name"))
        .unwrap() as u32
        + 1;
    assert_eq!(file.line_col(f.span.start), (line, 17));
    let text = cake_diag::render::human(&file, &findings, false);
    assert!(text.contains(&format!("hostile.py:{line}:17")), "{text}");
}

#[test]
fn division_by_a_zero_constant_is_an_error() {
    for (expr, marker) in [
        ("lm.cdiv(M, 0)", "lm.cdiv(M, 0)"),
        ("tm // 0", "tm // 0"),
        ("tm % 0", "tm % 0"),
        ("lm.cdiv(tm, 2 - 2)", "lm.cdiv(tm, 2 - 2)"),
        ("7 // 0", "7 // 0"),
        ("7 % 0", "7 % 0"),
        ("7 / 0", "7 / 0"),
    ] {
        let src = schedule("", "", &format!("x = {expr}\ny = x"));
        let hits = located(src.clone(), "CAKE-L010");
        assert!(
            hits.iter()
                .any(|(l, m)| *l == line_with(&src, marker) && m.contains("division by zero")),
            "{expr}: {hits:?}"
        );
    }
}

#[test]
fn a_view_whose_size_overflows_is_an_error_where_declared() {
    for decl in [
        // 2^64 elements: the u64 size wrapped to 0 and the view was placed in 1 KB.
        "big = pool.view(shape=(65536, 65536, 65536, 65536), dtype=lm.f64)",
        "big = pool.view(shape=(1048576, 4096), dtype=lm.bf16)",
        // Each stage fits, the stages together do not.
        "big = pool.view(shape=(128, 64), dtype=lm.f32, stages=2000000)",
    ] {
        let src = schedule("", decl, "pass");
        assert_at(&src, "CAKE-L010", "big = pool.view");
    }
    // Two fragments that fit broadcast to one of 2^40 elements.
    let decls = "col = load.fragment(shape=(1048576, 1), dtype=lm.f32)\nrow = load.fragment(shape=(1, 1048576), dtype=lm.f32)";
    let src = schedule("", decls, "x = col + row\ny = x");
    assert_at(&src, "CAKE-L010", "x = col + row");
}

#[test]
fn constants_beyond_32_bits_are_an_error_where_written() {
    for (body, marker) in [
        (
            "sA.tma_load(A, coords=(tm * 64, 3000000000), barrier=full)",
            "3000000000",
        ),
        ("x = tm + 4294967296\ny = x", "4294967296"),
    ] {
        let src = schedule("", "", body);
        let hits = located(src.clone(), "CAKE-L010");
        assert!(
            hits.iter()
                .any(|(l, m)| *l == line_with(&src, marker) && m.contains("32-bit")),
            "{body}: {hits:?}"
        );
    }
    let src = schedule("", "p2 = lm.pipeline(stages=3000000000)", "pass");
    assert_at(&src, "CAKE-L010", "p2 = lm.pipeline");
}

#[test]
fn a_trip_count_beyond_32_bits_is_refused_at_its_literal() {
    // The verifier's coverage rules enumerate loop trips times replicas in i64; they rely on the
    // front-end keeping every index literal within 32 bits (and they bound their products with
    // checked arithmetic besides).
    let src = format!(
        "{HEAD}@cake.schedule(targets=[\"sm_90a\"])\n\
         def k(C: lm.tensor[lm.f32, \"M\", 16]):\n\
         \x20   math = lm.role(warpgroups=[0, 1, 2, 3])\n\
         \x20   acc = math.fragment(shape=(64, 16), dtype=lm.f32)\n\
         \x20   for tm in lm.tiles(lm.cdiv(M, 256)):\n\
         \x20       with math:\n\
         \x20           for i in lm.range(4611686018427387904):\n\
         \x20               acc[:] = 0.0\n\
         \x20               lm.store(C, acc, coords=(tm * 256 + math.index * 64, i))\n"
    );
    assert_at(&src, "CAKE-L010", "lm.range(4611686018427387904)");
}
