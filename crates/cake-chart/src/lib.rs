//! Report charts as SVG (plotters, SVG backend): [`scatter_with_best`] draws every point of a
//! search as a marker by outcome, a best-so-far step line, a labelled reference line (the 1×
//! baseline) and, below the plot, a strip for the points that have no y value (failed, not
//! run), sharing the x axis. The legend sits in its own column, so it never hides a point.
//!
//! Used by `cake report` (cake-evolve); kept free of Cake's types so that any report with an x,
//! a y and an outcome per point can draw the same chart.

use plotters::coord::Shift;
use plotters::element::{DashedPathElement, Drawable, PointCollection};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters_backend::{BackendCoord, DrawingErrorKind};

/// Colours that stay distinct for colour-blind readers (Okabe and Ito).
pub mod palette {
    pub const BLUE: (u8, u8, u8) = (0, 114, 178);
    pub const GREEN: (u8, u8, u8) = (0, 158, 115);
    pub const VERMILION: (u8, u8, u8) = (213, 94, 0);
    pub const ORANGE: (u8, u8, u8) = (230, 159, 0);
    pub const PURPLE: (u8, u8, u8) = (204, 121, 167);
    pub const SKY: (u8, u8, u8) = (86, 180, 233);
    pub const GREY: (u8, u8, u8) = (120, 120, 120);
    pub const BLACK: (u8, u8, u8) = (0, 0, 0);
}

/// A marker's shape; each draws as one SVG element (`circle` or `polygon`), so a reader (or a
/// test) can count them. Shapes differ as well as colours, for grey-scale print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Filled circle.
    Dot,
    /// Hollow circle.
    Ring,
    /// Filled ×.
    Cross,
    /// Filled triangle, point up.
    Triangle,
    /// Filled diamond.
    Diamond,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    pub shape: Shape,
    pub color: (u8, u8, u8),
}

/// Points with a y value, one legend entry.
#[derive(Clone, Debug)]
pub struct Group {
    pub label: String,
    pub marker: Marker,
    pub points: Vec<(f64, f64)>,
}

/// Points with no y value (one row of the strip under the plot), one legend entry.
#[derive(Clone, Debug)]
pub struct Row {
    pub label: String,
    pub marker: Marker,
    pub xs: Vec<f64>,
}

/// The best-so-far line: drawn as steps through `points` (x ascending); `end_label` is written
/// at its last point.
#[derive(Clone, Debug)]
pub struct Best {
    pub label: String,
    pub end_label: String,
    pub points: Vec<(f64, f64)>,
}

#[derive(Clone, Debug)]
pub struct Chart {
    pub title: String,
    /// Axis titles, with their units.
    pub x_label: String,
    pub y_label: String,
    /// The x values are indices: integer ticks only.
    pub x_integer: bool,
    /// A horizontal reference line (y, label), e.g. (1.0, "1× = cuBLAS").
    pub reference: Option<(f64, String)>,
    pub groups: Vec<Group>,
    pub best: Option<Best>,
    /// The strip's axis title (e.g. "no time") and its rows.
    pub strip_label: String,
    pub strip: Vec<Row>,
}

const W: u32 = 960;
const H: u32 = 540;
const LEGEND_W: u32 = 250;
const Y_AREA: u32 = 78;
const X_AREA: u32 = 52;
const FONT: &str = "sans-serif";

/// Render `chart` as a standalone SVG document (960 × 540). Deterministic: same chart, same bytes.
pub fn scatter_with_best(chart: &Chart) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (W, H)).into_drawing_area();
        draw(&root, chart).map_err(|e| format!("chart: {e}"))?;
        root.present().map_err(|e| format!("chart: {e}"))?;
    }
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Res<'a> = Result<(), DrawingAreaErrorKind<<SVGBackend<'a> as DrawingBackend>::ErrorType>>;

fn rgb(c: (u8, u8, u8)) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

