//! The schedule data model. One `Kernel` per `@cake.schedule` function. Resources are declared
//! once in arenas; statements and expressions refer to them by handle.

use crate::arena::{Arena, Handle};
use cake_diag::Span;
use cake_target::DType;

pub type ParamId = Handle<Param>;
pub type DimId = Handle<Dim>;
pub type PoolId = Handle<Pool>;
pub type ViewId = Handle<View>;
pub type TmemId = Handle<Tmem>;
pub type RoleId = Handle<Role>;
pub type FragId = Handle<Fragment>;
pub type PipelineId = Handle<Pipeline>;
pub type BarrierId = Handle<Barrier>;
pub type NamedBarrierId = Handle<NamedBarrier>;
pub type ExprId = Handle<Expr>;
pub type StmtId = Handle<Stmt>;
pub type LoopId = Handle<Loop>;

/// A whole schedule.
#[derive(Clone, Debug, Default)]
pub struct Kernel {
    pub name: String,
    pub span: Span,
    /// Targets the schedule declares it supports, exactly as written (validated against the
    /// target database by the front-end).
    pub targets: Vec<String>,
    /// One CTA per tile (`false`) or a persistent grid of at most one CTA per SM (`true`).
    pub persistent: bool,
    pub cluster: [u32; 3],
    /// CTAs each SM must be able to hold at once (`@cake.schedule(ctas_per_sm=n)`): the launch
    /// bounds' minimum, so ptxas keeps each thread's registers within 1/n of the SM's file; 0 or
    /// 1 is one. Read it through [`Kernel::ctas_per_sm`].
    pub min_ctas_per_sm: u32,
    pub params: Arena<Param>,
    pub dims: Arena<Dim>,
    pub pools: Arena<Pool>,
    pub views: Arena<View>,
    pub tmems: Arena<Tmem>,
    pub roles: Arena<Role>,
    pub fragments: Arena<Fragment>,
    pub pipelines: Arena<Pipeline>,
    pub barriers: Arena<Barrier>,
    pub named_barriers: Arena<NamedBarrier>,
    pub loops: Arena<Loop>,
    pub exprs: Arena<Expr>,
    pub stmts: Arena<Stmt>,
    pub body: Block,
    /// Tensor parameters the schedule marks as unused on purpose (`del NAME`): kept in the
    /// signature for an API, never read or written.
    pub unused_params: Vec<ParamId>,
    /// Tensor parameters the launcher fills with zeros before the kernel runs
    /// (`@cake.schedule(zero=[...])`), in the order declared: the destinations of global
    /// atomic adds start from zero.
    pub zeroed: Vec<ParamId>,
    /// Each call of a helper function the front-end inlined into this kernel, once per call
    /// site: the IR made from a helper carries spans in the helper's body, and a finding there
    /// names the calls it came through.
    pub inlined: Vec<Inlined>,
}

/// A helper function's body inlined at a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Inlined {
    pub helper: String,
    /// The helper's definition.
    pub body: Span,
    /// The call expression.
    pub call: Span,
}

pub type Block = Vec<StmtId>;

// ---------------------------------------------------------------------------------------------
// Parameters

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ParamKind {
    /// A global-memory tensor, row-major, with one extent per dimension.
    Tensor { dtype: DType, dims: Vec<Extent> },
    /// A scalar passed by value.
    Scalar { dtype: DType },
}

/// One tensor dimension: a fixed number or a symbolic dimension bound at launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    Fixed(u32),
    Sym(DimId),
}

/// A symbolic dimension ("M"), bound at launch from the first tensor that names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Dim {
    pub name: String,
    pub first_use: (ParamId, usize),
}

// ---------------------------------------------------------------------------------------------
// Resources

/// A shared-memory pool. Views are placed in it in declaration order unless they give an offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Pool {
    pub name: String,
    /// Declared capacity in bytes; `None` means "exactly what the views need".
    pub size: Option<u32>,
}

/// A shared-memory buffer: a row-major tile of `shape` (the last dimension is contiguous),
/// optionally swizzled and replicated `stages` times for a pipeline.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    pub name: String,
    pub pool: PoolId,
    /// Byte offset in the pool; `None` packs the view after the previous one.
    pub offset: Option<u32>,
    pub shape: Vec<u32>,
    pub dtype: DType,
    pub stages: u32,
    /// Swizzle span in bytes: 0 (none), 32, 64 or 128.
    pub swizzle: u32,
}

