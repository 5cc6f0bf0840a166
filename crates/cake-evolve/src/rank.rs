//! Stage 3's order — which clean candidates go to the GPU — and the confidence each prediction
//! carries. The cost model's prediction is scaled by what this run has measured for candidates
//! of the same bottleneck (its systematic error there), and a candidate that repeats the knob
//! moves a sibling failed correctness with ranks after every other: the broken candidates of a
//! tuning run were predicted fastest and took most of its GPU budget (issue #23).

use crate::archive::Candidate;
use std::collections::BTreeMap;

/// Measured / predicted over one bottleneck's validated candidates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    /// Geometric mean of measured / predicted.
    pub scale: f64,
    /// Median |ln(measured / (predicted × scale))|: how far the corrected predictions still miss.
    pub spread: f64,
    pub points: usize,
}

/// What a run's measurements say about its predictions, per bottleneck.
#[derive(Clone, Debug, Default)]
pub struct Calibration {
    fits: BTreeMap<String, Fit>,
}

fn key(c: &Candidate) -> String {
    c.bottleneck.clone().unwrap_or_default()
}

impl Calibration {
    /// From the population's validated candidates that were both predicted and measured.
    pub fn of(population: &[Candidate]) -> Calibration {
        let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for c in population.iter().filter(|c| c.validated()) {
            if let (Some(p), Some(m)) = (c.cost_us, c.measured_us) {
                if p > 0.0 && m > 0.0 {
                    by.entry(key(c)).or_default().push((m / p).ln());
                }
            }
        }
        let fits = by
            .into_iter()
            .map(|(b, logs)| {
                let mean = logs.iter().sum::<f64>() / logs.len() as f64;
                let mut dev: Vec<f64> = logs.iter().map(|l| (l - mean).abs()).collect();
                dev.sort_by(|a, b| a.total_cmp(b));
                let fit = Fit {
                    scale: mean.exp(),
                    spread: dev[dev.len() / 2],
                    points: logs.len(),
                };
                (b, fit)
            })
            .collect();
        Calibration { fits }
    }

    pub fn fit(&self, bottleneck: &str) -> Option<Fit> {
        self.fits.get(bottleneck).copied()
    }

    /// The prediction scaled by the run's measurements of its bottleneck (unscaled without any).
    pub fn corrected(&self, c: &Candidate) -> Option<f64> {
        let p = c.cost_us?;
        Some(self.fit(&key(c)).map_or(p, |f| p * f.scale))
    }

    /// How far to trust a prediction of this bottleneck, in (0, 1): 0.5 before any
    /// measurement; then high when the run's corrected predictions of it landed close, falling
    /// with their spread, and held back while the points are few.
    pub fn confidence(&self, bottleneck: &str) -> f64 {
        match self.fit(bottleneck) {
            None => 0.5,
            Some(f) => {
                let n = f.points as f64;
                (-f.spread).exp() * n / (n + 1.0)
            }
        }
    }
}

/// Knob moves `(parent hash, edits)` whose candidate failed the correctness protocol.
pub fn failed_moves(population: &[Candidate]) -> Vec<(String, Vec<(String, i64)>)> {
    let by_hash: BTreeMap<&str, &Candidate> =
        population.iter().map(|c| (c.hash.as_str(), c)).collect();
    population
        .iter()
        .filter(|c| c.correctness.as_deref() == Some("failed"))
        .filter_map(|c| {
            let p = by_hash.get(c.parents.first()?.as_str())?;
            let edits = moves(&p.source, &c.source)?;
            Some((p.hash.clone(), edits))
        })
        .collect()
}

/// The knob values `child` sets differently from `parent`, when that is all that differs.
pub fn moves(parent: &str, child: &str) -> Option<Vec<(String, i64)>> {
    crate::distill::knob_edits(parent, child)
        .map(|es| es.into_iter().map(|(k, _, v)| (k, v)).collect())
}

/// Whether `c` (from `parent`) makes every move of a failed sibling from the same parent.
pub fn repeats_failure(
    c: &Candidate,
    parent: Option<&Candidate>,
    failed: &[(String, Vec<(String, i64)>)],
) -> bool {
    let Some(p) = parent else { return false };
    let Some(mine) = moves(&p.source, &c.source) else {
        return false;
    };
    failed
        .iter()
        .any(|(ph, es)| *ph == p.hash && !es.is_empty() && es.iter().all(|e| mine.contains(e)))
}

