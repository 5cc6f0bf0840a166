//! The `cake targets` views of the table: a human table and JSON.

use serde_json::{json, Value};

use crate::feature::Feature;
use crate::target::{Target, TARGETS};

/// Appended to a cell whose value is marked unverified (`[U]`) in its source.
const UNVERIFIED: &str = "*";

/// One row per target: name, SKU, MMA family, opt-in smem per block, smem per SM (both in
/// bytes), threads per block, registers per thread, cluster portable/max, TMEM and features.
/// A `*` marks a value whose source says it is unverified.
pub fn render_table() -> String {
    let header: Vec<String> = [
        "target",
        "sku",
        "mma",
        "smem/block",
        "smem/SM",
        "threads/block",
        "regs/thread",
        "cluster",
        "tmem",
        "features",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rows = vec![header];
    rows.extend(TARGETS.iter().map(row));

    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}", w = *w))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str("smem in bytes; * = unverified value, see the JSON form for every source\n");
    out
}

fn row(t: &Target) -> Vec<String> {
    let l = &t.limits;
    let mark = |value: String, fields: &[&str]| {
        if fields.iter().any(|f| t.is_unverified(f)) {
            value + UNVERIFIED
        } else {
            value
        }
    };
    let cluster = if l.cluster_max == 0 {
        "-".to_string()
    } else {
        format!("{}/{}", l.cluster_portable, l.cluster_max)
    };
    let tmem = match t.tmem {
        Some(tm) => format!("{}x{}", tm.lanes, tm.columns),
        None => "-".to_string(),
    };
    let features: Vec<&str> = t.features.iter().map(|f| f.name()).collect();
    vec![
        t.name.to_string(),
        t.sku.to_string(),
        t.mma.name().to_string(),
        mark(
            l.smem_per_block_optin.to_string(),
            &["smem_per_block_optin"],
        ),
        mark(l.smem_per_sm.to_string(), &["smem_per_sm"]),
        mark(l.threads_per_block.to_string(), &["threads_per_block"]),
        mark(l.regs_per_thread.to_string(), &["regs_per_thread"]),
        mark(cluster, &["cluster_portable", "cluster_max"]),
        mark(tmem, &["tmem"]),
        features.join(", "),
    ]
}

/// Every target with every field and its sources, plus the feature catalogue:
/// `{"targets": [...], "features": [{"name", "description", "ptx_availability", "targets"}]}`.
pub fn to_json() -> Value {
    let features: Vec<Value> = Feature::ALL
        .iter()
        .map(|f| {
            json!({
                "name": f.name(),
                "description": f.describe(),
                "ptx_availability": f.min_targets_hint(),
                "targets": f.targets(),
            })
        })
        .collect();
    json!({ "targets": TARGETS, "features": features })
}
