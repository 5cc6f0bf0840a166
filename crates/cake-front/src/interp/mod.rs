//! The interpreter's state and the narrow interface the other layers use: findings, resource
//! names, scopes, and emitting IR. Statements and control flow are in [`stmt`], the only
//! module that sees the state's fields.
//!
//! Layering, each using only what is below it: `lib` → `interp::stmt` (statements, loops,
//! helper inlining) → `expr` (expressions, name and attribute resolution) → `builtins`
//! (handlers) → `typing` (conversions and operators) → this interface → `vocab`, `value`,
//! `args`. The one call upward is `expr` inlining a helper through `call_helper`, because a
//! helper's body is statements.

mod stmt;

use crate::codes;
use crate::limits::{MAX_EVAL_DEPTH, MAX_EXPR_DEPTH, WORK_BUDGET};
use crate::value::Value;
use cake_diag::{Finding, Findings, SourceFile, Span};
use cake_ir::*;
use ruff_python_ast as ast;
use ruff_text_size::TextRange;
use std::collections::{HashMap, HashSet};

/// Marker: a finding has been pushed for this failure.
#[derive(Debug)]
pub struct Reported;
pub type R<T> = Result<T, Reported>;

pub fn span(r: TextRange) -> Span {
    Span::new(r.start().to_u32(), r.end().to_u32())
}

struct Frame {
    vars: HashMap<String, Value>,
    /// Helper frames may `return`; the kernel frame may not.
    is_helper: bool,
    /// Names whose value reads a fragment that was overwritten after they were bound: using them
    /// would see the new contents, where Python would see the old.
    stale: HashMap<String, (FragId, Span)>,
    /// The run-time loops whose bodies are being interpreted in this frame, innermost last.
    loop_logs: Vec<LoopLog>,
}

/// What a run-time loop's body did with the names bound before the loop. The body is
/// interpreted once but runs many times: a name bound before the loop to an expression that
/// reads a fragment, read in the body and the fragment overwritten later in the body, reads
/// the overwritten fragment from the second iteration on, where Python reads the value from
/// before the loop.
#[derive(Default)]
struct LoopLog {
    /// The frame's names when the loop began.
    before: HashMap<String, Value>,
    /// Names bound in the body so far: reads of them see the body's binding, not `before`.
    rebound: HashSet<String>,
    /// Reads of names bound before the loop, in source order.
    reads: Vec<(String, Span)>,
    /// Fragments overwritten in the body (including in helpers it calls).
    overwrites: Vec<(FragId, Span)>,
}

/// One schedule being interpreted. Only `k`, the kernel under construction, is open to the
/// layers below; everything else is the statement layer's (`stmt`, a child module) and is
/// reached from elsewhere through the methods of this file.
pub struct Interp<'a> {
    file: &'a SourceFile,
    findings: &'a mut Findings,
    pub k: Kernel,
    globals: &'a HashMap<String, Value>,
    funcs: &'a HashMap<String, &'a ast::StmtFunctionDef>,
    frames: Vec<Frame>,
    blocks: Vec<Block>,
    role: Option<(RoleId, Span)>,
    /// Loops that exist at run time (IR loops), innermost last.
    loops: Vec<LoopId>,
    /// Nesting of run-time `if`s; a helper may not `return` from inside one.
    runtime_ifs: u32,
    tiles_loop: Option<LoopId>,
    /// Name given to the resource the current assignment declares.
    pending_name: Option<String>,
    counters: HashMap<&'static str, u32>,
    /// Expanded tree size of every expression, by handle (see `mk`).
    tree_sizes: Vec<u64>,
    /// Per expression, the fragments it reads as a bit set (see [`frag_bit`]): the loop-staleness
    /// checks ask this for every name in scope at every fragment write.
    frag_reads: Vec<u64>,
    reported_tree_size: bool,
    /// Inside the body of `with` on a role whose declaration failed.
    in_poisoned_role: bool,
    /// Span of the declaration call being evaluated (for duplicate-name findings).
    current_decl_span: Span,
    /// Reads already reported as stale from a loop's second iteration (an inner and an outer
    /// loop both see them).
    reported_loop_reads: HashSet<Span>,
    /// Expressions and statements being interpreted, through inlined helpers.
    depth: u32,
    /// Work done so far in the file (see [`WORK_BUDGET`]); once over, nothing more is evaluated.
    work: u64,
    exhausted: bool,
    /// Nesting depth of every expression, by handle (see `mk`).
    expr_depths: Vec<u32>,
    reported_expr_depth: bool,
    /// Every name a resource was given, so a duplicate is found without scanning the arenas.
    resource_names: HashSet<String>,
}

