//! Mutation testing of the Cake verifier.
//!
//! [`mutants`] plants one hazard at a time into a valid schedule — a dropped wait or arrival, a
//! wrong arrival count or stage count, an undersized pool, a misaligned view, a flipped swizzle
//! or operand majorness, a role moved off warpgroup alignment, a dropped proxy fence, a stage
//! released before its MMA retires, a cluster barrier declared for one CTA, a consumer's release
//! moved above its last read, a wait hoisted above the copies it waits for, an arrival made
//! conditional — by editing the source text, so every mutant is a schedule
//! an author could have written. [`evaluate`] compiles a mutant with the same session `cake
//! check` runs and decides whether it was caught: an error of an expected category whose
//! primary span or one of whose labels sits on a line that is about the mutation.
//! [`catch_table`] summarises many outcomes as the Markdown table in `docs/verifier.md`.
//!
//! Some mutants introduce no hazard at all (Cake derives both sides of many contracts from one
//! declaration). They are kept, marked [`Mutant::equivalent`] with the precise reason, and left
//! out of the rate — never dropped silently.

mod coverage_ops;
mod equiv;
pub mod knobs;
mod message_ops;
mod sync_ops;
pub mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use cake_diag::{Category, SourceFile};
use cake_ir::{Kernel, KernelFacts, Op, RoleUnit, Stmt as IrStmt};
use cake_target::MmaFamily;
use text::{Kind, Source, Stmt, Tok};

/// Every operator, in the order [`mutants`] applies them and [`catch_table`] lists them.
pub const OPERATORS: [&str; 26] = [
    "drop-wait",
    "drop-arrive",
    "change-count",
    "change-stages",
    "pin-stage",
    "shrink-pool",
    "misalign-view",
    "flip-swizzle",
    "flip-majorness",
    "misalign-role",
    "drop-fence",
    "early-release",
    "drop-cluster-scope",
    "early-consumer-release",
    "hoist-wait",
    "conditional-arrive",
    "shrink-box",
    "skew-coords",
    "drop-store",
    "narrow-store",
    "swap-operand",
    "shrink-tmem",
    "grow-fragment",
    "swap-barrier",
    "warpgroup-mma-sync",
    "drop-stream-fixup",
];

/// One planted hazard.
#[derive(Clone, Debug, PartialEq)]
pub struct Mutant {
    pub operator: &'static str,
    /// 1-based line in the original file where the edit is made.
    pub line: u32,
    pub description: String,
    /// The mutated file.
    pub source: String,
    /// Categories a catching finding may have.
    pub expected: Vec<Category>,
    /// 1-based lines of the mutated file where a catching finding (its primary span or any of
    /// its labels) may sit.
    pub accept_lines: Vec<u32>,
    /// Why this mutant introduces no hazard, when it provably does not. Equivalent mutants are
    /// counted on their own and left out of the catch rate.
    pub equivalent: Option<String>,
    /// A warning of an expected category also catches it: the planted class is one the
    /// verifier can only suspect (an operand loaded from the wrong tensor, a lost last store).
    pub accept_warnings: bool,
    /// The original file's kernels as canonical IR: a mutant that compiles to exactly this
    /// changed nothing the compiler builds (an edit in a compile-time branch not taken).
    pub original_ir: std::sync::Arc<str>,
}

/// The verdict on one mutant.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub mutant: Mutant,
    /// The file name the mutant was compiled under.
    pub file: String,
    /// Some error finding of an expected category sits on an accepted line.
    pub caught: bool,
    /// The category of the catching finding (a verifier category when one caught it, else
    /// `Language` for a front-end type error at the mutated line).
    pub caught_by: Option<Category>,
    /// Every finding, as `"line code message"`.
    pub findings: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// Facts from the original kernel

/// What the operators need to know about the original schedule, from its IR.
struct Facts {
    file: SourceFile,
    kernels: Vec<Kernel>,
    /// Per kernel, the compiler's facts for each target it declares.
    facts: Vec<Vec<KernelFacts>>,
    /// Names of barriers, views, roles, pipelines, pools and TMEM regions.
    resources: BTreeSet<String>,
}

impl Facts {
    fn new(source: &str) -> Facts {
        let checked = cake_driver::check("original.py", source.as_bytes(), None);
        let mut resources = BTreeSet::new();
        for k in &checked.kernels {
            resources.extend(k.barriers.iter().map(|(_, x)| x.name.clone()));
            resources.extend(k.views.iter().map(|(_, x)| x.name.clone()));
            resources.extend(k.roles.iter().map(|(_, x)| x.name.clone()));
            resources.extend(k.pipelines.iter().map(|(_, x)| x.name.clone()));
            resources.extend(k.pools.iter().map(|(_, x)| x.name.clone()));
            resources.extend(k.tmems.iter().map(|(_, x)| x.name.clone()));
        }
        Facts {
            file: checked.file,
            kernels: checked.kernels,
            facts: checked.facts,
            resources,
        }
    }

    /// The facts of kernel `ki` on its first declared target (shared-memory placement and
    /// which arrivals and waits exist do not depend on the target).
    fn first(&self, ki: usize) -> Option<&KernelFacts> {
        self.facts.get(ki)?.first()
    }

    /// 0-based line of a span start.
    fn line0(&self, span: cake_diag::Span) -> usize {
        self.file.line_of(span.start) as usize - 1
    }
}

// ---------------------------------------------------------------------------------------------
// Edits and plans

#[derive(Clone, Debug)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Site {
    /// A whole statement was deleted (replaced by `pass` when it was alone in its block); its
    /// indentation.
    Deleted(usize),
    /// Text inside statements was changed or inserted.
    Edited,
    /// A wait was pointed at another barrier: the wait meant is gone, so, as for a deleted
    /// one, what it guarded (the rest of its block) is where the hazard shows.
    WaitSwapped,
}

