//! The `cake` command's contract: exit codes (0 clean, 1 findings with errors, 2 usage or I/O
//! error) and the JSON documents of `check`, `lower` and `explain`. No toolchain needed.

use std::process::{Command, Output};

fn cake(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cake"))
        .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(args)
        .output()
        .expect("run cake")
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(&o.stdout)))
}

#[test]
fn exit_codes() {
    assert_eq!(
        cake(&["check", "examples/gemm_sm90.py"]).status.code(),
        Some(0)
    );
    assert_eq!(
        cake(&["check", "tests/check/CAKE-S005-bad.py"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(cake(&["check", "no/such/file.py"]).status.code(), Some(2));
    assert_eq!(
        cake(&["check", "examples/gemm_sm90.py", "--target", "sm_90"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(cake(&["explain", "CAKE-Z999"]).status.code(), Some(2));
    // SARIF describes findings only; `lower` and `build` have documents of their own.
    let lower = ["lower", "examples/gemm_sm90.py", "--target", "sm_90a"];
    let build = [
        "build",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "-o",
        "unused",
    ];
    for args in [&lower[..], &build[..]] {
        let o = cake(&[args, &["--format", "sarif"]].concat());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?} --format sarif");
        assert!(stderr.contains("'sarif'"), "{args:?}: {stderr}");
        assert!(
            o.stdout.is_empty(),
            "{args:?} --format sarif wrote to stdout"
        );
    }
    let o = cake(&[
        "lower",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--format",
        "json",
        "--launch",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--launch"));
}

#[test]
fn check_json_reports_every_finding_with_spans() {
    let o = cake(&["check", "tests/check/CAKE-S013-bad.py", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1));
    let doc = json(&o);
    assert_eq!(doc["schema"], "cake.findings/v1");
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["CAKE-S013", "CAKE-S012"]);
    assert_eq!(doc["findings"][0]["span"]["start_line"], 26);
}

/// Several files: one SARIF log with one run and one artifact per file, URIs relative to the
/// current directory (SRCROOT, stated as an absolute URI), one human report after another; the
/// exit code is the worst file's. `--format json` takes one file.
#[test]
fn check_several_files_is_one_sarif_run() {
    let files = ["tests/check/CAKE-S005-bad.py", "./examples/gemm_sm90.py"];
    let o = cake(&["check", files[0], files[1], "--format", "sarif"]);
    assert_eq!(o.status.code(), Some(1), "one file has errors");
    let log = json(&o);
    let runs = log["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    let run = &runs[0];
    let root =
        std::fs::canonicalize(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .unwrap();
    // SRCROOT is the consumer's (where it checked out the repository): no path of this
    // machine goes into the log unless --srcroot names one.
    assert!(
        run["originalUriBaseIds"]["SRCROOT"].get("uri").is_none(),
        "{run:#}"
    );
    assert!(!String::from_utf8_lossy(&o.stdout).contains(&root.display().to_string()));
    let uris: Vec<&str> = run["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["location"]["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        ["tests/check/CAKE-S005-bad.py", "examples/gemm_sm90.py"]
    );
    let results = run["results"].as_array().unwrap();
    assert!(results.iter().any(|r| r["ruleId"] == "CAKE-S005"));
    for r in results {
        let at = &r["locations"][0]["physicalLocation"]["artifactLocation"];
        assert_eq!(at["uriBaseId"], "SRCROOT");
        assert!(r["partialFingerprints"]["cakeFinding/v1"].is_string());
    }
    let rule = &run["tool"]["driver"]["rules"][0];
    assert!(rule["helpUri"]
        .as_str()
        .unwrap()
        .ends_with("/docs/rules.md#cake-l001"));
    assert!(!rule["help"]["markdown"].as_str().unwrap().is_empty());

    // --srcroot elsewhere: the files are outside it, so their URIs are absolute.
    let o = cake(&[
        "check",
        files[1],
        "--format",
        "sarif",
        "--srcroot",
        "tests",
        "--rules-url",
        "https://x.test/r.md",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let run = &json(&o)["runs"][0];
    assert_eq!(
        run["artifacts"][0]["location"]["uri"],
        format!("file://{}/examples/gemm_sm90.py", root.display())
    );
    assert!(run["artifacts"][0]["location"].get("uriBaseId").is_none());
    assert_eq!(
        run["tool"]["driver"]["rules"][0]["helpUri"],
        "https://x.test/r.md#cake-l001"
    );

    let o = cake(&["check", files[0], files[1]]);
    assert_eq!(o.status.code(), Some(1));
    let human = String::from_utf8_lossy(&o.stdout);
    assert!(human.contains("CAKE-S005-bad.py:"), "{human}");

    let o = cake(&["check", files[0], files[1], "--format", "json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--format sarif"));
    assert!(o.stdout.is_empty());
    // A missing file among several is a usage error, as for one.
    assert_eq!(
        cake(&["check", files[1], "no/such/file.py", "--format", "sarif"])
            .status
            .code(),
        Some(2)
    );
}

/// What `cake check` writes validates against the official SARIF 2.1.0 schema (fetched by
/// scripts/sarif-schema.sh; reported skipped without it, a failure under CAKE_REQUIRE_ALL=1).
#[test]
fn check_sarif_validates_against_the_official_schema() {
    let Some(path) = cake_testkit::require(
        std::env::var("CAKE_SARIF_SCHEMA").map_err(|_| "CAKE_SARIF_SCHEMA is not set"),
        "the official SARIF schema (scripts/sarif-schema.sh fetches it)",
    ) else {
        return;
    };
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let o = cake(&[
        "check",
        "tests/check/CAKE-S005-bad.py",
        "tests/check/CAKE-L016-bad.py",
        "examples/gemm_sm90.py",
        "--format",
        "sarif",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let log = json(&o);
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn a_schedule_a_declared_target_cannot_build_fails_the_check() {
    // Not lowered for its target: the notes, one summary line, exit 1 (an agent can trust a
    // clean exit); --allow-unbuildable keeps the summary as a note and exits 0.
    let o = cake(&["check", "tests/check/V001_tcgen05_unlowered.py"]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "error: tests/check/V001_tcgen05_unlowered.py cannot be built for sm_100a ("
        ) && stderr.contains("--allow-unbuildable"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("note[CAKE-V001]"));
    let o = cake(&[
        "check",
        "tests/check/V001_tcgen05_unlowered.py",
        "--allow-unbuildable",
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("note: "));
    // JSON and SARIF stay parseable on stdout: the summary goes to stderr.
    let o = cake(&[
        "check",
        "tests/check/V001_tcgen05_unlowered.py",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("JSON on stdout");
    // Several declared targets: each one it cannot build is named (the findings' messages then
    // start with `[sm_100a]`; the summary reads the target from the finding, not the text).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("tests/check/V001_tcgen05_unlowered.py")).unwrap();
    let two = std::env::temp_dir().join(format!("cake-cli-two-targets-{}.py", std::process::id()));
    std::fs::write(
        &two,
        text.replace(
            r#"targets=["sm_100a"]"#,
            r#"targets=["sm_100a", "sm_103a"]"#,
        ),
    )
    .unwrap();
    let o = cake(&["check", two.to_str().unwrap()]);
    std::fs::remove_file(&two).ok();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("cannot be built for sm_100a (") && stderr.contains(", sm_103a ("),
        "{stderr}"
    );
    // A schedule every declared target builds: no summary at all.
    let o = cake(&["check", "examples/gemm_sm90.py"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn strict_turns_coverage_notes_into_errors() {
    let o = cake(&[
        "check",
        "tests/check/V001_tcgen05_unlowered.py",
        "--strict",
        "--allow-unbuildable",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("error[CAKE-V001]"));
    // V002 (not verified) is a coverage note too, and builds fine: only --strict fails it.
    assert_eq!(
        cake(&["check", "tests/check/CAKE-V002-bad.py"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        cake(&["check", "tests/check/CAKE-V002-bad.py", "--strict"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn lower_json_carries_source_and_launch_metadata() {
    let o = cake(&[
        "lower",
        "examples/gemm_sm90.py",
        "--target",
        "sm_90a",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let doc = json(&o);
    assert_eq!(doc["schema"], "cake.lower/v0");
    let k = &doc["kernels"][0];
    assert_eq!(k["symbol"], "cake_gemm");
    assert!(k["cuda"]
        .as_str()
        .unwrap()
        .contains("extern \"C\" __global__"));
    assert_eq!(k["launch"]["schema"], "cake.launch/v0");
    assert_eq!(doc["findings"]["summary"]["errors"], 0);
}

/// A schedule with warnings still lowers, and its warnings travel with the result.
#[test]
fn lower_keeps_the_checks_warnings() {
    let args = [
        "lower",
        "tests/check/CAKE-S015-bad.py",
        "--target",
        "sm_90a",
    ];
    let o = cake(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(0));
    let doc = json(&o);
    assert_eq!(doc["findings"]["findings"][0]["code"], "CAKE-S015");
    let o = cake(&args);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stderr).contains("warning[CAKE-S015]"));
    assert!(String::from_utf8_lossy(&o.stdout).contains("__global__"));
}

#[test]
fn lowering_an_unimplemented_construct_is_an_error_naming_the_target() {
    // Every target has a code generator now; constructs a generator lacks are still errors.
    let o = cake(&[
        "lower",
        "tests/check/V001_tcgen05_unlowered.py",
        "--target",
        "sm_100a",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let doc = json(&o);
    let f = &doc["findings"][0];
    assert_eq!(f["code"], "CAKE-V001");
    assert_eq!(f["severity"], "error");
    assert!(f["message"].as_str().unwrap().contains("sm_100a"));
}

/// sm_80 and sm_89 have the mma.sync generator: the Ampere GEMM lowers clean for both.
#[test]
fn the_ampere_gemm_lowers_for_sm_80_and_sm_89() {
    assert_eq!(
        cake(&["check", "examples/gemm_sm80.py", "--strict"])
            .status
            .code(),
        Some(0)
    );
    for t in ["sm_80", "sm_89"] {
        let o = cake(&["lower", "examples/gemm_sm80.py", "--target", t]);
        assert_eq!(o.status.code(), Some(0), "{t}");
        let cuda = String::from_utf8_lossy(&o.stdout);
        assert!(cuda.contains("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"));
        assert!(cuda.contains("mbarrier.test_wait.parity"));
    }
}

/// A reader that goes away (`cake explain | head -1`) ends the command quietly: no panic in
/// `println!`, no error status. The read end is closed before cake writes anything.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::process::Stdio;
    for args in [
        &["explain"][..],
        &["lower", "--target", "sm_90a", "examples/attention_sm90.py"][..],
        &[
            "family",
            "sample",
            "kernels/tinygemm/tinygemm.family.toml",
            "--shard",
            "held_out",
            "--n",
            "5000",
            "--seed",
            "1",
        ][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_cake"))
            .current_dir(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run cake");
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    }
}

/// `cake family choose` where no candidate gains enough: a clear error, no file that would not
/// load; with a product and cross-validation, the table states both.
#[test]
fn family_choose_refuses_a_table_without_routes_and_states_its_options() {
    let m = "bench/results/2026-12-02-gemm-family/run2-06587ad/1-representative/measurement.json";
    let c = "kernels/gemm/gemm.candidates.family.toml";
    let o = cake(&["family", "choose", c, m, "--material", "3"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the family would be its fallback alone"),
        "{err}"
    );
    let o = cake(&[
        "family",
        "choose",
        c,
        m,
        "--product",
        "M*N",
        "--open-above",
        "--cross-validate",
        "3",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(table.contains("boxes may bound M*N from below"), "{table}");
    assert!(table.contains("# Cross-validated (3 folds"), "{table}");
    let o = cake(&["family", "choose", c, m, "--product", "M*Q"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("`Q` in the product `M*Q`"));
    // `--card`: the routes of the card the measurement ran on, or a located refusal.
    let o = cake(&["family", "choose", c, m, "--card", "H200"]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(table.contains("cards = [\"H200\"]"), "{table}");
    let o = cake(&["family", "choose", c, m, "--card", "H100"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not on a GPU named H100"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A family whose routes name cards is validated and sampled per GPU: the shipped tinygemm table
/// sends 2048 × 7168 at M = 8 to its H100 route on an H100 and to the shared split elsewhere.
#[test]
fn family_routes_for_one_card_show_per_gpu() {
    let table = "kernels/tinygemm/tinygemm.family.toml";
    let o = cake(&["family", "validate", table]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("tinygemm-bf16-nt on H100:"), "{text}");
    assert!(text.contains("on any other GPU:"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("route unsplit-2048-h100") && l.contains(" not this GPU ")),
        "{text}"
    );
    let route_at_m8 = |card: Option<&str>| {
        let mut args = vec!["family", "sample", table, "--shard", "bench"];
        args.extend(card.map(|c| ["--card", c]).iter().flatten());
        let o = cake(&args);
        assert_eq!(o.status.code(), Some(0));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON line"))
            .find(|v| v["shape"] == serde_json::json!({"M": 8, "N": 2048, "K": 7168}))
            .expect("the bench shard has M = 8, 2048 x 7168")["route"]
            .as_str()
            .expect("a route")
            .to_string()
    };
    assert_eq!(route_at_m8(Some("H100")), "unsplit-2048-h100");
    assert_eq!(route_at_m8(Some("H200")), "swapped-bk256");
    assert_eq!(route_at_m8(None), "swapped-bk256");
    // A measurement routes for the worker's GPU: --card only says what to prebuild.
    let o = cake(&[
        "family",
        "measure",
        table,
        "--card",
        "H100",
        "-o",
        "/nonexistent",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--prebuild"));
}
