//! How well the cost model predicts a family (docs/cost-model.md, "Accuracy per family"): every
//! correct timing in a family's measurements set against the model's estimate of the same
//! route's schedule, specialized the same way, at the same shape. No GPU is needed: the
//! measurements are already on disk, so a change to the model or its calibration is judged
//! against every shape a family was ever timed at.
//!
//! The harness times CUPTI spans, so a timing is set against the estimate's `span_us` (the
//! kernel on the GPU, without the launch a timer around it would also see).
//!
//! Three questions, three numbers:
//! - does the model know how long a kernel takes? the median relative error;
//! - does it order the points of the family? Spearman's ρ over every (route, shape);
//! - does it pick the faster route where it matters? over every shape timed through two or more
//!   routes, the pairs whose measured times differ by more than [`TIE`] that the model orders
//!   the same way, and the time lost by taking the model's favourite route at each shape.

use super::measure::Measurement;
use super::{median, Family};
use crate::contract::{Shape, Specialization};
use crate::run;
use cake_cost::Calibration;
use serde::Serialize;
use std::collections::BTreeMap;

/// Measured times closer than this (relative) are a tie: the order between them is noise.
pub const TIE: f64 = 0.05;

/// One correct timing and the model's estimate of it.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub shape: Shape,
    pub route: String,
    pub measured_us: f64,
    pub predicted_us: f64,
    /// What the model says bounds it.
    pub bound: String,
}

impl Point {
    /// (predicted − measured) ÷ measured.
    pub fn error(&self) -> f64 {
        (self.predicted_us - self.measured_us) / self.measured_us
    }
}

/// Accuracy over a set of points.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    pub points: usize,
    pub spearman: Option<f64>,
    /// Median |predicted − measured| ÷ measured.
    pub median_error: Option<f64>,
    /// Geometric mean of predicted ÷ measured: above 1 the model is pessimistic.
    pub bias: Option<f64>,
}

impl Stats {
    pub fn of(points: &[&Point]) -> Stats {
        let measured: Vec<f64> = points.iter().map(|p| p.measured_us).collect();
        let predicted: Vec<f64> = points.iter().map(|p| p.predicted_us).collect();
        let errors: Vec<f64> = points.iter().map(|p| p.error().abs()).collect();
        let bias = (!points.is_empty()).then(|| {
            (points
                .iter()
                .map(|p| (p.predicted_us / p.measured_us).ln())
                .sum::<f64>()
                / points.len() as f64)
                .exp()
        });
        Stats {
            points: points.len(),
            spearman: spearman(&measured, &predicted),
            median_error: median(errors),
            bias,
        }
    }
}

/// The model choosing between routes at shapes timed through several.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Choices {
    /// Shapes with two or more correct routes.
    pub shapes: usize,
    /// Route pairs at those shapes whose measured times differ by more than [`TIE`] ...
    pub pairs: usize,
    /// ... and of those, the ones the model orders as measured.
    pub agree: usize,
    /// Shapes where the route the model predicts fastest measured within [`TIE`] of the fastest.
    pub picks_within_tie: usize,
    /// Geometric mean over the shapes of measured(model's pick) ÷ measured(fastest): the time a
    /// model-chosen table would lose against the measured best.
    pub regret: Option<f64>,
}

/// A route that has no estimate, and why.
#[derive(Clone, Debug, Serialize)]
pub struct Unpredicted {
    pub route: String,
    pub specialization: String,
    pub why: String,
    /// Its correct timings left out.
    pub points: usize,
}

#[derive(Clone, Debug, Serialize)]
pub struct Accuracy {
    pub family: String,
    pub target: String,
    /// The calibration tables' GPUs and dates, in the order the measurements used them.
    pub calibration: String,
    /// Where the measurements came from (shard, seed), in the order given.
    pub measurements: Vec<String>,
    pub overall: Stats,
    /// Per route, in the family's order.
    pub routes: Vec<(String, Stats)>,
    pub choices: Choices,
    pub unpredicted: Vec<Unpredicted>,
    pub points: Vec<Point>,
}

