//! What an index expression can evaluate to, from what its variables run over: the verifier
//! bounds explicit stages with it, and the lowering uses it to emit Python's floor `//` and `%`
//! as plain C division where the two agree (a non-negative dividend over a positive divisor).
//! Under run-time `if`s ([`bounds_under`]), a variable compared with something bounded in a
//! condition that holds there is narrowed to the values that satisfy it.

use crate::kernel::*;
use cake_target::DType;

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

    /// Whether no value is negative.
    pub fn nonneg(&self) -> bool {
        self.lo.is_some_and(|l| l >= 0)
    }

    /// The one value, when there is exactly one.
    fn constant(&self) -> Option<i64> {
        (self.lo == self.hi).then_some(self.lo).flatten()
    }
}

/// `lo..=hi`, an unbounded end written `-inf` or `inf`: what findings print.
impl std::fmt::Display for Bounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.lo {
            Some(lo) => write!(f, "{lo}..=")?,
            None => write!(f, "-inf..=")?,
        }
        match self.hi {
            Some(hi) => write!(f, "{hi}"),
            None => write!(f, "inf"),
        }
    }
}

/// What integer expression `e` can evaluate to (`//` and `%` floor, as in Python), from what each
/// variable runs over: a loop variable from its start to its stop less one, a tile coordinate
/// from 0 to its count less one, a role's replica index over its replicas, a pipeline's stage
/// over its stages, a dimension from 0 up. Anything else (a scalar, a fragment) is unbounded.
pub fn bounds(k: &Kernel, e: ExprId) -> Bounds {
    bounds_with(k, e, &[])
}

/// A variable an `if` condition can narrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Var {
    Loop(LoopId),
    Tile(LoopId, usize),
    Replica(RoleId),
    Stage(PipelineId),
    Dim(DimId),
    Scalar(ParamId),
}

impl Var {
    fn of(k: &Kernel, e: ExprId) -> Option<Var> {
        Some(match k.exprs[e].kind {
            ExprKind::LoopVar(l) => Var::Loop(l),
            ExprKind::TileCoord { tiles, axis } => Var::Tile(tiles, axis),
            ExprKind::RoleIndex(r) => Var::Replica(r),
            ExprKind::PipelineStage(p) => Var::Stage(p),
            ExprKind::Dim(d) => Var::Dim(d),
            ExprKind::Scalar(p) if matches!(k.exprs[e].ty, Ty::Index | Ty::Scalar(DType::I32)) => {
                Var::Scalar(p)
            }
            _ => return None,
        })
    }
}

/// What `e` can evaluate to where every guard holds (the run-time `if`s around a statement,
/// `OpSite::guards`): [`bounds`], with each variable a condition compares narrowed to what
/// satisfies the comparison. `if ks == 0: ... cta=ks + 1` bounds the rank to 1, not to every
/// tile. Conditions joined by `and` narrow with each part (in an `else`, those joined by `or`);
/// anything else narrows nothing.
pub fn bounds_under(k: &Kernel, e: ExprId, guards: &[Guard]) -> Bounds {
    let mut facts: Vec<(Var, Bounds)> = Vec::new();
    for g in guards {
        narrow(k, g.cond, !g.negated, &mut facts);
    }
    bounds_with(k, e, &facts)
}

/// Record in `facts` what `cond` (when `holds`; its negation otherwise) says of a variable.
fn narrow(k: &Kernel, cond: ExprId, holds: bool, facts: &mut Vec<(Var, Bounds)>) {
    match k.exprs[cond].kind {
        ExprKind::Unary(UnOp::Not, x) => narrow(k, x, !holds, facts),
        ExprKind::Binary(BinOp::And, a, b) if holds => {
            narrow(k, a, true, facts);
            narrow(k, b, true, facts);
        }
        ExprKind::Binary(BinOp::Or, a, b) if !holds => {
            narrow(k, a, false, facts);
            narrow(k, b, false, facts);
        }
        ExprKind::Cmp(op, a, b) => {
            let op = if holds { op } else { negate(op) };
            if let Some(v) = Var::of(k, a) {
                let other = bounds_with(k, b, facts);
                restrict(v, op, other, k, a, facts);
            } else if let Some(v) = Var::of(k, b) {
                let other = bounds_with(k, a, facts);
                restrict(v, mirror(op), other, k, b, facts);
            }
        }
        _ => {}
    }
}

/// `v op other`: narrow `v`'s bounds (starting from what it runs over) to the values for which
/// the comparison can hold.
fn restrict(
    v: Var,
    op: CmpOp,
    other: Bounds,
    k: &Kernel,
    ve: ExprId,
    facts: &mut Vec<(Var, Bounds)>,
) {
    let mut b = bounds_with(k, ve, facts);
    let tighten_hi = |b: &mut Bounds, h: Option<i64>| {
        if let Some(h) = h {
            b.hi = Some(b.hi.map_or(h, |x| x.min(h)));
        }
    };
    let tighten_lo = |b: &mut Bounds, l: Option<i64>| {
        if let Some(l) = l {
            b.lo = Some(b.lo.map_or(l, |x| x.max(l)));
        }
    };
    match op {
        CmpOp::Lt => tighten_hi(&mut b, other.hi.and_then(|h| h.checked_sub(1))),
        CmpOp::Le => tighten_hi(&mut b, other.hi),
        CmpOp::Gt => tighten_lo(&mut b, other.lo.and_then(|l| l.checked_add(1))),
        CmpOp::Ge => tighten_lo(&mut b, other.lo),
        CmpOp::Eq => {
            tighten_hi(&mut b, other.hi);
            tighten_lo(&mut b, other.lo);
        }
        CmpOp::Ne => return,
    }
    facts.retain(|(w, _)| *w != v);
    facts.push((v, b));
}

