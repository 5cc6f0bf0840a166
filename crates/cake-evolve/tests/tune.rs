//! The built-in knob mutator as an autotuner, offline: model-only mode (no GPU) must improve a
//! deliberately poor seed's predicted time, keep several niches alive, reject candidates the
//! verifier rejects without evaluating them, and write its logs and report.

mod common;

use cake_evolve::search::{Event, Search, Settings};
use cake_evolve::{Budget, KnobMutator, Stage};
use common::*;

fn settings(dir: &std::path::Path, model_only: bool) -> Settings {
    let mut s = Settings::new(
        dir.to_path_buf(),
        gemm_contract(),
        data("poor_gemm.py"),
        "wall=60s".parse::<Budget>().unwrap(),
    );
    s.model_only = model_only;
    s.per_generation = 6;
    s
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("cake-evolve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn model_only_tuning_improves_a_poor_seeds_predicted_time() {
    let dir = tempdir("tune");
    let mut search = Search::start(
        settings(&dir, true),
        Box::new(KnobMutator::new(7)),
        Some(Box::new(Toy)),
        None,
    )
    .unwrap();
    let mut generations = 0;
    for _ in 0..8 {
        search.generation_step(&mut |_e: Event| {}).unwrap();
        generations += 1;
    }
    assert_eq!(generations, 8);
    let pop = search.population();
    let seed = &pop[0];
    assert_eq!(seed.proposer, "seed");
    assert_eq!(seed.stage, Stage::Estimated, "{:?}", seed.verdict);
    let seed_us = seed.cost_us.unwrap();
    let best = search.best().unwrap();
    let best_us = best.cost_us.unwrap();
    assert!(
        best_us < seed_us * 0.5,
        "predicted {best_us} us vs the seed's {seed_us} us"
    );
    // Nothing ran on a GPU, every candidate is either estimated or rejected by the verifier.
    assert!(pop
        .iter()
        .all(|c| matches!(c.stage, Stage::Estimated | Stage::Rejected) && c.correctness.is_none()));
    // Rejected candidates carry the verifier's findings and never an estimate.
    for c in pop.iter().filter(|c| c.stage == Stage::Rejected) {
        assert!(c.cost_us.is_none());
        assert!(
            c.findings.as_ref().unwrap()["summary"]["errors"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
    // Diversity: more than one niche (bottleneck class × structure) among clean candidates.
    let niches: std::collections::BTreeSet<_> =
        pop.iter().filter_map(|c| c.niche.clone()).collect();
    assert!(niches.len() >= 3, "{niches:?}");
    // ... and the proposer started from several of them, not one lineage.
    let parents: std::collections::BTreeSet<_> =
        pop.iter().flat_map(|c| c.parents.iter()).collect();
    assert!(parents.len() >= 3, "{parents:?}");
    // Hashes are unique within the run.
    let hashes: std::collections::BTreeSet<_> = pop.iter().map(|c| &c.hash).collect();
    assert_eq!(hashes.len(), pop.len());
    // The report: trajectory, SVG and JSON export, deterministic.
    let r = cake_evolve::report::write(&dir).unwrap();
    assert_eq!(r.trajectory.len(), pop.len());
    let svg = std::fs::read_to_string(dir.join("report.svg")).unwrap();
    assert_eq!(
        svg,
        cake_evolve::report::build(&dir).unwrap().svg().unwrap()
    );
    model_only_chart(&svg, pop);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], "cake.evolve-report/v0");
    // The summary says what is missing in words: a model-only run measured nothing.
    let text = r.text();
    let best_line = text.lines().find(|l| l.starts_with("best")).unwrap();
    assert!(
        best_line.starts_with("best predicted: ")
            && best_line.ends_with(", not measured (model-only run)"),
        "{best_line}"
    );
    assert!(!text.contains("null"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cascade_evaluates_only_the_top_k_and_routes_the_evidence() {
    let dir = tempdir("cascade");
    let mut s = settings(&dir, false);
    s.top_k = 2;
    s.budget = "gpu=4s".parse().unwrap();
    let mut search = Search::start(
        s,
        Box::new(KnobMutator::new(3)),
        Some(Box::new(Toy)),
        Some(Box::new(Scripted {
            sleep_ms: 0,
            calls: 0,
        })),
    )
    .unwrap();
    let why = search.run(&mut |_e: Event| {}).unwrap();
    assert_eq!(why, "budget spent: gpu");
    let pop = search.population();
    let evaluated: Vec<_> = pop.iter().filter(|c| c.stage == Stage::Evaluated).collect();
    // 0.5 GPU-s per evaluation, 4 s budget: the seed and then at most 2 per generation.
    assert_eq!(evaluated.len(), 8, "GPU budget bounds evaluations");
    for g in 1..=pop.iter().map(|c| c.generation).max().unwrap() {
        let n = pop
            .iter()
            .filter(|c| c.generation == g && c.stage == Stage::Evaluated)
            .count();
        assert!(n <= 2, "generation {g} evaluated {n}");
        // The evaluated ones are the best predicted of their generation.
        let worst_eval = pop
            .iter()
            .filter(|c| c.generation == g && c.stage == Stage::Evaluated)
            .map(|c| c.cost_us.unwrap())
            .fold(0.0, f64::max);
        for c in pop
            .iter()
            .filter(|c| c.generation == g && c.stage == Stage::RankedOut)
        {
            assert!(c.cost_us.unwrap() >= worst_eval);
        }
    }
    assert!(evaluated
        .iter()
        .all(|c| c.validated() && c.evidence.is_some()));
    // Calibration log: one line per evaluated candidate, measured = 1.3 × predicted.
    let cal = std::fs::read_to_string(dir.join("calibration.jsonl")).unwrap();
    assert_eq!(cal.lines().count(), 8);
    for l in cal.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!((v["ratio"].as_f64().unwrap() - 1.3).abs() < 1e-6, "{v}");
    }
    // Verifier rejections cluster in the compiler-evolution log by rule code.
    let evo = std::fs::read_to_string(dir.join("compiler-evolution.jsonl")).unwrap();
    let rejected = pop.iter().filter(|c| c.stage == Stage::Rejected).count();
    if rejected > 0 {
        let first: serde_json::Value = serde_json::from_str(evo.lines().next().unwrap()).unwrap();
        assert!(
            first["signature"]
                .as_str()
                .unwrap()
                .starts_with("rule:CAKE-"),
            "{first}"
        );
        assert!(first["proposal"].is_string());
    }
    let r = cake_evolve::report::write(&dir).unwrap();
    assert!(
        r.trajectory.last().unwrap().best_speedup.unwrap() > r.trajectory[0].best_speedup.unwrap()
    );
    gpu_chart(
        &std::fs::read_to_string(dir.join("report.svg")).unwrap(),
        pop,
    );
    assert!(!r.text().contains("null"), "{}", r.text());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_candidate_faster_than_light_is_quarantined_not_promoted() {
    let dir = tempdir("quarantine");
    let mut s = settings(&dir, false);
    s.top_k = 8;
    s.budget = "gpu=10s".parse().unwrap();
    // Every 2-stage candidate "measures" 100x faster than its prediction allows.
    let mut search = Search::start(
        s,
        Box::new(KnobMutator::new(5)),
        Some(Box::new(Toy)),
        Some(Box::new(TooFast {
            marker: "\nSTAGES = 2\n",
        })),
    )
    .unwrap();
    search.run(&mut |_e: Event| {}).unwrap();
    let pop = search.population();
    let quarantined: Vec<_> = pop
        .iter()
        .filter(|c| c.correctness.as_deref() == Some("quarantined"))
        .collect();
    assert!(!quarantined.is_empty());
    for q in &quarantined {
        assert!(q.source.contains("\nSTAGES = 2\n"));
        assert!(q.measured_us.is_none() && q.speedup.is_none() && !q.validated());
        assert!(q.verdict.as_deref().unwrap().starts_with("quarantined:"));
        assert!(q.evidence.is_some(), "the evidence is kept");
    }
    let best = search.best().unwrap();
    assert!(!best.source.contains("\nSTAGES = 2\n"), "never promoted");
    let evo = std::fs::read_to_string(dir.join("compiler-evolution.jsonl")).unwrap();
    assert!(
        evo.contains("\"signature\":\"timing:below_floor\""),
        "{evo}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_cost_model_ranks_the_poor_seed_below_its_tuned_mutants() {
    // The same search with the real cost model (cake-cost, sm_90a's built-in calibration) in
    // place of the toy: model-only tuning must find a candidate it predicts faster than the
    // poor seed, and every clean candidate carries the model's bottleneck class.
    let dir = tempdir("tune-cost");
    let mut search = Search::start(
        settings(&dir, true),
        Box::new(KnobMutator::new(11)),
        Some(Box::new(cake_evolve::CostModel::default())),
        None,
    )
    .unwrap();
    for _ in 0..6 {
        search.generation_step(&mut |_e: Event| {}).unwrap();
    }
    let pop = search.population();
    let seed_us = pop[0].cost_us.expect("the seed is estimated");
    let best_us = search.best().unwrap().cost_us.unwrap();
    assert!(
        best_us < seed_us * 0.9,
        "predicted {best_us} us vs the seed's {seed_us} us"
    );
    for c in pop.iter().filter(|c| c.stage == Stage::Estimated) {
        let niche = c.niche.as_deref().unwrap_or_default();
        assert!(
            [
                "tensor_cores",
                "memory",
                "latency",
                "synchronization",
                "epilogue",
                "tail_wave",
                "launch"
            ]
            .iter()
            .any(|b| niche.contains(b)),
            "{niche}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A model-only run's chart: predicted points, the best predicted line, the 1× seed line, the
/// verifier's rejections in the strip; one marker per candidate (plus one per legend entry) and
/// not one label that says "measured".
fn model_only_chart(svg: &str, pop: &[cake_evolve::Candidate]) {
    use cake_chart::palette;
    let chart = Svg::parse(svg);
    for want in [
        "candidate (index, in order proposed)",
        "predicted speedup over the seed (×)",
        "1× = the seed (predicted)",
        "best predicted so far",
    ] {
        assert!(chart.has(want), "no {want:?} in {:?}", chart.texts);
    }
    let best = chart
        .texts
        .iter()
        .find(|t| t.starts_with("best ") && t.ends_with("× (predicted)"));
    assert!(best.is_some(), "{:?}", chart.texts);
    assert!(
        !chart
            .texts
            .iter()
            .any(|t| t.to_lowercase().contains("measured")),
        "a model-only chart must not say measured: {:?}",
        chart.texts
    );
    let estimated = pop.iter().filter(|c| c.stage == Stage::Estimated).count();
    let rejected = pop.iter().filter(|c| c.stage == Stage::Rejected).count();
    assert_eq!(estimated + rejected, pop.len());
    assert_eq!(chart.markers(palette::GREEN), estimated + 1);
    let legend = 1 + usize::from(rejected > 0);
    assert_eq!(
        chart.markers(palette::ORANGE),
        rejected + usize::from(rejected > 0)
    );
    assert_eq!(chart.all_markers(), pop.len() + legend);
}

/// A GPU run's chart: measured speedups against GPU seconds, the baseline the evidence names,
/// every candidate once by outcome.
fn gpu_chart(svg: &str, pop: &[cake_evolve::Candidate]) {
    use cake_chart::palette;
    let chart = Svg::parse(svg);
    for want in [
        "candidate (index, in order proposed)",
        "measured speedup over torch_matmul (×)",
        "1× = torch_matmul",
        "best measured so far",
    ] {
        assert!(chart.has(want), "no {want:?} in {:?}", chart.texts);
    }
    let count = |f: &dyn Fn(&cake_evolve::Candidate) -> bool| pop.iter().filter(|c| f(c)).count();
    let measured = count(&|c| c.validated() && c.speedup.is_some());
    let ranked_out = count(&|c| c.stage == Stage::RankedOut);
    let rejected = count(&|c| c.stage == Stage::Rejected);
    assert!(measured > 0 && ranked_out > 0);
    assert_eq!(measured + ranked_out + rejected, pop.len());
    assert_eq!(chart.markers(palette::BLUE), measured + 1);
    assert_eq!(chart.markers(palette::GREY), ranked_out + 1);
    let legend = 2 + usize::from(rejected > 0);
    assert_eq!(chart.all_markers(), pop.len() + legend);
    assert!(
        chart.has(&format!("correct, measured ({measured})")),
        "{:?}",
        chart.texts
    );
    assert!(chart.has(&format!("not run (ranked out) ({ranked_out})")));
}
