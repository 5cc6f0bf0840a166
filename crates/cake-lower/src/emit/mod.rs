//! The CUDA emitter. One branch per role; inside it, the tile loop, the role's loops and its
//! operations in program order. Mechanical facts come from `cake_ir` analyses: shared-memory
//! offsets from `layout`, arrival counts and transaction bytes from `sync`. Where the MMA
//! families differ, the emitter asks its backend (`crate::mma`), never the target's family.
//!
//! Split by job: this file holds the emitter's state and assembles the file; `body` walks roles,
//! loops and statements and dispatches operations; `sync` emits barriers and TMA loads; `expr`
//! and `reduce` evaluate register expressions and row reductions; `store` writes results out;
//! `params` builds parameters, tensor maps and launch metadata. Whether a construct can be
//! lowered at all is decided by the conditions of `crate::legal`, which the emitter asks at the
//! same points (and the legality pass asks without emitting); register layouts come from the
//! pass's `Plan`.

use crate::launch::*;
use crate::legal::{self, Plan, Reductions, Scope};
use crate::mma::{MmaBackend, MmaState};
use crate::prelude;
use crate::{Lowered, Unsupported};
use cake_diag::{SourceFile, Span};
use cake_ir::layout::SmemLayout;
use cake_ir::sync::{tma_bytes, BarrierFacts};
use cake_ir::*;
use cake_target::{Feature, Target};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

mod body;
mod copy;
mod dynamic;
mod expr;
mod params;
mod reduce;
mod rows;
mod state;
mod store;
mod stream;
mod sync;
pub(crate) mod timeline;
mod tmem;

pub(crate) use crate::legal::{FragLayout, Site};
pub(crate) use body::RangeLoop;

/// Slack added to dynamic shared memory so the base can be rounded up to 1024 bytes (the
/// 128B-swizzle repeat) whatever alignment the driver gives.
pub(crate) const SMEM_ALIGN_SLACK: u64 = 1024;

