//! Snapshots of the three renderings of the same findings.
//!
//! Update with `UPDATE_EXPECT=1 cargo test -p cake-diag --test render`, then
//! read the diff: these snapshots are the format agents parse.

use cake_diag::catalog::{self, language};
use cake_diag::render;
use cake_diag::{Finding, Findings, Severity, SourceFile, Span};
use expect_test::expect;

/// A schedule with a non-ASCII identifier before the primary span, so that
/// character columns and byte offsets differ.
const SOURCE: &str = r#"import cake
from cake import lm

@cake.schedule(targets=["sm_90a"])
def gemm(A: lm.tensor[lm.bf16, "M", "K"], B: lm.tensor[lm.bf16, "N", "K"]):
    pool = lm.smem()
    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=4, swizzle=128)
    sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
    math = lm.role(warpgroup=0)
    acc_é = math.fragment(shape=(64, 256), dtype=lm.f32)
    sA.rows(0, 64)
    with math:
        lm.mma(acc_é, sA, sB.T)
"#;

fn span_of(needle: &str, nth: usize) -> Span {
    let start = SOURCE
        .match_indices(needle)
        .nth(nth)
        .map(|(i, _)| i)
        .expect("needle in SOURCE");
    Span::new(start as u32, (start + needle.len()) as u32)
}

fn file() -> SourceFile {
    SourceFile::new("examples/gemm.py", SOURCE)
}

fn findings() -> Vec<Finding> {
    let mut all = Findings::new();
    // Pushed out of order on purpose: renderings take `into_sorted` order.
    all.push(
        Finding::new(
            &language::SHAPE_MISMATCH,
            span_of("sB.T", 0),
            "MMA operand `sB.T` has 128 columns but the accumulator has 256",
        )
        .label(span_of("acc_é", 1), "accumulator is (64, 256)")
        .label(
            span_of("shape=(128, 64)", 0),
            "`sB` declared with 128 rows here",
        )
        .subject("view", "sB")
        .role("math")
        .stage(2)
        .phase(1)
        .expected("(64, 256)")
        .actual("(64, 128)")
        .help("declare `sB` with `shape=(256, 64)`")
        .note("wgmma computes (M, K) x (K, N) into (M, N)"),
    );
    all.push(Finding::new(
        &language::UNUSED_VALUE,
        span_of("sA.rows(0, 64)", 0),
        "the sub-view `sA.rows(0, 64)` is computed and thrown away",
    ));
    all.into_sorted()
}

