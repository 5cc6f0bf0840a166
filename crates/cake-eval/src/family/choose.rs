//! Choosing a family's routes from an every-route measurement (docs/dispatch.md): a candidate
//! route gets the guard box — a range per dimension, inside the route's own guard — that gains
//! most over the shapes no earlier pick took, with every measured shape in it at least `worst`
//! and its geomean gain at least `material`, shrunk to the span of the shapes it takes. The picks
//! are greedy across candidates (the box of most total gain next) and listed in pick order.
//!
//! With `carve`, a box may also take shapes an earlier pick took: its gain is counted over what
//! the table so far gives them (an earlier pick's speedup, or the fallback's 1×), and it goes
//! *before* the earlier picks, so the first pick is the broadest and later ones carve out the
//! regions where another route beats it.
//!
//! Either way a candidate that gains nothing material is dropped, and what no route keeps falls
//! back: one schedule as far as it goes, a new route only where the measurement shows a material
//! gain (the seed's policy).
//!
//! With `open_above`, a guard whose box reaches the largest measured value of a dimension stays
//! open above it; with `products`, boxes may also bound products of dimensions from below, and
//! with `products_under` from above (a route whose fixed cost is low but that does not scale ends
//! at a problem size). With `short_us`, a measured shape whose baseline ran shorter than that
//! needs `short_worst` to sit in a box (few-wave problems are where speedups are roughest).
//! [`cross_validate`] estimates what a table chosen with given options is worth on shapes it
//! did not see, so options are picked without a held-out shard.

use super::measure::{Measurement, Mode, ShapeResult};
use super::{guard_admits, Family, Range};
use crate::contract::{shape_text, Shape};
use indexmap::IndexMap;
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

#[derive(Clone, Debug)]
pub struct ChooseOptions {
    /// The lowest speedup a route may have at any measured shape inside its guard.
    pub worst: f64,
    /// The geomean speedup a route must bring over the shapes it takes to be kept.
    pub material: f64,
    /// The fewest measured shapes a kept route must take.
    pub min_shapes: usize,
    /// Guard boxes per candidate route (each kept box is a route of its own).
    pub boxes: usize,
    /// Later boxes may take shapes from earlier ones where they gain over them (and go first).
    pub carve: bool,
    /// Where a box reaches the largest measured value of a dimension, its guard stays open to
    /// the domain's top instead of stopping at that value: a larger problem amortises more of
    /// a route's fixed costs, so a route that wins at the largest measured size keeps winning.
    pub open_above: bool,
    /// Products of dimensions (`B*N`) the boxes may also bound from below: a route whose fixed
    /// costs lose on small problems starts at a problem size no range of one dimension can say.
    pub products: Vec<String>,
    /// Products of dimensions the boxes may also bound from above: a route that wins small
    /// problems on low fixed costs and loses large ones (short CTAs that each reload shared
    /// operands) ends at a problem size. Its bound is the largest product the box took, whether
    /// or not `open_above` keeps the box's dimensions open.
    pub products_under: Vec<String>,
    /// Compare the routes at a shape through one baseline time, the median of every baseline
    /// timing taken there, instead of each route's speedup over its own baseline timing: where
    /// the baseline's time moves between runs more than the routes differ (microsecond problems
    /// behind a Python baseline), a route could otherwise win on the baseline's noise.
    pub pooled_baseline: bool,
    /// Shapes whose baseline ran under this many microseconds (the median of the baseline's
    /// timings there) must have run at least `short_worst` rather than `worst` in a box.
    /// A problem of a few waves is where a route's speedup moves most between neighbouring
    /// shapes (a persistent kernel's last wave, 1.1 or 2 waves of tiles; launch latency), so a
    /// box whose short problems only just pass holds unmeasured ones that lose.
    pub short_us: f64,
    /// The lowest speedup a route may have at a measured shape shorter than `short_us`.
    pub short_worst: f64,
    /// Write the routes for this card alone (`cards = [card]`, docs/dispatch.md): the
    /// measurement must have run on a GPU of that name, and the routes go ahead of a table's
    /// shared ones.
    pub card: Option<String>,
}