pub(crate) struct Emitter<'a> {
    pub(crate) k: &'a Kernel,
    pub(crate) file: &'a SourceFile,
    pub(crate) target: &'a Target,
    /// What the compile session derived once for this kernel and target.
    pub(crate) kf: &'a KernelFacts,
    pub(crate) layout: &'a SmemLayout,
    pub(crate) facts: &'a [BarrierFacts],
    /// Register layouts of the fragments, from the legality pass's plan.
    pub(crate) frag_layouts: &'a HashMap<FragId, FragLayout>,
    /// Layouts of tile loads that row reductions read without a fragment (the same plan's).
    pub(crate) load_layouts: &'a HashMap<ExprId, FragLayout>,
    pub(crate) tmaps: Vec<(ParamId, Vec<u32>, u32)>,
    /// The MMA family's lowering, picked once from the target, and what it records.
    pub(crate) backend: &'static dyn MmaBackend,
    pub(crate) mma: MmaState,
    /// Prelude sections the body turned out to need beyond the target's (shared-memory
    /// atomics and fills; TMA stores of rank other than 2).
    pub(crate) needs_shared_ops: bool,
    /// Whether a transposed `view.store` writes through `stmatrix` (`prelude::STMATRIX`).
    pub(crate) needs_stmatrix: bool,
    /// Whether the body evaluates `lm.exp2` (the prelude then defines `cake_ex2`).
    pub(crate) needs_ex2: bool,
    /// Whether the body issues `cp.async` copies (the prelude then defines them).
    pub(crate) needs_cp_async: bool,
    /// Whether the current role's first wait already carries its timeline stamp.
    pub(crate) stamped_first_wait: bool,
    /// Swizzle modes whose address function the generated code uses (`smem_addr`).
    pub(crate) swizzles: BTreeSet<u32>,
    /// Accumulator writes emitted while another wgmma group was in flight (`Lowered`).
    pub(crate) in_flight_writes: Vec<crate::InFlightWrite>,
    /// TMA stores other than the plain 2-D one: (rank, adds into the tensor).
    pub(crate) tma_store_ranks: BTreeSet<(usize, bool)>,
    /// TMA loads whose helper the fixed prelude lacks: rank 4 or 5 (ranks 2 and 3 are always
    /// there), or with an L2 eviction priority; and whether multicast.
    pub(crate) tma_load_ranks: BTreeSet<(usize, bool, Option<cake_ir::Evict>)>,
    pub(crate) errors: Vec<Unsupported>,
    pub(crate) out: String,
    pub(crate) indent: usize,
    /// Role whose branch is being emitted, and whether it runs on one thread per replica.
    pub(crate) role: Option<(RoleId, bool)>,
    /// The operation statement being emitted. A compile-time `range` unrolls one source line
    /// into several statements, so statements, not spans, tell them apart.
    pub(crate) op_stmt: Option<StmtId>,
    /// Pipelined loops enclosing the current statement: (loop, pipeline).
    pub(crate) pipes: Vec<(LoopId, PipelineId)>,
    /// While a deferred MMA is emitted (`defer=True`), its pipeline: the stage and phase it uses
    /// are the previous iteration's (`{pipe}_prev_stage`, `{pipe}_prev_phase`).
    pub(crate) deferred_pipe: Option<PipelineId>,
    /// Depth of the current role's `with` regions around the statement being emitted.
    pub(crate) indent_role_depth: u32,
    /// Row reductions already computed in the current block, by array name.
    pub(crate) reductions: Reductions<String>,
    pub(crate) reduction_counter: u32,
    /// Per-column vector loads hoisted out of a row loop: expression → local name.
    pub(crate) col_loads: HashMap<ExprId, String>,
    /// Per-column vector loads issued in the current loop iteration ahead of its reductions:
    /// expression → register array (`[i][j]`, the thread's columns).
    pub(crate) prefetched: HashMap<ExprId, String>,
    /// The loop body whose column loads the next wgmma wait issues first (set while the
    /// iteration's last MMA is emitted: the loads then overlap it).
    pub(crate) prefetch_at_wait: Option<Block>,
    /// The register array currently standing for a double-buffered fragment.
    pub(crate) frag_alias: HashMap<FragId, String>,
    /// Loads of the row-layout value being emitted, read into registers before it: expression
    /// → the element's text.
    pub(crate) row_loads: HashMap<ExprId, String>,
    /// A peer CTA's tile (`view.load(cta=r)`) read into registers before the statement that
    /// uses it: expression → register array (`[4 * i + 2 * h + j]`, the thread's elements).
    pub(crate) peer_loads: HashMap<ExprId, String>,
    /// Warp votes computed for the condition being emitted: expression → its `bool` variable.
    pub(crate) votes: HashMap<ExprId, String>,
    /// How many branches on a warp vote enclose the statement being emitted.
    pub(crate) warp_branches: u32,
    /// Whether the body uses row-layout loads and stores (the prelude then defines them).
    pub(crate) needs_row_ops: bool,
    /// Whether a row-layout statement reads a shared view (`prelude::ROW_SHARED`).
    pub(crate) needs_row_shared: bool,
    /// Whether a row-layout store converts to FP8 (sm_89 and later).
    pub(crate) needs_row_fp8: bool,
    /// The L2 eviction priorities of row-layout loads and stores (`evict=`): each brings its
    /// hinted helpers into the prelude.
    pub(crate) row_hints: std::collections::BTreeSet<cake_ir::Evict>,
    /// `lm.scatter_add` is used: the global atomic-add helpers.
    pub(crate) needs_row_red: bool,
    /// The launch's workspace (`cake_state`): the dynamic tile loop's counters and the stream-K
    /// fix-ups' partials and flags, laid out before the body is emitted.
    pub(crate) state: state::StateLayout,
}

/// A schedule's name as a C identifier standing on its own (a fragment, a tensor, a scalar): the
/// C keywords and the lowering's own locals get a trailing `_`.
pub(crate) fn c_ident(name: &str) -> String {
    ident(name, true)
}

/// A schedule's name as the stem of a C identifier the lowering affixes (`dim_N`, the loop
/// variable `j_3`), which cannot meet an element loop's index: only the C keywords are renamed.
pub(crate) fn c_ident_stem(name: &str) -> String {
    ident(name, false)
}

fn ident(name: &str, alone: bool) -> String {
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
    // The element loops' indices, in scope wherever a value's text is emitted.
    const LOCALS: &[&str] = &["v", "c", "r", "lc", "row", "i", "h", "j", "mt", "e"];
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
        || (alone && LOCALS.contains(&clean.as_str()))
        || clean.starts_with("cake_")
        || clean.starts_with(|c: char| c.is_ascii_digit())
    {
        format!("{clean}_")
    } else {
        clean
    }
}

