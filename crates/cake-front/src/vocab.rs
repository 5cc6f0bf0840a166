//! The builtin vocabulary: every name the interpreter provides, one row each.
//!
//! A row says where the name is looked up (a Python builtin, `cake.`, `lm.`, or a method or
//! property of a kind of value), what it is called, its parameters in order and which are
//! required, and a short description of what it gives. Name resolution, "did you mean"
//! suggestions and argument binding all read this table; the handler that does the work is
//! found by the row's [`Builtin`] in `builtins/mod.rs`.
//!
//! Adding a builtin: a [`Builtin`] variant and a row here, a handler in `builtins/`, and its
//! arm in `call_builtin` (`builtins/mod.rs`; the match is exhaustive, so the compiler asks for
//! it). A property (`Kind::Read`) has its arm in `expr.rs`'s `property` instead.
//!
//! dtypes (`lm.bf16`, ...) are not rows: they come from `cake_target`'s dtype table, so a new
//! dtype needs no edit here.

use cake_ir::DType;
use std::collections::HashMap;
use std::sync::OnceLock;

/// One parameter of a signature: a builtin's (from the vocabulary table) or a helper's.
#[derive(Clone, Copy, Debug)]
pub struct Param<'a> {
    pub name: &'a str,
    pub required: bool,
}

impl<'a> Param<'a> {
    pub const fn req(name: &'a str) -> Self {
        Param {
            name,
            required: true,
        }
    }

    pub const fn opt(name: &'a str) -> Self {
        Param {
            name,
            required: false,
        }
    }
}

/// Identity of one row, and the key by which a call finds its handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    // Python builtins folded at compile time.
    Range,
    Len,
    PyMin,
    PyMax,
    // cake.
    Schedule,
    LmModule,
    // lm: declarations
    Smem,
    Tmem,
    RoleDecl,
    PipelineDecl,
    BarrierDecl,
    NamedBarrierDecl,
    Tiles,
    LmRange,
    Ahead,
    // lm: constants and annotations
    Inf,
    TensorAnnotation,
    // lm: index math
    Cdiv,
    // lm: operations
    Wait,
    Arrive,
    Commit,
    FenceProxyAsync,
    Sync,
    StreamFixup,
    Mma,
    Store,
    ScatterAddGlobal,
    Load,
    Iota,
    Ldmatrix,
    TmemLoad,
    TmemStore,
    TmemCopy,
    // lm: element-wise and reductions
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
    Any,
    All,
    // methods
    PoolView,
    ViewTmaLoad,
    ViewTmaStore,
    ViewCpAsync,
    ViewCopyTo,
    ViewRows,
    ViewStage,
    ViewStore,
    ViewLoad,
    ViewScatterAdd,
    RoleFragment,
    TmemColumns,
    TmemStage,
    // properties
    ViewT,
    ViewShape,
    ViewDType,
    PipelineStage,
    RoleIndex,
    RoleSize,
    FragShape,
    FragDType,
    TensorShape,
    TensorDType,
}

/// Where a name is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recv {
    /// A bare name, as a Python builtin (`range`).
    Python,
    /// `cake.<name>`.
    Cake,
    /// `lm.<name>`.
    Lm,
    /// `<value>.<name>` on a value of that kind.
    Pool,
    View,
    Role,
    Pipeline,
    Frag,
    Tensor,
    Tmem,
}

/// How a row is used.
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// Called; the arguments are bound to these parameters before the handler runs.
    Call(&'static [Param<'static>]),
    /// Called; the handler checks the arguments itself, because they are variadic (`range`,
    /// `lm.tiles`) and its messages say so. The string is the call's usage (`lm.tiles` shows
    /// it in help).
    Custom(&'static str),
    /// Applied with `@` to a schedule; these are its keywords. Calling it in a body is an error.
    Decorator(&'static [Param<'static>]),
    /// Read without a call: a constant or a property of the receiver.
    Read,
}

pub struct Entry {
    pub recv: Recv,
    pub name: &'static str,
    pub id: Builtin,
    pub kind: Kind,
    /// What it gives, for readers of this table; nothing prints it.
    #[allow(dead_code)]
    pub doc: &'static str,
}

impl Entry {
    /// The name as messages spell it: `lm.smem`, but a method by its bare name (`view`).
    pub fn display(&self) -> String {
        match self.recv {
            Recv::Cake => format!("cake.{}", self.name),
            Recv::Lm => format!("lm.{}", self.name),
            _ => self.name.to_string(),
        }
    }

