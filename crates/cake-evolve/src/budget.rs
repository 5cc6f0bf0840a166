//! Budgets: a run stops when it has spent its tokens, wall seconds or GPU seconds — never on an
//! iteration count. `gpu=600s,wall=30m,tokens=200k` parses into a [`Budget`]; what a run has
//! spent so far is a [`Spent`], summed from the archive so it survives a crash and a resume.

use serde::{Deserialize, Serialize};

/// Limits; `None` is unlimited. At least one must be set for a run to end on its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    pub tokens: Option<u64>,
    pub wall_s: Option<f64>,
    pub gpu_s: Option<f64>,
}

/// What a run (or one candidate) has used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub tokens: u64,
    pub wall_s: f64,
    pub gpu_s: f64,
}

impl Spent {
    pub fn add(&mut self, o: &Spent) {
        self.tokens += o.tokens;
        self.wall_s += o.wall_s;
        self.gpu_s += o.gpu_s;
    }
}

impl Budget {
    /// Which limit `spent` has reached, if any.
    pub fn exhausted(&self, spent: &Spent) -> Option<&'static str> {
        if self.tokens.is_some_and(|t| spent.tokens >= t) {
            return Some("tokens");
        }
        if self.wall_s.is_some_and(|t| spent.wall_s >= t) {
            return Some("wall");
        }
        if self.gpu_s.is_some_and(|t| spent.gpu_s >= t) {
            return Some("gpu");
        }
        None
    }

    pub fn is_unlimited(&self) -> bool {
        self.tokens.is_none() && self.wall_s.is_none() && self.gpu_s.is_none()
    }

    /// The fraction of the tightest limit spent, in [0, 1] (0 when unlimited).
    pub fn fraction(&self, spent: &Spent) -> f64 {
        let parts = [
            self.tokens.map(|t| spent.tokens as f64 / t.max(1) as f64),
            self.wall_s.map(|t| spent.wall_s / t.max(1e-9)),
            self.gpu_s.map(|t| spent.gpu_s / t.max(1e-9)),
        ];
        parts.into_iter().flatten().fold(0.0, f64::max).min(1.0)
    }
}

impl std::str::FromStr for Budget {
    type Err = String;

    /// `gpu=600s,wall=30m,tokens=200k`: times take `s`, `m` or `h` (bare numbers are seconds),
    /// token counts take `k` or `M`.
    fn from_str(s: &str) -> Result<Budget, String> {
        let mut b = Budget::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected KEY=VALUE (gpu, wall or tokens)"))?;
            match key.trim() {
                "gpu" => b.gpu_s = Some(seconds(value)?),
                "wall" => b.wall_s = Some(seconds(value)?),
                "tokens" => b.tokens = Some(count(value)?),
                other => {
                    return Err(format!(
                        "unknown budget `{other}`; use gpu=SECONDS, wall=SECONDS or tokens=N"
                    ))
                }
            }
        }
        if b.is_unlimited() {
            return Err("the budget sets no limit; give gpu=, wall= or tokens=".into());
        }
        Ok(b)
    }
}

impl std::fmt::Display for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(g) = self.gpu_s {
            parts.push(format!("gpu={g}s"));
        }
        if let Some(w) = self.wall_s {
            parts.push(format!("wall={w}s"));
        }
        if let Some(t) = self.tokens {
            parts.push(format!("tokens={t}"));
        }
        f.write_str(&parts.join(","))
    }
}

fn seconds(v: &str) -> Result<f64, String> {
    let v = v.trim();
    let (num, scale) = match v.chars().last() {
        Some('s') => (&v[..v.len() - 1], 1.0),
        Some('m') => (&v[..v.len() - 1], 60.0),
        Some('h') => (&v[..v.len() - 1], 3600.0),
        _ => (v, 1.0),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{v}` is not a duration (e.g. 600s, 30m, 2h)"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("`{v}`: a budget must be positive"));
    }
    Ok(n * scale)
}

fn count(v: &str) -> Result<u64, String> {
    let v = v.trim();
    let (num, scale) = match v.chars().last() {
        Some('k' | 'K') => (&v[..v.len() - 1], 1_000.0),
        Some('M') => (&v[..v.len() - 1], 1_000_000.0),
        _ => (v, 1.0),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("`{v}` is not a token count (e.g. 200000, 200k, 2M)"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("`{v}`: a budget must be positive"));
    }
    Ok((n * scale) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_parse_with_units_and_reject_nonsense() {
        let b: Budget = "gpu=600s,wall=30m,tokens=200k".parse().unwrap();
        assert_eq!(b.gpu_s, Some(600.0));
        assert_eq!(b.wall_s, Some(1800.0));
        assert_eq!(b.tokens, Some(200_000));
        assert_eq!("wall=2h".parse::<Budget>().unwrap().wall_s, Some(7200.0));
        assert!("".parse::<Budget>().is_err());
        assert!("gpu=-1s".parse::<Budget>().is_err());
        assert!("iterations=10".parse::<Budget>().is_err());
        assert!("gpu".parse::<Budget>().is_err());
    }

    #[test]
    fn the_first_limit_reached_stops_the_run() {
        let b: Budget = "gpu=10,tokens=100".parse().unwrap();
        let mut s = Spent::default();
        assert_eq!(b.exhausted(&s), None);
        s.tokens = 100;
        assert_eq!(b.exhausted(&s), Some("tokens"));
        s.tokens = 0;
        s.gpu_s = 10.5;
        assert_eq!(b.exhausted(&s), Some("gpu"));
        assert!((b.fraction(&s) - 1.0).abs() < 1e-9);
    }
}
