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

/// The values an integer expression can take, each end `None` where nothing bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub lo: Option<i64>,
    pub hi: Option<i64>,
}

impl Bounds {
    const ANY: Bounds = Bounds { lo: None, hi: None };

    fn exactly(v: i64) -> Bounds {
        Bounds {
            lo: Some(v),
            hi: Some(v),
        }
    }

    fn from(lo: i64, hi: Option<i64>) -> Bounds {
        Bounds { lo: Some(lo), hi }
    }

    /// Whether every value lies in `0..n`.
    pub fn within(&self, n: i64) -> bool {
        matches!((self.lo, self.hi), (Some(lo), Some(hi)) if lo >= 0 && hi < n)
    }

    fn nonneg(&self) -> bool {
        self.lo.is_some_and(|l| l >= 0)
    }
}

/// What integer expression `e` can evaluate to as the lowered code computes it (C's `/` and
/// `%` truncate toward zero), from what each variable runs over: a loop variable from its start
/// to its stop less one, a tile coordinate from 0 to its count less one, a role's replica index
/// over its replicas, a pipeline's stage over its stages, a dimension from 0 up. Anything else
/// (a scalar, a fragment) is unbounded.
pub fn bounds(k: &Kernel, e: ExprId) -> Bounds {
    let go = |x: ExprId| bounds(k, x);
    let add = |a: Option<i64>, b: Option<i64>| a?.checked_add(b?);
    match &k.exprs[e].kind {
        ExprKind::Int(v) => Bounds::exactly(*v),
        ExprKind::Bool(b) => Bounds::exactly(*b as i64),
        ExprKind::Dim(_) => Bounds::from(0, None),
        ExprKind::RoleIndex(r) => Bounds::from(0, Some(k.roles[*r].replicas() as i64 - 1)),
        ExprKind::PipelineStage(p) => Bounds::from(0, Some(k.pipelines[*p].stages as i64 - 1)),
        ExprKind::LoopVar(l) => match &k.loops[*l].kind {
            LoopKind::Range { start, stop, .. } => Bounds {
                lo: go(*start).lo,
                hi: go(*stop).hi.and_then(|h| h.checked_sub(1)),
            },
            LoopKind::Tiles { .. } => Bounds::ANY,
        },
        ExprKind::TileCoord { tiles, axis } => match &k.loops[*tiles].kind {
            LoopKind::Tiles { counts, stream, .. } => {
                let hi = match counts.get(*axis) {
                    Some(c) => go(*c).hi.and_then(|h| h.checked_sub(1)),
                    // A stream-K run's first step and its stop: 0..=KB.
                    None => stream.and_then(|kb| go(kb).hi),
                };
                Bounds::from(0, hi)
            }
            LoopKind::Range { .. } => Bounds::ANY,
        },
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (go(*a), go(*b));
            match op {
                BinOp::Add => Bounds {
                    lo: add(a.lo, b.lo),
                    hi: add(a.hi, b.hi),
                },
                BinOp::Sub => Bounds {
                    lo: add(a.lo, b.hi.and_then(i64::checked_neg)),
                    hi: add(a.hi, b.lo.and_then(i64::checked_neg)),
                },
                BinOp::Mul => mul_bounds(a, b),
                BinOp::Div | BinOp::FloorDiv => match (b.lo, b.hi) {
                    // Truncating division by a positive constant keeps the order.
                    (Some(d), Some(e)) if d == e && d > 0 => Bounds {
                        lo: a.lo.map(|l| l / d),
                        hi: a.hi.map(|h| h / d),
                    },
                    _ => Bounds::ANY,
                },
                BinOp::Mod => match (b.lo, b.hi) {
                    // C's `%` takes the sign of the dividend.
                    (Some(d), Some(e)) if d == e && d > 0 => Bounds {
                        lo: Some(if a.nonneg() { 0 } else { -(d - 1) }),
                        hi: Some(match a.hi {
                            Some(h) if h >= 0 && a.nonneg() => h.min(d - 1),
                            Some(h) if h < 0 => 0,
                            _ => d - 1,
                        }),
                    },
                    _ => Bounds::ANY,
                },
                BinOp::CeilDiv => match (b.lo, b.hi) {
                    (Some(d), Some(e)) if d == e && d > 0 && a.nonneg() => Bounds {
                        lo: a.lo.map(|l| (l + d - 1) / d),
                        hi: a.hi.and_then(|h| h.checked_add(d - 1)).map(|h| h / d),
                    },
                    _ => Bounds::ANY,
                },
                BinOp::Min => Bounds {
                    lo: a.lo.zip(b.lo).map(|(x, y)| x.min(y)),
                    hi: match (a.hi, b.hi) {
                        (Some(x), Some(y)) => Some(x.min(y)),
                        (x, y) => x.or(y),
                    },
                },
                BinOp::Max => Bounds {
                    lo: match (a.lo, b.lo) {
                        (Some(x), Some(y)) => Some(x.max(y)),
                        (x, y) => x.or(y),
                    },
                    hi: a.hi.zip(b.hi).map(|(x, y)| x.max(y)),
                },
                BinOp::And | BinOp::Or => Bounds::from(0, Some(1)),
            }
        }
        ExprKind::Unary(UnOp::Neg, a) => {
            let a = go(*a);
            Bounds {
                lo: a.hi.and_then(i64::checked_neg),
                hi: a.lo.and_then(i64::checked_neg),
            }
        }
        ExprKind::Unary(UnOp::Not, _) | ExprKind::Cmp(..) => Bounds::from(0, Some(1)),
        ExprKind::Select(_, a, b) => {
            let (a, b) = (go(*a), go(*b));
            Bounds {
                lo: a.lo.zip(b.lo).map(|(x, y)| x.min(y)),
                hi: a.hi.zip(b.hi).map(|(x, y)| x.max(y)),
            }
        }
        _ => Bounds::ANY,
    }
}

