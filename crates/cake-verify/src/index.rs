//! Index arithmetic evaluated at chosen values of the schedule's run-time variables (loop
//! variables, tile coordinates, role replica indices): the coverage rules use it to place the
//! boxes of copies and stores, and to find how far a coordinate moves per loop iteration.

use cake_ir::*;

/// A run-time integer the coverage rules bind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Var {
    Loop(LoopId),
    Tile(usize),
    Role(RoleId),
}

/// The value of integer expression `e` with every variable bound by `env`; `None` when it reads
/// anything else (a dimension, a scalar, a fragment) or is not integer arithmetic.
pub fn eval(k: &Kernel, e: ExprId, env: &dyn Fn(Var) -> i64) -> Option<i64> {
    eval_at(k, e, env, &|_| None)
}

/// [`eval`] with the symbolic dimensions bound by `dims` as well (`None`: unknown).
pub fn eval_at(
    k: &Kernel,
    e: ExprId,
    env: &dyn Fn(Var) -> i64,
    dims: &dyn Fn(DimId) -> Option<i64>,
) -> Option<i64> {
    let go = |x: ExprId| eval_at(k, x, env, dims);
    Some(match &k.exprs[e].kind {
        ExprKind::Int(v) => *v,
        ExprKind::Dim(d) => dims(*d)?,
        ExprKind::Bool(b) => *b as i64,
        ExprKind::LoopVar(l) => env(Var::Loop(*l)),
        ExprKind::TileCoord { axis, .. } => env(Var::Tile(*axis)),
        ExprKind::RoleIndex(r) => env(Var::Role(*r)),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (go(*a)?, go(*b)?);
            match op {
                BinOp::Add => a.checked_add(b)?,
                BinOp::Sub => a.checked_sub(b)?,
                BinOp::Mul => a.checked_mul(b)?,
                BinOp::FloorDiv => floor_div(a, b)?,
                BinOp::Mod => a.checked_sub(floor_div(a, b)?.checked_mul(b)?)?,
                BinOp::CeilDiv => floor_div(a.checked_neg()?, b)?.checked_neg()?,
                BinOp::Min => a.min(b),
                BinOp::Max => a.max(b),
                BinOp::And => (a != 0 && b != 0) as i64,
                BinOp::Or => (a != 0 || b != 0) as i64,
                BinOp::Div => return None,
            }
        }
        ExprKind::Unary(UnOp::Neg, a) => go(*a)?.checked_neg()?,
        ExprKind::Unary(UnOp::Not, a) => (go(*a)? == 0) as i64,
        ExprKind::Cmp(op, a, b) => op.holds(go(*a)?, go(*b)?) as i64,
        ExprKind::Select(c, a, b) => {
            if go(*c)? != 0 {
                go(*a)?
            } else {
                go(*b)?
            }
        }
        _ => return None,
    })
}

fn floor_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

/// How far `e` moves when `v` grows by one, with every other variable at `base`: `Some(0)` when
/// `e` does not depend on `v`, `None` when it is not linear in `v` (checked over 0..=3) or
/// cannot be evaluated.
pub fn step(k: &Kernel, e: ExprId, v: Var, base: &dyn Fn(Var) -> i64) -> Option<i64> {
    let at = |x: i64| eval(k, e, &|w| if w == v { x } else { base(w) });
    let vals: Vec<i64> = (0..4).map(at).collect::<Option<_>>()?;
    // Schedules may hold any i64: a difference that overflows is not a step.
    let d = vals[1].checked_sub(vals[0])?;
    vals.windows(2)
        .all(|w| w[1].checked_sub(w[0]) == Some(d))
        .then_some(d)
}

/// What a loop variable runs over: `lm.cdiv(D, X)` or `D // X` trips move `X` along dimension
/// `D` each; a constant count `n` is enumerable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trips {
    Along { dim: DimId, step: i64 },
    Count(i64),
    Unknown,
}

pub fn trips(k: &Kernel, count: ExprId) -> Trips {
    match &k.exprs[count].kind {
        ExprKind::Dim(d) => Trips::Along { dim: *d, step: 1 },
        ExprKind::Int(n) => Trips::Count(*n),
        ExprKind::Binary(BinOp::CeilDiv | BinOp::FloorDiv, a, b) => {
            match (&k.exprs[*a].kind, &k.exprs[*b].kind) {
                (ExprKind::Dim(d), ExprKind::Int(x)) if *x > 0 => {
                    Trips::Along { dim: *d, step: *x }
                }
                _ => Trips::Unknown,
            }
        }
        _ => Trips::Unknown,
    }
}

