//! Binding: match the tensors and scalars of one call to a [`Spec`], check every tensor (device,
//! dtype, rank, fixed and symbolic dimensions, row-major contiguity, alignment, write aliasing)
//! and every scalar, bind the symbolic dimensions and compute the grid. Pure: no driver calls.

use std::collections::BTreeMap;

use crate::dtype::{self, DType, Kind};
use crate::error::{launch, Result};
use crate::spec::{Dim, GridKind, Spec};

/// Where a tensor lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Device {
    /// A CUDA device, by ordinal.
    Cuda(i32),
    /// Anywhere else; the text names it for messages (`cpu`, `meta`).
    Other(String),
}

impl std::fmt::Display for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Device::Cuda(i) => write!(f, "cuda:{i}"),
            Device::Other(s) => f.write_str(s),
        }
    }
}

/// A neutral description of one tensor argument (what a torch tensor tells about itself).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorDesc {
    /// The parameter it is passed as.
    pub name: String,
    /// Any spelling [`dtype::lookup`] knows: `bf16`, `bfloat16`, `torch.bfloat16`.
    pub dtype: String,
    pub shape: Vec<i64>,
    /// In elements, as `torch.Tensor.stride()` gives them.
    pub strides: Vec<i64>,
    pub data_ptr: u64,
    pub device: Device,
}

/// A scalar argument's value as the caller gave it.
#[derive(Clone, Debug, PartialEq)]
pub enum ScalarValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    /// Something else; the text names its type for the message.
    Other(String),
}

/// A checked tensor: its shape and address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundTensor {
    pub name: String,
    pub dtype: &'static DType,
    pub shape: Vec<u64>,
    pub data_ptr: u64,
}

impl BoundTensor {
    pub fn nbytes(&self) -> u128 {
        self.shape
            .iter()
            .fold(u128::from(self.dtype.bytes), |n, &s| n * u128::from(s))
    }
}

/// A scalar converted to its kernel-parameter bytes (little-endian, `size` bytes of `bits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarBits {
    pub bits: u64,
    pub size: usize,
}

/// One call, checked: the device, dimension values, tensors and scalars in spec order, and grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    pub device: i32,
    /// Symbolic dimensions in [`Spec::dim_names`] order.
    pub dims: Vec<(String, u64)>,
    pub tensors: Vec<BoundTensor>,
    pub scalars: Vec<(String, ScalarBits)>,
    /// Integer scalar values (the grid may read them).
    pub int_scalars: BTreeMap<String, i128>,
    pub grid: [u32; 3],
}

impl Bound {
    /// An empty problem: a grid component is zero and nothing is launched.
    pub fn is_empty(&self) -> bool {
        self.grid.contains(&0)
    }

    /// The values the grid expressions may read: dimensions and integer scalars.
    pub fn env(&self) -> BTreeMap<String, i128> {
        let mut env: BTreeMap<String, i128> = self
            .dims
            .iter()
            .map(|(n, v)| (n.clone(), i128::from(*v)))
            .collect();
        env.extend(self.int_scalars.iter().map(|(k, v)| (k.clone(), *v)));
        env
    }

    pub fn dim(&self, name: &str) -> Option<u64> {
        self.dims.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }

    pub fn tensor(&self, name: &str) -> Option<&BoundTensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    pub fn scalar(&self, name: &str) -> Option<ScalarBits> {
        self.scalars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
    }
}

/// Row-major strides of `shape`, in elements.
pub fn row_major_strides(shape: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; shape.len()];
    let mut acc: u64 = 1;
    for i in (0..shape.len()).rev() {
        out[i] = acc;
        acc = acc.saturating_mul(shape[i]);
    }
    out
}

