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
    Ok(())
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}