#[test]
fn human_plain() {
    let text = render::human(&file(), &findings(), false);
    expect![[r#"
        warning[CAKE-L016]: the sub-view `sA.rows(0, 64)` is computed and thrown away
          --> examples/gemm.py:11:5
           |
        11 |     sA.rows(0, 64)
           |     ^^^^^^^^^^^^^^
           |

        error[CAKE-L007]: MMA operand `sB.T` has 128 columns but the accumulator has 256
          --> examples/gemm.py:13:27
           |
         8 |     sB = pool.view(shape=(128, 64), dtype=lm.bf16, stages=4, swizzle=128)
           |                    --------------- `sB` declared with 128 rows here
         9 |     math = lm.role(warpgroup=0)
        ...
        12 |     with math:
        13 |         lm.mma(acc_é, sA, sB.T)
           |                -----      ^^^^
           |                |
           |                accumulator is (64, 256)
           |
           = on: view `sB`, role `math`, stage 2, phase 1
           = expected: (64, 256)
           = actual: (64, 128)
           = help: declare `sB` with `shape=(256, 64)`
           = note: wgmma computes (M, K) x (K, N) into (M, N)

        error: 1 error, 1 warning emitted
    "#]]
    .assert_eq(&text);
}

#[test]
fn human_color_uses_ansi_only_when_asked() {
    let plain = render::human(&file(), &findings(), false);
    let color = render::human(&file(), &findings(), true);
    assert!(!plain.contains('\x1b'));
    assert!(color.contains('\x1b'));
    // Same text once the escapes are gone.
    assert_eq!(strip_ansi(&color), plain);
}

#[test]
fn json_document() {
    let text = render::json_string(&file(), &findings());
    expect![[r#"
        {
          "schema": "cake.findings/v1",
          "file": "examples/gemm.py",
          "summary": {
            "errors": 1,
            "warnings": 1,
            "notes": 0
          },
          "findings": [
            {
              "code": "CAKE-L016",
              "category": "language",
              "severity": "warning",
              "message": "the sub-view `sA.rows(0, 64)` is computed and thrown away",
              "span": {
                "file": "examples/gemm.py",
                "start_line": 11,
                "start_column": 5,
                "end_line": 11,
                "end_column": 19,
                "start_byte": 406,
                "end_byte": 420
              },
              "labels": [],
              "subject": null,
              "role": null,
              "stage": null,
              "phase": null,
              "expected": null,
              "actual": null,
              "help": null,
              "notes": []
            },
            {
              "code": "CAKE-L007",
              "category": "language",
              "severity": "error",
              "message": "MMA operand `sB.T` has 128 columns but the accumulator has 256",
              "span": {
                "file": "examples/gemm.py",
                "start_line": 13,
                "start_column": 27,
                "end_line": 13,
                "end_column": 31,
                "start_byte": 463,
                "end_byte": 467
              },
              "labels": [
                {
                  "span": {
                    "file": "examples/gemm.py",
                    "start_line": 13,
                    "start_column": 16,
                    "end_line": 13,
                    "end_column": 21,
                    "start_byte": 451,
                    "end_byte": 457
                  },
                  "message": "accumulator is (64, 256)"
                },
                {
                  "span": {
                    "file": "examples/gemm.py",
                    "start_line": 8,
                    "start_column": 20,
                    "end_line": 8,
                    "end_column": 35,
                    "start_byte": 257,
                    "end_byte": 272
                  },
                  "message": "`sB` declared with 128 rows here"
                }
              ],
              "subject": {
                "kind": "view",
                "name": "sB"
              },
              "role": "math",
              "stage": 2,
              "phase": 1,
              "expected": "(64, 256)",
              "actual": "(64, 128)",
              "help": "declare `sB` with `shape=(256, 64)`",
              "notes": [
                "wgmma computes (M, K) x (K, N) into (M, N)"
              ]
            }
          ]
        }
    "#]]
    .assert_eq(&text);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value, render::json(&file(), &findings()));
}

#[test]
fn sarif_log() {
    let file = file();
    let findings = findings();
    // A two-rule catalog keeps the snapshot about the format, not the
    // catalog's prose; `tests/sarif.rs` checks the log built from all of it.
    let rules = [&language::UNUSED_VALUE, &language::SHAPE_MISMATCH];
    let options = render::SarifOptions {
        srcroot: Some("/home/me/repo".into()),
        ..render::SarifOptions::new("0.1.0")
    };
    let text = render::sarif_string(&[(&file, &findings)], &rules, &options);
    expect![[r#"
        {
          "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
          "version": "2.1.0",
          "runs": [
            {
              "tool": {
                "driver": {
                  "name": "cake",
                  "version": "0.1.0",
                  "informationUri": "https://github.com/cake-compiler/cake",
                  "rules": [
                    {
                      "id": "CAKE-L016",
                      "name": "unused-value",
                      "shortDescription": {
                        "text": "An expression statement computes a value that is thrown away."
                      },
                      "fullDescription": {
                        "text": "Operations with an effect (copies, MMAs, waits, arrives, stores) are written as statements. An expression without one, such as a sub-view, an arithmetic result or a comparison, does nothing as a statement; it is almost always a forgotten assignment or an argument that was meant to go to a call. Docstrings are exempt.\n\nAssign the value to a name, pass it where it was meant to go, or delete the line."
                      },
                      "help": {
                        "text": "CAKE-L016 unused-value\ncategory: language, default severity: warning\n\nAn expression statement computes a value that is thrown away.\n\nOperations with an effect (copies, MMAs, waits, arrives, stores) are written as statements. An expression without one, such as a sub-view, an arithmetic result or a comparison, does nothing as a statement; it is almost always a forgotten assignment or an argument that was meant to go to a call. Docstrings are exempt.\n\nAssign the value to a name, pass it where it was meant to go, or delete the line.\n\nFails:\n\n    # CAKE-L016: a sub-view computed and thrown away\n    import cake\n    from cake import lm\n\n\n    @cake.schedule(targets=[\"sm_90a\"])\n    def gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n             B: lm.tensor[lm.bf16, \"N\", \"K\"],\n             C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n        pool = lm.smem()\n        sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        sA.rows(0, 32)  # warning[CAKE-L016]\n        load = lm.role(warpgroup=0)\n        math = lm.role(warpgroup=1)\n        pipe = lm.pipeline(stages=2)\n        full = lm.barrier(pipe, producers=[load], consumers=[math])\n        empty = lm.barrier(pipe, producers=[math], consumers=[load])\n        acc = math.fragment(shape=(64, 256), dtype=lm.f32)\n        for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n            with load:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(empty)\n                    sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                    sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n            with math:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(full)\n                    lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)\n                lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n\nPasses:\n\n    # CAKE-L016: the passing near-miss\n    import cake\n    from cake import lm\n\n\n    @cake.schedule(targets=[\"sm_90a\"])\n    def gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n             B: lm.tensor[lm.bf16, \"N\", \"K\"],\n             C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n        pool = lm.smem()\n        sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        top = sA.rows(0, 32)\n        load = lm.role(warpgroup=0)\n        math = lm.role(warpgroup=1)\n        pipe = lm.pipeline(stages=2)\n        full = lm.barrier(pipe, producers=[load], consumers=[math])\n        empty = lm.barrier(pipe, producers=[math], consumers=[load])\n        acc = math.fragment(shape=(64, 256), dtype=lm.f32)\n        for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n            with load:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(empty)\n                    sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                    sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n            with math:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(full)\n                    lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)\n                lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n",
                        "markdown": "Category: language. Default severity: warning.\n\nAn expression statement computes a value that is thrown away.\n\nOperations with an effect (copies, MMAs, waits, arrives, stores) are written as statements. An expression without one, such as a sub-view, an arithmetic result or a comparison, does nothing as a statement; it is almost always a forgotten assignment or an argument that was meant to go to a call. Docstrings are exempt.\n\nAssign the value to a name, pass it where it was meant to go, or delete the line.\n\nFails:\n\n```python\n# CAKE-L016: a sub-view computed and thrown away\nimport cake\nfrom cake import lm\n\n\n@cake.schedule(targets=[\"sm_90a\"])\ndef gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n         B: lm.tensor[lm.bf16, \"N\", \"K\"],\n         C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n    pool = lm.smem()\n    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    sA.rows(0, 32)  # warning[CAKE-L016]\n    load = lm.role(warpgroup=0)\n    math = lm.role(warpgroup=1)\n    pipe = lm.pipeline(stages=2)\n    full = lm.barrier(pipe, producers=[load], consumers=[math])\n    empty = lm.barrier(pipe, producers=[math], consumers=[load])\n    acc = math.fragment(shape=(64, 256), dtype=lm.f32)\n    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n        with load:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(empty)\n                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n        with math:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(full)\n                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)\n            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n```\n\nPasses:\n\n```python\n# CAKE-L016: the passing near-miss\nimport cake\nfrom cake import lm\n\n\n@cake.schedule(targets=[\"sm_90a\"])\ndef gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n         B: lm.tensor[lm.bf16, \"N\", \"K\"],\n         C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n    pool = lm.smem()\n    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    top = sA.rows(0, 32)\n    load = lm.role(warpgroup=0)\n    math = lm.role(warpgroup=1)\n    pipe = lm.pipeline(stages=2)\n    full = lm.barrier(pipe, producers=[load], consumers=[math])\n    empty = lm.barrier(pipe, producers=[math], consumers=[load])\n    acc = math.fragment(shape=(64, 256), dtype=lm.f32)\n    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n        with load:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(empty)\n                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n        with math:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(full)\n                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)\n            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n```\n"
                      },
                      "helpUri": "https://github.com/cake-compiler/cake/blob/main/docs/rules.md#cake-l016",
                      "defaultConfiguration": {
                        "level": "warning"
                      },
                      "properties": {
                        "category": "language"
                      }
                    },
                    {
                      "id": "CAKE-L007",
                      "name": "shape-mismatch",
                      "shortDescription": {
                        "text": "Operand shapes disagree or do not divide evenly."
                      },
                      "fullDescription": {
                        "text": "Shapes are part of a value's type and are checked like types: an MMA of `(M, K)` by `(K, N)` accumulates into `(M, N)`, a copy needs equal shapes on both sides, and a tile split across warpgroups or stages must divide evenly. A mismatch here would otherwise become out-of-bounds shared-memory traffic or an instruction shape the hardware does not have.\n\nThe finding's expected and actual values give both shapes. Fix the declaration the label points at, or take a sub-view (`sA.rows(i, n)`) of the right size."
                      },
                      "help": {
                        "text": "CAKE-L007 shape-mismatch\ncategory: language, default severity: error\n\nOperand shapes disagree or do not divide evenly.\n\nShapes are part of a value's type and are checked like types: an MMA of `(M, K)` by `(K, N)` accumulates into `(M, N)`, a copy needs equal shapes on both sides, and a tile split across warpgroups or stages must divide evenly. A mismatch here would otherwise become out-of-bounds shared-memory traffic or an instruction shape the hardware does not have.\n\nThe finding's expected and actual values give both shapes. Fix the declaration the label points at, or take a sub-view (`sA.rows(i, n)`) of the right size.\n\nFails:\n\n    # CAKE-L007: an accumulator narrower than the MMA's B operand\n    import cake\n    from cake import lm\n\n\n    @cake.schedule(targets=[\"sm_90a\"])\n    def gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n             B: lm.tensor[lm.bf16, \"N\", \"K\"],\n             C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n        pool = lm.smem()\n        sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        load = lm.role(warpgroup=0)\n        math = lm.role(warpgroup=1)\n        pipe = lm.pipeline(stages=2)\n        full = lm.barrier(pipe, producers=[load], consumers=[math])\n        empty = lm.barrier(pipe, producers=[math], consumers=[load])\n        acc = math.fragment(shape=(64, 128), dtype=lm.f32)\n        for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n            with load:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(empty)\n                    sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                    sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n            with math:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(full)\n                    lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)  # error[CAKE-L007]\n                lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n\nPasses:\n\n    # CAKE-L007: the passing near-miss\n    import cake\n    from cake import lm\n\n\n    @cake.schedule(targets=[\"sm_90a\"])\n    def gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n             B: lm.tensor[lm.bf16, \"N\", \"K\"],\n             C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n        pool = lm.smem()\n        sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n        load = lm.role(warpgroup=0)\n        math = lm.role(warpgroup=1)\n        pipe = lm.pipeline(stages=2)\n        full = lm.barrier(pipe, producers=[load], consumers=[math])\n        empty = lm.barrier(pipe, producers=[math], consumers=[load])\n        acc = math.fragment(shape=(64, 256), dtype=lm.f32)\n        for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n            with load:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(empty)\n                    sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                    sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n            with math:\n                for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                    lm.wait(full)\n                    lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)\n                lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n",
                        "markdown": "Category: language. Default severity: error.\n\nOperand shapes disagree or do not divide evenly.\n\nShapes are part of a value's type and are checked like types: an MMA of `(M, K)` by `(K, N)` accumulates into `(M, N)`, a copy needs equal shapes on both sides, and a tile split across warpgroups or stages must divide evenly. A mismatch here would otherwise become out-of-bounds shared-memory traffic or an instruction shape the hardware does not have.\n\nThe finding's expected and actual values give both shapes. Fix the declaration the label points at, or take a sub-view (`sA.rows(i, n)`) of the right size.\n\nFails:\n\n```python\n# CAKE-L007: an accumulator narrower than the MMA's B operand\nimport cake\nfrom cake import lm\n\n\n@cake.schedule(targets=[\"sm_90a\"])\ndef gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n         B: lm.tensor[lm.bf16, \"N\", \"K\"],\n         C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n    pool = lm.smem()\n    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    load = lm.role(warpgroup=0)\n    math = lm.role(warpgroup=1)\n    pipe = lm.pipeline(stages=2)\n    full = lm.barrier(pipe, producers=[load], consumers=[math])\n    empty = lm.barrier(pipe, producers=[math], consumers=[load])\n    acc = math.fragment(shape=(64, 128), dtype=lm.f32)\n    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n        with load:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(empty)\n                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n        with math:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(full)\n                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)  # error[CAKE-L007]\n            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n```\n\nPasses:\n\n```python\n# CAKE-L007: the passing near-miss\nimport cake\nfrom cake import lm\n\n\n@cake.schedule(targets=[\"sm_90a\"])\ndef gemm(A: lm.tensor[lm.bf16, \"M\", \"K\"],\n         B: lm.tensor[lm.bf16, \"N\", \"K\"],\n         C: lm.tensor[lm.bf16, \"M\", \"N\"]):\n    pool = lm.smem()\n    sA = pool.view(shape=(64, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    sB = pool.view(shape=(256, 64), dtype=lm.bf16, stages=2, swizzle=128)\n    load = lm.role(warpgroup=0)\n    math = lm.role(warpgroup=1)\n    pipe = lm.pipeline(stages=2)\n    full = lm.barrier(pipe, producers=[load], consumers=[math])\n    empty = lm.barrier(pipe, producers=[math], consumers=[load])\n    acc = math.fragment(shape=(64, 256), dtype=lm.f32)\n    for tm, tn in lm.tiles(lm.cdiv(M, 64), lm.cdiv(N, 256)):\n        with load:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(empty)\n                sA.tma_load(A, coords=(tm * 64, k * 64), barrier=full)\n                sB.tma_load(B, coords=(tn * 256, k * 64), barrier=full)\n        with math:\n            for k in lm.range(lm.cdiv(K, 64), pipeline=pipe):\n                lm.wait(full)\n                lm.mma(acc, sA, sB.T, accumulate=k > 0, release=empty)\n            lm.store(C, lm.cast(acc, lm.bf16), coords=(tm * 64, tn * 256))\n```\n"
                      },
                      "helpUri": "https://github.com/cake-compiler/cake/blob/main/docs/rules.md#cake-l007",
                      "defaultConfiguration": {
                        "level": "error"
                      },
                      "properties": {
                        "category": "language"
                      }
                    }
                  ]
                }
              },
              "originalUriBaseIds": {
                "SRCROOT": {
                  "uri": "file:///home/me/repo/"
                }
              },
              "artifacts": [
                {
                  "location": {
                    "uri": "examples/gemm.py",
                    "uriBaseId": "SRCROOT"
                  },
                  "length": 469,
                  "sourceLanguage": "python"
                }
              ],
              "results": [
                {
                  "ruleId": "CAKE-L016",
                  "ruleIndex": 0,
                  "level": "warning",
                  "message": {
                    "text": "the sub-view `sA.rows(0, 64)` is computed and thrown away"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "examples/gemm.py",
                          "uriBaseId": "SRCROOT",
                          "index": 0
                        },
                        "region": {
                          "startLine": 11,
                          "startColumn": 5,
                          "endLine": 11,
                          "endColumn": 19,
                          "byteOffset": 406,
                          "byteLength": 14,
                          "snippet": {
                            "text": "sA.rows(0, 64)"
                          }
                        }
                      }
                    }
                  ],
                  "partialFingerprints": {
                    "cakeFinding/v1": "b491658a5fb97f34c2548f502766a544:1"
                  },
                  "properties": {
                    "category": "language"
                  }
                },
                {
                  "ruleId": "CAKE-L007",
                  "ruleIndex": 1,
                  "level": "error",
                  "message": {
                    "text": "MMA operand `sB.T` has 128 columns but the accumulator has 256"
                  },
                  "locations": [
                    {
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "examples/gemm.py",
                          "uriBaseId": "SRCROOT",
                          "index": 0
                        },
                        "region": {
                          "startLine": 13,
                          "startColumn": 27,
                          "endLine": 13,
                          "endColumn": 31,
                          "byteOffset": 463,
                          "byteLength": 4,
                          "snippet": {
                            "text": "sB.T"
                          }
                        }
                      }
                    }
                  ],
                  "relatedLocations": [
                    {
                      "id": 0,
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "examples/gemm.py",
                          "uriBaseId": "SRCROOT",
                          "index": 0
                        },
                        "region": {
                          "startLine": 13,
                          "startColumn": 16,
                          "endLine": 13,
                          "endColumn": 21,
                          "byteOffset": 451,
                          "byteLength": 6,
                          "snippet": {
                            "text": "acc_é"
                          }
                        }
                      },
                      "message": {
                        "text": "accumulator is (64, 256)"
                      }
                    },
                    {
                      "id": 1,
                      "physicalLocation": {
                        "artifactLocation": {
                          "uri": "examples/gemm.py",
                          "uriBaseId": "SRCROOT",
                          "index": 0
                        },
                        "region": {
                          "startLine": 8,
                          "startColumn": 20,
                          "endLine": 8,
                          "endColumn": 35,
                          "byteOffset": 257,
                          "byteLength": 15,
                          "snippet": {
                            "text": "shape=(128, 64)"
                          }
                        }
                      },
                      "message": {
                        "text": "`sB` declared with 128 rows here"
                      }
                    }
                  ],
                  "partialFingerprints": {
                    "cakeFinding/v1": "d52760f21d045bf5cd09fb241d2cd367:1"
                  },
                  "properties": {
                    "category": "language",
                    "subject": {
                      "kind": "view",
                      "name": "sB"
                    },
                    "role": "math",
                    "stage": 2,
                    "phase": 1,
                    "expected": "(64, 256)",
                    "actual": "(64, 128)",
                    "help": "declare `sB` with `shape=(256, 64)`",
                    "notes": [
                      "wgmma computes (M, K) x (K, N) into (M, N)"
                    ]
                  }
                }
              ],
              "columnKind": "unicodeCodePoints"
            }
          ]
        }
    "#]]
    .assert_eq(&text);
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        value,
        render::sarif(&[(&file, &findings)], &rules, &options)
    );
}