impl View {
    pub fn elements(&self) -> u64 {
        self.shape.iter().map(|&d| d as u64).product()
    }
    /// Bytes of one stage.
    pub fn stage_bytes(&self) -> u64 {
        self.elements() * self.dtype.bytes() as u64
    }
    pub fn total_bytes(&self) -> u64 {
        self.stage_bytes() * self.stages as u64
    }
    /// [`View::elements`], or `None` when the product overflows.
    pub fn checked_elements(&self) -> Option<u64> {
        self.shape
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
    }
    /// [`View::stage_bytes`], or `None` when it overflows.
    pub fn checked_stage_bytes(&self) -> Option<u64> {
        self.checked_elements()?
            .checked_mul(self.dtype.bytes() as u64)
    }
    /// [`View::total_bytes`], or `None` when it overflows: the front-end rejects such a view
    /// where it is declared, so the unchecked forms never wrap on a kernel it accepted.
    pub fn checked_total_bytes(&self) -> Option<u64> {
        self.checked_stage_bytes()?.checked_mul(self.stages as u64)
    }
    /// Bytes of one row (the contiguous dimension).
    pub fn row_bytes(&self) -> u64 {
        self.shape.last().copied().unwrap_or(1) as u64 * self.dtype.bytes() as u64
    }
    /// A swizzled row wider than the swizzle span is stored as panels of span width, panel by
    /// panel (the layout TMA writes when one box covers one panel).
    pub fn panel_cols(&self) -> u32 {
        let cols = self.shape.last().copied().unwrap_or(1);
        if self.swizzle == 0 {
            cols
        } else {
            (self.swizzle / self.dtype.bytes()).min(cols).max(1)
        }
    }
    pub fn panels(&self) -> u32 {
        let cols = self.shape.last().copied().unwrap_or(1);
        cols.div_ceil(self.panel_cols())
    }
}

/// A tensor-memory region (sm_100a family): `cols` 32-bit columns over `lanes` lanes, times
/// `stages` copies side by side (one per stage of a pipeline, like a staged view).
#[derive(Clone, Debug, PartialEq)]
pub struct Tmem {
    pub name: String,
    pub cols: u32,
    pub lanes: u32,
    pub dtype: DType,
    pub shape: Vec<u32>,
    pub stages: u32,
}

impl Tmem {
    /// Columns of every stage together: what the region takes of the allocation.
    pub fn total_cols(&self) -> u32 {
        self.cols.saturating_mul(self.stages)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoleUnit {
    Warp,
    Warpgroup,
}

impl RoleUnit {
    /// Warps in one unit: 1 for a warp, 4 for a warpgroup.
    pub fn warps(self) -> u32 {
        match self {
            RoleUnit::Warp => 1,
            RoleUnit::Warpgroup => 4,
        }
    }
    /// Threads in one unit (one replica of a role): 32 or 128.
    pub fn threads(self) -> u32 {
        self.warps() * 32
    }
}

/// A named set of warps that runs one branch of the kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Role {
    pub name: String,
    pub unit: RoleUnit,
    /// Warp or warpgroup indices, as declared.
    pub units: Vec<u32>,
    /// Register budget per thread (`setmaxnreg`), if any.
    pub regs: Option<u32>,
}

impl Role {
    /// The warps of this role, in order.
    pub fn warps(&self) -> Vec<u32> {
        let n = self.unit.warps();
        self.units.iter().flat_map(|&u| n * u..n * u + n).collect()
    }
    pub fn threads(&self) -> u32 {
        self.warps().len() as u32 * 32
    }
    /// Independent copies of per-unit state (fragments, `role.index`): one per warpgroup for
    /// warpgroup roles, one per warp for warp roles.
    pub fn replicas(&self) -> u32 {
        self.units.len() as u32
    }
}

/// Registers owned by one role: each replica of the role (warpgroup or warp) holds its own copy.
#[derive(Clone, Debug, PartialEq)]
pub struct Fragment {
    pub name: String,
    pub role: RoleId,
    pub shape: Vec<u32>,
    pub dtype: DType,
    /// 2 for a double-buffered MMA accumulator: the MMA of a pipelined loop's next iteration
    /// runs while the rest of the current iteration reads this one (costs a second register
    /// copy). 1 otherwise.
    pub buffers: u32,
    /// `rows=`: a row-layout fragment (no MMA involved) whose rows are each held by one thread,
    /// one warp or one warpgroup of the replica. `None`: the layout follows the MMA that
    /// produces or reads the fragment.
    pub rows: Option<RowOwner>,
}

/// Who holds one row of a row-layout fragment (`role.fragment(..., rows="warp")`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowOwner {
    Thread,
    Warp,
    Warpgroup,
}

impl RowOwner {
    pub const ALL: [RowOwner; 3] = [RowOwner::Thread, RowOwner::Warp, RowOwner::Warpgroup];

    /// The threads that share one row.
    pub fn threads(self) -> u32 {
        match self {
            RowOwner::Thread => 1,
            RowOwner::Warp => 32,
            RowOwner::Warpgroup => 128,
        }
    }