/// The comparison that holds exactly when `op` does not.
fn negate(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Ge,
        CmpOp::Le => CmpOp::Gt,
        CmpOp::Gt => CmpOp::Le,
        CmpOp::Ge => CmpOp::Lt,
        CmpOp::Eq => CmpOp::Ne,
        CmpOp::Ne => CmpOp::Eq,
    }
}

/// `b op' a` for `a op b`.
fn mirror(op: CmpOp) -> CmpOp {
    match op {
        CmpOp::Lt => CmpOp::Gt,
        CmpOp::Le => CmpOp::Ge,
        CmpOp::Gt => CmpOp::Lt,
        CmpOp::Ge => CmpOp::Le,
        CmpOp::Eq | CmpOp::Ne => op,
    }
}

/// [`bounds`] with what the `facts` say of some variables in place of what they run over.
fn bounds_with(k: &Kernel, e: ExprId, facts: &[(Var, Bounds)]) -> Bounds {
    if let Some(v) = Var::of(k, e) {
        if let Some((_, b)) = facts.iter().find(|(w, _)| *w == v) {
            return *b;
        }
    }
    let go = |x: ExprId| bounds_with(k, x, facts);
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
            // Division by a positive constant keeps the order of floor quotients; a
            // non-negative dividend over a non-negative divisor stays non-negative, and no
            // larger than the dividend.
            let divisor = b.constant().filter(|d| *d > 0);
            let nonneg_quotient = || match (a.nonneg(), b.lo) {
                (true, Some(bl)) if bl >= 1 => Bounds::from(0, a.hi),
                (true, Some(0)) => Bounds::from(0, None),
                _ => Bounds::ANY,
            };
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
                BinOp::FloorDiv => match divisor {
                    Some(d) => Bounds {
                        lo: a.lo.map(|l| l.div_euclid(d)),
                        hi: a.hi.map(|h| h.div_euclid(d)),
                    },
                    None => nonneg_quotient(),
                },
                BinOp::CeilDiv => match divisor {
                    Some(d) => Bounds {
                        lo: a
                            .lo
                            .and_then(|l| l.checked_add(d - 1))
                            .map(|l| l.div_euclid(d)),
                        hi: a
                            .hi
                            .and_then(|h| h.checked_add(d - 1))
                            .map(|h| h.div_euclid(d)),
                    },
                    None => nonneg_quotient(),
                },
                BinOp::Mod => match divisor {
                    Some(d) => match (a.lo, a.hi) {
                        // Within one period the remainder is the dividend less a constant.
                        (Some(l), Some(h)) if l.div_euclid(d) == h.div_euclid(d) => Bounds {
                            lo: Some(l.rem_euclid(d)),
                            hi: Some(h.rem_euclid(d)),
                        },
                        _ => Bounds::from(0, Some(d - 1)),
                    },
                    // A non-negative remainder, below the divisor and at most the dividend.
                    None if a.nonneg() && b.nonneg() => Bounds::from(
                        0,
                        match (a.hi, b.hi.map(|h| h - 1)) {
                            (Some(x), Some(y)) => Some(x.min(y)),
                            (x, y) => x.or(y),
                        },
                    ),
                    None => Bounds::ANY,
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
                BinOp::Div => Bounds::ANY,
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
        ExprKind::Iota { shape, axis } => Bounds::from(0, shape.get(*axis).map(|n| *n as i64 - 1)),
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
/// what two non-negative factors give.
fn mul_bounds(a: Bounds, b: Bounds) -> Bounds {
    if let (Some(al), Some(ah), Some(bl), Some(bh)) = (a.lo, a.hi, b.lo, b.hi) {
        let p = [
            al.checked_mul(bl),
            al.checked_mul(bh),
            ah.checked_mul(bl),
            ah.checked_mul(bh),
        ];
        return match p.into_iter().collect::<Option<Vec<i64>>>() {
            Some(p) => Bounds {
                lo: p.iter().min().copied(),
                hi: p.iter().max().copied(),
            },
            None => Bounds::ANY,
        };
    }
    if a.nonneg() && b.nonneg() {
        return Bounds {
            lo: a.lo.zip(b.lo).and_then(|(x, y)| x.checked_mul(y)),
            hi: None,
        };
    }
    Bounds::ANY
}

/// Whether C's truncating `a / b` and `a % b` give Python's floor results for every value the
/// operands can take: a non-negative dividend over a non-negative divisor (over zero, both are
/// undefined).
pub fn c_division_floors(k: &Kernel, a: ExprId, b: ExprId) -> bool {
    bounds(k, a).nonneg() && bounds(k, b).nonneg()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Python's `%` floors: (k - 1) % 4 is 3 at k = 0, and C's `%` is not used for it.
        let km1 = bin(&mut k, BinOp::Sub, kv, one);
        assert_eq!(b(&k, km1), (Some(-1), Some(6)));
        let m = bin(&mut k, BinOp::Mod, km1, four);
        assert_eq!(b(&k, m), (Some(0), Some(3)));
        assert!(!c_division_floors(&k, km1, four) && c_division_floors(&k, kv, four));
        // Within one period the remainder keeps the dividend's range.
        let two = int(&mut k, 2);
        let small = bin(&mut k, BinOp::Add, kv, two); // 2..=9
        let sixteen = int(&mut k, 16);
        let m = bin(&mut k, BinOp::Mod, small, sixteen);
        assert_eq!(b(&k, m), (Some(2), Some(9)));
        // Floor division by a constant, products, min and max.
        let d = bin(&mut k, BinOp::FloorDiv, kv, four);
        assert_eq!(b(&k, d), (Some(0), Some(1)));
        let d = bin(&mut k, BinOp::FloorDiv, km1, four);
        assert_eq!(b(&k, d), (Some(-1), Some(1)));
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
        assert_eq!(bounds(&k, s).to_string(), "0..=inf");
        // ... and taken modulo a constant it is bounded again.
        let m = bin(&mut k, BinOp::Mod, s, four);
        assert_eq!(b(&k, m), (Some(0), Some(3)));
    }

    fn cmp(k: &mut Kernel, op: CmpOp, a: ExprId, b: ExprId) -> ExprId {
        expr(k, ExprKind::Cmp(op, a, b))
    }

    fn guard(cond: ExprId, negated: bool) -> Guard {
        Guard {
            cond,
            loop_depth: 0,
            negated,
        }
    }

    #[test]
    fn the_ifs_around_a_use_narrow_its_variables() {
        let mut k = Kernel::default();
        let kv = loop_var(&mut k, 0, 8); // 0..=7
        let one = int(&mut k, 1);
        let three = int(&mut k, 3);
        let plus1 = bin(&mut k, BinOp::Add, kv, one);
        let under = |k: &Kernel, e, gs: &[Guard]| {
            let x = bounds_under(k, e, gs);
            (x.lo, x.hi)
        };
        assert_eq!(under(&k, plus1, &[]), (Some(1), Some(8)));
        // `if k < 3:` then k + 1 is 1..=3; in its `else`, 4..=8.
        let lt = cmp(&mut k, CmpOp::Lt, kv, three);
        assert_eq!(under(&k, plus1, &[guard(lt, false)]), (Some(1), Some(3)));
        assert_eq!(under(&k, plus1, &[guard(lt, true)]), (Some(4), Some(8)));
        // The constant on the left: `if 3 >= k:` is `k <= 3`.
        let ge = cmp(&mut k, CmpOp::Ge, three, kv);
        assert_eq!(under(&k, plus1, &[guard(ge, false)]), (Some(1), Some(4)));
        // `==` pins it; `!=` says nothing of a range.
        let eq = cmp(&mut k, CmpOp::Eq, kv, one);
        assert_eq!(under(&k, plus1, &[guard(eq, false)]), (Some(2), Some(2)));
        assert_eq!(under(&k, plus1, &[guard(eq, true)]), (Some(1), Some(8)));
        // `and` narrows with both parts, nested `if`s with each; `or` only in its `else`.
        let gt = cmp(&mut k, CmpOp::Gt, kv, one);
        let both = bin(&mut k, BinOp::And, gt, lt);
        assert_eq!(under(&k, plus1, &[guard(both, false)]), (Some(3), Some(3)));
        assert_eq!(
            under(&k, plus1, &[guard(gt, false), guard(lt, false)]),
            (Some(3), Some(3))
        );
        let below = cmp(&mut k, CmpOp::Lt, kv, one);
        let above = cmp(&mut k, CmpOp::Gt, kv, three);
        let either = bin(&mut k, BinOp::Or, below, above);
        assert_eq!(
            under(&k, plus1, &[guard(either, false)]),
            (Some(1), Some(8))
        );
        assert_eq!(under(&k, plus1, &[guard(either, true)]), (Some(2), Some(4)));
        let not_lt = expr(&mut k, ExprKind::Unary(UnOp::Not, lt));
        assert_eq!(
            under(&k, plus1, &[guard(not_lt, false)]),
            (Some(4), Some(8))
        );
        // A condition on another variable leaves this one as it runs.
        let other = loop_var(&mut k, 0, 4);
        let on_other = cmp(&mut k, CmpOp::Eq, other, one);
        assert_eq!(
            under(&k, plus1, &[guard(on_other, false)]),
            (Some(1), Some(8))
        );
        // Without guards it is `bounds`.
        assert_eq!(bounds_under(&k, plus1, &[]), bounds(&k, plus1));
    }
}
