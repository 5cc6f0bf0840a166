//! What an index expression can evaluate to, from what its variables run over: the verifier
//! bounds explicit stages with it, and the lowering uses it to emit Python's floor `//` and `%`
//! as plain C division where the two agree (a non-negative dividend over a positive divisor).

use crate::kernel::*;

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
}