    /// The name a schedule writes (`rows="warp"`).
    pub fn name(self) -> &'static str {
        match self {
            RowOwner::Thread => "thread",
            RowOwner::Warp => "warp",
            RowOwner::Warpgroup => "warpgroup",
        }
    }

    pub fn from_name(s: &str) -> Option<RowOwner> {
        RowOwner::ALL.into_iter().find(|o| o.name() == s)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Pipeline {
    pub name: String,
    pub stages: u32,
}

/// An mbarrier (one per stage when bound to a pipeline).
#[derive(Clone, Debug, PartialEq)]
pub struct Barrier {
    pub name: String,
    pub pipeline: Option<PipelineId>,
    pub producers: Vec<RoleId>,
    pub consumers: Vec<RoleId>,
    /// Arrival count stated by the author; the verifier compares it with the derived count.
    pub count: Option<u32>,
    /// A cluster barrier (`cluster=True`): each arrival also counts in every peer CTA of the
    /// cluster, so a phase completes when the arriving roles of every CTA have arrived.
    pub cluster: bool,
}

/// A hardware named barrier (`bar.sync id, threads`); id and thread count are derived.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedBarrier {
    pub name: String,
    pub roles: Vec<RoleId>,
}

// ---------------------------------------------------------------------------------------------
// Expressions

/// The static type of an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    /// Integer index arithmetic (32-bit signed at run time).
    Index,
    Bool,
    /// A run-time scalar of a numeric dtype (e.g. an `f32` parameter or float literal).
    Scalar(DType),
    /// A register tile owned by a role.
    Frag {
        dtype: DType,
        shape: Vec<u32>,
        role: RoleId,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Ty,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    CeilDiv,
    Min,
    Max,
    And,
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl CmpOp {
    /// Whether `a op b` holds.
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }

    /// The operator's spelling, the same in Python and C.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
        }
    }
}

impl BinOp {
    /// Python spelling of `a op b`, as the canonical IR and findings print it.
    pub fn python(self, a: &str, b: &str) -> String {
        match self {
            BinOp::Add => format!("({a} + {b})"),
            BinOp::Sub => format!("({a} - {b})"),
            BinOp::Mul => format!("({a} * {b})"),
            BinOp::Div => format!("({a} / {b})"),
            BinOp::FloorDiv => format!("({a} // {b})"),
            BinOp::Mod => format!("({a} % {b})"),
            BinOp::And => format!("({a} and {b})"),
            BinOp::Or => format!("({a} or {b})"),
            BinOp::CeilDiv => format!("cdiv({a}, {b})"),
            BinOp::Min => format!("min({a}, {b})"),
            BinOp::Max => format!("max({a}, {b})"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    Exp2,
    /// `lm.exp2(x, ftz=True)`: subnormal inputs and results flush to zero (`ex2.approx.ftz`).
    Exp2Ftz,
    Log2,
    Sqrt,
    Rsqrt,
    Abs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    Sum,
    Max,
    Min,
    ArgMin,
    ArgMax,
}

/// A warp vote: whether a per-element condition holds for any (all) of the elements the
/// threads of a warp hold. The result is the same on every thread of the warp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteOp {
    Any,
    All,
}

impl VoteOp {
    /// The `lm` function's name.
    pub fn name(self) -> &'static str {
        match self {
            VoteOp::Any => "any",
            VoteOp::All => "all",
        }
    }
}

/// Registers ptxas needs at a wgmma beside its accumulator: the operand descriptors, addresses,
/// loop and barrier state live at the instruction. Measured: with a (64, 256) f32 accumulator
/// (128 registers per thread) ptxas asks for 154 (C7602 "Insufficient registers ... register
/// target of 154 or higher") whether the role's other fragments add 1 or 2, so a budget of 152
/// aborts the build. Unlike a spill this is fatal: every operand of the instruction, the whole
/// accumulator, must be in registers at once.
pub const WGMMA_WORKING_SET: u64 = 26;

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Int(i64),
    Float(f64),
    Bool(bool),
    /// A symbolic tensor dimension.
    Dim(DimId),
    /// A scalar parameter.
    Scalar(ParamId),
    /// The induction variable of an IR loop.
    LoopVar(LoopId),
    /// Coordinate `axis` of the current tile of a tile loop.
    TileCoord {
        tiles: LoopId,
        axis: usize,
    },
    /// Which replica (warpgroup or warp) of the role is executing.
    RoleIndex(RoleId),
    /// The stage of pipeline `p` the innermost enclosing loop over it is at (`pipe.stage`).
    PipelineStage(PipelineId),
    /// The current value of a fragment.
    Frag(FragId),
    Binary(BinOp, ExprId, ExprId),
    Unary(UnOp, ExprId),
    Cmp(CmpOp, ExprId, ExprId),
    Select(ExprId, ExprId, ExprId),
    Cast(DType, ExprId),
    /// Reduce a fragment along `axis`; the axis disappears from the shape. `packed` (min/max
    /// and their arg forms only) lets the lowering rank by a key that carries the column in
    /// the value's low mantissa bits: one min/max per element instead of a compare and two
    /// selects, at the cost of those bits' precision and of the tie order.
    Reduce {
        op: ReduceOp,
        axis: usize,
        arg: ExprId,
        packed: bool,
    },
    /// `lm.any(arg)` / `lm.all(arg)` of a bool register value: a run-time condition uniform
    /// over each warp (not over the role or the CTA).
    Vote {
        op: VoteOp,
        arg: ExprId,
    },
    /// Insert a unit axis (NumPy `v[:, None]`) so the value broadcasts along it.
    Expand {
        arg: ExprId,
        axis: usize,
    },
    /// An i32 register tile whose every element is its own index along `axis` (0-based,
    /// within the tile): what masks compare with (`lm.iota`).
    Iota {
        shape: Vec<u32>,
        axis: usize,
    },
    /// A register tile loaded from a global tensor at `coords` (out-of-range elements read
    /// `fill`).
    Load {
        tensor: ParamId,
        coords: Vec<ExprId>,
        shape: Vec<u32>,
        fill: f64,
        /// The L2 eviction priority of the lines the load brings in (`evict=`); `None`: normal.
        evict: Option<Evict>,
    },
    /// A register tile read from a shared-memory view (`view.load(cta=None)`), from the view of
    /// cluster CTA `cta` when given (distributed shared memory), in the layout of the value that
    /// consumes it.
    ViewLoad {
        view: ViewRef,
        cta: Option<ExprId>,
    },
}

