//! Generated extreme schedules through a whole `cake check` session (front-end, verifier,
//! lowerability): deep (nested brackets, unary chains, operator chains, nested helpers and
//! `if`s), wide (many constants, declarations and statements) and arithmetic-extreme (huge,
//! negative and zero values where sizes, divisors, coordinates and counts go). Whatever the
//! generator draws, the session must end without a panic, within a time bound, from a thread
//! with a small stack, with every finding inside the file; inputs past a documented limit must
//! get that limit's finding.
//!
//! The RNG seed is fixed so CI is reproducible; explore further with e.g.
//! `PROPTEST_RNG_SEED=7 PROPTEST_CASES=500 cargo test -p cake-tests --release --test extreme`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use cake_diag::Finding;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// Debug build on a loaded two-core machine; the cases themselves take milliseconds.
const LIMIT: Duration = Duration::from_secs(20);

fn config() -> Config {
    let mut c = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = 48;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        c.rng_seed = RngSeed::Fixed(0xE7_7E);
    }
    c.failure_persistence = None;
    c
}

/// A valid warp-specialised copy kernel with `top` before the schedule, `decls` among its
/// declarations and `body` inside the producer role of its tile loop.
fn schedule(top: &str, decls: &str, body: &str) -> String {
    let mut s = String::from("import cake\nfrom cake import lm\n\n");
    s.push_str(top);
    s.push_str("\n@cake.schedule(targets=[\"sm_90a\"])\n");
    s.push_str("def k(A: lm.tensor[lm.bf16, \"M\", \"K\"]):\n");
    s.push_str("    pool = lm.smem()\n");
    s.push_str("    load = lm.role(warpgroup=0)\n");
    s.push_str("    acc = load.fragment(shape=(64,), dtype=lm.f32)\n");
    for line in decls.lines() {
        s.push_str("    ");
        s.push_str(line);
        s.push('\n');
    }
    s.push_str("    for tm in lm.tiles(lm.cdiv(M, 128)):\n");
    s.push_str("        with load:\n");
    s.push_str("            acc[:] = 0.0\n");
    for line in body.lines() {
        s.push_str("            ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// Runs a `cake check` session on `src` from a thread with a 256 KiB stack; fails past
/// [`LIMIT`], on a panic, or on a finding outside the file. Returns the findings.
fn session(src: String) -> Result<Vec<Finding>, TestCaseError> {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let len = src.len() as u32;
    let worker = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let checked = cake_driver::check("extreme.py", src.as_bytes(), None);
            let _ = tx.send(checked.findings);
        })
        .expect("a thread");
    let findings = match rx.recv_timeout(LIMIT) {
        Ok(f) => f,
        Err(mpsc::RecvTimeoutError::Timeout) => {
            return Err(TestCaseError::fail(format!(
                "the session took longer than {LIMIT:?}"
            )))
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = worker.join();
            return Err(TestCaseError::fail("the session panicked"));
        }
    };
    prop_assert!(start.elapsed() < LIMIT);
    for f in &findings {
        for s in std::iter::once(f.span).chain(f.labels.iter().map(|l| l.span)) {
            prop_assert!(
                s.start <= s.end && s.end <= len,
                "{}: span {:?} outside a {len}-byte file ({})",
                f.code,
                s,
                f.message
            );
        }
    }
    Ok(findings)
}

fn has(findings: &[Finding], code: &str) -> bool {
    findings.iter().any(|f| f.code == code)
}

/// An expression nested `depth` deep in one of several ways.
fn deep_expr(kind: u8, depth: usize) -> String {
    match kind % 5 {
        0 => format!("{}1{}", "(".repeat(depth), ")".repeat(depth)),
        1 => format!("{}1{}", "[".repeat(depth), "]".repeat(depth)),
        2 => format!("{}1", "-".repeat(depth)),
        3 => format!("1{}", " + 0".repeat(depth)),
        _ => format!("{}1{}", "lm.cdiv(".repeat(depth), ", 1)".repeat(depth)),
    }
}

/// Values a schedule should never be able to smuggle past the checks.
fn extreme_int() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "0",
        "-1",
        "-2147483648",
        "2147483647",
        "2147483648",
        "4294967296",
        "9223372036854775807",
        "-9223372036854775808",
        "99999999999999999999999",
        "65536 * 65536 * 65536",
        "2 ** 70",
        "1 << 40",
    ])
    .prop_map(str::to_string)
}

