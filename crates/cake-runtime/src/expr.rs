//! Grid expressions: an integer, a dimension or integer-scalar name, or `[op, a, b]` with `op` in
//! `cdiv`, `add`, `sub`, `mul`, `div` (floor), `mod` (sign of the divisor), `min`, `max`.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use crate::error::{launch, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Cdiv,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Min,
    Max,
}

const OPS: [(&str, Op); 8] = [
    ("cdiv", Op::Cdiv),
    ("add", Op::Add),
    ("sub", Op::Sub),
    ("mul", Op::Mul),
    ("div", Op::Div),
    ("mod", Op::Mod),
    ("min", Op::Min),
    ("max", Op::Max),
];

impl Op {
    pub fn name(self) -> &'static str {
        OPS.iter().find(|(_, o)| *o == self).map_or("?", |(n, _)| n)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Int(i128),
    Name(String),
    Op(Op, Box<Expr>, Box<Expr>),
}

impl fmt::Display for Expr {
    /// The JSON spelling.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Name(n) => write!(f, "\"{n}\""),
            Expr::Op(op, a, b) => write!(f, "[\"{}\", {a}, {b}]", op.name()),
        }
    }
}

fn floor_div(a: i128, b: i128) -> Option<i128> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

impl Expr {
    /// Parse and check the structure and ops of a JSON expression.
    pub fn parse(v: &Value, place: &str) -> Result<Expr> {
        let bad = || {
            launch(format!(
                "{place}: expected an int, a name or [op, a, b], got {v}"
            ))
        };
        match v {
            Value::Number(n) => n
                .as_i64()
                .map(|i| Expr::Int(i.into()))
                .or_else(|| n.as_u64().map(|u| Expr::Int(u.into())))
                .ok_or_else(bad),
            Value::String(s) if !s.is_empty() => Ok(Expr::Name(s.clone())),
            Value::Array(items) => {
                let (Some(Value::String(op)), 3) = (items.first(), items.len()) else {
                    return Err(launch(format!(
                        "{place}: malformed expression {v}, expected [op, a, b]"
                    )));
                };
                let Some(&(_, op)) = OPS.iter().find(|(n, _)| n == op) else {
                    let known: Vec<&str> = OPS.iter().map(|(n, _)| *n).collect();
                    return Err(launch(format!(
                        "{place}: unknown op `{op}` (known: {})",
                        known.join(", ")
                    )));
                };
                Ok(Expr::Op(
                    op,
                    Box::new(Expr::parse(&items[1], place)?),
                    Box::new(Expr::parse(&items[2], place)?),
                ))
            }
            _ => Err(bad()),
        }
    }

    /// Every name the expression reads, in order of appearance.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Expr::Int(_) => vec![],
            Expr::Name(n) => vec![n.as_str()],
            Expr::Op(_, a, b) => {
                let mut out = a.names();
                out.extend(b.names());
                out
            }
        }
    }

    /// The value under `env` (dimension and integer-scalar values).
    pub fn eval(&self, env: &BTreeMap<String, i128>, place: &str) -> Result<i128> {
        match self {
            Expr::Int(v) => Ok(*v),
            Expr::Name(n) => env.get(n).copied().ok_or_else(|| {
                let known: Vec<&str> = env.keys().map(String::as_str).collect();
                let known = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                launch(format!("{place}: unknown name `{n}` (known: {known})"))
            }),
            Expr::Op(op, a, b) => {
                let (a, b) = (a.eval(env, place)?, b.eval(env, place)?);
                if matches!(op, Op::Cdiv | Op::Div | Op::Mod) && b == 0 {
                    return Err(launch(format!("{place}: division by zero in {self}")));
                }
                let v = match op {
                    Op::Cdiv => a
                        .checked_neg()
                        .and_then(|na| floor_div(na, b))
                        .and_then(i128::checked_neg),
                    Op::Add => a.checked_add(b),
                    Op::Sub => a.checked_sub(b),
                    Op::Mul => a.checked_mul(b),
                    Op::Div => floor_div(a, b),
                    Op::Mod => floor_div(a, b).and_then(|q| a.checked_sub(q.checked_mul(b)?)),
                    Op::Min => Some(a.min(b)),
                    Op::Max => Some(a.max(b)),
                };
                v.ok_or_else(|| launch(format!("{place}: arithmetic overflow in {self}")))
            }
        }
    }
}
