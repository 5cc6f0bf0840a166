//! `cake report RUN`: the trajectory of a run (best so far against budget spent), the failure
//! clusters, a JSON export and a chart (`report.svg`, drawn by cake-chart): every candidate by
//! outcome, the best so far and the 1× line; deterministic (same archive, same bytes).

use crate::archive::{Archive, Candidate, RunRow, Stage};
use crate::budget::Spent;
use crate::logs;
use cake_chart::{palette, Best, Chart, Group, Marker, Row, Shape};
use serde::Serialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub seq: i64,
    pub generation: i64,
    pub hash: String,
    pub stage: String,
    pub correctness: Option<String>,
    /// This candidate's prediction and measurement.
    pub predicted_us: Option<f64>,
    pub measured_us: Option<f64>,
    /// Its validated speedup over the baseline (GPU runs, passed candidates).
    pub speedup: Option<f64>,
    /// Budget spent up to and including this candidate.
    pub spent: Spent,
    /// Best validated speedup so far (GPU runs).
    pub best_speedup: Option<f64>,
    pub best_measured_us: Option<f64>,
    /// Best predicted time so far.
    pub best_predicted_us: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub run: RunRow,
    pub spent: Spent,
    pub counts: Value,
    pub best: Option<Value>,
    pub trajectory: Vec<Point>,
    pub clusters: Vec<Value>,
    /// What the SVG plots on its y axis.
    pub plotted: String,
    /// Nothing ran on a GPU: every number is the cost model's.
    pub model_only: bool,
    /// The baseline the speedups are against (from the evidence), when one was timed.
    pub baseline: Option<String>,
}

pub fn build(dir: &Path) -> Result<Report, String> {
    let archive = Archive::open_existing(dir)?;
    let run = archive
        .runs()?
        .into_iter()
        .next()
        .ok_or_else(|| format!("{} holds no run", dir.display()))?;
    let cands = archive.candidates(&run.id)?;
    let spent = archive.spent(&run.id)?;
    Ok(assemble(run, &cands, spent))
}

fn assemble(run: RunRow, cands: &[Candidate], spent: Spent) -> Report {
    let mut acc = Spent::default();
    let mut best_speedup: Option<f64> = None;
    let mut best_measured: Option<f64> = None;
    let mut best_predicted: Option<f64> = None;
    let mut trajectory = Vec::new();
    for c in cands {
        acc.add(&c.spent);
        if c.validated() {
            if let Some(s) = c.speedup {
                best_speedup = Some(best_speedup.map_or(s, |b: f64| b.max(s)));
            }
            if let Some(m) = c.measured_us {
                best_measured = Some(best_measured.map_or(m, |b: f64| b.min(m)));
            }
        }
        if c.stage != Stage::Rejected {
            if let Some(p) = c.cost_us {
                best_predicted = Some(best_predicted.map_or(p, |b: f64| b.min(p)));
            }
        }
        trajectory.push(Point {
            seq: c.seq,
            generation: c.generation,
            hash: c.hash.clone(),
            stage: c.stage.as_str().into(),
            correctness: c.correctness.clone(),
            predicted_us: c.cost_us,
            measured_us: c.measured_us,
            speedup: c.speedup,
            spent: acc,
            best_speedup,
            best_measured_us: best_measured,
            best_predicted_us: best_predicted,
        });
    }
    let count = |f: &dyn Fn(&Candidate) -> bool| cands.iter().filter(|c| f(c)).count();
    let counts = json!({
        "candidates": cands.len(),
        "rejected": count(&|c| c.stage == Stage::Rejected),
        "ranked_out": count(&|c| c.stage == Stage::RankedOut),
        "estimated": count(&|c| c.stage == Stage::Estimated),
        "evaluated": count(&|c| c.stage == Stage::Evaluated),
        "passed": count(&|c| c.correctness.as_deref() == Some("passed")),
        "failed": count(&|c| c.correctness.as_deref() == Some("failed")),
        "error": count(&|c| c.correctness.as_deref() == Some("error")),
        "quarantined": count(&|c| c.correctness.as_deref() == Some("quarantined")),
        "niches": cands.iter().filter_map(|c| c.niche.clone()).collect::<std::collections::BTreeSet<_>>().len(),
    });
    let model_only = run.config["model_only"] == true;
    let best = crate::search::best_of(cands, model_only).map(|c| {
        json!({"hash": c.hash, "seq": c.seq, "generation": c.generation, "niche": c.niche,
               "predicted_us": c.cost_us, "measured_us": c.measured_us, "speedup": c.speedup,
               "verdict": c.verdict, "source": c.source})
    });
    let plotted = if model_only {
        "predicted speedup over the seed (model only: nothing measured)".to_string()
    } else {
        "measured speedup over the first baseline (validated candidates)".to_string()
    };
    // The evidence names the baseline: the first key of a shape's `speedup` (evaluate.rs).
    let baseline = cands.iter().filter(|c| c.validated()).find_map(|c| {
        let e = c.evidence.as_ref()?;
        let o = e["timing"]["shapes"][0]["speedup"].as_object()?;
        o.keys().next().cloned()
    });
    Report {
        schema: "cake.evolve-report/v0",
        run,
        spent,
        counts,
        best,
        trajectory,
        clusters: logs::clusters(cands),
        plotted,
        model_only,
        baseline,
    }
}

