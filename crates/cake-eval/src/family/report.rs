//! What a family measurement says (docs/dispatch.md): G_span — the unweighted geometric mean
//! over shapes of the baseline's median CUPTI span over the family's, each shape through the
//! route dispatch gives it — with the per-route breakdown, the worst shape, the shapes below a
//! floor, the incorrect ones, and a chart of speedup per shape coloured by route.

use super::measure::{Measurement, Mode, ShapeResult};
use crate::contract::{shape_text, Shape};
use indexmap::IndexMap;
use serde::Serialize;

/// Below this a held-out shape counts against the family (issue #18: a route that loses
/// should have routed to the fallback).
pub const FLOOR: f64 = 0.95;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Report {
    pub family: String,
    pub shard: String,
    pub mode: Mode,
    pub baseline: String,
    pub shapes: usize,
    /// Shapes with a believable speedup and correct outputs.
    pub timed: usize,
    /// Unweighted geomean of the speedups of the timed shapes (dispatch mode; in every-route
    /// mode, of each shape's best route, the fallback counted as 1).
    pub g_span: Option<f64>,
    /// Shapes whose outputs were wrong: any makes the family fail.
    pub incorrect: Vec<Shape>,
    /// Shapes with no speedup (not built, failed to run, a time not believable).
    pub untimed: Vec<(Shape, String)>,
    pub worst: Option<ShapeSpeedup>,
    /// Timed shapes below [`FLOOR`].
    pub below_floor: Vec<ShapeSpeedup>,
    /// Per callable (route or fallback): its shapes and their geomean.
    pub by_route: Vec<RouteSummary>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ShapeSpeedup {
    pub shape: Shape,
    pub route: String,
    pub speedup: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RouteSummary {
    pub route: String,
    pub shapes: usize,
    pub timed: usize,
    pub geomean: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
}

fn geomean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// The baseline a shape's speedups are over, where it is not the one timed beside each route:
/// in every-route mode the shape's pooled baseline, so that its routes compare by their own
/// times (`Outcome::speedup_over`); none in dispatch mode.
fn pooled_baseline(s: &ShapeResult, mode: Mode) -> Option<f64> {
    match mode {
        Mode::Dispatch => None,
        Mode::EveryRoute => s.pooled_baseline_ms(),
    }
}

/// The speedup that counts for a shape: in dispatch mode its route's; in every-route mode the
/// best correct route's, or 1 (the fallback) when none beats it.
fn counted(s: &ShapeResult, mode: Mode) -> Option<(String, f64)> {
    match mode {
        Mode::Dispatch => {
            let o = s.dispatched()?;
            Some((s.route.clone(), o.speedup.filter(|_| o.correct)?))
        }
        Mode::EveryRoute => {
            let pooled = pooled_baseline(s, mode);
            Some(
                s.timed
                    .iter()
                    .filter(|(_, o)| o.correct)
                    .filter_map(|(r, o)| Some((r.clone(), o.speedup_over(pooled)?)))
                    .fold(("fallback".to_string(), 1.0), |best, x| {
                        if x.1 > best.1 {
                            x
                        } else {
                            best
                        }
                    }),
            )
        }
    }
}

pub fn report(m: &Measurement) -> Report {
    let mut incorrect = Vec::new();
    let mut untimed = Vec::new();
    let mut counted_all: Vec<ShapeSpeedup> = Vec::new();
    let mut per_route: IndexMap<String, (usize, Vec<f64>)> = IndexMap::new();
    for s in &m.shapes {
        let pooled = pooled_baseline(s, m.mode);
        for (r, o) in &s.timed {
            let e = per_route.entry(r.clone()).or_default();
            e.0 += 1;
            if let (true, Some(x)) = (o.correct, o.speedup_over(pooled)) {
                e.1.push(x);
            }
            if !o.correct
                && o.problem
                    .as_deref()
                    .is_some_and(|p| p.contains("wrong outputs"))
            {
                incorrect.push(s.shape.clone());
            }
        }
        match counted(s, m.mode) {
            Some((route, speedup)) => counted_all.push(ShapeSpeedup {
                shape: s.shape.clone(),
                route,
                speedup,
            }),
            None => {
                let why = s
                    .dispatched()
                    .and_then(|o| o.problem.clone())
                    .unwrap_or_else(|| "not timed".into());
                untimed.push((s.shape.clone(), why));
            }
        }
    }
    incorrect.dedup();
    let xs: Vec<f64> = counted_all.iter().map(|s| s.speedup).collect();
    let worst = counted_all
        .iter()
        .min_by(|a, b| a.speedup.total_cmp(&b.speedup))
        .cloned();
    let mut below_floor: Vec<ShapeSpeedup> = counted_all
        .iter()
        .filter(|s| s.speedup < FLOOR)
        .cloned()
        .collect();
    below_floor.sort_by(|a, b| a.speedup.total_cmp(&b.speedup));
    Report {
        family: m.family.clone(),
        shard: m.shard.clone(),
        mode: m.mode,
        baseline: m.baseline.clone(),
        shapes: m.shapes.len(),
        timed: counted_all.len(),
        g_span: geomean(&xs),
        incorrect,
        untimed,
        worst,
        below_floor,
        by_route: per_route
            .into_iter()
            .map(|(route, (shapes, xs))| RouteSummary {
                route,
                shapes,
                timed: xs.len(),
                geomean: geomean(&xs),
                min: xs.iter().copied().reduce(f64::min),
                max: xs.iter().copied().reduce(f64::max),
            })
            .collect(),
    }
}

fn x(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}x"))
}

/// The report as text: the summary, the routes, then every shape.
pub fn render(m: &Measurement, r: &Report) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let what = match m.mode {
        Mode::Dispatch => "G_span",
        Mode::EveryRoute => "best-route geomean",
    };
    // Routes that name cards dispatch by the GPU: say which one this was.
    let gpu = m.gpu().map(|g| format!(" · {g}")).unwrap_or_default();
    line(format!(
        "family {} · {} shard, seed {}, {} shapes · {} mode · baseline {}{gpu}",
        r.family,
        r.shard,
        m.seed,
        r.shapes,
        match m.mode {
            Mode::Dispatch => "dispatch",
            Mode::EveryRoute => "every-route",
        },
        r.baseline
    ));
    line(format!(
        "{what} {} over {} timed shapes; {} incorrect; {} untimed; {} below {FLOOR}x",
        x(r.g_span),
        r.timed,
        r.incorrect.len(),
        r.untimed.len(),
        r.below_floor.len()
    ));
    if m.mode == Mode::EveryRoute {
        line(
            "speedups over the median of the baseline's timings at each shape (the routes compare by their own times)"
                .into(),
        );
    }
    if let Some(w) = &r.worst {
        line(format!(
            "worst: {:.3}x at {} ({})",
            w.speedup,
            shape_text(&w.shape),
            w.route
        ));
    }
    line(String::new());
    line(format!(
        "  {:<16} {:>6} {:>6} {:>9} {:>9} {:>9}",
        "route", "shapes", "timed", "geomean", "min", "max"
    ));
    for s in &r.by_route {
        line(format!(
            "  {:<16} {:>6} {:>6} {:>9} {:>9} {:>9}",
            s.route,
            s.shapes,
            s.timed,
            x(s.geomean),
            x(s.min),
            x(s.max)
        ));
    }
    line(String::new());
    let names: Vec<&String> = r.by_route.iter().map(|s| &s.route).collect();
    let mut head = format!("  {:<28} {:<14} {:>11}", "shape", "dispatch", "base ms");
    for n in &names {
        head += &format!(" {n:>12}");
    }
    line(head);
    for s in &m.shapes {
        let pooled = pooled_baseline(s, m.mode);
        let base = match m.mode {
            Mode::Dispatch => s.timed.values().find_map(|o| o.baseline_cupti_ms),
            Mode::EveryRoute => pooled,
        }
        .map_or("-".into(), |v| format!("{v:.4}"));
        let mut row = format!("  {:<28} {:<14} {base:>11}", shape_text(&s.shape), s.route);
        for n in &names {
            row += &match s.timed.get(*n) {
                None => format!(" {:>12}", ""),
                Some(o) if !o.correct && o.cupti_ms.is_some() => format!(" {:>12}", "WRONG"),
                Some(o) => format!(" {:>12}", x(o.speedup_over(pooled))),
            };
        }
        line(row);
    }
    for (shape, why) in &r.untimed {
        line(format!("  untimed {}: {why}", shape_text(shape)));
    }
    out
}