/// The order in which `clean` candidates go to the GPU: those repeating a sibling's failed
/// moves last, the others by corrected prediction (unpredicted after predicted).
pub fn order(clean: &[&Candidate], population: &[Candidate]) -> Vec<usize> {
    let calibration = Calibration::of(population);
    let failed = failed_moves(population);
    let by_hash: BTreeMap<&str, &Candidate> =
        population.iter().map(|c| (c.hash.as_str(), c)).collect();
    // Each key once (a repeat check parses both schedules' knobs), then the sort.
    let keys: Vec<(bool, f64)> = clean
        .iter()
        .map(|c| {
            let parent = c
                .parents
                .first()
                .and_then(|h| by_hash.get(h.as_str()).copied());
            (
                repeats_failure(c, parent, &failed),
                calibration.corrected(c).unwrap_or(f64::INFINITY),
            )
        })
        .collect();
    let mut idx: Vec<usize> = (0..clean.len()).collect();
    idx.sort_by(|&a, &b| {
        keys[a]
            .0
            .cmp(&keys[b].0)
            .then(keys[a].1.total_cmp(&keys[b].1))
    });
    idx
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::Stage;
    use crate::Spent;

    fn cand(hash: &str, source: &str, parent: Option<&str>) -> Candidate {
        Candidate {
            seq: 0,
            hash: hash.into(),
            generation: 0,
            parents: parent.map(|p| vec![p.to_string()]).unwrap_or_default(),
            proposer: "knobs".into(),
            source: source.into(),
            stage: Stage::Estimated,
            findings: None,
            niche: None,
            bottleneck: Some("memory".into()),
            cost_us: None,
            build: None,
            correctness: None,
            verdict: None,
            evidence: None,
            measured_us: None,
            speedup: None,
            spent: Spent::default(),
            created: String::new(),
        }
    }

    fn measured(mut c: Candidate, predicted: f64, measured: f64) -> Candidate {
        c.stage = Stage::Evaluated;
        c.correctness = Some("passed".into());
        c.cost_us = Some(predicted);
        c.measured_us = Some(measured);
        c
    }

    #[test]
    fn measurements_scale_their_bottleneck_and_set_its_confidence() {
        let pop = vec![
            measured(cand("a", "A = 1\n", None), 100.0, 200.0),
            measured(cand("b", "A = 2\n", None), 50.0, 100.0),
            measured(cand("c", "A = 3\n", None), 10.0, 20.0),
        ];
        let cal = Calibration::of(&pop);
        let f = cal.fit("memory").unwrap();
        assert!((f.scale - 2.0).abs() < 1e-9 && f.spread < 1e-9 && f.points == 3);
        assert!((cal.confidence("memory") - 0.75).abs() < 1e-9);
        assert_eq!(cal.confidence("compute"), 0.5);
        let mut other = cand("d", "A = 4\n", None);
        other.cost_us = Some(30.0);
        assert_eq!(cal.corrected(&other), Some(60.0));
        // Disagreeing measurements lower the confidence.
        let noisy = vec![
            measured(cand("a", "A = 1\n", None), 100.0, 100.0),
            measured(cand("b", "A = 2\n", None), 100.0, 400.0),
            measured(cand("c", "A = 3\n", None), 100.0, 200.0),
        ];
        assert!(Calibration::of(&noisy).confidence("memory") < 0.4);
    }

    #[test]
    fn a_candidate_repeating_a_failed_sibling_goes_last() {
        let parent = measured(cand("p", "BN = 192\nBC = 128\n", None), 100.0, 100.0);
        let mut broken = cand("x", "BN = 256\nBC = 128\n", Some("p"));
        broken.stage = Stage::Evaluated;
        broken.correctness = Some("failed".into());
        let pop = vec![parent, broken];
        // Predicted fastest, but it sets BN = 256 again (with another move).
        let mut again = cand("y", "BN = 256\nBC = 64\n", Some("p"));
        again.cost_us = Some(10.0);
        let mut fine = cand("z", "BN = 192\nBC = 64\n", Some("p"));
        fine.cost_us = Some(80.0);
        let mut unknown = cand("w", "BN = 192\nBC = 32\n", Some("p"));
        unknown.cost_us = None;
        assert_eq!(order(&[&again, &fine, &unknown], &pop), vec![1, 2, 0]);
    }
}
