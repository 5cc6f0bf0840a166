//! The report of hand-made runs: the summary (golden, no JSON `null` in it) and the chart's
//! one marker per candidate for every outcome.

use super::*;
use crate::budget::Budget;
use expect_test::expect;

fn cand(seq: i64, stage: Stage, correctness: Option<&str>, cost: Option<f64>) -> Candidate {
    let passed = correctness == Some("passed");
    let measured = passed.then(|| 1000.0 / seq as f64);
    Candidate {
        seq,
        hash: format!("{seq:0>64}"),
        generation: seq / 2,
        parents: vec![],
        proposer: "knobs".into(),
        source: String::new(),
        stage,
        findings: None,
        niche: None,
        bottleneck: None,
        cost_us: cost,
        build: None,
        correctness: correctness.map(str::to_string),
        verdict: None,
        // Named in the evidence the way cake-eval writes it: the baseline's name as the key.
        evidence: passed
            .then(|| json!({"timing": {"shapes": [{"speedup": {"cublas": {"events": 1.0}}}]}})),
        measured_us: measured,
        speedup: measured.map(|m| 900.0 / m),
        spent: Spent {
            tokens: 0,
            wall_s: 1.0,
            gpu_s: if stage == Stage::Evaluated { 0.5 } else { 0.0 },
        },
        created: String::new(),
    }
}

fn run(model_only: bool) -> RunRow {
    RunRow {
        id: "run-0123".into(),
        created: String::new(),
        contract: "gemm.contract.toml".into(),
        seed: "seed.py".into(),
        target: "sm_90a".into(),
        proposer: "knobs".into(),
        budget: "gpu=60s".parse::<Budget>().unwrap(),
        config: json!({ "model_only": model_only }),
        status: "done: budget spent: gpu".into(),
    }
}

fn gpu_run() -> Vec<Candidate> {
    vec![
        cand(1, Stage::Evaluated, Some("passed"), Some(900.0)),
        cand(2, Stage::Rejected, None, None),
        cand(3, Stage::Evaluated, Some("failed"), Some(700.0)),
        cand(4, Stage::Evaluated, Some("passed"), Some(650.0)),
        cand(5, Stage::RankedOut, None, Some(990.0)),
        cand(6, Stage::Evaluated, Some("quarantined"), Some(600.0)),
        cand(7, Stage::Evaluated, Some("error"), Some(610.0)),
        cand(8, Stage::Evaluated, Some("passed"), Some(500.0)),
    ]
}

fn model_run() -> Vec<Candidate> {
    vec![
        cand(1, Stage::Estimated, None, Some(1000.0)),
        cand(2, Stage::Rejected, None, None),
        cand(3, Stage::Estimated, None, Some(400.0)),
        cand(4, Stage::Estimated, None, Some(700.0)),
    ]
}

fn report(model_only: bool, cands: &[Candidate]) -> Report {
    let mut spent = Spent::default();
    cands.iter().for_each(|c| spent.add(&c.spent));
    assemble(run(model_only), cands, spent)
}

#[test]
fn the_gpu_summary_says_what_was_measured() {
    let text = report(false, &gpu_run()).text();
    assert!(!text.contains("null"), "{text}");
    expect![[r#"
        run run-0123 · done: budget spent: gpu · seed seed.py · proposer knobs
        contract gemm.contract.toml · budget gpu=60s
        spent: 0 tokens, 8.0 s wall, 3.0 s GPU
        8 candidates: 1 failed verification, 1 ranked out, 6 run on the GPU, 3 passed, 1 failed correctness, 1 harness error, 1 quarantined · 0 niches

          seq gen  stage       result       predicted_us  measured_us  best
            1   0  evaluated   passed                900         1000  0.900x
            2   1  rejected    —                       —            —  0.900x
            3   1  evaluated   failed                700            —  0.900x
            4   2  evaluated   passed                650          250  3.60x
            5   2  ranked_out  —                     990            —  3.60x
            6   3  evaluated   quarantined           600            —  3.60x
            7   3  evaluated   error                 610            —  3.60x
            8   4  evaluated   passed                500          125  7.20x

        best: 000000000000 (generation 4): predicted 500 us, measured 125 us, 7.20x over cublas (measured)

        recurring failures (compiler-evolution.jsonl):
             2 × calibration:unclassified → calibration task: re-fit the cost model for the `unclassified` class against these measurements
             1 × harness:error → coverage: a verified schedule the harness could not run is a compiler or lowering bug
             1 × rule:none → proposer hint: feed `cake explain none` to the proposer
             1 × runtime:failed → verifier rule: `runtime:failed` passed every static gate and failed on the GPU; find the hazard statically
             1 × timing:below_floor → verifier rule: a speed-of-light finding from the estimator's bound should reject such a candidate before the GPU
    "#]]
    .assert_eq(&text);
}

#[test]
fn the_model_only_summary_says_nothing_was_measured() {
    let text = report(true, &model_run()).text();
    assert!(!text.contains("null"), "{text}");
    expect![[r#"
        run run-0123 · done: budget spent: gpu · seed seed.py · proposer knobs
        contract gemm.contract.toml · budget gpu=60s
        spent: 0 tokens, 4.0 s wall, 0.0 s GPU
        4 candidates: 1 failed verification, 3 predicted only · 0 niches

          seq gen  stage       result       predicted_us  measured_us  best
            1   0  estimated   —                    1000            —  1000 us (predicted)
            2   1  rejected    —                       —            —  1000 us (predicted)
            3   1  estimated   —                     400            —  400 us (predicted)
            4   2  estimated   —                     700            —  400 us (predicted)

        best predicted: 000000000000 (generation 1): predicted 400 us, not measured (model-only run)

        recurring failures (compiler-evolution.jsonl):
             1 × rule:none → proposer hint: feed `cake explain none` to the proposer
    "#]]
    .assert_eq(&text);
}

/// Markers by colour: circles and polygons filled or stroked with it.
fn markers(svg: &str, c: (u8, u8, u8)) -> usize {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    let hex = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    doc.descendants()
        .filter(|n| n.has_tag_name("circle") || n.has_tag_name("polygon"))
        .filter(|n| {
            [n.attribute("fill"), n.attribute("stroke")]
                .iter()
                .any(|a| a.is_some_and(|a| a.eq_ignore_ascii_case(&hex)))
        })
        .count()
}

#[test]
fn every_outcome_is_one_marker_and_one_legend_entry() {
    let r = report(false, &gpu_run());
    let svg = r.svg().unwrap();
    // Each (outcome, colour): its candidates, plus its legend entry.
    for (n, c) in [
        (3, palette::BLUE),      // correct, measured
        (1, palette::ORANGE),    // failed verification
        (1, palette::VERMILION), // failed correctness
        (2, palette::PURPLE),    // harness error or quarantined
        (1, palette::GREY),      // not run (ranked out)
    ] {
        assert_eq!(markers(&svg, c), n + 1, "colour {c:?}");
    }
    assert!(svg.contains("measured speedup over cublas (×)"));
    assert!(svg.contains("best 7.20× (measured)"), "{svg}");
    // The model-only run: three predicted rings, one rejection, and "measured" nowhere.
    let m = report(true, &model_run()).svg().unwrap();
    assert_eq!(markers(&m, palette::GREEN), 3 + 1);
    assert_eq!(markers(&m, palette::ORANGE), 1 + 1);
    assert!(!m.to_lowercase().contains("measured"), "{m}");
    assert!(m.contains("best 2.50× (predicted)"), "{m}");
}
