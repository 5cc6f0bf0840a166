//! A validated `cake.launch/v0` document ([`cake_lower::LaunchMeta`]): everything that depends
//! only on launch.json is checked once, at load, so a bad file is reported before any tensor is
//! looked at.

use std::collections::{BTreeSet, HashSet};

use cake_lower::{Arg, Grid, LaunchMeta};
use serde_json::Value;

use crate::dtype::{self, DType, SCALAR_DTYPES, TMA_FLOAT_TYPES};
use crate::error::{launch, Result};
use crate::expr::Expr;

pub const SCHEMA: &str = "cake.launch/v0";
pub const MAX_TMA_RANK: usize = 5;
pub const MAX_BOX_DIM: u32 = 256;
/// The largest workspace (launch.json `state.bytes`) a kernel may ask for: 1 GiB. The lowering
/// sizes it by a fixed number of CTAs, so a real one is a few megabytes at most.
pub const MAX_STATE_BYTES: u64 = 1 << 30;
/// The name a workspace argument goes by in messages.
pub const STATE_ARG: &str = "state";

/// One dimension of a tensor parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dim {
    /// Bound from the tensor's shape at launch.
    Sym(String),
    /// Must equal this extent.
    Fixed(u64),
}

impl std::fmt::Display for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dim::Sym(s) => f.write_str(s),
            Dim::Fixed(n) => write!(f, "{n}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
    ReadWrite,
}

impl Access {
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::ReadWrite => "readwrite",
        }
    }

    pub fn writes(self) -> bool {
        self != Access::Read
    }
}

#[derive(Clone, Debug)]
pub struct TensorSpec {
    pub name: String,
    pub dtype: &'static DType,
    pub dims: Vec<Dim>,
    pub access: Access,
}

#[derive(Clone, Debug)]
pub struct ScalarSpec {
    pub name: String,
    pub dtype: &'static DType,
}

/// `CU_TENSOR_MAP_INTERLEAVE_*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleave {
    None,
    B16,
    B32,
}

impl Interleave {
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// A tensormap argument's static description (launch.json `args[i]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TmaSpec {
    /// Box extents, innermost first.
    pub box_dims: Vec<u32>,
    /// Swizzle span in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
    pub interleave: Interleave,
    /// true: out-of-bounds elements read as NaN (`NAN_REQUEST_ZERO_FMA`); false: zero.
    pub oob_nan: bool,
    /// L2 promotion in bytes: 0, 64, 128 or 256.
    pub l2_promotion: u32,
}

impl TmaSpec {
    /// `CU_TENSOR_MAP_SWIZZLE_{NONE,32B,64B,128B}`.
    pub fn swizzle_code(&self) -> u32 {
        match self.swizzle {
            32 => 1,
            64 => 2,
            128 => 3,
            _ => 0,
        }
    }

