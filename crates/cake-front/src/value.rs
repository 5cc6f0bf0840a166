//! Compile-time values of the interpreter. A schedule is evaluated, not executed: constants fold,
//! `range` loops unroll and helpers inline, while everything that exists at run time becomes an
//! IR expression (`Value::Expr`) or a declared resource handle.

use crate::vocab::{Builtin, Recv};
use cake_ir::*;

/// The arguments of `lm.tiles(...)`, for the tile loop that iterates over it.
#[derive(Clone, Debug)]
pub struct TilesArgs {
    pub counts: Vec<Value>,
    /// `group=G`: the raster order's band of axis-0 tiles.
    pub group: Option<u32>,
    /// `stream=KB`: the count of K steps per tile, with its span.
    pub stream: Option<(Value, cake_diag::Span)>,
    /// `dynamic=True`, with its span (`None` when absent or False).
    pub dynamic: Option<cake_diag::Span>,
}

#[derive(Clone, Debug)]
pub enum Value {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    None,
    Tuple(Vec<Value>),
    DType(DType),
    /// The `cake` module or its `lm` namespace.
    Namespace(Namespace),
    /// A function of `lm` or a Python builtin.
    Builtin(Builtin),
    /// A method (a vocabulary row) bound to its receiver.
    Method(Box<Value>, Builtin),
    /// A helper function defined in the same file (inlined at each call).
    Func(String),
    /// A run-time value.
    Expr(ExprId),
    Tensor(ParamId),
    Pool(PoolId),
    View(ViewRef),
    /// A TMEM region, or one stage or column range of it (`region.stage(i)`,
    /// `region.cols(start, count)`).
    Tmem(TmemRef),
    Role(RoleId),
    Frag(FragId),
    Pipeline(PipelineId),
    Barrier(BarrierId),
    NamedBarrier(NamedBarrierId),
    /// What `lm.range(...)` / `lm.tiles(...)` / `range(...)` return; only `for` consumes them.
    RangeIter {
        start: Box<Value>,
        stop: Box<Value>,
        pipeline: Option<PipelineId>,
    },
    /// `lm.tiles(...)`.
    TilesIter(Box<TilesArgs>),
    PyRange(Vec<i64>),
    /// What `lm.ahead(steps)` returns; only `with` consumes it.
    Ahead(u32),
    /// The result of an expression that already produced a finding; using it reports nothing
    /// more, so one mistake yields one finding.
    Poison,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    Cake,
    Lm,
}

impl Value {
    /// A condition's value when it is known at compile time, as Python reads it: a bool, an
    /// integer (non-zero is true) or None (false). Anything else is decided at run time or is
    /// not a condition.
    pub fn compile_time_truth(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            Value::Int(v) => Some(*v != 0),
            Value::None => Some(false),
            _ => None,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Bool(_) => "a bool",
            Value::Str(_) => "a string",
            Value::None => "None",
            Value::Tuple(_) => "a tuple",
            Value::DType(_) => "a dtype",
            Value::Namespace(_) => "a module",
            Value::Builtin(_) | Value::Method(..) | Value::Func(_) => "a function",
            Value::Expr(_) => "a run-time value",
            Value::Tensor(_) => "a tensor parameter",
            Value::Pool(_) => "a shared-memory pool",
            Value::View(_) => "a shared-memory view",
            Value::Tmem(t) if t.cols.is_some() => "a TMEM column range",
            Value::Tmem(_) => "a TMEM region",
            Value::Role(_) => "a role",
            Value::Frag(_) => "a fragment",
            Value::Pipeline(_) => "a pipeline",
            Value::Barrier(_) => "a barrier",
            Value::NamedBarrier(_) => "a named barrier",
            Value::RangeIter { .. } | Value::TilesIter(..) | Value::PyRange(_) => "an iterator",
            Value::Ahead(_) => "an `lm.ahead` region",
            Value::Poison => "an invalid value",
        }
    }

    /// Which vocabulary rows `value.<name>` looks up, if the value has any.
    pub fn recv(&self) -> Option<Recv> {
        Some(match self {
            Value::Pool(_) => Recv::Pool,
            Value::View(_) => Recv::View,
            Value::Role(_) => Recv::Role,
            Value::Pipeline(_) => Recv::Pipeline,
            Value::Frag(_) => Recv::Frag,
            Value::Tensor(_) => Recv::Tensor,
            Value::Tmem(_) => Recv::Tmem,
            _ => return None,
        })
    }
}