impl Default for ChooseOptions {
    fn default() -> Self {
        ChooseOptions {
            worst: 0.97,
            material: 1.02,
            min_shapes: 3,
            boxes: 2,
            carve: false,
            open_above: false,
            products: Vec::new(),
            products_under: Vec::new(),
            pooled_baseline: false,
            short_us: 0.0,
            short_worst: 0.97,
            card: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Chosen {
    /// The candidate route it comes from (index into the family's routes).
    pub candidate: usize,
    pub name: String,
    pub when: IndexMap<String, Range>,
    /// The measured shapes it takes, their geomean and worst speedup.
    pub shapes: usize,
    pub geomean: f64,
    pub worst: f64,
}

/// Up to this many cut values per dimension (quantiles of the measured values): bounds the
/// search to (n(n+1)/2)^dims boxes.
const CUTS: usize = 14;

/// Candidate bounds for one dimension: measured values at evenly spaced ranks.
fn cuts(values: &[i64]) -> Vec<i64> {
    let mut v = values.to_vec();
    v.sort();
    v.dedup();
    if v.len() <= CUTS {
        return v;
    }
    let mut out: Vec<i64> = (0..CUTS)
        .map(|i| v[i * (v.len() - 1) / (CUTS - 1)])
        .collect();
    out.dedup();
    out
}

/// Each route's speedup at each measured shape: `None` where it was not timed, `Some(None)`
/// where it failed or was wrong.
type Table = Vec<Vec<Option<Option<f64>>>>;

/// With `pooled` (each shape's pooled baseline, [`baseline_medians`]), each route's speedup at a
/// shape is over that one instead of the baseline timing beside it (`Outcome::speedup_over`,
/// as `cake family report` shows every-route measurements).
fn table(f: &Family, m: &Measurement, pooled: Option<&[Option<f64>]>) -> Table {
    f.routes
        .iter()
        .map(|r| {
            m.shapes
                .iter()
                .enumerate()
                .map(|(k, s)| {
                    s.timed.get(&r.name).map(|o| {
                        // A speedup the measurement refused (a time not believable) stays refused.
                        let own = o.speedup.filter(|_| o.correct);
                        match pooled {
                            Some(base) => own.and(o.speedup_over(base[k])),
                            None => own,
                        }
                    })
                })
                .collect()
        })
        .collect()
}

/// With `--card`: the card is one word, and the measurement ran on a GPU it names (a card's
/// routes are chosen from that card's times only).
fn card_of_measurement(card: &str, m: &Measurement) -> Result<(), String> {
    if !super::is_card_word(card) {
        return Err(format!(
            "`--card {card}` is not one word of a GPU's name (letters and digits: H100, H200)"
        ));
    }
    match m.gpu() {
        Some(gpu) if super::card_is(card, gpu) => Ok(()),
        Some(gpu) => Err(format!(
            "the measurement ran on {gpu}, not on a GPU named {card}: a card's routes are chosen from its own times"
        )),
        None => Err(format!(
            "the measurement names no GPU (`environment.gpu`), so it cannot choose routes for the {card}"
        )),
    }
}

pub fn choose(f: &Family, m: &Measurement, o: &ChooseOptions) -> Result<Vec<Chosen>, String> {
    if m.mode != Mode::EveryRoute {
        return Err(
            "choosing routes needs an every-route measurement (`cake family measure --every-route`)"
                .into(),
        );
    }
    if m.family != f.name {
        return Err(format!(
            "the measurement is of family `{}`, the file is `{}`",
            m.family, f.name
        ));
    }
    // A table is chosen for the GPU its measurement ran on: a candidate limited to some cards
    // would make the written table route other GPUs by what was never chosen for them.
    if let Some(r) = f.routes.iter().find(|r| !r.cards.is_empty()) {
        return Err(format!(
            "candidate `{}` names cards ({}): choose writes routes for every GPU from one GPU's \
             measurement; drop `cards` from the candidates and give a card its own routes in the \
             table (docs/dispatch.md, \"Which card chooses\")",
            r.name,
            r.cards.join(", ")
        ));
    }
    if let Some(card) = &o.card {
        card_of_measurement(card, m)?;
    }
    for p in o.products.iter().chain(&o.products_under) {
        if let Some(bad) =
            super::guard_factors(p).find(|d| !f.contract.dims.iter().any(|x| x.name == *d))
        {
            return Err(format!(
                "`{bad}` in the product `{p}` is not a dimension of the contract"
            ));
        }
    }
    // The axes a box bounds: each dimension, then each product bounded from below, then each
    // product bounded from above.
    let dims: Vec<String> = f
        .contract
        .dims
        .iter()
        .map(|d| d.name.clone())
        .chain(o.products.iter().cloned())
        .chain(o.products_under.iter().cloned())
        .collect();
    let products_from = f.contract.dims.len();
    let under_from = products_from + o.products.len();
    let shapes: Vec<&Shape> = m.shapes.iter().map(|s| &s.shape).collect();
    // Each axis's value at each measured shape, computed once: `at[axis][shape]`.
    let at: Vec<Vec<i64>> = dims
        .iter()
        .map(|d| shapes.iter().map(|s| value(d, s)).collect())
        .collect();
    let medians = baseline_medians(m);
    let speed = table(f, m, o.pooled_baseline.then_some(&medians[..]));
    let least = least_speedups(&medians, o);
    // ln of the speedup the table chosen so far gives each measured shape (0: the fallback).
    let mut current = vec![0.0f64; shapes.len()];
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut used = vec![0usize; f.routes.len()];
    // Shapes an earlier pick took; without `carve` no later box may hold them.
    let mut claimed = vec![false; shapes.len()];
    let admits: Vec<Vec<bool>> = f
        .routes
        .iter()
        .map(|r| shapes.iter().map(|s| r.admits(s)).collect())
        .collect();
    // Each candidate's best box as last searched; `None` once a pick changed the table at a
    // shape the candidate admits (its search sees only those shapes, so the rest keep theirs).
    type Found = Option<(f64, Vec<usize>, Bounds)>;
    let mut searched: Vec<Option<Found>> = vec![None; f.routes.len()];
    // Every box a search has found: where a later search holds one, the score it has there is
    // a floor under that search's best, and boxes below the floor need not be searched.
    let mut hints: Vec<Bounds> = Vec::new();
    // Greedy over every candidate: the box of most gain over the current table goes next (in
    // front of the earlier picks when carving).
    loop {
        let mut pick: Option<(usize, f64)> = None;
        for ri in 0..f.routes.len() {
            if used[ri] >= o.boxes {
                continue;
            }
            let found = searched[ri].get_or_insert_with(|| {
                let open: Vec<usize> = (0..shapes.len())
                    .filter(|k| (o.carve || !claimed[*k]) && admits[ri][*k])
                    .collect();
                if open.len() < o.min_shapes {
                    return None;
                }
                let axes: Vec<Vec<(Option<i64>, Option<i64>)>> = at
                    .iter()
                    .enumerate()
                    .map(|(a, vals)| {
                        let c = cuts(&open.iter().map(|k| vals[*k]).collect::<Vec<_>>());
                        if a < products_from {
                            intervals(&c)
                        } else if a < under_from {
                            floors(&c)
                        } else {
                            ceilings(&c)
                        }
                    })
                    .collect();
                // Each shape's gain over the table so far; none where the route failed, ran
                // wrong or ran below `worst` (or `short_worst`).
                let gains: Vec<Option<f64>> = (0..shapes.len())
                    .map(|k| {
                        let s = speed[ri][k].flatten().filter(|s| *s >= least[k]);
                        s.map(|s| s.ln() - current[k])
                    })
                    .collect();
                let found = best_box(&at, &axes, &open, &gains, o, &hints);
                if let Some((_, _, bounds)) = &found {
                    if !hints.contains(bounds) {
                        hints.push(bounds.clone());
                    }
                }
                found
            });
            if let Some((score, ..)) = found {
                if pick.is_none_or(|p| *score > p.1 + 1e-12) {
                    pick = Some((ri, *score));
                }
            }
        }
        let Some((ri, _)) = pick else {
            break;
        };
        let Some(Some((_, taken, bounds))) = searched[ri].take() else {
            unreachable!("the pick was searched");
        };
        for (rj, stale) in searched.iter_mut().enumerate() {
            if taken.iter().any(|k| admits[rj][*k]) {
                *stale = None;
            }
        }
        let route = &f.routes[ri];
        used[ri] += 1;
        for k in &taken {
            current[*k] = speed[ri][*k].flatten().map_or(0.0, f64::ln);
            claimed[*k] = true;
        }
        // The guard is the box the taken shapes span, no wider: past them nothing was
        // measured, and a held-out shape there must not be routed on a guess.
        // (With `open_above`, a box open at the top stays open: see the option.)
        let mut guard = route.when.clone();
        for (a, (d, b)) in dims.iter().zip(&bounds).enumerate() {
            let vals = taken.iter().map(|k| at[a][*k]);
            let (lo, hi) = (vals.clone().min(), vals.max());
            let (lo, hi) = if a < products_from {
                let dim = &f.contract.dims[a];
                let hi = if o.open_above && b.1.is_none() {
                    None
                } else {
                    hi
                };
                (lo.filter(|v| *v > dim.min), hi.filter(|v| *v < dim.max))
            } else if a < under_from {
                // A product is bounded only where the box cut it.
                (lo.filter(|_| b.0.is_some()), None)
            } else {
                (None, hi.filter(|_| b.1.is_some()))
            };
            if lo.is_none() && hi.is_none() {
                continue;
            }
            let g = guard.entry(d.clone()).or_default();
            g.min = match (g.min, lo) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            g.max = match (g.max, hi) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        chosen.insert(
            if o.carve { 0 } else { chosen.len() },
            Chosen {
                candidate: ri,
                name: if used[ri] == 1 {
                    route.name.clone()
                } else {
                    format!("{}-{}", route.name, used[ri])
                },
                when: guard,
                shapes: 0,
                geomean: 1.0,
                worst: 1.0,
            },
        );
    }
    // What each route takes in the final order (a later pick may have taken shapes from it).
    let mut taken: Vec<Vec<f64>> = vec![Vec::new(); chosen.len()];
    for (k, shape) in shapes.iter().enumerate() {
        if let Some(ci) = route_of(&chosen, shape) {
            if let Some(s) = speed[chosen[ci].candidate][k].flatten() {
                taken[ci].push(s);
            }
        }
    }
    for (c, t) in chosen.iter_mut().zip(&taken) {
        c.shapes = t.len();
        c.geomean = (t.iter().map(|s| s.ln()).sum::<f64>() / t.len().max(1) as f64).exp();
        c.worst = t.iter().copied().fold(f64::INFINITY, f64::min);
    }
    chosen.retain(|c| c.shapes > 0);
    Ok(chosen)
}

/// The chosen route dispatch would give `shape`: the first whose guard admits it.
fn route_of(chosen: &[Chosen], shape: &Shape) -> Option<usize> {
    chosen.iter().position(|c| guard_admits(&c.when, shape))
}

/// The median of the baseline's timings at each measured shape, in milliseconds.
fn baseline_medians(m: &Measurement) -> Vec<Option<f64>> {
    m.shapes
        .iter()
        .map(ShapeResult::pooled_baseline_ms)
        .collect()
}

/// The lowest speedup a route may have at each measured shape: `short_worst` where the baseline
/// ran under `short_us` (`medians`: [`baseline_medians`]), else `worst`.
fn least_speedups(medians: &[Option<f64>], o: &ChooseOptions) -> Vec<f64> {
    medians
        .iter()
        .map(|b| match b {
            Some(ms) if ms * 1e3 < o.short_us => o.short_worst.max(o.worst),
            _ => o.worst,
        })
        .collect()
}

/// A box axis's value at a shape: a dimension or a product of dimensions.
fn value(axis: &str, shape: &Shape) -> i64 {
    super::guard_value(axis, shape).unwrap_or(0)
}

/// Lower bounds only (a product axis): no bound, or at least each cut value past the first.
fn floors(c: &[i64]) -> Vec<(Option<i64>, Option<i64>)> {
    std::iter::once((None, None))
        .chain(c.iter().skip(1).map(|lo| (Some(*lo), None)))
        .collect()
}

/// Upper bounds only (a product axis bounded from above): no bound, or at most each cut value
/// but the last.
fn ceilings(c: &[i64]) -> Vec<(Option<i64>, Option<i64>)> {
    std::iter::once((None, None))
        .chain(
            c.iter()
                .take(c.len().saturating_sub(1))
                .map(|hi| (None, Some(*hi))),
        )
        .collect()
}

/// Every interval between two cut values; the extremes open it to the domain's edge.
fn intervals(c: &[i64]) -> Vec<(Option<i64>, Option<i64>)> {
    let mut iv = Vec::new();
    for (i, lo) in c.iter().enumerate() {
        for (j, hi) in c.iter().enumerate().skip(i) {
            iv.push(((i > 0).then_some(*lo), (j + 1 < c.len()).then_some(*hi)));
        }
    }
    iv
}

type Bounds = Vec<(Option<i64>, Option<i64>)>;

/// Whether an interval (either end open where `None`) holds `v`.
fn inside(iv: &(Option<i64>, Option<i64>), v: i64) -> bool {
    iv.0.is_none_or(|lo| v >= lo) && iv.1.is_none_or(|hi| v <= hi)
}

/// The box of most total gain over the open shapes, subject to the options; ties go to the box
/// with fewer bounds, then the wider one. `gains` is each shape's gain (ln of the route's
/// speedup over what the table so far gives it), `None` where no box may hold it. Each of
/// `hints` that the search holds is a box whose score the best one must reach. Returns the
/// gain and the shapes it takes.
fn best_box(
    at: &[Vec<i64>],
    axes: &[Vec<(Option<i64>, Option<i64>)>],
    open: &[usize],
    gains: &[Option<f64>],
    o: &ChooseOptions,
    hints: &[Bounds],
) -> Option<(f64, Vec<usize>, Bounds)> {
    // Per axis and interval, which open shapes it admits (bit sets over `open`).
    let words = open.len().div_ceil(64);
    let masks: Vec<Vec<Vec<u64>>> = axes
        .iter()
        .zip(at)
        .map(|(ivs, vals)| {
            ivs.iter()
                .map(|iv| {
                    let mut m = vec![0u64; words];
                    for (j, k) in open.iter().enumerate() {
                        if inside(iv, vals[*k]) {
                            m[j / 64] |= 1 << (j % 64);
                        }
                    }
                    m
                })
                .collect()
        })
        .collect();
    let lns: Vec<f64> = open.iter().map(|k| gains[*k].unwrap_or(0.0)).collect();
    // Shapes that forbid any box holding them; shapes that could be in a box of `material`
    // gain on average (a box with none of them has its average below it; the margin keeps a box
    // whose sum rounds up to the bar).
    let mut bad = vec![0u64; words];
    let mut good = vec![0u64; words];
    for (j, k) in open.iter().enumerate() {
        if gains[*k].is_none() {
            bad[j / 64] |= 1 << (j % 64);
        } else if lns[j] >= o.material.ln() - 1e-9 {
            good[j / 64] |= 1 << (j % 64);
        }
    }
    let mut search = Search {
        axes,
        masks: &masks,
        bad: &bad,
        good: &good,
        lns: &lns,
        o,
        idx: vec![0; axes.len()],
        best: None,
        seen: vec![FxHashMap::default(); axes.len()],
        last: Slots::new(
            axes.last()?,
            &open
                .iter()
                .map(|k| at[axes.len() - 1][*k])
                .collect::<Vec<_>>(),
        ),
        sums: Default::default(),
        floor: f64::NEG_INFINITY,
    };
    let mut all = vec![0u64; words];
    for j in 0..open.len() {
        all[j / 64] |= 1 << (j % 64);
    }
    // The hinted boxes and the unbounded one, where the search holds them and the options
    // allow them: the best box scores at least as much as each.
    let unbounded: Bounds = vec![(None, None); axes.len()];
    for hint in hints.iter().chain([&unbounded]) {
        let Some(idx) = hint
            .iter()
            .zip(axes)
            .map(|(b, ivs)| ivs.iter().position(|iv| iv == b))
            .collect::<Option<Vec<usize>>>()
        else {
            continue;
        };
        let mut m = all.clone();
        for (a, i) in idx.iter().enumerate() {
            for (w, x) in m.iter_mut().zip(&masks[a][*i]) {
                *w &= x;
            }
        }
        if m.iter().zip(&bad).any(|(w, b)| w & b != 0) {
            continue;
        }
        let held = (0..open.len()).filter(|j| m[j / 64] & (1 << (j % 64)) != 0);
        let (score, n) = held.fold((0.0, 0usize), |(s, n), j| (s + lns[j], n + 1));
        if n >= o.min_shapes && score / (n as f64) >= o.material.ln() {
            search.floor = search.floor.max(score);
        }
    }
    search.go(0, &all);
    let best = search.best;
    let (score, _, _, idx) = best?;
    let bounds: Bounds = idx.iter().enumerate().map(|(a, i)| axes[a][*i]).collect();
    let taken: Vec<usize> = open
        .iter()
        .copied()
        .filter(|k| {
            at.iter()
                .zip(&bounds)
                .all(|(vals, iv)| inside(iv, vals[*k]))
        })
        .collect();
    Some((score, taken, bounds))
}

/// The box search of [`best_box`]: one interval per axis, depth first, the shapes a partial
/// box holds carried down (the AND of its intervals' masks). It finds the box a search of every
/// box in the same order finds, tie-breaks included, without extending a partial box
/// - holding fewer than `min_shapes`, or none of the shapes of `material` gain;
/// - whose positive gains add up to less than the best box so far or a hinted one (the floor);
/// - holding the same shapes as a partial box searched before it (many boxes hold the same few
///   of the measured shapes): every box below it has a twin below the earlier one, already
///   judged, with the same shapes and score, so it can only win a tie-break on fewer bounds,
///   and only where the earlier one's boxes could reach the best score.
struct Search<'a> {
    axes: &'a [Vec<(Option<i64>, Option<i64>)>],
    masks: &'a [Vec<Vec<u64>>],
    /// Shapes no allowed box holds.
    bad: &'a [u64],
    /// Shapes of at least `material` gain: every allowed box holds one.
    good: &'a [u64],
    lns: &'a [f64],
    o: &'a ChooseOptions,
    idx: Vec<usize>,
    /// (score, bounds, shapes, the intervals)
    best: Option<(f64, usize, i64, Vec<usize>)>,
    /// Per axis, the shapes each partial box searched down to it held.
    seen: Vec<FxHashMap<Box<[u64]>, Twin>>,
    /// The score of a box known to be allowed ([`best_box`]'s hints): boxes that cannot reach
    /// it are not searched, whether or not one reaching it was found yet.
    floor: f64,
    /// The last axis's slots.
    last: Slots,
    /// Per slot of the last axis, reused from node to node: the gain, number and failed number
    /// of the shapes held there, then their running sums.
    sums: (Vec<f64>, Vec<usize>, Vec<usize>),
}

impl Search<'_> {
    /// Searches the boxes below the partial box holding `held` (bounded on the axes before
    /// `axis`) and returns their ceiling: no box below it that the options allow scores more.
    fn go(&mut self, axis: usize, held: &[u64]) -> f64 {
        // The last axis's boxes are judged together, faster than their twins are looked up.
        if axis + 1 >= self.axes.len() {
            return self.last_axis(held);
        }
        let bounds: usize = (0..axis)
            .map(|a| bound_count(&self.axes[a][self.idx[a]]))
            .sum();
        if axis > 0 {
            if let Some(twin) = self.seen[axis].get(held) {
                if twin.bounds <= bounds || self.below_best(twin.ceiling) {
                    return twin.ceiling;
                }
            }
        }
        let ceiling = self.below(axis, held);
        if axis > 0 {
            let twin = self.seen[axis]
                .entry(held.into())
                .or_insert(Twin { bounds, ceiling });
            twin.bounds = twin.bounds.min(bounds);
            twin.ceiling = twin.ceiling.min(ceiling);
        }
        ceiling
    }

    /// Whether a box scoring `score` cannot be the best box, even on a tie-break: it scores
    /// less than the best so far or the floor.
    fn below_best(&self, score: f64) -> bool {
        let best = self
            .best
            .as_ref()
            .map_or(self.floor, |b| b.0.max(self.floor));
        score < best - 1e-12
    }

    /// [`Search::go`] past its memory of twins.
    fn below(&mut self, axis: usize, held: &[u64]) -> f64 {
        if held.iter().zip(self.good).all(|(h, g)| h & g == 0) {
            return f64::NEG_INFINITY;
        }
        // Branch and bound: no box inside this one scores more than its shapes' gains that are
        // positive. A subtree that cannot reach the best score so far is skipped (one that can
        // only tie is still searched, so the tie-breaks pick the same box as a full search).
        if self.best.is_some() || self.floor > f64::NEG_INFINITY {
            let mut bound = 0.0;
            for (wi, w) in held.iter().enumerate() {
                let mut bits = *w;
                while bits != 0 {
                    bound += self.lns[wi * 64 + bits.trailing_zeros() as usize].max(0.0);
                    bits &= bits - 1;
                }
            }
            if self.below_best(bound) {
                return bound;
            }
        }
        let mut ceiling = f64::NEG_INFINITY;
        let mut m = vec![0u64; held.len()];
        for i in 0..self.axes[axis].len() {
            for ((w, h), x) in m.iter_mut().zip(held).zip(&self.masks[axis][i]) {
                *w = h & x;
            }
            if m.iter().map(|w| w.count_ones() as usize).sum::<usize>() < self.o.min_shapes {
                continue;
            }
            self.idx[axis] = i;
            ceiling = ceiling.max(self.go(axis + 1, &m));
        }
        ceiling
    }

    /// The boxes below a partial box bounded on every axis but the last, judged together: one
    /// pass over the shapes it holds sorts them into the last axis's slots (see [`Slots`]), and
    /// each interval's shapes, gain and failures are then a difference of running sums.
    fn last_axis(&mut self, held: &[u64]) -> f64 {
        if held.iter().zip(self.good).all(|(h, g)| h & g == 0) {
            return f64::NEG_INFINITY;
        }
        let axis = self.axes.len() - 1;
        let slots = self.last.width;
        let (mut gain, mut count, mut failed) = std::mem::take(&mut self.sums);
        gain.clear();
        gain.resize(slots + 1, 0.0);
        count.clear();
        count.resize(slots + 1, 0);
        failed.clear();
        failed.resize(slots + 1, 0);
        let mut bound = 0.0;
        for (wi, w) in held.iter().enumerate() {
            let mut bits = *w;
            while bits != 0 {
                let j = wi * 64 + bits.trailing_zeros() as usize;
                let x = self.last.of_shape[j] + 1;
                gain[x] += self.lns[j];
                count[x] += 1;
                failed[x] += usize::from(self.bad[j / 64] & (1 << (j % 64)) != 0);
                bound += self.lns[j].max(0.0);
                bits &= bits - 1;
            }
        }
        let mut ceiling = bound;
        if !self.below_best(bound) {
            ceiling = f64::NEG_INFINITY;
            for x in 1..=slots {
                gain[x] += gain[x - 1];
                count[x] += count[x - 1];
                failed[x] += failed[x - 1];
            }
            for i in 0..self.axes[axis].len() {
                let (lo, hi) = self.last.of_interval[i];
                let n = count[hi + 1] - count[lo];
                if n < self.o.min_shapes || failed[hi + 1] > failed[lo] {
                    continue;
                }
                self.idx[axis] = i;
                let mut score = gain[hi + 1] - gain[lo];
                // A difference of running sums can land a hair below the `material` bar that
                // the shapes' own sum reaches: near the bar, add them up in order instead.
                if (score / n as f64 - self.o.material.ln()).abs() < 1e-9 {
                    score = self.sum_in_slots(held, lo, hi);
                }
                ceiling = ceiling.max(self.consider(score, n));
            }
        }
        self.sums = (gain, count, failed);
        ceiling
    }

    /// The gains of the held shapes whose last-axis slot lies in `lo..=hi`, added in shape
    /// order (as `every_box` adds them).
    fn sum_in_slots(&self, held: &[u64], lo: usize, hi: usize) -> f64 {
        let mut sum = 0.0;
        for (wi, w) in held.iter().enumerate() {
            let mut bits = *w;
            while bits != 0 {
                let j = wi * 64 + bits.trailing_zeros() as usize;
                if (lo..=hi).contains(&self.last.of_shape[j]) {
                    sum += self.lns[j];
                }
                bits &= bits - 1;
            }
        }
        sum
    }

    /// A box holding `n` shapes of total gain `score`, bounded by the intervals `idx`: the best
    /// so far if it beats it (no failed shape in it is the caller's check). Returns its score
    /// if the options allow it.
    fn consider(&mut self, score: f64, n: usize) -> f64 {
        if n < self.o.min_shapes || score / (n as f64) < self.o.material.ln() {
            return f64::NEG_INFINITY;
        }
        let bounds: usize = self
            .idx
            .iter()
            .enumerate()
            .map(|(a, i)| bound_count(&self.axes[a][*i]))
            .sum();
        let width = n as i64;
        let better = match &self.best {
            None => true,
            Some((s, b, w, _)) => {
                score > s + 1e-12
                    || ((score - s).abs() <= 1e-12 && (bounds < *b || (bounds == *b && width > *w)))
            }
        };
        if better {
            self.best = Some((score, bounds, width, self.idx.clone()));
        }
        score
    }
}

/// What the search remembers of the partial boxes down to an axis that held the same shapes:
/// the fewest bounds one had, and the ceiling of the boxes below them ([`Search::go`]).
#[derive(Clone)]
struct Twin {
    bounds: usize,
    ceiling: f64,
}

/// An axis's intervals as ranges of slots: a value's slot is its place among the axis's bound
/// values (2i+1 at the i-th, 2i between the (i-1)-th and the i-th), so an interval holds a
/// value exactly when the value's slot lies in the interval's range of slots.
struct Slots {
    /// Each open shape's slot.
    of_shape: Vec<usize>,
    /// Each interval's first and last slot.
    of_interval: Vec<(usize, usize)>,
    /// Slots there are: 2 × the bound values + 1.
    width: usize,
}

impl Slots {
    fn new(intervals: &[(Option<i64>, Option<i64>)], values: &[i64]) -> Slots {
        let mut bounds: Vec<i64> = intervals
            .iter()
            .flat_map(|(lo, hi)| lo.iter().chain(hi))
            .copied()
            .collect();
        bounds.sort();
        bounds.dedup();
        let slot = |v: i64| {
            let below = bounds.partition_point(|b| *b < v);
            2 * below + usize::from(bounds.get(below) == Some(&v))
        };
        let place = |b: i64| 2 * bounds.partition_point(|x| *x < b) + 1;
        Slots {
            of_shape: values.iter().map(|v| slot(*v)).collect(),
            of_interval: intervals
                .iter()
                .map(|(lo, hi)| (lo.map_or(0, place), hi.map_or(2 * bounds.len(), place)))
                .collect(),
            width: 2 * bounds.len() + 1,
        }
    }
}

/// How many ends of an interval are bounded (0, 1 or 2).
fn bound_count(iv: &(Option<i64>, Option<i64>)) -> usize {
    usize::from(iv.0.is_some()) + usize::from(iv.1.is_some())
}

/// Over the measurement's shapes: the geomean speedup the chosen table gives (each shape through
/// its first admitting route, the fallback at 1×), and the most any table over these candidates
/// could (each shape's fastest correct route, or the fallback).
pub fn in_sample(f: &Family, m: &Measurement, chosen: &[Chosen], o: &ChooseOptions) -> (f64, f64) {
    let medians = o.pooled_baseline.then(|| baseline_medians(m));
    let speed = table(f, m, medians.as_deref());
    let n = m.shapes.len().max(1) as f64;
    let (mut table_ln, mut best_ln) = (0.0, 0.0);
    for (k, s) in m.shapes.iter().enumerate() {
        let routed =
            route_of(chosen, &s.shape).and_then(|ci| speed[chosen[ci].candidate][k].flatten());
        table_ln += routed.unwrap_or(1.0).ln();
        let fastest = speed
            .iter()
            .filter_map(|r| r[k].flatten())
            .fold(1.0f64, f64::max);
        best_ln += fastest.ln();
    }
    ((table_ln / n).exp(), (best_ln / n).exp())
}

/// What a choice is worth on shapes it did not see: the shapes split into folds (by index,
/// every `folds`-th shape), each fold routed by the table chosen from the others.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossValidation {
    pub folds: usize,
    pub shapes: usize,
    /// Geomean speedup over the shapes, each through the table that did not see it (a shape
    /// its route failed or ran wrong at counts as 1× here and in `incorrect`).
    pub geomean: f64,
    /// Shapes routed to a route that ran them below 0.95×, each with that route and its
    /// speedup, worst first.
    pub losers: Vec<(Shape, String, f64)>,
    /// Shapes routed to a route that failed at them or ran them wrong.
    pub incorrect: usize,
    /// Shapes routed to a route the measurement did not time there (one merged from a
    /// measurement of a candidates file without that route): counted 1× in the geomean, like
    /// the fallback, and neither wrong nor below.
    pub untimed: usize,
    /// Shapes no route took.
    pub fallback: usize,
}

impl CrossValidation {
    /// How many shapes the tables routed below 0.95×.
    pub fn below(&self) -> usize {
        self.losers.len()
    }
}

/// Cross-validates `choose` with options `o` over the measurement (docs/dispatch.md): an
/// estimate of the held-out geomean made from representative shapes only, to pick the options
/// before a held-out shard judges the table.
pub fn cross_validate(
    f: &Family,
    m: &Measurement,
    o: &ChooseOptions,
    folds: usize,
) -> Result<CrossValidation, String> {
    if folds < 2 || folds > m.shapes.len() {
        return Err(format!(
            "cross-validation needs 2 to {} folds (one shape each at most), not {folds}",
            m.shapes.len()
        ));
    }
    let medians = o.pooled_baseline.then(|| baseline_medians(m));
    let speed = table(f, m, medians.as_deref());
    let mut cv = CrossValidation {
        folds,
        shapes: m.shapes.len(),
        geomean: 1.0,
        losers: Vec::new(),
        incorrect: 0,
        untimed: 0,
        fallback: 0,
    };
    // The folds' choices are independent: one thread each.
    let tables: Vec<Result<Vec<Chosen>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..folds)
            .map(|fold| {
                scope.spawn(move || {
                    let mut train = m.clone();
                    train.shapes = m
                        .shapes
                        .iter()
                        .enumerate()
                        .filter(|(k, _)| k % folds != fold)
                        .map(|(_, s)| s.clone())
                        .collect();
                    choose(f, &train, o)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a fold's choice panicked"))
            .collect()
    });
    let mut ln = 0.0;
    for (fold, chosen) in tables.into_iter().enumerate() {
        let chosen = chosen?;
        for (k, s) in m.shapes.iter().enumerate().skip(fold).step_by(folds) {
            match route_of(&chosen, &s.shape) {
                None => cv.fallback += 1,
                Some(ci) => match speed[chosen[ci].candidate][k] {
                    None => cv.untimed += 1,
                    Some(None) => cv.incorrect += 1,
                    Some(Some(x)) => {
                        ln += x.ln();
                        if x < 0.95 {
                            cv.losers
                                .push((s.shape.clone(), chosen[ci].name.clone(), x));
                        }
                    }
                },
            }
        }
    }
    cv.geomean = (ln / m.shapes.len() as f64).exp();
    cv.losers.sort_by(|a, b| a.2.total_cmp(&b.2));
    Ok(cv)
}

/// `path` relative to `base` (both absolute), with `..` where needed.
fn relative(path: &Path, base: &Path) -> PathBuf {
    let p: Vec<Component> = path.components().collect();
    let b: Vec<Component> = base.components().collect();
    let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &p[common..] {
        out.push(c.as_os_str());
    }
    out
}

/// `{ a = 1, b = 2 }`: a TOML inline table of `map`, each value written by `value`.
fn inline<V>(map: &IndexMap<String, V>, value: impl Fn(&V) -> String) -> String {
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let bare = k
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if bare {
                format!("{k} = {}", value(v))
            } else {
                format!("\"{k}\" = {}", value(v))
            }
        })
        .collect();
    format!("{{ {} }}", parts.join(", "))
}

