//! The front-end's limits on hostile input (docs/language.md, "Limits"): how deep the source
//! may nest, how much compile-time evaluation may do, and the large stack the front-end runs on.
//! Every limit is a located finding, never a crash, a hang or an exhausted memory.

use crate::codes;
use crate::interp::span;
use cake_diag::{Finding, Span};
use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, Pattern, Stmt};
use ruff_text_size::Ranged;

/// Deepest nesting of statements and expressions in the source (CPython stops nested
/// brackets at 200 too).
pub const MAX_SOURCE_NESTING: u32 = 200;

/// A cheap upper bound on the nesting of one logical line, checked before parsing: the parser
/// spends kilobytes per level (a million nested `-` take gigabytes), and dropping its tree
/// recurses once per level.
pub const MAX_LINE_WEIGHT: u32 = 20_000;

/// Deepest nesting of evaluation: expressions and statements being interpreted, counted through
/// inlined helpers, so helpers nesting deep expressions in each other stay within the stack.
pub const MAX_EVAL_DEPTH: u32 = 1_000;

/// Deepest IR expression the front-end builds (names bound to expressions nest them without
/// any nesting in the source); every later stage walks expressions recursively.
pub const MAX_EXPR_DEPTH: u32 = 512;

/// Total compile-time work per file: unrolled loop iterations, inlined helper calls, tuple
/// elements built, IR statements and expressions created, names copied for loop analysis.
pub const WORK_BUDGET: u64 = 1 << 20;

/// Stack of the thread the front-end runs on: the recursive evaluator, bounded by the limits
/// above, fits in it whatever thread called (a Python thread, an async worker).
pub const STACK_BYTES: usize = 256 << 20;

