//! Families (docs/dispatch.md): one contract's shape domain served by ordered routes, each a
//! Cake schedule with a guard over the shape, and an explicit fallback for the shapes no route
//! takes. A family is data (`<family>.family.toml`): the guards are ranges and value sets over
//! the contract's dimensions (and ranges over their products), so Rust and Python evaluate them
//! alike and coverage is computed from the guards' edges, and the shape sampler that builds and
//! judges families draws from the same domain.

pub mod accuracy;
pub mod choose;
pub mod measure;
pub mod report;

use crate::contract::{line_col_of, resolve_function, Contract, ContractError, Errors, Shape};
pub use cake_target::{card_is, is_card_word};
use indexmap::IndexMap;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamily {
    name: Option<String>,
    contract: Option<String>,
    /// Another family file whose name, contract, routes and fallback this one takes, over a
    /// narrower `[domain]`: the measurement of a corner of that family, without a copy of its
    /// routes that could drift from them.
    narrows: Option<String>,
    /// With `narrows`: the routes to keep, by name (default: all of them).
    routes: Option<Vec<String>>,
    /// Narrows the contract's dimensions to the domain this family serves.
    #[serde(default)]
    domain: IndexMap<String, RawBounds>,
    #[serde(default)]
    route: Vec<RawRoute>,
    fallback: Option<RawFallback>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    name: String,
    kernel: Option<String>,
    entry: Option<String>,
    /// The route schedule's compile-time constants, each set from a dimension of the shape
    /// (default: the contract's `[specialize]`).
    specialize: Option<IndexMap<String, String>>,
    /// Module constants of the schedule set to fixed values: one schedule, several routes.
    #[serde(default)]
    constants: IndexMap<String, i64>,
    #[serde(default)]
    when: IndexMap<String, Range>,
    /// The GPUs the route serves, each a word of the GPU's name (`H100`, `H200`); default:
    /// every GPU of the target.
    cards: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBounds {
    min: Option<i64>,
    max: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFallback {
    python: String,
}

/// What a guard asks of one dimension: a closed range, a set of values, or both.
#[derive(Deserialize, serde::Serialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Range {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<i64>,
    #[serde(rename = "in", skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<i64>>,
    /// The value must be a multiple of this (a schedule whose copies need aligned rows).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiple_of: Option<i64>,
}

impl Range {
    pub fn holds(&self, v: i64) -> bool {
        self.min.is_none_or(|m| v >= m)
            && self.max.is_none_or(|m| v <= m)
            && self.values.as_ref().is_none_or(|s| s.contains(&v))
            && self.multiple_of.is_none_or(|m| m > 0 && v % m == 0)
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Route {
    pub name: String,
    /// The route's schedule, absolute (default: the contract's kernel).
    pub kernel: PathBuf,
    pub entry: String,
    /// Schedule constant → the dimension whose value it takes (the route's `specialize`, else
    /// the contract's).
    pub specialize: IndexMap<String, String>,
    /// Module constants set to fixed values before specialization.
    pub constants: IndexMap<String, i64>,
    /// Per dimension, what the shape must satisfy; a dimension not named is unconstrained.
    pub when: IndexMap<String, Range>,
    /// The GPUs the route serves, each a word of the GPU's name as the driver reports it
    /// (`H100` serves "NVIDIA H100 80GB HBM3"); empty: every GPU.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cards: Vec<String>,
}

/// Narrows the contract's dimensions to a family's `[domain]` (which must lie inside them):
/// dimension → the (min, max) it now spans.
fn narrow_domain(
    contract: &mut Contract,
    raw: &IndexMap<String, RawBounds>,
    errs: &mut Errors,
) -> IndexMap<String, (i64, i64)> {
    let mut domain = IndexMap::new();
    for (d, b) in raw {
        let key = format!("domain.{d}");
        let Some(dim) = contract.dims.iter_mut().find(|x| &x.name == d) else {
            errs.push(
                key,
                format!("`{d}` is not a dimension of the contract"),
                None,
            );
            continue;
        };
        let (lo, hi) = (b.min.unwrap_or(dim.min), b.max.unwrap_or(dim.max));
        if lo < dim.min || hi > dim.max || lo > hi {
            errs.push(
                key,
                format!(
                    "the family's domain must lie inside the contract's ({}..={}), got {lo}..={hi}",
                    dim.min, dim.max
                ),
                None,
            );
            continue;
        }
        (dim.min, dim.max) = (lo, hi);
        if let Some(v) = dim.values.as_mut() {
            v.retain(|x| (lo..=hi).contains(x));
        }
        domain.insert(d.clone(), (lo, hi));
    }
    domain
}

/// The value a guard's key names at `shape`: a dimension (`N`), or a product of dimensions
/// (`B*N`), which tells a small problem from a large one where ranges per dimension cannot.
/// `None` if the shape lacks a factor.
pub fn guard_value(key: &str, shape: &Shape) -> Option<i64> {
    key.split('*').try_fold(1i64, |p, d| {
        shape.get(d.trim()).map(|v| p.saturating_mul(*v))
    })
}

/// The dimensions a guard key multiplies (one for a plain dimension).
pub fn guard_factors(key: &str) -> impl Iterator<Item = &str> {
    key.split('*').map(str::trim)
}

/// Whether a guard (per dimension or product of dimensions, what the shape must satisfy)
/// admits the shape; a dimension the guard does not name is unconstrained.
pub fn guard_admits(when: &IndexMap<String, Range>, shape: &Shape) -> bool {
    when.iter()
        .all(|(k, r)| guard_value(k, shape).is_some_and(|v| r.holds(v)))
}

impl Route {
    pub fn admits(&self, shape: &Shape) -> bool {
        guard_admits(&self.when, shape)
    }

    /// Whether the route serves the GPU named `gpu` (`None`: a GPU not known, which only the
    /// routes naming no card serve).
    pub fn serves(&self, gpu: Option<&str>) -> bool {
        self.cards.is_empty() || gpu.is_some_and(|g| self.cards.iter().any(|c| card_is(c, g)))
    }
}

#[derive(Clone, Debug)]
pub struct Family {
    pub path: PathBuf,
    pub name: String,
    /// The contract, its dimensions narrowed to the family's `[domain]`.
    pub contract: Contract,
    /// The family's `[domain]` as narrowed: dimension → (min, max).
    pub domain: IndexMap<String, (i64, i64)>,
    /// In order: the first route whose guard holds takes the shape.
    pub routes: Vec<Route>,
    /// `/abs/file.py:fn`, called like the kernel, for the shapes no route takes.
    pub fallback: String,
}

impl Family {
    pub fn load(path: &Path) -> Result<Family, Vec<ContractError>> {
        let err = |line_col, message: String| {
            vec![ContractError {
                file: path.to_path_buf(),
                line_col,
                key: None,
                message,
                help: None,
            }]
        };
        let bytes =
            std::fs::read(path).map_err(|e| err(None, format!("cannot read the family: {e}")))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let raw: RawFamily = toml::from_str(&text).map_err(|e| {
            err(
                e.span().map(|s| line_col_of(&text, s.start)),
                e.message().to_string(),
            )
        })?;
        let dir = path
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        if let Some(narrowed) = &raw.narrows {
            return Self::load_narrowing(path, &text, &dir.join(narrowed), &raw);
        }
        let mut errs = Errors {
            file: path,
            text: &text,
            list: Vec::new(),
        };
        let (Some(name), Some(contract_file), Some(fallback)) = (
            raw.name.clone(),
            raw.contract.clone(),
            raw.fallback.as_ref(),
        ) else {
            for (key, given) in [
                ("name", raw.name.is_some()),
                ("contract", raw.contract.is_some()),
                ("fallback", raw.fallback.is_some()),
            ] {
                if !given {
                    errs.push(
                        key,
                        format!("a family needs `{key}`"),
                        Some("or `narrows = \"<family file>\"` to take another family's".into()),
                    );
                }
            }
            return Err(errs.list);
        };
        if raw.routes.is_some() {
            errs.push(
                "routes",
                "`routes` picks routes of the family a file `narrows`; this one narrows none",
                Some("list the routes as [[route]] tables".into()),
            );
        }
        let mut contract = Contract::load(&dir.join(&contract_file))?;
        let domain = narrow_domain(&mut contract, &raw.domain, &mut errs);
        if raw.route.is_empty() {
            errs.push(
                "route",
                "a family needs at least one route",
                Some("add a [[route]] table".into()),
            );
        }
        let mut routes = Vec::new();
        for (i, r) in raw.route.into_iter().enumerate() {
            let key = format!("route[{i}]");
            let mut push = |field: &str, word: &str, message: String, help: Option<String>| {
                errs.list.push(ContractError {
                    file: path.to_path_buf(),
                    line_col: route_line(&text, i, word),
                    key: Some(format!("{key}.{field}")),
                    message,
                    help,
                });
            };
            if routes.iter().any(|x: &Route| x.name == r.name) {
                push(
                    "name",
                    "name",
                    format!("two routes are named `{}`", r.name),
                    None,
                );
            }
            for (d, range) in &r.when {
                if d.contains('*') {
                    check_product_guard(&contract, d, range, &mut push);
                    continue;
                }
                let Some(dim) = contract.dims.iter().find(|x| &x.name == d) else {
                    let names: Vec<&str> = contract.dims.iter().map(|x| x.name.as_str()).collect();
                    push(
                        &format!("when.{d}"),
                        "when",
                        format!("`{d}` is not a dimension of the contract"),
                        Some(format!("dimensions are {}", names.join(", "))),
                    );
                    continue;
                };
                if range.multiple_of.is_some_and(|m| m <= 0) {
                    push(
                        &format!("when.{d}.multiple_of"),
                        "when",
                        "`multiple_of` must be a positive integer".into(),
                        None,
                    );
                    continue;
                }
                let empty = match (range.min, range.max) {
                    (Some(a), Some(b)) => a > b,
                    _ => false,
                } || range
                    .values
                    .as_ref()
                    .is_some_and(|v| !v.iter().any(|x| dim.contains(*x) && range.holds(*x)));
                if empty
                    || range.max.is_some_and(|m| m < dim.min)
                    || range.min.is_some_and(|m| m > dim.max)
                {
                    push(
                        &format!("when.{d}"),
                        "when",
                        format!("no value of `{d}` in the contract's domain ({}..={}) satisfies this guard", dim.min, dim.max),
                        None,
                    );
                }
            }
            if let Some(cards) = &r.cards {
                let bad = cards.iter().find(|c| !is_card_word(c));
                if cards.is_empty() || bad.is_some() {
                    push(
                        "cards",
                        "cards",
                        match bad {
                            Some(c) => format!("`{c}` is not one word of a GPU's name"),
                            None => "`cards` names no GPU".into(),
                        },
                        Some(
                            "a card is a word of the name the driver reports, e.g. \
                             cards = [\"H100\"] for \"NVIDIA H100 80GB HBM3\"; leave `cards` \
                             out to serve every GPU"
                                .into(),
                        ),
                    );
                }
            }
            let kernel = match &r.kernel {
                Some(k) => dir.join(k),
                None => contract.kernel.clone(),
            };
            if !kernel.is_file() {
                push(
                    "kernel",
                    "kernel",
                    format!("{} does not exist", kernel.display()),
                    Some("paths are relative to the family file".into()),
                );
            }
            for (constant, d) in r.specialize.iter().flatten() {
                if !contract.dims.iter().any(|x| &x.name == d) {
                    push(
                        &format!("specialize.{constant}"),
                        "specialize",
                        format!("`{d}` is not a dimension of the contract"),
                        None,
                    );
                }
            }
            // Every constant the route sets must be a module-level integer of its schedule.
            let names: Vec<&String> = r
                .constants
                .keys()
                .chain(r.specialize.iter().flat_map(|m| m.keys()))
                .collect();
            if let (false, Ok(bytes)) = (names.is_empty(), cake_driver::read_schedule(&kernel)) {
                let text = String::from_utf8_lossy(&bytes);
                let constants = cake_mutate::knobs::constants(&text);
                if let Err(m) = cake_mutate::knobs::set(
                    &text,
                    &constants,
                    names.iter().map(|n| (n.as_str(), 0)),
                ) {
                    let field = if r.constants.contains_key(&m.name) {
                        "constants"
                    } else {
                        "specialize"
                    };
                    push(
                        &format!("{field}.{}", m.name),
                        field,
                        format!(
                            "{} has no module-level integer constant `{}`",
                            kernel.display(),
                            m.name
                        ),
                        Some(format!("its constants are {}", m.available_text())),
                    );
                }
            }
            routes.push(Route {
                name: r.name,
                kernel,
                entry: r.entry.unwrap_or_else(|| contract.entry.clone()),
                specialize: r.specialize.unwrap_or_else(|| contract.specialize.clone()),
                constants: r.constants,
                when: r.when,
                cards: r.cards.unwrap_or_default(),
            });
        }
        let fallback = resolve_function(&fallback.python, None, &dir, "fallback.python", &mut errs);
        if !errs.list.is_empty() {
            return Err(errs.list);
        }
        Ok(Family {
            path: path.to_path_buf(),
            name,
            contract,
            domain,
            routes,
            fallback,
        })
    }

    /// A family file that `narrows` another (`narrowed`): that family, its domain narrowed
    /// further by this file's `[domain]` and its routes cut to this file's `routes`.
    fn load_narrowing(
        path: &Path,
        text: &str,
        narrowed: &Path,
        raw: &RawFamily,
    ) -> Result<Family, Vec<ContractError>> {
        let mut errs = Errors {
            file: path,
            text,
            list: Vec::new(),
        };
        for (key, given) in [
            ("name", raw.name.is_some()),
            ("contract", raw.contract.is_some()),
            ("route", !raw.route.is_empty()),
            ("fallback", raw.fallback.is_some()),
        ] {
            if given {
                errs.push(
                    key,
                    format!("a family that narrows another takes its `{key}` from it"),
                    Some("remove it, or drop `narrows`".into()),
                );
            }
        }
        let mut family = match Family::load(narrowed) {
            Ok(f) => f,
            Err(inner) => {
                errs.push(
                    "narrows",
                    format!(
                        "the family it narrows, {}, does not load ({} error(s), the first: {})",
                        narrowed.display(),
                        inner.len(),
                        inner.first().map_or("", |e| e.message.as_str())
                    ),
                    None,
                );
                return Err(errs.list);
            }
        };
        let narrower = narrow_domain(&mut family.contract, &raw.domain, &mut errs);
        family.domain.extend(narrower);
        if let Some(keep) = &raw.routes {
            for name in keep {
                if !family.routes.iter().any(|r| &r.name == name) {
                    let names: Vec<&str> = family.routes.iter().map(|r| r.name.as_str()).collect();
                    errs.push(
                        "routes",
                        format!("`{name}` is not a route of {}", narrowed.display()),
                        Some(format!("its routes are {}", names.join(", "))),
                    );
                }
            }
            family.routes.retain(|r| keep.contains(&r.name));
        }
        if family.routes.is_empty() {
            errs.push("routes", "a family needs at least one route", None);
        }
        if !errs.list.is_empty() {
            return Err(errs.list);
        }
        family.path = path.to_path_buf();
        Ok(family)
    }

    /// The contract as route `i` runs it: the route's schedule, entry and specialization.
    pub fn route_contract(&self, i: usize) -> Contract {
        let r = &self.routes[i];
        let mut c = self.contract.clone();
        c.kernel = r.kernel.clone();
        c.entry = r.entry.clone();
        c.specialize = r.specialize.clone();
        c.constants = r.constants.clone();
        c
    }

    /// The route that takes `shape` on the GPU named `gpu` (the first that serves that GPU and
    /// whose guard holds), or `None`: the fallback. `gpu: None` is a GPU no route names.
    pub fn route_of(&self, shape: &Shape, gpu: Option<&str>) -> Option<usize> {
        self.routes
            .iter()
            .position(|r| r.serves(gpu) && r.admits(shape))
    }

    /// The cards the routes name, each once, in the order they first appear: the GPUs this
    /// family routes differently (every other GPU takes the routes that name none).
    pub fn cards(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for c in self.routes.iter().flat_map(|r| &r.cards) {
            if !out.iter().any(|o| o.eq_ignore_ascii_case(c)) {
                out.push(c);
            }
        }
        out
    }

    /// Every GPU the family routes differently, as `route_of` takes them: each card the routes
    /// name, then `None` (any other GPU).
    pub fn gpu_views(&self) -> Vec<Option<&str>> {
        self.cards().into_iter().map(Some).chain([None]).collect()
    }

    /// The edge grid's axes, one per dimension in the contract's order: the domain's edges and
    /// the guards' edges on both sides, snapped to values the domain admits. Guards are ranges
    /// and value sets, so between two consecutive edges every shape goes the same way, and the
    /// grid's points decide coverage exactly; a guard's `multiple_of` adds, next to each edge, a
    /// multiple and a value that is not one. A guard over a product adds its crossings (see the
    /// loop below), which sample its curved edge rather than decide it.
    fn edge_axes(&self) -> Vec<(String, Vec<i64>)> {
        let mut axes: Vec<(String, Vec<i64>)> = Vec::new();
        for dim in &self.contract.dims {
            let mut cuts = vec![dim.min, dim.max];
            for r in &self.routes {
                if let Some(g) = r.when.get(&dim.name) {
                    for v in [g.min, g.max].into_iter().flatten() {
                        cuts.extend([v.saturating_sub(1), v, v.saturating_add(1)]);
                    }
                    for v in g.values.iter().flatten() {
                        cuts.extend([v.saturating_sub(1), *v, v.saturating_add(1)]);
                    }
                }
            }
            let steps: Vec<i64> = self
                .routes
                .iter()
                .filter_map(|r| r.when.get(&dim.name).and_then(|g| g.multiple_of))
                .filter(|m| *m > 1)
                .collect();
            for m in steps {
                let at: Vec<i64> = cuts.clone();
                for v in at {
                    let up = v.div_euclid(m).saturating_add(1).saturating_mul(m);
                    cuts.extend([up, up.saturating_add(1)]);
                }
            }
            let mut vals: Vec<i64> = cuts.into_iter().filter_map(|v| snap(dim, v)).collect();
            vals.sort();
            vals.dedup();
            axes.push((dim.name.clone(), vals));
        }
        // A guard over a product (`B*N`) is no range of one dimension: its last factor gets the
        // values at which the product crosses each bound, for every value the other factors
        // take, so both sides of the bound are seen wherever they are.
        for r in &self.routes {
            for (key, g) in r.when.iter().filter(|(k, _)| k.contains('*')) {
                let factors: Vec<&str> = guard_factors(key).collect();
                let (last, rest) = factors.split_last().expect("a product has factors");
                let mut qs = vec![1i64];
                for f in rest {
                    let Some((_, vals)) = axes.iter().find(|(n, _)| n == f) else {
                        continue;
                    };
                    qs = qs
                        .iter()
                        .flat_map(|q| vals.iter().map(move |v| q.saturating_mul(*v)))
                        .collect();
                    qs.sort();
                    qs.dedup();
                }
                let Some(dim) = self.contract.dims.iter().find(|d| d.name == *last) else {
                    continue;
                };
                let mut extra = Vec::new();
                for bound in [g.min, g.max.map(|m| m.saturating_add(1))]
                    .into_iter()
                    .flatten()
                {
                    // The smallest value of `last` at which the product reaches `bound`, and the
                    // one below it. Three or more factors give a crossing per combination of
                    // the others: a sample of them (evenly over the sorted values) keeps the
                    // grid bounded.
                    let mut at: Vec<i64> = qs
                        .iter()
                        .filter(|q| **q > 0)
                        .map(|q| bound.saturating_add(q - 1).div_euclid(*q))
                        .collect();
                    at.sort();
                    at.dedup();
                    if at.len() > PRODUCT_CROSSINGS {
                        at = (0..PRODUCT_CROSSINGS)
                            .map(|i| at[i * (at.len() - 1) / (PRODUCT_CROSSINGS - 1)])
                            .collect();
                    }
                    for v in at {
                        extra.extend(snap(dim, v));
                        extra.extend(snap_below(dim, v - 1));
                    }
                }
                let axis = &mut axes
                    .iter_mut()
                    .find(|(n, _)| n == last)
                    .expect("a dimension")
                    .1;
                axis.extend(extra);
                axis.sort();
                axis.dedup();
            }
        }
        axes
    }

    /// Every region of the domain, one point each: the points of the edge grid (see
    /// `edge_axes`), the first dimension varying slowest, less those past a `[limits]` product.
    pub fn edge_points(&self) -> Result<Vec<Shape>, String> {
        let axes = self.edge_axes();
        check_grid_size(&axes, EDGE_POINTS_LOG2)?;
        let mut out = vec![Shape::new()];
        for (name, vals) in &axes {
            out = out
                .into_iter()
                .flat_map(|s| {
                    vals.iter().map(move |v| {
                        let mut s = s.clone();
                        s.insert(name.clone(), *v);
                        s
                    })
                })
                .collect();
        }
        // Points past a [limits] product, or off a multiple between dimensions, are not in the
        // domain.
        out.retain(|p| self.contract.relations_hold(|d| p.get(d).copied()));
        Ok(out)
    }

    /// [`Family::validate_on`] for every GPU the family routes differently: each card its
    /// routes name, then every other GPU (`card: None`), one view each; and the routes that take
    /// no region on any GPU they serve.
    pub fn validate(&self) -> Result<Validations, String> {
        let axes = self.edge_axes();
        check_grid_size(&axes, VALIDATE_POINTS_LOG2)?;
        let views: Vec<CardValidation> = self
            .gpu_views()
            .into_iter()
            .map(|card| CardValidation {
                card: card.map(str::to_string),
                validation: self.validate_grid(&axes, card),
            })
            .collect();
        let unreachable = self
            .routes
            .iter()
            .enumerate()
            .filter(|(i, _)| views.iter().all(|v| v.validation.by_route[*i] == 0))
            .map(|(_, r)| r.name.clone())
            .collect();
        Ok(Validations { views, unreachable })
    }

    /// On the GPU named `gpu` (`None`: one no route names), which route takes each region of
    /// the domain, which regions only the fallback takes, where guards overlap (the earlier
    /// route wins), and the routes serving that GPU that no shape reaches.
    ///
    /// The regions are `edge_points`, walked in its order without building them (tables of
    /// several routes cut the domain into millions of regions).
    pub fn validate_on(&self, gpu: Option<&str>) -> Result<Validation, String> {
        let axes = self.edge_axes();
        check_grid_size(&axes, VALIDATE_POINTS_LOG2)?;
        Ok(self.validate_grid(&axes, gpu))
    }

    /// [`Family::validate_on`] over the edge grid `axes` (its size already checked).
    fn validate_grid(&self, axes: &[(String, Vec<i64>)], gpu: Option<&str>) -> Validation {
        let mut guards = GridGuards::new(&self.routes, axes);
        for (i, r) in self.routes.iter().enumerate() {
            if !r.serves(gpu) {
                guards.possible[i / 64] &= !(1u64 << (i % 64));
            }
        }

        let shape_at = |point: &[i64]| -> Shape {
            axes.iter()
                .zip(point)
                .map(|((name, _), v)| (name.clone(), *v))
                .collect()
        };
        let mut v = Validation {
            by_route: vec![0; self.routes.len()],
            ..Validation::default()
        };
        let words = guards.words;
        let mut odometer = Odometer::new(axes);
        let mut point: Vec<i64> = vec![0; axes.len()];
        // `along[k]`: the routes that the values of the first `k` axes admit, kept per axis so
        // that a step recomputes only the axes it moved (mostly the last).
        let mut along = vec![0u64; (axes.len() + 1) * words];
        along[..words].copy_from_slice(&guards.possible);
        let mut admitting = vec![0u64; words];
        while let Some(moved) = odometer.step() {
            for (k, &i) in odometer.index.iter().enumerate().skip(moved) {
                point[k] = axes[k].1[i];
                let (before, after) = along.split_at_mut((k + 1) * words);
                let admits_value = &guards.by_value[k][i * words..][..words];
                for ((out, prior), here) in after[..words]
                    .iter_mut()
                    .zip(&before[k * words..])
                    .zip(admits_value)
                {
                    *out = prior & here;
                }
            }
            // Points past a [limits] product, or off a multiple between dimensions, are not in
            // the domain.
            let value_of = |d: &str| axes.iter().position(|(n, _)| n == d).map(|a| point[a]);
            if !self.contract.relations_hold(value_of) {
                continue;
            }
            v.regions += 1;
            guards.admitting(&along[axes.len() * words..], &point, &mut admitting);
            match members(&admitting).next() {
                Some(i) => v.by_route[i] += 1,
                None => {
                    v.fallback_regions += 1;
                    if v.fallback_examples.len() < 5 {
                        v.fallback_examples.push(shape_at(&point));
                    }
                }
            }
            if v.overlaps.len() < 5 && admitting.iter().map(|w| w.count_ones()).sum::<u32>() > 1 {
                v.overlaps.push(Overlap {
                    routes: members(&admitting)
                        .map(|i| self.routes[i].name.clone())
                        .collect(),
                    shape: shape_at(&point),
                });
            }
        }
        v.unreachable = self
            .routes
            .iter()
            .zip(&v.by_route)
            .filter(|(r, n)| **n == 0 && r.serves(gpu))
            .map(|(r, _)| r.name.clone())
            .collect();
        v
    }
}

/// Refuses a grid of `axes` of more than 2^`log2` points, naming the axes' sizes (which
/// dimensions the guards cut finest).
fn check_grid_size(axes: &[(String, Vec<i64>)], log2: u32) -> Result<(), String> {
    let count = axes
        .iter()
        .try_fold(1usize, |a, (_, v)| a.checked_mul(v.len()));
    match count {
        Some(n) if n <= 1 << log2 => Ok(()),
        _ => {
            let sizes: Vec<String> = axes
                .iter()
                .map(|(n, v)| format!("{n} {}", v.len()))
                .collect();
            Err(format!(
                "the guards cut the domain into more than 2^{log2} regions ({})",
                sizes.join(" × ")
            ))
        }
    }
}

/// The points of a grid, as indices into its axes, in `edge_points`' order: the last axis
/// fastest.
struct Odometer {
    lens: Vec<usize>,
    index: Vec<usize>,
    started: bool,
}

impl Odometer {
    fn new(axes: &[(String, Vec<i64>)]) -> Odometer {
        Odometer {
            lens: axes.iter().map(|(_, v)| v.len()).collect(),
            index: vec![0; axes.len()],
            started: false,
        }
    }

    /// Moves to the next point: the first axis whose index changed (every one, 0, at the
    /// first point), or `None` past the last point. An empty axis makes an empty grid.
    fn step(&mut self) -> Option<usize> {
        if !self.started {
            self.started = true;
            return self.lens.iter().all(|n| *n > 0).then_some(0);
        }
        for axis in (0..self.index.len()).rev() {
            self.index[axis] += 1;
            if self.index[axis] < self.lens[axis] {
                return Some(axis);
            }
            self.index[axis] = 0;
        }
        None
    }
}

/// The routes' guards over an edge grid, as sets of routes (route `i` is bit `i % 64` of word
/// `i / 64`), computed once so that walking millions of points looks nothing up by name: per
/// axis and value, the routes whose guards on that dimension alone admit the value; a point's
/// admitting routes are the intersection over its axes, less those whose guards over products
/// fail there.
struct GridGuards<'a> {
    words: usize,
    /// Routes whose guards name only dimensions of the grid (`guard_value` finds no value for
    /// another, and the guard admits nothing).
    possible: Vec<u64>,
    /// Per axis, `words` words per value, in the axis' order.
    by_value: Vec<Vec<u64>>,
    /// Guards over products: the route, the axis of each factor, the range.
    products: Vec<(usize, Vec<usize>, &'a Range)>,
}

impl<'a> GridGuards<'a> {
    fn new(routes: &'a [Route], axes: &[(String, Vec<i64>)]) -> GridGuards<'a> {
        let words = routes.len().div_ceil(64);
        let axis_of = |name: &str| axes.iter().position(|(n, _)| n == name);
        let mut possible = vec![0u64; words];
        let mut by_value: Vec<Vec<u64>> = axes
            .iter()
            .map(|(_, vals)| vec![0; vals.len() * words])
            .collect();
        let mut products = Vec::new();
        for (route, r) in routes.iter().enumerate() {
            let (word, bit) = (route / 64, 1u64 << (route % 64));
            // Per axis, whether every guard on that dimension alone admits each value.
            let mut admits: Vec<Vec<bool>> = axes
                .iter()
                .map(|(_, vals)| vec![true; vals.len()])
                .collect();
            let mut reachable = true;
            for (key, range) in &r.when {
                let Some(factors) = guard_factors(key)
                    .map(axis_of)
                    .collect::<Option<Vec<usize>>>()
                else {
                    reachable = false;
                    continue;
                };
                match factors[..] {
                    [axis] => {
                        for (ok, value) in admits[axis].iter_mut().zip(&axes[axis].1) {
                            *ok &= range.holds(*value);
                        }
                    }
                    _ => products.push((route, factors, range)),
                }
            }
            if reachable {
                possible[word] |= bit;
            }
            for (axis, ok) in admits.iter().enumerate() {
                for (i, _) in ok.iter().enumerate().filter(|(_, ok)| **ok) {
                    by_value[axis][i * words + word] |= bit;
                }
            }
        }
        GridGuards {
            words,
            possible,
            by_value,
            products,
        }
    }

    /// Into `out`, the routes that admit `point` (values in the axes' order), given
    /// `along_axes`: the routes that its values admit one dimension at a time.
    fn admitting(&self, along_axes: &[u64], point: &[i64], out: &mut [u64]) {
        out.copy_from_slice(along_axes);
        for (route, factors, range) in &self.products {
            let (word, bit) = (route / 64, 1u64 << (route % 64));
            if out[word] & bit == 0 {
                continue;
            }
            // As `guard_value`: the product saturates.
            let product = factors
                .iter()
                .fold(1i64, |p, axis| p.saturating_mul(point[*axis]));
            if !range.holds(product) {
                out[word] &= !bit;
            }
        }
    }
}

/// The routes in a set of `GridGuards`, in route order.
fn members(set: &[u64]) -> impl Iterator<Item = usize> + '_ {
    set.iter().enumerate().flat_map(|(word, &bits)| {
        std::iter::successors(Some(bits).filter(|b| *b != 0), |b| {
            Some(b & (b - 1)).filter(|b| *b != 0)
        })
        .map(move |b| word * 64 + b.trailing_zeros() as usize)
    })
}

/// A guard over a product of dimensions (`"B*N"`): every factor a dimension of the contract,
/// only `min` and `max` (a value set or a step over a product says nothing useful), and some
/// product in the domain satisfying it.
fn check_product_guard(
    contract: &Contract,
    key: &str,
    range: &Range,
    push: &mut impl FnMut(&str, &str, String, Option<String>),
) {
    let field = format!("when.{key}");
    let (mut lo, mut hi) = (1i64, 1i64);
    for f in guard_factors(key) {
        let Some(dim) = contract.dims.iter().find(|x| x.name == f) else {
            let names: Vec<&str> = contract.dims.iter().map(|x| x.name.as_str()).collect();
            push(
                &field,
                "when",
                format!("`{f}` in `{key}` is not a dimension of the contract"),
                Some(format!("dimensions are {}", names.join(", "))),
            );
            return;
        };
        lo = lo.saturating_mul(dim.min);
        hi = hi.saturating_mul(dim.max);
    }
    if range.values.is_some() || range.multiple_of.is_some() {
        push(
            &field,
            "when",
            format!("a guard over the product `{key}` takes only `min` and `max`"),
            None,
        );
    } else if range.min.zip(range.max).is_some_and(|(a, b)| a > b)
        || range.max.is_some_and(|m| m < lo)
        || range.min.is_some_and(|m| m > hi)
    {
        push(
            &field,
            "when",
            format!(
                "no value of `{key}` in the contract's domain ({lo}..={hi}) satisfies this guard"
            ),
            None,
        );
    }
}

/// Where `[[route]]` number `i` (0-based) writes `word = ...`, else its header: 1-based line and
/// column.
fn route_line(text: &str, i: usize, word: &str) -> Option<(usize, usize)> {
    let mut seen = 0;
    let mut header = None;
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("[[route]]") {
            if header.is_some() {
                break;
            }
            if seen == i {
                header = Some((n + 1, line.len() - t.len() + 1));
            }
            seen += 1;
        } else if t.starts_with('[') && header.is_some() {
            break;
        } else if header.is_some()
            && t.starts_with(word)
            && t[word.len()..].trim_start().starts_with('=')
        {
            return Some((n + 1, line.len() - t.len() + 1));
        }
    }
    header
}

/// The nearest value of `dim`'s domain at or above `v` (below, past the top); `None` when
/// the domain is empty there.
fn snap(dim: &crate::contract::Dim, v: i64) -> Option<i64> {
    if let Some(vals) = &dim.values {
        let v = v.clamp(dim.min, dim.max);
        return vals
            .iter()
            .copied()
            .find(|x| *x >= v && dim.contains(*x))
            .or_else(|| vals.iter().rev().copied().find(|x| dim.contains(*x)));
    }
    let m = dim.multiple_of.max(1);
    let v = v.clamp(dim.min, dim.max);
    let up = v.checked_add(m - 1)? / m * m;
    let down = v / m * m;
    [up, down].into_iter().find(|x| dim.contains(*x))
}

/// The nearest value of `dim`'s domain at or below `v`; `None` when there is none.
fn snap_below(dim: &crate::contract::Dim, v: i64) -> Option<i64> {
    if v < dim.min {
        return None;
    }
    let v = v.min(dim.max);
    if let Some(vals) = &dim.values {
        return vals
            .iter()
            .copied()
            .filter(|x| *x <= v && dim.contains(*x))
            .max();
    }
    let m = dim.multiple_of.max(1);
    Some(v.div_euclid(m) * m).filter(|x| dim.contains(*x))
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Validation {
    /// Regions of the domain (points of the edge grid).
    pub regions: usize,
    /// Regions each route takes, in route order.
    pub by_route: Vec<usize>,
    pub fallback_regions: usize,
    pub fallback_examples: Vec<Shape>,
    /// Shapes two or more guards admit: the first route listed takes them.
    pub overlaps: Vec<Overlap>,
    /// Routes no region reaches (an earlier route or its own guard shadows it).
    pub unreachable: Vec<String>,
}

/// A family's validation on every GPU it routes differently (`Family::validate`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Validations {
    /// One per card the routes name, then every other GPU's.
    pub views: Vec<CardValidation>,
    /// Routes that take no region on any GPU they serve: an error.
    pub unreachable: Vec<String>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct CardValidation {
    /// The card, or `None`: every GPU no route names.
    pub card: Option<String>,
    #[serde(flatten)]
    pub validation: Validation,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Overlap {
    pub routes: Vec<String>,
    pub shape: Shape,
}

/// Which shard of the domain to draw: shapes that choose routes, their boundaries, shapes kept
/// out of every choice and used only to judge, or the contract's own `bench` shapes (where an
/// issue states its targets; they judge, and never choose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shard {
    Representative,
    Boundary,
    HeldOut,
    Bench,
}

impl Shard {
    const NAMES: [(Shard, &'static str); 4] = [
        (Shard::Representative, "representative"),
        (Shard::Boundary, "boundary"),
        (Shard::HeldOut, "held_out"),
        (Shard::Bench, "bench"),
    ];

    pub fn parse(s: &str) -> Option<Shard> {
        Self::NAMES.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
    }

    /// The name `parse` reads and records carry.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("", |(_, n)| n)
    }
}

/// `n` shapes of the contract's domain, deterministic in `seed`: each dimension log-uniform
/// over its range (small and large extents alike), snapped to the domain. The held-out and
/// boundary shards are other streams, whose starting states are the seed hashed with the shard
/// (equal shapes can still occur by chance in a small domain). The boundary shard is each
/// dimension at its minimum, its maximum and just off a multiple of 128 (a tail), the other
/// dimensions drawn as above.
///
/// The bench shard is the contract's `bench` shapes in the file's order (`n` and `seed` do not
/// apply), less any outside the domain (a family's `[domain]` may narrow it).
pub fn sample(contract: &Contract, shard: Shard, n: usize, seed: u64) -> Vec<Shape> {
    if shard == Shard::Bench {
        return contract
            .shapes
            .get("bench")
            .map(|b| b.iter().filter(|s| contract.admits(s)).cloned().collect())
            .unwrap_or_default();
    }
    let mut rng = SplitMix(stream_state(shard, seed));
    let draw = |rng: &mut SplitMix, d: &crate::contract::Dim| -> i64 {
        // A set of options: each equally likely.
        if let Some(vals) = d.values.as_ref().filter(|v| !v.is_empty()) {
            return vals[(rng.next() % vals.len() as u64) as usize];
        }
        let (lo, hi) = ((d.min.max(1)) as f64, (d.max.max(1)) as f64);
        let x = (lo.ln() + rng.unit() * (hi.ln() - lo.ln())).exp().round() as i64;
        snap(d, x).unwrap_or(d.min)
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        // The boundary shard puts dimension `i mod dims` at an edge.
        let edge = (shard == Shard::Boundary).then(|| i % contract.dims.len().max(1));
        // A boundary draw keeps its edge when snapped to a multiple: other draws are tried.
        let edge_dim = edge.map(|j| contract.dims[j].name.as_str());
        let mut pick = None;
        let mut last = Shape::new();
        // A draw past a [limits] product is drawn again (a domain without limits takes the
        // first draw, so its stream is what it always was).
        for _ in 0..LIMIT_ATTEMPTS {
            let mut s = Shape::new();
            for (j, d) in contract.dims.iter().enumerate() {
                let v = if edge == Some(j) {
                    match rng.next() % 3 {
                        0 => d.min,
                        1 => d.max,
                        _ => snap(
                            d,
                            (draw(&mut rng, d) / 128 * 128 + 128 + d.multiple_of).min(d.max),
                        )
                        .unwrap_or(d.max),
                    }
                } else {
                    draw(&mut rng, d)
                };
                s.insert(d.name.clone(), v);
            }
            snap_multiples(contract, &mut s, edge_dim);
            if contract.relations_hold(|d| s.get(d).copied()) {
                pick = Some(s);
                break;
            }
            last = s;
        }
        // Still past a limit: the other dimensions at their minimum, or no shape at all.
        let pick = pick.or_else(|| {
            for (j, d) in contract.dims.iter().enumerate() {
                if edge != Some(j) {
                    last.insert(d.name.clone(), d.min);
                }
            }
            snap_multiples(contract, &mut last, edge_dim);
            contract
                .relations_hold(|d| last.get(d).copied())
                .then_some(last)
        });
        out.extend(pick);
    }
    out
}

/// Moves each dimension that must be a multiple of another (`BH = { multiple_of = "BHKV" }`)
/// to the nearest such value in its range; left as drawn when its range holds none (the draw
/// then fails the relation and is drawn again), and so is the dimension `keep`.
fn snap_multiples(contract: &Contract, shape: &mut Shape, keep: Option<&str>) {
    for m in contract
        .multiples
        .iter()
        .filter(|m| Some(m.dim.as_str()) != keep)
    {
        let (Some(&v), Some(&of)) = (shape.get(&m.dim), shape.get(&m.of)) else {
            continue;
        };
        let Some(dim) = contract.dims.iter().find(|d| d.name == m.dim) else {
            continue;
        };
        let step = lcm(of, dim.multiple_of.max(1));
        let down = v / step * step;
        // Up first: a draw halfway between two multiples rounds up.
        let nearest = [down + step, down]
            .into_iter()
            .filter(|x| dim.contains(*x))
            .min_by_key(|x| (x - v).abs());
        if let Some(x) = nearest {
            shape.insert(m.dim.clone(), x);
        }
    }
}

fn lcm(a: i64, b: i64) -> i64 {
    let gcd = |mut a: i64, mut b: i64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    if a <= 0 || b <= 0 {
        return a.max(b).max(1);
    }
    a / gcd(a, b) * b
}

/// The generator's starting state for a shard and seed. Representative draws start at the seed
/// xor a constant (as they always have, so committed measurements reproduce). The other shards
/// start at a hash of theirs: with a plain xor, held-out seed 3 started where representative seed 1
/// did and judged a table on the shapes that chose it (found 2026-12-02; the judgements committed
/// before then used held-out and boundary seeds that no representative seed in use shared).
fn stream_state(shard: Shard, seed: u64) -> u64 {
    match shard {
        Shard::Representative => seed ^ 0x5eed_0001,
        Shard::Boundary => SplitMix(seed ^ 0x5eed_0002).next(),
        Shard::HeldOut => SplitMix(seed ^ 0x5eed_0003).next(),
        Shard::Bench => seed,
    }
}

/// Values of a product guard's last factor that validation adds per bound, at most (see
/// `edge_axes`).
const PRODUCT_CROSSINGS: usize = 12;

/// The most points `edge_points` builds, as a power of two.
const EDGE_POINTS_LOG2: u32 = 20;

/// The most points `validate` walks (without building them), as a power of two.
const VALIDATE_POINTS_LOG2: u32 = 26;

/// Draws per shape before a sample gives up on a domain's [limits].
const LIMIT_ATTEMPTS: usize = 64;

/// SplitMix64: a small, well-mixed, reproducible generator (the sampler needs determinism from a
/// seed, not cryptographic quality).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// In [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The median of `xs` (the mean of the middle two when their count is even), `None` if empty.
fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        0.5 * (xs[n / 2 - 1] + xs[n / 2])
    })
}