/// How a candidate ended, as the chart shows it (one marker style each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointKind {
    /// Passed the correctness protocol, with a measured speedup.
    MeasuredCorrect,
    /// Passed, but no baseline was timed (no speedup to plot).
    CorrectUntimed,
    /// The front-end or verifier rejected it: never built.
    FailedVerification,
    /// Built and run: the correctness protocol failed.
    FailedCorrectness,
    /// The harness failed (build, worker), or the timing was not believed (quarantined).
    ErrorOrQuarantined,
    /// Clean, with a cost-model prediction only: ranked out of a GPU run, or a model-only run.
    Predicted,
}

impl PointKind {
    pub fn of(p: &Point) -> PointKind {
        match (p.stage.as_str(), p.correctness.as_deref()) {
            ("rejected", _) => PointKind::FailedVerification,
            (_, Some("passed")) if p.speedup.is_some() => PointKind::MeasuredCorrect,
            (_, Some("passed")) => PointKind::CorrectUntimed,
            (_, Some("failed")) => PointKind::FailedCorrectness,
            (_, Some(_)) => PointKind::ErrorOrQuarantined,
            (_, None) => PointKind::Predicted,
        }
    }
}

impl Report {
    /// The chart of the run (docs/agents.md, "Reports"): every candidate a marker by outcome,
    /// against its index (GPU seconds would stack the candidates that spent none on one x). A
    /// GPU run plots measured speedups over the baseline; a model-only run predicted speedups
    /// over the seed, and says "predicted" everywhere. Candidates with no value on that axis
    /// (rejected, failed, or in a GPU run not run) sit in the strip under the plot.
    /// Predictions and measurements never share an axis.
    pub fn chart(&self) -> Chart {
        let xs: Vec<f64> = (1..=self.trajectory.len()).map(|i| i as f64).collect();
        let x_label = "candidate (index, in order proposed)";
        let of = |o: PointKind| -> Vec<(usize, &Point)> {
            self.trajectory
                .iter()
                .enumerate()
                .filter(|(_, p)| PointKind::of(p) == o)
                .collect()
        };
        let row = |label: &str, marker: Marker, o: PointKind| Row {
            label: label.into(),
            marker,
            xs: of(o).into_iter().map(|(i, _)| xs[i]).collect(),
        };
        let failed_verification = row(
            "failed verification",
            Marker {
                shape: Shape::Triangle,
                color: palette::ORANGE,
            },
            PointKind::FailedVerification,
        );
        let title_run = [self.run.id.as_str(), self.run.target.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join(" · ");
        if self.model_only {
            let seed = self.trajectory.iter().find_map(|p| p.predicted_us);
            let ratio = |us: Option<f64>| Some(seed? / us?);
            let points = of(PointKind::Predicted)
                .into_iter()
                .filter_map(|(i, p)| Some((xs[i], ratio(p.predicted_us)?)))
                .collect();
            let best: Vec<(f64, f64)> = self
                .trajectory
                .iter()
                .enumerate()
                .filter_map(|(i, p)| Some((xs[i], ratio(p.best_predicted_us)?)))
                .collect();
            Chart {
                title: format!("{title_run} · cost-model predictions only (no GPU run)"),
                x_label: x_label.into(),
                y_label: "predicted speedup over the seed (×)".into(),
                x_integer: true,
                reference: Some((1.0, "1× = the seed (predicted)".into())),
                groups: vec![Group {
                    label: "predicted by the cost model".into(),
                    marker: Marker {
                        shape: Shape::Ring,
                        color: palette::GREEN,
                    },
                    points,
                }],
                best: best.last().copied().map(|(_, y)| Best {
                    label: "best predicted so far".into(),
                    end_label: format!("best {}× (predicted)", num(y)),
                    points: best,
                }),
                strip_label: "no prediction".into(),
                strip: vec![failed_verification],
            }
        } else {
            let baseline = self.baseline.as_deref().unwrap_or("the baseline");
            let points = of(PointKind::MeasuredCorrect)
                .into_iter()
                .filter_map(|(i, p)| Some((xs[i], p.speedup?)))
                .collect();
            let best: Vec<(f64, f64)> = self
                .trajectory
                .iter()
                .enumerate()
                .filter_map(|(i, p)| Some((xs[i], p.best_speedup?)))
                .collect();
            Chart {
                title: format!(
                    "{title_run} · measured on the GPU ({} GPU-s)",
                    cake_chart::tick(self.spent.gpu_s, false)
                ),
                x_label: x_label.into(),
                y_label: format!("measured speedup over {baseline} (×)"),
                x_integer: true,
                reference: Some((1.0, format!("1× = {baseline}"))),
                groups: vec![Group {
                    label: "correct, measured".into(),
                    marker: Marker {
                        shape: Shape::Dot,
                        color: palette::BLUE,
                    },
                    points,
                }],
                best: best.last().copied().map(|(_, y)| Best {
                    label: "best measured so far".into(),
                    end_label: format!("best {}× (measured)", num(y)),
                    points: best,
                }),
                strip_label: "no speedup".into(),
                strip: vec![
                    failed_verification,
                    row(
                        "failed correctness",
                        Marker {
                            shape: Shape::Cross,
                            color: palette::VERMILION,
                        },
                        PointKind::FailedCorrectness,
                    ),
                    row(
                        "harness error or quarantined",
                        Marker {
                            shape: Shape::Diamond,
                            color: palette::PURPLE,
                        },
                        PointKind::ErrorOrQuarantined,
                    ),
                    row(
                        "correct, no baseline timed",
                        Marker {
                            shape: Shape::Dot,
                            color: palette::SKY,
                        },
                        PointKind::CorrectUntimed,
                    ),
                    row(
                        "not run (ranked out)",
                        Marker {
                            shape: Shape::Ring,
                            color: palette::GREY,
                        },
                        PointKind::Predicted,
                    ),
                ],
            }
        }
    }

    /// The chart as SVG (cake-chart): same archive, same bytes.
    pub fn svg(&self) -> Result<String, String> {
        cake_chart::scatter_with_best(&self.chart())
    }

    /// The human rendering. Values a run does not have are said in words ("not measured"),
    /// never printed as JSON `null`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let r = &self.run;
        let _ = writeln!(
            s,
            "run {} · {} · seed {} · proposer {}",
            r.id, r.status, r.seed, r.proposer
        );
        let _ = writeln!(s, "contract {} · budget {}", r.contract, r.budget);
        let _ = writeln!(
            s,
            "spent: {} tokens, {:.1} s wall, {:.1} s GPU",
            self.spent.tokens, self.spent.wall_s, self.spent.gpu_s
        );
        let _ = writeln!(s, "{}", self.counts_text());
        let _ = writeln!(
            s,
            "\n  seq gen  stage       result       predicted_us  measured_us  best"
        );
        for p in &self.trajectory {
            let best = match (p.best_speedup, p.best_predicted_us) {
                (Some(x), _) => format!("{}x", num(x)),
                (None, Some(u)) => format!("{} us (predicted)", num(u)),
                _ => "—".into(),
            };
            let _ = writeln!(
                s,
                "{:>5} {:>3}  {:<11} {:<12} {:>12} {:>12}  {}",
                p.seq,
                p.generation,
                p.stage,
                p.correctness.as_deref().unwrap_or("—"),
                p.predicted_us.map_or("—".into(), num),
                p.measured_us.map_or("—".into(), num),
                best
            );
        }
        if let Some(b) = &self.best {
            let _ = writeln!(s, "\n{}", self.best_text(b));
        }
        if !self.clusters.is_empty() {
            let _ = writeln!(s, "\nrecurring failures (compiler-evolution.jsonl):");
            for c in &self.clusters {
                let _ = writeln!(
                    s,
                    "  {:>4} × {} → {}",
                    c["count"].as_u64().unwrap_or(0),
                    c["signature"].as_str().unwrap_or(""),
                    c["proposal"].as_str().unwrap_or("")
                );
            }
        }
        s
    }