struct Plan {
    operator: &'static str,
    /// 0-based line of the edit in the original.
    line: usize,
    description: String,
    edits: Vec<Edit>,
    site: Site,
    /// Resource names the mutated statement mentions.
    names: BTreeSet<String>,
    expected: Vec<Category>,
    equivalent: Option<String>,
    accept_warnings: bool,
}

fn apply(text: &str, edits: &[Edit]) -> (String, Vec<(usize, usize)>) {
    let mut edits: Vec<&Edit> = edits.iter().collect();
    edits.sort_by_key(|e| (e.start, e.end));
    let mut out = String::with_capacity(text.len() + 64);
    let mut ranges = Vec::new();
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.start]);
        let s = out.len();
        out.push_str(&e.text);
        ranges.push((s, out.len()));
        at = e.end;
    }
    out.push_str(&text[at..]);
    (out, ranges)
}

fn build(plan: Plan, src: &Source, original_ir: &std::sync::Arc<str>) -> Mutant {
    let (new_text, ranges) = apply(&src.text, &plan.edits);
    let new = Source::new(&new_text);
    let mut lines: BTreeSet<usize> = BTreeSet::new();
    let add_stmt = |lines: &mut BTreeSet<usize>, st: &Stmt| lines.extend(st.first..=st.last);
    match plan.site {
        Site::Deleted(indent) => {
            // The statement that now sits where the deleted one was, and the rest of its block.
            let p = new.line_of(ranges[0].0.min(new_text.len().saturating_sub(1)));
            let mut rest = new.stmts.iter().filter(|s| s.first >= p);
            if let Some(first) = rest.next() {
                add_stmt(&mut lines, first);
                for s in rest {
                    if s.indent < indent {
                        break;
                    }
                    add_stmt(&mut lines, s);
                }
            }
        }
        Site::Edited | Site::WaitSwapped => {
            for &(s, e) in &ranges {
                let a = new.line_of(s);
                let b = new.line_of(e.max(s + 1) - 1).max(a);
                for l in a..=b {
                    lines.insert(l);
                    if let Some(i) = new.stmt_at_line(l) {
                        add_stmt(&mut lines, &new.stmts[i]);
                    }
                }
            }
            if plan.site == Site::WaitSwapped {
                let edited = new.stmt_at_line(new.line_of(ranges[0].0));
                if let Some(i) = edited {
                    let indent = new.stmts[i].indent;
                    for st in new.stmts[i + 1..].iter() {
                        if st.indent < indent {
                            break;
                        }
                        add_stmt(&mut lines, st);
                    }
                }
            }
        }
    }
    for st in &new.stmts {
        if new.value_names(st).any(|n| plan.names.contains(n)) {
            add_stmt(&mut lines, st);
        }
    }
    Mutant {
        operator: plan.operator,
        line: plan.line as u32 + 1,
        description: plan.description,
        source: new_text,
        expected: plan.expected,
        accept_lines: lines.into_iter().map(|l| l as u32 + 1).collect(),
        equivalent: plan.equivalent,
        accept_warnings: plan.accept_warnings,
        original_ir: original_ir.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// Token helpers

/// An argument of a call: token indices (inclusive) and its keyword, if any.
#[derive(Clone, Debug)]
struct Arg {
    first: usize,
    last: usize,
    value_first: usize,
    kw: Option<String>,
}

struct Call {
    close: usize,
    args: Vec<Arg>,
}

fn texts<'a>(src: &'a Source, st: &'a Stmt) -> Vec<&'a str> {
    st.toks.iter().map(|t| src.tok_text(t)).collect()
}

/// Parse the call whose `(` is token `open`.
fn parse_call(src: &Source, st: &Stmt, open: usize) -> Option<Call> {
    let t = &st.toks;
    let mut depth = 0;
    let mut args = Vec::new();
    let mut arg_start = open + 1;
    for (i, ti) in t.iter().enumerate().skip(open) {
        let s = src.tok_text(ti);
        match s {
            "(" | "[" | "{" => depth += 1,
            ")" | "]" | "}" => {
                depth -= 1;
                if depth == 0 {
                    if arg_start < i {
                        args.push(make_arg(src, st, arg_start, i - 1));
                    }
                    return Some(Call { close: i, args });
                }
            }
            "," if depth == 1 => {
                if arg_start < i {
                    args.push(make_arg(src, st, arg_start, i - 1));
                }
                arg_start = i + 1;
            }
            _ => {}
        }
    }
    None
}

fn make_arg(src: &Source, st: &Stmt, first: usize, last: usize) -> Arg {
    let t = &st.toks;
    let kw = (last > first && t[first].kind == Kind::Name && src.tok_text(&t[first + 1]) == "=")
        .then(|| src.tok_text(&t[first]).to_string());
    Arg {
        first,
        last,
        value_first: if kw.is_some() { first + 2 } else { first },
        kw,
    }
}

/// Token index of the `(` of the first call of `.method(` in the statement.
fn method_open(src: &Source, st: &Stmt, method: &str) -> Option<usize> {
    (1..st.toks.len().saturating_sub(1))
        .find(|&i| {
            src.tok_text(&st.toks[i]) == method
                && src.tok_text(&st.toks[i - 1]) == "."
                && src.tok_text(&st.toks[i + 1]) == "("
        })
        .map(|i| i + 1)
}

/// `lm.<method>(X)` as a whole statement: X.
fn simple_call(src: &Source, st: &Stmt, method: &str) -> Option<String> {
    let t = texts(src, st);
    (t.len() == 6
        && t[0] == "lm"
        && t[1] == "."
        && t[2] == method
        && t[3] == "("
        && st.toks[4].kind == Kind::Name
        && t[5] == ")")
        .then(|| t[4].to_string())
}

fn is_mma(src: &Source, st: &Stmt) -> bool {
    let t = texts(src, st);
    t.len() > 4 && t[0] == "lm" && t[1] == "." && t[2] == "mma" && t[3] == "("
}

fn kwarg<'c>(call: &'c Call, kw: &str) -> Option<&'c Arg> {
    call.args.iter().find(|a| a.kw.as_deref() == Some(kw))
}

