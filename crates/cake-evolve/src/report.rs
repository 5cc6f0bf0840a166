//! `cake report RUN`: the trajectory of a run (best so far against budget spent), the failure
//! clusters, a JSON export and an SVG plot of the best validated speedup against budget spent —
//! written by hand, small and deterministic (same archive, same bytes).

use crate::archive::{Archive, Candidate, RunRow, Stage};
use crate::budget::Spent;
use crate::logs;
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
    let plotted = if best_speedup.is_some() {
        "best validated speedup over the first baseline".to_string()
    } else {
        "best predicted speedup over the seed (model only: nothing validated)".to_string()
    };
    Report {
        schema: "cake.evolve-report/v0",
        run,
        spent,
        counts,
        best,
        trajectory,
        clusters: logs::clusters(cands),
        plotted,
    }
}

impl Report {
    /// The (x, y) series the SVG plots: x is GPU seconds when any were spent, else wall seconds;
    /// y the best validated speedup, or (with nothing validated) the seed's predicted time over
    /// the best predicted time.
    pub fn series(&self) -> (&'static str, Vec<(f64, f64)>) {
        let gpu = self.trajectory.iter().any(|p| p.spent.gpu_s > 0.0);
        let x = |p: &Point| if gpu { p.spent.gpu_s } else { p.spent.wall_s };
        let validated = self.trajectory.iter().any(|p| p.best_speedup.is_some());
        let seed_pred = self.trajectory.iter().find_map(|p| p.best_predicted_us);
        let pts = self
            .trajectory
            .iter()
            .filter_map(|p| {
                let y = if validated {
                    p.best_speedup?
                } else {
                    seed_pred? / p.best_predicted_us?
                };
                Some((x(p), y))
            })
            .collect();
        (if gpu { "GPU seconds" } else { "wall seconds" }, pts)
    }

    /// A step plot of best-so-far against budget spent, 640 × 360.
    pub fn svg(&self) -> String {
        let (xlabel, pts) = self.series();
        let (w, h, l, r, t, b) = (640.0, 360.0, 64.0, 16.0, 32.0, 48.0);
        let xmax = pts.iter().map(|p| p.0).fold(0.0, f64::max).max(1e-9);
        let ymax = pts.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
        let sx = |x: f64| l + x / xmax * (w - l - r);
        let sy = |y: f64| h - b - y / ymax * (h - t - b);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"11\">"
        );
        let _ = writeln!(s, "<rect width=\"{w}\" height=\"{h}\" fill=\"white\"/>");
        let _ = writeln!(
            s,
            "<text x=\"{l}\" y=\"20\" font-size=\"13\">{} — {}</text>",
            xml(&self.run.id),
            xml(&self.plotted)
        );
        // Axes and ticks.
        let _ = writeln!(
            s,
            "<path d=\"M{l},{t} V{:.1} H{:.1}\" stroke=\"black\" fill=\"none\"/>",
            h - b,
            w - r
        );
        for i in 0..=4 {
            let f = i as f64 / 4.0;
            let (xv, yv) = (xmax * f, ymax * f);
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                sx(xv),
                h - b + 16.0,
                num(xv)
            );
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                l - 6.0,
                sy(yv) + 4.0,
                num(yv)
            );
        }
        if ymax > 1.0 {
            let _ = writeln!(
                s,
                "<path d=\"M{l},{:.1} H{:.1}\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>",
                sy(1.0),
                w - r
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{xlabel} spent</text>",
            (l + w - r) / 2.0,
            h - 12.0
        );
        if !pts.is_empty() {
            // From the first result on (nothing was known before it), one step per change.
            let mut d = format!("M{:.1},{:.1}", sx(pts[0].0), sy(pts[0].1));
            let mut last = pts[0].1;
            for (x, y) in &pts[1..] {
                if *y != last {
                    let _ = write!(d, " H{:.1} V{:.1}", sx(*x), sy(*y));
                    last = *y;
                }
            }
            let _ = write!(d, " H{:.1}", sx(pts[pts.len() - 1].0));
            let _ = writeln!(
                s,
                "<path d=\"{d}\" stroke=\"#1f77b4\" stroke-width=\"2\" fill=\"none\"/>"
            );
            let _ = writeln!(
                s,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#1f77b4\">best {:.3}x</text>",
                w - r,
                sy(last) - 6.0,
                last
            );
        }
        s.push_str("</svg>\n");
        s
    }

    /// The human rendering.
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
            "spent: {} tokens, {:.1} s wall, {:.1} s GPU · {}",
            self.spent.tokens, self.spent.wall_s, self.spent.gpu_s, self.counts
        );
        let _ = writeln!(
            s,
            "\n  seq gen  stage       result       predicted_us  measured_us  best"
        );
        for p in &self.trajectory {
            let best = match (p.best_speedup, p.best_predicted_us) {
                (Some(x), _) => format!("{x:.3}x"),
                (None, Some(u)) => format!("{} us (pred)", num(u)),
                _ => "-".into(),
            };
            let _ = writeln!(
                s,
                "{:>5} {:>3}  {:<11} {:<12} {:>12} {:>12}  {}",
                p.seq,
                p.generation,
                p.stage,
                p.correctness.as_deref().unwrap_or("-"),
                p.predicted_us.map_or("-".into(), num),
                p.measured_us.map_or("-".into(), num),
                best
            );
        }
        if let Some(b) = &self.best {
            let _ = writeln!(
                s,
                "\nbest: {} (generation {}) predicted {} us, measured {} us, speedup {}",
                &b["hash"].as_str().unwrap_or("")[..12.min(b["hash"].as_str().unwrap_or("").len())],
                b["generation"],
                b["predicted_us"],
                b["measured_us"],
                b["speedup"]
            );
        }
        if !self.clusters.is_empty() {
            let _ = writeln!(s, "\nrecurring failures (compiler-evolution.jsonl):");
            for c in &self.clusters {
                let _ = writeln!(
                    s,
                    "  {:>4} × {} → {}",
                    c["count"],
                    c["signature"].as_str().unwrap_or(""),
                    c["proposal"].as_str().unwrap_or("")
                );
            }
        }
        s
    }
}

/// Write `report.json` and `report.svg` into the run directory; returns the report.
pub fn write(dir: &Path) -> Result<Report, String> {
    let r = build(dir)?;
    let json = serde_json::to_string_pretty(&r).map_err(|e| e.to_string())? + "\n";
    for (name, text) in [("report.json", json), ("report.svg", r.svg())] {
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

fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