    fn is_callable(&self) -> bool {
        matches!(self.kind, Kind::Call(_) | Kind::Custom(_))
    }
}

const fn req(name: &'static str) -> Param<'static> {
    Param::req(name)
}

const fn opt(name: &'static str) -> Param<'static> {
    Param::opt(name)
}

macro_rules! row {
    ($recv:ident $name:literal => $id:ident, $kind:expr, $doc:literal) => {
        Entry {
            recv: Recv::$recv,
            name: $name,
            id: Builtin::$id,
            kind: $kind,
            doc: $doc,
        }
    };
}

use Kind::{Call, Custom, Decorator, Read};

/// Method rows of one receiver are listed in the order "available: ..." help prints them.
#[rustfmt::skip]
pub const TABLE: &[Entry] = &[
    // Python builtins, folded at compile time.
    row!(Python "range" => Range, Custom("range(stop) or range(start, stop, step)"), "compile-time integers, unrolled by `for`"),
    row!(Python "len" => Len, Custom("len(tuple)"), "length of a tuple or range"),
    row!(Python "min" => PyMin, Custom("min(a, b, ...)"), "smallest of two or more values"),
    row!(Python "max" => PyMax, Custom("max(a, b, ...)"), "largest of two or more values"),

    row!(Cake "schedule" => Schedule, Decorator(&[opt("targets"), opt("persistent"), opt("cluster"), opt("zero"), opt("ctas_per_sm")]), "marks a schedule function"),
    row!(Cake "lm" => LmModule, Read, "the `lm` namespace"),

    // lm: declarations
    row!(Lm "smem" => Smem, Call(&[opt("size")]), "a shared-memory pool"),
    row!(Lm "tmem" => Tmem, Call(&[req("cols"), req("shape"), req("dtype"), opt("lanes"), opt("stages")]), "a TMEM region"),
    row!(Lm "role" => RoleDecl, Call(&[opt("warp"), opt("warps"), opt("warpgroup"), opt("warpgroups"), opt("regs")]), "a role: warps running one region"),
    row!(Lm "pipeline" => PipelineDecl, Call(&[req("stages")]), "a pipeline of buffer stages"),
    row!(Lm "barrier" => BarrierDecl, Call(&[opt("pipeline"), req("producers"), req("consumers"), opt("count"), opt("cluster")]), "an mbarrier (one per stage of a pipeline)"),
    row!(Lm "named_barrier" => NamedBarrierDecl, Call(&[req("roles")]), "a named barrier among roles"),
    row!(Lm "tiles" => Tiles, Custom("lm.tiles(count0, count1, ..., group=G, stream=KB, dynamic=False)"), "the tile loop's iterator"),
    row!(Lm "range" => LmRange, Call(&[req("start_or_stop"), opt("stop"), opt("pipeline")]), "a run-time loop's iterator"),
    row!(Lm "ahead" => Ahead, Call(&[req("steps")]), "`with lm.ahead(n):` issues a pipelined loop's waits and copies n iterations early"),
    row!(Lm "inf" => Inf, Read, "the float infinity"),
    row!(Lm "tensor" => TensorAnnotation, Read, "parameter annotation `lm.tensor[dtype, dims...]`"),
    row!(Lm "cdiv" => Cdiv, Call(&[req("a"), req("b")]), "ceiling division"),

    // lm: operations
    row!(Lm "wait" => Wait, Call(&[req("barrier")]), "waits on a barrier"),
    row!(Lm "arrive" => Arrive, Call(&[req("barrier")]), "arrives on a barrier"),
    row!(Lm "commit" => Commit, Call(&[req("barrier")]), "arrives on a barrier when the issued async work completes"),
    row!(Lm "fence_proxy_async" => FenceProxyAsync, Call(&[]), "orders generic-proxy writes before async-proxy reads"),
    row!(Lm "sync" => Sync, Call(&[req("barrier")]), "synchronizes on a named barrier"),
    row!(Lm "stream_fixup" => StreamFixup, Call(&[req("acc")]), "adds a stream-K tile's partial accumulators into the run that ends the tile"),
    row!(Lm "mma" => Mma, Call(&[req("acc"), req("a"), req("b"), opt("accumulate"), opt("release"), opt("defer"), opt("turns")]), "acc += a · b on the tensor cores"),
    row!(Lm "store" => Store, Call(&[req("dst"), req("value"), req("coords"), opt("transpose"), opt("evict")]), "writes a register value (or its transpose) to a tensor"),
    row!(Lm "scatter_add" => ScatterAddGlobal, Call(&[req("dst"), req("value"), req("index"), req("coords"), opt("counts")]), "adds the rows of a register value into indexed rows of a tensor (atomically)"),
    row!(Lm "load" => Load, Call(&[req("src"), req("coords"), req("shape"), opt("fill"), opt("evict")]), "a register value read from a tensor"),
    row!(Lm "iota" => Iota, Call(&[req("shape"), req("axis")]), "an i32 register value holding each element's index along an axis"),
    row!(Lm "ldmatrix" => Ldmatrix, Call(&[req("dst"), req("src")]), "copies a view into a fragment"),
    row!(Lm "tmem_load" => TmemLoad, Call(&[req("dst"), req("src")]), "copies a TMEM region into a fragment"),
    row!(Lm "tmem_store" => TmemStore, Call(&[req("dst"), req("value")]), "writes a register value to a TMEM region"),
    row!(Lm "tmem_copy" => TmemCopy, Call(&[req("dst"), req("src")]), "copies a view into a TMEM region"),

    // lm: element-wise and reductions
    row!(Lm "cast" => Cast, Call(&[req("value"), req("dtype")]), "the value converted to a dtype"),
    row!(Lm "select" => Select, Call(&[req("cond"), req("a"), req("b")]), "a where cond holds, else b"),
    row!(Lm "maximum" => Maximum, Call(&[req("a"), req("b")]), "element-wise maximum"),
    row!(Lm "minimum" => Minimum, Call(&[req("a"), req("b")]), "element-wise minimum"),
    row!(Lm "exp2" => Exp2, Call(&[req("x"), opt("ftz")]), "element-wise 2^x"),
    row!(Lm "log2" => Log2, Call(&[req("x")]), "element-wise log2"),
    row!(Lm "sqrt" => Sqrt, Call(&[req("x")]), "element-wise square root"),
    row!(Lm "rsqrt" => Rsqrt, Call(&[req("x")]), "element-wise reciprocal square root"),
    row!(Lm "abs" => Abs, Call(&[req("x")]), "element-wise absolute value"),
    row!(Lm "sum" => Sum, Call(&[req("x"), req("axis"), opt("packed")]), "sum along an axis"),
    row!(Lm "max" => Max, Call(&[req("x"), req("axis"), opt("packed")]), "maximum along an axis"),
    row!(Lm "min" => Min, Call(&[req("x"), req("axis"), opt("packed")]), "minimum along an axis"),
    row!(Lm "argmin" => ArgMin, Call(&[req("x"), req("axis"), opt("packed")]), "index of the minimum along an axis (i32)"),
    row!(Lm "argmax" => ArgMax, Call(&[req("x"), req("axis"), opt("packed")]), "index of the maximum along an axis (i32)"),
    row!(Lm "any" => Any, Call(&[req("cond")]), "whether a per-element condition holds anywhere in the warp (a warp vote)"),
    row!(Lm "all" => All, Call(&[req("cond")]), "whether a per-element condition holds everywhere in the warp (a warp vote)"),

    // Methods and properties of values.
    row!(Pool "view" => PoolView, Call(&[req("shape"), req("dtype"), opt("stages"), opt("swizzle"), opt("offset")]), "a shared-memory view carved from the pool"),
    row!(View "tma_load" => ViewTmaLoad, Call(&[req("src"), req("coords"), req("barrier"), opt("multicast"), opt("evict")]), "TMA copy of a tensor tile into the view"),
    row!(View "tma_store" => ViewTmaStore, Call(&[req("dst"), req("coords"), opt("reduce")]), "TMA copy of the view into a tensor tile (reduce=\"add\": added into it)"),
    row!(View "cp_async" => ViewCpAsync, Call(&[req("src"), req("coords"), req("barrier"), opt("evict")]), "cp.async copy of a tensor tile into the view"),
    row!(View "copy_to" => ViewCopyTo, Call(&[req("dst"), req("coords"), opt("reduce")]), "per-thread copy of the view into a tensor tile, any alignment (reduce=\"add\": added into it)"),
    row!(View "rows" => ViewRows, Call(&[req("start"), req("count")]), "the view restricted to a row range"),
    row!(View "stage" => ViewStage, Call(&[req("index")]), "one stage of a staged view"),
    row!(View "store" => ViewStore, Call(&[req("value")]), "writes a register value into the view"),
    row!(View "load" => ViewLoad, Call(&[opt("cta")]), "a register value read from the view (from cluster CTA `cta`'s copy when given)"),
    row!(View "scatter_add" => ViewScatterAdd, Call(&[req("src"), req("index"), opt("offset"), opt("valid_rows"), opt("counts")]), "adds rows of a view to indexed rows of this one"),
    row!(View "T" => ViewT, Read, "the view transposed"),
    row!(View "shape" => ViewShape, Read, "the view's shape (a tuple)"),
    row!(View "dtype" => ViewDType, Read, "the view's dtype"),
    row!(Pipeline "stage" => PipelineStage, Read, "the current stage of a loop over the pipeline"),
    row!(Tmem "stage" => TmemStage, Call(&[req("index")]), "one stage of a staged region"),
    row!(Tmem "cols" => TmemColumns, Call(&[req("start"), req("count")]), "the region restricted to a column range (for lm.tmem_load and lm.tmem_store)"),
    row!(Role "fragment" => RoleFragment, Call(&[req("shape"), req("dtype"), opt("buffers"), opt("rows")]), "a register fragment owned by the role"),
    row!(Role "index" => RoleIndex, Read, "which replica of the role runs (run time)"),
    row!(Role "size" => RoleSize, Read, "how many replicas the role has"),
    row!(Frag "shape" => FragShape, Read, "the fragment's shape (a tuple)"),
    row!(Frag "dtype" => FragDType, Read, "the fragment's dtype"),
    row!(Tensor "shape" => TensorShape, Read, "the tensor's extents (a tuple)"),
    row!(Tensor "dtype" => TensorDType, Read, "the tensor's dtype"),
];

/// Rows by name (several receivers may share one) and by identity, built on first use: every
/// call and attribute of a schedule is looked up here.
struct Index {
    by_name: HashMap<&'static str, Vec<&'static Entry>>,
    by_id: HashMap<Builtin, &'static Entry>,
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut by_name: HashMap<&'static str, Vec<&'static Entry>> = HashMap::new();
        let mut by_id = HashMap::new();
        for e in TABLE {
            by_name.entry(e.name).or_default().push(e);
            by_id.entry(e.id).or_insert(e);
        }
        Index { by_name, by_id }
    })
}