/// Speedup per shape, the shapes ordered by size, one colour per route; shapes without a
/// speedup in the strip below.
pub fn chart(m: &Measurement, r: &Report) -> cake_chart::Chart {
    use cake_chart::{palette, Chart, Group, Marker, Row, Shape as Mark};
    let styles = [
        (Mark::Dot, palette::BLUE),
        (Mark::Triangle, palette::VERMILION),
        (Mark::Diamond, palette::GREEN),
        (Mark::Cross, palette::PURPLE),
        (Mark::Dot, palette::ORANGE),
        (Mark::Triangle, palette::SKY),
    ];
    // By size (the product of the dimensions), which every shape has, timed or not.
    let size = |s: &ShapeResult| s.shape.values().map(|v| *v as f64).product::<f64>();
    let mut order: Vec<usize> = (0..m.shapes.len()).collect();
    order.sort_by(|a, b| size(&m.shapes[*a]).total_cmp(&size(&m.shapes[*b])));
    let dims: Vec<&str> = m
        .shapes
        .first()
        .map(|s| s.shape.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let mut groups: IndexMap<String, Vec<(f64, f64)>> = IndexMap::new();
    let mut missing: Vec<f64> = Vec::new();
    for (rank, k) in order.iter().enumerate() {
        let s = &m.shapes[*k];
        match counted(s, m.mode) {
            Some((route, y)) => groups.entry(route).or_default().push((rank as f64, y)),
            None => missing.push(rank as f64),
        }
    }
    let fallback_marker = Marker {
        shape: Mark::Ring,
        color: palette::GREY,
    };
    Chart {
        title: format!(
            "{}: {} over the {} shard ({} shapes){}",
            r.family,
            match m.mode {
                Mode::Dispatch => "speedup per shape as dispatched",
                Mode::EveryRoute => "best route per shape",
            },
            r.shard,
            r.shapes,
            r.g_span
                .map(|g| format!(", geomean {g:.3}x"))
                .unwrap_or_default()
        ),
        x_label: format!("shapes, ordered by size ({})", dims.join("·")),
        y_label: format!("speedup over {} (CUPTI medians)", r.baseline),
        x_integer: true,
        reference: Some((1.0, format!("1x = {}", r.baseline))),
        groups: groups
            .into_iter()
            .enumerate()
            .map(|(i, (route, points))| {
                let marker = if route == "fallback" {
                    fallback_marker
                } else {
                    let (shape, color) = styles[i % styles.len()];
                    Marker { shape, color }
                };
                Group {
                    label: route,
                    marker,
                    points,
                }
            })
            .collect(),
        best: None,
        strip_label: "no time".into(),
        strip: if missing.is_empty() {
            Vec::new()
        } else {
            vec![Row {
                label: "not timed or wrong".into(),
                marker: Marker {
                    shape: Mark::Cross,
                    color: palette::BLACK,
                },
                xs: missing,
            }]
        },
    }
}
