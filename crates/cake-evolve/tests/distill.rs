//! `cake distill` and its gate over an archive written the way a run writes it: recurring
//! verifier rejections become a tactic, GPU failures after clean static gates a draft rule with
//! a reduced schedule, mispredictions a calibration refit; the gate judges each against the
//! compiler and the tactics file as they are.

use cake_evolve::archive::{Archive, Candidate, RunRow, Stage};
use cake_evolve::distill;
use cake_evolve::tactics::Tactics;
use cake_evolve::{Budget, Spent};
use serde_json::json;
use std::path::{Path, PathBuf};

fn example(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples")
            .join(name),
    )
    .expect("example")
}

/// The GEMM example with `STAGES` and a knob no statement reads.
fn gemm(stages: i64, unused: i64) -> String {
    let text = example("gemm_sm90.py");
    let knobs = cake_evolve::knobs::knobs(&text);
    let s = knobs.iter().find(|k| k.name == "STAGES").expect("STAGES");
    let text = cake_evolve::knobs::apply(&text, &[(s, stages)]);
    text.replacen(
        "import cake\n",
        &format!("import cake\nUNUSED = {unused}\n"),
        1,
    )
}

fn candidate(seq: i64, source: &str, parent: Option<&Candidate>) -> Candidate {
    Candidate {
        seq,
        hash: cake_evolve::search::candidate_hash(source, "sm_90a"),
        generation: seq,
        parents: parent.map(|p| vec![p.hash.clone()]).unwrap_or_default(),
        proposer: "knobs".into(),
        source: source.to_string(),
        stage: Stage::Evaluated,
        findings: None,
        niche: None,
        bottleneck: None,
        cost_us: None,
        build: None,
        correctness: Some("passed".into()),
        verdict: None,
        evidence: None,
        measured_us: None,
        speedup: None,
        spent: Spent::default(),
        created: "2026-12-02T00:00:00Z".into(),
    }
}

fn rejected_with(mut c: Candidate, code: &str) -> Candidate {
    c.stage = Stage::Rejected;
    c.correctness = None;
    c.findings = Some(json!({"findings": [{"code": code, "severity": "error",
        "message": "the schedule needs more shared memory than the block may have",
        "span": {"start_line": 12}}]}));
    c
}

fn unwritten(mut c: Candidate) -> Candidate {
    c.correctness = Some("failed".into());
    c.verdict = Some("C: 4096 elements never written".into());
    c.evidence = Some(
        json!({"correctness": {"checks": [{"passed": false, "result": {
        "inputs_unmodified": true, "deterministic": true, "reason": "unwritten",
        "outputs": {"C": {"unwritten": 4096}}}}]}}),
    );
    c
}