/// Contiguous in torch's sense: row-major, where the stride of a size-1 dimension does not
/// matter, and a tensor without elements is contiguous whatever its strides.
pub fn is_row_major(shape: &[u64], strides: &[i64]) -> bool {
    if shape.contains(&0) {
        return true;
    }
    let expected = row_major_strides(shape);
    shape
        .iter()
        .zip(strides)
        .zip(&expected)
        .all(|((&n, &s), &e)| n == 1 || u64::try_from(s).is_ok_and(|s| s == e))
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    let items: Vec<String> = v.iter().map(ToString::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// Bind one call. `device`: the launch device; when `None`, the first tensor's. `num_sms`: the
/// device's multiprocessor count (the persistent grid's cap).
pub fn bind(
    spec: &Spec,
    tensors: &[TensorDesc],
    scalars: &[(String, ScalarValue)],
    num_sms: u32,
    device: Option<i32>,
) -> Result<Bound> {
    let kernel = spec.kernel();
    let expected = spec.param_names().join(", ");
    // Every parameter exactly once, nothing else.
    let mut seen: Vec<&str> = Vec::new();
    for name in tensors
        .iter()
        .map(|t| &t.name)
        .chain(scalars.iter().map(|s| &s.0))
    {
        if seen.contains(&name.as_str()) {
            return Err(launch(format!(
                "kernel `{kernel}`: argument `{name}` given twice"
            )));
        }
        seen.push(name);
    }
    for t in tensors {
        if let Some(s) = spec.scalar(&t.name) {
            return Err(launch(format!(
                "scalar `{}`: expected a number for {}, got a tensor",
                t.name, s.dtype.name
            )));
        }
        if spec.tensor(&t.name).is_none() {
            return Err(launch(format!(
                "kernel `{kernel}`: unknown argument `{}` (expected: {expected})",
                t.name
            )));
        }
    }
    for (name, _) in scalars {
        if spec.tensor(name).is_some() {
            return Err(launch(format!(
                "tensor `{name}`: expected a tensor, got a scalar"
            )));
        }
        if spec.scalar(name).is_none() {
            return Err(launch(format!(
                "kernel `{kernel}`: unknown argument `{name}` (expected: {expected})"
            )));
        }
    }
    let missing: Vec<&str> = spec
        .param_names()
        .into_iter()
        .filter(|n| !seen.contains(n))
        .collect();
    if !missing.is_empty() {
        return Err(launch(format!(
            "kernel `{kernel}`: missing argument(s) {} (expected: {expected})",
            missing.join(", ")
        )));
    }

    // The launch device: given, or the first tensor's.
    let device = match device {
        Some(d) => d,
        None => match spec.tensors.first() {
            None => 0,
            Some(first) => {
                let t = tensors
                    .iter()
                    .find(|t| t.name == first.name)
                    .expect("checked");
                match &t.device {
                    Device::Cuda(d) => *d,
                    other => {
                        return Err(launch(format!(
                            "tensor `{}`: expected a CUDA tensor, got one on {other}",
                            t.name
                        )))
                    }
                }
            }
        },
    };

    let mut dims: BTreeMap<String, (u64, String, usize)> = BTreeMap::new();
    let mut bound_tensors = Vec::new();
    for ts in &spec.tensors {
        let t = tensors.iter().find(|t| t.name == ts.name).expect("checked");
        let name = &t.name;
        if t.device != Device::Cuda(device) {
            return Err(launch(format!(
                "tensor `{name}`: expected a CUDA tensor on cuda:{device} (the launch device), got one on {}",
                t.device
            )));
        }
        let dt = dtype::lookup(&t.dtype)
            .ok_or_else(|| launch(format!("tensor `{name}`: unsupported dtype '{}'", t.dtype)))?;
        if dt.storage != ts.dtype.storage {
            return Err(launch(format!(
                "tensor `{name}`: expected dtype {}, got {}",
                ts.dtype.name, dt.name
            )));
        }
        if t.shape.len() != ts.dims.len() {
            return Err(launch(format!(
                "tensor `{name}`: expected rank {} (dims {}), got rank {} (shape {})",
                ts.dims.len(),
                list(&ts.dims),
                t.shape.len(),
                list(&t.shape)
            )));
        }
        if t.strides.len() != t.shape.len() {
            return Err(launch(format!(
                "tensor `{name}`: {} strides for rank {}",
                t.strides.len(),
                t.shape.len()
            )));
        }
        let shape: Vec<u64> = t
            .shape
            .iter()
            .map(|&n| u64::try_from(n))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| {
                launch(format!(
                    "tensor `{name}`: negative extent in shape {}",
                    list(&t.shape)
                ))
            })?;
        for (j, (d, &n)) in ts.dims.iter().zip(&shape).enumerate() {
            match d {
                Dim::Fixed(f) if *f != n => {
                    return Err(launch(format!(
                        "tensor `{name}` dim {j}: expected fixed extent {f}, got {n}"
                    )));
                }
                Dim::Fixed(_) => {}
                Dim::Sym(s) => match dims.get(s) {
                    Some((v, src, sj)) if *v != n => {
                        return Err(launch(format!(
                            "dim `{s}` is {v} from {src} (dim {sj}) but {n} from {name} (dim {j})"
                        )));
                    }
                    Some(_) => {}
                    None => {
                        dims.insert(s.clone(), (n, name.clone(), j));
                    }
                },
            }
        }
        if !is_row_major(&shape, &t.strides) {
            return Err(launch(format!(
                "tensor `{name}`: expected a contiguous row-major tensor, got shape {} with strides {} (expected strides {}); call .contiguous()",
                list(&shape),
                list(&t.strides),
                list(&row_major_strides(&shape))
            )));
        }
        if !t.data_ptr.is_multiple_of(16) {
            return Err(launch(format!(
                "tensor `{name}`: data_ptr must be 16-byte aligned, got {:#x} (remainder {})",
                t.data_ptr,
                t.data_ptr % 16
            )));
        }
        bound_tensors.push(BoundTensor {
            name: name.clone(),
            dtype: ts.dtype,
            shape,
            data_ptr: t.data_ptr,
        });
    }
    check_write_aliasing(spec, &bound_tensors)?;

    let mut bound_scalars = Vec::new();
    let mut int_scalars = BTreeMap::new();
    for ss in &spec.scalars {
        let v = &scalars
            .iter()
            .find(|(n, _)| *n == ss.name)
            .expect("checked")
            .1;
        let (bits, int) = scalar_bits(&ss.name, ss.dtype, v)?;
        if let Some(i) = int {
            int_scalars.insert(ss.name.clone(), i);
        }
        bound_scalars.push((ss.name.clone(), bits));
    }

    let dims: Vec<(String, u64)> = spec
        .dim_names
        .iter()
        .map(|n| (n.clone(), dims[n].0))
        .collect();
    let mut bound = Bound {
        device,
        dims,
        tensors: bound_tensors,
        scalars: bound_scalars,
        int_scalars,
        grid: [0, 1, 1],
    };
    bound.grid = compute_grid(spec, &bound.env(), num_sms)?;
    Ok(bound)
}

/// A tensor the kernel writes must not share memory with any other tensor argument.
fn check_write_aliasing(spec: &Spec, tensors: &[BoundTensor]) -> Result<()> {
    for (ts, a) in spec.tensors.iter().zip(tensors) {
        if !ts.access.writes() || a.nbytes() == 0 {
            continue;
        }
        let (a0, a1) = (u128::from(a.data_ptr), u128::from(a.data_ptr) + a.nbytes());
        for b in tensors {
            if b.name == a.name || b.nbytes() == 0 {
                continue;
            }
            let (b0, b1) = (u128::from(b.data_ptr), u128::from(b.data_ptr) + b.nbytes());
            if a0 < b1 && b0 < a1 {
                return Err(launch(format!(
                    "tensor `{}` (access {}) overlaps tensor `{}` in memory; pass distinct buffers",
                    a.name,
                    ts.access.name(),
                    b.name
                )));
            }
        }
    }
    Ok(())
}

/// The grid for `env` (dimension and integer-scalar values). A zero component means: launch
/// nothing.
pub fn compute_grid(spec: &Spec, env: &BTreeMap<String, i128>, num_sms: u32) -> Result<[u32; 3]> {
    let mut total: i128 = 1;
    for (i, e) in spec.tiles.iter().enumerate() {
        let place = format!("grid tiles[{i}]");
        let n = e.eval(env, &place)?;
        if n < 0 {
            return Err(launch(format!("{place}: evaluates to {n} < 0 ({e})")));
        }
        total = total.checked_mul(n).ok_or_else(|| {
            launch(format!(
                "grid: the tile count overflows at tiles[{i}] ({e})"
            ))
        })?;
    }
    if total == 0 {
        return Ok([0, 1, 1]);
    }
    let cx = i128::from(spec.meta.cluster[0]);
    let mut x = match spec.grid_kind {
        GridKind::Persistent => {
            if num_sms == 0 {
                return Err(launch(
                    "a persistent grid needs the device's SM count, got 0",
                ));
            }
            // Whole clusters that fit on the SMs (at least one).
            let sms = (i128::from(num_sms) / cx * cx).max(cx);
            total.min(sms)
        }
        GridKind::Tiles => total,
    };
    // A cluster launch needs gridDim.x divisible by the cluster width. Round up: the extra CTAs
    // find no tile (the kernel's tile loop is guarded by the tile count), while rounding down
    // would drop tiles.
    x = (x + cx - 1) / cx * cx;
    const LIMIT: i128 = i32::MAX as i128;
    if x > LIMIT {
        return Err(launch(format!(
            "grid dim 0 = {x} exceeds the CUDA limit {LIMIT}"
        )));
    }
    Ok([x as u32, 1, 1])
}

/// A scalar's parameter bytes, checked against its dtype; also its integer value when it is
/// of an integer type.
fn scalar_bits(name: &str, dt: &DType, v: &ScalarValue) -> Result<(ScalarBits, Option<i128>)> {
    let size = dt.bytes as usize;
    let shown = |v: &ScalarValue| match v {
        ScalarValue::Int(i) => i.to_string(),
        ScalarValue::Float(f) => format!("{f:?}"),
        ScalarValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        ScalarValue::Other(t) => t.clone(),
    };
    if dt.kind == Kind::Float {
        let f = match v {
            ScalarValue::Int(i) => *i as f64,
            ScalarValue::Float(f) => *f,
            ScalarValue::Bool(_) => {
                return Err(launch(format!(
                    "scalar `{name}`: expected a number for {}, got bool",
                    dt.name
                )))
            }
            ScalarValue::Other(t) => {
                return Err(launch(format!(
                    "scalar `{name}`: expected a number for {}, got {t}",
                    dt.name
                )))
            }
        };
        let range = || {
            launch(format!(
                "scalar `{name}`: {f:?} out of range for {}",
                dt.name
            ))
        };
        let bits = match dt.name {
            "f64" => f.to_bits(),
            "f32" => {
                let x = f as f32;
                if f.is_finite() && !x.is_finite() {
                    return Err(range());
                }
                u64::from(x.to_bits())
            }
            "f16" => u64::from(f64_to_f16_bits(f).ok_or_else(range)?),
            "bf16" => {
                let x = f as f32;
                if f.is_finite() && !x.is_finite() {
                    return Err(range());
                }
                u64::from(f32_to_bf16_bits(x))
            }
            other => {
                return Err(launch(format!(
                    "scalar `{name}`: unsupported dtype {other}"
                )))
            }
        };
        return Ok((ScalarBits { bits, size }, None));
    }
    let ScalarValue::Int(i) = v else {
        return Err(launch(format!(
            "scalar `{name}`: expected an int for {}, got {}",
            dt.name,
            shown(v)
        )));
    };
    let nbits = 8 * dt.bytes;
    let (lo, hi): (i128, i128) = match dt.kind {
        Kind::Int => (-(1i128 << (nbits - 1)), (1i128 << (nbits - 1)) - 1),
        _ => (0, (1i128 << nbits) - 1),
    };
    if !(lo..=hi).contains(i) {
        return Err(launch(format!(
            "scalar `{name}`: {i} out of range for {} [{lo}, {hi}]",
            dt.name
        )));
    }
    // Two's complement, truncated to the parameter's width.
    let bits = (*i as u64)
        & if nbits == 64 {
            u64::MAX
        } else {
            (1u64 << nbits) - 1
        };
    Ok((ScalarBits { bits, size }, Some(*i)))
}

/// IEEE binary16 bits of `v`, rounded to nearest even; `None` when it overflows (as Python's
/// `struct.pack('<e', v)` raises). NaN and infinities map to themselves.
pub fn f64_to_f16_bits(v: f64) -> Option<u16> {
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    if v.is_nan() {
        return Some(sign | 0x7e00);
    }
    let a = v.abs();
    if a.is_infinite() {
        return Some(sign | 0x7c00);
    }
    if a >= 65520.0 {
        return None;
    }
    if a < f64::powi(2.0, -14) {
        // Subnormal (or rounds up to the smallest normal, whose encoding follows on).
        let n = (a * f64::powi(2.0, 24)).round_ties_even() as u16;
        return Some(sign | n);
    }
    let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let mant = a / f64::powi(2.0, e);
    let mut n = ((mant - 1.0) * 1024.0).round_ties_even() as u32;
    let mut e = e;
    if n == 1024 {
        n = 0;
        e += 1;
    }
    let exp = (e + 15) as u32;
    if exp >= 31 {
        return None;
    }
    Some(sign | (exp << 10) as u16 | n as u16)
}

/// bfloat16 bits of `x`, rounded to nearest even (shared with the compiler).
pub use cake_target::f32_to_bf16_bits;

#[cfg(test)]
mod contiguity {
    use super::is_row_major;

    #[test]
    fn empty_tensors_are_contiguous_whatever_their_strides() {
        // torch.empty(4, 0).stride() is (1, 1).
        assert!(is_row_major(&[4, 0], &[1, 1]));
        assert!(is_row_major(&[0], &[1]));
        assert!(is_row_major(&[2, 3], &[3, 1]));
        assert!(!is_row_major(&[2, 3], &[1, 2]));
        assert!(
            is_row_major(&[1, 3], &[99, 1]),
            "a size-1 dimension's stride does not matter"
        );
    }
}