/// Text (generated code with names and file names in its comments) made safe for one line of
/// the CUDA file: control characters (newlines above all), Unicode line separators and bidi
/// controls become `<U+XXXX>`, as do the `/` of `*/` and a backslash or `??/` that would end the
/// line (and continue it, or the comment, onto the next). Identity for every line the lowering
/// writes itself: names enter code only through [`c_ident`].
pub(crate) fn source_safe(text: &str) -> std::borrow::Cow<'_, str> {
    fn unsafe_char(c: char) -> bool {
        c.is_control()
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{feff}'
            )
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
    }
    let ends_badly = text.ends_with('\\') || text.ends_with("??/");
    if !ends_badly && !text.contains("*/") && !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 16);
    for (i, &c) in chars.iter().enumerate() {
        let last = i + 1 == chars.len();
        let escape = unsafe_char(c)
            || (c == '/' && i > 0 && chars[i - 1] == '*')
            || (last && (c == '\\' || (c == '/' && text.ends_with("??/"))));
        if escape {
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(
        k: &'a Kernel,
        kf: &'a KernelFacts,
        file: &'a SourceFile,
        backend: &'static dyn MmaBackend,
        plan: &'a Plan,
    ) -> Self {
        Emitter {
            k,
            file,
            target: kf.target,
            kf,
            backend,
            mma: MmaState::default(),
            layout: &kf.layout,
            facts: &kf.barriers,
            frag_layouts: &plan.frag_layouts,
            load_layouts: &plan.load_layouts,
            tmaps: Vec::new(),
            needs_shared_ops: false,
            needs_stmatrix: false,
            needs_cp_async: false,
            stamped_first_wait: false,
            swizzles: BTreeSet::new(),
            needs_ex2: false,
            in_flight_writes: Vec::new(),
            tma_store_ranks: BTreeSet::new(),
            tma_load_ranks: BTreeSet::new(),
            errors: plan.errors.clone(),
            out: String::new(),
            indent: 0,
            role: None,
            op_stmt: None,
            pipes: Vec::new(),
            deferred_pipe: None,
            indent_role_depth: 0,
            reductions: Reductions::default(),
            reduction_counter: 0,
            col_loads: HashMap::new(),
            prefetched: HashMap::new(),
            prefetch_at_wait: None,
            frag_alias: HashMap::new(),
            row_loads: HashMap::new(),
            peer_loads: HashMap::new(),
            votes: HashMap::new(),
            warp_branches: 0,
            needs_row_ops: false,
            needs_row_shared: false,
            needs_row_fp8: false,
            row_hints: Default::default(),
            needs_row_red: false,
            state: state::StateLayout::default(),
        }
    }

    /// Records a not-lowered finding (once). The emitter asks the conditions of `crate::legal`
    /// the legality pass asks, so a kernel that reaches emission has none; this is the defensive
    /// copy of the pass's report.
    pub(crate) fn unsupported(&mut self, span: Span, message: impl Into<String>) {
        legal::record(&mut self.errors, span, message);
    }

    /// Records what evaluating an expression here cannot do.
    pub(crate) fn report(&mut self, problems: Vec<(Span, String)>) {
        for (sp, m) in problems {
            self.unsupported(sp, m);
        }
    }

    /// The operations of `role`, in program order.
    pub(crate) fn role_ops(&self, role: RoleId) -> impl Iterator<Item = &OpSite> + '_ {
        legal::role_ops(self.kf, role)
    }

    /// One line of the body. Names and file names reach it inside comments, so it goes through
    /// [`source_safe`]: no line a name writes can become a directive or swallow the next one.
    pub(crate) fn line(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(&source_safe(text));
        self.out.push('\n');
    }

    pub(crate) fn loc(&self, span: Span) -> String {
        format!("{}:{}", self.file_name(), self.file.line_of(span.start))
    }

    /// `open` (a line ending in `{`), then `body` one level deeper, then the closing `}`: the one
    /// builder of every braced block — loops, guards, scopes.
    pub(crate) fn braced(&mut self, open: &str, body: impl FnOnce(&mut Self)) {
        self.line(open);
        self.nested(body);
        self.line("}");
    }

    /// `open` (a line ending in `{`), `then` one level deeper, `} else {`, `otherwise` one level
    /// deeper, and the closing `}`.
    pub(crate) fn braced_else(
        &mut self,
        open: &str,
        then: impl FnOnce(&mut Self),
        otherwise: impl FnOnce(&mut Self),
    ) {
        self.line(open);
        self.nested(then);
        self.line("} else {");
        self.nested(otherwise);
        self.line("}");
    }

    /// `body` one indentation level deeper: the one place the indentation changes, for the
    /// block builders above.
    fn nested(&mut self, body: impl FnOnce(&mut Self)) {
        self.indent += 1;
        body(self);
        self.indent -= 1;
    }

    /// `#pragma unroll` and a braced loop (`header` ends in `{`).
    pub(crate) fn unrolled(&mut self, header: &str, body: impl FnOnce(&mut Self)) {
        self.line("#pragma unroll");
        self.braced(header, body);
    }

    /// Run `body` on one thread of the current role's replica: as it is in an issue-only role
    /// (whose body one thread runs), under `if (<role>_thread == 0)` otherwise.
    pub(crate) fn on_one_thread(&mut self, body: impl FnOnce(&mut Self)) {
        let (role, issue_only) = self.role.expect("inside a role");
        if issue_only {
            body(self);
        } else {
            let guard = format!("if ({}_thread == 0) {{", c_ident(&self.k.roles[role].name));
            self.braced(&guard, body);
        }
    }

    /// The stage and phase of pipeline `p` at its iteration `it` (a C expression).
    pub(crate) fn stage_lines(&mut self, p: PipelineId, it: &str) {
        let pipe = &self.k.pipelines[p];
        let (pn, stages) = (c_ident(&pipe.name), pipe.stages);
        self.line(&format!("const uint32_t {pn}_stage = {it} % {stages};"));
        self.line(&format!(
            "const uint32_t {pn}_phase = ({it} / {stages}) & 1;"
        ));
    }

    pub(crate) fn run(mut self) -> Result<Lowered, Vec<Unsupported>> {
        let backend = self.backend;
        self.collect_tensor_maps();
        self.state = self.state_layout();
        let args = self.args();
        let symbol = format!("cake_{}", c_ident_stem(&self.k.name));
        let body = self.kernel_body();
        if !self.errors.is_empty() {
            return Err(self.errors);
        }
        let mut cuda = String::new();
        let _ = writeln!(cuda, "// Generated by cake {} from {} for {}. Do not edit: change the schedule and run `cake lower`.", env!("CARGO_PKG_VERSION"), self.file_name(), self.target.name);
        cuda.push_str(prelude::COMMON);
        cuda.push_str(timeline::TIMELINE_OPS);
        let points = timeline::timeline_points(self.k);
        let _ = writeln!(
            cuda,
            "#define CAKE_TIMELINE_SLOTS {}  // timeline: words per CTA ({})",
            points.len(),
            source_safe(&points.join(", "))
        );
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
        for (rank, add) in &self.tma_store_ranks {
            cuda.push_str(&prelude::tma_store_fn(*rank, *add));
        }
        for (rank, multicast, evict) in &self.tma_load_ranks {
            cuda.push_str(&prelude::tma_load_fn(*rank, *multicast, *evict));
        }
        if self.needs_stmatrix {
            cuda.push_str(prelude::STMATRIX);
        }
        if self.needs_shared_ops {
            cuda.push_str(prelude::SHARED_OPS);
        }
        if self.needs_ex2 {
            cuda.push_str(prelude::EX2);
        }
        if self.needs_cp_async {
            cuda.push_str(copy::CP_ASYNC);
        }
        for s in &self.swizzles {
            cuda.push_str(&copy::swizzle_fn(*s));
        }
        if self
            .k
            .roles
            .iter()
            .any(|(r, _)| legal::role_takes_turns(self.kf, r))
        {
            cuda.push_str(prelude::TURNS);
        }
        if self.needs_row_ops {
            cuda.push_str(prelude::ROW_OPS);
        }
        if self.needs_row_shared {
            cuda.push_str(prelude::ROW_SHARED);
        }
        if self.needs_row_fp8 {
            cuda.push_str(prelude::ROW_FP8);
        }
        for evict in &self.row_hints {
            cuda.push_str(&prelude::row_hint_fns(*evict, self.needs_row_fp8));
        }
        if self.needs_row_red {
            cuda.push_str(prelude::ROW_RED);
        }
        backend.prelude(&self, &mut cuda);
        if self.k.dynamic_tiles() {
            cuda.push_str(dynamic::DYNAMIC_OPS);
        }
        if self
            .kf
            .ops
            .iter()
            .any(|s| matches!(s.op, Op::StreamFixup { .. }))
        {
            cuda.push_str(stream::STREAM_OPS);
        }
        if !self.state.is_empty() {
            cuda.push_str(&self.state_comment());
        }
        let threads = self.k.block_threads();
        let _ = writeln!(
            cuda,
            "\nextern \"C\" __global__ void __launch_bounds__({threads}, {}) {symbol}(",
            self.k.ctas_per_sm()
        );
        let params: Vec<String> = args.iter().map(|a| self.param_decl(a)).collect();
        if params.is_empty() {
            let _ = writeln!(cuda, "    CAKE_TIMELINE_ONLY_PARAMS) {{");
        } else {
            let _ = writeln!(
                cuda,
                "    {} CAKE_TIMELINE_PARAMS) {{",
                params.join(",\n    ")
            );
        }
        cuda.push_str(&body);
        cuda.push_str("}\n");
        let launch = self.launch_meta(symbol.clone(), args);
        // Once each: unrolled and double-buffered code emits a statement more than once.
        let mut in_flight_writes: Vec<crate::InFlightWrite> = Vec::new();
        for w in std::mem::take(&mut self.in_flight_writes) {
            if !in_flight_writes.contains(&w) {
                in_flight_writes.push(w);
            }
        }
        Ok(Lowered {
            symbol,
            cuda,
            launch,
            in_flight_writes,
        })
    }

    /// The schedule's file name (without directories) as comments show it.
    pub(crate) fn file_name(&self) -> String {
        let name = std::path::Path::new(&self.file.name)
            .file_name()
            .map_or(self.file.name.clone(), |n| n.to_string_lossy().into_owned());
        source_safe(&name).into_owned()
    }

    /// CTAs per cluster when the kernel runs in clusters (1 otherwise).
    pub(crate) fn cluster_ctas(&self) -> u32 {
        legal::cluster_ctas(self.k, self.target)
    }

    pub(crate) fn clustered(&self) -> bool {
        self.cluster_ctas() > 1
    }

    /// The number of tiles the tile loop walks along `axis`: clusters of tiles on axis 0.
    pub(crate) fn tile_rows(&self, axis: usize) -> String {
        if axis == 0 && self.clustered() {
            "cluster_rows".into()
        } else {
            format!("tiles_{axis}")
        }
    }

    /// The stage of `v` as C text: its explicit `.stage`, else the innermost pipelined loop's.
    pub(crate) fn view_stage_text(&self, v: &ViewRef) -> String {
        if let Some(st) = v.stage {
            return self.ix_text(st);
        }
        if self.k.views[v.view].stages <= 1 {
            return "0".into();
        }
        match self.pipes.last() {
            Some((_, p)) => self.pipe_var(*p, "stage"),
            None => "0".into(),
        }
    }

    /// The C name of pipeline `p`'s current `stage` or `phase`: the previous iteration's while
    /// a deferred MMA of it is emitted.
    pub(crate) fn pipe_var(&self, p: PipelineId, what: &str) -> String {
        let pn = c_ident(&self.k.pipelines[p].name);
        if self.deferred_pipe == Some(p) {
            format!("{pn}_prev_{what}")
        } else {
            format!("{pn}_{what}")
        }
    }

    pub(crate) fn view_base(&mut self, v: &ViewRef) -> String {
        if let Some(st) = v.stage {
            self.ix(st); // its checks
        }
        self.view_base_text(v)
    }

    /// The shared-memory address of `v`'s stage as C text (see [`Self::view_stage_text`]).
    pub(crate) fn view_base_text(&self, v: &ViewRef) -> String {
        let stride = self.layout.view(v.view).stage_stride;
        let stage = self.view_stage_text(v);
        let name = c_ident(&self.k.views[v.view].name);
        if stage == "0" {
            name
        } else {
            format!("({name} + {stride} * {stage})")
        }
    }
}

impl Scope for Emitter<'_> {
    fn kernel(&self) -> &Kernel {
        self.k
    }
    fn layout(&self, f: FragId) -> Option<FragLayout> {
        self.frag_layouts.get(&f).copied()
    }
    fn load_layout(&self, e: ExprId) -> Option<FragLayout> {
        self.load_layouts.get(&e).copied()
    }
    fn in_pipeline(&self, p: PipelineId) -> bool {
        self.pipes.iter().any(|(_, q)| *q == p)
    }
    fn reduced(&self, e: ExprId) -> bool {
        self.reductions.contains(e)
    }
    fn col_loaded(&self, e: ExprId) -> bool {
        self.col_loads.contains_key(&e) || self.row_loads.contains_key(&e)
    }
}

/// The packing helper of a 16-bit float type: two elements into one 32-bit word.
pub(crate) fn pack_fn(d: DType) -> &'static str {
    match d {
        DType::BF16 => "cake_pack_bf16x2",
        _ => "cake_pack_f16x2",
    }
}

pub(crate) fn storage_type(d: DType) -> &'static str {
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
