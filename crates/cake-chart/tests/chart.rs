//! The chart as a reader (or a paper) gets it: well-formed SVG, labelled axes and baseline, one
//! marker per point, a title inside the picture, deterministic bytes.

use cake_chart::{palette, scatter_with_best, Best, Chart, Group, Marker, Row, Shape};

fn chart() -> Chart {
    Chart {
        title: "gemm-1764000000 · sm_90a · measured on the GPU".into(),
        x_label: "GPU time spent (s)".into(),
        y_label: "measured speedup over cublas (×)".into(),
        x_integer: false,
        reference: Some((1.0, "1× = cublas".into())),
        groups: vec![Group {
            label: "correct, measured".into(),
            marker: Marker {
                shape: Shape::Dot,
                color: palette::BLUE,
            },
            points: vec![(0.5, 0.8), (1.0, 1.1), (1.5, 0.9), (2.0, 1.3)],
        }],
        best: Some(Best {
            label: "best measured so far".into(),
            end_label: "best 1.3× (measured)".into(),
            points: vec![(0.5, 0.8), (1.0, 1.1), (1.5, 1.1), (2.0, 1.3)],
        }),
        strip_label: "no speedup".into(),
        strip: vec![
            Row {
                label: "failed verification".into(),
                marker: Marker {
                    shape: Shape::Triangle,
                    color: palette::ORANGE,
                },
                xs: vec![0.5, 1.0, 2.0],
            },
            Row {
                label: "failed correctness".into(),
                marker: Marker {
                    shape: Shape::Cross,
                    color: palette::VERMILION,
                },
                xs: vec![1.5],
            },
            Row {
                label: "empty rows are left out".into(),
                marker: Marker {
                    shape: Shape::Diamond,
                    color: palette::PURPLE,
                },
                xs: vec![],
            },
        ],
    }
}

fn texts(doc: &roxmltree::Document) -> Vec<String> {
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

/// Markers of one colour: circles and polygons filled (or, for rings, stroked) with it.
fn markers(doc: &roxmltree::Document, c: (u8, u8, u8)) -> usize {
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
fn the_svg_is_xml_with_labels_and_one_marker_per_point() {
    let svg = scatter_with_best(&chart()).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("the chart is well-formed XML");
    assert!(doc.root_element().has_tag_name("svg"));
    let t = texts(&doc);
    for want in [
        "gemm-1764000000 · sm_90a · measured on the GPU",
        "GPU time spent (s)",
        "measured speedup over cublas (×)",
        "1× = cublas",
        "best 1.3× (measured)",
        "correct, measured (4)",
        "failed verification (3)",
        "failed correctness (1)",
    ] {
        assert!(t.iter().any(|x| x == want), "no text {want:?} in {t:?}");
    }
    // An empty row gets neither a strip row nor a legend entry.
    assert!(!t.iter().any(|x| x.contains("empty rows")), "{t:?}");
    // Every point once in the plot, once more in the legend.
    assert_eq!(markers(&doc, palette::BLUE), 4 + 1);
    assert_eq!(markers(&doc, palette::ORANGE), 3 + 1);
    assert_eq!(markers(&doc, palette::VERMILION), 1 + 1);
    assert_eq!(markers(&doc, palette::PURPLE), 0);
    // The same chart, the same bytes.
    assert_eq!(svg, scatter_with_best(&chart()).unwrap());
}

#[test]
fn the_title_is_inside_the_picture() {
    let svg = scatter_with_best(&chart()).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    let title = doc
        .descendants()
        .find(|n| n.text().map(str::trim) == Some("gemm-1764000000 · sm_90a · measured on the GPU"))
        .unwrap();
    let num = |a: &str| -> f64 { title.attribute(a).unwrap().parse().unwrap() };
    // Hanging from its y (dy 0.76em), centred on x: the whole line fits in the width at the
    // font's size (a generous 0.6 em per character).
    assert!(num("y") >= 0.0, "{svg}");
    let chars = title.text().unwrap().trim().chars().count() as f64;
    let half = chars * 0.6 * num("font-size") / 2.0;
    assert_eq!(title.attribute("text-anchor"), Some("middle"));
    assert!(num("x") - half > 0.0 && num("x") + half < width, "{svg}");
}

#[test]
fn index_axes_have_integer_ticks_only() {
    let mut c = chart();
    c.x_integer = true;
    c.x_label = "candidate (index)".into();
    for g in &mut c.groups {
        for (i, p) in g.points.iter_mut().enumerate() {
            p.0 = (i + 1) as f64;
        }
    }
    c.best = None;
    c.strip.clear();
    let svg = scatter_with_best(&c).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    // The x tick labels are the texts anchored "middle" below the plot; none is fractional.
    let ticks: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("middle"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    assert!(ticks.len() >= 3, "{ticks:?}");
    assert!(ticks.iter().all(|t| !t.contains('.')), "{ticks:?}");
}

#[test]
fn ticks_are_short() {
    use cake_chart::tick;
    assert_eq!(tick(0.0, false), "0");
    assert_eq!(tick(1.5, false), "1.5");
    assert_eq!(tick(2.0, false), "2");
    assert_eq!(tick(0.25, false), "0.25");
    assert_eq!(tick(12.5, false), "12.5");
    assert_eq!(tick(250.0, false), "250");
    assert_eq!(tick(-0.0001, false), "0");
    assert_eq!(tick(3.0, true), "3");
    assert_eq!(tick(2.5, true), "");
}