// ---------------------------------------------------------------------------------------------
// Statements

/// A use of a view as an operand: optionally a row range, optionally transposed.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewRef {
    pub view: ViewId,
    /// `(first row, row count)`; the count is a compile-time constant.
    pub rows: Option<(ExprId, u32)>,
    pub transposed: bool,
    /// Explicit stage (`view.stage(i)`); `None` means "the stage of the enclosing pipeline loop".
    pub stage: Option<ExprId>,
}

/// A range of a TMEM region's columns (`region.cols(start, count)`), in the region's elements
/// along its second axis; both compile-time constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmemCols {
    pub start: u32,
    pub count: u32,
}

/// A use of a TMEM region: optionally a column range, optionally an explicit stage.
#[derive(Clone, Debug, PartialEq)]
pub struct TmemRef {
    pub region: TmemId,
    /// `region.cols(start, count)`; `None` is the whole region (an MMA operand always is).
    pub cols: Option<TmemCols>,
    /// Explicit stage (`region.stage(i)`); `None` means "the stage of the enclosing pipeline
    /// loop", as for a view.
    pub stage: Option<ExprId>,
}

impl TmemRef {
    /// The whole region, at the stage of the enclosing pipeline loop.
    pub fn whole(region: TmemId) -> TmemRef {
        TmemRef {
            region,
            cols: None,
            stage: None,
        }
    }
}

/// Where an MMA operand lives; the instruction form follows from this and the target.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    Smem(ViewRef),
    Frag(FragId),
    Tmem(TmemRef),
}

/// An IR loop: `lm.range(start, stop)` or `lm.tiles(...)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub var_name: String,
    pub kind: LoopKind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum LoopKind {
    /// `for k in lm.range(start, stop, pipeline=p)`.
    Range {
        start: ExprId,
        stop: ExprId,
        pipeline: Option<PipelineId>,
    },
    /// The tile loop shared by all roles: tile counts per axis.
    Tiles {
        counts: Vec<ExprId>,
        names: Vec<String>,
        /// Raster order: visit tiles in groups of `group` along axis 0 (column-major inside a
        /// group) so CTAs running at the same time share operand tiles in L2. `None` is plain
        /// row-major order.
        group: Option<u32>,
        /// Stream-K (`stream=KB`): the tiles' KB steps each, `Π counts · KB` in all, are split
        /// evenly over the persistent grid; the loop visits each (tile, run of steps) of this
        /// CTA's share and binds the run's first and last-plus-one step as the coordinates of
        /// axes `counts.len()` and `counts.len() + 1` (`names` holds their names too).
        stream: Option<ExprId>,
        /// Dynamic scheduling (`dynamic=True`, persistent only): each CTA's first tile is its
        /// index, and every later one is taken from a counter in global memory when the CTA
        /// comes to it, so an SM that finishes early takes more tiles. All roles of a CTA see
        /// the same tiles, handed from the role that takes them through shared memory.
        dynamic: bool,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// `with role:` — only the role's warps execute the body.
    Role {
        role: RoleId,
        body: Block,
    },
    Loop {
        id: LoopId,
        body: Block,
    },
    If {
        cond: ExprId,
        then_body: Block,
        else_body: Block,
    },
    /// `with lm.ahead(steps):` directly in the body of a pipelined `lm.range` loop: the body's
    /// waits and copies for iteration `k` are issued `steps` iterations early, in iteration
    /// `k - steps` (the first `steps` iterations' before the loop), so a role that waits for
    /// its own copies keeps `steps` of them in flight (docs/language.md §8.3a). The program
    /// as written is what is verified; `CAKE-M013` checks that issuing the body early keeps
    /// it the same.
    Ahead {
        steps: u32,
        body: Block,
    },
    Op(Op),
}

/// An L2 eviction priority for the lines a copy, load or store touches (`createpolicy` and
/// `.L2::cache_hint`): `First` for data read once (a weight streamed past every other line),
/// `Last` for data many CTAs reread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Evict {
    First,
    Last,
}

