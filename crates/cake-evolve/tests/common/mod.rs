//! Shared by the cake-evolve tests: a toy estimator (a stand-in for the cost model), a scripted
//! evaluator (a stand-in for the GPU) and paths.
#![allow(dead_code)]

use cake_evolve::evaluate::{from_evidence, Evaluation, Evaluator};
use cake_evolve::Estimator;
use cake_ir::Kernel;
use cake_target::Target;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

pub fn gemm_contract() -> PathBuf {
    repo().join("kernels/gemm/gemm.contract.toml")
}

/// A toy cost model: the MMA work at a rate that grows with the N extent of the accumulator
/// (up to 256) and with pipeline depth (loads overlap MMAs), plus a fixed launch cost. Its
/// bottleneck class is `latency` for a single stage, else `compute`.
pub struct Toy;

fn depth(k: &Kernel) -> u32 {
    k.pipelines.iter().map(|(_, p)| p.stages).max().unwrap_or(1)
}

impl Estimator for Toy {
    fn predict_us(&self, k: &Kernel, _t: &Target, shape: &BTreeMap<String, i64>) -> Option<f64> {
        let n_tile = k
            .fragments
            .iter()
            .find_map(|(_, f)| f.shape.last().map(|&n| n as f64))?;
        let flops = 2.0 * (shape.get("M")? * shape.get("N")? * shape.get("K")?) as f64;
        let s = depth(k) as f64;
        let rate = 800e6 * (n_tile.min(256.0) / 256.0) * (s / (s + 1.0)); // flop per us
        Some(flops / rate + 5.0)
    }

    fn bottleneck(&self, k: &Kernel, _t: &Target, _s: &BTreeMap<String, i64>) -> Option<String> {
        Some(if depth(k) == 1 { "latency" } else { "compute" }.into())
    }
}

/// A GPU stand-in: "measures" the toy prediction × a fixed factor and answers with an evidence
/// record shaped like cake-eval's; optionally sleeps to make a run slow enough to kill.
pub struct Scripted {
    pub sleep_ms: u64,
    pub calls: usize,
}

/// Like [`Scripted`], but a candidate whose source contains `marker` times below the physical
/// floor (the way cake-eval reports it: `suspicious` and a failed verdict), 100x "faster".
pub struct TooFast {
    pub marker: &'static str,
}

impl Evaluator for TooFast {
    fn evaluate(&mut self, path: &Path, progress: &mut dyn FnMut(&str)) -> Evaluation {
        let mut e = Scripted {
            sleep_ms: 0,
            calls: 0,
        }
        .evaluate(path, progress);
        if std::fs::read_to_string(path).unwrap().contains(self.marker) {
            let mut ev = e.evidence.clone();
            let shape = &mut ev["timing"]["shapes"][0];
            let ms = shape["candidate"]["result"]["events_ms"]["median"]
                .as_f64()
                .unwrap()
                / 100.0;
            shape["candidate"]["result"]["events_ms"]["median"] = json!(ms);
            shape["suspicious"] =
                json!([format!("events median {ms} ms is below the physical floor")]);
            shape["speedup"] = json!({});
            ev["verdict"] = json!("failed: suspicious timing: below the physical floor");
            e = from_evidence(ev, e.gpu_s);
        }
        e
    }
}

impl Evaluator for Scripted {
    fn evaluate(&mut self, path: &Path, progress: &mut dyn FnMut(&str)) -> Evaluation {
        self.calls += 1;
        std::thread::sleep(std::time::Duration::from_millis(self.sleep_ms));
        let src = std::fs::read_to_string(path).unwrap();
        let checked = cake_driver::check("c.py", src.as_bytes(), Some("sm_90a"));
        let k = &checked.kernels[0];
        let t = cake_target::lookup("sm_90a").unwrap();
        let contract = cake_eval::Contract::load(&gemm_contract()).unwrap();
        let us: f64 = contract
            .shape_set("bench")
            .iter()
            .map(|s| {
                let shape: BTreeMap<String, i64> = s.iter().map(|(k, v)| (k.clone(), *v)).collect();
                Toy.predict_us(k, t, &shape).unwrap() * 1.3
            })
            .sum();
        let ms = us / 1e3;
        progress(&format!("scripted: {ms:.4} ms"));
        let evidence = json!({
            "schema": "cake.evidence/v0", "verdict": "passed",
            "resources": {"registers": 168},
            "correctness": {"passed": true, "checks": []},
            "timing": {"shapes": [{
                "shape": {"M": 4096, "N": 4096, "K": 4096},
                "candidate": {"result": {"events_ms": {"median": ms}}},
                "speedup": {"torch_matmul": {"events": 0.2 / ms}},
                "suspicious": []
            }]}
        });
        from_evidence(evidence, 0.5)
    }
}

/// The report chart as XML (it must parse), its texts (trimmed) and a marker counter.
pub struct Svg {
    pub texts: Vec<String>,
    /// (tag, fill, stroke) of every circle and polygon.
    shapes: Vec<(String, String, String)>,
}

impl Svg {
    pub fn parse(svg: &str) -> Svg {
        let doc = roxmltree::Document::parse(svg).expect("report.svg is well-formed XML");
        assert!(doc.root_element().has_tag_name("svg"));
        let texts = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.text().unwrap_or("").trim().to_string())
            .collect();
        let attr = |n: &roxmltree::Node, a: &str| n.attribute(a).unwrap_or("").to_ascii_uppercase();
        let shapes = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle") || n.has_tag_name("polygon"))
            .map(|n| {
                (
                    n.tag_name().name().to_string(),
                    attr(&n, "fill"),
                    attr(&n, "stroke"),
                )
            })
            .collect();
        Svg { texts, shapes }
    }

    pub fn has(&self, text: &str) -> bool {
        self.texts.iter().any(|t| t == text)
    }

    /// Markers drawn in colour `c`: filled circles and polygons, stroked rings.
    pub fn markers(&self, c: (u8, u8, u8)) -> usize {
        let hex = format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        self.shapes
            .iter()
            .filter(|(_, fill, stroke)| *fill == hex || *stroke == hex)
            .count()
    }

    /// Every circle and polygon.
    pub fn all_markers(&self) -> usize {
        self.shapes.len()
    }
}