fn span_of(st: &Stmt, a: usize, b: usize) -> (usize, usize) {
    (st.toks[a].start, st.toks[b].end)
}

fn tok(st: &Stmt, i: usize) -> &Tok {
    &st.toks[i]
}

/// Replace an argument's value.
fn replace_value(st: &Stmt, a: &Arg, text: String) -> Edit {
    let (start, end) = span_of(st, a.value_first, a.last);
    Edit { start, end, text }
}

/// Add `text` as the last argument of a call.
fn insert_arg(src: &Source, st: &Stmt, call: &Call, text: &str) -> Edit {
    let before = &st.toks[call.close - 1];
    let (at, text) = if call.args.is_empty() {
        (st.toks[call.close].start, text.to_string())
    } else if src.tok_text(before) == "," {
        (before.end, format!(" {text}"))
    } else {
        (before.end, format!(", {text}"))
    };
    Edit {
        start: at,
        end: at,
        text,
    }
}

/// Remove an argument, with the comma that separates it from its neighbour when that comma is
/// on the same line (otherwise a trailing comma stays, which Python accepts).
fn remove_arg(src: &Source, st: &Stmt, call: &Call, idx: usize) -> Edit {
    let a = &call.args[idx];
    let (mut start, mut end) = span_of(st, a.first, a.last);
    let prev = &st.toks[a.first - 1];
    let next = &st.toks[a.last + 1];
    if src.tok_text(prev) == "," && prev.line == tok(st, a.first).line {
        start = prev.start;
    } else if src.tok_text(next) == "," {
        end = st.toks.get(a.last + 2).map_or(next.end, |n| {
            if n.line == next.line {
                n.start
            } else {
                next.end
            }
        });
    }
    Edit {
        start,
        end,
        text: String::new(),
    }
}

/// Delete statement `i` (replaced by `pass` when it is alone in its block).
fn delete_stmt(src: &Source, i: usize) -> (Vec<Edit>, Site) {
    let st = &src.stmts[i];
    let start = src.line_starts[st.first];
    let end = src.line_end(st.last);
    let text = if src.only_in_block(i) {
        let nl = if src.text[..end].ends_with('\n') {
            "\n"
        } else {
            ""
        };
        format!("{}pass{nl}", src.indent_text(st.first))
    } else {
        String::new()
    };
    (vec![Edit { start, end, text }], Site::Deleted(st.indent))
}

impl Facts {
    fn names_in(&self, src: &Source, st: &Stmt) -> BTreeSet<String> {
        src.value_names(st)
            .filter(|n| self.resources.contains(*n))
            .map(str::to_string)
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Operators

const SAFETY_OR_SEMANTICS: [Category; 2] = [Category::Safety, Category::Semantics];

fn plan(
    operator: &'static str,
    line: usize,
    description: String,
    (edits, site): (Vec<Edit>, Site),
    names: BTreeSet<String>,
    expected: &[Category],
) -> Plan {
    Plan {
        operator,
        line,
        description,
        edits,
        site,
        names,
        expected: expected.to_vec(),
        equivalent: None,
        accept_warnings: false,
    }
}

/// IR statements (kernel index, statement) of the ops whose span starts on the statement's lines.
fn ir_ops(f: &Facts, st: &Stmt) -> Vec<(usize, cake_ir::StmtId)> {
    let mut out = Vec::new();
    for (ki, k) in f.kernels.iter().enumerate() {
        k.walk(|sid, s, _| {
            if let IrStmt::Op(_) = s {
                let line = f.line0(k.stmts.span(sid));
                if st.first <= line && line <= st.last {
                    out.push((ki, sid));
                }
            }
        });
    }
    out
}

fn drop_wait(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        if let Some(b) = simple_call(src, st, "wait") {
            let mut p = plan(
                "drop-wait",
                st.first,
                format!("delete `lm.wait({b})`"),
                delete_stmt(src, i),
                f.names_in(src, st),
                &SAFETY_OR_SEMANTICS,
            );
            let ops = ir_ops(f, st);
            let reasons: Vec<Option<String>> = ops
                .iter()
                .map(|&(ki, sid)| equiv::drop_wait(&f.kernels[ki], f.first(ki)?, sid))
                .collect();
            if !reasons.is_empty() && reasons.iter().all(Option::is_some) {
                p.equivalent = reasons.into_iter().next().flatten();
            }
            out.push(p);
        }
    }
}

fn drop_arrive(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        for method in ["arrive", "commit"] {
            if let Some(b) = simple_call(src, st, method) {
                out.push(plan(
                    "drop-arrive",
                    st.first,
                    format!("delete `lm.{method}({b})`"),
                    delete_stmt(src, i),
                    f.names_in(src, st),
                    &SAFETY_OR_SEMANTICS,
                ));
            }
        }
        if is_mma(src, st) {
            let Some(call) = parse_call(src, st, 3) else {
                continue;
            };
            if let Some(idx) = call
                .args
                .iter()
                .position(|a| a.kw.as_deref() == Some("release"))
            {
                let a = &call.args[idx];
                let (s, e) = span_of(st, a.first, a.last);
                out.push(plan(
                    "drop-arrive",
                    tok(st, a.first).line,
                    format!("remove `{}` from `lm.mma`", &src.text[s..e]),
                    (vec![remove_arg(src, st, &call, idx)], Site::Edited),
                    f.names_in(src, st),
                    &SAFETY_OR_SEMANTICS,
                ));
            }
        }
    }
}

