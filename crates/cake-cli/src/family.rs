//! `cake family`: a family file's routes over its contract's domain (docs/dispatch.md).

use cake_eval::family::{sample, Family, Shard};
use std::path::Path;
use std::process::ExitCode;

fn load(file: &Path) -> Result<Family, ExitCode> {
    Family::load(file).map_err(|errs| {
        for e in errs {
            eprintln!("error: {e}");
        }
        ExitCode::from(2)
    })
}

/// Which route takes each region of the domain; exit 1 when a route is unreachable.
pub fn cmd_validate(file: &Path, json: bool) -> ExitCode {
    let f = match load(file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let v = match f.validate() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return ExitCode::from(2);
        }
    };
    if json {
        let doc = serde_json::json!({
            "family": f.name,
            "contract": f.contract.path,
            "routes": f.routes,
            "fallback": f.fallback,
            "validation": v,
        });
        outln!("{}", serde_json::to_string_pretty(&doc).expect("JSON"));
    } else {
        outln!(
            "family {} over contract {}: {} regions of the domain",
            f.name,
            f.contract.name,
            v.regions
        );
        for (r, n) in f.routes.iter().zip(&v.by_route) {
            let when: Vec<String> = r
                .when
                .iter()
                .map(|(d, g)| {
                    let mut parts = Vec::new();
                    if let Some(m) = g.min {
                        parts.push(format!("{d} >= {m}"));
                    }
                    if let Some(m) = g.max {
                        parts.push(format!("{d} <= {m}"));
                    }
                    if let Some(s) = &g.values {
                        parts.push(format!("{d} in {s:?}"));
                    }
                    parts.join(" and ")
                })
                .collect();
            let when = if when.is_empty() {
                "every shape".to_string()
            } else {
                when.join(" and ")
            };
            outln!(
                "  route {:<16} {n:>6} regions  when {when}  ({})",
                r.name,
                r.kernel.display()
            );
        }
        outln!(
            "  fallback          {:>6} regions  {}",
            v.fallback_regions,
            f.fallback
        );
        for s in &v.fallback_examples {
            outln!("    e.g. {}", shape_text(s));
        }
        for o in &v.overlaps {
            outln!(
                "  overlap: {} all admit {}; `{}` takes it",
                o.routes.join(", "),
                shape_text(&o.shape),
                o.routes[0]
            );
        }
        for r in &v.unreachable {
            outln!(
                "  error: route `{r}` takes no shape: an earlier route or its own guard shadows it"
            );
        }
    }
    if v.unreachable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Shapes of the family's domain, one JSON object per line.
pub fn cmd_sample(file: &Path, shard: &str, n: usize, seed: u64) -> ExitCode {
    let Some(shard) = Shard::parse(shard) else {
        eprintln!("error: --shard is representative, boundary or held_out, got `{shard}`");
        return ExitCode::from(2);
    };
    let f = match load(file) {
        Ok(f) => f,
        Err(code) => return code,
    };
    for s in sample(&f.contract, shard, n, seed) {
        let route = f
            .route_of(&s)
            .map_or("fallback".to_string(), |i| f.routes[i].name.clone());
        outln!("{}", serde_json::json!({"shape": s, "route": route}));
    }
    ExitCode::SUCCESS
}

fn shape_text(s: &cake_eval::contract::Shape) -> String {
    s.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