impl Evict {
    /// The spelling in schedules (`evict="first"`) and the canonical IR.
    pub fn as_str(self) -> &'static str {
        match self {
            Evict::First => "first",
            Evict::Last => "last",
        }
    }

    /// The `createpolicy` eviction priority.
    pub fn ptx(self) -> &'static str {
        match self {
            Evict::First => "evict_first",
            Evict::Last => "evict_last",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// Bulk tensor copy global → shared completing on `barrier` (tx bytes derived).
    TmaLoad {
        dst: ViewRef,
        src: ParamId,
        coords: Vec<ExprId>,
        barrier: BarrierId,
        multicast: u32,
        /// The L2 eviction priority of the lines the copy brings in (`evict=`); `None`: normal.
        evict: Option<Evict>,
    },
    /// Bulk tensor copy shared → global. `add`: the tile is added to the tensor's elements
    /// (`cp.reduce.async.bulk.tensor ... .add`, at L2) instead of overwriting them.
    TmaStore {
        dst: ParamId,
        src: ViewRef,
        coords: Vec<ExprId>,
        add: bool,
    },
    /// Per-thread asynchronous copy global → shared (sm_80+), completing on `barrier`.
    CpAsync {
        dst: ViewRef,
        src: ParamId,
        coords: Vec<ExprId>,
        barrier: BarrierId,
        /// The L2 eviction priority of the lines the copy brings in (`evict=`); `None`: normal.
        evict: Option<Evict>,
    },
    /// Shared → global by the role's threads, element by element (`st.global`, or with `add`
    /// `red.global.add`): no alignment needed, unlike a TMA store.
    CopyTo {
        dst: ParamId,
        src: ViewRef,
        coords: Vec<ExprId>,
        add: bool,
    },
    /// Load a shared-memory tile into a register fragment with ldmatrix.
    Ldmatrix { dst: FragId, src: ViewRef },
    /// `acc (+)= a · b` on the tensor cores.
    Mma {
        acc: Operand,
        a: Operand,
        b: Operand,
        accumulate: ExprId,
        release: Option<BarrierId>,
        /// Issued one iteration late: the last MMA of a pipelined loop's body, moved (with the
        /// wait before it) after the next iteration's first MMA, the last iteration's after
        /// the loop, so that MMA's readers overlap it (docs/language.md §9.6).
        defer: bool,
        /// The role's replicas issue it in turns, round-robin (a hardware barrier per replica:
        /// replica r waits for r − 1 to have issued), so one replica's MMAs run while the others
        /// compute (FlashAttention-3's ping-pong; docs/language.md §9.6).
        turns: bool,
    },
    /// Copy a TMEM region, or a column range of it, into a register fragment (tcgen05.ld).
    TmemLoad { dst: FragId, src: TmemRef },
    /// Copy a register value into a TMEM region, or a column range of it (tcgen05.st).
    TmemStore { dst: TmemRef, src: ExprId },
    /// Copy shared memory into TMEM (tcgen05.cp).
    TmemCopy { dst: TmemRef, src: ViewRef },
    /// Store a register value to a global tensor at `coords` (rows/cols past the tensor's
    /// extent are skipped). `transposed`: element (i, j) of the 2-D value goes to the two
    /// innermost axes at (coords[-2] + j, coords[-1] + i).
    Store {
        dst: ParamId,
        value: ExprId,
        coords: Vec<ExprId>,
        transposed: bool,
        /// The L2 eviction priority of the lines the store writes (`evict=`); `None`: normal.
        evict: Option<Evict>,
    },
    /// `dst[.., coords[-2] + index[r], coords[-1] + c] += value[r, c]` for each row `r` of a
    /// row-layout register tile, with `index` one i32 value per row; rows whose destination lies
    /// outside `dst` are skipped, and `counts[.., coords[-2] + index[r]] += 1` for each row
    /// added. Global atomics (`red.global.add`): the order of the adds is not defined.
    GlobalScatterAdd {
        dst: ParamId,
        value: ExprId,
        index: ExprId,
        coords: Vec<ExprId>,
        counts: Option<ParamId>,
    },
    /// Write a register value into a shared-memory view (generic proxy).
    SmemStore { dst: ViewRef, value: ExprId },
    /// `dst[index[r] - offset, :] += src[r, :]` for each of the first `valid_rows` rows `r` of
    /// `src` (all when None), with `index` a 1-D i32 view of one entry per row; indices outside
    /// `dst`'s rows are skipped, and `counts[i] += 1` for each row added to row `i`.
    /// Shared-memory atomics (generic proxy), by all threads of the role.
    ScatterAdd {
        dst: ViewRef,
        src: ViewRef,
        index: ViewRef,
        offset: ExprId,
        valid_rows: Option<ExprId>,
        counts: Option<ViewRef>,
    },
    /// Overwrite a fragment (`frag[:] = value`).
    Assign { dst: FragId, value: ExprId },
    /// Overwrite several distinct fragments in one statement (`a[:], b[:] = x, y`): every
    /// value reads the fragments as they were before the statement, and a row-layout
    /// statement's loads, shared ones once, are all in flight before the first is used.
    AssignMany { pairs: Vec<(FragId, ExprId)> },
    /// Block until the barrier's current phase (of the current stage) completes.
    Wait { barrier: BarrierId },
    /// Arrive on the barrier (the arrival count per phase is derived from the roles).
    Arrive { barrier: BarrierId },
    /// Arrive on the barrier once all previously issued async tensor-core work of this thread
    /// completes (tcgen05.commit).
    Commit { barrier: BarrierId },
    /// Order generic-proxy shared-memory writes before later async-proxy reads.
    FenceProxyAsync,
    /// Synchronise the roles of a named barrier.
    Sync { barrier: NamedBarrierId },
    /// Stream-K fix-up of an f32 accumulator after a stream tile loop's run of K steps
    /// (`lm.stream_fixup(acc)`): a run that does not end the tile publishes `frag` for the CTA
    /// that does; the run that ends it adds every earlier run's partial into `frag`, which then
    /// holds the whole tile's sum (docs/language.md §8.1a).
    StreamFixup { frag: FragId },
}