/// Declarations of one kind: (statement index, kernel index, handle index) for every IR entity
/// whose declaration span starts on a statement of the source.
fn decls(
    src: &Source,
    f: &Facts,
    spans: impl Fn(&Kernel) -> Vec<cake_diag::Span>,
) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    for (ki, k) in f.kernels.iter().enumerate() {
        for (hi, sp) in spans(k).into_iter().enumerate() {
            if let Some(si) = src.stmt_at_line(f.line0(sp)) {
                out.push((si, ki, hi));
            }
        }
    }
    out.sort();
    out.dedup_by_key(|x| x.0);
    out
}

fn change_count(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let found = decls(src, f, |k| {
        k.barriers.handles().map(|h| k.barriers.span(h)).collect()
    });
    for (si, ki, bi) in found {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let Some(open) = method_open(src, st, "barrier") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        // The count is derived per target (wgmma releases once per warpgroup, mma.sync once per
        // thread): one past the largest is wrong for every target.
        let derived = f.facts[ki]
            .iter()
            .map(|t| t.barriers[bi].arrival_count())
            .max()
            .unwrap_or(0);
        let bname = &k.barriers.iter().nth(bi).expect("barrier").1.name;
        let new = derived + 1;
        let (edit, line, what) = match kwarg(&call, "count") {
            Some(a) => (
                replace_value(st, a, new.to_string()),
                tok(st, a.first).line,
                format!("change the count of `{bname}` to {new} (the schedule makes {derived} arrivals per phase)"),
            ),
            None => (
                insert_arg(src, st, &call, &format!("count={new}")),
                tok(st, call.close).line,
                format!("declare `{bname}` with count={new} (the schedule makes {derived} arrivals per phase)"),
            ),
        };
        let mut p = plan(
            "change-count",
            line,
            what,
            (vec![edit], Site::Edited),
            f.names_in(src, st),
            &[Category::Safety],
        );
        if derived == 0 {
            p.equivalent = Some(format!(
                "nothing arrives on `{bname}` (and so nothing may wait on it): its count is never compared with an arrival"
            ));
        }
        out.push(p);
    }
}

fn next_stages(n: u32) -> u32 {
    if n > 2 {
        n - 1
    } else {
        n + 1
    }
}

fn change_stages(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let expected = [Category::Semantics, Category::Conformance];
    // (declaring call, its stage count argument (`None`: `stages=` only), the declaration's
    // spans, (name, stages) of the i-th one, how the description names it).
    type Named = fn(&Kernel, usize) -> (String, u32);
    type Spans = fn(&Kernel) -> Vec<cake_diag::Span>;
    let kinds: [(&str, bool, Spans, Named, &str); 3] = [
        (
            "view",
            false,
            |k| k.views.handles().map(|h| k.views.span(h)).collect(),
            |k, i| {
                let v = k.views.iter().nth(i).expect("view").1;
                (v.name.clone(), v.stages)
            },
            "",
        ),
        (
            "tmem",
            false,
            |k| k.tmems.handles().map(|h| k.tmems.span(h)).collect(),
            |k, i| {
                let t = k.tmems.iter().nth(i).expect("tmem").1;
                (t.name.clone(), t.stages)
            },
            "TMEM region ",
        ),
        (
            "pipeline",
            true,
            |k| k.pipelines.handles().map(|h| k.pipelines.span(h)).collect(),
            |k, i| {
                let p = k.pipelines.iter().nth(i).expect("pipeline").1;
                (p.name.clone(), p.stages)
            },
            "pipeline ",
        ),
    ];
    let mut found: Vec<(usize, Plan)> = Vec::new();
    for (method, positional, spans, named, noun) in kinds {
        for (si, ki, i) in decls(src, f, spans) {
            let st = &src.stmts[si];
            let (name, stages) = named(&f.kernels[ki], i);
            let Some(open) = method_open(src, st, method) else {
                continue;
            };
            let Some(call) = parse_call(src, st, open) else {
                continue;
            };
            let first = call.args.first().filter(|_| positional);
            let Some(a) = kwarg(&call, "stages").or(first) else {
                continue;
            };
            let n = next_stages(stages);
            found.push((
                si,
                plan(
                    "change-stages",
                    tok(st, a.value_first).line,
                    format!("change {noun}`{name}` from stages={stages} to stages={n}"),
                    (vec![replace_value(st, a, n.to_string())], Site::Edited),
                    f.names_in(src, st),
                    &expected,
                ),
            ));
        }
    }
    found.sort_by_key(|(si, _)| *si);
    out.extend(found.into_iter().map(|(_, p)| p));
}

