//! Reproducers of known front-end bugs, each asserting the *correct* behaviour. They are
//! `#[ignore]`d so CI stays green until the bug is fixed; run them with
//!
//! ```text
//! cargo test -p cake-tests --test front_end_bugs -- --ignored
//! ```
//!
//! When one passes, remove its `#[ignore]` (and, for a panic, its entry in `KNOWN_PANICS` in
//! no_panic.rs) so it guards the fix.

use cake_diag::Finding;

const HEAD: &str = "import cake\nfrom cake import lm\n\n\n";

/// A schedule with `body` inside a role region inside the tile loop, with a pool, a view `sA`
/// (128 x 64 bf16) and a role `load` declared.
fn in_role(body: &str) -> String {
    let mut s = String::from(HEAD);
    s.push_str("@cake.schedule(targets=[\"sm_90a\"])\n");
    s.push_str("def k(A: lm.tensor[lm.bf16, \"M\", \"K\"]):\n");
    s.push_str("    pool = lm.smem()\n");
    s.push_str("    sA = pool.view(shape=(128, 64), dtype=lm.bf16)\n");
    s.push_str("    load = lm.role(warpgroup=0)\n");
    s.push_str("    for tm in lm.tiles(4):\n");
    s.push_str("        with load:\n");
    for line in body.lines() {
        s.push_str("            ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

fn findings(src: &str) -> Vec<Finding> {
    let (_, checked) = cake_front::check_bytes("bug.py", src.as_bytes());
    checked.findings.as_slice().to_vec()
}

fn codes(src: &str) -> Vec<&'static str> {
    findings(src).iter().map(|f| f.code).collect()
}

/// Compile-time integer arithmetic must report overflow (CAKE-L010), never panic (debug) or
/// wrap (release).
#[test]

fn integer_overflow_is_reported() {
    // In range: one element, no overflow on the way (this used to panic in `i += step`).
    let fine = in_role("x = len(range(9223372036854775806, 9223372036854775807, 5))");
    assert!(std::panic::catch_unwind(|| codes(&fine)).is_ok());
    for expr in [
        "lm.cdiv(9223372036854775807, 2)",
        "(-9223372036854775807 - 1) // -1",
        "(-9223372036854775807 - 1) % -1",
        "-(-9223372036854775807 - 1)",
        "lm.abs(-9223372036854775807 - 1)",
        "len(range(-9223372036854775807, 9223372036854775807))",
        "sA.rows(9223372036854775807, 1)",
    ] {
        let src = in_role(&format!("x = {expr}"));
        let got = std::panic::catch_unwind(|| codes(&src));
        match got {
            Ok(c) => assert!(!c.is_empty(), "`{expr}`: no finding"),
            Err(_) => panic!("`{expr}` panics the front-end"),
        }
    }
}

/// A duplicate tensor parameter followed by another parameter: CAKE-L011, no panic
/// (debug: `debug_assert_eq!(id, pid)` in params(); release: index out of bounds).
#[test]

fn duplicate_parameter_then_another() {
    let src = format!(
        "{HEAD}@cake.schedule(targets=[\"sm_90a\"])\n\
         def k(A: lm.tensor[lm.bf16, \"M\"], A: lm.tensor[lm.bf16, \"M\"], C: lm.tensor[lm.bf16, \"N\"]):\n\
         \x20   for tm in lm.tiles(4):\n\
         \x20       pass\n"
    );
    assert_eq!(codes(&src), ["CAKE-L011"]);
}

/// `lm.tensor[()]` has no dtype: a finding, no index-out-of-bounds panic.
#[test]

fn empty_tensor_annotation() {
    let src = format!(
        "{HEAD}@cake.schedule(targets=[\"sm_90a\"])\n\
         def k(A: lm.tensor[()]):\n\
         \x20   for tm in lm.tiles(4):\n\
         \x20       pass\n"
    );
    assert_eq!(codes(&src).len(), 1);
}

/// A role whose declaration failed is poisoned: using it in a list or in `with` reports
/// nothing more. Today `producers=[load]` reports CAKE-L004 "found an invalid value", and
/// `with load:` reports CAKE-L004 and skips the region's body.
#[test]

fn poisoned_role_does_not_cascade() {
    let src = format!(
        "{HEAD}@cake.schedule(targets=[\"sm_90a\"])\n\
         def k(A: lm.tensor[lm.bf16, \"M\", \"K\"]):\n\
         \x20   load = lm.role(warpgroup=0, warps=[0, 1])\n\
         \x20   full = lm.barrier(producers=[load], consumers=[load])\n\
         \x20   for tm in lm.tiles(4):\n\
         \x20       with load:\n\
         \x20           x = undefined_name\n"
    );
    // One L005 for the role; the L003 inside the region must still be found.
    assert_eq!(codes(&src), ["CAKE-L005", "CAKE-L003"]);
}

/// A mistake inside an unrolled `range` body or a helper is one mistake: reported once, not
/// once per iteration or per call.
#[test]

fn repeated_findings_are_reported_once() {
    let unrolled = in_role("for i in range(4):\n    y = i + nope");
    assert_eq!(codes(&unrolled), ["CAKE-L003"]);
    let brk = in_role("for i in range(4):\n    break");
    assert_eq!(codes(&brk), ["CAKE-L002"]);

    let mut helper = String::from(HEAD);
    helper.push_str("def h(x):\n    return x + nope\n\n\n");
    helper.push_str(&in_role("a = h(1)\nb = h(2)")[HEAD.len()..]);
    assert_eq!(codes(&helper), ["CAKE-L003"]);
}

/// Declaring a second resource under a name already bound (the catalog's CAKE-L011 bad
/// example) is CAKE-L011; today the IR silently holds two views named `sA`.
#[test]

fn resource_declared_twice() {
    let src = in_role("pass").replace(
        "    load = lm.role",
        "    sA = pool.view(shape=(64, 64), dtype=lm.bf16)\n    load = lm.role",
    );
    assert_eq!(codes(&src), ["CAKE-L011"]);
}

/// `foo.tensor[...]` with an undefined `foo` is not `lm.tensor`: the annotation's base is
/// never evaluated, so it is accepted.
#[test]

fn annotation_base_is_checked() {
    let src = format!(
        "{HEAD}@cake.schedule(targets=[\"sm_90a\"])\n\
         def k(A: foo.tensor[lm.bf16, \"M\"]):\n\
         \x20   for tm in lm.tiles(4):\n\
         \x20       pass\n"
    );
    assert_eq!(codes(&src), ["CAKE-L003"]);
}

/// Messages that say the wrong thing.
#[test]

fn messages_name_the_real_problem() {
    // `import cake as ck` is rejected with "`import cake`: schedules import only `cake`".
    let src = format!(
        "import cake as ck\n{}",
        &in_role("pass")["import cake\n".len()..]
    );
    let f = findings(&src);
    assert!(
        f.iter().any(|f| f.message.contains("as ck")),
        "{:?}",
        f.iter().map(|f| &f.message).collect::<Vec<_>>()
    );
    // `lm.tensor` outside an annotation: "`lm.tensor` does not exist ... did you mean `lm.tensor`?"
    let f = findings(&in_role("t = lm.tensor"));
    assert!(
        f.iter()
            .all(|f| !f.help.as_deref().unwrap_or("").contains("`lm.tensor`?")),
        "{:?}",
        f.iter().map(|f| (&f.message, &f.help)).collect::<Vec<_>>()
    );
}

/// After CAKE-L018 the oversized value stays bound, and every later `frag[:] = ...` asks which
/// names read the fragment; walking the value expanded took ~8 s in a debug build, the
/// fragment sets recorded per expression answer at once.
#[test]

fn oversized_value_is_not_walked_expanded() {
    let src = in_role(
        "x = lm.load(A, coords=(tm * 64, 0), shape=(64, 64))\n\
         for i in range(24):\n    x = x + x\n\
         acc = lm.load(A, coords=(0, 0), shape=(64, 64))",
    )
    .replace(
        "    for tm in",
        "    f = load.fragment(shape=(64, 64), dtype=lm.bf16)\n    for tm in",
    ) + "            for i in range(24):\n                f[:] = f + f\n";
    let start = std::time::Instant::now();
    let c = codes(&src);
    let took = start.elapsed();
    assert_eq!(c, ["CAKE-L018"]);
    assert!(took.as_secs_f64() < 1.0, "checking took {took:?}");
}

/// `not` of a compile-time integer is Python's truth test, folded as `if N:` is: a module
/// constant used as a switch (`if not DIRECT:`) must not be "expected a condition".
#[test]
fn not_of_a_compile_time_integer_folds() {
    for (n, taken) in [(0, true), (1, false), (-3, false)] {
        let src = in_role(&format!(
            "if not {n}:\n    x = undefined_name_in_the_taken_branch\nelse:\n    y = 1"
        ));
        let found = codes(&src);
        // Only the taken branch is interpreted: its unknown name is reported iff it is taken.
        assert_eq!(found.contains(&"CAKE-L003"), taken, "not {n}: {found:?}");
        assert!(!found.contains(&"CAKE-L004"), "not {n}: {found:?}");
    }
}