#[test]
fn columns_count_chars_and_bytes_stay_bytes() {
    let doc = render::json(&file(), &findings());
    // findings()[1] is the shape mismatch on `sB.T`, after `acc_é` on its line.
    let span = &doc["findings"][1]["span"];
    let line = "        lm.mma(acc_é, sA, sB.T)";
    let byte_in_line = line.find("sB.T").unwrap();
    let column = line[..byte_in_line].chars().count() + 1;
    assert_ne!(
        column,
        byte_in_line + 1,
        "the line must hold a multi-byte char"
    );
    assert_eq!(span["start_line"], 13);
    assert_eq!(span["start_column"], column);
    assert_eq!(span["end_line"], 13);
    assert_eq!(span["end_column"], column + 4);
    assert_eq!(span["start_byte"], span_of("sB.T", 0).start);
    assert_eq!(span["end_byte"], span_of("sB.T", 0).end);
}

#[test]
fn severity_override_shows_in_every_rendering() {
    let f = Finding::new(
        &language::UNUSED_VALUE,
        span_of("sA.rows(0, 64)", 0),
        "unused",
    )
    .severity(Severity::Error);
    let file = file();
    let findings = [f];
    assert!(render::human(&file, &findings, false).starts_with("error[CAKE-L016]"));
    assert_eq!(
        render::json(&file, &findings)["findings"][0]["severity"],
        "error"
    );
    let sarif = render::sarif(
        &[(&file, &findings)],
        catalog::all(),
        &render::SarifOptions::new("0"),
    );
    assert_eq!(sarif["runs"][0]["results"][0]["level"], "error");
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters final-byte
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