/// An archive with: a parent; three children rejected for CAKE-C002 after one knob move each;
/// three that failed on the GPU with unwritten output (one also changes a knob no code reads);
/// three whose time was predicted a third of what was measured.
fn archive(dir: &Path) -> Candidate {
    let mut a = Archive::open(dir).expect("archive");
    a.create_run(&RunRow {
        id: "run".into(),
        created: "2026-12-02T00:00:00Z".into(),
        contract: "gemm.contract.toml".into(),
        seed: "gemm_sm90.py".into(),
        target: "sm_90a".into(),
        proposer: "knobs".into(),
        budget: Budget::default(),
        config: json!({}),
        status: "done".into(),
    })
    .expect("run");
    let parent = candidate(0, &gemm(3, 1), None);
    a.insert("run", &parent).unwrap();
    let mut seq = 1;
    for stages in [6, 8, 10] {
        let c = rejected_with(candidate(seq, &gemm(stages, 1), Some(&parent)), "CAKE-C002");
        a.insert("run", &c).unwrap();
        seq += 1;
    }
    // Accepted with STAGES = 4: the tactic must not rule that move out.
    a.insert("run", &candidate(seq, &gemm(4, 1), Some(&parent)))
        .unwrap();
    seq += 1;
    for (stages, unused) in [(2, 7), (2, 1), (2, 9)] {
        let c = unwritten(candidate(seq, &gemm(stages, unused), Some(&parent)));
        a.insert("run", &c).unwrap();
        seq += 1;
    }
    for i in 0..3 {
        let mut c = candidate(seq, &gemm(3, 10 + i), Some(&parent));
        c.bottleneck = Some("memory".into());
        c.cost_us = Some(100.0);
        c.measured_us = Some(300.0 + i as f64);
        a.insert("run", &c).unwrap();
        seq += 1;
    }
    parent
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("cake-distill-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn knob_edits_are_the_constants_that_differ() {
    assert_eq!(
        distill::knob_edits(&gemm(3, 1), &gemm(4, 2)),
        Some(vec![
            ("UNUSED".to_string(), 1, 2),
            ("STAGES".to_string(), 3, 4)
        ])
    );
    let other = gemm(3, 1).replace("lm.cdiv(M, BM)", "lm.cdiv(M, BM) + 0");
    assert_eq!(distill::knob_edits(&gemm(3, 1), &other), None);
}

#[test]
fn a_reduction_keeps_only_the_edits_that_change_the_code() {
    let (reduced, kept) = distill::reduce(&gemm(3, 1), &gemm(2, 7), "sm_90a");
    assert_eq!(kept, vec![("STAGES".to_string(), 3, 2)]);
    assert_eq!(reduced, gemm(2, 1));
}

#[test]
fn clusters_become_a_tactic_a_rule_draft_and_a_refit() {
    let runs = scratch("runs");
    let out = scratch("out");
    archive(&runs);
    let loaded = distill::load(std::slice::from_ref(&runs)).unwrap();
    let clusters = distill::clusters(&loaded, 3);
    let names: Vec<&str> = clusters
        .iter()
        .map(|c| c.signature.signature.as_str())
        .collect();
    assert_eq!(
        names,
        ["calibration:memory", "mismatch:unwritten", "rule:CAKE-C002"]
    );
    let accepted = distill::accepted_moves(&loaded);
    assert!(accepted.contains(&("STAGES".to_string(), 4)));
    let summary = distill::distill(&clusters, &accepted, &out).unwrap();
    let by_kind = |k: &str| {
        summary["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == k)
            .cloned()
            .unwrap_or_else(|| panic!("no {k}: {summary:#}"))
    };

    // The tactic: the three rejected moves, for the kernel they were made in.
    let tactic = by_kind("tactic");
    assert_eq!(tactic["tactic"]["kernel"], "gemm");
    assert_eq!(
        tactic["tactic"]["avoid"],
        json!([{"knob": "STAGES", "values": [6, 8, 10]}])
    );
    let toml = std::fs::read_to_string(out.join("rule-cake-c002/tactic.toml")).unwrap();
    assert!(Tactics::parse(&toml).is_ok(), "{toml}");

    // The rule draft: every member kept, the first reduced to the edit that changes the code.
    let rule = by_kind("rule");
    assert_eq!(rule["edits"], json!([["STAGES", 3, 2]]));
    let minimized = std::fs::read_to_string(out.join("mismatch-unwritten/minimized.py")).unwrap();
    assert!(minimized.ends_with(&gemm(2, 1)), "{minimized}");
    assert!(minimized.contains("STAGES 3 -> 2"));
    assert_eq!(
        std::fs::read_dir(out.join("mismatch-unwritten/members"))
            .unwrap()
            .count(),
        3
    );
    assert!(out.join("mismatch-unwritten/rule.md").exists());

    // The refit: measured ~3x predicted, centred by the scale.
    let refit = &by_kind("calibration")["refit"];
    assert!(
        (refit["scale"].as_f64().unwrap() - 3.01).abs() < 0.02,
        "{refit}"
    );
    assert!(refit["median_error_after"].as_f64().unwrap() < 0.01);
    assert!(refit["median_error_before"].as_f64().unwrap() > 1.9);

    // The gate: the rule is rejected (the verifier does not catch the members yet), the
    // calibration accepted, the tactic accepted only once the tactics file rules its moves out.
    let verdicts = |t: &Tactics| {
        distill::gate(&out, &[], t)
            .unwrap()
            .into_iter()
            .map(|v| (v.kind, v.accepted, v.reasons))
            .collect::<Vec<_>>()
    };
    let before = verdicts(&Tactics::default());
    let find = |vs: &[(String, bool, Vec<String>)], k: &str| {
        vs.iter().find(|v| v.0 == k).cloned().expect(k)
    };
    let rule_v = find(&before, "rule");
    assert!(!rule_v.1);
    assert_eq!(rule_v.2.len(), 3, "{:?}", rule_v.2);
    assert!(rule_v.2[0].contains("still checks clean"));
    assert!(find(&before, "calibration").1);
    assert!(!find(&before, "tactic").1);
    let merged = Tactics::parse(
        r#"
[[tactic]]
id = "gemm-stages"
rule = "CAKE-C002"
kernel = "gemm"
text = "More than 4 stages overflow shared memory."
avoid = [{ knob = "STAGES", values = [6, 8, 10] }]
"#,
    )
    .unwrap();
    assert!(find(&verdicts(&merged), "tactic").1);
    let _ = std::fs::remove_dir_all(&runs);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_gate_accepts_a_rule_that_catches_every_member_and_keeps_the_corpus_clean() {
    let out = scratch("gate");
    let members = out.join("rule/members");
    std::fs::create_dir_all(&members).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // A member the verifier catches today (a planted hazard).
    let bad = std::fs::read_to_string(root.join("tests/check/CAKE-S005-bad.py")).unwrap();
    std::fs::write(members.join("a.py"), &bad).unwrap();
    std::fs::write(
        out.join(distill::SUMMARY),
        json!({"artifacts": [{"kind": "rule", "folder": out.join("rule")}]}).to_string(),
    )
    .unwrap();
    let good = root.join("tests/check/CAKE-S005-good.py");
    let v = distill::gate(&out, std::slice::from_ref(&good), &Tactics::default()).unwrap();
    assert!(v[0].accepted, "{:?}", v[0].reasons);
    // A corpus file that no longer checks clean rejects it.
    let v = distill::gate(
        &out,
        &[good, root.join("tests/check/CAKE-S005-bad.py")],
        &Tactics::default(),
    )
    .unwrap();
    assert!(!v[0].accepted);
    assert!(
        v[0].reasons[0].contains("CAKE-S005-bad.py"),
        "{:?}",
        v[0].reasons
    );
    let _ = std::fs::remove_dir_all(&out);
}