/// A route's schedule at one specialization: (route index, the specialized constants).
type RouteBuild = (usize, Vec<(String, i64)>);

/// The model's estimate of every correct route timing in `measurements` (routes are found by
/// name in `family`: give the candidates file for every-route measurements, the table for
/// dispatched ones). A timing of a callable the family does not have is an error: the
/// measurement belongs to another file.
///
/// `cal` is the table every measurement is predicted with; without one, each measurement takes
/// the committed table of the GPU it ran on (`environment.gpu`), or the target's default where
/// no table was measured on that card.
pub fn accuracy(
    family: &Family,
    measurements: &[(String, Measurement)],
    target: &str,
    cal: Option<&Calibration>,
) -> Result<Accuracy, String> {
    let t = cake_target::lookup(target).map_err(|e| e.to_string())?;
    if let Some(cal) = cal.filter(|c| c.meta.target != target) {
        return Err(format!(
            "the calibration table is for {}, not {target}",
            cal.meta.target
        ));
    }
    let tables: Vec<Calibration> = measurements
        .iter()
        .map(|(_, m)| match cal {
            Some(cal) => Ok(cal.clone()),
            None => Calibration::builtin_for_device(t, m.gpu()),
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut kernels: BTreeMap<RouteBuild, Result<cake_ir::Kernel, String>> = BTreeMap::new();
    let mut points = Vec::new();
    let mut unpredicted: Vec<Unpredicted> = Vec::new();
    // Per measurement shape: the indices of its points (for the route choices).
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for ((label, m), cal) in measurements.iter().zip(&tables) {
        if m.family != family.name {
            return Err(format!(
                "{label} measures family `{}`, not `{}`",
                m.family, family.name
            ));
        }
        for r in &m.shapes {
            let mut group = Vec::new();
            for (callable, o) in &r.timed {
                let (Some(ms), true, false) = (o.cupti_ms, o.correct, o.baseline_itself) else {
                    continue;
                };
                if callable == "fallback" || ms <= 0.0 {
                    continue;
                }
                let i = family
                    .routes
                    .iter()
                    .position(|x| &x.name == callable)
                    .ok_or_else(|| {
                        format!(
                            "{label} times route `{callable}`, which {} does not have (give the \
                             family file the measurement was taken with)",
                            family.path.display()
                        )
                    })?;
                let c = family.route_contract(i);
                let spec: Specialization = c.specialization(&r.shape);
                let key = (i, spec.iter().map(|(k, v)| (k.clone(), *v)).collect());
                let kernel = kernels
                    .entry(key)
                    .or_insert_with(|| run::schedule_ir(&c, &spec, target));
                let estimate = kernel.as_ref().map_err(Clone::clone).and_then(|k| {
                    // A dimension that only sets a specialized constant is not the kernel's.
                    let shape: BTreeMap<String, i64> = r
                        .shape
                        .iter()
                        .filter(|(d, _)| k.dims.iter().any(|(_, kd)| &kd.name == *d))
                        .map(|(d, v)| (d.clone(), *v))
                        .collect();
                    cake_cost::estimate(k, t, &shape, cal).map_err(|e| e.to_string())
                });
                match estimate {
                    Ok(e) => {
                        group.push(points.len());
                        points.push(Point {
                            shape: r.shape.clone(),
                            route: callable.clone(),
                            measured_us: ms * 1e3,
                            predicted_us: e.span_us,
                            bound: e.bound.as_str().to_string(),
                        });
                    }
                    Err(why) => {
                        let specialization = run::specialization_text(&spec);
                        match unpredicted
                            .iter_mut()
                            .find(|u| &u.route == callable && u.specialization == specialization)
                        {
                            Some(u) => u.points += 1,
                            None => unpredicted.push(Unpredicted {
                                route: callable.clone(),
                                specialization,
                                why,
                                points: 1,
                            }),
                        }
                    }
                }
            }
            groups.push(group);
        }
    }
    let all: Vec<&Point> = points.iter().collect();
    let routes = family
        .routes
        .iter()
        .filter_map(|r| {
            let of: Vec<&Point> = points.iter().filter(|p| p.route == r.name).collect();
            (!of.is_empty()).then(|| (r.name.clone(), Stats::of(&of)))
        })
        .collect();
    Ok(Accuracy {
        family: family.name.clone(),
        target: target.to_string(),
        calibration: {
            let mut used: Vec<String> = Vec::new();
            for c in &tables {
                let table = format!("{} {}", c.meta.gpu, c.meta.date);
                if !used.contains(&table) {
                    used.push(table);
                }
            }
            used.join(" and ")
        },
        measurements: measurements
            .iter()
            .map(|(label, m)| format!("{label} ({} seed {})", m.shard, m.seed))
            .collect(),
        overall: Stats::of(&all),
        routes,
        choices: choices(&points, &groups),
        unpredicted,
        points,
    })
}

/// One group of a breakdown: a route at a range of one dimension.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub route: String,
    /// The dimension's values in the group, `lo..=hi` (one value: `lo == hi`).
    pub lo: i64,
    pub hi: i64,
    pub stats: Stats,
}

/// The points broken down by route and by dimension `dim`: by value where the points take at
/// most eight distinct values of it, else by powers of four (1, 2–4, 5–16, ...). Where the model
/// is wrong by a pattern (one route at one width, small problems), this shows it. `None` when
/// no point has the dimension.
pub fn breakdown(a: &Accuracy, dim: &str) -> Option<Vec<Group>> {
    let values: std::collections::BTreeSet<i64> = a
        .points
        .iter()
        .filter_map(|p| p.shape.get(dim).copied())
        .collect();
    if values.is_empty() {
        return None;
    }
    let exact = values.len() <= 8;
    let bucket = |v: i64| -> (i64, i64) {
        if exact {
            return (v, v);
        }
        let (mut lo, mut hi) = (1i64, 1i64);
        while hi < v {
            lo = hi + 1;
            hi = hi.saturating_mul(4);
        }
        (lo, hi)
    };
    let mut out = Vec::new();
    for (route, _) in &a.routes {
        let mut ranges: Vec<(i64, i64)> = a
            .points
            .iter()
            .filter(|p| &p.route == route)
            .filter_map(|p| p.shape.get(dim).map(|&v| bucket(v)))
            .collect();
        ranges.sort_unstable();
        ranges.dedup();
        for (lo, hi) in ranges {
            let of: Vec<&Point> = a
                .points
                .iter()
                .filter(|p| &p.route == route)
                .filter(|p| p.shape.get(dim).is_some_and(|&v| bucket(v) == (lo, hi)))
                .collect();
            out.push(Group {
                route: route.clone(),
                lo,
                hi,
                stats: Stats::of(&of),
            });
        }
    }
    Some(out)
}

/// The breakdown as text, one line per group.
pub fn render_breakdown(dim: &str, groups: &[Group]) -> String {
    use std::fmt::Write as _;
    let mut o = format!("  by route and {dim}:\n");
    for g in groups {
        let range = if g.lo == g.hi {
            format!("{dim}={}", g.lo)
        } else {
            format!("{dim}={}..{}", g.lo, g.hi)
        };
        let _ = writeln!(
            o,
            "    {} at {range}: {} points · median error {} · predicted/measured {}",
            g.route,
            g.stats.points,
            g.stats
                .median_error
                .map_or("-".into(), |e| format!("{:.1} %", e * 100.0)),
            g.stats.bias.map_or("-".into(), |b| format!("{b:.3}")),
        );
    }
    o
}

fn choices(points: &[Point], groups: &[Vec<usize>]) -> Choices {
    let mut c = Choices::default();
    let mut log_regret = 0.0;
    for g in groups.iter().filter(|g| g.len() >= 2) {
        c.shapes += 1;
        for (a, &i) in g.iter().enumerate() {
            for &j in &g[a + 1..] {
                let (p, q) = (&points[i], &points[j]);
                let gap = (p.measured_us - q.measured_us) / p.measured_us.min(q.measured_us);
                if gap.abs() <= TIE {
                    continue;
                }
                c.pairs += 1;
                if (p.measured_us < q.measured_us) == (p.predicted_us < q.predicted_us) {
                    c.agree += 1;
                }
            }
        }
        let best = g
            .iter()
            .map(|&i| points[i].measured_us)
            .fold(f64::INFINITY, f64::min);
        let pick = g
            .iter()
            .min_by(|&&i, &&j| points[i].predicted_us.total_cmp(&points[j].predicted_us))
            .map(|&i| points[i].measured_us)
            .unwrap_or(best);
        if pick <= best * (1.0 + TIE) {
            c.picks_within_tie += 1;
        }
        log_regret += (pick / best).ln();
    }
    if c.shapes > 0 {
        c.regret = Some((log_regret / c.shapes as f64).exp());
    }
    c
}

/// Spearman's rank correlation (ties get their mean rank); `None` below three points or when
/// either side is constant.
pub fn spearman(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() != b.len() || a.len() < 3 {
        return None;
    }
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let (mut sab, mut saa, mut sbb) = (0.0, 0.0, 0.0);
    for (x, y) in ra.iter().zip(&rb) {
        sab += (x - ma) * (y - mb);
        saa += (x - ma) * (x - ma);
        sbb += (y - mb) * (y - mb);
    }
    (saa > 0.0 && sbb > 0.0).then(|| sab / (saa * sbb).sqrt())
}

fn ranks(xs: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..xs.len()).collect();
    order.sort_by(|&i, &j| xs[i].total_cmp(&xs[j]));
    let mut r = vec![0.0; xs.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && xs[order[j + 1]] == xs[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            r[k] = mean;
        }
        i = j + 1;
    }
    r
}