fn draw<'a>(root: &Area<'a>, c: &Chart) -> Res<'a> {
    root.fill(&WHITE)?;
    // `titled` reserves the title's height, so a long title is never cut at the top.
    let body = root.titled(&c.title, (FONT, 20).into_font().color(&BLACK))?;
    let (plots, legend) = body.split_horizontally(W - LEGEND_W);

    let xs = c
        .groups
        .iter()
        .flat_map(|g| g.points.iter().map(|p| p.0))
        .chain(c.strip.iter().flat_map(|r| r.xs.iter().copied()))
        .chain(c.best.iter().flat_map(|b| b.points.iter().map(|p| p.0)));
    let xmax = xs.fold(0.0f64, f64::max);
    let x_range = if c.x_integer {
        0.0..(xmax.ceil() + 1.0).max(2.0)
    } else {
        0.0..(xmax * 1.04).max(1e-9)
    };
    let ymax = c
        .groups
        .iter()
        .flat_map(|g| g.points.iter().map(|p| p.1))
        .chain(c.best.iter().flat_map(|b| b.points.iter().map(|p| p.1)))
        .chain(c.reference.iter().map(|r| r.0))
        .fold(0.0f64, f64::max);
    // Head room above the highest point for the best line's label.
    let y_range = 0.0..(ymax * 1.18).max(1e-9);
    let x_labels = if c.x_integer {
        (x_range.end as usize).clamp(2, 11)
    } else {
        9
    };
    let x_fmt = |v: &f64| tick(*v, c.x_integer);
    let y_fmt = |v: &f64| tick(*v, false);

    let strip_rows = c.strip.iter().filter(|r| !r.xs.is_empty()).count();
    let (main, strip) = if strip_rows > 0 {
        // Tall enough for its rotated axis title.
        let strip_h = X_AREA + 6 + (22 * strip_rows as u32).max(96);
        let h = plots.dim_in_pixel().1;
        let (m, s) = plots.split_vertically(h.saturating_sub(strip_h));
        (m, Some(s))
    } else {
        (plots, None)
    };

    let mut chart = ChartBuilder::on(&main)
        .margin_top(8)
        .margin_right(16)
        .margin_left(8)
        .y_label_area_size(Y_AREA)
        .x_label_area_size(if strip.is_some() { 0 } else { X_AREA })
        .build_cartesian_2d(x_range.clone(), y_range.clone())?;
    {
        let mut mesh = chart.configure_mesh();
        mesh.max_light_lines(0)
            .bold_line_style(RGBColor(225, 225, 225))
            .axis_style(BLACK)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 15))
            .x_labels(x_labels)
            .y_labels(7)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .y_desc(c.y_label.as_str());
        if strip.is_none() {
            mesh.x_desc(c.x_label.as_str());
        }
        mesh.draw()?;
    }

    if let Some((y, _)) = &c.reference {
        let y = *y;
        chart.draw_series(std::iter::once(DashedPathElement::new(
            vec![(x_range.start, y), (x_range.end, y)],
            6,
            4,
            rgb(palette::GREY).stroke_width(1),
        )))?;
    }
    if let Some(b) = &c.best {
        chart.draw_series(std::iter::once(PathElement::new(
            steps(&b.points),
            rgb(palette::BLACK).stroke_width(2),
        )))?;
    }
    for g in &c.groups {
        chart.draw_series(g.points.iter().map(|&p| Point {
            at: p,
            marker: g.marker,
        }))?;
    }
    // The two line labels go where nothing is drawn: each tries its spots in order (the best
    // line's value above its end, then below; the reference's under its line at the right,
    // then above it, then the same at the left) and takes the first that covers no marker, no
    // line and no label placed before it, else its first spot.
    let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
    let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
    let mut taken: Vec<[i32; 4]> = Vec::new();
    for g in &c.groups {
        for &(x, y) in &g.points {
            let (x, y) = px(x, y);
            taken.push([x - 7, y - 7, x + 7, y + 7]);
        }
    }
    if let Some(b) = &c.best {
        for w in steps(&b.points).windows(2) {
            let (a, b) = (px(w[0].0, w[0].1), px(w[1].0, w[1].1));
            taken.push([
                a.0.min(b.0),
                a.1.min(b.1) - 2,
                a.0.max(b.0),
                a.1.max(b.1) + 2,
            ]);
        }
    }
    let mut texts = Vec::new();
    let mut place = |text: &str, spots: &[(i32, i32, bool)], color: (u8, u8, u8)| {
        // (x, y, right-aligned at x): the box is 16 px tall from y, ~7 px a character wide.
        let w = 7 * text.chars().count() as i32;
        let rect = |&(x, y, right): &(i32, i32, bool)| {
            let x0 = if right { x - w } else { x };
            [x0, y, x0 + w, y + 16]
        };
        let free = |r: &[i32; 4]| {
            plot_x.contains(&r[0])
                && plot_x.contains(&r[2])
                && plot_y.contains(&r[1])
                && plot_y.contains(&r[3])
                && !taken
                    .iter()
                    .any(|t| r[0] < t[2] && t[0] < r[2] && r[1] < t[3] && t[1] < r[3])
        };
        let r = spots
            .iter()
            .map(rect)
            .find(free)
            .unwrap_or_else(|| rect(&spots[0]));
        taken.push(r);
        let style = (FONT, 13)
            .into_font()
            .color(&rgb(color))
            .pos(Pos::new(HPos::Left, VPos::Top));
        texts.push(Text::new(text.to_string(), (r[0], r[1]), style));
    };
    if let Some((b, end)) = c.best.as_ref().and_then(|b| Some((b, *b.points.last()?))) {
        let (x, y) = px(end.0, end.1);
        place(
            &b.end_label,
            &[(x - 4, y - 20, true), (x - 4, y + 4, true)],
            palette::BLACK,
        );
    }
    if let Some((y, text)) = &c.reference {
        let (right, y) = px(x_range.end, *y);
        let left = plot_x.start + 6;
        place(
            text,
            &[
                (right - 6, y + 3, true),
                (right - 6, y - 19, true),
                (left, y + 3, false),
                (left, y - 19, false),
            ],
            palette::GREY,
        );
    }
    // Backend coordinates: drawn on the root area.
    for t in texts {
        root.draw(&t)?;
    }

    if let Some(strip) = &strip {
        let rows: Vec<&Row> = c.strip.iter().filter(|r| !r.xs.is_empty()).collect();
        let n = rows.len() as f64;
        let mut s = ChartBuilder::on(strip)
            .margin_top(6)
            .margin_right(16)
            .margin_left(8)
            .y_label_area_size(Y_AREA)
            .x_label_area_size(X_AREA)
            .build_cartesian_2d(x_range.clone(), -0.6..(n - 0.4))?;
        s.configure_mesh()
            .max_light_lines(0)
            .disable_y_mesh()
            .bold_line_style(RGBColor(225, 225, 225))
            .axis_style(BLACK)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 15))
            .x_labels(x_labels)
            .y_labels(0)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&|_| String::new())
            .x_desc(c.x_label.as_str())
            .y_desc(c.strip_label.as_str())
            .axis_desc_style((FONT, 13))
            .draw()?;
        for (i, r) in rows.iter().enumerate() {
            // Top row first, in the legend's order.
            let y = n - 1.0 - i as f64;
            s.draw_series(r.xs.iter().map(|&x| Point {
                at: (x, y),
                marker: r.marker,
            }))?;
        }
    }

    draw_legend(&legend, c)
}