/// Largest expanded expression tree the front-end accepts.
const MAX_TREE_SIZE: u64 = 1 << 16;

impl<'a> Interp<'a> {
    pub fn new(
        file: &'a SourceFile,
        findings: &'a mut Findings,
        globals: &'a HashMap<String, Value>,
        funcs: &'a HashMap<String, &'a ast::StmtFunctionDef>,
    ) -> Self {
        Interp {
            file,
            findings,
            k: Kernel::default(),
            globals,
            funcs,
            frames: vec![Frame {
                vars: HashMap::new(),
                is_helper: false,
                stale: HashMap::new(),
                loop_logs: Vec::new(),
            }],
            blocks: vec![Vec::new()],
            role: None,
            loops: Vec::new(),
            runtime_ifs: 0,
            tiles_loop: None,
            pending_name: None,
            counters: HashMap::new(),
            tree_sizes: Vec::new(),
            frag_reads: Vec::new(),
            reported_tree_size: false,
            in_poisoned_role: false,
            current_decl_span: Span::default(),
            reported_loop_reads: HashSet::new(),
            depth: 0,
            work: 0,
            exhausted: false,
            expr_depths: Vec::new(),
            reported_expr_depth: false,
            resource_names: HashSet::new(),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Limits

    /// The work done so far, to carry into the next interpreter of the same file.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Starts this interpreter with `work` already done in the file.
    pub fn with_work(mut self, work: u64) -> Self {
        self.work = work;
        self.exhausted = work > WORK_BUDGET;
        self
    }

    /// Whether the file's work budget is spent.
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// Counts `units` of work done at `sp`; past the budget, reports it once and fails.
    pub fn charge(&mut self, units: u64, sp: Span) -> R<()> {
        if self.exhausted {
            return Err(Reported);
        }
        self.work = self.work.saturating_add(units);
        if self.work > WORK_BUDGET {
            self.exhausted = true;
            let f = Finding::new(
                &codes::EVALUATION_BUDGET,
                sp,
                format!("compile-time evaluation stops here: the file needs more than {WORK_BUDGET} units of work (unrolled iterations, inlined calls, IR built)"),
            )
            .help("unroll less: use `lm.range(...)` for a loop that can run at run time, and do not nest unrolled loops or recursive helpers");
            return Err(self.report(f));
        }
        Ok(())
    }

    /// One more level of evaluation at `sp`; pair with [`Self::leave`]. Fails once the budget is
    /// spent, and past [`MAX_EVAL_DEPTH`].
    pub fn enter(&mut self, sp: Span) -> R<()> {
        // Every expression and statement interpreted is work.
        self.charge(1, sp)?;
        if self.depth >= MAX_EVAL_DEPTH {
            let f = Finding::new(
                &codes::NESTING_TOO_DEEP,
                sp,
                format!("evaluation nests more than {MAX_EVAL_DEPTH} levels deep here (expressions and statements, through inlined helpers)"),
            )
            .help("inline fewer helpers into each other, or split deep expressions over several assignments");
            return Err(self.report(f));
        }
        self.depth += 1;
        Ok(())
    }

    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    // -----------------------------------------------------------------------------------------
    // Findings

    pub fn report(&mut self, f: Finding) -> Reported {
        self.findings.push(f);
        Reported
    }

    pub fn err<T>(
        &mut self,
        code: &'static cake_diag::CodeInfo,
        span: Span,
        msg: impl Into<String>,
    ) -> R<T> {
        Err(self.report(Finding::new(code, span, msg)))
    }

    /// A resource name: the assignment target if there is one, else `<kind><n>`.
    pub fn take_name(&mut self, kind: &'static str) -> String {
        let name = self.pick_name(kind);
        self.resource_names.insert(name.clone());
        name
    }

    fn pick_name(&mut self, kind: &'static str) -> String {
        if let Some(n) = self.pending_name.take() {
            // Two resources under one name would be indistinguishable in findings, the IR and
            // the generated code. The set answers the common case without scanning the arenas.
            let seen = self.resource_names.contains(&n);
            if let Some(prev) = seen.then(|| self.resource_span(&n)).flatten() {
                let f = Finding::new(
                    &codes::DUPLICATE_DEFINITION,
                    self.current_decl_span,
                    format!("`{n}` already names a resource"),
                )
                .label(prev, "first declared here")
                .help(
                    "give each resource its own name (declarations inside unrolled loops repeat)",
                );
                self.report(f);
                let c = self.counters.entry(kind).or_insert(0);
                *c += 1;
                return format!("{n}_{c}");
            }
            return n;
        }
        let n = self.counters.entry(kind).or_insert(0);
        *n += 1;
        format!("{kind}{n}")
    }

    /// Where the resource called `name` was declared, if one is.
    fn resource_span(&self, name: &str) -> Option<Span> {
        let k = &self.k;
        macro_rules! find {
            ($arena:expr) => {
                if let Some((h, _)) = $arena.iter().find(|(_, r)| r.name == name) {
                    return Some($arena.span(h));
                }
            };
        }
        find!(k.pools);
        find!(k.views);
        find!(k.tmems);
        find!(k.roles);
        find!(k.fragments);
        find!(k.pipelines);
        find!(k.barriers);
        find!(k.named_barriers);
        None
    }

    // -----------------------------------------------------------------------------------------
    // Scopes

    pub fn lookup(&self, name: &str) -> Option<Value> {
        if let Some(v) = self.frames.last().and_then(|f| f.vars.get(name)) {
            return Some(v.clone());
        }
        // Helpers see module globals only; the kernel frame sees its own names and globals.
        self.globals
            .get(name)
            .cloned()
            .or_else(|| self.funcs.get(name).map(|_| Value::Func(name.to_string())))
    }

    pub fn bind(&mut self, name: &str, v: Value) {
        let frame = self.frames.last_mut().expect("a frame");
        frame.stale.remove(name);
        for log in &mut frame.loop_logs {
            log.rebound.insert(name.to_string());
        }
        frame.vars.insert(name.to_string(), v);
    }

    /// Records a read of `name` for the run-time loops around it (see [`LoopLog`]).
    pub fn note_read(&mut self, name: &str, at: Span) {
        let frame = self.frames.last_mut().expect("a frame");
        for log in &mut frame.loop_logs {
            if !log.rebound.contains(name) && log.before.contains_key(name) {
                log.reads.push((name.to_string(), at));
            }
        }
    }

    /// The stale entry of `name` in the current frame, if any.
    pub fn stale(&self, name: &str) -> Option<(FragId, Span)> {
        self.frames.last().and_then(|f| f.stale.get(name).copied())
    }

    pub fn visible_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .frames
            .last()
            .map(|f| f.vars.keys().cloned().collect())
            .unwrap_or_default();
        names.extend(self.globals.keys().cloned());
        names.extend(self.funcs.keys().cloned());
        names.sort();
        names
    }

    // -----------------------------------------------------------------------------------------
    // Emitting IR

    pub fn emit(&mut self, stmt: Stmt, span: Span) -> StmtId {
        // Evaluation stops at the next step once this is over budget.
        let _ = self.charge(1, span);
        let id = self.k.stmts.push(stmt, span);
        self.blocks.last_mut().expect("a block").push(id);
        id
    }

    pub fn emit_op(&mut self, op: Op, span: Span) -> R<()> {
        if self.role.is_none() && self.in_poisoned_role {
            return Err(Reported);
        }
        if self.role.is_none() {
            return self
                .err(
                    &codes::MISPLACED_OPERATION,
                    span,
                    "operations must be issued inside a role region",
                )
                .inspect_err(|_r| {
                    if let Some(last) = self.findings_last_mut() {
                        last.help = Some(
                            "wrap it in `with <role>:` so the compiler knows which warps run it"
                                .into(),
                        );
                    }
                });
        }
        self.emit(Stmt::Op(op), span);
        Ok(())
    }

    /// Move the statements interpreted so far into the kernel body.
    pub fn finish_body(&mut self) {
        self.k.body = std::mem::take(&mut self.blocks[0]);
    }

    fn findings_last_mut(&mut self) -> Option<&mut Finding> {
        self.findings.last_mut()
    }

    pub fn mk(&mut self, kind: ExprKind, ty: Ty, span: Span) -> ExprId {
        // Names substitute their expressions, so a value reused through a chain of names grows
        // the expanded tree exponentially; everything that prints or lowers expressions walks it
        // expanded. Bound it where it is built.
        let _ = self.charge(1, span);
        let mut children: u64 = 0;
        let mut depth: u32 = 0;
        let mut reads = match &kind {
            ExprKind::Frag(f) => frag_bit(*f),
            _ => 0,
        };
        kind.for_each_child(|c| {
            children = children.saturating_add(self.tree_size(c));
            depth = depth.max(self.expr_depths.get(c.index()).copied().unwrap_or(0));
            reads |= self.frag_mask(c);
        });
        let size = (children + 1).min(u64::MAX / 4);
        let depth = depth + 1;
        let id = self.k.exprs.push(Expr { kind, ty }, span);
        self.tree_sizes.push(size);
        self.expr_depths.push(depth);
        self.frag_reads.push(reads);
        if depth > MAX_EXPR_DEPTH && !self.reported_expr_depth {
            self.reported_expr_depth = true;
            self.report(
                Finding::new(&codes::NESTING_TOO_DEEP, span, format!("this expression nests more than {MAX_EXPR_DEPTH} levels deep"))
                    .note("a name stands for its whole expression, so `x = x + 1` repeated nests it one level deeper each time")
                    .help("keep intermediate values in a fragment (`frag[:] = value`) instead of in names"),
            );
        }
        if size > MAX_TREE_SIZE && !self.reported_tree_size {
            self.reported_tree_size = true;
            self.report(
                Finding::new(&codes::EXPRESSION_TOO_LARGE, span, format!("this expression expands to more than {MAX_TREE_SIZE} terms"))
                    .note("a name stands for its whole expression, so reusing a value through a chain of names doubles it each time")
                    .help("keep intermediate values in a fragment (`frag[:] = value`) instead of in names"),
            );
        }
        id
    }

    fn tree_size(&self, e: ExprId) -> u64 {
        self.tree_sizes.get(e.index()).copied().unwrap_or(1)
    }

    fn frag_mask(&self, e: ExprId) -> u64 {
        self.frag_reads.get(e.index()).copied().unwrap_or(u64::MAX)
    }

    /// Whether `v` is computed from the contents of fragment `frag`.
    pub fn value_reads_fragment(&self, v: &Value, frag: FragId) -> bool {
        match v {
            Value::Expr(e) => {
                let hit = self.frag_mask(*e) & frag_bit(frag) != 0;
                // Bits below 63 are exact; bit 63 only says some fragment from 63 on is read.
                hit && (frag.index() < 63 || self.k.expr_reads_fragment(*e, frag))
            }
            Value::Tuple(items) => items.iter().any(|i| self.value_reads_fragment(i, frag)),
            _ => false,
        }
    }

    /// Attaches `help` to the finding just reported.
    pub fn help_last(&mut self, r: Reported, help: &str) -> Reported {
        if let Some(last) = self.findings.last_mut() {
            last.help = Some(help.to_string());
        }
        r
    }

    /// The line of a byte offset in the file, for messages.
    pub fn line_of(&self, at: u32) -> u32 {
        self.file.line_of(at)
    }

    /// The name of the resource the current assignment declares, taken so that only one call
    /// uses it; give it back with [`Self::set_pending_name`].
    pub fn take_pending_name(&mut self) -> Option<String> {
        self.pending_name.take()
    }

    pub fn set_pending_name(&mut self, name: Option<String>) {
        self.pending_name = name;
    }

    /// The role region being interpreted; `what` must be inside one.
    pub fn current_role(&mut self, sp: Span, what: &str) -> R<RoleId> {
        match self.role {
            Some((r, _)) => Ok(r),
            None if self.in_poisoned_role => Err(Reported),
            None => self
                .err(
                    &codes::MISPLACED_OPERATION,
                    sp,
                    format!("{what} must be inside a role region"),
                )
                .map_err(|r| self.help_last(r, "wrap it in `with <role>:`")),
        }
    }

    /// Whether a run-time loop over pipeline `p` encloses the code being interpreted.
    pub fn in_loop_over(&self, p: PipelineId) -> bool {
        self.loops.iter().any(|l| {
            matches!(
                self.k.loops[*l].kind,
                LoopKind::Range { pipeline: Some(q), .. } if q == p
            )
        })
    }

    /// Whether the schedule's body declared its tile loop.
    pub fn has_tile_loop(&self) -> bool {
        self.tiles_loop.is_some()
    }

    /// Whether the statement being interpreted sits directly in the body of a stream-K tile
    /// loop (`lm.tiles(..., stream=KB)`), inside no other loop.
    pub(crate) fn directly_in_stream_tiles(&self) -> bool {
        self.loops.len() == 1
            && self.tiles_loop == self.loops.first().copied()
            && self.tiles_loop.is_some_and(|l| {
                matches!(
                    self.k.loops[l].kind,
                    LoopKind::Tiles {
                        stream: Some(_),
                        ..
                    }
                )
            })
    }

    /// The names bound at the top level (module-level constants are interpreted as one).
    pub fn into_top_level_names(mut self) -> HashMap<String, Value> {
        self.frames.pop().expect("kernel frame").vars
    }
}

/// Fragment `f`'s bit in an expression's read set: its own bit for the first 63 fragments, and
/// bit 63 shared by all later ones.
fn frag_bit(f: FragId) -> u64 {
    1 << f.index().min(63)
}
