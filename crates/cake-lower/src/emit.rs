//! The CUDA emitter. One branch per role; inside it, the tile loop, the role's loops and its
//! operations in program order. Mechanical facts come from `cake_ir` analyses: shared-memory
//! offsets from `layout`, arrival counts and transaction bytes from `sync`.

use crate::launch::*;
use crate::prelude;
use crate::{Lowered, Unsupported};
use cake_diag::{SourceFile, Span};
use cake_ir::layout::{smem_layout, SmemLayout};
use cake_ir::sync::{barrier_facts, is_issue_only, tma_bytes, BarrierFacts};
use cake_ir::*;
use cake_target::{Feature, MmaFamily, Target};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

#[path = "tcgen05.rs"]
mod tcgen05;

/// Slack added to dynamic shared memory so the base can be rounded up to 1024 bytes (the
/// 128B-swizzle repeat) whatever alignment the driver gives.
const SMEM_ALIGN_SLACK: u64 = 1024;

/// The CTA's 16 hardware barriers (`bar.sync id`): 0 is `__syncthreads`, named barriers
/// (`lm.named_barrier`) take ids in declaration order from the first range, and the per-replica
/// barriers around TMA stores take the second.
const NAMED_BARRIER_IDS: std::ops::RangeInclusive<u32> = 1..=7;
const TMA_STORE_BARRIER_IDS: std::ops::RangeInclusive<u32> = 8..=15;

/// How a fragment's elements are spread over a warpgroup's registers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FragLayout {
    /// The wgmma accumulator of an m64nN tile: thread t holds rows 16·(t/32) + (t%32)/4 (+8)
    /// and column pairs 8i + 2·(t%4).
    WgmmaAcc { n: u32 },
    /// One value per row of a 64-row accumulator tile: each thread holds its two rows (+0, +8),
    /// replicated across the four threads of a quad — what a row reduction of the tile yields.
    AccRows,
    /// An mma.sync accumulator of an (m, n) tile held by one warp: m/16 × n/8 tiles of
    /// m16n8, four registers each. Lane t holds rows 16·mt + t/4 (+8) and columns
    /// 8·nt + 2·(t%4) (+1); register 4·(mt·n/8 + nt) + 2h + j.
    MmaAcc { m: u32, n: u32 },
    /// A wgmma A operand in registers: a 16-bit (64, k) tile of a warpgroup, in the
    /// accumulator's element order (row +8h, column 8i + 2·(t%4) + j), two elements per 32-bit
    /// register: register 2i + h holds elements j = 0, 1. k/16 k-steps of four registers each.
    WgmmaA { k: u32 },
    /// An mma.sync A operand of an (m, k) tile held by one warp, loaded by ldmatrix.x4: m/16
    /// row tiles × (k bytes)/32 k-steps, four 32-bit registers each, in the order ldmatrix
    /// returns them (rows +0/+8 of the first 16 bytes, then of the second 16 bytes).
    MmaA { m: u32, k_bytes: u32 },
    /// One TMEM lane (a row of `n` columns) per thread of a warpgroup: what `tcgen05.ld` of the
    /// 32x32b shape gives, thread t holding row t (sm_100a family).
    TmemRow { n: u32 },
    /// One value per TMEM lane (row), held by that lane's thread: a row reduction of a
    /// `TmemRow` tile, or a `(128,)` fragment of the same warpgroup role.
    LaneScalar,
}

impl FragLayout {
    /// 32-bit registers one thread holds.
    fn registers(self) -> u32 {
        match self {
            FragLayout::WgmmaAcc { n } => n / 2,
            FragLayout::AccRows => 2,
            FragLayout::MmaAcc { m, n } => m * n / 32,
            FragLayout::MmaA { m, k_bytes } => m * k_bytes / 128,
            FragLayout::WgmmaA { k } => k / 4,
            FragLayout::TmemRow { n } => n,
            FragLayout::LaneScalar => 1,
        }
    }
    fn is_accumulator(self) -> bool {
        matches!(
            self,
            FragLayout::WgmmaAcc { .. } | FragLayout::MmaAcc { .. }
        )
    }
}

/// Which register element of a warpgroup tile an element-wise expression is evaluated for.
#[derive(Clone, Copy, PartialEq)]
enum Site {
    /// Element (i, h, j) of an accumulator tile: register 4i + 2h + j, row +8h, column 8i + j.
    Tile,
    /// Row h of the tile (h in 0..2).
    Rows,
    /// Column `c` (a C variable in scope) of a one-row-per-thread TMEM tile
    /// (`FragLayout::TmemRow`).
    Lane,
}