/// The loop variables around an operation, each with what it runs over.
pub fn loop_vars(k: &Kernel, loops: &[LoopId]) -> Vec<(Var, Trips, LoopId)> {
    let mut out = Vec::new();
    for &l in loops {
        match &k.loops[l].kind {
            LoopKind::Range { start, stop, .. } => {
                let t = match k.const_int(*start) {
                    Some(0) => trips(k, *stop),
                    Some(s) => match k.const_int(*stop) {
                        Some(e) => e.checked_sub(s).map_or(Trips::Unknown, Trips::Count),
                        None => Trips::Unknown,
                    },
                    None => Trips::Unknown,
                };
                out.push((Var::Loop(l), t, l));
            }
            LoopKind::Tiles { counts, .. } => {
                for (axis, c) in counts.iter().enumerate() {
                    out.push((Var::Tile(axis), trips(k, *c), l));
                }
            }
        }
    }
    out
}

/// Replica indices of the role issuing an operation (one replica outside any role).
pub fn replicas(k: &Kernel, role: Option<RoleId>) -> Vec<(Option<RoleId>, i64)> {
    match role {
        Some(r) => (0..k.roles[r].replicas() as i64)
            .map(|i| (Some(r), i))
            .collect(),
        None => vec![(None, 0)],
    }
}

/// An environment with role `r` at replica `i` and every other variable at 0.
pub fn at_replica(r: Option<RoleId>, i: i64) -> impl Fn(Var) -> i64 {
    move |v| match v {
        Var::Role(x) if Some(x) == r => i,
        _ => 0,
    }
}

/// A set of half-open integer ranges, kept sorted and merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges(pub Vec<(i64, i64)>);

impl Ranges {
    pub fn add(&mut self, lo: i64, hi: i64) {
        if lo >= hi {
            return;
        }
        self.0.push((lo, hi));
        self.0.sort();
        let mut merged: Vec<(i64, i64)> = Vec::new();
        for &(a, b) in &self.0 {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        self.0 = merged;
    }

    /// The parts of `other` this set does not hold.
    pub fn missing(&self, other: &Ranges) -> Ranges {
        let mut out = Ranges::default();
        for &(a, b) in &other.0 {
            let mut at = a;
            for &(c, d) in &self.0 {
                if d <= at || c >= b {
                    continue;
                }
                if c > at {
                    out.add(at, c);
                }
                at = at.max(d);
            }
            if at < b {
                out.add(at, b);
            }
        }
        out
    }

    pub fn text(&self) -> String {
        let parts: Vec<String> = self.0.iter().map(|(a, b)| format!("{a}..{b}")).collect();
        parts.join(", ")
    }
}

/// What is wrong with how a loop that walks dimension `D` moves the coordinates of one access to
/// tensor `dims`: it moves a dimension of another name (`tm`, counted along `M`, in the `N`
/// coordinate), or — with `must_move` — none of the tensor's `D` coordinates (every step
/// touches the same tile).
pub enum Walk {
    /// (tensor dimension moved, the dimension it holds).
    Other(usize, DimId),
    Still(usize),
}

pub fn walk_problem(
    k: &Kernel,
    dims: &[Extent],
    coords: &[ExprId],
    var: Var,
    along: DimId,
    base: &dyn Fn(Var) -> i64,
    must_move: bool,
) -> Option<Walk> {
    let moves = |d: usize| step(k, coords[d], var, base).is_some_and(|s| s != 0);
    // Moving another dimension is a mistake only when the tensor has the counted dimension
    // itself: a tensor that packs it into another (heads in `[S, H·D]`, batches in a flattened
    // `[B·N, D]`) walks it inside that one.
    let has_along = dims.contains(&Extent::Sym(along));
    for (d, e) in dims.iter().enumerate().take(coords.len()) {
        if let Extent::Sym(other) = e {
            if has_along && *other != along && moves(d) {
                return Some(Walk::Other(d, *other));
            }
        }
    }
    let same: Vec<usize> = (0..dims.len().min(coords.len()))
        .filter(|&d| dims[d] == Extent::Sym(along))
        .collect();
    // A coordinate that cannot be evaluated may move; only a constant one surely does not.
    let still = |d: usize| step(k, coords[d], var, base) == Some(0);
    if must_move && !same.is_empty() && same.iter().all(|&d| still(d)) {
        return Some(Walk::Still(same[0]));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_subtract() {
        let mut r = Ranges::default();
        r.add(0, 64);
        r.add(64, 96);
        r.add(128, 192);
        assert_eq!(r.0, vec![(0, 96), (128, 192)]);
        let mut want = Ranges::default();
        want.add(0, 256);
        assert_eq!(r.missing(&want).0, vec![(96, 128), (192, 256)]);
        assert!(want.missing(&r).0.is_empty());
    }

    #[test]
    fn python_division() {
        assert_eq!(floor_div(-7, 2), Some(-4));
        assert_eq!(floor_div(7, 2), Some(3));
        assert_eq!(floor_div(1, 0), None);
    }
}