/// The legend column: one entry per group, line and strip row, with its count of points.
fn draw_legend<'a>(area: &Area<'a>, c: &Chart) -> Res<'a> {
    let font = (FONT, 13).into_font().color(&BLACK);
    let head = (FONT, 13).into_font().color(&rgb(palette::GREY));
    let (x0, mut y) = (14, 14);
    let text_x = x0 + 30;
    fn at<'f>(t: String, x: i32, y: i32, f: &TextStyle<'f>) -> Text<'f, (i32, i32), String> {
        Text::new(t, (x, y), f.clone().pos(Pos::new(HPos::Left, VPos::Center)))
    }
    for g in &c.groups {
        area.draw(&Point {
            at: (x0 + 12, y),
            marker: g.marker,
        })?;
        area.draw(&at(
            format!("{} ({})", g.label, g.points.len()),
            text_x,
            y,
            &font,
        ))?;
        y += 24;
    }
    if let Some(b) = &c.best {
        area.draw(&PathElement::new(
            vec![(x0, y), (x0 + 24, y)],
            rgb(palette::BLACK).stroke_width(2),
        ))?;
        area.draw(&at(b.label.clone(), text_x, y, &font))?;
        y += 24;
    }
    if let Some((_, label)) = &c.reference {
        area.draw(&DashedPathElement::new(
            vec![(x0, y), (x0 + 24, y)],
            6,
            4,
            rgb(palette::GREY).stroke_width(1),
        ))?;
        area.draw(&at(label.clone(), text_x, y, &font))?;
        y += 24;
    }
    let rows: Vec<&Row> = c.strip.iter().filter(|r| !r.xs.is_empty()).collect();
    if !rows.is_empty() {
        y += 8;
        area.draw(&at(
            format!("{} (strip below):", c.strip_label),
            x0,
            y,
            &head,
        ))?;
        y += 24;
        for r in rows {
            area.draw(&Point {
                at: (x0 + 12, y),
                marker: r.marker,
            })?;
            area.draw(&at(
                format!("{} ({})", r.label, r.xs.len()),
                text_x,
                y,
                &font,
            ))?;
            y += 24;
        }
    }
    Ok(())
}