fn shrink_pool(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (si, ki, pi) in decls(src, f, |k| {
        k.pools.handles().map(|h| k.pools.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let (pid, pool) = k.pools.iter().nth(pi).expect("pool");
        let Some(open) = method_open(src, st, "smem") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(layout) = f.first(ki).map(|x| &x.layout) else {
            continue;
        };
        let base = layout.pool_bases[pi];
        let need = layout
            .views
            .iter()
            .filter(|p| k.views[p.view].pool == pid)
            .map(|p| p.offset + p.bytes - base)
            .max()
            .unwrap_or(0);
        let size = if need > 1024 { 1024 } else { (need / 2).max(1) };
        let edit = match call.args.first() {
            Some(a) => replace_value(st, a, size.to_string()),
            None => insert_arg(src, st, &call, &size.to_string()),
        };
        let mut p = plan(
            "shrink-pool",
            st.toks[open].line,
            format!(
                "declare pool `{}` with {size} B (its views need {need} B)",
                pool.name
            ),
            (vec![edit], Site::Edited),
            f.names_in(src, st),
            &[Category::Safety],
        );
        if need == 0 {
            p.equivalent = Some(format!(
                "pool `{}` holds no views, so no size is too small for it",
                pool.name
            ));
        }
        out.push(p);
    }
}

fn misalign_view(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (si, ki, vi) in decls(src, f, |k| {
        k.views.handles().map(|h| k.views.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let (vid, view) = k.views.iter().nth(vi).expect("view");
        if view.swizzle == 0 {
            continue;
        }
        let Some(open) = method_open(src, st, "view") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let rel = match (view.offset, f.first(ki)) {
            (Some(o), _) => o as u64,
            (None, Some(x)) => x.layout.view(vid).offset - x.layout.pool_bases[view.pool.index()],
            (None, None) => continue,
        };
        let new = rel + 16;
        let (edit, line) = match kwarg(&call, "offset") {
            Some(a) => (
                replace_value(st, a, new.to_string()),
                tok(st, a.value_first).line,
            ),
            None => (
                insert_arg(src, st, &call, &format!("offset={new}")),
                tok(st, call.close).line,
            ),
        };
        out.push(plan(
            "misalign-view",
            line,
            format!(
                "place `{}` (swizzle {}) at offset {new}, 16 B past its aligned offset {rel}",
                view.name, view.swizzle
            ),
            (vec![edit], Site::Edited),
            f.names_in(src, st),
            &[Category::Safety],
        ));
    }
}

/// Views that an MMA reads (as an operand or through ldmatrix).
fn mma_read_views(k: &Kernel) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    k.walk(|_, s, _| {
        if let IrStmt::Op(op @ (Op::Mma { .. } | Op::Ldmatrix { .. })) = s {
            out.extend(op.effects().smem_reads.iter().map(|v| v.view.index()));
        }
    });
    out
}

fn flip_swizzle(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (si, ki, vi) in decls(src, f, |k| {
        k.views.handles().map(|h| k.views.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let view = k.views.iter().nth(vi).expect("view").1;
        if view.swizzle != 128 || !mma_read_views(k).contains(&vi) {
            continue;
        }
        let Some(open) = method_open(src, st, "view") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(a) = kwarg(&call, "swizzle") else {
            continue;
        };
        let new = 64u64;
        let rows = view.row_bytes();
        let mut p = plan(
            "flip-swizzle",
            tok(st, a.value_first).line,
            format!("change `{}` from swizzle=128 to swizzle={new}", view.name),
            (vec![replace_value(st, a, new.to_string())], Site::Edited),
            f.names_in(src, st),
            &[Category::Consistency],
        );
        let aligned = view
            .offset
            .is_none_or(|o| (o as u64).is_multiple_of(8 * new));
        if rows >= new && rows % new == 0 && aligned {
            p.equivalent = Some(format!(
                "`{}` has {rows} B rows, a whole number of {new} B swizzle panels; the TMA box \
                 (one panel wide), the MMA operand descriptor and the placement are all derived \
                 from the one `swizzle=` of the view, so writer and reader change together, and \
                 the smaller swizzle needs less alignment",
                view.name
            ));
        }
        out.push(p);
    }
}

fn flip_majorness(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let views: BTreeSet<String> = f
        .kernels
        .iter()
        .flat_map(|k| k.views.iter().map(|(_, v)| v.name.clone()))
        .collect();
    for st in &src.stmts {
        if !is_mma(src, st) {
            continue;
        }
        let Some(call) = parse_call(src, st, 3) else {
            continue;
        };
        let positional: Vec<&Arg> = call.args.iter().filter(|a| a.kw.is_none()).collect();
        for (which, a) in positional.iter().enumerate().skip(1).take(2) {
            let base = src.tok_text(&st.toks[a.first]);
            if !views.contains(base) {
                continue;
            }
            let which = if which == 1 { "a" } else { "b" };
            let (s, e) = span_of(st, a.first, a.last);
            let operand = &src.text[s..e];
            let transposed = a.last > a.first + 1
                && src.tok_text(&st.toks[a.last]) == "T"
                && src.tok_text(&st.toks[a.last - 1]) == ".";
            let (edit, what) = if transposed {
                let (s, e) = span_of(st, a.last - 1, a.last);
                (
                    Edit {
                        start: s,
                        end: e,
                        text: String::new(),
                    },
                    format!("drop `.T` from operand {which} `{operand}` of `lm.mma`"),
                )
            } else {
                let e = st.toks[a.last].end;
                (
                    Edit {
                        start: e,
                        end: e,
                        text: ".T".into(),
                    },
                    format!("transpose operand {which} `{operand}` of `lm.mma`"),
                )
            };
            out.push(plan(
                "flip-majorness",
                tok(st, a.first).line,
                what,
                (vec![edit], Site::Edited),
                f.names_in(src, st),
                &[
                    Category::Consistency,
                    Category::Semantics,
                    Category::Language,
                ],
            ));
        }
    }
}

fn misalign_role(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (si, ki, ri) in decls(src, f, |k| {
        k.roles.handles().map(|h| k.roles.span(h)).collect()
    }) {
        let st = &src.stmts[si];
        let k = &f.kernels[ki];
        let role = k.roles.iter().nth(ri).expect("role").1;
        if role.unit != RoleUnit::Warpgroup {
            continue;
        }
        let Some(open) = method_open(src, st, "role") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(a) = kwarg(&call, "warpgroup").or(kwarg(&call, "warpgroups")) else {
            continue;
        };
        let shifted: Vec<u32> = role.warps().iter().map(|w| w + 1).collect();
        let warps: Vec<String> = shifted.iter().map(u32::to_string).collect();
        let new = format!("warps=[{}]", warps.join(", "));
        let rid = k.roles.handles().nth(ri).expect("role");
        let equivalent = f
            .first(ki)
            .and_then(|kf| equiv::misalign_role(k, kf, rid, &shifted));
        let (s, e) = span_of(st, a.first, a.last);
        let old = src.text[s..e].to_string();
        // A warpgroup role moved onto warps also has four times the replicas, so row ranges
        // that follow `role.index` may leave their views (safety); its rows held by a whole
        // warpgroup (`rows="warpgroup"`) no longer have one (the front-end's CAKE-L010).
        let mut expected = vec![Category::Conformance, Category::Semantics, Category::Safety];
        if k.fragments
            .iter()
            .any(|(_, fr)| fr.role == rid && fr.rows == Some(cake_ir::RowOwner::Warpgroup))
        {
            expected.push(Category::Language);
        }
        out.push(plan(
            "misalign-role",
            tok(st, a.first).line,
            format!("move role `{}` from `{old}` to `{new}`", role.name),
            (
                vec![Edit {
                    start: s,
                    end: e,
                    text: new,
                }],
                Site::Edited,
            ),
            f.names_in(src, st),
            &expected,
        ));
        out.last_mut().expect("pushed").equivalent = equivalent;
    }
}

fn drop_fence(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        let t = texts(src, st);
        if t == ["lm", ".", "fence_proxy_async", "(", ")"] {
            out.push(plan(
                "drop-fence",
                st.first,
                "delete `lm.fence_proxy_async()`".into(),
                delete_stmt(src, i),
                f.names_in(src, st),
                &[Category::Safety],
            ));
        }
    }
}

/// A stream-K run's partial stored as if it were the tile's sum: `lm.stream_fixup(acc)` deleted.
fn drop_stream_fixup(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for (i, st) in src.stmts.iter().enumerate() {
        let t = texts(src, st);
        if t.starts_with(&["lm", ".", "stream_fixup", "("]) {
            out.push(plan(
                "drop-stream-fixup",
                st.first,
                "delete `lm.stream_fixup(...)`".into(),
                delete_stmt(src, i),
                f.names_in(src, st),
                &[Category::Safety],
            ));
        }
    }
}

/// The MMA families an `lm.mma` statement lowers to, over every target its kernel declares.
fn mma_families(st: &Stmt, f: &Facts) -> Vec<MmaFamily> {
    let mut out = Vec::new();
    for k in &f.kernels {
        k.walk(|sid, s, _| {
            let IrStmt::Op(Op::Mma { acc, .. }) = s else {
                return;
            };
            let line = f.line0(k.stmts.span(sid));
            if line < st.first || line > st.last {
                return;
            }
            for t in &k.targets {
                let Ok(target) = cake_target::lookup(t) else {
                    continue;
                };
                out.push(cake_ir::facts::mma_family(target, acc));
            }
        });
    }
    out
}

fn early_release(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    for st in &src.stmts {
        if !is_mma(src, st) {
            continue;
        }
        let Some(call) = parse_call(src, st, 3) else {
            continue;
        };
        let Some(idx) = call
            .args
            .iter()
            .position(|a| a.kw.as_deref() == Some("release"))
        else {
            continue;
        };
        let a = &call.args[idx];
        let (s, e) = span_of(st, a.value_first, a.last);
        let bar = src.text[s..e].to_string();
        let at = src.line_end(st.last);
        let nl = if src.text[..at].ends_with('\n') {
            ""
        } else {
            "\n"
        };
        let insert = Edit {
            start: at,
            end: at,
            text: format!("{nl}{}lm.arrive({bar})\n", src.indent_text(st.first)),
        };
        let mut p = plan(
            "early-release",
            tok(st, a.first).line,
            format!("replace `release={bar}` on `lm.mma` by `lm.arrive({bar})` after it"),
            (vec![remove_arg(src, st, &call, idx), insert], Site::Edited),
            f.names_in(src, st),
            &[Category::Safety],
        );
        let families = mma_families(st, f);
        if !families.is_empty() && families.iter().all(|m| *m == MmaFamily::MmaSync) {
            p.equivalent = Some(
                "the MMA lowers to mma.sync on every declared target: it is synchronous, so its \
                 shared-memory reads are complete when the next statement runs, and lm.arrive \
                 (release semantics) orders them before the stage is handed back"
                    .into(),
            );
        }
        out.push(p);
    }
}

/// A cluster barrier declared as a CTA barrier: the producers of a multicast load would refill a
/// stage the peers' consumers may still be reading.
fn drop_cluster_scope(src: &Source, f: &Facts, out: &mut Vec<Plan>) {
    let found = decls(src, f, |k| {
        k.barriers.handles().map(|h| k.barriers.span(h)).collect()
    });
    for (si, ki, bi) in found {
        let st = &src.stmts[si];
        let Some(open) = method_open(src, st, "barrier") else {
            continue;
        };
        let Some(call) = parse_call(src, st, open) else {
            continue;
        };
        let Some(idx) = call
            .args
            .iter()
            .position(|a| a.kw.as_deref() == Some("cluster"))
        else {
            continue;
        };
        let bname = &f.kernels[ki]
            .barriers
            .iter()
            .nth(bi)
            .expect("barrier")
            .1
            .name;
        out.push(plan(
            "drop-cluster-scope",
            tok(st, call.args[idx].first).line,
            format!("declare `{bname}` without cluster=True (its arrivals count in this CTA only)"),
            (vec![remove_arg(src, st, &call, idx)], Site::Edited),
            f.names_in(src, st),
            &[Category::Safety],
        ));
    }
}

/// Every mutant of `source`, operator by operator in [`OPERATORS`] order and, within one
/// operator, in source order. A file the front-end rejects has no mutants.
pub fn mutants(source: &str) -> Vec<Mutant> {
    let f = Facts::new(source);
    if f.kernels.is_empty() {
        return Vec::new();
    }
    let src = Source::new(source);
    let mut plans = Vec::new();
    let ops: [fn(&Source, &Facts, &mut Vec<Plan>); 26] = [
        drop_wait,
        drop_arrive,
        change_count,
        change_stages,
        sync_ops::pin_stage,
        shrink_pool,
        misalign_view,
        flip_swizzle,
        flip_majorness,
        misalign_role,
        drop_fence,
        early_release,
        drop_cluster_scope,
        sync_ops::early_consumer_release,
        sync_ops::hoist_wait,
        sync_ops::conditional_arrive,
        coverage_ops::shrink_box,
        coverage_ops::skew_coords,
        coverage_ops::drop_store,
        coverage_ops::narrow_store,
        coverage_ops::swap_operand,
        coverage_ops::shrink_tmem,
        coverage_ops::grow_fragment,
        message_ops::swap_barrier,
        message_ops::warpgroup_mma_sync,
        drop_stream_fixup,
    ];
    for op in ops {
        op(&src, &f, &mut plans);
    }
    let ir: std::sync::Arc<str> = canonical_ir(&f.kernels).into();
    plans.into_iter().map(|p| build(p, &src, &ir)).collect()
}

/// Every kernel of a file as canonical IR text (what the golden IR tests compare).
fn canonical_ir(kernels: &[Kernel]) -> String {
    kernels.iter().map(cake_ir::print::print).collect()
}

/// Why a mutant that compiles to the original's IR introduces no hazard.
pub const FOLDED_AWAY: &str = "the edit is in a compile-time branch the file's constants do not take: the mutant compiles to the original kernel (the verifier checks that code in builds at constants that take the branch)";

// ---------------------------------------------------------------------------------------------
// Evaluation

/// Compile the mutant as `cake check` would and decide whether it was caught.
pub fn evaluate(name: &str, m: &Mutant) -> Outcome {
    let checked = cake_driver::check(name, m.source.as_bytes(), None);
    let file = &checked.file;
    let mut caught_by: Option<Category> = None;
    let counts = |f: &&cake_diag::Finding| {
        f.is_error() || (m.accept_warnings && f.severity == cake_diag::Severity::Warning)
    };
    for fd in checked.findings.iter().filter(counts) {
        if !m.expected.contains(&fd.category) {
            continue;
        }
        let on_line = std::iter::once(fd.span)
            .chain(fd.labels.iter().map(|l| l.span))
            .any(|s| m.accept_lines.contains(&file.line_of(s.start)));
        if on_line && (caught_by.is_none() || caught_by == Some(Category::Language)) {
            caught_by = Some(fd.category);
        }
    }
    let findings = checked
        .findings
        .iter()
        .map(|fd| format!("{} {} {}", file.line_of(fd.span.start), fd.code, fd.message))
        .collect();
    let mut mutant = m.clone();
    if caught_by.is_none()
        && mutant.equivalent.is_none()
        && !checked.has_errors()
        && canonical_ir(&checked.kernels) == *m.original_ir
    {
        mutant.equivalent = Some(FOLDED_AWAY.to_string());
    }
    Outcome {
        mutant,
        file: name.to_string(),
        caught: caught_by.is_some(),
        caught_by,
        findings,
    }
}

// ---------------------------------------------------------------------------------------------
// Reporting

fn categories(c: &[Category]) -> String {
    c.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(", ")
}

fn rate(caught: usize, scored: usize) -> String {
    if scored == 0 {
        "—".into()
    } else {
        format!("{:.1}%", 100.0 * caught as f64 / scored as f64)
    }
}

/// The catch-rate table (Markdown): per operator the mutants, the equivalent ones (left out of
/// the rate), the ones the verifier caught, the ones the front-end rejected with a type error
/// at the mutated line, the misses and the rate; then the total, the reasons for equivalence,
/// and every miss.
pub fn catch_table(outcomes: &[Outcome]) -> String {
    #[derive(Default)]
    struct Row {
        expected: Vec<Category>,
        mutants: usize,
        equivalent: usize,
        verifier: usize,
        front: usize,
        missed: usize,
    }
    let mut rows: BTreeMap<usize, (&str, Row)> = BTreeMap::new();
    for o in outcomes {
        let m = &o.mutant;
        let key = OPERATORS
            .iter()
            .position(|x| *x == m.operator)
            .unwrap_or(OPERATORS.len());
        let (_, r) = rows
            .entry(key)
            .or_insert_with(|| (m.operator, Row::default()));
        for c in &m.expected {
            if !r.expected.contains(c) {
                r.expected.push(*c);
            }
        }
        r.mutants += 1;
        if m.equivalent.is_some() {
            r.equivalent += 1;
        } else if o.caught_by == Some(Category::Language) {
            r.front += 1;
        } else if o.caught {
            r.verifier += 1;
        } else {
            r.missed += 1;
        }
    }
    let mut s = String::new();
    s.push_str("| operator | expected categories | mutants | equivalent | caught by verifier | caught by front-end | missed | rate |\n");
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|\n");
    let mut total = Row::default();
    for (op, r) in rows.values() {
        let _ = writeln!(
            s,
            "| `{op}` | {} | {} | {} | {} | {} | {} | {} |",
            categories(&r.expected),
            r.mutants,
            r.equivalent,
            r.verifier,
            r.front,
            r.missed,
            rate(r.verifier + r.front, r.mutants - r.equivalent)
        );
        total.mutants += r.mutants;
        total.equivalent += r.equivalent;
        total.verifier += r.verifier;
        total.front += r.front;
        total.missed += r.missed;
    }
    let _ = writeln!(
        s,
        "| **total** | | **{}** | **{}** | **{}** | **{}** | **{}** | **{}** |",
        total.mutants,
        total.equivalent,
        total.verifier,
        total.front,
        total.missed,
        rate(
            total.verifier + total.front,
            total.mutants - total.equivalent
        )
    );

    let mut reasons: BTreeMap<(usize, String), (&str, usize)> = BTreeMap::new();
    let mut flagged = Vec::new();
    for o in outcomes.iter().filter(|o| o.mutant.equivalent.is_some()) {
        let m = &o.mutant;
        let key = OPERATORS
            .iter()
            .position(|x| *x == m.operator)
            .unwrap_or(99);
        // One line per reason, with the view or barrier name taken out, so that identical
        // reasons on different files group together.
        let reason = generic_reason(m.equivalent.as_deref().unwrap_or(""));
        reasons.entry((key, reason)).or_insert((m.operator, 0)).1 += 1;
        if o.caught {
            flagged.push(o);
        }
    }
    if !reasons.is_empty() {
        s.push_str(
            "\nEquivalent mutants (no hazard exists, so they are left out of the rate):\n\n",
        );
        for ((_, reason), (op, n)) in &reasons {
            let _ = writeln!(s, "- `{op}` ({n}): {reason}.");
        }
    }
    if !flagged.is_empty() {
        s.push_str("\nEquivalent mutants that still drew an error of the expected category:\n\n");
        for o in flagged {
            let _ = writeln!(
                s,
                "- `{}` {}:{}: {}",
                o.mutant.operator, o.file, o.mutant.line, o.mutant.description
            );
        }
    }
    let misses: Vec<&Outcome> = outcomes
        .iter()
        .filter(|o| o.mutant.equivalent.is_none() && !o.caught)
        .collect();
    if !misses.is_empty() {
        s.push_str("\nMisses (no error of an expected category on an accepted line):\n\n");
        for o in misses {
            let reported: Vec<String> = o
                .findings
                .iter()
                .filter_map(|f| {
                    let mut it = f.splitn(3, ' ');
                    let line = it.next()?;
                    let code = it.next()?;
                    Some(format!("{code}@{line}"))
                })
                .collect();
            let _ = writeln!(
                s,
                "- `{}` {}:{}: {}; expected {}; reported: {}",
                o.mutant.operator,
                o.file,
                o.mutant.line,
                o.mutant.description,
                categories(&o.mutant.expected),
                if reported.is_empty() {
                    "nothing".to_string()
                } else {
                    reported.join(", ")
                }
            );
        }
    }
    s
}

/// A reason with backticked names replaced by `…`, so equal reasons group.
fn generic_reason(r: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut name = String::new();
    for c in r.chars() {
        if c == '`' {
            if inside {
                let generic = name.contains('=') || name.contains('.') || name.contains('(');
                out.push('`');
                out.push_str(if generic { &name } else { "…" });
                out.push('`');
                name.clear();
            }
            inside = !inside;
        } else if inside {
            name.push(c);
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(text: &str, f: impl Fn(&Source) -> Vec<Edit>) -> String {
        let src = Source::new(text);
        apply(text, &f(&src)).0
    }

    #[test]
    fn deleting_the_only_statement_of_a_block_leaves_pass() {
        let text = "with a:\n    lm.wait(b)  # why\nx = 1\n";
        let out = edit(text, |s| delete_stmt(s, 1).0);
        assert_eq!(out, "with a:\n    pass\nx = 1\n");
        let text = "with a:\n    lm.wait(b)\n    y = 2\n";
        let out = edit(text, |s| delete_stmt(s, 1).0);
        assert_eq!(out, "with a:\n    y = 2\n");
    }

    #[test]
    fn removing_an_argument_keeps_the_call_valid() {
        let text = "lm.mma(a, b, c, accumulate=k > 0, release=e)\n";
        let out = edit(text, |s| {
            let call = parse_call(s, &s.stmts[0], 3).unwrap();
            vec![remove_arg(s, &s.stmts[0], &call, 4)]
        });
        assert_eq!(out, "lm.mma(a, b, c, accumulate=k > 0)\n");
        let text = "lm.mma(a, b, c,  # note\n       release=e)\n";
        let out = edit(text, |s| {
            let call = parse_call(s, &s.stmts[0], 3).unwrap();
            vec![remove_arg(s, &s.stmts[0], &call, 3)]
        });
        assert_eq!(out, "lm.mma(a, b, c,  # note\n       )\n");
        let text = "f(release=e, x=1)\n";
        let out = edit(text, |s| {
            let call = parse_call(s, &s.stmts[0], 1).unwrap();
            vec![remove_arg(s, &s.stmts[0], &call, 0)]
        });
        assert_eq!(out, "f(x=1)\n");
    }

    #[test]
    fn inserting_an_argument() {
        for (text, want) in [
            (
                "b = lm.barrier(p, producers=[x])  # c\n",
                "b = lm.barrier(p, producers=[x], count=3)  # c\n",
            ),
            (
                "b = lm.barrier(p,\n   producers=[x],\n)\n",
                "b = lm.barrier(p,\n   producers=[x], count=3\n)\n",
            ),
            ("pool = lm.smem()\n", "pool = lm.smem(count=3)\n"),
        ] {
            let out = edit(text, |s| {
                let st = &s.stmts[0];
                let open = (0..st.toks.len())
                    .find(|&i| s.tok_text(&st.toks[i]) == "(")
                    .unwrap();
                let call = parse_call(s, st, open).unwrap();
                vec![insert_arg(s, st, &call, "count=3")]
            });
            assert_eq!(out, want);
        }
    }
}
