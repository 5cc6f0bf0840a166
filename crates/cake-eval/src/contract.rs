//! Workload contracts (`*.contract.toml`, documented in docs/contracts.md): what a kernel must
//! compute, on which shapes and inputs, judged by which oracle and tolerance, against which
//! baselines. The contract, not the candidate, is the authority; it is parsed and validated
//! here, once, and handed to the worker already resolved (absolute paths, bound defaults).

use crate::expr::Expr;
use indexmap::IndexMap;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Data types a contract may name (the worker's table; docs/worker.md).
pub const DTYPES: &[&str] = &[
    "bf16", "f16", "f32", "f64", "i32", "i64", "u8", "i8", "fp8e4m3", "fp8e5m2",
];

/// Contract dtype names whose Cake (launch metadata) name differs, and the kernel dtypes whose
/// storage is a contract dtype: the interface check compares through this table.
const KERNEL_DTYPE_ALIASES: &[(&str, &str)] =
    &[("fp8e4m3", "e4m3"), ("fp8e5m2", "e5m2"), ("f32", "tf32")];

/// Whether a kernel parameter of dtype `kernel` (Cake's name) takes the contract's `contract`.
pub fn dtype_matches(contract: &str, kernel: &str) -> bool {
    contract == kernel || KERNEL_DTYPE_ALIASES.contains(&(contract, kernel))
}

/// Longest watchdog a contract may set: a day.
const MAX_TIMEOUT_S: f64 = 86_400.0;

/// Dtypes a scalar parameter may have (the runtime passes these by value).
pub const SCALAR_DTYPES: &[&str] = &["f32", "f64", "i32", "i64", "u8", "i8"];

/// Built-in input distributions (docs/worker.md).
pub const DISTRIBUTIONS: &[&str] = &["normal", "uniform", "heavy_tailed", "clustered", "ties"];

/// The named shape sets.
pub const SHAPE_SETS: &[&str] = &["check", "bench", "held_out"];

/// A contract error, located in the TOML file where the parser or the key can say.
#[derive(Debug, Clone, PartialEq)]
pub struct ContractError {
    pub file: PathBuf,
    /// 1-based line and column, when known.
    pub line_col: Option<(usize, usize)>,
    /// The TOML key the error is about (`tensors.C.shape`), when there is one.
    pub key: Option<String>,
    pub message: String,
    pub help: Option<String>,
}

impl std::fmt::Display for ContractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some((l, c)) = self.line_col {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": ")?;
        if let Some(k) = &self.key {
            write!(f, "`{k}`: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContractError {}

// ---- the TOML as written ---------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    kernel: String,
    entry: String,
    targets: Vec<String>,
    /// Default Python file for function references written without `file.py:`.
    python: Option<String>,
    dims: IndexMap<String, RawDim>,
    shapes: IndexMap<String, Vec<IndexMap<String, i64>>>,
    tensors: IndexMap<String, RawTensor>,
    #[serde(default)]
    scalars: IndexMap<String, RawScalar>,
    inputs: RawInputs,
    oracle: RawOracle,
    tolerance: IndexMap<String, Tolerance>,
    #[serde(default)]
    check: CheckPolicy,
    #[serde(default)]
    bench: RawBench,
    #[serde(default)]
    baselines: IndexMap<String, String>,
    /// Module-level integer constants of the schedule, each set from a dimension of the shape.
    #[serde(default)]
    specialize: IndexMap<String, String>,
    /// Bounds on products of dimensions (`"B*N" = { max = 67108864 }`): what fits in memory.
    #[serde(default)]
    limits: IndexMap<String, RawLimit>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimit {
    max: i64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDim {
    min: Option<i64>,
    max: Option<i64>,
    multiple_of: Option<RawMultiple>,
    /// The values the dimension takes, when it is a set of options (`D = { in = [64, 128] }`).
    #[serde(rename = "in")]
    values: Option<Vec<i64>>,
}

/// `multiple_of`: a fixed step (`8`) or another dimension (`"BHKV"`: grouped-query attention's
/// query heads a multiple of its key/value heads).
#[derive(Deserialize)]
#[serde(untagged)]
enum RawMultiple {
    Step(i64),
    Dim(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTensor {
    dtype: String,
    shape: Vec<ShapeEntry>,
    role: Role,
}

#[derive(Deserialize, serde::Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum ShapeEntry {
    Fixed(i64),
    Dim(String),
}

#[derive(Deserialize, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Input,
    Output,
    Inout,
}

impl Role {
    pub fn is_output(self) -> bool {
        matches!(self, Role::Output | Role::Inout)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScalar {
    dtype: String,
    value: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInputs {
    distributions: Vec<String>,
    generator: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOracle {
    function: String,
}

/// An output's tolerance policy (docs/worker.md lists their exact meaning).
#[derive(Deserialize, serde::Serialize, Clone, Debug, PartialEq)]
#[serde(tag = "policy", rename_all = "snake_case", deny_unknown_fields)]
pub enum Tolerance {
    Allclose {
        rtol: f64,
        atol: f64,
    },
    RelL2 {
        max: f64,
    },
    Exact,
    ArgminTies {
        /// A function reference; resolved to `/abs/file.py:fn` by [`Contract::load`].
        score: String,
        rtol: f64,
        atol: f64,
        /// Valid indices are `0..bound` (a dimension name or a number); others are mismatches.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        bound: Option<ShapeEntry>,
    },
}

/// How correctness is checked.
#[derive(Deserialize, serde::Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct CheckPolicy {
    /// Calls per check; ≥ 2 also catches races and nondeterminism.
    pub runs: u32,
    /// Whether runs must agree bitwise.
    pub require_deterministic: bool,
    /// Watchdog for one check, in seconds.
    pub timeout_s: f64,
}

impl Default for CheckPolicy {
    fn default() -> Self {
        CheckPolicy {
            runs: 2,
            require_deterministic: true,
            timeout_s: 120.0,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawBench {
    warmup: u32,
    samples: u32,
    timeout_s: f64,
    flops: Option<String>,
    bytes: Option<String>,
    precision: Precision,
}

impl Default for RawBench {
    fn default() -> Self {
        RawBench {
            warmup: 10,
            samples: 30,
            timeout_s: 300.0,
            flops: None,
            bytes: None,
            precision: Precision::Bits16,
        }
    }
}

/// Which tensor-core peak bounds the FLOP floor.
#[derive(Deserialize, serde::Serialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    #[serde(rename = "16bit")]
    Bits16,
    #[serde(rename = "fp8")]
    Fp8,
}

// ---- the validated contract ------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    pub name: String,
    pub min: i64,
    pub max: i64,
    pub multiple_of: i64,
    /// The only values taken, sorted, when the dimension is a set of options (`in = [...]`);
    /// `min` and `max` are then its smallest and largest.
    pub values: Option<Vec<i64>>,
}

impl Dim {
    /// Whether `v` is in the domain. A non-positive `multiple_of` is reported on its own; it
    /// admits nothing here rather than dividing by zero.
    pub fn contains(&self, v: i64) -> bool {
        self.multiple_of > 0
            && v >= self.min
            && v <= self.max
            && v % self.multiple_of == 0
            && self.values.as_ref().is_none_or(|s| s.contains(&v))
    }

    /// The domain's text for messages: `1..=4096, multiple of 8` or `one of 64, 96, 128`.
    pub fn describe(&self) -> String {
        match &self.values {
            Some(v) => format!(
                "one of {}",
                v.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None if self.multiple_of > 1 => {
                format!(
                    "{}..={}, multiple of {}",
                    self.min, self.max, self.multiple_of
                )
            }
            None => format!("{}..={}", self.min, self.max),
        }
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: String,
    pub shape: Vec<ShapeEntry>,
    pub role: Role,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ScalarSpec {
    pub name: String,
    pub dtype: String,
    pub value: f64,
}

/// One binding of every dimension.
pub type Shape = IndexMap<String, i64>;

/// `M=4096 N=7168 K=4096`: a shape as progress lines, reports and messages show it.
pub fn shape_text(s: &Shape) -> String {
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The values of a contract's specialized constants for one shape, in `[specialize]` order
/// (empty when the contract has no `[specialize]`).
pub type Specialization = IndexMap<String, i64>;

#[derive(Clone, Debug)]
pub struct Bench {
    pub warmup: u32,
    pub samples: u32,
    pub timeout_s: f64,
    pub flops: Option<Expr>,
    pub bytes: Option<Expr>,
    pub precision: Precision,
}

#[derive(Clone, Debug)]
pub struct Contract {
    pub path: PathBuf,
    /// SHA-256 of the file's bytes.
    pub hash: String,
    pub name: String,
    /// The default candidate schedule, absolute.
    pub kernel: PathBuf,
    pub entry: String,
    pub targets: Vec<String>,
    pub dims: Vec<Dim>,
    pub shapes: IndexMap<String, Vec<Shape>>,
    pub tensors: Vec<TensorSpec>,
    pub scalars: Vec<ScalarSpec>,
    pub distributions: Vec<String>,
    /// `/abs/file.py:fn` references.
    pub generator: Option<String>,
    pub oracle: String,
    pub tolerance: IndexMap<String, Tolerance>,
    pub check: CheckPolicy,
    pub bench: Bench,
    pub baselines: IndexMap<String, String>,
    /// `[specialize]`: schedule constant → the dimension that sets it, per shape.
    pub specialize: IndexMap<String, String>,
    /// Schedule constants set to fixed values before any specialization: never in a contract
    /// file, set by a family route that runs a variant of a schedule (`constants = { BN = 128 }`).
    pub constants: IndexMap<String, i64>,
    /// `[limits]`: a product of dimensions no shape of the domain exceeds.
    pub limits: Vec<Limit>,
    /// Dimensions that are multiples of another (`BH = { multiple_of = "BHKV" }`).
    pub multiples: Vec<Multiple>,
}

/// A dimension that is a multiple of another at every shape of the domain
/// (`BH = { multiple_of = "BHKV" }`): what a generator refuses otherwise.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Multiple {
    pub dim: String,
    pub of: String,
}

impl Multiple {
    /// Whether the relation holds with each dimension's value from `value_of` (a dimension
    /// without a value fails it).
    pub fn holds_with(&self, value_of: impl Fn(&str) -> Option<i64>) -> bool {
        matches!((value_of(&self.dim), value_of(&self.of)), (Some(v), Some(o)) if o > 0 && v % o == 0)
    }
}

/// A bound on a product of dimensions (`"B*N" = { max = 67108864 }`): the domain is the box of
/// the dimensions' ranges less the shapes too large to allocate.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Limit {
    pub dims: Vec<String>,
    pub max: i64,
}

impl Limit {
    pub fn holds(&self, shape: &Shape) -> bool {
        self.holds_with(|d| shape.get(d).copied())
    }

    /// [`Limit::holds`] with each dimension's value from `value_of`: a product that overflows,
    /// or a dimension without a value, is past the limit.
    pub fn holds_with(&self, value_of: impl Fn(&str) -> Option<i64>) -> bool {
        self.dims
            .iter()
            .try_fold(1i64, |p, d| p.checked_mul(value_of(d)?))
            .is_some_and(|p| p <= self.max)
    }
}

/// Errors collected while validating, so one run reports all of them.
pub(crate) struct Errors<'a> {
    pub(crate) file: &'a Path,
    pub(crate) text: &'a str,
    pub(crate) list: Vec<ContractError>,
}

impl Errors<'_> {
    pub(crate) fn push(
        &mut self,
        key: impl Into<String>,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        let key = key.into();
        self.list.push(ContractError {
            file: self.file.to_path_buf(),
            line_col: locate_key(self.text, &key),
            key: Some(key),
            message: message.into(),
            help,
        });
    }
}

/// Best-effort position of a dotted key in the TOML text: the line that defines its last
/// segment under the table or inline table of the segments before it. Good enough to point a
/// reader at the right line; exactness is the parser's job for syntax errors.
fn locate_key(text: &str, key: &str) -> Option<(usize, usize)> {
    let segments: Vec<&str> = key
        .split('.')
        .map(|s| s.split('[').next().unwrap_or(s))
        .collect();
    let last = *segments.last()?;
    let mut in_table = segments.len() == 1;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            let header = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            in_table = segments.len() == 1
                || segments[..segments.len() - 1].join(".") == header
                || (segments.len() >= 2 && header == segments[0]);
            if segments.len() == 1 && header == last {
                return Some((i + 1, line.len() - t.len() + 1));
            }
            continue;
        }
        if !in_table {
            continue;
        }
        for candidate in [last, segments.get(1).copied().unwrap_or(last)] {
            let Some(col) = find_key(t, candidate) else {
                continue;
            };
            return Some((i + 1, line.len() - t.len() + col + 1));
        }
    }
    None
}

/// Column of `key = ` (or `key=`) in a line, as a whole word.
fn find_key(line: &str, key: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(pos) = line[from..].find(key) {
        let at = from + pos;
        let before_ok = at == 0 || !is_ident(line.as_bytes()[at - 1]);
        let rest = line[at + key.len()..].trim_start();
        if before_ok && rest.starts_with('=') {
            return Some(at);
        }
        from = at + key.len();
    }
    None
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'"'
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Contract {
    /// Read, parse and validate a contract. Every problem found is returned, not just the first.
    pub fn load(path: &Path) -> Result<Contract, Vec<ContractError>> {
        let bytes = std::fs::read(path).map_err(|e| {
            vec![ContractError {
                file: path.to_path_buf(),
                line_col: None,
                key: None,
                message: format!("cannot read the contract: {e}"),
                help: None,
            }]
        })?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let dir = path
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        Self::parse(path, &text, &dir).map(|mut c| {
            c.hash = sha256_hex(&bytes);
            c
        })
    }

    /// Parse and validate contract text; relative paths resolve against `dir`.
    pub fn parse(path: &Path, text: &str, dir: &Path) -> Result<Contract, Vec<ContractError>> {
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let line_col = e.span().map(|s| line_col_of(text, s.start));
            vec![ContractError {
                file: path.to_path_buf(),
                line_col,
                key: None,
                message: e.message().to_string(),
                help: None,
            }]
        })?;
        let mut errs = Errors {
            file: path,
            text,
            list: Vec::new(),
        };
        let c = validate(raw, dir, &mut errs, sha256_hex(text.as_bytes()), path);
        if errs.list.is_empty() {
            Ok(c)
        } else {
            Err(errs.list)
        }
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorSpec> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The named shape set (empty when the contract has none).
    pub fn shape_set(&self, set: &str) -> &[Shape] {
        self.shapes.get(set).map_or(&[], Vec::as_slice)
    }

    /// Whether `shape` is in the domain: every dimension in its range or set, every limit and
    /// every multiple between dimensions held.
    pub fn admits(&self, shape: &Shape) -> bool {
        self.dims
            .iter()
            .all(|d| shape.get(&d.name).is_some_and(|v| d.contains(*v)))
            && self.relations_hold(|d| shape.get(d).copied())
    }

    /// Whether the constraints between dimensions hold (`[limits]` products and dimensions
    /// that are multiples of others), each dimension's value from `value_of`.
    pub fn relations_hold(&self, value_of: impl Fn(&str) -> Option<i64> + Copy) -> bool {
        self.limits.iter().all(|l| l.holds_with(value_of))
            && self.multiples.iter().all(|m| m.holds_with(value_of))
    }

    /// The values of the specialized constants at `shape`.
    pub fn specialization(&self, shape: &Shape) -> Specialization {
        self.specialize
            .iter()
            .filter_map(|(k, dim)| Some((k.clone(), *shape.get(dim)?)))
            .collect()
    }

    /// The value of dimension `dim` in a specialization, when a constant is set from it.
    pub fn specialized_dim(&self, spec: &Specialization, dim: &str) -> Option<i64> {
        self.specialize
            .iter()
            .find(|(_, d)| *d == dim)
            .and_then(|(k, _)| spec.get(k).copied())
    }

    /// The resolved problem the worker receives with every `check` and `time` request
    /// (docs/worker.md, "PROBLEM").
    pub fn problem(&self) -> serde_json::Value {
        serde_json::json!({
            "tensors": self.tensors,
            "scalars": self.scalars,
            "generator": self.generator,
            "oracle": self.oracle,
            "tolerance": self.tolerance,
            "check": {"require_deterministic": self.check.require_deterministic},
        })
    }
}

pub(crate) fn line_col_of(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// `fn` or `file.py:fn` → `/abs/file.py:fn`, the file resolved against the contract's directory.
pub(crate) fn resolve_function(
    reference: &str,
    default_file: Option<&Path>,
    dir: &Path,
    key: &str,
    errs: &mut Errors,
) -> String {
    let (file, function) = match reference.rsplit_once(':') {
        Some((f, func)) => (Some(dir.join(f)), func),
        None => (default_file.map(Path::to_path_buf), reference),
    };
    if function.is_empty() || !function.chars().all(|c| c.is_alphanumeric() || c == '_') {
        errs.push(
            key,
            format!("`{reference}` is not a function reference"),
            Some("write `function` (in the contract's `python` file) or `file.py:function`".into()),
        );
        return reference.to_string();
    }
    let Some(file) = file else {
        errs.push(
            key,
            format!("`{reference}` names no file and the contract sets no `python` file"),
            Some("add `python = \"contract.py\"` at the top, or write `file.py:function`".into()),
        );
        return reference.to_string();
    };
    if !file.is_file() {
        errs.push(
            key,
            format!("{} does not exist", file.display()),
            Some("paths are relative to the contract file".into()),
        );
    }
    format!("{}:{function}", file.display())
}

fn validate(raw: Raw, dir: &Path, errs: &mut Errors, hash: String, path: &Path) -> Contract {
    if raw.name.trim().is_empty() {
        errs.push("name", "the contract needs a name", None);
    }
    let kernel = dir.join(&raw.kernel);
    if !kernel.is_file() {
        errs.push(
            "kernel",
            format!("the schedule {} does not exist", kernel.display()),
            Some("paths are relative to the contract file".into()),
        );
    }
    if raw.targets.is_empty() {
        errs.push(
            "targets",
            "name at least one exact target, e.g. [\"sm_90a\"]",
            None,
        );
    }
    for t in &raw.targets {
        if let Err(e) = cake_target::lookup(t) {
            errs.push(
                "targets",
                e.to_string(),
                e.suggestion().map(|s| format!("did you mean `{s}`?")),
            );
        }
    }
    let default_py = raw.python.as_ref().map(|p| dir.join(p));
    if let Some(p) = &default_py {
        if !p.is_file() {
            errs.push("python", format!("{} does not exist", p.display()), None);
        }
    }

    // Dimensions and their domain.
    let mut dims = Vec::new();
    let mut multiples = Vec::new();
    for (name, d) in &raw.dims {
        let key = format!("dims.{name}");
        let mut values = d.values.clone();
        if let Some(v) = values.as_mut() {
            v.sort();
            v.dedup();
            if v.is_empty() || v[0] < 1 {
                errs.push(&key, "`in` lists positive values, at least one", None);
            }
            if d.min.is_some() || d.max.is_some() || d.multiple_of.is_some() {
                errs.push(
                    &key,
                    "a dimension is either a set (`in`) or a range (`min`, `max`, `multiple_of`)",
                    None,
                );
            }
        }
        let set = values.as_deref().filter(|v| !v.is_empty());
        let multiple_of = match &d.multiple_of {
            None => 1,
            Some(RawMultiple::Step(m)) => *m,
            Some(RawMultiple::Dim(of)) => {
                if of == name || !raw.dims.contains_key(of) {
                    errs.push(
                        &key,
                        format!("`multiple_of = \"{of}\"` names no other dimension"),
                        Some(format!(
                            "dimensions are {}",
                            raw.dims
                                .keys()
                                .map(String::as_str)
                                .collect::<Vec<_>>()
                                .join(", ")
                        )),
                    );
                } else {
                    multiples.push(Multiple {
                        dim: name.clone(),
                        of: of.clone(),
                    });
                }
                1
            }
        };
        let (min, max) = (
            set.map_or(d.min.unwrap_or(1), |v| v[0]),
            set.map_or(d.max.unwrap_or(i64::from(i32::MAX)), |v| v[v.len() - 1]),
        );
        if min < 1 || max < min {
            errs.push(
                &key,
                format!("empty or non-positive range {min}..={max}"),
                None,
            );
        }
        if multiple_of < 1 {
            errs.push(&key, "`multiple_of` must be at least 1", None);
        }
        dims.push(Dim {
            name: name.clone(),
            min,
            max,
            multiple_of,
            values,
        });
    }
    let dim_names: Vec<&str> = dims.iter().map(|d| d.name.as_str()).collect();

    // Limits: products of known dimensions, a positive bound.
    let mut limits = Vec::new();
    for (product, l) in &raw.limits {
        let key = format!("limits.{product}");
        let names: Vec<String> = product.split('*').map(|d| d.trim().to_string()).collect();
        let unknown: Vec<&String> = names
            .iter()
            .filter(|d| !dim_names.contains(&d.as_str()))
            .collect();
        if !unknown.is_empty() || names.len() < 2 {
            errs.push(
                &key,
                format!(
                    "a limit bounds a product of two or more dimensions (`B*N`), got `{product}`"
                ),
                Some(format!("dimensions are {}", dim_names.join(", "))),
            );
        } else if l.max < 1 {
            errs.push(&key, "`max` must be at least 1", None);
        } else {
            limits.push(Limit {
                dims: names,
                max: l.max,
            });
        }
    }

    // Shape sets: known set names, each shape binds exactly the dimensions, inside the domain.
    for (set, shapes) in &raw.shapes {
        if !SHAPE_SETS.contains(&set.as_str()) {
            errs.push(
                format!("shapes.{set}"),
                format!("unknown shape set `{set}`"),
                Some(format!("shape sets are {}", SHAPE_SETS.join(", "))),
            );
        }
        for (i, shape) in shapes.iter().enumerate() {
            let key = format!("shapes.{set}[{i}]");
            for d in &dims {
                match shape.get(&d.name) {
                    None => errs.push(&key, format!("dimension `{}` is not bound", d.name), None),
                    Some(&v) if !d.contains(v) => errs.push(
                        &key,
                        format!("{} = {v} is outside the domain ({})", d.name, d.describe()),
                        None,
                    ),
                    Some(_) => {}
                }
            }
            let bound: Shape = shape.iter().map(|(k, v)| (k.clone(), *v)).collect();
            for l in limits.iter().filter(|l| !l.holds(&bound)) {
                errs.push(
                    &key,
                    format!("{} exceeds the limit {}", l.dims.join("·"), l.max),
                    None,
                );
            }
            let value_of = |d: &str| bound.get(d).copied();
            for m in multiples.iter().filter(|m| !m.holds_with(value_of)) {
                errs.push(
                    &key,
                    format!("{} is not a multiple of {}", m.dim, m.of),
                    None,
                );
            }
            for k in shape.keys() {
                if !dim_names.contains(&k.as_str()) {
                    errs.push(
                        &key,
                        format!("`{k}` is not a dimension"),
                        Some(format!("dimensions are {}", dim_names.join(", "))),
                    );
                }
            }
        }
    }
    if raw.shapes.get("check").is_none_or(Vec::is_empty) {
        errs.push(
            "shapes.check",
            "the `check` shape set is required and must not be empty",
            None,
        );
    }

    // Tensors and scalars.
    let mut tensors = Vec::new();
    for (name, t) in &raw.tensors {
        let key = format!("tensors.{name}");
        if !DTYPES.contains(&t.dtype.as_str()) {
            errs.push(
                &key,
                format!("unknown dtype `{}`", t.dtype),
                Some(format!("dtypes are {}", DTYPES.join(", "))),
            );
        }
        if t.role == Role::Inout {
            errs.push(
                &key,
                "role `inout` is not supported yet",
                Some("declare the tensor as an input and the result as a separate output".into()),
            );
        }
        for e in &t.shape {
            match e {
                ShapeEntry::Dim(d) if !dim_names.contains(&d.as_str()) => errs.push(
                    &key,
                    format!("`{d}` in its shape is not a dimension"),
                    Some(format!("dimensions are {}", dim_names.join(", "))),
                ),
                ShapeEntry::Fixed(n) if *n < 1 => {
                    errs.push(&key, format!("fixed extent {n} must be positive"), None)
                }
                _ => {}
            }
        }
        tensors.push(TensorSpec {
            name: name.clone(),
            dtype: t.dtype.clone(),
            shape: t.shape.clone(),
            role: t.role,
        });
    }
    if !tensors.iter().any(|t| t.role.is_output()) {
        errs.push(
            "tensors",
            "no tensor has role `output` or `inout`: nothing to check",
            None,
        );
    }
    let scalars: Vec<ScalarSpec> = raw
        .scalars
        .iter()
        .map(|(name, s)| {
            let key = format!("scalars.{name}");
            if !SCALAR_DTYPES.contains(&s.dtype.as_str()) {
                errs.push(
                    &key,
                    format!("`{}` is not a scalar dtype", s.dtype),
                    Some(format!("scalar dtypes are {}", SCALAR_DTYPES.join(", "))),
                );
            }
            let integral = s.value.fract() == 0.0 && s.value.abs() < 2f64.powi(53);
            if !s.value.is_finite() {
                errs.push(&key, "the value must be finite", None);
            } else if s.dtype.starts_with(['i', 'u']) && !integral {
                errs.push(
                    &key,
                    format!(
                        "{} is not an integer, but the dtype is {}",
                        s.value, s.dtype
                    ),
                    None,
                );
            }
            ScalarSpec {
                name: name.clone(),
                dtype: s.dtype.clone(),
                value: s.value,
            }
        })
        .collect();

    // Inputs, oracle, tolerance.
    if raw.inputs.distributions.is_empty() {
        errs.push(
            "inputs.distributions",
            "name at least one distribution",
            None,
        );
    }
    for d in &raw.inputs.distributions {
        if !DISTRIBUTIONS.contains(&d.as_str()) {
            errs.push(
                "inputs.distributions",
                format!("unknown distribution `{d}`"),
                Some(format!("distributions are {}", DISTRIBUTIONS.join(", "))),
            );
        }
    }
    let py = default_py.as_deref();
    let generator = raw
        .inputs
        .generator
        .as_ref()
        .map(|g| resolve_function(g, py, dir, "inputs.generator", errs));
    let oracle = resolve_function(&raw.oracle.function, py, dir, "oracle.function", errs);
    let mut tolerance = IndexMap::new();
    for t in tensors.iter().filter(|t| t.role.is_output()) {
        if !raw.tolerance.contains_key(&t.name) {
            errs.push(
                "tolerance",
                format!("output `{}` has no tolerance policy", t.name),
                Some(format!(
                    "add `{} = {{ policy = \"allclose\", rtol = ..., atol = ... }}`",
                    t.name
                )),
            );
        }
    }
    for (name, policy) in &raw.tolerance {
        let key = format!("tolerance.{name}");
        match tensors.iter().find(|t| &t.name == name) {
            Some(t) if t.role.is_output() => {}
            Some(_) => errs.push(
                &key,
                format!("`{name}` is an input; only outputs are compared"),
                None,
            ),
            None => errs.push(
                &key,
                format!("`{name}` is not a tensor of the contract"),
                None,
            ),
        }
        let policy = match policy {
            Tolerance::Allclose { rtol, atol } | Tolerance::ArgminTies { rtol, atol, .. }
                if !(rtol.is_finite() && atol.is_finite() && *rtol >= 0.0 && *atol >= 0.0) =>
            {
                errs.push(&key, "rtol and atol must be finite and non-negative", None);
                policy.clone()
            }
            Tolerance::RelL2 { max } if !(max.is_finite() && *max > 0.0) => {
                errs.push(&key, "`max` must be finite and positive", None);
                policy.clone()
            }
            Tolerance::ArgminTies {
                score,
                rtol,
                atol,
                bound,
            } => {
                match bound {
                    Some(ShapeEntry::Dim(d)) if !dim_names.contains(&d.as_str()) => errs.push(
                        &key,
                        format!("`bound` names `{d}`, which is not a dimension"),
                        None,
                    ),
                    Some(ShapeEntry::Fixed(n)) if *n < 1 => {
                        errs.push(&key, "`bound` must be positive", None)
                    }
                    _ => {}
                }
                Tolerance::ArgminTies {
                    score: resolve_function(score, py, dir, &format!("{key}.score"), errs),
                    rtol: *rtol,
                    atol: *atol,
                    bound: bound.clone(),
                }
            }
            other => other.clone(),
        };
        tolerance.insert(name.clone(), policy);
    }

    // Check and bench policies.
    if raw.check.runs == 0 {
        errs.push("check.runs", "at least one run per check", None);
    }
    for (key, t) in [
        ("check.timeout_s", raw.check.timeout_s),
        ("bench.timeout_s", raw.bench.timeout_s),
    ] {
        if !(t > 0.0 && t <= MAX_TIMEOUT_S) {
            errs.push(
                key,
                format!("{t} is not a timeout: give seconds in (0, {MAX_TIMEOUT_S}]"),
                None,
            );
        }
    }
    if raw.bench.samples < 30 {
        errs.push(
            "bench.samples",
            format!(
                "{} samples is too few for a median and IQR",
                raw.bench.samples
            ),
            Some("the timing protocol takes at least 30".into()),
        );
    }
    let mut parse_expr = |key: &str, text: &Option<String>| {
        text.as_ref().and_then(|t| match Expr::parse(t) {
            Ok(e) => {
                for n in e.names() {
                    if !dim_names.contains(&n.as_str()) {
                        errs.push(key, format!("`{n}` is not a dimension"), None);
                    }
                }
                Some(e)
            }
            Err(m) => {
                errs.push(key, m, None);
                None
            }
        })
    };
    let flops = parse_expr("bench.flops", &raw.bench.flops);
    let bytes = parse_expr("bench.bytes", &raw.bench.bytes);
    let baselines = raw
        .baselines
        .iter()
        .map(|(name, f)| {
            (
                name.clone(),
                resolve_function(f, py, dir, &format!("baselines.{name}"), errs),
            )
        })
        .collect();

    // Specialization: each key a constant's name, each value a dimension.
    for (constant, dim) in &raw.specialize {
        let key = format!("specialize.{constant}");
        if !is_identifier(constant) {
            errs.push(
                &key,
                format!("`{constant}` is not a constant's name"),
                Some("keys are the schedule's module-level constants, e.g. `H = \"H\"`".into()),
            );
        }
        if !dim_names.contains(&dim.as_str()) {
            errs.push(
                &key,
                format!("`{dim}` is not a dimension"),
                Some(format!("dimensions are {}", dim_names.join(", "))),
            );
        }
    }

    Contract {
        path: path.to_path_buf(),
        hash,
        name: raw.name,
        kernel,
        entry: raw.entry,
        targets: raw.targets,
        dims,
        shapes: raw.shapes,
        tensors,
        scalars,
        distributions: raw.inputs.distributions,
        generator,
        oracle,
        tolerance,
        check: raw.check,
        bench: Bench {
            warmup: raw.bench.warmup,
            samples: raw.bench.samples,
            timeout_s: raw.bench.timeout_s,
            flops,
            bytes,
            precision: raw.bench.precision,
        },
        baselines,
        specialize: raw.specialize,
        constants: IndexMap::new(),
        limits,
        multiples,
    }
}

/// A Python identifier as the schedule's module constants are written (ASCII).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