/// Best-so-far as steps: flat until the next improvement, then up (or down).
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for &(x, y) in points {
        if let Some(&(_, prev)) = out.last() {
            out.push((x, prev));
        }
        out.push((x, y));
    }
    out
}

/// A tick's text: short, no trailing zeros, never "-0".
pub fn tick(v: f64, integer: bool) -> String {
    if integer {
        return if v.fract().abs() < 1e-9 {
            format!("{}", v.round() as i64)
        } else {
            String::new()
        };
    }
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

/// One marker at a point (data coordinates in a chart, pixels in the legend): one SVG element.
struct Point<C> {
    at: C,
    marker: Marker,
}

impl<'a, C: 'a> PointCollection<'a, C> for &'a Point<C> {
    type Point = &'a C;
    type IntoIter = std::iter::Once<&'a C>;
    fn point_iter(self) -> Self::IntoIter {
        std::iter::once(&self.at)
    }
}

impl<C, DB: DrawingBackend> Drawable<DB> for Point<C> {
    fn draw<I: Iterator<Item = BackendCoord>>(
        &self,
        mut points: I,
        backend: &mut DB,
        _: (u32, u32),
    ) -> Result<(), DrawingErrorKind<DB::ErrorType>> {
        let Some((x, y)) = points.next() else {
            return Ok(());
        };
        let color = rgb(self.marker.color);
        let poly = |pts: &[(f64, f64)]| -> Vec<BackendCoord> {
            pts.iter()
                .map(|(dx, dy)| (x + dx.round() as i32, y + dy.round() as i32))
                .collect()
        };
        match self.marker.shape {
            Shape::Dot => backend.draw_circle((x, y), 5, &color.filled(), true),
            Shape::Ring => backend.draw_circle((x, y), 5, &color.stroke_width(2), false),
            Shape::Triangle => backend.fill_polygon(
                poly(&[(0.0, -6.0), (6.0, 5.0), (-6.0, 5.0)]),
                &color.filled(),
            ),
            Shape::Diamond => backend.fill_polygon(
                poly(&[(0.0, -6.0), (6.0, 0.0), (0.0, 6.0), (-6.0, 0.0)]),
                &color.filled(),
            ),
            // An × of two bars 2.5 px wide, as one polygon.
            Shape::Cross => backend.fill_polygon(
                poly(&[
                    (-5.0, -7.0),
                    (0.0, -2.0),
                    (5.0, -7.0),
                    (7.0, -5.0),
                    (2.0, 0.0),
                    (7.0, 5.0),
                    (5.0, 7.0),
                    (0.0, 2.0),
                    (-5.0, 7.0),
                    (-7.0, 5.0),
                    (-2.0, 0.0),
                    (-7.0, -5.0),
                ]),
                &color.filled(),
            ),
        }
    }
}