/// The product's bounds: the extremes of the ends' products when both are bounded, else only
/// what the signs of two non-negative factors give.
fn mul_bounds(a: Bounds, b: Bounds) -> Bounds {
    if let (Some(al), Some(ah), Some(bl), Some(bh)) = (a.lo, a.hi, b.lo, b.hi) {
        let p = [
            al.checked_mul(bl),
            al.checked_mul(bh),
            ah.checked_mul(bl),
            ah.checked_mul(bh),
        ];
        if let Some(p) = p.into_iter().collect::<Option<Vec<i64>>>() {
            return Bounds {
                lo: p.iter().min().copied(),
                hi: p.iter().max().copied(),
            };
        }
        return Bounds::ANY;
    }
    if a.nonneg() && b.nonneg() {
        return Bounds {
            lo: a.lo.zip(b.lo).and_then(|(x, y)| x.checked_mul(y)),
            hi: None,
        };
    }
    Bounds::ANY
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

    fn int(k: &mut Kernel, v: i64) -> ExprId {
        expr(k, ExprKind::Int(v))
    }

    fn expr(k: &mut Kernel, kind: ExprKind) -> ExprId {
        k.exprs.push(
            Expr {
                kind,
                ty: Ty::Index,
            },
            cake_diag::Span::default(),
        )
    }

    fn bin(k: &mut Kernel, op: BinOp, a: ExprId, b: ExprId) -> ExprId {
        expr(k, ExprKind::Binary(op, a, b))
    }

    /// A loop variable of `lm.range(start, stop)`.
    fn loop_var(k: &mut Kernel, start: i64, stop: i64) -> ExprId {
        let (start, stop) = (int(k, start), int(k, stop));
        let l = k.loops.push(
            Loop {
                var_name: "k".into(),
                kind: LoopKind::Range {
                    start,
                    stop,
                    pipeline: None,
                },
            },
            cake_diag::Span::default(),
        );
        expr(k, ExprKind::LoopVar(l))
    }

    #[test]
    fn bounds_follow_the_compiled_arithmetic() {
        let mut k = Kernel::default();
        let kv = loop_var(&mut k, 0, 8); // 0..=7
        let four = int(&mut k, 4);
        let one = int(&mut k, 1);
        let b = |k: &Kernel, e| {
            let x = bounds(k, e);
            (x.lo, x.hi)
        };
        assert_eq!(b(&k, kv), (Some(0), Some(7)));
        let m = bin(&mut k, BinOp::Mod, kv, four);
        assert_eq!(b(&k, m), (Some(0), Some(3)));
        assert!(bounds(&k, m).within(4) && !bounds(&k, m).within(3));
        // C's `%` keeps the dividend's sign: (k - 1) % 4 is -1 at k = 0.
        let km1 = bin(&mut k, BinOp::Sub, kv, one);
        assert_eq!(b(&k, km1), (Some(-1), Some(6)));
        let m = bin(&mut k, BinOp::Mod, km1, four);
        assert_eq!(b(&k, m), (Some(-3), Some(3)));
        // Truncating division by a constant, products, min and max.
        let d = bin(&mut k, BinOp::FloorDiv, kv, four);
        assert_eq!(b(&k, d), (Some(0), Some(1)));
        let p = bin(&mut k, BinOp::Mul, km1, four);
        assert_eq!(b(&k, p), (Some(-4), Some(24)));
        let mn = bin(&mut k, BinOp::Min, kv, four);
        assert_eq!(b(&k, mn), (Some(0), Some(4)));
        // A dimension is bounded below only, and so is its sum with a loop variable.
        let dim = k.dims.push(
            Dim {
                name: "K".into(),
                first_use: (ParamId::from_index(0), 0),
            },
            cake_diag::Span::default(),
        );
        let dim = expr(&mut k, ExprKind::Dim(dim));
        let s = bin(&mut k, BinOp::Add, dim, kv);
        assert_eq!(b(&k, s), (Some(0), None));
        assert!(!bounds(&k, s).within(1 << 40));
        // ... and taken modulo a constant it is bounded again.
        let m = bin(&mut k, BinOp::Mod, s, four);
        assert_eq!(b(&k, m), (Some(0), Some(3)));
    }
}