impl Kernel {
    /// CTAs each SM must hold at once (`ctas_per_sm=`, at least 1).
    pub fn ctas_per_sm(&self) -> u32 {
        self.min_ctas_per_sm.max(1)
    }

    pub fn expr(&self, e: ExprId) -> &Expr {
        &self.exprs[e]
    }
    /// Constant value of an index expression, if it is a literal.
    pub fn const_int(&self, e: ExprId) -> Option<i64> {
        match self.exprs[e].kind {
            ExprKind::Int(v) => Some(v),
            _ => None,
        }
    }
    /// Value of a numeric literal (int or float), if `e` is one.
    pub fn const_number(&self, e: ExprId) -> Option<f64> {
        match self.exprs[e].kind {
            ExprKind::Int(v) => Some(v as f64),
            ExprKind::Float(v) => Some(v),
            _ => None,
        }
    }
    /// The role that owns the statement's enclosing region, for every statement.
    pub fn walk<'a>(&'a self, mut f: impl FnMut(StmtId, &'a Stmt, &WalkCtx)) {
        fn go<'a>(
            k: &'a Kernel,
            block: &'a Block,
            ctx: &mut WalkCtx,
            f: &mut impl FnMut(StmtId, &'a Stmt, &WalkCtx),
        ) {
            for &s in block {
                let stmt = &k.stmts[s];
                f(s, stmt, ctx);
                match stmt {
                    Stmt::Role { role, body } => {
                        let prev = ctx.role.replace(*role);
                        go(k, body, ctx, f);
                        ctx.role = prev;
                    }
                    Stmt::Loop { id, body } => {
                        ctx.loops.push(*id);
                        go(k, body, ctx, f);
                        ctx.loops.pop();
                    }
                    Stmt::Ahead { body, .. } => go(k, body, ctx, f),
                    Stmt::If {
                        cond,
                        then_body,
                        else_body,
                    } => {
                        ctx.if_depth += 1;
                        for (body, negated) in [(then_body, false), (else_body, true)] {
                            ctx.guards.push(Guard {
                                cond: *cond,
                                loop_depth: ctx.loops.len(),
                                negated,
                            });
                            go(k, body, ctx, f);
                            ctx.guards.pop();
                        }
                        ctx.if_depth -= 1;
                    }
                    Stmt::Op(_) => {}
                }
            }
        }
        let mut ctx = WalkCtx::default();
        go(self, &self.body, &mut ctx, &mut f);
    }