/// The row named `name` under `recv`.
pub fn lookup(recv: Recv, name: &str) -> Option<&'static Entry> {
    index()
        .by_name
        .get(name)?
        .iter()
        .copied()
        .find(|e| e.recv == recv)
}

/// The row of `id`.
pub fn entry(id: Builtin) -> &'static Entry {
    index().by_id.get(&id).expect("every Builtin has a row")
}

/// The methods of `recv`, in table order: what "did you mean" offers after `value.`.
pub fn methods(recv: Recv) -> Vec<&'static str> {
    TABLE
        .iter()
        .filter(|e| e.recv == recv && e.is_callable())
        .map(|e| e.name)
        .collect()
}

/// Every public name of `lm`, dtypes included, for "did you mean" suggestions.
pub fn lm_names() -> impl Iterator<Item = &'static str> {
    TABLE
        .iter()
        .filter(|e| e.recv == Recv::Lm)
        .map(|e| e.name)
        .chain(DType::ALL.iter().map(|d| d.name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_unique() {
        for (i, a) in TABLE.iter().enumerate() {
            for b in &TABLE[i + 1..] {
                assert_ne!(a.id, b.id, "{} and {} share an id", a.name, b.name);
                assert!(
                    a.recv != b.recv || a.name != b.name,
                    "{:?}.{} twice",
                    a.recv,
                    a.name
                );
            }
            if let Kind::Call(ps) | Kind::Decorator(ps) = a.kind {
                for (j, p) in ps.iter().enumerate() {
                    assert!(
                        ps[j + 1..].iter().all(|q| q.name != p.name),
                        "{}: parameter {} twice",
                        a.name,
                        p.name
                    );
                }
            }
        }
    }

    #[test]
    fn dtypes_do_not_shadow_rows() {
        for d in DType::ALL {
            assert!(lookup(Recv::Lm, d.name()).is_none(), "lm.{d}");
        }
    }

    #[test]
    fn view_methods_in_help_order() {
        assert_eq!(
            methods(Recv::View),
            [
                "tma_load",
                "tma_store",
                "cp_async",
                "copy_to",
                "rows",
                "stage",
                "store",
                "load",
                "scatter_add"
            ]
        );
    }
}