/// The human report: the family's numbers, then per route, then the worst points.
pub fn render(a: &Accuracy, worst: usize) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let stats = |s: &Stats| {
        format!(
            "{} points · ρ {} · median error {} · predicted/measured {}",
            s.points,
            s.spearman.map_or("-".into(), |r| format!("{r:.3}")),
            s.median_error
                .map_or("-".into(), |e| format!("{:.1} %", e * 100.0)),
            s.bias.map_or("-".into(), |b| format!("{b:.3}")),
        )
    };
    let _ = writeln!(
        o,
        "cost model on family `{}` ({}, calibration {})",
        a.family, a.target, a.calibration
    );
    for m in &a.measurements {
        let _ = writeln!(o, "  measured: {m}");
    }
    let _ = writeln!(o, "  all routes: {}", stats(&a.overall));
    for (name, s) in &a.routes {
        let _ = writeln!(o, "    {name}: {}", stats(s));
    }
    let c = &a.choices;
    if c.shapes > 0 {
        let _ = writeln!(
            o,
            "  choosing routes: {} shapes timed through two or more; {} of {} route pairs apart by more than {:.0} % ordered as measured; the predicted fastest within {:.0} % of the fastest at {} of {} shapes (time lost {})",
            c.shapes,
            c.agree,
            c.pairs,
            TIE * 100.0,
            TIE * 100.0,
            c.picks_within_tie,
            c.shapes,
            c.regret.map_or("-".into(), |r| format!("{:.1} %", (r - 1.0) * 100.0)),
        );
    }
    for u in &a.unpredicted {
        let _ = writeln!(
            o,
            "  no estimate for `{}`{} ({} point(s) left out): {}",
            u.route,
            if u.specialization.is_empty() {
                String::new()
            } else {
                format!(" at {}", u.specialization)
            },
            u.points,
            u.why
        );
    }
    let mut by_error: Vec<&Point> = a.points.iter().collect();
    by_error.sort_by(|p, q| q.error().abs().total_cmp(&p.error().abs()));
    if worst > 0 && !by_error.is_empty() {
        let _ = writeln!(o, "  worst predictions:");
        for p in by_error.iter().take(worst) {
            let _ = writeln!(
                o,
                "    {} at {}: predicted {:.1} µs, measured {:.1} µs ({:+.0} %), bound by {}",
                p.route,
                crate::contract::shape_text(&p.shape),
                p.predicted_us,
                p.measured_us,
                p.error() * 100.0,
                p.bound
            );
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(route: &str, measured: f64, predicted: f64) -> Point {
        Point {
            shape: Shape::new(),
            route: route.into(),
            measured_us: measured,
            predicted_us: predicted,
            bound: "memory".into(),
        }
    }

    #[test]
    fn spearman_is_one_for_the_same_order_and_ties_share_ranks() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), Some(1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[5.0, 5.0, 5.0]), None);
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn choices_count_only_pairs_apart_by_more_than_a_tie() {
        // Shape 1: a is 20 % faster, the model says so; b and c are 2 % apart (a tie).
        // Shape 2: the model prefers the route that measured 50 % slower.
        let points = vec![
            point("a", 100.0, 50.0),
            point("b", 120.0, 60.0),
            point("c", 122.0, 55.0),
            point("a", 100.0, 90.0),
            point("b", 150.0, 80.0),
        ];
        let c = choices(&points, &[vec![0, 1, 2], vec![3, 4], vec![]]);
        assert_eq!((c.shapes, c.pairs, c.agree), (2, 3, 2));
        assert_eq!(c.picks_within_tie, 1);
        let regret = c.regret.unwrap();
        assert!((regret - 1.5f64.sqrt()).abs() < 1e-12, "{regret}");
    }

    #[test]
    fn breakdowns_group_by_value_or_by_powers_of_four() {
        let at = |route: &str, d: i64, k: i64, measured: f64, predicted: f64| Point {
            shape: [("D".to_string(), d), ("K".to_string(), k)]
                .into_iter()
                .collect(),
            ..point(route, measured, predicted)
        };
        let points = vec![
            at("a", 64, 3, 100.0, 70.0),
            at("a", 64, 4, 100.0, 70.0),
            at("a", 128, 17, 100.0, 100.0),
            at("b", 64, 1000, 100.0, 90.0),
        ];
        let acc = Accuracy {
            family: "f".into(),
            target: "sm_90a".into(),
            calibration: String::new(),
            measurements: vec![],
            overall: Stats::default(),
            routes: vec![
                ("a".into(), Stats::default()),
                ("b".into(), Stats::default()),
            ],
            choices: Choices::default(),
            unpredicted: vec![],
            points,
        };
        let by_d = breakdown(&acc, "D").unwrap();
        let d: Vec<(&str, i64, i64, usize)> = by_d
            .iter()
            .map(|g| (g.route.as_str(), g.lo, g.hi, g.stats.points))
            .collect();
        assert_eq!(
            d,
            vec![("a", 64, 64, 2), ("a", 128, 128, 1), ("b", 64, 64, 1)]
        );
        assert!((by_d[0].stats.bias.unwrap() - 0.7).abs() < 1e-12);
        // Four distinct K: still by value; more than eight go by powers of four.
        assert_eq!(breakdown(&acc, "K").unwrap().len(), 4);
        let mut many = acc.clone();
        many.points = (1..=9)
            .map(|k| at("a", 64, k * 100, 100.0, 100.0))
            .collect();
        let by_k = breakdown(&many, "K").unwrap();
        let ranges: Vec<(i64, i64)> = by_k.iter().map(|g| (g.lo, g.hi)).collect();
        assert_eq!(ranges, vec![(65, 256), (257, 1024)]);
        assert!(breakdown(&acc, "Q").is_none());
        assert!(render_breakdown("D", &by_d).contains("a at D=64: 2 points · median error 30.0 %"));
    }

    #[test]
    fn stats_report_the_median_error_and_the_bias() {
        let points = [
            point("a", 100.0, 110.0),
            point("a", 200.0, 100.0),
            point("a", 50.0, 50.0),
        ];
        let s = Stats::of(&points.iter().collect::<Vec<_>>());
        assert_eq!(s.points, 3);
        assert!((s.median_error.unwrap() - 0.1).abs() < 1e-12);
        let bias = s.bias.unwrap();
        assert!((bias - (1.1f64 * 0.5).powf(1.0 / 3.0)).abs() < 1e-12);
    }
}
