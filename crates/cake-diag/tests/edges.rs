//! Edge cases: empty and out-of-range spans, empty files, CRLF, and a sweep
//! of arbitrary spans through every rendering. None of it may panic.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use cake_diag::catalog::{self, language};
use cake_diag::render;
use cake_diag::{Finding, SourceFile, Span};
use expect_test::expect;

fn all_renderings(file: &SourceFile, findings: &[Finding]) -> (String, serde_json::Value) {
    let human = render::human(file, findings, false);
    let _ = render::human(file, findings, true);
    let json = render::json(file, findings);
    let _ = render::sarif(
        &[(file, findings)],
        catalog::all(),
        &render::SarifOptions::new("0"),
    );
    (human, json)
}

#[test]
fn zero_findings() {
    let file = SourceFile::new("k.py", "x = 1\n");
    let (human, json) = all_renderings(&file, &[]);
    assert_eq!(human, "");
    assert_eq!(
        json,
        serde_json::json!({
            "schema": "cake.findings/v1",
            "file": "k.py",
            "summary": {"errors": 0, "warnings": 0, "notes": 0},
            "findings": []
        })
    );
    let sarif = render::sarif(
        &[(&file, &[])],
        catalog::all(),
        &render::SarifOptions::new("0"),
    );
    assert_eq!(sarif["runs"][0]["results"], serde_json::json!([]));
}