/// Places in a schedule where a number sets a size, a count, a divisor or a coordinate.
fn placed(at: u8, v: &str) -> (String, String) {
    match at % 8 {
        0 => (
            format!("sB = pool.view(shape=({v}, 64), dtype=lm.bf16)"),
            String::new(),
        ),
        1 => (
            format!("sB = pool.view(shape=(64, 64), dtype=lm.f64, stages={v})"),
            String::new(),
        ),
        2 => (format!("p2 = lm.pipeline(stages={v})"), String::new()),
        3 => (String::new(), format!("x = lm.cdiv(tm, {v})")),
        4 => (String::new(), format!("x = tm // ({v})")),
        5 => (
            String::new(),
            format!("x = lm.load(A, coords=({v}, 0), shape=(64,))"),
        ),
        6 => (
            format!("f2 = load.fragment(shape=({v},), dtype=lm.f32)"),
            String::new(),
        ),
        _ => (
            String::new(),
            format!("for i in range({v}):\n    acc[:] = acc + 1.0"),
        ),
    }
}

proptest! {
    #![proptest_config(config())]

    /// Nesting from shallow to far past every limit: a located finding, no overflow.
    #[test]
    fn deep_expressions(kind in any::<u8>(), depth in prop::sample::select(vec![1usize, 50, 199, 201, 1_000, 5_000, 30_000])) {
        let src = schedule(&format!("C = {}\n", deep_expr(kind, depth)), "", "");
        let findings = session(src)?;
        // Parentheses build no syntax-tree level: only the pre-parse bound (20,000 per line)
        // applies to them; every other form nests the tree, bounded at 200 levels.
        let limit = if kind % 5 == 0 { 20_000 } else { 200 };
        if depth > limit {
            prop_assert!(has(&findings, "CAKE-L020"), "{depth} deep: {:?}", findings.iter().map(|f| f.code).collect::<Vec<_>>());
        }
    }

    /// Helpers calling helpers, `if`s inside `if`s, and helpers that fan out.
    #[test]
    fn deep_statements(depth in 1usize..3_000, fan in 1usize..4, kind in 0u8..3) {
        let top = match kind {
            0 => {
                let mut t = String::from("def h0(x):\n    return x + 1\n");
                for i in 1..depth.min(400) {
                    t.push_str(&format!("def h{i}(x):\n    return h{}(x)\n", i - 1));
                }
                t.push_str(&format!("C = h{}(1)\n", depth.min(400) - 1));
                t
            }
            1 => {
                let calls = vec!["f(n - 1)"; fan].join(" + ");
                format!("def f(n):\n    if n == 0:\n        return 1\n    return {calls}\n\nC = f({})\n", depth.min(60))
            }
            _ => {
                let mut t = String::from("C = 0\n");
                for i in 0..depth.min(300) {
                    t.push_str(&format!("{}if C >= 0:\n", "    ".repeat(i)));
                }
                t.push_str(&format!("{}C = 1\n", "    ".repeat(depth.min(300))));
                t
            }
        };
        session(schedule(&top, "", ""))?;
    }

    /// Many constants, declarations and statements.
    #[test]
    fn wide_schedules(constants in 0usize..20_000, views in 0usize..300, stmts in 0usize..3_000) {
        let mut top = String::new();
        for i in 0..constants {
            top.push_str(&format!("C{i} = {i}\n"));
        }
        let mut decls = String::new();
        for i in 0..views {
            decls.push_str(&format!("v{i} = pool.view(shape=(8, 64), dtype=lm.bf16)\n"));
        }
        let mut body = String::new();
        for _ in 0..stmts {
            body.push_str("acc[:] = acc + 1.0\n");
        }
        session(schedule(&top, &decls, &body))?;
    }

    /// Extreme numbers wherever a size, count, divisor or coordinate goes: an error or a clean
    /// check, never a wrapped value, a panic or a hang.
    #[test]
    fn arithmetic_extremes(v in extreme_int(), at in any::<u8>()) {
        let (decls, body) = placed(at, &v);
        let findings = session(schedule("", &decls, &body))?;
        if v == "0" && matches!(at % 8, 3 | 4) {
            prop_assert!(findings.iter().any(|f| f.is_error()), "division by a zero constant passed: {v} at {at}");
        }
    }
}