    /// The body of loop `l`.
    pub fn loop_body(&self, l: LoopId) -> Option<&Block> {
        self.stmts.iter().find_map(|(_, s)| match s {
            Stmt::Loop { id, body } if *id == l => Some(body),
            _ => None,
        })
    }

    /// The `with lm.ahead(steps):` region that opens a loop body, if it does: its statement,
    /// steps and body. Only there is a region issued early (`CAKE-M013` reports one elsewhere).
    pub fn leading_ahead<'a>(&'a self, body: &Block) -> Option<(StmtId, u32, &'a Block)> {
        let &first = body.first()?;
        match &self.stmts[first] {
            Stmt::Ahead { steps, body } => Some((first, *steps, body)),
            _ => None,
        }
    }

    /// Whether condition `e` holds a warp vote (`lm.any`, `lm.all`): an `if` on it is taken
    /// per warp, not per role.
    pub fn expr_votes(&self, e: ExprId) -> bool {
        self.expr_any(e, |k| matches!(k, ExprKind::Vote { .. }))
    }

    /// Whether expression `e` reads the variable of loop `l`.
    pub fn expr_reads_loop_var(&self, e: ExprId, l: LoopId) -> bool {
        self.expr_any(e, |k| matches!(k, ExprKind::LoopVar(v) if *v == l))
    }

    /// Whether expression `e` reads the replica index of role `r` (`role.index`).
    pub fn expr_reads_role_index(&self, e: ExprId, r: RoleId) -> bool {
        self.expr_any(e, |k| matches!(k, ExprKind::RoleIndex(q) if *q == r))
    }

    /// Whether expression `e` reads the tile coordinate of `axis` (`lm.tiles`).
    pub fn expr_reads_tile_coord(&self, e: ExprId, axis: usize) -> bool {
        self.expr_any(
            e,
            |k| matches!(k, ExprKind::TileCoord { axis: a, .. } if *a == axis),
        )
    }

    /// Whether the kernel's tile loop takes its tiles dynamically (`lm.tiles(..., dynamic=True)`).
    pub fn dynamic_tiles(&self) -> bool {
        self.loops
            .iter()
            .any(|(_, l)| matches!(l.kind, LoopKind::Tiles { dynamic: true, .. }))
    }

    /// The stream tile loop's count of K steps per tile and the axes of its run bounds
    /// (`(count, first axis, stop axis)`), when the kernel's tile loop has `stream=`.
    pub fn stream_k(&self) -> Option<(ExprId, usize, usize)> {
        self.loops.iter().find_map(|(_, l)| match &l.kind {
            LoopKind::Tiles {
                counts,
                stream: Some(kb),
                ..
            } => Some((*kb, counts.len(), counts.len() + 1)),
            _ => None,
        })
    }

    /// Whether `cond` is `k1 == KB` of a stream-K tile loop (its run's stop step equals the
    /// steps per tile, either way round): true on exactly the run that ends each tile.
    pub fn is_stream_end(&self, cond: ExprId) -> bool {
        let Some((steps, _, stop)) = self.stream_k() else {
            return false;
        };
        let ExprKind::Cmp(CmpOp::Eq, a, b) = self.exprs[cond].kind else {
            return false;
        };
        let is_stop = |e: ExprId| matches!(self.exprs[e].kind, ExprKind::TileCoord { axis, .. } if axis == stop);
        let is_steps = |e: ExprId| {
            e == steps
                || (self.const_int(e).is_some() && self.const_int(e) == self.const_int(steps))
        };
        (is_stop(a) && is_steps(b)) || (is_stop(b) && is_steps(a))
    }

    /// Whether expression `e` reads fragment `f`.
    pub fn expr_reads_fragment(&self, e: ExprId, f: FragId) -> bool {
        self.expr_any(e, |k| matches!(k, ExprKind::Frag(g) if *g == f))
    }

    /// The innermost enclosing pipeline bound by a loop in `loops`.
    pub fn enclosing_pipeline(&self, loops: &[LoopId]) -> Option<(LoopId, PipelineId)> {
        loops.iter().rev().find_map(|&l| match self.loops[l].kind {
            LoopKind::Range {
                pipeline: Some(p), ..
            } => Some((l, p)),
            _ => None,
        })
    }

    /// 32-bit registers per thread that fragment `f` holds: its bytes spread over the threads of
    /// one replica of its role, times its buffers (what `cake build`'s spill note and the
    /// verifier's register-demand rule both count).
    pub fn fragment_registers(&self, f: FragId) -> u64 {
        let frag = &self.fragments[f];
        let threads = self.roles[frag.role].unit.threads() as u64;
        let bytes = frag.shape.iter().fold(frag.dtype.bytes() as u64, |a, &d| {
            a.saturating_mul(d as u64)
        });
        bytes
            .div_ceil(4 * threads)
            .saturating_mul(frag.buffers as u64)
    }

    /// Registers per thread role `r` needs beyond its budget (`regs=`, else `launch` — the
    /// launch allocation): its fragments, plus [`WGMMA_WORKING_SET`] when it issues a wgmma.
    /// ptxas spills about that many (`examples/attention_sm90.py` with 192-key tiles: 212 in
    /// fragments and the working set against 232 spilled 48 B).
    pub fn registers_over_budget(&self, r: RoleId, launch: u32, issues_wgmma: bool) -> u64 {
        let budget = self.register_budget(r, launch);
        let working = if issues_wgmma { WGMMA_WORKING_SET } else { 0 };
        (self.role_fragment_registers(r) + working).saturating_sub(budget)
    }

    /// Registers per thread role `r` may hold: its `regs=`, else `launch` (the launch
    /// allocation, `Limits::launch_registers`).
    pub fn register_budget(&self, r: RoleId, launch: u32) -> u64 {
        self.roles[r].regs.unwrap_or(launch) as u64
    }

    /// [`Kernel::fragment_registers`] summed over the fragments of role `r`.
    pub fn role_fragment_registers(&self, r: RoleId) -> u64 {
        self.fragments
            .iter()
            .filter(|(_, f)| f.role == r)
            .map(|(h, _)| self.fragment_registers(h))
            .fold(0u64, u64::saturating_add)
    }

    /// Threads per CTA: every warp of every role (roles may leave gaps; the block covers up to
    /// the highest warp).
    pub fn block_threads(&self) -> u32 {
        self.roles
            .iter()
            .flat_map(|(_, r)| r.warps())
            .max()
            .map_or(32, |w| (w + 1) * 32)
    }

    /// CTAs per thread-block cluster (1 without a cluster).
    pub fn cluster_size(&self) -> u32 {
        self.cluster.iter().product()
    }

    /// Whether barrier `b` is a cluster barrier that an `lm.arrive` signals: an arrival after
    /// ordinary accesses, which a waiter in another CTA may read (a peer's `view.load`), so
    /// its waits acquire at cluster scope.
    pub fn publishes_to_cluster(&self, b: BarrierId) -> bool {
        if !self.barriers[b].cluster {
            return false;
        }
        let mut found = false;
        self.walk(|_, stmt, _| {
            found |= matches!(stmt, Stmt::Op(Op::Arrive { barrier }) if *barrier == b);
        });
        found
    }

    /// Why a TMA load into `dst` multicast to `multicast` CTAs cannot be delivered in this
    /// kernel: each CTA of a `(multicast, 1, 1)` cluster loads one share of a whole 2-D view's
    /// rows, a multiple of 8 rows so every share starts on a swizzle-pattern boundary.
    pub fn multicast_problem(&self, dst: &ViewRef, multicast: u32) -> Option<MulticastProblem> {
        let view = &self.views[dst.view];
        if self.cluster != [multicast, 1, 1] {
            Some(MulticastProblem::ClusterShape)
        } else if dst.rows.is_some() || view.shape.len() != 2 {
            Some(MulticastProblem::NotWholeView)
        } else if !view.shape[0].is_multiple_of(8 * multicast) {
            Some(MulticastProblem::RowShares)
        } else {
            None
        }
    }
}

/// See [`Kernel::multicast_problem`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MulticastProblem {
    /// The kernel's cluster is not `(multicast, 1, 1)`.
    ClusterShape,
    /// The load fills a row range, or a view that is not 2-D.
    NotWholeView,
    /// The view's rows do not split into `multicast` shares of a multiple of 8 rows.
    RowShares,
}

/// Context passed to `Kernel::walk` callbacks.
#[derive(Clone, Debug, Default)]
pub struct WalkCtx {
    pub role: Option<RoleId>,
    pub loops: Vec<LoopId>,
    pub if_depth: u32,
    /// The run-time `if`s around the statement, outermost first.
    pub guards: Vec<Guard>,
}

/// A run-time `if` around a statement (either branch).
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    pub cond: ExprId,
    /// How many of the statement's loops enclose the `if`: `loops[..loop_depth]`.
    pub loop_depth: usize,
    /// The statement is in the `else` branch.
    pub negated: bool,
}