pub struct Emitter<'a> {
    k: &'a Kernel,
    file: &'a SourceFile,
    target: &'a Target,
    layout: SmemLayout,
    facts: Vec<BarrierFacts>,
    frag_layouts: HashMap<FragId, FragLayout>,
    tmaps: Vec<(ParamId, Vec<u32>, u32)>,
    wgmma_shapes: BTreeSet<(u32, &'static str)>,
    /// mma.sync instructions used: (k, A type, B type).
    mma_sync_shapes: BTreeSet<(u32, &'static str, &'static str)>,
    /// Swizzle modes whose address function the generated code uses.
    swizzles: BTreeSet<u32>,
    /// Accumulators of wgmma groups committed and not yet waited for (sm_90a): an operation
    /// that reads or overwrites one must first wait for them to retire.
    mma_in_flight: BTreeSet<FragId>,
    /// wgmma shapes whose A operand is in registers: (N, input type).
    wgmma_rs_shapes: BTreeSet<(u32, &'static str)>,
    /// Prelude sections the body turned out to need beyond the target's (shared-memory
    /// atomics and fills; TMA stores of rank other than 2).
    needs_shared_ops: bool,
    tma_store_ranks: BTreeSet<usize>,
    errors: Vec<Unsupported>,
    out: String,
    indent: usize,
    /// Role whose branch is being emitted, and whether it runs on one thread per replica.
    role: Option<(RoleId, bool)>,
    /// Pipelined loops enclosing the current statement: (loop, pipeline).
    pipes: Vec<(LoopId, PipelineId)>,
    /// Barrier whose release is deferred by one iteration (wgmma keeps one group in flight).
    deferred_release: Vec<(BarrierId, PipelineId)>,
    /// Depth of the current role's `with` regions around the statement being emitted.
    indent_role_depth: u32,
    /// Row reductions already computed in the current block: expression → array name, and
    /// (argument, op, packed) → array name for reuse by structurally equal reductions.
    reductions: HashMap<ExprId, String>,
    reduction_keys: Vec<(ExprId, ReduceOp, bool, String)>,
    reduction_counter: u32,
    /// Per-column vector loads hoisted out of a row loop: expression → local name.
    col_loads: HashMap<ExprId, String>,
    /// Per-column vector loads issued at the top of the current loop iteration: expression →
    /// register array (`[i][j]`, the thread's columns).
    prefetched: HashMap<ExprId, String>,
    /// The register array currently standing for a double-buffered fragment.
    frag_alias: HashMap<FragId, String>,
}

fn c_ident(name: &str) -> String {
    const RESERVED: &[&str] = &[
        "int",
        "float",
        "double",
        "char",
        "void",
        "if",
        "else",
        "for",
        "while",
        "do",
        "return",
        "const",
        "static",
        "auto",
        "break",
        "case",
        "default",
        "switch",
        "struct",
        "union",
        "enum",
        "long",
        "short",
        "signed",
        "unsigned",
        "volatile",
        "register",
        "goto",
        "continue",
        "sizeof",
        "typedef",
        "extern",
        "inline",
        "bool",
        "true",
        "false",
        "new",
        "delete",
        "this",
        "class",
        "template",
        "namespace",
        "using",
        "warp",
        "lane",
        "tile",
    ];
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if RESERVED.contains(&clean.as_str())
        || clean.starts_with("cake_")
        || clean.starts_with(|c: char| c.is_ascii_digit())
    {
        format!("{clean}_")
    } else {
        clean
    }
}

impl<'a> Emitter<'a> {
    pub fn new(k: &'a Kernel, file: &'a SourceFile, target: &'a Target) -> Self {
        Emitter {
            k,
            file,
            target,
            layout: smem_layout(k),
            facts: barrier_facts(k, target),
            frag_layouts: HashMap::new(),
            tmaps: Vec::new(),
            wgmma_shapes: BTreeSet::new(),
            mma_sync_shapes: BTreeSet::new(),
            swizzles: BTreeSet::new(),
            wgmma_rs_shapes: BTreeSet::new(),
            mma_in_flight: BTreeSet::new(),
            needs_shared_ops: false,
            tma_store_ranks: BTreeSet::new(),
            errors: Vec::new(),
            out: String::new(),
            indent: 0,
            role: None,
            pipes: Vec::new(),
            deferred_release: Vec::new(),
            indent_role_depth: 0,
            reductions: HashMap::new(),
            reduction_keys: Vec::new(),
            reduction_counter: 0,
            col_loads: HashMap::new(),
            prefetched: HashMap::new(),
            frag_alias: HashMap::new(),
        }
    }

    fn unsupported(&mut self, span: Span, message: impl Into<String>) {
        // Unrolled and duplicated code (compile-time loops, double buffering) reaches the same
        // construct more than once: report it once.
        let u = Unsupported {
            span,
            message: message.into(),
        };
        if !self.errors.contains(&u) {
            self.errors.push(u);
        }
    }

    fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(text);
        self.out.push('\n');
    }

    fn loc(&self, span: Span) -> String {
        let name = std::path::Path::new(&self.file.name)
            .file_name()
            .map_or(self.file.name.clone(), |n| n.to_string_lossy().into_owned());
        format!("{}:{}", name, self.file.line_of(span.start))
    }

    /// Whether this target's MMAs lower to warp-level mma.sync (sm_80, sm_89) rather than wgmma.
    fn mma_sync(&self) -> bool {
        self.target.mma == MmaFamily::MmaSync
    }

    pub fn run(mut self) -> Result<Lowered, Vec<Unsupported>> {
        if !crate::has_code_generator(self.target) {
            self.unsupported(
                self.k.span,
                format!(
                    "code generation for {} ({}) is not implemented yet; sm_80, sm_89, sm_120a and sm_121a (mma.sync), sm_90a (wgmma), sm_100a and sm_103a (tcgen05) have it",
                    self.target.name,
                    self.target.mma.name()
                ),
            );
            return Err(self.errors);
        }
        if self.mma_sync() {
            self.infer_mma_sync_layouts();
        } else {
            self.infer_fragment_layouts();
            if self.is_tcgen05() {
                self.infer_tmem_fragment_layouts();
            }
        }
        self.collect_tensor_maps();
        let args = self.args();
        let symbol = format!("cake_{}", c_ident(&self.k.name));
        let body = self.kernel_body();
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let mut cuda = String::new();
        let _ = writeln!(cuda, "// Generated by cake {} from {} for {}. Do not edit: change the schedule and run `cake lower`.", env!("CARGO_PKG_VERSION"), self.file_name(), self.target.name);
        cuda.push_str(prelude::COMMON);
        // mbarrier.try_wait arrived with the transaction counts (sm_90); before it, test_wait.
        if self.target.has(Feature::MbarrierExpectTx) {
            cuda.push_str(prelude::MBARRIER);
        } else {
            cuda.push_str(prelude::MBARRIER_TEST_WAIT);
        }
        // TMA and register reallocation follow the target, not its MMA family (sm_120a/121a
        // have both beside mma.sync).
        if self.target.has(Feature::Tma) {
            cuda.push_str(prelude::TMA);
        }
        if self.target.has(Feature::SetMaxNReg) {
            cuda.push_str(prelude::SETMAXNREG);
        }
        if self.clustered() {
            cuda.push_str(prelude::CLUSTER);
        }
        for rank in &self.tma_store_ranks {
            cuda.push_str(&prelude::tma_store_fn(*rank));
        }
        if self.needs_shared_ops {
            cuda.push_str(prelude::SHARED_OPS);
        }
        if self.mma_sync() {
            cuda.push_str(prelude::CP_ASYNC);
            cuda.push_str(prelude::MMA_SYNC);
            for s in &self.swizzles {
                cuda.push_str(&prelude::swizzle_fn(*s));
            }
            for (kk, a, b) in &self.mma_sync_shapes {
                cuda.push('\n');
                cuda.push_str(&prelude::mma_sync_fn(*kk, a, b));
            }
        } else if self.is_tcgen05() {
            cuda.push_str(tcgen05::PRELUDE);
            cuda.push('\n');
            cuda.push_str(&tcgen05::tmem_ld_fn());
            cuda.push('\n');
            cuda.push_str(&tcgen05::tmem_st_fn());
        } else {
            cuda.push_str(prelude::WGMMA);
            for (n, input) in &self.wgmma_shapes {
                cuda.push('\n');
                cuda.push_str(&prelude::wgmma_fn(*n, input));
            }
            for (n, input) in &self.wgmma_rs_shapes {
                cuda.push('\n');
                cuda.push_str(&prelude::wgmma_rs_fn(*n, input));
            }
        }
        let threads = self.k.block_threads();
        let _ = writeln!(
            cuda,
            "\nextern \"C\" __global__ void __launch_bounds__({threads}, 1) {symbol}("
        );
        let params: Vec<String> = args.iter().map(|a| self.param_decl(a)).collect();
        let _ = writeln!(cuda, "    {}) {{", params.join(",\n    "));
        cuda.push_str(&body);
        cuda.push_str("}\n");
        let launch = self.launch_meta(symbol.clone(), args);
        Ok(Lowered {
            symbol,
            cuda,
            launch,
        })
    }

    fn file_name(&self) -> String {
        std::path::Path::new(&self.file.name)
            .file_name()
            .map_or(self.file.name.clone(), |n| n.to_string_lossy().into_owned())
    }

    // -----------------------------------------------------------------------------------------
    // Analyses local to lowering

    fn ops(&self) -> Vec<(StmtId, Op, Option<RoleId>)> {
        let mut out = Vec::new();
        self.k.walk(|sid, stmt, ctx| {
            if let Stmt::Op(op) = stmt {
                out.push((sid, op.clone(), ctx.role));
            }
        });
        out
    }

    fn infer_fragment_layouts(&mut self) {
        for (sid, op, _) in self.ops() {
            if let Op::Mma {
                acc: Operand::Frag(f),
                ..
            } = op
            {
                let frag = &self.k.fragments[f];
                let role = &self.k.roles[frag.role];
                if role.unit != RoleUnit::Warpgroup || frag.shape.len() != 2 || frag.shape[0] != 64
                {
                    let sp = self.k.stmts.span(sid);
                    self.unsupported(sp, format!("a wgmma accumulator is a (64, N) fragment of a warpgroup role; `{}` is {:?} on role `{}`", frag.name, frag.shape, role.name));
                    continue;
                }
                self.frag_layouts
                    .insert(f, FragLayout::WgmmaAcc { n: frag.shape[1] });
            }
        }
        // Register A operands: a 16-bit (64, K) tile of a warpgroup role.
        for (sid, op, _) in self.ops() {
            let Op::Mma {
                a: Operand::Frag(f),
                ..
            } = op
            else {
                continue;
            };
            let frag = &self.k.fragments[f];
            let role = &self.k.roles[frag.role];
            let ok = role.unit == RoleUnit::Warpgroup
                && frag.shape.len() == 2
                && frag.shape[0] == 64
                && frag.shape[1].is_multiple_of(16)
                && matches!(frag.dtype, DType::BF16 | DType::F16);
            if !ok {
                let sp = self.k.stmts.span(sid);
                self.unsupported(sp, format!("a wgmma A operand in registers is a bf16 or f16 (64, K) fragment of a warpgroup role, K a multiple of 16; `{}` is {:?} {} on role `{}`", frag.name, frag.shape, frag.dtype, role.name));
                continue;
            }
            self.frag_layouts
                .insert(f, FragLayout::WgmmaA { k: frag.shape[1] });
        }
        // Per-row vectors of a warpgroup role take the row layout of its 64-row tiles.
        for (f, frag) in self.k.fragments.iter() {
            let role = &self.k.roles[frag.role];
            if !self.frag_layouts.contains_key(&f)
                && role.unit == RoleUnit::Warpgroup
                && frag.shape == [64]
            {
                self.frag_layouts.insert(f, FragLayout::AccRows);
            }
        }
    }

    /// mma.sync register layouts: each MMA's accumulator and its `a` fragment (loaded by
    /// ldmatrix), per warp. Anything else in registers is a coverage gap of this generator.
    fn infer_mma_sync_layouts(&mut self) {
        for (sid, op, _) in self.ops() {
            // An ldmatrix destination holds the A-operand layout whether or not an MMA reads it.
            if let Op::Ldmatrix { dst, .. } = op {
                let f = &self.k.fragments[dst];
                let k_bytes = f.shape.get(1).copied().unwrap_or(0) * f.dtype.bytes();
                if f.shape.len() == 2
                    && f.shape[0].is_multiple_of(16)
                    && k_bytes.is_multiple_of(32)
                    && f.buffers == 1
                {
                    self.frag_layouts.insert(
                        dst,
                        FragLayout::MmaA {
                            m: f.shape[0],
                            k_bytes,
                        },
                    );
                }
                continue;
            }
            let Op::Mma { acc, a, .. } = op else { continue };
            let sp = self.k.stmts.span(sid);
            let Operand::Frag(f) = acc else {
                self.unsupported(
                    sp,
                    "mma.sync keeps its accumulator in registers: `acc` must be a fragment",
                );
                continue;
            };
            let frag = &self.k.fragments[f];
            let role = &self.k.roles[frag.role];
            let (m, n) = (
                frag.shape.first().copied().unwrap_or(0),
                frag.shape.get(1).copied().unwrap_or(0),
            );
            if role.unit != RoleUnit::Warp || frag.shape.len() != 2 || m % 16 != 0 || n % 16 != 0 {
                self.unsupported(sp, format!("an mma.sync accumulator is an (M, N) fragment of a warp role with M a multiple of 16 and N of 16; `{}` is {:?} on role `{}` ({})", frag.name, frag.shape, role.name, if role.unit == RoleUnit::Warp { "warps" } else { "warpgroups" }));
                continue;
            }
            if frag.dtype != DType::F32 {
                self.unsupported(
                    sp,
                    format!(
                        "mma.sync accumulators are lowered in f32; `{}` is {}",
                        frag.name, frag.dtype
                    ),
                );
                continue;
            }
            if frag.buffers != 1 {
                self.unsupported(
                    sp,
                    format!(
                        "double-buffered fragments (`{}`) are lowered for wgmma only",
                        frag.name
                    ),
                );
                continue;
            }
            self.frag_layouts.insert(f, FragLayout::MmaAcc { m, n });
            if let Operand::Frag(af) = a {
                let fa = &self.k.fragments[af];
                let k_bytes = fa.shape.get(1).copied().unwrap_or(0) * fa.dtype.bytes();
                if fa.shape.len() != 2
                    || !fa.shape[0].is_multiple_of(16)
                    || !k_bytes.is_multiple_of(32)
                    || fa.buffers != 1
                {
                    self.unsupported(sp, format!("an mma.sync `a` fragment is (M, K) with M a multiple of 16 and K a multiple of 32 bytes; `{}` is {:?} {}", fa.name, fa.shape, fa.dtype));
                    continue;
                }
                self.frag_layouts.insert(
                    af,
                    FragLayout::MmaA {
                        m: fa.shape[0],
                        k_bytes,
                    },
                );
            }
        }
    }

    fn tma_box(&self, view: &View, rows: Option<u32>, rank: usize) -> Vec<u32> {
        // Innermost first: one swizzle panel wide, then the view's other extents (the row range
        // when the copy fills only `.rows(...)`), then 1s for the tensor's leading dimensions the
        // view does not cover.
        if view.shape.len() == 1 {
            // A 1-D view (or a range of it) is one box row.
            let mut b = vec![rows.unwrap_or(view.shape[0])];
            b.resize(rank.max(1), 1);
            return b;
        }
        let mut b = vec![view.panel_cols()];
        let outer = view.shape.len().saturating_sub(1);
        for (axis, d) in view.shape.iter().enumerate().rev().skip(1) {
            b.push(if axis == 0 && outer > 0 {
                rows.unwrap_or(*d)
            } else {
                *d
            });
        }
        while b.len() < rank {
            b.push(1);
        }
        b
    }

    fn collect_tensor_maps(&mut self) {
        for (_, op, _) in self.ops() {
            let (v, t, multicast) = match &op {
                Op::TmaLoad {
                    dst,
                    src,
                    multicast,
                    ..
                } => (dst, *src, *multicast),
                Op::TmaStore { src, dst, .. } => (src, *dst, 1),
                _ => continue,
            };
            let view = &self.k.views[v.view];
            let rank = self.rank(t);
            let key = (
                t,
                self.tma_box(view, self.box_rows(v, multicast), rank),
                view.swizzle,
            );
            if !self.tmaps.contains(&key) {
                self.tmaps.push(key);
            }
        }
    }

    /// Rows of the box one TMA copy into `v` moves: the row range, or the view's rows, split
    /// over the CTAs a multicast load delivers to (each issues its share).
    fn box_rows(&self, v: &ViewRef, multicast: u32) -> Option<u32> {
        let rows = v.rows.map(|(_, n)| n);
        if multicast > 1 {
            let all = rows.unwrap_or(self.k.views[v.view].shape[0]);
            Some(all / multicast)
        } else {
            rows
        }
    }

    fn tmap_name(&self, p: ParamId, box_dims: &[u32], swizzle: u32) -> String {
        let i = self
            .tmaps
            .iter()
            .position(|(q, b, s)| *q == p && b == box_dims && *s == swizzle)
            .expect("collected");
        format!("tmap_{}_{}", c_ident(&self.k.params[p].name), i)
    }

    fn rank(&self, p: ParamId) -> usize {
        match &self.k.params[p].kind {
            ParamKind::Tensor { dims, .. } => dims.len(),
            ParamKind::Scalar { .. } => 0,
        }
    }

    fn args(&self) -> Vec<Arg> {
        let mut args = Vec::new();
        for (p, b, s) in &self.tmaps {
            args.push(Arg::Tensormap {
                tensor: self.k.params[*p].name.clone(),
                box_dims: b.clone(),
                swizzle: *s,
                interleave: "none".into(),
                oob_fill: "zero".into(),
                l2_promotion: 256,
            });
        }
        for (_, p) in self.k.params.iter() {
            if let ParamKind::Tensor { .. } = p.kind {
                args.push(Arg::Ptr {
                    tensor: p.name.clone(),
                });
            }
        }
        for (_, d) in self.k.dims.iter() {
            args.push(Arg::Dim {
                name: d.name.clone(),
            });
        }
        for (_, p) in self.k.params.iter() {
            if let ParamKind::Scalar { .. } = p.kind {
                args.push(Arg::Scalar {
                    name: p.name.clone(),
                });
            }
        }
        args
    }

    fn param_decl(&self, a: &Arg) -> String {
        match a {
            Arg::Tensormap {
                tensor,
                box_dims,
                swizzle,
                ..
            } => {
                let p = self
                    .k
                    .params
                    .iter()
                    .find(|(_, q)| &q.name == tensor)
                    .map(|(h, _)| h)
                    .expect("param");
                format!(
                    "const __grid_constant__ CakeTensorMap {}",
                    self.tmap_name(p, box_dims, *swizzle)
                )
            }
            Arg::Ptr { tensor } => {
                let (_, p) = self
                    .k
                    .params
                    .iter()
                    .find(|(_, q)| &q.name == tensor)
                    .expect("param");
                let ParamKind::Tensor { dtype, .. } = p.kind else {
                    unreachable!()
                };
                format!("{}* __restrict__ {}", storage_type(dtype), c_ident(tensor))
            }
            Arg::Dim { name } => format!("const int dim_{}", c_ident(name)),
            Arg::Scalar { name } => {
                let (_, p) = self
                    .k
                    .params
                    .iter()
                    .find(|(_, q)| &q.name == name)
                    .expect("param");
                let ParamKind::Scalar { dtype } = p.kind else {
                    unreachable!()
                };
                format!("const {} {}", storage_type(dtype), c_ident(name))
            }
        }
    }

    fn tile_counts(&self) -> Vec<ExprId> {
        self.k
            .loops
            .iter()
            .find_map(|(_, l)| match &l.kind {
                LoopKind::Tiles { counts, .. } => Some(counts.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }

    fn launch_meta(&self, symbol: String, args: Vec<Arg>) -> LaunchMeta {
        let mut tiles: Vec<serde_json::Value> = self
            .tile_counts()
            .iter()
            .map(|e| self.json_expr(*e))
            .collect();
        let n = self.cluster_ctas();
        if let (true, Some(first)) = (n > 1, tiles.first_mut()) {
            // A cluster takes n tiles of axis 0 together: the grid counts whole clusters.
            *first = serde_json::json!(["mul", ["cdiv", first.take(), n], n]);
        }
        let grid = if self.k.persistent {
            Grid::Persistent { tiles }
        } else {
            Grid::Tiles { tiles }
        };
        let access = self.tensor_access();
        let mut tensors = Vec::new();
        let mut scalars = Vec::new();
        for (pid, p) in self.k.params.iter() {
            match &p.kind {
                ParamKind::Tensor { dtype, dims } => {
                    let dims = dims
                        .iter()
                        .map(|d| match d {
                            Extent::Fixed(n) => serde_json::json!(n),
                            Extent::Sym(s) => serde_json::json!(self.k.dims[*s].name),
                        })
                        .collect();
                    let a = access.get(&pid).copied().unwrap_or_default();
                    let acc = match a {
                        (true, true) => "readwrite",
                        (false, true) => "write",
                        _ => "read",
                    };
                    tensors.push(TensorMeta {
                        name: p.name.clone(),
                        dtype: dtype.to_string(),
                        dims,
                        access: acc.into(),
                    });
                }
                ParamKind::Scalar { dtype } => scalars.push(ScalarMeta {
                    name: p.name.clone(),
                    dtype: dtype.to_string(),
                }),
            }
        }
        LaunchMeta {
            schema: "cake.launch/v0".into(),
            kernel: self.k.name.clone(),
            symbol,
            target: self.target.name.to_string(),
            cubin: format!("{}.cubin", self.k.name),
            block: [self.k.block_threads(), 1, 1],
            cluster: self.k.cluster,
            dynamic_smem: self.layout.total + SMEM_ALIGN_SLACK,
            grid,
            tensors,
            scalars,
            args,
        }
    }

    /// Per tensor parameter: (read, written) by the kernel.
    fn tensor_access(&self) -> HashMap<ParamId, (bool, bool)> {
        let mut access: HashMap<ParamId, (bool, bool)> = HashMap::new();
        for (_, op, _) in self.ops() {
            match op {
                Op::TmaLoad { src, .. } | Op::CpAsync { src, .. } => {
                    access.entry(src).or_default().0 = true
                }
                Op::Store { dst, .. } | Op::TmaStore { dst, .. } => {
                    access.entry(dst).or_default().1 = true
                }
                _ => {}
            }
        }
        for (_, e) in self.k.exprs.iter() {
            if let ExprKind::Load { tensor, .. } = e.kind {
                access.entry(tensor).or_default().0 = true;
            }
        }
        access
    }

    fn json_expr(&self, e: ExprId) -> serde_json::Value {
        let k = self.k;
        let bin = |op: &str, a: ExprId, b: ExprId| {
            serde_json::json!([op, self.json_expr(a), self.json_expr(b)])
        };
        match &k.exprs[e].kind {
            ExprKind::Int(v) => serde_json::json!(v),
            ExprKind::Dim(d) => serde_json::json!(k.dims[*d].name),
            ExprKind::Scalar(p) => serde_json::json!(k.params[*p].name),
            ExprKind::Binary(op, a, b) => match op {
                BinOp::Add => bin("add", *a, *b),
                BinOp::Sub => bin("sub", *a, *b),
                BinOp::Mul => bin("mul", *a, *b),
                BinOp::FloorDiv => bin("div", *a, *b),
                BinOp::Mod => bin("mod", *a, *b),
                BinOp::CeilDiv => bin("cdiv", *a, *b),
                BinOp::Min => bin("min", *a, *b),
                BinOp::Max => bin("max", *a, *b),
                _ => serde_json::Value::Null,
            },
            _ => serde_json::Value::Null,
        }
    }

    // -----------------------------------------------------------------------------------------
    // Expressions

    fn ix(&mut self, e: ExprId) -> String {
        let k = self.k;
        match &k.exprs[e].kind {
            ExprKind::Int(v) => v.to_string(),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Float(f) => format!("{f:?}f"),
            ExprKind::Dim(d) => format!("dim_{}", c_ident(&k.dims[*d].name)),
            ExprKind::Scalar(p) => c_ident(&k.params[*p].name),
            ExprKind::LoopVar(l) => format!("{}_{}", c_ident(&k.loops[*l].var_name), l.index()),
            ExprKind::TileCoord { axis, .. } => format!("tile_{axis}"),
            ExprKind::RoleIndex(r) => format!("{}_index", c_ident(&k.roles[*r].name)),
            ExprKind::PipelineStage(p) => {
                if !self.pipes.iter().any(|(_, q)| q == p) {
                    self.unsupported(
                        k.exprs.span(e),
                        format!(
                            "`{}.stage` is read outside every loop over that pipeline",
                            k.pipelines[*p].name
                        ),
                    );
                }
                format!("{}_stage", c_ident(&k.pipelines[*p].name))
            }
            ExprKind::Binary(op, a, b) => c_binary(*op, &self.ix(*a), &self.ix(*b), false),
            ExprKind::Cmp(op, a, b) => {
                let sym = op.symbol();
                format!("({} {} {})", self.ix(*a), sym, self.ix(*b))
            }
            ExprKind::Unary(UnOp::Neg, a) => format!("(-{})", self.ix(*a)),
            ExprKind::Unary(UnOp::Not, a) => format!("(!{})", self.ix(*a)),
            _ => {
                let sp = k.exprs.span(e);
                self.unsupported(sp, "this expression is not lowered as a scalar yet");
                "0".into()
            }
        }
    }

    /// The C array of a fragment (the current buffer of a double-buffered one).
    fn frag_name(&self, f: FragId) -> String {
        self.frag_alias
            .get(&f)
            .cloned()
            .unwrap_or_else(|| c_ident(&self.k.fragments[f].name))
    }

    fn float_lit(v: f64) -> String {
        if v.is_infinite() {
            if v > 0.0 {
                "__int_as_float(0x7f800000)".into()
            } else {
                "__int_as_float(0xff800000)".into()
            }
        } else {
            format!("{v:?}f")
        }
    }

    /// One element of a register expression, at `site` (loop variables i, h, j in scope).
    fn elem(&mut self, e: ExprId, site: Site) -> String {
        let k = self.k;
        if k.exprs[e].ty == Ty::Index || k.exprs[e].ty == Ty::Bool {
            return self.ix(e);
        }
        match &k.exprs[e].kind {
            ExprKind::Frag(f) => {
                let name = self.frag_name(*f);
                match (self.frag_layouts.get(f).copied(), site) {
                    (Some(FragLayout::WgmmaAcc { .. }), Site::Tile) => {
                        format!("{name}[4 * i + 2 * h + j]")
                    }
                    (Some(FragLayout::MmaAcc { n, .. }), Site::Tile) => {
                        format!("{name}[4 * (mt * {} + i) + 2 * h + j]", n / 8)
                    }
                    (Some(FragLayout::AccRows), _) => format!("{name}[h]"),
                    (Some(FragLayout::TmemRow { .. }), Site::Lane) => format!("{name}[c]"),
                    (Some(FragLayout::LaneScalar), _) => format!("{name}[0]"),
                    _ => {
                        self.unsupported(
                            k.exprs.span(e),
                            format!(
                                "fragment `{}` cannot be read per row here",
                                k.fragments[*f].name
                            ),
                        );
                        "0".into()
                    }
                }
            }
            ExprKind::Int(v) => format!("{v}"),
            ExprKind::Float(v) => Self::float_lit(*v),
            ExprKind::Bool(b) => b.to_string(),
            ExprKind::Scalar(p) => c_ident(&k.params[*p].name),
            ExprKind::Cast(d, a) => {
                let inner = self.elem(*a, site);
                match d {
                    DType::F32 => format!("static_cast<float>({inner})"),
                    DType::I32 => format!("static_cast<int32_t>({inner})"),
                    other => {
                        self.unsupported(k.exprs.span(e), format!("casting a register value to {other} is lowered only inside lm.store"));
                        inner
                    }
                }
            }
            ExprKind::Binary(op, a, b) => {
                let float = matches!(&k.exprs[e].ty, Ty::Frag { dtype, .. } | Ty::Scalar(dtype) if dtype.is_float());
                c_binary(*op, &self.elem(*a, site), &self.elem(*b, site), float)
            }
            ExprKind::Cmp(op, a, b) => {
                let sym = op.symbol();
                format!("({} {sym} {})", self.elem(*a, site), self.elem(*b, site))
            }
            ExprKind::Select(c, a, b) => format!(
                "({} ? {} : {})",
                self.elem(*c, site),
                self.elem(*a, site),
                self.elem(*b, site)
            ),
            ExprKind::Unary(op, a) => {
                let a = self.elem(*a, site);
                match op {
                    UnOp::Neg => format!("(-{a})"),
                    UnOp::Exp2 => format!("exp2f({a})"),
                    UnOp::Log2 => format!("log2f({a})"),
                    UnOp::Sqrt => format!("sqrtf({a})"),
                    UnOp::Rsqrt => format!("rsqrtf({a})"),
                    UnOp::Abs => format!("fabsf({a})"),
                    UnOp::Not => format!("(!{a})"),
                }
            }
            // A per-row value broadcast along the columns, read at the row of this site.
            ExprKind::Expand { arg, axis: 1 } if site == Site::Lane => self.elem(*arg, site),
            ExprKind::Expand { arg, axis: 1 } => self.elem(*arg, Site::Rows),
            // A per-column vector broadcast along the rows.
            ExprKind::Expand { arg, axis: 0 } => self.elem(*arg, site),
            ExprKind::Reduce { .. } => match self.reductions.get(&e) {
                Some(name) if site == Site::Lane => format!("{name}[0]"),
                Some(name) => format!("{name}[h]"),
                None => {
                    self.unsupported(k.exprs.span(e), "this reduction is not lowered here");
                    "0".into()
                }
            },
            ExprKind::Load { .. } if self.col_loads.contains_key(&e) => self.col_loads[&e].clone(),
            ExprKind::Load {
                tensor,
                coords,
                shape,
                fill,
            } if shape.len() == 1 && site == Site::Tile => {
                // A vector along the tile's columns: this thread's column of it.
                let ParamKind::Tensor { dims, .. } = k.params[*tensor].kind.clone() else {
                    return "0".into();
                };
                let last = dims.len() - 1;
                let extent = self.extent_text(&dims[last]);
                let c0 = self.ix(coords[last]);
                let offset = self.linear_offset(
                    &dims,
                    coords,
                    last,
                    &format!("({c0} + lane_col + 8 * i + j)"),
                );
                format!(
                    "(({c0} + lane_col + 8 * i + j) < {extent} ? __ldg({} + {offset}) : {})",
                    c_ident(&k.params[*tensor].name),
                    Self::float_lit(*fill)
                )
            }
            _ => {
                self.unsupported(
                    k.exprs.span(e),
                    "this register expression is not lowered yet",
                );
                "0".into()
            }
        }
    }

    fn extent_text(&self, d: &Extent) -> String {
        match d {
            Extent::Fixed(v) => v.to_string(),
            Extent::Sym(s) => format!("dim_{}", c_ident(&self.k.dims[*s].name)),
        }
    }

    /// Row-major element offset of `coords` in a tensor with `dims`, with coordinate `axis`
    /// replaced by `at`.
    fn linear_offset(
        &mut self,
        dims: &[Extent],
        coords: &[ExprId],
        axis: usize,
        at: &str,
    ) -> String {
        let mut off = String::new();
        for (i, d) in dims.iter().enumerate() {
            let c = if i == axis {
                at.to_string()
            } else {
                self.ix(coords[i])
            };
            off = if off.is_empty() {
                format!("(size_t)({c})")
            } else {
                format!("({off} * {} + ({c}))", self.extent_text(d))
            };
        }
        off
    }

    /// Compute every row reduction inside `e` into per-thread arrays (both rows of the thread),
    /// reusing results already computed in this block. Min/argmin (max/argmax) of one argument
    /// share one pass; ties keep the lowest column, as torch.argmin does.
    fn precompute_reductions(&mut self, e: ExprId) {
        let k = self.k;
        let children: Vec<ExprId> = match &k.exprs[e].kind {
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => vec![*a, *b],
            ExprKind::Select(c, a, b) => vec![*c, *a, *b],
            ExprKind::Unary(_, a) | ExprKind::Cast(_, a) | ExprKind::Expand { arg: a, .. } => {
                vec![*a]
            }
            _ => vec![],
        };
        for c in children {
            self.precompute_reductions(c);
        }
        let ExprKind::Reduce {
            op,
            axis,
            arg,
            packed,
        } = k.exprs[e].kind.clone()
        else {
            return;
        };
        if self.reductions.contains_key(&e) {
            return;
        }
        // A structurally equal reduction already computed in this block (same op, same argument).
        let twin = self
            .reduction_keys
            .iter()
            .find(|(a, o, p, _)| *a == arg && *o == op && *p == packed)
            .map(|(_, _, _, n)| n.clone());
        if let Some(name) = twin {
            self.reductions.insert(e, name);
            return;
        }
        let layout = match self.tile_of(arg) {
            Some(FragLayout::WgmmaAcc { n }) if axis == 1 => n,
            Some(FragLayout::TmemRow { n }) if axis == 1 => {
                return self.lane_reduction(e, op, arg, n, packed);
            }
            _ => {
                self.unsupported(
                    k.exprs.span(e),
                    "reductions are lowered along the columns (axis=1) of an accumulator tile",
                );
                return;
            }
        };
        let id = self.reduction_counter;
        self.reduction_counter += 1;
        let (vname, iname) = (format!("red{id}_v"), format!("red{id}_i"));
        let (better, init, combine) = match op {
            ReduceOp::Min | ReduceOp::ArgMin => ("<", "__int_as_float(0x7f800000)", "min"),
            ReduceOp::Max | ReduceOp::ArgMax => (">", "__int_as_float(0xff800000)", "max"),
            ReduceOp::Sum => ("", "0.0f", "sum"),
        };
        let mut loads = Vec::new();
        self.column_loads(arg, &mut loads);
        // A thread holds layout/4 columns of each of its rows: that many slots to pack.
        let mask = packed_slot_mask(layout / 4);
        let how = if packed {
            ", packed (value, column) keys"
        } else {
            ""
        };
        self.line(&format!(
            "float {vname}[2]; int {iname}[2];  // row {combine} over {layout} columns{how} ({})",
            self.loc(k.exprs.span(e))
        ));
        // Both rows of the thread in one pass over its columns, so each column's operands
        // (e.g. a per-column vector load) are fetched once.
        self.line(&format!(
            "float bv[2] = {{{init}, {init}}}; int bi[2] = {{0, 0}};"
        ));
        let element = if op == ReduceOp::Sum {
            "bv[h] += v;".to_string()
        } else if packed {
            // The thread's column slot 2i + j replaces the value's low mantissa bits: one
            // LOP3 and one FMNMX per element instead of FSETP and two SELs (the ALU pipe is the
            // limit of an argmin epilogue). ptxas folds a constant mask into an immediate, and
            // LOP3 takes one immediate, so the mask is a value it cannot fold (blockDim.x >> 31
            // is 0). An infinite value becomes a NaN key, which fminf/fmaxf skip, so it never
            // wins — as with the exact compare.
            self.line(&format!(
                "const int red{id}_keymask = ~{mask} | ((int)blockDim.x >> 31);"
            ));
            format!(
                "bv[h] = f{combine}f(bv[h], __int_as_float((__float_as_int(v) & red{id}_keymask) | (2 * i + j)));"
            )
        } else {
            format!("if (v {better} bv[h]) {{ bv[h] = v; bi[h] = 8 * i + j; }}")
        };
        self.reduction_columns(id, arg, layout, &loads, &element);
        // The four threads of a quad hold the same two rows: combine across them.
        self.line("#pragma unroll");
        self.line("for (int h = 0; h < 2; ++h) {");
        self.indent += 1;
        if packed {
            // Unpack: the slot gives the column, the value keeps its truncated bits.
            self.line(&format!(
                "{{ const int slot = __float_as_int(bv[h]) & {mask}; bi[h] = 8 * (slot >> 1) + (slot & 1); bv[h] = __int_as_float(__float_as_int(bv[h]) & ~{mask}); }}"
            ));
        }
        // The column offset of this thread is added once, not per element: inside the unrolled
        // loop the index stays a constant.
        if op != ReduceOp::Sum {
            self.line("bi[h] += lane_col;");
        }
        self.line("#pragma unroll");
        self.line("for (int off = 1; off < 4; off <<= 1) {");
        self.indent += 1;
        self.line("const float ov = __shfl_xor_sync(0xffffffffu, bv[h], off);");
        if op == ReduceOp::Sum {
            self.line("bv[h] += ov;");
        } else {
            self.line("const int oi = __shfl_xor_sync(0xffffffffu, bi[h], off);");
            self.line(&format!("if (ov {better} bv[h] || (ov == bv[h] && oi < bi[h])) {{ bv[h] = ov; bi[h] = oi; }}"));
        }
        self.indent -= 1;
        self.line("}");
        self.line(&format!("{vname}[h] = bv[h]; {iname}[h] = bi[h];"));
        self.indent -= 1;
        self.line("}");
        let pick = |o: ReduceOp| {
            if matches!(o, ReduceOp::ArgMin | ReduceOp::ArgMax) {
                iname.clone()
            } else {
                vname.clone()
            }
        };
        self.reductions.insert(e, pick(op));
        let siblings: &[ReduceOp] = match op {
            ReduceOp::Min | ReduceOp::ArgMin => &[ReduceOp::Min, ReduceOp::ArgMin],
            ReduceOp::Max | ReduceOp::ArgMax => &[ReduceOp::Max, ReduceOp::ArgMax],
            ReduceOp::Sum => &[ReduceOp::Sum],
        };
        for o in siblings {
            self.reduction_keys.push((arg, *o, packed, pick(*o)));
        }
    }

    /// One pass of a row reduction over the thread's columns of a `layout`-column tile, both
    /// rows at once, applying `element` to each value `v`.
    fn reduction_columns(
        &mut self,
        id: u32,
        arg: ExprId,
        layout: u32,
        loads: &[ExprId],
        element: &str,
    ) {
        self.line("#pragma unroll");
        self.line(&format!("for (int i = 0; i < {}; ++i) {{", layout / 8));
        self.indent += 1;
        self.line("#pragma unroll");
        self.line("for (int j = 0; j < 2; ++j) {");
        self.indent += 1;
        // Per-column operands do not depend on the row: load each once for both rows.
        for (n, l) in loads.iter().enumerate() {
            let code = match self.prefetched.get(l) {
                Some(array) => format!("{array}[i][j]"),
                None => self.elem(*l, Site::Tile),
            };
            let name = format!("col{id}_{n}");
            self.line(&format!("const float {name} = {code};"));
            self.col_loads.insert(*l, name);
        }
        let value = self.elem(arg, Site::Tile);
        self.col_loads.clear();
        self.line("#pragma unroll");
        self.line("for (int h = 0; h < 2; ++h) {");
        self.indent += 1;
        self.line(&format!("const float v = {value};"));
        self.line(element);
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
    }

    /// Issue the per-column vector loads of this loop body's row reductions at the top of the
    /// iteration, into registers, so their latency overlaps the barrier wait and the MMA: the
    /// wgmma wait before the reduction is an asm barrier that nothing moves across, so loads
    /// written after it would wait out their whole latency there. Only loads of tensors the
    /// kernel never writes, in the current role's statements. Returns the previous prefetches
    /// (restored after the body: the arrays live in its scope).
    fn prefetch_column_loads(&mut self, body: &Block) -> HashMap<ExprId, String> {
        let saved = self.prefetched.clone();
        if !self.in_role_region() || self.mma_sync() {
            return saved;
        }
        let k = self.k;
        let access = self.tensor_access();
        let written = |t: &ParamId| access.get(t).is_some_and(|a| a.1);
        let mut reductions = Vec::new();
        for &s in body {
            if let Stmt::Op(
                Op::Assign { value, .. } | Op::Store { value, .. } | Op::SmemStore { value, .. },
            ) = &k.stmts[s]
            {
                reductions_in(k, *value, &mut reductions);
            }
        }
        for r in reductions {
            let ExprKind::Reduce { arg, axis: 1, .. } = k.exprs[r].kind else {
                continue;
            };
            let Some(FragLayout::WgmmaAcc { n }) = self.tile_of(arg) else {
                continue;
            };
            let mut loads = Vec::new();
            self.column_loads(arg, &mut loads);
            for l in loads {
                let ExprKind::Load { tensor, .. } = k.exprs[l].kind else {
                    continue;
                };
                if written(&tensor) || self.prefetched.contains_key(&l) {
                    continue;
                }
                let array = format!("pre{}", self.reduction_counter);
                self.reduction_counter += 1;
                self.line(&format!(
                    "float {array}[{}][2];  // lm.load({}) for this iteration's row reductions, issued early ({})",
                    n / 8,
                    k.params[tensor].name,
                    self.loc(k.exprs.span(l))
                ));
                self.line("#pragma unroll");
                self.line(&format!("for (int i = 0; i < {}; ++i) {{", n / 8));
                self.indent += 1;
                self.line("#pragma unroll");
                let code = self.elem(l, Site::Tile);
                self.line(&format!(
                    "for (int j = 0; j < 2; ++j) {array}[i][j] = {code};"
                ));
                self.indent -= 1;
                self.line("}");
                self.prefetched.insert(l, array);
            }
        }
        saved
    }

    /// Per-column vector loads (`lm.load` of shape (N,)) inside `e`.
    fn column_loads(&self, e: ExprId, out: &mut Vec<ExprId>) {
        match &self.k.exprs[e].kind {
            ExprKind::Load { shape, .. } if shape.len() == 1 && !out.contains(&e) => out.push(e),
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                self.column_loads(*a, out);
                self.column_loads(*b, out);
            }
            ExprKind::Select(c, a, b) => {
                self.column_loads(*c, out);
                self.column_loads(*a, out);
                self.column_loads(*b, out);
            }
            ExprKind::Unary(_, a) | ExprKind::Cast(_, a) => self.column_loads(*a, out),
            ExprKind::Expand { arg, axis: 0 } => self.column_loads(*arg, out),
            _ => {}
        }
    }

    /// The tile layout an element-wise expression is computed over.
    fn tile_of(&self, e: ExprId) -> Option<FragLayout> {
        match &self.k.exprs[e].kind {
            ExprKind::Frag(f) => self.frag_layouts.get(f).copied(),
            ExprKind::Cast(_, a) | ExprKind::Unary(_, a) => self.tile_of(*a),
            ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
                let (x, y) = (self.tile_of(*a), self.tile_of(*b));
                match (x, y) {
                    (Some(l), _) | (_, Some(l)) if l.is_accumulator() => Some(l),
                    (Some(l), _) | (_, Some(l)) => Some(l),
                    _ => None,
                }
            }
            ExprKind::Select(c, a, b) => self
                .tile_of(*a)
                .or_else(|| self.tile_of(*b))
                .or_else(|| self.tile_of(*c)),
            ExprKind::Reduce { .. } => Some(FragLayout::AccRows),
            ExprKind::Expand { arg, .. } => self.tile_of(*arg),
            _ => None,
        }
    }

    /// Forget cached reductions that read `f` (it is about to change) — or all of them.
    fn invalidate_reductions(&mut self, f: Option<FragId>) {
        let k = self.k;
        match f {
            None => {
                self.reductions.clear();
                self.reduction_keys.clear();
            }
            Some(f) => {
                self.reductions.retain(|e, _| !k.expr_reads_fragment(*e, f));
                self.reduction_keys
                    .retain(|(a, _, _, _)| !k.expr_reads_fragment(*a, f));
            }
        }
    }

    // -----------------------------------------------------------------------------------------
    // Kernel body

    fn kernel_body(&mut self) -> String {
        let saved = std::mem::take(&mut self.out);
        self.indent = 1;
        let k = self.k;
        self.line("// Dynamic shared memory, rounded up to 1024 B: swizzled views repeat every 8 rows of 128 B.");
        self.line("extern __shared__ __align__(16) uint8_t cake_smem_raw[];");
        self.line("const uint32_t cake_smem = (cake_smem_addr(cake_smem_raw) + 1023u) & ~1023u;");
        for p in self.layout.views.clone() {
            let v = &k.views[p.view];
            let line = format!(
                "const uint32_t {} = cake_smem + {};  // view {}: {} x {:?}, {} stage(s) of {} B, swizzle {}",
                c_ident(&v.name),
                p.offset,
                v.name,
                v.dtype,
                v.shape,
                v.stages,
                p.stage_stride,
                v.swizzle
            );
            self.line(&line);
        }
        for p in self.layout.barriers.clone() {
            let b = &k.barriers[p.barrier];
            let count = self.facts[p.barrier.index()].arrival_count().max(1);
            let line = format!(
                "const uint32_t {} = cake_smem + {};  // mbarrier {}: {} slot(s), {} arrival(s) per phase",
                c_ident(&b.name),
                p.offset,
                b.name,
                p.slots,
                count
            );
            self.line(&line);
        }
        self.line("const int warp = __shfl_sync(0xffffffffu, (int)threadIdx.x / 32, 0);");
        let counts = self.tile_counts();
        for (i, c) in counts.iter().enumerate() {
            let text = format!("const int tiles_{i} = {};", self.ix(*c));
            self.line(&text);
        }
        let n = self.cluster_ctas();
        if n > 1 && !counts.is_empty() {
            // The CTAs of a cluster take `n` neighbouring tiles of axis 0 together.
            self.line(&format!(
                "const int cluster_rows = cake_cdiv(tiles_0, {n});  // tiles of axis 0, in clusters"
            ));
        }
        let total = if counts.is_empty() {
            "1".to_string()
        } else {
            (0..counts.len())
                .map(|i| self.tile_rows(i))
                .collect::<Vec<_>>()
                .join(" * ")
        };
        self.line(&format!("const int tiles_total = {total};"));
        self.tmem_alloc_prologue();
        if !self.layout.barriers.is_empty() {
            self.line("if (threadIdx.x == 0) {");
            self.indent += 1;
            for p in self.layout.barriers.clone() {
                let b = &k.barriers[p.barrier];
                let count = self.facts[p.barrier.index()].arrival_count().max(1);
                let line = format!(
                    "for (int s = 0; s < {}; ++s) cake_mbar_init({} + 8 * s, {count});",
                    p.slots,
                    c_ident(&b.name)
                );
                self.line(&line);
            }
            if self.target.has(Feature::Clusters) {
                // Visible to the async proxy and the cluster; without clusters (sm_80, sm_89)
                // the __syncthreads below is the whole publication.
                self.line("cake_fence_barrier_init();");
            }
            self.indent -= 1;
            self.line("}");
        }
        if self.clustered() {
            // Peers multicast into this CTA's shared memory and arrive on its barriers: not
            // before every CTA of the cluster has initialised them.
            self.line("cake_cluster_sync();");
            self.line("const uint32_t cta_rank = cake_cluster_ctarank();");
            self.line("(void)cta_rank;");
        } else if !self.layout.barriers.is_empty() || self.layout.tmem_slot.is_some() {
            self.line("__syncthreads();");
        }
        self.tmem_base_after_sync();
        let threads = k.block_threads();
        let default_regs = ((65536 / threads.max(1)) / 8 * 8).min(255);
        for (rid, role) in k.roles.iter() {
            let warps = role.warps();
            let (first, last) = (
                *warps.iter().min().unwrap_or(&0),
                *warps.iter().max().unwrap_or(&0) + 1,
            );
            if (last - first) as usize != warps.len() {
                let sp = k.roles.span(rid);
                self.unsupported(sp, "roles with non-contiguous warps are not lowered yet");
                continue;
            }
            let issue_only = is_issue_only(k, rid);
            let name = c_ident(&role.name);
            let header = format!(
                "if (warp >= {first} && warp < {last}) {{  // role {} ({})",
                role.name,
                self.loc(k.roles.span(rid))
            );
            self.line(&header);
            self.indent += 1;
            if let Some(r) = role.regs {
                if r < default_regs {
                    self.line(&format!("cake_setmaxnreg_dec<{r}>();"));
                } else if r > default_regs {
                    self.line(&format!("cake_setmaxnreg_inc<{r}>();"));
                }
            }
            let unit_warps = role.unit.warps();
            self.line(&format!(
                "const int {name}_index = (warp - {first}) / {unit_warps};"
            ));
            self.line(&format!(
                "const int {name}_thread = (int)threadIdx.x - {} - {name}_index * {};",
                first * 32,
                unit_warps * 32
            ));
            if role.unit == RoleUnit::Warpgroup {
                // Where this thread's accumulator registers sit in a 64-row tile.
                self.line(&format!("const int lane_row = 16 * ({name}_thread / 32) + ({name}_thread % 32) / 4;  // and +8"));
                self.line(&format!(
                    "const int lane_col = 2 * ({name}_thread % 4);  // and +1, every 8 columns"
                ));
                self.line("(void)lane_row; (void)lane_col;");
            } else if self.mma_sync() {
                // Where this thread's mma.sync accumulator registers sit in each m16n8 tile.
                self.line("const int lane = (int)threadIdx.x % 32;");
                self.line("const int lane_row = lane / 4;  // and +8, every 16 rows");
                self.line("const int lane_col = 2 * (lane % 4);  // and +1, every 8 columns");
                self.line("(void)lane; (void)lane_row; (void)lane_col;");
            }
            for (fid, f) in k.fragments.iter() {
                if f.role == rid {
                    let n: u32 = match self.frag_layouts.get(&fid) {
                        Some(FragLayout::MmaA { .. } | FragLayout::WgmmaA { .. }) => {
                            let l = self.frag_layouts[&fid];
                            let what = if matches!(l, FragLayout::WgmmaA { .. }) {
                                "wgmma A registers"
                            } else {
                                "mma.sync A registers"
                            };
                            self.line(&format!(
                                "uint32_t {}[{}];  // fragment {} {:?} {}: {what}, {} per register",
                                c_ident(&f.name),
                                l.registers(),
                                f.name,
                                f.shape,
                                f.dtype,
                                4 / f.dtype.bytes()
                            ));
                            continue;
                        }
                        Some(l) => l.registers(),
                        None => {
                            let sp = k.fragments.span(fid);
                            self.unsupported(sp, format!("fragment `{}` is not an MMA accumulator; other register layouts are not lowered yet", f.name));
                            continue;
                        }
                    };
                    if f.buffers == 2 {
                        let name = c_ident(&f.name);
                        self.line(&format!(
                            "{} {name}_b0[{n}], {name}_b1[{n}];  // fragment {} {:?} {}, double-buffered",
                            storage_type(f.dtype),
                            f.name,
                            f.shape,
                            f.dtype
                        ));
                        continue;
                    }
                    self.line(&format!(
                        "{} {}[{n}];  // fragment {} {:?} {}",
                        storage_type(f.dtype),
                        c_ident(&f.name),
                        f.name,
                        f.shape,
                        f.dtype
                    ));
                }
            }
            for (pid, p) in k.pipelines.iter() {
                let _ = pid;
                self.line(&format!(
                    "uint32_t {}_it = 0;  // iterations of pipeline {} completed by this role",
                    c_ident(&p.name),
                    p.name
                ));
            }
            for (bid, b) in k.barriers.iter() {
                if b.pipeline.is_none()
                    && self.facts[bid.index()].waits.iter().any(|(_, r)| *r == rid)
                {
                    self.line(&format!("uint32_t {}_waits = 0;", c_ident(&b.name)));
                }
            }
            if issue_only {
                self.line(&format!(
                    "if ({name}_thread == 0) {{  // issue-only role: one thread per replica"
                ));
                self.indent += 1;
            }
            self.role = Some((rid, issue_only));
            let body = k.body.clone();
            self.block(&body);
            self.role = None;
            if self.role_syncs_replicas(rid) {
                // Shared memory must outlive the bulk stores still reading it.
                self.line(&format!("if ({name}_thread == 0) cake_bulk_wait();"));
            }
            if issue_only {
                self.indent -= 1;
                self.line("}");
            }
            self.indent -= 1;
            self.line("}");
        }
        self.tmem_dealloc_epilogue();
        if self.clustered() {
            self.line("// No CTA leaves while a peer may still arrive on its barriers or write its shared memory.");
            self.line("cake_cluster_sync();");
        }
        std::mem::replace(&mut self.out, saved)
    }

    /// Whether `block` holds anything the current role runs.
    fn has_role_work(&self, block: &Block, inside: bool) -> bool {
        let (role, _) = self.role.expect("emitting a role");
        block.iter().any(|&s| match &self.k.stmts[s] {
            Stmt::Role { role: r, body } => *r == role && !body.is_empty(),
            Stmt::Loop { body, .. } => self.has_role_work(body, inside),
            Stmt::If {
                then_body,
                else_body,
                ..
            } => self.has_role_work(then_body, inside) || self.has_role_work(else_body, inside),
            Stmt::Op(_) => inside,
        })
    }

    fn block(&mut self, block: &Block) {
        for &s in block {
            self.stmt(s);
        }
    }

    fn in_role_region(&self) -> bool {
        // Ops are emitted only inside the current role's `with` region; `stmt` tracks entry.
        self.indent_role_depth > 0
    }

    fn stmt(&mut self, s: StmtId) {
        let k = self.k;
        let sp = k.stmts.span(s);
        // Cached reductions live in the C scope of the block that computed them.
        if !matches!(k.stmts[s], Stmt::Op(_)) {
            self.invalidate_reductions(None);
        }
        match &k.stmts[s] {
            Stmt::Role { role, body } => {
                if Some(*role) == self.role.map(|r| r.0) {
                    self.line(&format!(
                        "// with {}: ({})",
                        k.roles[*role].name,
                        self.loc(sp)
                    ));
                    self.indent_role_depth += 1;
                    self.block(body);
                    self.indent_role_depth -= 1;
                }
            }
            Stmt::Loop { id, body } => {
                let inside = self.in_role_region();
                if !self.has_role_work(body, inside) {
                    return;
                }
                match k.loops[*id].kind.clone() {
                    LoopKind::Tiles {
                        counts,
                        names,
                        group,
                    } => self.tile_loop(&counts, &names, group, body, sp),
                    LoopKind::Range {
                        start,
                        stop,
                        pipeline,
                    } => self.range_loop(*id, start, stop, pipeline, body, sp),
                }
            }
            Stmt::If {
                cond,
                then_body,
                else_body,
            } => {
                let inside = self.in_role_region();
                if !self.has_role_work(then_body, inside) && !self.has_role_work(else_body, inside)
                {
                    return;
                }
                let c = self.ix(*cond);
                self.line(&format!("if ({c}) {{  // {}", self.loc(sp)));
                self.indent += 1;
                self.block(then_body);
                self.indent -= 1;
                if !else_body.is_empty() {
                    self.line("} else {");
                    self.indent += 1;
                    self.block(else_body);
                    self.indent -= 1;
                }
                self.line("}");
            }
            Stmt::Op(op) => {
                if self.in_role_region() {
                    self.op(op, sp);
                }
            }
        }
    }

    fn tile_loop(
        &mut self,
        counts: &[ExprId],
        names: &[String],
        group: Option<u32>,
        body: &Block,
        sp: Span,
    ) {
        let names_text = names.join(", ");
        // With a cluster of n CTAs, `tile` counts cluster tiles: n neighbouring tiles of axis 0,
        // one per CTA, so every CTA of a cluster runs the same iterations and the tiles of a
        // cluster differ in axis 0 only.
        let n = self.cluster_ctas();
        let (first, per_cluster) = if n > 1 {
            (format!("blockIdx.x / {n}"), format!(", {n} per cluster"))
        } else {
            ("blockIdx.x".to_string(), String::new())
        };
        let (step, what) = if self.k.persistent {
            let grid = if n > 1 {
                format!("gridDim.x / {n}")
            } else {
                "gridDim.x".into()
            };
            (grid, format!("tiles ({names_text}){per_cluster}"))
        } else {
            (
                "tiles_total".to_string(),
                format!("one tile ({names_text}) per CTA{per_cluster}"),
            )
        };
        self.line(&format!(
            "for (int tile = {first}; tile < tiles_total; tile += {step}) {{  // {what} ({})",
            self.loc(sp)
        ));
        self.indent += 1;
        let rows0 = self.tile_rows(0);
        // Axis 0 is decoded into `tile_row` when the CTA's rank within the cluster completes it.
        let axis0 = if n > 1 { "tile_row" } else { "tile_0" };
        match group {
            Some(g) if counts.len() == 2 => {
                // Groups of `g` rows of axis 0, walked column by column, so the CTAs in flight
                // share A and B tiles in L2.
                let g = if n > 1 { g.div_ceil(n) } else { g };
                self.line(&format!("const int group_tiles = {g} * tiles_1;"));
                self.line(&format!(
                    "const int group_first = (tile / group_tiles) * {g};"
                ));
                self.line(&format!(
                    "const int group_rows = min({rows0} - group_first, {g});"
                ));
                self.line(&format!(
                    "const int {axis0} = group_first + (tile % group_tiles) % group_rows;"
                ));
                self.line("const int tile_1 = (tile % group_tiles) / group_rows;");
            }
            _ => {
                // Row-major over the tile axes: the last axis varies fastest.
                self.line("int tile_rest = tile;");
                for axis in (0..counts.len()).rev() {
                    let rows = self.tile_rows(axis);
                    let var = if axis == 0 {
                        axis0.to_string()
                    } else {
                        format!("tile_{axis}")
                    };
                    self.line(&format!("const int {var} = tile_rest % {rows};"));
                    self.line(&format!("tile_rest /= {rows};"));
                }
                self.line("(void)tile_rest;");
            }
        }
        if n > 1 {
            self.line(&format!(
                "const int tile_0 = tile_row * {n} + (int)cta_rank;  // may pass tiles_0: loads fill zeros, stores clip"
            ));
        }
        self.block(body);
        self.indent -= 1;
        self.line("}");
    }

    fn range_loop(
        &mut self,
        id: LoopId,
        start: ExprId,
        stop: ExprId,
        pipeline: Option<PipelineId>,
        body: &Block,
        sp: Span,
    ) {
        let var = format!("{}_{}", c_ident(&self.k.loops[id].var_name), id.index());
        let (a, b) = (self.ix(start), self.ix(stop));
        if let Some(p) = pipeline.filter(|_| !self.mma_sync()) {
            if let Some((wait, mma)) = cake_ir::sync::double_buffered_mma(self.k, body, p) {
                return self.double_buffered_loop(id, &var, (a, b), p, (wait, mma), body, sp);
            }
        }
        // A release after wgmma lags one iteration so one MMA group stays in flight. mma.sync is
        // synchronous, and tcgen05.commit releases a stage when its MMAs complete: neither is
        // deferred.
        let deferred: Vec<(BarrierId, PipelineId)> =
            match pipeline.filter(|_| !self.mma_sync() && !self.is_tcgen05()) {
                Some(p) => body
                    .iter()
                    .filter_map(|&s| match &self.k.stmts[s] {
                        Stmt::Op(Op::Mma {
                            release: Some(b), ..
                        }) if self.k.barriers[*b].pipeline == Some(p)
                            && cake_ir::sync::defers_release(self.k, body, s) =>
                        {
                            Some((*b, p))
                        }
                        _ => None,
                    })
                    .collect(),
                None => Vec::new(),
            };
        let has_mma = !self.mma_sync()
            && !self.is_tcgen05()
            && body
                .iter()
                .any(|&s| matches!(&self.k.stmts[s], Stmt::Op(Op::Mma { .. })));
        for (bar, _) in &deferred {
            self.line(&format!(
                "int {}_pending = -1;  // stage whose release waits for its MMAs to retire",
                c_ident(&self.k.barriers[*bar].name)
            ));
        }
        self.line(&format!(
            "for (int {var} = {a}; {var} < {b}; ++{var}) {{  // {}",
            self.loc(sp)
        ));
        self.indent += 1;
        if let Some(p) = pipeline {
            let pipe = &self.k.pipelines[p];
            let pn = c_ident(&pipe.name);
            self.line(&format!(
                "const uint32_t {pn}_stage = {pn}_it % {};",
                pipe.stages
            ));
            self.line(&format!(
                "const uint32_t {pn}_phase = ({pn}_it / {}) & 1;",
                pipe.stages
            ));
            self.pipes.push((id, p));
        }
        let saved = std::mem::replace(&mut self.deferred_release, deferred.clone());
        let saved_prefetch = self.prefetch_column_loads(body);
        self.block(body);
        self.prefetched = saved_prefetch;
        self.deferred_release = saved;
        if let Some(p) = pipeline {
            self.pipes.pop();
            self.line(&format!("++{}_it;", c_ident(&self.k.pipelines[p].name)));
        }
        self.indent -= 1;
        self.line("}");
        if has_mma {
            self.line("cake_wgmma_wait<0>();  // every MMA of the loop has retired");
            self.mma_in_flight.clear();
        }
        for (bar, _) in &deferred {
            let bn = c_ident(&self.k.barriers[*bar].name);
            let pending = format!("{bn}_pending >= 0");
            let arrive =
                self.wgmma_release(*bar, &format!("{bn} + 8 * {bn}_pending"), Some(&pending));
            self.line(&arrive);
        }
    }

    /// A pipelined loop whose MMA writes a double-buffered accumulator: iteration k+1's wait and
    /// MMA are issued before the rest of iteration k, which reads the other buffer, so the tensor
    /// cores work through the epilogue. Unrolled by two so each buffer is a fixed register array.
    #[allow(clippy::too_many_arguments)]
    fn double_buffered_loop(
        &mut self,
        id: LoopId,
        var: &str,
        (start, stop): (String, String),
        p: PipelineId,
        (wait, mma): (StmtId, StmtId),
        body: &Block,
        sp: Span,
    ) {
        let k = self.k;
        let Stmt::Op(Op::Mma {
            acc: Operand::Frag(f),
            a,
            b,
            accumulate,
            release,
        }) = k.stmts[mma].clone()
        else {
            return;
        };
        let Stmt::Op(wait_op) = k.stmts[wait].clone() else {
            return;
        };
        let pipe = &k.pipelines[p];
        let (pn, stages) = (c_ident(&pipe.name), pipe.stages);
        let fname = c_ident(&k.fragments[f].name);
        let (wsp, msp) = (k.stmts.span(wait), k.stmts.span(mma));
        let stage_lines = |me: &mut Self, it: &str| {
            me.line(&format!("const uint32_t {pn}_stage = ({it}) % {stages};"));
            me.line(&format!(
                "const uint32_t {pn}_phase = (({it}) / {stages}) & 1;"
            ));
        };
        // Issue one iteration's wait and MMA (into `buf`), for pipeline iteration `it`.
        let issue = |me: &mut Self, it: &str, buf: &str| {
            stage_lines(me, it);
            me.op(&wait_op, wsp);
            me.frag_alias.insert(f, buf.to_string());
            me.mma(&Operand::Frag(f), &a, &b, accumulate, None, msp);
            me.frag_alias.remove(&f);
        };
        self.line(&format!("{{  // {} ({}): double-buffered `{}` — the MMA of iteration k+1 overlaps the rest of iteration k", var, self.loc(sp), k.fragments[f].name));
        self.indent += 1;
        self.line(&format!("const int {var}_end = {stop};"));
        self.pipes.push((id, p));
        self.line(&format!(
            "if ({start} < {var}_end) {{  // first iteration's MMA"
        ));
        self.indent += 1;
        issue(self, &format!("{pn}_it"), &format!("{fname}_b0"));
        self.line("cake_wgmma_wait<0>();");
        self.indent -= 1;
        self.line("}");
        self.line(&format!(
            "for (int {var}_pair = {start}; {var}_pair < {var}_end; {var}_pair += 2) {{"
        ));
        self.indent += 1;
        for (half, (cur, nxt)) in [("b0", "b1"), ("b1", "b0")].into_iter().enumerate() {
            if half == 1 {
                self.line(&format!("if ({var}_pair + 1 < {var}_end) {{"));
                self.indent += 1;
            } else {
                self.line("{");
                self.indent += 1;
            }
            self.line(&format!("const int {var} = {var}_pair + {half};"));
            stage_lines(self, &format!("{pn}_it"));
            // This iteration's MMA retired before the iteration began; the next one is issued
            // now and runs while the rest of this iteration reads `cur`.
            self.line(&format!("if ({var} + 1 < {var}_end) {{"));
            self.indent += 1;
            issue(self, &format!("{pn}_it + 1"), &format!("{fname}_{nxt}"));
            self.indent -= 1;
            self.line("}");
            self.line(&format!("cake_wgmma_fence_regs({fname}_{cur});"));
            if let Some(bar) = release {
                let slot = self.barrier_slot(bar);
                let arrive = self.wgmma_release(bar, &slot, None);
                self.line(&format!("{arrive}  // release ({})", self.loc(msp)));
            }
            self.frag_alias.insert(f, format!("{fname}_{cur}"));
            self.invalidate_reductions(None);
            for &s in &body[2..] {
                self.stmt(s);
            }
            self.invalidate_reductions(None);
            self.frag_alias.remove(&f);
            // Nothing stays in flight across the loop's back edge: ptxas cannot follow a
            // wgmma group through it and would serialise every MMA (C7514).
            self.line("cake_wgmma_wait<0>();");
            self.line(&format!("++{pn}_it;"));
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
        self.pipes.pop();
        self.indent -= 1;
        self.line("}");
    }

    /// CTAs per cluster when the kernel runs in clusters (1 otherwise).
    fn cluster_ctas(&self) -> u32 {
        if self.target.has(Feature::Clusters) {
            self.k.cluster_size()
        } else {
            1
        }
    }

    fn clustered(&self) -> bool {
        self.cluster_ctas() > 1
    }

    /// The number of tiles the tile loop walks along `axis`: clusters of tiles on axis 0.
    fn tile_rows(&self, axis: usize) -> String {
        if axis == 0 && self.clustered() {
            "cluster_rows".into()
        } else {
            format!("tiles_{axis}")
        }
    }

    /// The statement that arrives on barrier `b` at `slot` from the current role. Arrivals on a
    /// cluster barrier reach every CTA (`cake_ir::sync` counts them): an issuing thread arrives
    /// in each one; a warp converges, which orders every lane's accesses before the arrivals,
    /// and lane c arrives in CTA c.
    fn arrive(&self, b: BarrierId, slot: &str) -> String {
        if !self.k.barriers[b].cluster || !self.clustered() {
            return format!("cake_mbar_arrive({slot});");
        }
        let n = self.cluster_ctas();
        match self.role {
            Some((_, true)) => format!(
                "for (uint32_t cta = 0; cta < {n}; ++cta) cake_mbar_arrive_cluster({slot}, cta);"
            ),
            _ => format!(
                "{{ __syncwarp(); if (threadIdx.x % 32 < {n}) cake_mbar_arrive_cluster({slot}, threadIdx.x % 32); }}"
            ),
        }
    }

    /// The statement that releases barrier `b` at `slot` once the current role's wgmma groups
    /// have retired: one thread per warpgroup (a group completes for the whole warpgroup), thread
    /// c of each warpgroup in CTA c for a cluster barrier (`cake_ir::sync` counts them).
    /// `when` is a further condition (a deferred release has a stage pending).
    fn wgmma_release(&self, b: BarrierId, slot: &str, when: Option<&str>) -> String {
        let (role, _) = self.role.expect("inside a role");
        let t = format!("{}_thread", c_ident(&self.k.roles[role].name));
        let when = when.map(|w| format!("{w} && ")).unwrap_or_default();
        if self.k.barriers[b].cluster && self.clustered() {
            let n = self.cluster_ctas();
            format!("if ({when}{t} < {n}) cake_mbar_release_cluster({slot}, {t});")
        } else {
            format!("if ({when}{t} == 0) cake_mbar_arrive({slot});")
        }
    }

    /// Address of the barrier slot for the current iteration.
    fn barrier_slot(&self, b: BarrierId) -> String {
        let bar = &self.k.barriers[b];
        let name = c_ident(&bar.name);
        match bar.pipeline {
            Some(p) => {
                if self.pipes.iter().any(|(_, q)| *q == p) {
                    format!("{name} + 8 * {}_stage", c_ident(&self.k.pipelines[p].name))
                } else {
                    name
                }
            }
            None => name,
        }
    }

    fn view_stage(&mut self, v: &ViewRef) -> String {
        let view = &self.k.views[v.view];
        if let Some(st) = v.stage {
            return self.ix(st);
        }
        if view.stages <= 1 {
            return "0".into();
        }
        match self.pipes.last() {
            Some((_, p)) => format!("{}_stage", c_ident(&self.k.pipelines[*p].name)),
            None => "0".into(),
        }
    }

    fn view_base(&mut self, v: &ViewRef) -> String {
        let view = &self.k.views[v.view];
        let stride = self.layout.view(v.view).stage_stride;
        let stage = self.view_stage(v);
        let name = c_ident(&view.name);
        if stage == "0" {
            name
        } else {
            format!("({name} + {stride} * {stage})")
        }
    }

    fn op(&mut self, op: &Op, sp: Span) {
        let k = self.k;
        self.retire_mmas_before(op);
        let (role, issue_only) = self.role.expect("inside a role");
        let rname = c_ident(&k.roles[role].name);
        match op {
            Op::Wait { barrier } => {
                let facts = &self.facts[barrier.index()];
                let flip = if facts.starts_free() { " ^ 1" } else { "" };
                let bar = &k.barriers[*barrier];
                let slot = self.barrier_slot(*barrier);
                let parity = match bar.pipeline {
                    Some(p) if self.pipes.iter().any(|(_, q)| *q == p) => {
                        format!("{}_phase{flip}", c_ident(&k.pipelines[p].name))
                    }
                    _ => {
                        let n = c_ident(&bar.name);
                        format!("({n}_waits++ & 1){flip}")
                    }
                };
                self.line(&format!(
                    "cake_mbar_wait({slot}, {parity});  // wait {} ({})",
                    bar.name,
                    self.loc(sp)
                ));
                if self.is_tcgen05() && self.role_uses_tcgen05(role) {
                    self.line("cake_tcgen05_fence_after();");
                }
            }
            Op::Arrive { barrier } => {
                let slot = self.barrier_slot(*barrier);
                if self.is_tcgen05() && self.role_uses_tcgen05(role) {
                    self.line("cake_tcgen05_fence_before();");
                }
                let arrive = self.arrive(*barrier, &slot);
                self.line(&format!(
                    "{arrive}  // arrive {} ({})",
                    k.barriers[*barrier].name,
                    self.loc(sp)
                ));
            }
            Op::TmaLoad {
                dst,
                src,
                coords,
                barrier,
                multicast,
            } => {
                let mc = *multicast;
                // `CAKE-C013` reports these; a verified schedule never gets here.
                if mc > 1 && (mc != self.cluster_ctas() || k.multicast_problem(dst, mc).is_some()) {
                    self.unsupported(
                        sp,
                        "a multicast TMA load is lowered into a whole 2-D view whose rows split \
                         evenly over a cluster of exactly `multicast` CTAs",
                    );
                    return;
                }
                if dst.transposed || (dst.rows.is_some() && k.views[dst.view].shape.len() != 2) {
                    self.unsupported(
                        sp,
                        "a TMA load writes a 2-D view or a row range of one (no .T)",
                    );
                    return;
                }
                let view = k.views[dst.view].clone();
                let rank = self.rank(*src);
                if !(2..=3).contains(&rank) {
                    self.unsupported(
                        sp,
                        "TMA loads of rank other than 2 or 3 are not lowered yet",
                    );
                    return;
                }
                let box_rows = self.box_rows(dst, mc);
                let box_dims = self.tma_box(&view, box_rows, rank);
                let tmap = self.tmap_name(*src, &box_dims, view.swizzle);
                let slot = self.barrier_slot(*barrier);
                let mut dst_base = self.view_base(dst);
                if let Some((start, _)) = dst.rows {
                    // A row range of a panel-major view starts `start` rows into every panel.
                    let row_bytes = view.panel_cols() * view.dtype.bytes();
                    dst_base = format!("({dst_base} + ({}) * {row_bytes})", self.ix(start));
                }
                let mut c: Vec<String> = coords.iter().map(|e| self.ix(*e)).collect();
                c.reverse(); // innermost first
                let guard = !issue_only;
                self.line(&format!(
                    "// tma_load {} <- {} ({})",
                    view.name,
                    k.params[*src].name,
                    self.loc(sp)
                ));
                if guard {
                    self.line(&format!("if ({rname}_thread == 0) {{"));
                    self.indent += 1;
                }
                // One expect_tx per phase covers every load of this role signalling the barrier.
                let first_to_barrier = self.first_tma_to(*barrier, role, sp);
                if first_to_barrier {
                    let bytes = self.role_tx_bytes(*barrier, role);
                    self.line(&format!("cake_mbar_arrive_expect_tx({slot}, {bytes});"));
                }
                // Bytes of one swizzle panel (the whole view when it has one panel).
                let panel_bytes = view.shape[..view.shape.len() - 1]
                    .iter()
                    .map(|&d| d as u64)
                    .product::<u64>()
                    * view.panel_cols() as u64
                    * view.dtype.bytes() as u64;
                if mc > 1 {
                    // This CTA loads its share of the rows and delivers it to every CTA.
                    let share = box_rows.unwrap_or(0);
                    let row_bytes = view.panel_cols() * view.dtype.bytes();
                    self.line(&format!(
                        "// multicast to {mc} CTAs: this one loads rows [{share} * cta_rank, +{share}) of the box"
                    ));
                    dst_base = format!("{dst_base} + cta_rank * {}", share * row_bytes);
                    c[1] = format!("{} + (int)cta_rank * {share}", c[1]);
                }
                let mask = (1u32 << mc) - 1;
                for p in 0..view.panels() {
                    let mut cc = c.clone();
                    if p > 0 {
                        cc[0] = format!("{} + {}", c[0], p * view.panel_cols());
                    }
                    let dst_addr = if p == 0 {
                        dst_base.clone()
                    } else {
                        format!("{dst_base} + {}", p as u64 * panel_bytes)
                    };
                    if mc > 1 {
                        self.line(&format!(
                            "cake_tma_load_{rank}d_multicast({dst_addr}, &{tmap}, {slot}, {mask:#x}, {});",
                            cc.join(", ")
                        ));
                    } else {
                        self.line(&format!(
                            "cake_tma_load_{rank}d({dst_addr}, &{tmap}, {slot}, {});",
                            cc.join(", ")
                        ));
                    }
                }
                if guard {
                    self.indent -= 1;
                    self.line("}");
                }
            }
            Op::Mma {
                acc,
                a,
                b,
                accumulate,
                release,
            } => {
                if self.is_tcgen05() {
                    return self.tcgen05_mma_op(acc, a, b, *accumulate, *release, sp);
                }
                self.mma(acc, a, b, *accumulate, *release, sp);
                if let Operand::Frag(f) = acc {
                    self.invalidate_reductions(Some(*f));
                }
            }
            Op::Store { dst, value, coords } => self.store(*dst, *value, coords, sp),
            Op::Assign { dst, value } => self.assign(*dst, *value, sp),
            Op::SmemStore { dst, value } if self.k.const_number(*value).is_some() => {
                self.smem_fill(dst, *value, sp)
            }
            Op::SmemStore { dst, value } => self.smem_store(dst, *value, sp),
            Op::ScatterAdd {
                dst,
                src,
                index,
                offset,
                valid_rows,
                counts,
            } => self.scatter_add(dst, src, index, *offset, *valid_rows, counts.as_ref(), sp),
            Op::Sync { barrier } => self.named_sync(*barrier, sp),
            Op::FenceProxyAsync => {
                self.line(&format!("cake_fence_proxy_async();  // ({})", self.loc(sp)))
            }
            Op::TmaStore { dst, src, coords } => self.tma_store(*dst, src, coords, sp),
            Op::CpAsync {
                dst,
                src,
                coords,
                barrier,
            } if self.mma_sync() => self.cp_async(dst, *src, coords, *barrier, sp),
            Op::Ldmatrix { dst, src } if self.mma_sync() => self.ldmatrix(*dst, src, sp),
            Op::Commit { barrier } if self.is_tcgen05() => self.tcgen05_commit(*barrier, sp),
            Op::TmemLoad { dst, src } if self.is_tcgen05() => self.tmem_load(*dst, *src, sp),
            Op::TmemStore { dst, src } if self.is_tcgen05() => self.tmem_store(*dst, *src, sp),
            Op::TmemCopy { dst, src } if self.is_tcgen05() => self.tmem_copy(*dst, src, sp),
            other => {
                let name = format!("{other:?}");
                let short = name.split([' ', '{', '(']).next().unwrap_or("").to_string();
                self.unsupported(
                    sp,
                    format!("`{short}` is not lowered for {} yet", self.target.name),
                );
            }
        }
    }

    fn first_tma_to(&self, barrier: BarrierId, role: RoleId, sp: Span) -> bool {
        // The first TMA op (in program order) of this role signalling this barrier.
        let mut first: Option<Span> = None;
        self.k.walk(|sid, stmt, ctx| {
            if first.is_none() && ctx.role == Some(role) {
                if let Stmt::Op(Op::TmaLoad { barrier: b, .. }) = stmt {
                    if *b == barrier {
                        first = Some(self.k.stmts.span(sid));
                    }
                }
            }
        });
        first == Some(sp)
    }

    fn role_tx_bytes(&self, barrier: BarrierId, role: RoleId) -> u64 {
        let mut bytes = 0;
        self.k.walk(|_, stmt, ctx| {
            if ctx.role == Some(role) {
                if let Stmt::Op(Op::TmaLoad {
                    dst, barrier: b, ..
                }) = stmt
                {
                    if *b == barrier {
                        bytes += tma_bytes(self.k, dst);
                    }
                }
            }
        });
        bytes
    }

    /// Byte address (expression) of the K-major wgmma operand tile at k-step `kk`.
    fn wgmma_operand(&mut self, v: &ViewRef, kk: u32, k_step: u32, sp: Span) -> Option<String> {
        let view = self.k.views[v.view].clone();
        if view.shape.len() != 2 || view.swizzle != 128 {
            self.unsupported(sp, format!("wgmma operands are lowered from 2-D views with 128B swizzle; `{}` has swizzle {}", view.name, view.swizzle));
            return None;
        }
        let elem = view.dtype.bytes();
        let panel_cols = view.panel_cols();
        let k_elem = kk * k_step;
        let panel = k_elem / panel_cols;
        let within = (k_elem % panel_cols) * elem;
        let rows_total = view.shape[0];
        let base = self.view_base(v);
        let row_off = match v.rows {
            Some((start, _)) => format!(" + ({}) * {}", self.ix(start), panel_cols * elem),
            None => String::new(),
        };
        let off = panel as u64 * rows_total as u64 * (panel_cols * elem) as u64 + within as u64;
        Some(format!("{base} + {off}{row_off}"))
    }

    /// `lm.mma(acc, frag, view.T)` on sm_90a: wgmma with A from registers (a [`FragLayout::WgmmaA`]
    /// fragment, four registers per k-step) and B from shared memory.
    fn wgmma_register_a(
        &mut self,
        accf: FragId,
        af: FragId,
        bv: &ViewRef,
        accumulate: ExprId,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        let k = self.k;
        let (Some(FragLayout::WgmmaAcc { n }), Some(FragLayout::WgmmaA { k: kdim })) = (
            self.frag_layouts.get(&accf).copied(),
            self.frag_layouts.get(&af).copied(),
        ) else {
            return;
        };
        if !bv.transposed {
            self.unsupported(
                sp,
                "only a K-major `b` is lowered yet: the transpose of an (N, K) view",
            );
            return;
        }
        let input = match k.fragments[af].dtype {
            DType::BF16 => "bf16",
            _ => "f16",
        };
        if k.views[bv.view].dtype != k.fragments[af].dtype {
            self.unsupported(sp, "wgmma takes `a` and `b` of the same 16-bit type");
            return;
        }
        self.wgmma_rs_shapes.insert((n, input));
        let (accn, an) = (self.frag_name(accf), self.frag_name(af));
        let acc_pred = self.ix(accumulate);
        self.line(&format!(
            "// mma {accn} += {} (registers) * {}.T ({})",
            k.fragments[af].name,
            k.views[bv.view].name,
            self.loc(sp)
        ));
        self.line("cake_wgmma_fence();");
        for kk in 0..kdim / 16 {
            let Some(bd) = self.wgmma_operand(bv, kk, 16, sp) else {
                return;
            };
            let scale = if kk == 0 {
                format!("({acc_pred}) ? 1 : 0")
            } else {
                "1".into()
            };
            let r = 4 * kk;
            self.line(&format!(
                "cake_wgmma_m64n{n}k16_f32_{input}_rs({accn}, {an}[{r}], {an}[{}], {an}[{}], {an}[{}], cake_wgmma_desc({bd}, 16, 1024, 1), {scale});",
                r + 1,
                r + 2,
                r + 3
            ));
        }
        self.wgmma_commit(accf, release);
    }

    fn mma(
        &mut self,
        acc: &Operand,
        a: &Operand,
        b: &Operand,
        accumulate: ExprId,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        if self.mma_sync() {
            return self.mma_sync_op(acc, a, b, accumulate, release, sp);
        }
        let k = self.k;
        if let (Operand::Frag(accf), Operand::Frag(af), Operand::Smem(bv)) = (acc, a, b) {
            return self.wgmma_register_a(*accf, *af, bv, accumulate, release, sp);
        }
        let (Operand::Frag(accf), Operand::Smem(av), Operand::Smem(bv)) = (acc, a, b) else {
            self.unsupported(sp, "on sm_90a, lm.mma is lowered with the accumulator in registers, `b` in shared memory and `a` in shared memory or registers");
            return;
        };
        let Some(FragLayout::WgmmaAcc { n }) = self.frag_layouts.get(accf).copied() else {
            return;
        };
        if av.transposed || !bv.transposed {
            self.unsupported(sp, "only K-major operands are lowered yet: `a` as stored (M, K) and `b` as the transpose of an (N, K) view");
            return;
        }
        let input = match k.views[av.view].dtype {
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            other => {
                self.unsupported(sp, format!("wgmma with {other} inputs is not lowered yet"));
                return;
            }
        };
        let kdim = k.views[av.view].shape[1];
        let k_step = 16;
        self.wgmma_shapes.insert((n, input));
        let accn = self.frag_name(*accf);
        let acc_pred = self.ix(accumulate);
        self.line(&format!(
            "// mma {accn} += {} * {}.T ({})",
            k.views[av.view].name,
            k.views[bv.view].name,
            self.loc(sp)
        ));
        self.line("cake_wgmma_fence();");
        for kk in 0..kdim / k_step {
            let (Some(ad), Some(bd)) = (
                self.wgmma_operand(av, kk, k_step, sp),
                self.wgmma_operand(bv, kk, k_step, sp),
            ) else {
                return;
            };
            let scale = if kk == 0 {
                format!("({acc_pred}) ? 1 : 0")
            } else {
                "1".into()
            };
            self.line(&format!(
                "cake_wgmma_m64n{n}k16_f32_{input}({accn}, cake_wgmma_desc({ad}, 16, 1024, 1), cake_wgmma_desc({bd}, 16, 1024, 1), {scale});"
            ));
        }
        self.wgmma_commit(*accf, release);
    }

    /// Close a group of wgmma into `accf`: commit it, then release `release` once the MMAs have
    /// retired — right away, or one iteration later when the loop keeps a group in flight
    /// (deferred release) — or, without a release, remember the accumulator as in flight.
    fn wgmma_commit(&mut self, accf: FragId, release: Option<BarrierId>) {
        let k = self.k;
        self.line("cake_wgmma_commit();");
        if let Some(bar) = release {
            let bn = c_ident(&k.barriers[bar].name);
            if self.deferred_release.iter().any(|(b, _)| *b == bar) {
                let pipe = self
                    .pipes
                    .last()
                    .map(|(_, p)| c_ident(&k.pipelines[*p].name))
                    .unwrap_or_default();
                self.line("cake_wgmma_wait<1>();  // the previous iteration's MMAs have retired");
                let pending = format!("{bn}_pending >= 0");
                let arrive =
                    self.wgmma_release(bar, &format!("{bn} + 8 * {bn}_pending"), Some(&pending));
                self.line(&format!("{arrive}  // release"));
                self.line(&format!("{bn}_pending = (int){pipe}_stage;"));
            } else {
                let slot = self.barrier_slot(bar);
                self.line("cake_wgmma_wait<0>();");
                self.mma_in_flight.clear();
                let arrive = self.wgmma_release(bar, &slot, None);
                self.line(&format!("{arrive}  // release"));
            }
        } else if self.deferred_release.is_empty() {
            self.mma_in_flight.insert(accf);
        }
    }

    /// Before an operation that reads or overwrites the accumulator of a wgmma group still in
    /// flight, wait for the groups to retire (the registers are the tensor cores' until then).
    fn retire_mmas_before(&mut self, op: &Op) {
        if self.mma_in_flight.is_empty() {
            return;
        }
        let k = self.k;
        let reads = |e: &ExprId, f: &FragId| k.expr_reads_fragment(*e, *f);
        let hit = self.mma_in_flight.iter().find(|f| match op {
            Op::Assign { dst, value } => dst == *f || reads(value, f),
            Op::Store { value, .. }
            | Op::SmemStore { value, .. }
            | Op::TmemStore { src: value, .. } => reads(value, f),
            Op::Mma {
                a: Operand::Frag(a),
                ..
            } => a == *f,
            _ => false,
        });
        if let Some(&f) = hit {
            self.line(&format!(
                "cake_wgmma_wait<0>();  // the MMAs into `{}` have retired",
                k.fragments[f].name
            ));
            self.mma_in_flight.clear();
        }
    }

    // -----------------------------------------------------------------------------------------
    // The mma.sync family (sm_80, sm_89): cp.async, ldmatrix, mma.sync

    /// Byte address of element row `row`, byte column `cb` of one stage of `view` (`base` is the
    /// stage's address), through the view's panels and swizzle — the one address function the
    /// cp.async writes and the ldmatrix reads of a view share.
    fn smem_addr(&mut self, view: &View, base: &str, row: &str, cb: &str) -> String {
        let eb = view.dtype.bytes();
        let prb = view.panel_cols() * eb;
        if view.swizzle == 0 {
            return format!("{base} + ({row}) * {prb} + ({cb})");
        }
        self.swizzles.insert(view.swizzle);
        let s = view.swizzle;
        if view.panels() == 1 {
            format!("{base} + cake_swizzle{s}(({row}) * {prb} + ({cb}))")
        } else {
            let panel_bytes = view.shape[0] as u64 * prb as u64;
            format!(
                "{base} + cake_swizzle{s}((({cb}) / {prb}) * {panel_bytes} + ({row}) * {prb} + ({cb}) % {prb})"
            )
        }
    }

    /// `view.cp_async(tensor, coords, barrier)`: every thread of the role copies its share of the
    /// tile in 16-byte chunks (chunk c of the tile goes to thread c mod threads), zero-filling
    /// what lies past the tensor's rows or columns through the source-size operand, then arrives
    /// on the barrier's current slot once its copies have landed (`cp.async.mbarrier.arrive
    /// .noinc`: one of the role's `threads` arrivals per phase this statement contributes).
    fn cp_async(
        &mut self,
        dst: &ViewRef,
        src: ParamId,
        coords: &[ExprId],
        barrier: BarrierId,
        sp: Span,
    ) {
        let k = self.k;
        let view = k.views[dst.view].clone();
        let ParamKind::Tensor { dims, .. } = k.params[src].kind.clone() else {
            return;
        };
        if view.shape.len() != 2 || dims.len() != 2 || dst.transposed || dst.rows.is_some() {
            self.unsupported(
                sp,
                "cp_async is lowered for a whole 2-D view (no .rows, no .T) from a 2-D tensor",
            );
            return;
        }
        let eb = view.dtype.bytes();
        let (rows, cols) = (view.shape[0], view.shape[1]);
        if !(cols * eb).is_multiple_of(16) {
            self.unsupported(
                sp,
                format!(
                    "cp_async copies 16-byte chunks; a row of `{}` is {} bytes",
                    view.name,
                    cols * eb
                ),
            );
            return;
        }
        let (role, _) = self.role.expect("role");
        let r = &k.roles[role];
        let threads = r.threads();
        let first = r.warps().into_iter().min().unwrap_or(0) * 32;
        let per_row = cols * eb / 16;
        let elems = 16 / eb;
        let total = rows * per_row;
        let per_thread = total.div_ceil(threads);
        let (r0, c0) = (self.ix(coords[0]), self.ix(coords[1]));
        let (rext, cext) = (self.extent_text(&dims[0]), self.extent_text(&dims[1]));
        let base = self.view_base(dst);
        let slot = self.barrier_slot(barrier);
        let tname = c_ident(&k.params[src].name);
        let addr = self.smem_addr(&view, &base, "row", &format!("col * {eb}"));
        let arrivals = self.facts[barrier.index()].arrival_count();
        self.line(&format!(
            "{{  // cp_async {} <- {} ({}): {total} chunks of 16 B, {per_thread} per thread of role {}",
            view.name,
            k.params[src].name,
            self.loc(sp),
            r.name
        ));
        self.indent += 1;
        self.line("#pragma unroll");
        self.line(&format!("for (int c = 0; c < {per_thread}; ++c) {{"));
        self.indent += 1;
        self.line(&format!(
            "const int chunk = ((int)threadIdx.x - {first}) + {threads} * c;"
        ));
        if !total.is_multiple_of(threads) {
            self.line(&format!("if (chunk >= {total}) break;"));
        }
        self.line(&format!("const int row = chunk / {per_row};"));
        self.line(&format!("const int col = (chunk % {per_row}) * {elems};"));
        self.line(&format!("const int g_row = {r0} + row;"));
        self.line(&format!("const int g_col = {c0} + col;"));
        self.line("// Bytes of the chunk inside the tensor; the rest is zero-filled (none: nothing is read).");
        self.line(&format!(
            "const int valid = g_row < {rext} ? max(0, min({elems}, {cext} - g_col)) * {eb} : 0;"
        ));
        self.line(&format!(
            "cake_cp_async_16({addr}, {tname} + (valid > 0 ? (size_t)g_row * {cext} + g_col : 0), valid);"
        ));
        self.indent -= 1;
        self.line("}");
        self.line(&format!(
            "cake_cp_async_mbar_arrive({slot});  // completes on {} once this thread's copies land (1 of {arrivals} arrivals per phase)",
            k.barriers[barrier].name
        ));
        self.indent -= 1;
        self.line("}");
    }

    /// `lm.ldmatrix(frag, view)` into an mma.sync `a` fragment: one ldmatrix.x4 per 16 rows and
    /// 32 bytes of K. Lanes 0-15 address rows 0-15 at the k-step's first 16 bytes, lanes 16-31
    /// the same rows at its second 16 bytes, so the four registers are the m16n8k16 A fragment
    /// (a0: rows 0-7, a1: rows 8-15, a2/a3: the same rows 16 bytes on).
    fn ldmatrix(&mut self, dst: FragId, src: &ViewRef, sp: Span) {
        let k = self.k;
        let Some(FragLayout::MmaA { m, k_bytes }) = self.frag_layouts.get(&dst).copied() else {
            self.unsupported(
                sp,
                format!(
                    "lm.ldmatrix is lowered into the `a` fragment of an mma.sync; `{}` is not one",
                    k.fragments[dst].name
                ),
            );
            return;
        };
        let view = k.views[src.view].clone();
        if view.shape.len() != 2 || src.transposed {
            self.unsupported(
                sp,
                "lm.ldmatrix is lowered from a 2-D view as stored (ldmatrix .trans is not lowered yet)",
            );
            return;
        }
        let start = match src.rows {
            Some((start, _)) => self.ix(start),
            None => "0".into(),
        };
        let base = self.view_base(src);
        let kt = k_bytes / 32;
        let name = self.frag_name(dst);
        let addr = self.smem_addr(&view, &base, "row", "cb");
        self.line(&format!(
            "{{  // ldmatrix {} <- {} ({}): {} x {kt} ldmatrix.x4",
            k.fragments[dst].name,
            view.name,
            self.loc(sp),
            m / 16
        ));
        self.indent += 1;
        self.line("#pragma unroll");
        self.line(&format!("for (int mt = 0; mt < {}; ++mt) {{", m / 16));
        self.indent += 1;
        self.line("#pragma unroll");
        self.line(&format!("for (int kt = 0; kt < {kt}; ++kt) {{"));
        self.indent += 1;
        self.line(&format!("const int row = {start} + 16 * mt + lane % 16;"));
        self.line("const int cb = 32 * kt + (lane / 16) * 16;");
        self.line(&format!(
            "cake_ldmatrix_x4({name} + 4 * (mt * {kt} + kt), {addr});"
        ));
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
    }

    /// `lm.mma(acc, a_frag, view.T)` on mma.sync: for each 32-byte k-step and each pair of
    /// 8-column tiles, the B registers are loaded with one ldmatrix.x4 from the (N, K) view — its
    /// rows are B's columns with K contiguous, which is the `.col` B operand as stored, so no
    /// `.trans` — and one m16n8 MMA per 16-row tile and column tile follows. mma.sync is
    /// synchronous: a release arrives right after, every thread's shared reads being done.
    fn mma_sync_op(
        &mut self,
        acc: &Operand,
        a: &Operand,
        b: &Operand,
        accumulate: ExprId,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        let k = self.k;
        let (Operand::Frag(accf), Operand::Smem(bv)) = (acc, b) else {
            self.unsupported(sp, format!("on {}, lm.mma is lowered with the accumulator in a fragment and `b` in shared memory", self.target.name));
            return;
        };
        let Some(FragLayout::MmaAcc { m, n }) = self.frag_layouts.get(accf).copied() else {
            return;
        };
        // `a` in registers (an lm.ldmatrix fragment), or in shared memory: then its registers
        // are loaded here, per k-step, with the same ldmatrix.x4 pattern lm.ldmatrix uses.
        let (k_bytes, adt) = match a {
            Operand::Frag(af) => match self.frag_layouts.get(af).copied() {
                Some(FragLayout::MmaA { k_bytes, .. }) => (k_bytes, k.fragments[*af].dtype),
                _ => return,
            },
            Operand::Smem(av) if !av.transposed && k.views[av.view].shape.len() == 2 => {
                let v = &k.views[av.view];
                (v.shape[1] * v.dtype.bytes(), v.dtype)
            }
            _ => {
                self.unsupported(sp, "on mma.sync, `a` is a fragment loaded by lm.ldmatrix or an (M, K) view as stored (no .T)");
                return;
            }
        };
        if k_bytes % 32 != 0 {
            self.unsupported(
                sp,
                format!("mma.sync k-steps are 32 bytes; K of `a` is {k_bytes} bytes"),
            );
            return;
        }
        let bview = k.views[bv.view].clone();
        if !bv.transposed || bview.shape.len() != 2 {
            self.unsupported(
                sp,
                "only a K-major `b` is lowered: the transpose of an (N, K) view",
            );
            return;
        }
        let bdt = bview.dtype;
        let ptx = |d: DType| match d {
            DType::BF16 => Some("bf16"),
            DType::F16 => Some("f16"),
            DType::E4M3 => Some("e4m3"),
            DType::E5M2 => Some("e5m2"),
            _ => None,
        };
        let (Some(an), Some(bn)) = (ptx(adt), ptx(bdt)) else {
            self.unsupported(
                sp,
                format!("mma.sync with {adt} x {bdt} inputs is not lowered yet"),
            );
            return;
        };
        let Some(kk) = cake_target::mma_instr_k(MmaFamily::MmaSync, adt) else {
            return;
        };
        if kk * adt.bytes() != 32 {
            self.unsupported(sp, format!("mma.sync k{kk} with {adt} is not lowered yet"));
            return;
        }
        self.mma_sync_shapes.insert((kk, an, bn));
        let func = prelude::mma_sync_name(kk, an, bn);
        let (mt, nt, kt) = (m / 16, n / 8, k_bytes / 32);
        let bstart = match bv.rows {
            Some((start, _)) => self.ix(start),
            None => "0".into(),
        };
        let bbase = self.view_base(bv);
        let baddr = self.smem_addr(&bview, &bbase, "row", "cb");
        let accn = self.frag_name(*accf);
        // The A registers of (16-row tile mt, k-step kt): the fragment's, or `a_regs[mt]` loaded
        // at the top of each k-step.
        let (afn, a_of) = match a {
            Operand::Frag(af) => {
                let n = self.frag_name(*af);
                (n.clone(), format!("{n} + 4 * (mt * {kt} + kt)"))
            }
            Operand::Smem(av) => (k.views[av.view].name.clone(), "a_regs[mt]".to_string()),
            _ => unreachable!(),
        };
        let pred = self.ix(accumulate);
        self.line(&format!(
            "{{  // mma {accn} += {afn} * {}.T ({}): mma.sync m16n8k{kk}, {mt} x {nt} tiles, {kt} k-step(s); B through ldmatrix.x4",
            bview.name,
            self.loc(sp)
        ));
        self.indent += 1;
        if !matches!(k.exprs[accumulate].kind, ExprKind::Bool(true)) {
            self.line(&format!("if (!({pred})) {{"));
            self.indent += 1;
            self.line("#pragma unroll");
            self.line(&format!(
                "for (int r = 0; r < {}; ++r) {accn}[r] = 0.0f;",
                m * n / 32
            ));
            self.indent -= 1;
            self.line("}");
        }
        self.line("#pragma unroll");
        self.line(&format!("for (int kt = 0; kt < {kt}; ++kt) {{"));
        self.indent += 1;
        if let Operand::Smem(av) = a {
            let view = k.views[av.view].clone();
            let start = match av.rows {
                Some((start, _)) => self.ix(start),
                None => "0".into(),
            };
            let base = self.view_base(av);
            let addr = self.smem_addr(&view, &base, "row", "cb");
            self.line(&format!(
                "uint32_t a_regs[{mt}][4];  // A of this k-step, as lm.ldmatrix would load it"
            ));
            self.line("#pragma unroll");
            self.line(&format!("for (int mt = 0; mt < {mt}; ++mt) {{"));
            self.indent += 1;
            self.line(&format!("const int row = {start} + 16 * mt + lane % 16;"));
            self.line("const int cb = 32 * kt + (lane / 16) * 16;");
            self.line(&format!("cake_ldmatrix_x4(a_regs[mt], {addr});"));
            self.indent -= 1;
            self.line("}");
        }
        self.line("#pragma unroll");
        self.line(&format!("for (int np = 0; np < {}; ++np) {{", nt / 2));
        self.indent += 1;
        self.line("// Column tiles 2np and 2np+1: lanes 0-7 and 16-23 address their rows of the view, lanes 8-15 and 24-31 the same rows 16 bytes on.");
        self.line(&format!(
            "const int row = {bstart} + 16 * np + (lane / 16) * 8 + lane % 8;"
        ));
        self.line("const int cb = 32 * kt + ((lane / 8) % 2) * 16;");
        self.line("uint32_t b_regs[4];");
        self.line(&format!("cake_ldmatrix_x4(b_regs, {baddr});"));
        self.line("#pragma unroll");
        self.line(&format!("for (int mt = 0; mt < {mt}; ++mt) {{"));
        self.indent += 1;
        self.line(&format!(
            "{func}({accn} + 4 * (mt * {nt} + 2 * np), {a_of}, b_regs);"
        ));
        self.line(&format!(
            "{func}({accn} + 4 * (mt * {nt} + 2 * np + 1), {a_of}, b_regs + 2);"
        ));
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        if let Some(bar) = release {
            let slot = self.barrier_slot(bar);
            let arrive = self.arrive(bar, &slot);
            self.line(&format!(
                "{arrive}  // release {}: this thread's reads of the stage are done (mma.sync is synchronous)",
                k.barriers[bar].name
            ));
        }
        self.indent -= 1;
        self.line("}");
    }

    /// Whether the role's replicas synchronise their own threads (`replica_sync`): around TMA
    /// stores, shared-memory fills and scatter-adds.
    fn role_syncs_replicas(&self, role: RoleId) -> bool {
        let mut found = false;
        self.k.walk(|_, stmt, ctx| {
            if ctx.role == Some(role)
                && matches!(stmt, Stmt::Op(Op::TmaStore { .. } | Op::ScatterAdd { .. }))
            {
                found = true;
            }
            if let (Some(r), Stmt::Op(Op::SmemStore { value, .. })) = (ctx.role, stmt) {
                found |= r == role && self.k.const_number(*value).is_some();
            }
        });
        found
    }

    /// Synchronise the threads of the current role replica: one hardware named barrier per
    /// replica of each role that stores through TMA, with ids from 8 up (clear of the ids
    /// libraries reserve) to 15, the last one the hardware has.
    fn replica_sync(&mut self, sp: Span) {
        let (lowest, highest) = (*TMA_STORE_BARRIER_IDS.start(), *TMA_STORE_BARRIER_IDS.end());
        let (role, _) = self.role.expect("role");
        let r = &self.k.roles[role];
        let name = c_ident(&r.name);
        let threads = r.unit.threads();
        let replicas = r.replicas();
        let earlier: Vec<RoleId> = self
            .k
            .roles
            .iter()
            .map(|(h, _)| h)
            .take_while(|h| *h != role)
            .collect();
        let first_id = lowest
            + earlier
                .into_iter()
                .filter(|h| self.role_syncs_replicas(*h))
                .map(|h| self.k.roles[h].replicas())
                .sum::<u32>();
        if first_id + replicas - 1 > highest {
            self.unsupported(
                sp,
                format!(
                    "the roles that store through TMA need {} named barriers (ids {lowest}..={}); the hardware has ids up to {highest}",
                    first_id + replicas - lowest,
                    first_id + replicas - 1
                ),
            );
            return;
        }
        self.line(&format!(
            "cake_named_sync({first_id} + {name}_index, {threads});"
        ));
    }

    /// `lm.sync(nb)`: `bar.sync` on the named barrier's hardware id with the thread count of
    /// its roles. Ids 1–7 go to named barriers in declaration order (0 is `__syncthreads`, 8–15
    /// the per-replica barriers of TMA stores).
    fn named_sync(&mut self, nb: NamedBarrierId, sp: Span) {
        let k = self.k;
        let id = NAMED_BARRIER_IDS.start() + nb.index() as u32;
        if !NAMED_BARRIER_IDS.contains(&id) {
            self.unsupported(
                sp,
                format!(
                    "more than {} named barriers: hardware ids {NAMED_BARRIER_IDS:?} are theirs ({TMA_STORE_BARRIER_IDS:?} belong to TMA stores)",
                    NAMED_BARRIER_IDS.end()
                ),
            );
            return;
        }
        if let Some((_, true)) = self.role {
            self.unsupported(
                sp,
                "lm.sync in a role whose body one thread issues is not lowered yet: every warp of the role must reach bar.sync",
            );
            return;
        }
        let b = &k.named_barriers[nb];
        let threads: u32 = b.roles.iter().map(|r| k.roles[*r].threads()).sum();
        self.line(&format!(
            "cake_named_sync({id}, {threads});  // sync {} ({})",
            b.name,
            self.loc(sp)
        ));
    }

    /// `view.store(value)`: an accumulator tile (or a cast of one) written into a 128B-swizzled
    /// view in the layout TMA reads, 4 bytes (two 16-bit elements) per store.
    fn smem_store(&mut self, dst: &ViewRef, value: ExprId, sp: Span) {
        let k = self.k;
        let view = k.views[dst.view].clone();
        let Some(FragLayout::WgmmaAcc { n }) = self.tile_of(value) else {
            self.unsupported(
                sp,
                "view.store is lowered for values computed from an accumulator tile",
            );
            return;
        };
        let (inner, pack) = match (&k.exprs[value].kind, view.dtype) {
            (ExprKind::Cast(DType::BF16, x), DType::BF16) => (*x, "cake_pack_bf16x2"),
            (ExprKind::Cast(DType::F16, x), DType::F16) => (*x, "cake_pack_f16x2"),
            _ => {
                self.unsupported(
                    sp,
                    "view.store is lowered for lm.cast(..., bf16 or f16) of an f32 accumulator",
                );
                return;
            }
        };
        if view.swizzle != 128 || view.shape.len() != 2 || dst.transposed {
            self.unsupported(sp, "view.store is lowered into 2-D views with 128B swizzle");
            return;
        }
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        self.precompute_reductions(value);
        let v = self.elem(inner, Site::Tile);
        let base = self.view_base(&ViewRef {
            rows: None,
            ..dst.clone()
        });
        let row0 = match dst.rows {
            Some((start, _)) => self.ix(start),
            None => "0".into(),
        };
        let panel_bytes = view.shape[0] as u64 * 128;
        self.line(&format!("// {}.store(...) ({})", view.name, self.loc(sp)));
        // The buffer may still be read by this replica's previous TMA store.
        self.line(&format!("if ({rname}_thread == 0) cake_bulk_wait_read();"));
        self.replica_sync(sp);
        self.open_accumulator_pairs(FragLayout::WgmmaAcc { n }, &row0, None, &v);
        // 128B swizzle: the 16-byte chunk index within a 128-byte row is XORed with row % 8.
        self.line(&format!(
            "const uint32_t addr = {base} + (col / 64) * {panel_bytes} + row * 128 + ((((col % 64) * 2 / 16) ^ (row % 8)) * 16) + ((col % 64) * 2) % 16;"
        ));
        self.line(&format!("cake_st_shared_b32(addr, {pack}(v[0], v[1]));"));
        self.close_accumulator_pairs(FragLayout::WgmmaAcc { n });
    }

    /// `view.store(constant)`: the replica's threads fill the view with 16-byte stores (the
    /// value is the same everywhere, so the swizzle does not matter), after the view's last
    /// TMA store has read it, then synchronise so every later access sees the fill.
    fn smem_fill(&mut self, dst: &ViewRef, value: ExprId, sp: Span) {
        let k = self.k;
        let view = k.views[dst.view].clone();
        let Some((role, threads)) = self.replica_threads(sp, "view.store of a constant") else {
            return;
        };
        if dst.transposed || (dst.rows.is_some() && view.swizzle != 0) {
            self.unsupported(sp, "view.store of a constant is lowered for a whole view, or rows of an unswizzled one");
            return;
        }
        let bits = match (k.const_number(value), view.dtype) {
            (Some(v), DType::F32) => (v as f32).to_bits(),
            (Some(v), DType::I32) => v as i32 as u32,
            (Some(v), DType::BF16) => {
                let h = u32::from(cake_target::f32_to_bf16_bits(v as f32));
                h | (h << 16)
            }
            _ => {
                self.unsupported(
                    sp,
                    format!("view.store of a constant is lowered into f32, i32 and bf16 views; `{}` is {}", view.name, view.dtype),
                );
                return;
            }
        };
        let rows = dst.rows.map_or(view.shape[0], |(_, n)| n);
        let bytes: u64 = rows as u64
            * view.shape[1..].iter().map(|&d| d as u64).product::<u64>()
            * view.dtype.bytes() as u64;
        if !bytes.is_multiple_of(16) {
            self.unsupported(
                sp,
                format!(
                    "view.store of a constant fills whole 16-byte chunks; `{}` is {bytes} bytes",
                    view.name
                ),
            );
            return;
        }
        self.needs_shared_ops = true;
        let rname = c_ident(&k.roles[role].name);
        let base = self.row_range_base(dst);
        let number = k.const_number(value).expect("a constant");
        self.line(&format!(
            "// {}.store({number}) ({})",
            view.name,
            self.loc(sp)
        ));
        // The buffer may still be read by this replica's previous TMA store.
        self.line(&format!("if ({rname}_thread == 0) cake_bulk_wait_read();"));
        self.replica_sync(sp);
        self.line(&format!(
            "for (int chunk = {rname}_thread; chunk < {}; chunk += {threads}) cake_st_shared_v4({base} + 16 * chunk, 0x{bits:08x}u);",
            bytes / 16
        ));
        self.replica_sync(sp);
    }

    /// `dst.scatter_add(src, index, offset, valid_rows, counts)`: warp w of the replica owns the
    /// rows of `dst` whose index is w modulo the warps, so every element has one writer and
    /// plain loads and stores suffice (shared memory has no native float atomic add). Each warp
    /// reads the indices of 32 rows at a time, and adds the rows it owns, lane l taking columns
    /// l, l + 32, ...: up to eight rows side by side when their indices are distinct, else row
    /// by row. The counts use native integer atomics.
    #[allow(clippy::too_many_arguments)]
    fn scatter_add(
        &mut self,
        dst: &ViewRef,
        src: &ViewRef,
        index: &ViewRef,
        offset: ExprId,
        valid_rows: Option<ExprId>,
        counts: Option<&ViewRef>,
        sp: Span,
    ) {
        let k = self.k;
        let Some((role, threads)) = self.replica_threads(sp, "scatter_add") else {
            return;
        };
        let (dview, sview) = (k.views[dst.view].clone(), k.views[src.view].clone());
        if dst.transposed || src.transposed {
            self.unsupported(sp, "scatter_add is lowered for views without .T");
            return;
        }
        if dview.swizzle != 0 || sview.swizzle != 0 {
            self.unsupported(sp, format!("scatter_add is lowered for unswizzled views; `{}` has swizzle {} and `{}` swizzle {}", dview.name, dview.swizzle, sview.name, sview.swizzle));
            return;
        }
        let load = match sview.dtype {
            DType::BF16 => "cake_ld_shared_bf16",
            DType::F16 => "cake_ld_shared_f16",
            _ => "cake_ld_shared_f32",
        };
        self.needs_shared_ops = true;
        let rname = c_ident(&k.roles[role].name);
        let rows = src.rows.map_or(sview.shape[0], |(_, n)| n);
        let dst_rows = dst.rows.map_or(dview.shape[0], |(_, n)| n);
        let cols = sview.shape[1];
        let esize = sview.dtype.bytes();
        let valid = match valid_rows {
            Some(e) => format!(" && r0 + lane < ({})", self.ix(e)),
            None => String::new(),
        };
        let off = self.ix(offset);
        let ibase = self.row_range_base(index);
        let (sbase, dbase) = (self.row_range_base(src), self.row_range_base(dst));
        let cbase = counts.map(|c| self.row_range_base(c));
        let warps = threads / 32;
        let per_lane = cols.div_ceil(32);
        let guard = if cols % 32 == 0 {
            String::new()
        } else {
            format!("if (lane + 32 * cc < {cols}) ")
        };
        let x_at =
            |row: &str| format!("{load}({sbase} + {esize} * (({row}) * {cols} + lane + 32 * cc))");
        let sum_at = |i: &str| format!("{dbase} + 4 * (({i}) * {cols} + lane + 32 * cc)");
        self.line(&format!(
            "// {}.scatter_add({} rows by {}) ({})",
            dview.name,
            sview.name,
            k.views[index.view].name,
            self.loc(sp)
        ));
        self.line(&format!(
            "// Warp w of the {warps} owns the rows i of `{}` with i % {warps} == w: each sum is updated by one warp, in row order, with plain loads and stores (no float atomics, which shared memory lacks: they would be compare-and-swap loops)."
        , dview.name));
        self.line("{");
        self.indent += 1;
        self.line(&format!(
            "const int lane = {rname}_thread % 32, owner = {rname}_thread / 32;"
        ));
        self.line(&format!("for (int r0 = 0; r0 < {rows}; r0 += 32) {{"));
        self.indent += 1;
        self.line(&format!(
            "const int mine = (r0 + lane < {rows}{valid}) ? cake_ld_shared_s32({ibase} + 4 * (r0 + lane)) - ({off}) : -1;"
        ));
        self.line(&format!(
            "const bool owned = (unsigned)mine < {dst_rows}u && mine % {warps} == owner;"
        ));
        if let Some(cb) = &cbase {
            self.line(&format!(
                "if (owned) cake_red_shared_add_u32({cb} + 4 * mine, 1u);"
            ));
        }
        self.line("unsigned todo = __ballot_sync(0xffffffffu, owned);");
        self.line("// Rows with distinct indices can be added side by side; a repeated index is added row by row.");
        self.line("const unsigned peers = __match_any_sync(0xffffffffu, owned ? mine : ~lane);");
        self.line("if (!__any_sync(0xffffffffu, owned && __popc(peers) > 1)) {");
        self.indent += 1;
        self.line("while (todo) {  // up to eight rows at a time: their loads are issued before their stores");
        self.indent += 1;
        self.line(&format!(
            "int row[8], at[8], n = 0; float x[8][{per_lane}], acc[8][{per_lane}];"
        ));
        self.line("#pragma unroll");
        self.line("for (int u = 0; u < 8; ++u) {");
        self.indent += 1;
        self.line("if (!todo) break;  // the same for the whole warp");
        self.line("row[u] = __ffs(todo) - 1;");
        self.line("todo &= todo - 1;");
        self.line("n = u + 1;");
        self.line("at[u] = __shfl_sync(0xffffffffu, mine, row[u]);");
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int cc = 0; cc < {per_lane}; ++cc) {guard}{{ x[u][cc] = {}; acc[u][cc] = cake_ld_shared_f32({}); }}",
            x_at("r0 + row[u]"),
            sum_at("at[u]")
        ));
        self.indent -= 1;
        self.line("}");
        self.line("#pragma unroll");
        self.line("for (int u = 0; u < 8; ++u) {");
        self.indent += 1;
        self.line("if (u == n) break;");
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int cc = 0; cc < {per_lane}; ++cc) {guard}cake_st_shared_f32({}, acc[u][cc] + x[u][cc]);",
            sum_at("at[u]")
        ));
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("} else {");
        self.indent += 1;
        self.line("for (; todo; todo &= todo - 1) {");
        self.indent += 1;
        self.line("const int r = __ffs(todo) - 1;");
        self.line("const int i = __shfl_sync(0xffffffffu, mine, r);");
        self.line("#pragma unroll");
        self.line(&format!(
            "for (int cc = 0; cc < {per_lane}; ++cc) {guard}cake_st_shared_f32({}, cake_ld_shared_f32({}) + {});",
            sum_at("i"),
            sum_at("i"),
            x_at("r0 + r")
        ));
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
        self.indent -= 1;
        self.line("}");
    }

    /// The current role and the thread count of one replica, for the shared-memory fills and
    /// scatter-adds (each replica's threads share its work and synchronise on its own barrier).
    fn replica_threads(&mut self, sp: Span, what: &str) -> Option<(RoleId, u32)> {
        let (role, issue_only) = self.role.expect("role");
        if issue_only {
            let msg = format!(
                "{what} needs every thread of role `{}`, whose body one thread issues",
                self.k.roles[role].name
            );
            self.unsupported(sp, msg);
            return None;
        }
        Some((role, self.k.roles[role].unit.threads()))
    }

    /// The shared address of a view reference, with `.rows(start, n)` applied (unswizzled
    /// layout: a row is the last axis's elements, or one element of a 1-D view).
    fn row_range_base(&mut self, v: &ViewRef) -> String {
        let view = self.k.views[v.view].clone();
        let base = self.view_base(&ViewRef {
            rows: None,
            ..v.clone()
        });
        match v.rows {
            None => base,
            Some((start, _)) => {
                let row_bytes = view.shape[1..].iter().product::<u32>() * view.dtype.bytes();
                format!("({base} + ({}) * {row_bytes})", self.ix(start))
            }
        }
    }

    /// `view.tma_store(tensor, coords)`: every thread of the replica has written and fenced; one
    /// thread issues one bulk store per swizzle panel and commits them as a group.
    fn tma_store(&mut self, dst: ParamId, src: &ViewRef, coords: &[ExprId], sp: Span) {
        let k = self.k;
        let view = k.views[src.view].clone();
        let rank = self.rank(dst);
        if !(1..=3).contains(&rank)
            || view.shape.len() > rank
            || src.transposed
            || (view.shape.len() != 2 && view.panels() != 1)
        {
            self.unsupported(
                sp,
                "TMA stores are lowered for 2-D views (or whole 1-D views) into tensors of rank 1 to 3",
            );
            return;
        }
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        let box_dims = self.tma_box(&view, src.rows.map(|(_, n)| n), rank);
        let tmap = self.tmap_name(dst, &box_dims, view.swizzle);
        let mut base = self.view_base(&ViewRef {
            rows: None,
            ..src.clone()
        });
        if let Some((start, _)) = src.rows {
            // A row of a 1-D view is one element.
            let row_bytes = if view.shape.len() == 1 {
                view.dtype.bytes()
            } else {
                view.panel_cols() * view.dtype.bytes()
            };
            base = format!("({base} + ({}) * {row_bytes})", self.ix(start));
        }
        // Innermost first, as the tensor map orders them.
        let mut c: Vec<String> = coords.iter().map(|e| self.ix(*e)).collect();
        c.reverse();
        if rank != 2 {
            self.tma_store_ranks.insert(rank);
        }
        let panel_bytes =
            view.shape[0] as u64 * view.panel_cols() as u64 * view.dtype.bytes() as u64;
        self.line(&format!(
            "// tma_store {} -> {} ({})",
            view.name,
            k.params[dst].name,
            self.loc(sp)
        ));
        self.replica_sync(sp);
        self.line(&format!("if ({rname}_thread == 0) {{"));
        self.indent += 1;
        for p in 0..view.panels() {
            let addr = if p == 0 {
                base.clone()
            } else {
                format!("{base} + {}", p as u64 * panel_bytes)
            };
            let mut cc = c.clone();
            if p > 0 {
                cc[0] = format!("{} + {}", c[0], p * view.panel_cols());
            }
            self.line(&format!(
                "cake_tma_store_{rank}d(&{tmap}, {addr}, {});",
                cc.join(", ")
            ));
        }
        self.line("cake_bulk_commit();");
        self.indent -= 1;
        self.line("}");
    }

    /// `frag[:] = value`, element by element in the fragment's layout.
    fn assign(&mut self, dst: FragId, value: ExprId, sp: Span) {
        let k = self.k;
        let name = c_ident(&k.fragments[dst].name);
        self.precompute_reductions(value);
        let ty = storage_type(k.fragments[dst].dtype);
        let header = format!(
            "#pragma unroll  // {} <- ... ({})",
            k.fragments[dst].name,
            self.loc(sp)
        );
        match self.frag_layouts.get(&dst).copied() {
            Some(FragLayout::AccRows) => {
                let v = self.elem(value, Site::Rows);
                self.line(&header);
                self.line(&format!(
                    "for (int h = 0; h < 2; ++h) {name}[h] = ({ty})({v});"
                ));
            }
            Some(FragLayout::WgmmaAcc { n }) => {
                let v = self.elem(value, Site::Tile);
                self.line(&header);
                self.line(&format!(
                    "for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j) {name}[4 * i + 2 * h + j] = ({ty})({v});",
                    n / 8
                ));
            }
            Some(FragLayout::WgmmaA { k: kdim }) => {
                // A cast to 16 bits of an accumulator-layout tile of the same width: element
                // pairs (j = 0, 1) pack into one register, 2i + h.
                let (inner, pack) = match (&k.exprs[value].kind, k.fragments[dst].dtype) {
                    (ExprKind::Cast(DType::BF16, x), DType::BF16) => (*x, "cake_pack_bf16x2"),
                    (ExprKind::Cast(DType::F16, x), DType::F16) => (*x, "cake_pack_f16x2"),
                    _ => {
                        self.unsupported(sp, "a wgmma A fragment is written as lm.cast(value, bf16 or f16) of an f32 accumulator-layout value");
                        return;
                    }
                };
                if self.tile_of(inner) != Some(FragLayout::WgmmaAcc { n: kdim }) {
                    self.unsupported(sp, format!("a wgmma A fragment of {kdim} columns is computed from a (64, {kdim}) accumulator tile"));
                    return;
                }
                let v = self.elem(inner, Site::Tile);
                self.line(&header);
                self.line(&format!(
                    "for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) {{ float e[2]; for (int j = 0; j < 2; ++j) e[j] = {v}; {name}[2 * i + h] = {pack}(e[0], e[1]); }}",
                    kdim / 8
                ));
            }
            Some(FragLayout::MmaAcc { m, n }) => {
                let v = self.elem(value, Site::Tile);
                self.line(&header);
                self.line(&format!(
                    "for (int mt = 0; mt < {}; ++mt) for (int i = 0; i < {}; ++i) for (int h = 0; h < 2; ++h) for (int j = 0; j < 2; ++j) {name}[4 * (mt * {} + i) + 2 * h + j] = ({ty})({v});",
                    m / 16,
                    n / 8,
                    n / 8
                ));
            }
            Some(FragLayout::TmemRow { n }) => self.assign_lanes(dst, value, n, sp),
            Some(FragLayout::LaneScalar) => self.assign_lanes(dst, value, 1, sp),
            Some(FragLayout::MmaA { .. }) | None => self.unsupported(
                sp,
                format!(
                    "fragment `{}` has no register layout the lowering knows",
                    k.fragments[dst].name
                ),
            ),
        }
        self.invalidate_reductions(Some(dst));
    }

    fn store(&mut self, dst: ParamId, value: ExprId, coords: &[ExprId], sp: Span) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        let tname = c_ident(&k.params[dst].name);
        let (role, _) = self.role.expect("role");
        let rname = c_ident(&k.roles[role].name);
        self.precompute_reductions(value);
        match self.tile_of(value) {
            Some(FragLayout::AccRows) => {
                // One value per row: the first thread of each quad writes the quad's two rows.
                let last = dims.len() - 1;
                let r0 = self.ix(coords[last]);
                let rows = self.extent_text(&dims[last]);
                let v = self.elem(value, Site::Rows);
                let offset = self.linear_offset(&dims, coords, last, "row");
                let ty = storage_type(dtype);
                self.line(&format!("if ({rname}_thread % 4 == 0) {{  // store {} <- per-row values ({})", k.params[dst].name, self.loc(sp)));
                self.indent += 1;
                self.line("#pragma unroll");
                self.line("for (int h = 0; h < 2; ++h) {");
                self.indent += 1;
                self.line(&format!("const int row = {r0} + lane_row + 8 * h;"));
                self.line(&format!("if (row < {rows}) {tname}[{offset}] = ({ty})({v});"));
                self.indent -= 1;
                self.line("}");
                self.indent -= 1;
                self.line("}");
            }
            Some(FragLayout::TmemRow { n }) => self.store_tmem_rows(dst, value, coords, n, sp),
            Some(FragLayout::LaneScalar) => self.unsupported(sp, "lm.store of per-row values of a TMEM tile is not lowered yet"),
            Some(l) if l.is_accumulator() => self.store_tile(dst, value, coords, l, sp),
            _ => self.unsupported(sp, "lm.store is lowered for values computed from an accumulator tile or its row reductions"),
        }
    }

    fn store_tile(
        &mut self,
        dst: ParamId,
        value: ExprId,
        coords: &[ExprId],
        layout: FragLayout,
        sp: Span,
    ) {
        let k = self.k;
        let ParamKind::Tensor { dtype, dims } = k.params[dst].kind.clone() else {
            return;
        };
        if dims.len() != 2 || coords.len() != 2 {
            self.unsupported(
                sp,
                "lm.store of an accumulator tile is lowered for 2-D tensors",
            );
            return;
        }
        let (rows, cols) = (self.extent_text(&dims[0]), self.extent_text(&dims[1]));
        let r0 = self.ix(coords[0]);
        let c0 = self.ix(coords[1]);
        let tname = c_ident(&k.params[dst].name);
        // A cast to a 16-bit float is done by the store itself: two floats pack into one word.
        let (inner, pack) = match (&k.exprs[value].kind, dtype) {
            (ExprKind::Cast(DType::BF16, x), DType::BF16) => (*x, Some("cake_pack_bf16x2")),
            (ExprKind::Cast(DType::F16, x), DType::F16) => (*x, Some("cake_pack_f16x2")),
            _ => (value, None),
        };
        if pack.is_none() && dtype != DType::F32 && dtype != DType::I32 {
            self.unsupported(sp, format!("storing {dtype} values is lowered through lm.cast(..., lm.{dtype}) of an f32 accumulator"));
            return;
        }
        let v = self.elem(inner, Site::Tile);
        self.line(&format!(
            "{{  // store {} <- accumulator tile ({})",
            k.params[dst].name,
            self.loc(sp)
        ));
        self.indent += 1;
        self.open_accumulator_pairs(layout, &r0, Some(&c0), &v);
        self.line(&format!("if (row < {rows}) {{"));
        self.indent += 1;
        let ct = storage_type(dtype);
        self.line(&format!(
            "{ct}* out = {tname} + (size_t)row * {cols} + col;"
        ));
        match pack {
            Some(f) => {
                self.line(&format!("const uint32_t both = {f}(v[0], v[1]);"));
                self.line(&format!("if (col + 1 < {cols} && ({cols} % 2) == 0) {{"));
                self.indent += 1;
                self.line("*reinterpret_cast<uint32_t*>(out) = both;  // 4-byte aligned: col and the row pitch are even");
                self.indent -= 1;
                self.line("} else {");
                self.indent += 1;
                self.line(&format!(
                    "if (col < {cols}) out[0] = (uint16_t)(both & 0xFFFFu);"
                ));
                self.line(&format!(
                    "if (col + 1 < {cols}) out[1] = (uint16_t)(both >> 16);"
                ));
                self.indent -= 1;
                self.line("}");
            }
            None => {
                self.line(&format!("if (col < {cols}) out[0] = ({ct})(v[0]);"));
                self.line(&format!("if (col + 1 < {cols}) out[1] = ({ct})(v[1]);"));
            }
        }
        self.indent -= 1;
        self.line("}");
        self.close_accumulator_pairs(layout);
        self.indent -= 1;
        self.line("}");
    }

    /// Open the loops over the register pairs of an accumulator tile: `i` walks the 8-column
    /// groups, `h` the two rows a thread holds (and, for an mma.sync tile, `mt` its 16-row
    /// tiles). Inside, `row` and `col` (offset by `row0` / `col0`) name the pair's first element
    /// and `v[2]` holds its two values, `value` evaluated at `j`. `close_accumulator_pairs` ends
    /// them.
    fn open_accumulator_pairs(
        &mut self,
        layout: FragLayout,
        row0: &str,
        col0: Option<&str>,
        value: &str,
    ) {
        let (n, row0) = match layout {
            FragLayout::MmaAcc { m, n } => {
                self.line("#pragma unroll");
                self.line(&format!("for (int mt = 0; mt < {}; ++mt) {{", m / 16));
                self.indent += 1;
                (n, format!("{row0} + 16 * mt"))
            }
            FragLayout::WgmmaAcc { n } => (n, row0.to_string()),
            _ => unreachable!("accumulator layouts only"),
        };
        self.line("#pragma unroll");
        self.line(&format!("for (int i = 0; i < {}; ++i) {{", n / 8));
        self.indent += 1;
        self.line("#pragma unroll");
        self.line("for (int h = 0; h < 2; ++h) {");
        self.indent += 1;
        self.line(&format!("const int row = {row0} + lane_row + 8 * h;"));
        match col0 {
            Some(c0) => self.line(&format!("const int col = {c0} + lane_col + 8 * i;")),
            None => self.line("const int col = lane_col + 8 * i;"),
        }
        self.line("float v[2];");
        self.line("#pragma unroll");
        self.line(&format!("for (int j = 0; j < 2; ++j) v[j] = {value};"));
    }

    fn close_accumulator_pairs(&mut self, layout: FragLayout) {
        let levels = if matches!(layout, FragLayout::MmaAcc { .. }) {
            3
        } else {
            2
        };
        for _ in 0..levels {
            self.indent -= 1;
            self.line("}");
        }
    }
}