    /// `CU_TENSOR_MAP_L2_PROMOTION_{NONE,L2_64B,L2_128B,L2_256B}`.
    pub fn l2_code(&self) -> u32 {
        match self.l2_promotion {
            64 => 1,
            128 => 2,
            256 => 3,
            _ => 0,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArgKind {
    TensorMap(TmaSpec),
    Ptr,
    Dim,
    Scalar,
    /// The launch's workspace (launch.json `state`): a device pointer the launcher provides.
    State,
}

#[derive(Clone, Debug)]
pub struct ArgSpec {
    pub index: usize,
    pub kind: ArgKind,
    /// The tensor (tensormap, ptr), dimension or scalar name.
    pub name: String,
}

impl ArgSpec {
    pub fn kind_name(&self) -> &'static str {
        match self.kind {
            ArgKind::TensorMap(_) => "tensormap",
            ArgKind::Ptr => "ptr",
            ArgKind::Dim => "dim",
            ArgKind::Scalar => "scalar",
            ArgKind::State => "state",
        }
    }

    /// `arg 0 (tensormap `A`)`, for messages.
    pub fn label(&self) -> String {
        format!("arg {} ({} `{}`)", self.index, self.kind_name(), self.name)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GridKind {
    /// `gridDim.x = min(SMs, Π tiles)`.
    Persistent,
    /// `gridDim.x = Π tiles`.
    Tiles,
}

#[derive(Clone, Debug)]
pub struct Spec {
    pub meta: LaunchMeta,
    pub tensors: Vec<TensorSpec>,
    pub scalars: Vec<ScalarSpec>,
    /// Symbolic dimensions in order of first appearance in the tensors.
    pub dim_names: Vec<String>,
    /// Scalars of integer type (the grid may read them).
    pub int_scalars: BTreeSet<String>,
    pub args: Vec<ArgSpec>,
    pub grid_kind: GridKind,
    pub tiles: Vec<Expr>,
}

fn known(names: impl IntoIterator<Item = impl AsRef<str>>) -> String {
    let v: Vec<String> = names.into_iter().map(|s| s.as_ref().to_string()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

impl Spec {
    /// Parse and validate launch.json text.
    pub fn from_json(text: &str) -> Result<Spec> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| launch(format!("invalid JSON: {e}")))?;
        let Value::Object(obj) = &v else {
            return Err(launch(format!(
                "launch.json: expected a JSON object, got {v}"
            )));
        };
        match obj.get("schema") {
            Some(Value::String(s)) if s == SCHEMA => {}
            other => {
                let got = other.map_or("nothing".to_string(), Value::to_string);
                return Err(launch(format!(
                    "launch.json field `schema`: expected \"{SCHEMA}\", got {got}"
                )));
            }
        }
        if obj.get("module_state") == Some(&Value::Bool(true)) {
            // Its state is in module globals, which every launch on the device would share:
            // launches on two streams would race (docs/launch.md, `state`).
            return Err(launch(
                "launch.json field `module_state`: the kernel keeps its state in module globals, \
                 as Cake built such kernels before the launch's workspace became an argument; \
                 rebuild it with this Cake (`cake build`), which passes it as `state`"
                    .to_string(),
            ));
        }
        let meta: LaunchMeta =
            serde_json::from_value(v).map_err(|e| launch(format!("launch.json: {e}")))?;
        Spec::new(meta)
    }

    pub fn new(meta: LaunchMeta) -> Result<Spec> {
        if meta.schema != SCHEMA {
            return Err(launch(format!(
                "launch.json field `schema`: expected \"{SCHEMA}\", got \"{}\"",
                meta.schema
            )));
        }
        for (key, v) in [
            ("kernel", &meta.kernel),
            ("symbol", &meta.symbol),
            ("cubin", &meta.cubin),
        ] {
            if v.is_empty() {
                return Err(launch(format!(
                    "launch.json field `{key}`: expected a non-empty string"
                )));
            }
        }
        // The image is read from beside launch.json: a bare file name, never a path out of it.
        if meta.cubin.contains(['/', '\\', '\0']) || meta.cubin.starts_with('.') {
            return Err(launch(format!(
                "launch.json field `cubin`: expected a file name beside launch.json, got {:?}",
                meta.cubin
            )));
        }
        if !is_c_identifier(&meta.symbol) {
            return Err(launch(format!(
                "launch.json field `symbol`: expected a C identifier, got {:?}",
                meta.symbol
            )));
        }
        for (key, v) in [("block", meta.block), ("cluster", meta.cluster)] {
            if v.contains(&0) {
                return Err(launch(format!(
                    "launch.json field `{key}`: expected 3 positive ints, got {v:?}"
                )));
            }
        }
        let threads: u64 = meta.block.iter().map(|&b| u64::from(b)).product();
        if threads > 1024 {
            return Err(launch(format!(
                "launch.json field `block`: {:?} has more than 1024 threads",
                meta.block
            )));
        }
        if meta.cluster[1] != 1 || meta.cluster[2] != 1 {
            return Err(launch(format!(
                "launch.json field `cluster`: the grid is one-dimensional, so the cluster must be [x, 1, 1], got {:?}",
                meta.cluster
            )));
        }
        if meta.dynamic_smem > u64::from(u32::MAX) {
            return Err(launch(format!(
                "launch.json field `dynamic_smem`: {} does not fit 32 bits",
                meta.dynamic_smem
            )));
        }

        let tensors = parse_tensors(&meta)?;
        let scalars = parse_scalars(&meta)?;
        let tensor_names: HashSet<&str> = tensors.iter().map(|t| t.name.as_str()).collect();
        let scalar_names: HashSet<&str> = scalars.iter().map(|s| s.name.as_str()).collect();
        let mut both: Vec<&str> = tensor_names.intersection(&scalar_names).copied().collect();
        both.sort();
        if !both.is_empty() {
            return Err(launch(format!(
                "launch.json: names used both as tensor and scalar: {}",
                both.join(", ")
            )));
        }
        let mut dim_names: Vec<String> = Vec::new();
        for t in &tensors {
            for d in &t.dims {
                if let Dim::Sym(s) = d {
                    if !dim_names.contains(s) {
                        dim_names.push(s.clone());
                    }
                }
            }
        }
        let mut clash: Vec<&str> = dim_names
            .iter()
            .map(String::as_str)
            .filter(|d| scalar_names.contains(d))
            .collect();
        clash.sort();
        if !clash.is_empty() {
            return Err(launch(format!(
                "launch.json: names used both as dim and scalar: {}",
                clash.join(", ")
            )));
        }
        for z in &meta.zero {
            match tensors.iter().find(|t| &t.name == z) {
                Some(t) if t.access.writes() => {}
                Some(_) => {
                    return Err(launch(format!(
                        "launch.json field `zero`: tensor `{z}` is zeroed but the kernel does not write it"
                    )))
                }
                None => {
                    return Err(launch(format!(
                        "launch.json field `zero`: `{z}` is not a tensor parameter"
                    )))
                }
            }
        }
        let int_scalars = scalars
            .iter()
            .filter(|s| s.dtype.kind != dtype::Kind::Float)
            .map(|s| s.name.clone())
            .collect();
        let mut spec = Spec {
            tensors,
            scalars,
            dim_names,
            int_scalars,
            args: Vec::new(),
            grid_kind: GridKind::Persistent,
            tiles: Vec::new(),
            meta,
        };
        spec.args = spec
            .meta
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| spec.parse_arg(i, a))
            .collect::<Result<_>>()?;
        spec.check_state()?;
        spec.parse_grid()?;
        Ok(spec)
    }

    pub fn kernel(&self) -> &str {
        &self.meta.kernel
    }

    /// The positional calling convention: tensors first, then scalars.
    pub fn param_names(&self) -> Vec<&str> {
        self.tensors
            .iter()
            .map(|t| t.name.as_str())
            .chain(self.scalars.iter().map(|s| s.name.as_str()))
            .collect()
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorSpec> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn scalar(&self, name: &str) -> Option<&ScalarSpec> {
        self.scalars.iter().find(|s| s.name == name)
    }

    /// A workspace is sized sensibly and taken by exactly one argument.
    fn check_state(&self) -> Result<()> {
        let takers = self
            .args
            .iter()
            .filter(|a| a.kind == ArgKind::State)
            .count();
        match self.meta.state {
            None => Ok(()),
            Some(s) if s.bytes == 0 || s.bytes > MAX_STATE_BYTES || s.zeroed > s.bytes => {
                Err(launch(format!(
                    "launch.json field `state`: {} bytes with {} zeroed; expected 1 to {MAX_STATE_BYTES} bytes, of which at most all are zeroed",
                    s.bytes, s.zeroed
                )))
            }
            Some(_) if takers != 1 => Err(launch(format!(
                "launch.json field `state`: the workspace must be exactly one argument (`{{\"kind\": \"state\"}}`), found {takers}"
            ))),
            Some(_) => Ok(()),
        }
    }

    fn parse_arg(&self, i: usize, a: &Arg) -> Result<ArgSpec> {
        let place = format!("launch.json args[{i}]");
        let (kind, name) = match a {
            Arg::Tensormap { tensor, .. } | Arg::Ptr { tensor } => {
                let k = if matches!(a, Arg::Ptr { .. }) {
                    "ptr"
                } else {
                    "tensormap"
                };
                if self.tensor(tensor).is_none() {
                    return Err(launch(format!(
                        "{place} ({k}) field `tensor`: unknown tensor '{tensor}' (known: {})",
                        known(self.tensors.iter().map(|t| &t.name))
                    )));
                }
                (ArgKind::Ptr, tensor)
            }
            Arg::Dim { name } => {
                if !self.dim_names.contains(name) {
                    return Err(launch(format!(
                        "{place} (dim) field `name`: unknown dim '{name}' (known: {})",
                        known(&self.dim_names)
                    )));
                }
                (ArgKind::Dim, name)
            }
            Arg::Scalar { name } => {
                if self.scalar(name).is_none() {
                    return Err(launch(format!(
                        "{place} (scalar) field `name`: unknown scalar '{name}' (known: {})",
                        known(self.scalars.iter().map(|s| &s.name))
                    )));
                }
                (ArgKind::Scalar, name)
            }
            Arg::State => {
                if self.meta.state.is_none() {
                    return Err(launch(format!(
                        "{place} (state): the kernel takes a workspace, but launch.json has no `state` to size it"
                    )));
                }
                (ArgKind::State, &STATE_ARG.to_string())
            }
        };
        let mut arg = ArgSpec {
            index: i,
            kind,
            name: name.clone(),
        };
        if let Arg::Tensormap {
            box_dims,
            swizzle,
            interleave,
            oob_fill,
            l2_promotion,
            ..
        } = a
        {
            let place = format!("launch.json arg {i} (tensormap `{name}`)");
            let t = self.tensor(name).expect("checked above");
            let rank = t.dims.len();
            if !(1..=MAX_TMA_RANK).contains(&rank) {
                return Err(launch(format!(
                    "{place}: tensor rank must be in [1, {MAX_TMA_RANK}] for TMA, got {rank}"
                )));
            }
            if box_dims.len() != rank {
                return Err(launch(format!(
                    "{place} field `box`: expected {rank} ints (innermost first), got {box_dims:?}"
                )));
            }
            for (j, &b) in box_dims.iter().enumerate() {
                if !(1..=MAX_BOX_DIM).contains(&b) {
                    return Err(launch(format!(
                        "{place} field `box`: box[{j}] must be in [1, {MAX_BOX_DIM}], got {b}"
                    )));
                }
            }
            if ![0, 32, 64, 128].contains(swizzle) {
                return Err(launch(format!(
                    "{place} field `swizzle`: expected one of 0, 32, 64, 128, got {swizzle}"
                )));
            }
            let interleave = match interleave.as_str() {
                "none" => Interleave::None,
                "16B" => Interleave::B16,
                "32B" => Interleave::B32,
                other => {
                    return Err(launch(format!(
                        "{place} field `interleave`: expected one of none, 16B, 32B, got '{other}'"
                    )))
                }
            };
            let oob_nan = match oob_fill.as_str() {
                "zero" => false,
                "nan" => true,
                other => {
                    return Err(launch(format!(
                        "{place} field `oob_fill`: expected one of zero, nan, got '{other}'"
                    )))
                }
            };
            if oob_nan && !TMA_FLOAT_TYPES.contains(&t.dtype.tma) {
                return Err(launch(format!(
                    "{place} field `oob_fill`: 'nan' needs a floating-point TMA type, tensor dtype is {}",
                    t.dtype.name
                )));
            }
            if ![0, 64, 128, 256].contains(l2_promotion) {
                return Err(launch(format!(
                    "{place} field `l2_promotion`: expected one of 0, 64, 128, 256, got {l2_promotion}"
                )));
            }
            let tma = TmaSpec {
                box_dims: box_dims.clone(),
                swizzle: *swizzle,
                interleave,
                oob_nan,
                l2_promotion: *l2_promotion,
            };
            crate::tensormap::check_box(&tma, t.dtype.bytes, &place)?;
            arg.kind = ArgKind::TensorMap(tma);
        }
        Ok(arg)
    }

    fn parse_grid(&mut self) -> Result<()> {
        let (kind, tiles) = match &self.meta.grid {
            Grid::Persistent { tiles } => (GridKind::Persistent, tiles),
            Grid::Tiles { tiles } => (GridKind::Tiles, tiles),
        };
        if tiles.is_empty() {
            return Err(launch(
                "launch.json grid field `tiles`: expected a non-empty list of expressions",
            ));
        }
        let names: BTreeSet<&str> = self
            .dim_names
            .iter()
            .chain(self.int_scalars.iter())
            .map(String::as_str)
            .collect();
        let mut exprs = Vec::new();
        for (i, t) in tiles.iter().enumerate() {
            let place = format!("launch.json grid tiles[{i}]");
            let e = Expr::parse(t, &place)?;
            for n in e.names() {
                if !names.contains(n) {
                    return Err(launch(format!(
                        "{place}: unknown name `{n}` (known: {})",
                        known(&names)
                    )));
                }
            }
            exprs.push(e);
        }
        self.grid_kind = kind;
        self.tiles = exprs;
        Ok(())
    }
}

fn parse_tensors(meta: &LaunchMeta) -> Result<Vec<TensorSpec>> {
    let mut out: Vec<TensorSpec> = Vec::new();
    for (i, t) in meta.tensors.iter().enumerate() {
        if t.name.is_empty() {
            return Err(launch(format!("launch.json tensors[{i}]: empty `name`")));
        }
        let place = format!("launch.json tensor `{}`", t.name);
        if out.iter().any(|o| o.name == t.name) {
            return Err(launch(format!("{place}: duplicate tensor name")));
        }
        let dtype = dtype::normalize(&t.dtype)
            .map_err(|e| launch(format!("{place} field `dtype`: {e}")))?;
        let dims = t
            .dims
            .iter()
            .map(|d| match d {
                Value::String(s) if !s.is_empty() => Ok(Dim::Sym(s.clone())),
                Value::Number(n) if n.as_u64().is_some() => Ok(Dim::Fixed(n.as_u64().unwrap_or(0))),
                _ => Err(launch(format!(
                    "{place} field `dims`: expected a list of names or ints >= 0, got {}",
                    Value::Array(t.dims.clone())
                ))),
            })
            .collect::<Result<Vec<Dim>>>()?;
        let access = match t.access.as_str() {
            "read" => Access::Read,
            "write" => Access::Write,
            "readwrite" => Access::ReadWrite,
            other => {
                return Err(launch(format!(
                    "{place} field `access`: expected read, write or readwrite, got '{other}'"
                )))
            }
        };
        out.push(TensorSpec {
            name: t.name.clone(),
            dtype,
            dims,
            access,
        });
    }
    Ok(out)
}

fn parse_scalars(meta: &LaunchMeta) -> Result<Vec<ScalarSpec>> {
    let mut out: Vec<ScalarSpec> = Vec::new();
    for (i, s) in meta.scalars.iter().enumerate() {
        if s.name.is_empty() {
            return Err(launch(format!("launch.json scalars[{i}]: empty `name`")));
        }
        if out.iter().any(|o| o.name == s.name) {
            return Err(launch(format!(
                "launch.json scalar `{}`: duplicate scalar name",
                s.name
            )));
        }
        let dtype = dtype::lookup(&s.dtype).filter(|d| SCALAR_DTYPES.contains(&d.name));
        let Some(dtype) = dtype else {
            return Err(launch(format!(
                "launch.json scalar `{}` field `dtype`: expected one of {}, got '{}'",
                s.name,
                SCALAR_DTYPES.join(", "),
                s.dtype
            )));
        };
        out.push(ScalarSpec {
            name: s.name.clone(),
            dtype,
        });
    }
    Ok(out)
}

/// `[A-Za-z_][A-Za-z0-9_]*`: what the lowering's `extern "C"` symbols are.
fn is_c_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}