fn range_text(r: &Range) -> String {
    let mut parts = Vec::new();
    if let Some(v) = r.min {
        parts.push(format!("min = {v}"));
    }
    if let Some(v) = r.max {
        parts.push(format!("max = {v}"));
    }
    if let Some(v) = &r.values {
        let vs: Vec<String> = v.iter().map(ToString::to_string).collect();
        parts.push(format!("in = [{}]", vs.join(", ")));
    }
    if let Some(m) = r.multiple_of {
        parts.push(format!("multiple_of = {m}"));
    }
    format!("{{ {} }}", parts.join(", "))
}

/// The chosen family as a family file, to be written next to the candidates file (paths are
/// relative to its folder); comments carry the evidence each route was kept on.
/// A card's route is named for it (`rows-2` for the H100: `rows-2-h100`), so that it and the
/// shared route it goes ahead of can sit in one table.
fn card_route_name(name: &str, card: &str) -> String {
    let suffix = format!("-{}", card.to_ascii_lowercase());
    if name.ends_with(&suffix) {
        name.to_string()
    } else {
        format!("{name}{suffix}")
    }
}

pub fn render(
    f: &Family,
    m: &Measurement,
    chosen: &[Chosen],
    o: &ChooseOptions,
    cv: Option<&CrossValidation>,
) -> String {
    let dir = f
        .path
        .canonicalize()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let rel = |p: &Path| relative(p, &dir).display().to_string();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# The {} family as `cake family choose` picked it from an every-route measurement of {}",
        f.name,
        f.path.file_name().unwrap_or_default().to_string_lossy()
    );
    let seeds = if m.merged_seeds.is_empty() {
        format!("seed {}", m.seed)
    } else {
        let all: Vec<String> = std::iter::once(m.seed)
            .chain(m.merged_seeds.iter().copied())
            .map(|s| s.to_string())
            .collect();
        format!("seeds {}", all.join(" and "))
    };
    let _ = writeln!(
        out,
        "# ({} shard, {seeds}, {} shapes, baseline {}): each route takes the box of most gain in which",
        m.shard,
        m.shapes.len(),
        m.baseline
    );
    let _ = writeln!(
        out,
        "# every measured shape ran at least {}x and the route's geomean is at least {}x; the rest falls back.",
        o.worst, o.material
    );
    if o.carve {
        let _ = writeln!(
            out,
            "# Carved (`--carve`): a later box took shapes from an earlier one where its route beat it there, and is listed first."
        );
    }
    let (table, best) = in_sample(f, m, chosen, o);
    let _ = writeln!(
        out,
        "# On these shapes the table gives a geomean of {table:.3}x; the best route per shape (or the fallback) would give {best:.3}x."
    );
    if o.open_above || !o.products.is_empty() || !o.products_under.is_empty() {
        let mut how = Vec::new();
        if o.open_above {
            how.push("a box that reaches the largest measured value of a dimension stays open above it (`--open-above`)".to_string());
        }
        if !o.products.is_empty() {
            how.push(format!(
                "boxes may bound {} from below (`--product`)",
                o.products.join(", ")
            ));
        }
        if !o.products_under.is_empty() {
            how.push(format!(
                "boxes may bound {} from above (`--product-under`)",
                o.products_under.join(", ")
            ));
        }
        let _ = writeln!(out, "# Guards: {}.", how.join("; "));
    }
    if o.short_us > 0.0 && o.short_worst > o.worst {
        let _ = writeln!(
            out,
            "# Short problems: where the baseline ran under {} us, a route's box held only shapes it ran at least {}x (`--short-us`, `--short-worst`).",
            o.short_us, o.short_worst
        );
    }
    if let Some(card) = &o.card {
        let _ = writeln!(
            out,
            "# For the {card} alone (`--card {card}`): each route names the card; put them ahead of the table's shared routes, which keep serving every other GPU."
        );
    }
    if o.pooled_baseline {
        let _ = writeln!(
            out,
            "# Speedups: at each shape the median of every baseline timing there over the route's time (`--pooled-baseline`), not each route's own baseline timing."
        );
    }
    if let Some(cv) = cv {
        let _ = writeln!(
            out,
            "# Cross-validated ({} folds, each routed by the table chosen from the others): geomean {:.3}x; {} of {} shapes below 0.95x, {} incorrect, {}{} to the fallback.",
            cv.folds,
            cv.geomean,
            cv.below(),
            cv.shapes,
            cv.incorrect,
            if cv.untimed > 0 {
                format!("{} to a route not timed there, ", cv.untimed)
            } else {
                String::new()
            },
            cv.fallback
        );
        if !cv.losers.is_empty() {
            let list: Vec<String> = cv
                .losers
                .iter()
                .map(|(shape, route, x)| format!("{} ({route} {x:.3}x)", shape_text(shape)))
                .collect();
            let _ = writeln!(out, "# Below 0.95x: {}.", list.join(", "));
        }
    }
    let _ = writeln!(out, "name = \"{}\"", f.name);
    let _ = writeln!(out, "contract = \"{}\"", rel(&f.contract.path));
    if !f.domain.is_empty() {
        let _ = writeln!(out, "\n[domain]");
        for (d, (lo, hi)) in &f.domain {
            let _ = writeln!(out, "{d} = {{ min = {lo}, max = {hi} }}");
        }
    }
    for c in chosen {
        let r = &f.routes[c.candidate];
        let _ = writeln!(
            out,
            "\n# measured: {} shapes, geomean {:.3}x, worst {:.3}x",
            c.shapes, c.geomean, c.worst
        );
        match &o.card {
            Some(card) => {
                let _ = writeln!(
                    out,
                    "[[route]]\nname = \"{}\"\ncards = [\"{card}\"]",
                    card_route_name(&c.name, card)
                );
            }
            None => {
                let _ = writeln!(out, "[[route]]\nname = \"{}\"", c.name);
            }
        }
        let _ = writeln!(out, "kernel = \"{}\"", rel(&r.kernel));
        let _ = writeln!(out, "entry = \"{}\"", r.entry);
        if !r.constants.is_empty() {
            let _ = writeln!(
                out,
                "constants = {}",
                inline(&r.constants, |v| v.to_string())
            );
        }
        if r.specialize != f.contract.specialize {
            let _ = writeln!(
                out,
                "specialize = {}",
                inline(&r.specialize, |v| format!("\"{v}\""))
            );
        }
        let _ = writeln!(out, "when = {}", inline(&c.when, range_text));
    }
    let (file, func) = f.fallback.rsplit_once(':').unwrap_or((&f.fallback, ""));
    let _ = writeln!(
        out,
        "\n[fallback]\npython = \"{}:{func}\"",
        rel(Path::new(file))
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`best_box`] without its shortcuts: every box in the search's order, each judged from
    /// its shapes, the first of the best kept.
    fn every_box(
        at: &[Vec<i64>],
        axes: &[Vec<(Option<i64>, Option<i64>)>],
        open: &[usize],
        gains: &[Option<f64>],
        o: &ChooseOptions,
    ) -> Option<(f64, Vec<usize>, Bounds)> {
        let mut best: Option<(f64, usize, usize, Vec<usize>, Bounds)> = None;
        let mut idx = vec![0usize; axes.len()];
        'boxes: loop {
            let bounds: Bounds = idx.iter().enumerate().map(|(a, i)| axes[a][*i]).collect();
            let taken: Vec<usize> = open
                .iter()
                .copied()
                .filter(|k| at.iter().zip(&bounds).all(|(v, iv)| inside(iv, v[*k])))
                .collect();
            let gains: Option<Vec<f64>> = taken.iter().map(|k| gains[*k]).collect();
            if let Some(gains) = gains {
                let score: f64 = gains.iter().sum();
                let n = taken.len();
                let count: usize = bounds.iter().map(bound_count).sum();
                if n >= o.min_shapes && score / n as f64 >= o.material.ln() {
                    let better = best.as_ref().is_none_or(|(s, b, w, ..)| {
                        score > s + 1e-12
                            || ((score - s).abs() <= 1e-12
                                && (count < *b || (count == *b && n > *w)))
                    });
                    if better {
                        best = Some((score, count, n, taken, bounds));
                    }
                }
            }
            // The next box: the last axis turns fastest, as in the depth-first search.
            for a in (0..axes.len()).rev() {
                idx[a] += 1;
                if idx[a] < axes[a].len() {
                    continue 'boxes;
                }
                idx[a] = 0;
            }
            break;
        }
        best.map(|(s, _, _, taken, bounds)| (s, taken, bounds))
    }

    type Case = ((i64, i64, i64), Option<f64>, f64);

    /// One case of the property below: `best_box` against `every_box` over shapes of three
    /// dimensions and the product of the first and last.
    fn same_box(
        shapes: &[Case],
        hints: &[Vec<usize>],
        kinds: (usize, usize),
        min_shapes: usize,
        material: f64,
    ) -> Result<(), TestCaseError> {
        let at: Vec<Vec<i64>> = vec![
            shapes.iter().map(|s| s.0 .0).collect(),
            shapes.iter().map(|s| s.0 .1).collect(),
            shapes.iter().map(|s| s.0 .2).collect(),
            shapes.iter().map(|s| s.0 .0 * s.0 .2).collect(),
        ];
        let open: Vec<usize> = (0..shapes.len()).collect();
        let shape = |kind: usize, c: &[i64]| match kind {
            0 => intervals(c),
            1 => floors(c),
            _ => ceilings(c),
        };
        let axes: Vec<_> = at
            .iter()
            .enumerate()
            .map(|(a, v)| {
                let c = cuts(v);
                match a {
                    0 | 1 => intervals(&c),
                    2 => shape(kinds.0, &c),
                    _ => shape(kinds.1, &c),
                }
            })
            .collect();
        // A route below 0.9x at a shape forbids boxes holding it, as below `worst`.
        let gains: Vec<Option<f64>> = shapes
            .iter()
            .map(|s| s.1.filter(|x| *x >= 0.9).map(|x| x.ln() - s.2))
            .collect();
        let o = ChooseOptions {
            min_shapes,
            material,
            ..ChooseOptions::default()
        };
        let hints: Vec<Bounds> = hints
            .iter()
            .map(|h| {
                h.iter()
                    .zip(&axes)
                    .map(|(i, ivs)| ivs[i % ivs.len()])
                    .collect()
            })
            .collect();
        let fast = best_box(&at, &axes, &open, &gains, &o, &hints);
        let slow = every_box(&at, &axes, &open, &gains, &o);
        prop_assert_eq!(fast.is_some(), slow.is_some());
        if let (Some(f), Some(s)) = (fast, slow) {
            prop_assert!((f.0 - s.0).abs() < 1e-9, "score {} against {}", f.0, s.0);
            prop_assert_eq!(f.1, s.1);
            prop_assert_eq!(f.2, s.2);
        }
        Ok(())
    }

    /// Found by the property on CI: two single-bound boxes (the first axis from 2, the product
    /// from 2) hold the same shape at the same score; the search of every box meets the
    /// product's first.
    #[test]
    fn a_tie_goes_to_the_box_met_first() {
        let shapes = [
            ((1, 1, 1), Some(0.9070180168574941), 0.0),
            ((2, 1, 1), Some(1.02), 0.0),
            ((1, 1, 1), None, 0.0),
        ];
        same_box(&shapes, &[], (0, 0), 1, 1.02).unwrap();
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// The search's shortcuts (branch and bound from hinted boxes, twins, the last axis
        /// judged at once) find the box a search of every box finds, tie-breaks included.
        #[test]
        fn the_box_search_finds_what_a_search_of_every_box_finds(
            shapes in prop::collection::vec(
                (
                    (1i64..7, 1i64..7, 1i64..7),
                    // Exact ties, and gains at the `material` bar, as well as any gain.
                    prop::option::weighted(0.9, prop_oneof![
                        0.5f64..2.0,
                        prop::sample::select(vec![0.95, 1.0, 1.02, 1.05, 1.1, 1.2]),
                    ]),
                    prop::sample::select(vec![0.0, 0.0, 0.1, -0.2, 0.4]),
                ),
                1..40,
            ),
            hints in prop::collection::vec(prop::collection::vec(0usize..200, 4), 0..3),
            kinds in (0usize..3, 0usize..3),
            min_shapes in 1usize..4,
            material in prop::sample::select(vec![1.0, 1.02, 1.1]),
        ) {
            same_box(&shapes, &hints, kinds, min_shapes, material)?;
        }
    }
}