/// How a dtype is held in generated code: 16-bit and 8-bit floats as raw bits, so the file needs
/// no CUDA half/bfloat16 headers.
/// The low-bit mask that holds a column slot in a packed (value, column) key when a thread
/// ranks `slots` columns of a row: ⌈log2 slots⌉ bits of the value's mantissa.
fn packed_slot_mask(slots: u32) -> u32 {
    slots.max(1).next_power_of_two() - 1
}

fn storage_type(d: DType) -> &'static str {
    match d {
        DType::BF16 | DType::F16 => "uint16_t",
        DType::E4M3 | DType::E5M2 | DType::U8 => "uint8_t",
        DType::I8 => "int8_t",
        DType::F32 | DType::TF32 => "float",
        DType::F64 => "double",
        DType::I32 => "int32_t",
        DType::U32 => "uint32_t",
        DType::I64 => "int64_t",
        DType::Bool => "bool",
    }
}

/// A binary operation in CUDA C++: `float` picks the float forms of min and max.
fn c_binary(op: BinOp, a: &str, b: &str, float: bool) -> String {
    match op {
        BinOp::Add => format!("({a} + {b})"),
        BinOp::Sub => format!("({a} - {b})"),
        BinOp::Mul => format!("({a} * {b})"),
        BinOp::Div | BinOp::FloorDiv => format!("({a} / {b})"),
        BinOp::Mod => format!("({a} % {b})"),
        BinOp::CeilDiv => format!("cake_cdiv({a}, {b})"),
        BinOp::Min if float => format!("fminf({a}, {b})"),
        BinOp::Max if float => format!("fmaxf({a}, {b})"),
        BinOp::Min => format!("min({a}, {b})"),
        BinOp::Max => format!("max({a}, {b})"),
        BinOp::And => format!("({a} && {b})"),
        BinOp::Or => format!("({a} || {b})"),
    }
}

/// The reductions inside `e` (each once).
fn reductions_in(k: &Kernel, e: ExprId, out: &mut Vec<ExprId>) {
    match &k.exprs[e].kind {
        ExprKind::Reduce { .. } if !out.contains(&e) => out.push(e),
        ExprKind::Binary(_, a, b) | ExprKind::Cmp(_, a, b) => {
            reductions_in(k, *a, out);
            reductions_in(k, *b, out);
        }
        ExprKind::Select(c, a, b) => {
            reductions_in(k, *c, out);
            reductions_in(k, *a, out);
            reductions_in(k, *b, out);
        }
        ExprKind::Unary(_, a) | ExprKind::Cast(_, a) | ExprKind::Expand { arg: a, .. } => {
            reductions_in(k, *a, out)
        }
        _ => {}
    }
}