/// A two-ring copy nest (tests/check/D006_split_unrolled_copies.py's shape) with `v` where
/// copy coverage enumerates: the inner loop's trips, the outer loop's stride, a row slice's
/// start and the compile-time `range` that unrolls the copies.
fn copy_nest(at: u8, v: &str) -> String {
    let (r, stride, start, unroll) = match at % 4 {
        0 => (v, "2", "kw * 16", "2"),
        1 => ("2", v, "kw * 16", "2"),
        2 => ("2", "2", &*format!("kw * ({v})"), "2"),
        _ => ("2", "2", "kw * 16", v),
    };
    format!(
        r#"import cake
from cake import lm


@cake.schedule(targets=["sm_90a"], cluster=(2, 1, 1))
def k(A: lm.tensor[lm.bf16, 16, "K"], B: lm.tensor[lm.bf16, "N", "K"]):
    pool = lm.smem()
    sW = pool.view(shape=(64, 64), dtype=lm.bf16, stages=8, swizzle=128)
    sX = pool.view(shape=(32, 64), dtype=lm.bf16, stages=2, swizzle=128)
    wload = lm.role(warp=0)
    xload = lm.role(warp=1)
    math = lm.role(warpgroup=1)
    wpipe = lm.pipeline(stages=8)
    xpipe = lm.pipeline(stages=2)
    wfull = lm.barrier(wpipe, producers=[wload], consumers=[math])
    wempty = lm.barrier(wpipe, producers=[math], consumers=[wload])
    xfull = lm.barrier(xpipe, producers=[xload], consumers=[math])
    xempty = lm.barrier(xpipe, producers=[math], consumers=[xload])
    acc = math.fragment(shape=(64, 16), dtype=lm.f32)
    KX = lm.cdiv(lm.cdiv(K, 64), 4)
    for ks, tn in lm.tiles(2, lm.cdiv(N, 64)):
        with wload:
            for kx in lm.range(KX):
                for kw in lm.range({r}, pipeline=wpipe):
                    lm.wait(wempty)
                    sW.tma_load(B, coords=(tn * 64, (ks * KX * 2 + kx * {stride} + kw) * 64), barrier=wfull)
        with xload:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xempty)
                for kw in range({unroll}):
                    sX.rows({start}, 16).tma_load(A, coords=(0, (ks * KX * 2 + kx * 2 + kw) * 64), barrier=xfull)
        with math:
            for kx in lm.range(KX, pipeline=xpipe):
                lm.wait(xfull)
                for kw in lm.range({r}, pipeline=wpipe):
                    lm.wait(wfull)
                    lm.mma(acc, sW, sX.stage(xpipe.stage).rows({start}, 16).T, accumulate=kx + kw > 0, release=wempty)
                lm.commit(xempty)
"#
    )
}

proptest! {
    #![proptest_config(config())]

    /// Extreme numbers where copy coverage enumerates a copy nest (trip counts, strides, row
    /// starts, unrolled copies): a finding or a clean check, never an overflow or a hang.
    #[test]
    fn copy_nests_with_extreme_numbers(v in extreme_int(), at in any::<u8>()) {
        session(copy_nest(at, &v))?;
    }
}