#[test]
fn empty_span_gets_one_caret() {
    let file = SourceFile::new("k.py", "def f(:\n    pass\n");
    let f = Finding::new(
        &language::SYNTAX_ERROR,
        Span::at(6),
        "expected a parameter name",
    );
    let (human, json) = all_renderings(&file, &[f]);
    expect![[r#"
        error[CAKE-L001]: expected a parameter name
         --> k.py:1:7
          |
        1 | def f(:
          |       ^
          |

        error: 1 error emitted
    "#]]
    .assert_eq(&human);
    let span = &json["findings"][0]["span"];
    assert_eq!(
        (span["start_column"].clone(), span["end_column"].clone()),
        (7.into(), 7.into())
    );
}

#[test]
fn span_at_end_of_file_after_newline() {
    let text = "def f(\n";
    let file = SourceFile::new("k.py", text);
    let f = Finding::new(
        &language::SYNTAX_ERROR,
        Span::at(text.len() as u32),
        "unexpected end of file",
    )
    .label(Span::new(5, 6), "unclosed `(`");
    let (human, json) = all_renderings(&file, &[f]);
    expect![[r#"
        error[CAKE-L001]: unexpected end of file
         --> k.py:2:1
          |
        1 | def f(
          |      - unclosed `(`
        2 |
          | ^
          |

        error: 1 error emitted
    "#]]
    .assert_eq(&human);
    assert_eq!(json["findings"][0]["span"]["start_line"], 2);
    assert_eq!(json["findings"][0]["span"]["start_column"], 1);
}

#[test]
fn span_past_end_of_file_is_clamped() {
    let file = SourceFile::new("k.py", "x = 1");
    let f = Finding::new(&language::UNUSED_VALUE, Span::new(3, 400), "past the end")
        .label(Span::new(1000, 2000), "far past the end");
    let (human, json) = all_renderings(&file, &[f]);
    expect![[r#"
        warning[CAKE-L016]: past the end
         --> k.py:1:4
          |
        1 | x = 1
          |    ^^- far past the end
          |

        warning: 1 warning emitted
    "#]]
    .assert_eq(&human);
    let span = &json["findings"][0]["span"];
    assert_eq!(span["end_byte"], 5);
    assert_eq!(span["end_column"], 6);
    assert_eq!(json["findings"][0]["labels"][0]["span"]["start_byte"], 5);
}

#[test]
fn empty_file() {
    let file = SourceFile::new("empty.py", "");
    let f = Finding::new(
        &language::NO_SCHEDULE,
        Span::at(0),
        "no `@cake.schedule` function",
    )
    .help("decorate the kernel function with `@cake.schedule(targets=[\"sm_90a\"])`");
    let (human, json) = all_renderings(&file, &[f]);
    expect![[r#"
        error[CAKE-L009]: no `@cake.schedule` function
         --> empty.py:1:1
          |
        1 |
          | ^
          |
          = help: decorate the kernel function with `@cake.schedule(targets=["sm_90a"])`

        error: 1 error emitted
    "#]]
    .assert_eq(&human);
    assert_eq!(json["findings"][0]["span"]["end_line"], 1);
}

#[test]
fn label_on_the_primary_span_labels_the_caret() {
    let file = SourceFile::new("k.py", "y = sB2 + 1\n");
    let f = Finding::new(
        &language::UNKNOWN_NAME,
        Span::new(4, 7),
        "unknown name `sB2`",
    )
    .label(Span::new(4, 7), "not defined in this schedule")
    .help("did you mean `sB`?");
    let (human, json) = all_renderings(&file, &[f]);
    expect![[r#"
        error[CAKE-L003]: unknown name `sB2`
         --> k.py:1:5
          |
        1 | y = sB2 + 1
          |     ^^^ not defined in this schedule
          |
          = help: did you mean `sB`?

        error: 1 error emitted
    "#]]
    .assert_eq(&human);
    // The JSON keeps it as an ordinary label.
    assert_eq!(
        json["findings"][0]["labels"][0]["message"],
        "not defined in this schedule"
    );
}

#[test]
fn crlf_multiline_span_and_multibyte_offsets() {
    let text = "a = (1,\r\n     2)\r\nb = «é»\r\n";
    let file = SourceFile::new("k.py", text);
    let tuple = text.find('(').unwrap() as u32;
    let close = text.find(')').unwrap() as u32 + 1;
    let guillemet = text.find('«').unwrap() as u32;
    let findings = [
        Finding::new(
            &language::UNSUPPORTED_PYTHON,
            Span::new(tuple, close),
            "a tuple",
        ),
        // Both ends inside multi-byte characters: rounded down.
        Finding::new(
            &language::NOT_TEXT,
            Span::new(guillemet + 1, guillemet + 3),
            "inside",
        ),
    ];
    let (human, json) = all_renderings(&file, &findings);
    assert!(!human.contains('\r'), "{human:?}");
    expect![[r#"
        error[CAKE-L002]: a tuple
         --> k.py:1:5
          |
        1 |   a = (1,
          |  _____^
        2 | |      2)
          | |_______^
          |

        error[CAKE-L013]: inside
         --> k.py:3:5
          |
        3 | b = «é»
          |     ^
          |

        error: 2 errors emitted
    "#]]
    .assert_eq(&human);
    let second = &json["findings"][1]["span"];
    assert_eq!(second["start_byte"], guillemet);
    assert_eq!(second["end_byte"], guillemet + 2);
    assert_eq!(second["end_column"], 6);
}

#[test]
fn tabs_show_as_one_space_so_carets_align() {
    let text = "def f():\n\tx = sB2 + 1\n";
    let file = SourceFile::new("k.py", text);
    let at = text.find("sB2").unwrap() as u32;
    let f = Finding::new(
        &language::UNKNOWN_NAME,
        Span::new(at, at + 3),
        "unknown name `sB2`",
    );
    let (human, json) = all_renderings(&file, &[f]);
    expect![[r#"
        error[CAKE-L003]: unknown name `sB2`
         --> k.py:2:6
          |
        2 |  x = sB2 + 1
          |      ^^^
          |

        error: 1 error emitted
    "#]]
    .assert_eq(&human);
    // A tab is one column, as in SARIF and the header above.
    assert_eq!(json["findings"][0]["span"]["start_column"], 6);
}

#[test]
fn findings_far_apart_fold_the_lines_between() {
    let text: String = (1..=30).map(|i| format!("x{i} = {i}\n")).collect();
    let file = SourceFile::new("k.py", text.as_str());
    let at = |needle: &str| {
        let s = text.find(needle).unwrap() as u32;
        Span::new(s, s + needle.len() as u32)
    };
    let f = Finding::new(&language::DUPLICATE_DEFINITION, at("x25"), "`x25` twice")
        .label(at("x3"), "first here");
    let (human, _) = all_renderings(&file, &[f]);
    expect![[r#"
        error[CAKE-L011]: `x25` twice
          --> k.py:25:1
           |
         3 | x3 = 3
           | -- first here
         4 | x4 = 4
        ...
        24 | x24 = 24
        25 | x25 = 25
           | ^^^
           |

        error: 1 error emitted
    "#]]
    .assert_eq(&human);
}

static PANICKED: AtomicBool = AtomicBool::new(false);

/// Records panics even when the renderer catches them, so that the sweep
/// below fails on a panic caught by the human renderer's fallback too.
fn watch_panics() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// Every span (and label) over a set of awkward sources, through every
/// rendering. A small deterministic generator keeps the sweep reproducible.
#[test]
fn sweep_of_arbitrary_spans_never_panics() {
    watch_panics();
    let sources = [
        "",
        "\n",
        "\n\n\n",
        "x",
        "a\r\nb\r\n",
        "\r\n\r\n",
        "é€😀\n«»\n",
        "\tdef f():\n\t\treturn 1\n",
        "no newline at end",
        "line\n    indented\n\n\nafter blank lines\n",
        &"long line ".repeat(40),
        "\u{200b}zero width\u{301}\n",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |bound: u32| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % (bound as u64 + 1)) as u32
    };
    for text in sources {
        let file = SourceFile::new("k.py", text);
        let len = text.len() as u32;
        for _ in 0..500 {
            // Reach a little past the end, and sometimes very far.
            let bound = if next(10) == 0 { u32::MAX - 1 } else { len + 3 };
            let span = Span {
                start: next(bound),
                end: next(bound),
            };
            let mut f = Finding::new(&language::SYNTAX_ERROR, span, "m\nmulti-line message")
                .help("two\nlines")
                .expected("")
                .actual("\n");
            for _ in 0..next(3) {
                let label = Span::new(next(bound), next(bound));
                f = f.label(label, "label\nwith a newline");
                // Repeated ranges take a special path in annotate-snippets.
                if next(2) == 0 {
                    f = f.label(label, "the same range again");
                }
            }
            if next(2) == 0 {
                f = f.label(span, "on the primary span");
            }
            let (human, json) = all_renderings(&file, &[f]);
            assert!(human.contains("error[CAKE-L001]"));
            let span = &json["findings"][0]["span"];
            assert!(span["start_line"].as_u64().unwrap() >= 1);
            assert!(span["start_column"].as_u64().unwrap() >= 1);
            assert!(span["end_byte"].as_u64().unwrap() <= len as u64);
        }
    }
    assert!(
        !PANICKED.load(Ordering::SeqCst),
        "a rendering panicked (see output)"
    );
}