thread_local! {
    static ON_BIG_STACK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` on a thread with a [`STACK_BYTES`] stack (or here, when already on one or when no
/// thread can be started: the limits still bound the recursion). A panic in `f` is resumed on
/// the caller.
pub fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if ON_BIG_STACK.with(|b| b.get()) {
        return f();
    }
    let mut slot = Some(f);
    let joined = std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("cake-front".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, || {
                ON_BIG_STACK.with(|b| b.set(true));
                (slot.take().expect("taken once"))()
            });
        spawned.ok().map(|h| h.join())
    });
    match joined {
        Some(Ok(v)) => v,
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        None => (slot.take().expect("the thread never started"))(),
    }
}

/// Before parsing: a finding at the first logical line whose nesting bound exceeds
/// [`MAX_LINE_WEIGHT`]. The bound counts brackets, operator characters and the keywords that
/// build expressions, plus the line's indentation; strings are skipped (but not the code
/// inside f-string replacement fields). It over-estimates, never under-estimates, the depth of
/// the line's syntax tree.
pub fn prescan(text: &str) -> Option<Finding> {
    let b = text.as_bytes();
    #[derive(Clone, Copy)]
    enum Mode {
        /// Code; `u32` counts the brackets opened in this mode.
        Code(u32),
        /// A string: quote byte, triple-quoted, f-string.
        Str(u8, bool, bool),
    }
    let mut modes: Vec<Mode> = vec![Mode::Code(0)];
    let mut weight: u32 = 0;
    let mut at_line_start = true;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let top = *modes.last().expect("the outermost mode is never popped");
        match top {
            Mode::Str(q, triple, fstr) => {
                if c == b'\\' {
                    i += 2;
                    continue;
                }
                if fstr && c == b'{' {
                    if b.get(i + 1) == Some(&b'{') {
                        i += 2;
                        continue;
                    }
                    modes.push(Mode::Code(0));
                    weight += 1;
                } else if c == q {
                    if !triple {
                        modes.pop();
                    } else if b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
                        modes.pop();
                        i += 3;
                        continue;
                    }
                } else if (c == b'\n' || c == b'\r') && !triple {
                    // An unterminated string ends at the line; the parser reports it.
                    modes.pop();
                    continue;
                }
                i += 1;
            }
            Mode::Code(open) => {
                if at_line_start {
                    // Indentation bounds the statement nesting.
                    let indent = b[i..]
                        .iter()
                        .take_while(|&&x| x == b' ' || x == b'\t')
                        .count();
                    weight = weight.saturating_add(indent as u32);
                    at_line_start = false;
                    i += indent;
                    continue;
                }
                match c {
                    b'#' => {
                        while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                            i += 1;
                        }
                        continue;
                    }
                    b'\\' if matches!(b.get(i + 1), Some(b'\n' | b'\r')) => {
                        i += 2;
                        continue;
                    }
                    b'\n' | b'\r' => {
                        // A logical line ends at a line break outside brackets and strings.
                        if modes.len() == 1 && open == 0 {
                            weight = 0;
                            at_line_start = true;
                        }
                        i += 1;
                        continue;
                    }
                    b'\'' | b'"' => {
                        let triple = b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
                        let fstr = string_prefix(b, i).contains(&b'f')
                            || string_prefix(b, i).contains(&b'F')
                            || string_prefix(b, i).contains(&b't')
                            || string_prefix(b, i).contains(&b'T');
                        modes.push(Mode::Str(c, triple, fstr));
                        i += if triple { 3 } else { 1 };
                        continue;
                    }
                    b'(' | b'[' | b'{' => {
                        *modes.last_mut().expect("a mode") = Mode::Code(open + 1);
                        weight += 1;
                    }
                    b')' | b']' | b'}' => {
                        if open > 0 {
                            *modes.last_mut().expect("a mode") = Mode::Code(open - 1);
                        } else if c == b'}' && modes.len() > 1 {
                            // The end of an f-string replacement field.
                            modes.pop();
                        }
                    }
                    b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'<' | b'>' | b'=' | b'!' | b'~'
                    | b'&' | b'|' | b'^' | b'.' | b':' => weight += 1,
                    c if c.is_ascii_alphabetic() || c == b'_' => {
                        let n = b[i..]
                            .iter()
                            .take_while(|x| x.is_ascii_alphanumeric() || **x == b'_')
                            .count();
                        if matches!(
                            &b[i..i + n],
                            b"not"
                                | b"and"
                                | b"or"
                                | b"if"
                                | b"else"
                                | b"lambda"
                                | b"await"
                                | b"yield"
                                | b"in"
                                | b"is"
                                | b"for"
                        ) {
                            weight += 1;
                        }
                        i += n;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        if weight > MAX_LINE_WEIGHT {
            let at = i.min(b.len()) as u32;
            return Some(
                Finding::new(
                    &codes::NESTING_TOO_DEEP,
                    Span::new(at, at.saturating_add(1)),
                    format!("this line holds more than {MAX_LINE_WEIGHT} brackets, operators and indentation: it may nest too deeply to parse"),
                )
                .help("split the expression over several assignments"),
            );
        }
    }
    None
}

/// The letters before a quote at `i` (a string prefix such as `rb` or `f`).
fn string_prefix(b: &[u8], i: usize) -> &[u8] {
    let start = b[..i]
        .iter()
        .rposition(|x| !x.is_ascii_alphabetic())
        .map_or(0, |p| p + 1);
    &b[start..i]
}

/// After parsing: the first statement, expression or pattern nested more than
/// [`MAX_SOURCE_NESTING`] levels deep. The walk never descends past the limit.
pub fn too_deep(module: &ast::ModModule) -> Option<Finding> {
    let mut d = Depth {
        depth: 0,
        found: None,
    };
    d.visit_body(&module.body);
    d.found.map(|sp| {
        Finding::new(
            &codes::NESTING_TOO_DEEP,
            sp,
            format!("this nests more than {MAX_SOURCE_NESTING} statements and expressions deep"),
        )
        .help("split the expression over several assignments")
    })
}

struct Depth {
    depth: u32,
    found: Option<Span>,
}

impl Depth {
    fn enter(&mut self, sp: Span) -> bool {
        if self.found.is_some() {
            return false;
        }
        if self.depth >= MAX_SOURCE_NESTING {
            self.found = Some(sp);
            return false;
        }
        self.depth += 1;
        true
    }
}

impl<'a> Visitor<'a> for Depth {
    fn visit_stmt(&mut self, s: &'a Stmt) {
        if self.enter(span(s.range())) {
            visitor::walk_stmt(self, s);
            self.depth -= 1;
        }
    }
    fn visit_expr(&mut self, e: &'a Expr) {
        if self.enter(span(e.range())) {
            visitor::walk_expr(self, e);
            self.depth -= 1;
        }
    }
    fn visit_pattern(&mut self, p: &'a Pattern) {
        if self.enter(span(p.range())) {
            visitor::walk_pattern(self, p);
            self.depth -= 1;
        }
    }
}

/// How many helper calls may be active at once before we call it runaway recursion.
pub const MAX_INLINE_DEPTH: usize = 32;
