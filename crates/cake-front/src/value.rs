//! Compile-time values of the interpreter. A schedule is evaluated, not executed: constants fold,
//! `range` loops unroll and helpers inline, while everything that exists at run time becomes an
//! IR expression (`Value::Expr`) or a declared resource handle.

use cake_ir::*;

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
    /// A function of `lm`, a Python builtin, or a method bound to a resource.
    Builtin(Builtin),
    Method(Box<Value>, &'static str),
    /// A helper function defined in the same file (inlined at each call).
    Func(String),
    /// A run-time value.
    Expr(ExprId),
    Tensor(ParamId),
    Pool(PoolId),
    View(ViewRef),
    Tmem(TmemId),
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
    TilesIter(Vec<Value>, Option<u32>),
    PyRange(Vec<i64>),
    /// The result of an expression that already produced a finding; using it reports nothing
    /// more, so one mistake yields one finding.
    Poison,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Namespace {
    Cake,
    Lm,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    // Python builtins folded at compile time.
    Range,
    Len,
    PyMin,
    PyMax,
    // lm: declarations
    Smem,
    Tmem,
    RoleDecl,
    PipelineDecl,
    BarrierDecl,
    NamedBarrierDecl,
    Tiles,
    LmRange,
    // lm: index math
    Cdiv,
    // lm: operations
    Wait,
    Arrive,
    Commit,
    FenceProxyAsync,
    Sync,
    Mma,
    Store,
    Load,
    Ldmatrix,
    TmemLoad,
    TmemStore,
    TmemCopy,
    // lm: elementwise and reductions
    Cast,
    Select,
    Maximum,
    Minimum,
    Exp2,
    Log2,
    Sqrt,
    Rsqrt,
    Abs,
    Sum,
    Max,
    Min,
    ArgMin,
    ArgMax,
    // decorator
    Schedule,
}

impl Value {
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
            Value::Tmem(_) => "a TMEM region",
            Value::Role(_) => "a role",
            Value::Frag(_) => "a fragment",
            Value::Pipeline(_) => "a pipeline",
            Value::Barrier(_) => "a barrier",
            Value::NamedBarrier(_) => "a named barrier",
            Value::RangeIter { .. } | Value::TilesIter(..) | Value::PyRange(_) => "an iterator",
            Value::Poison => "an invalid value",
        }
    }
}

impl Builtin {
    /// The `lm` name of a builtin, for messages.
    pub fn lm_name(self) -> &'static str {
        LM_NAMES
            .iter()
            .copied()
            .find(|n| lm_attr(n).is_some_and(|v| matches!(v, Value::Builtin(b) if b == self)))
            .unwrap_or("function")
    }
}

/// `lm.<name>` lookup.
pub fn lm_attr(name: &str) -> Option<Value> {
    use Builtin::*;
    if let Some(d) = DType::from_name(name) {
        return Some(Value::DType(d));
    }
    let b = match name {
        "smem" => Smem,
        "tmem" => Tmem,
        "role" => RoleDecl,
        "pipeline" => PipelineDecl,
        "barrier" => BarrierDecl,
        "named_barrier" => NamedBarrierDecl,
        "tiles" => Tiles,
        "range" => LmRange,
        "cdiv" => Cdiv,
        "wait" => Wait,
        "arrive" => Arrive,
        "commit" => Commit,
        "fence_proxy_async" => FenceProxyAsync,
        "sync" => Sync,
        "mma" => Mma,
        "store" => Store,
        "load" => Load,
        "ldmatrix" => Ldmatrix,
        "tmem_load" => TmemLoad,
        "tmem_store" => TmemStore,
        "tmem_copy" => TmemCopy,
        "cast" => Cast,
        "select" => Select,
        "maximum" => Maximum,
        "minimum" => Minimum,
        "exp2" => Exp2,
        "log2" => Log2,
        "sqrt" => Sqrt,
        "rsqrt" => Rsqrt,
        "abs" => Abs,
        "sum" => Sum,
        "max" => Max,
        "min" => Min,
        "argmin" => ArgMin,
        "argmax" => ArgMax,
        "inf" => return Some(Value::Float(f64::INFINITY)),
        _ => return None,
    };
    Some(Value::Builtin(b))
}

/// Every public name of `lm`, for "did you mean" suggestions.
pub const LM_NAMES: &[&str] = &[
    "smem",
    "tmem",
    "role",
    "pipeline",
    "barrier",
    "named_barrier",
    "tiles",
    "range",
    "cdiv",
    "wait",
    "arrive",
    "commit",
    "fence_proxy_async",
    "sync",
    "mma",
    "store",
    "load",
    "ldmatrix",
    "tmem_load",
    "tmem_store",
    "tmem_copy",
    "cast",
    "select",
    "maximum",
    "minimum",
    "exp2",
    "log2",
    "sqrt",
    "rsqrt",
    "abs",
    "sum",
    "max",
    "min",
    "argmin",
    "argmax",
    "inf",
    "tensor",
    "bf16",
    "f16",
    "f32",
    "f64",
    "tf32",
    "e4m3",
    "e5m2",
    "i8",
    "u8",
    "i32",
    "u32",
    "i64",
    "bool",
];