    /// "12 candidates: 3 failed verification, ..." with the zero counts left out.
    fn counts_text(&self) -> String {
        let n = |k: &str| self.counts[k].as_u64().unwrap_or(0);
        let parts: Vec<String> = [
            ("rejected", "failed verification"),
            ("ranked_out", "ranked out"),
            ("estimated", "predicted only"),
            ("evaluated", "run on the GPU"),
            ("passed", "passed"),
            ("failed", "failed correctness"),
            ("error", "harness error"),
            ("quarantined", "quarantined"),
        ]
        .iter()
        .filter(|(k, _)| n(k) > 0)
        .map(|(k, say)| format!("{} {say}", n(k)))
        .collect();
        let mut t = format!("{} candidates", n("candidates"));
        if !parts.is_empty() {
            t += &format!(": {}", parts.join(", "));
        }
        t + &format!(" · {} niches", n("niches"))
    }

    /// The best candidate's line: what was predicted, what was measured, in words when absent.
    fn best_text(&self, b: &Value) -> String {
        let hash = b["hash"].as_str().unwrap_or("");
        let hash = &hash[..12.min(hash.len())];
        let predicted = b["predicted_us"]
            .as_f64()
            .map_or("no prediction".into(), |u| {
                format!("predicted {} us", num(u))
            });
        let measured = match b["measured_us"].as_f64() {
            Some(u) => format!("measured {} us", num(u)),
            None if self.model_only => "not measured (model-only run)".into(),
            None => "not measured".into(),
        };
        let speedup = b["speedup"].as_f64().map(|x| {
            let over = self.baseline.as_deref().unwrap_or("the baseline");
            format!(", {}x over {over} (measured)", num(x))
        });
        format!(
            "best{}: {hash} (generation {}): {predicted}, {measured}{}",
            if self.model_only { " predicted" } else { "" },
            b["generation"].as_i64().unwrap_or(0),
            speedup.unwrap_or_default()
        )
    }
}

/// Write `report.json` and `report.svg` into the run directory; returns the report.
pub fn write(dir: &Path) -> Result<Report, String> {
    let r = build(dir)?;
    let json = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())? + "\n";
    for (name, text) in [("report.json", json), ("report.svg", r.svg()?)] {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))?;
    }
    Ok(r)
}

fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
