//! `M=4096,N=7168,K=4096`: the shape a cost estimate is for.

use std::collections::BTreeMap;

use crate::CostError;

/// Parse `NAME=INT[,NAME=INT...]` (spaces allowed around items).
pub fn parse_shape(text: &str) -> Result<BTreeMap<String, i64>, CostError> {
    let mut out = BTreeMap::new();
    if text.trim().is_empty() {
        return Err(CostError::Shape(
            "the shape is empty; write NAME=VALUE pairs, e.g. M=4096,N=7168,K=4096".into(),
        ));
    }
    for item in text.split(',') {
        let item = item.trim();
        let Some((name, value)) = item.split_once('=') else {
            return Err(CostError::Shape(format!(
                "`{item}` is not NAME=VALUE (e.g. M=4096)"
            )));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(CostError::Shape(format!(
                "`{name}` in `{item}` is not a dimension name"
            )));
        }
        let v: i64 = value
            .replace('_', "")
            .parse()
            .map_err(|_| CostError::Shape(format!("`{value}` in `{item}` is not an integer")))?;
        if v < 1 {
            return Err(CostError::Shape(format!(
                "{name} = {v}: a dimension must be at least 1"
            )));
        }
        if out.insert(name.to_string(), v).is_some() {
            return Err(CostError::Shape(format!("{name} is given twice")));
        }
    }
    Ok(out)
}

/// Every symbolic dimension of `kernel` must be bound and every bound name must be one of them.
pub fn check_shape(
    kernel: &cake_ir::Kernel,
    shape: &BTreeMap<String, i64>,
) -> Result<(), CostError> {
    let dims: Vec<&str> = kernel.dims.iter().map(|(_, d)| d.name.as_str()).collect();
    if let Some(unknown) = shape.keys().find(|k| !dims.contains(&k.as_str())) {
        return Err(CostError::Shape(format!(
            "`{unknown}` is not a dimension of `{}`; its dimensions are {}",
            kernel.name,
            list(&dims)
        )));
    }
    let missing: Vec<&str> = dims
        .iter()
        .copied()
        .filter(|d| !shape.contains_key(*d))
        .collect();
    if !missing.is_empty() {
        return Err(CostError::Shape(format!(
            "`{}` needs a value for {} (its dimensions are {})",
            kernel.name,
            list(&missing),
            list(&dims)
        )));
    }
    // The kernel takes each dimension as a 32-bit `int` (and indexes rows, columns and tiles
    // with `int`): a larger value is not a shape it can run.
    for (name, &v) in shape {
        if v > i64::from(i32::MAX) {
            return Err(CostError::Shape(format!(
                "{name} = {v} is more than the kernel's 32-bit `int` dimensions can hold (at most {})",
                i32::MAX
            )));
        }
    }
    // Every tensor must be addressable: its size in bytes fits a signed 64-bit offset.
    for (_, p) in kernel.params.iter() {
        let cake_ir::ParamKind::Tensor { dtype, dims: ext } = &p.kind else {
            continue;
        };
        let bytes = ext.iter().try_fold(dtype.bytes() as i64, |acc, e| {
            let n = match e {
                cake_ir::Extent::Fixed(n) => i64::from(*n),
                cake_ir::Extent::Sym(d) => shape[&kernel.dims[*d].name],
            };
            acc.checked_mul(n)
        });
        if bytes.is_none() {
            let extents: Vec<String> = ext
                .iter()
                .map(|e| match e {
                    cake_ir::Extent::Fixed(n) => n.to_string(),
                    cake_ir::Extent::Sym(d) => {
                        let name = &kernel.dims[*d].name;
                        format!("{name}={}", shape[name])
                    }
                })
                .collect();
            return Err(CostError::Shape(format!(
                "tensor `{}` ({} of {}) would hold more than 2^63 bytes: no GPU can address it",
                p.name,
                extents.join(" x "),
                dtype
            )));
        }
    }
    Ok(())
}

/// The product of the tile loop's counts must fit the kernel's 32-bit `int` tile index.
pub fn check_tiles(kernel: &cake_ir::Kernel, counts: &[i64]) -> Result<(), CostError> {
    let total = counts.iter().try_fold(1i64, |a, &c| a.checked_mul(c));
    match total {
        Some(t) if t <= i64::from(i32::MAX) => Ok(()),
        _ => Err(CostError::Shape(format!(
            "`{}` would walk {} tiles: more than its 32-bit `int` tile index can count (at most {})",
            kernel.name,
            counts
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" x "),
            i32::MAX
        ))),
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
