//! Just enough of Python's lexical structure to edit schedules safely: tokens (names, numbers,
//! strings, operators) with byte offsets, and logical statements (a statement spans several
//! physical lines while brackets are open or after a backslash). Comments and the insides of
//! strings are never mistaken for code.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Name,
    Number,
    Str,
    Op,
}

#[derive(Clone, Debug)]
pub struct Tok {
    pub kind: Kind,
    /// Byte range in the source.
    pub start: usize,
    pub end: usize,
    /// 0-based line of `start`.
    pub line: usize,
}

/// One logical statement: its tokens and the physical lines it covers.
#[derive(Clone, Debug)]
pub struct Stmt {
    /// 0-based first and last line (inclusive).
    pub first: usize,
    pub last: usize,
    /// Leading whitespace of the first line, in characters.
    pub indent: usize,
    pub toks: Vec<Tok>,
}

pub struct Source {
    pub text: String,
    /// Byte offset of the start of every line.
    pub line_starts: Vec<usize>,
    pub stmts: Vec<Stmt>,
}

impl Source {
    pub fn new(text: &str) -> Source {
        let mut line_starts = vec![0];
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
            }
        }
        let stmts = lex(text, &line_starts);
        Source {
            text: text.to_string(),
            line_starts,
            stmts,
        }
    }

    /// 0-based line of byte `b`.
    pub fn line_of(&self, b: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= b) - 1
    }

    /// Byte offset just past the end of 0-based `line`, its newline included.
    pub fn line_end(&self, line: usize) -> usize {
        self.line_starts
            .get(line + 1)
            .copied()
            .unwrap_or(self.text.len())
    }

    pub fn tok_text(&self, t: &Tok) -> &str {
        &self.text[t.start..t.end]
    }

    /// Leading whitespace of 0-based `line`.
    pub fn indent_text(&self, line: usize) -> &str {
        let s = &self.text[self.line_starts[line]..self.line_end(line)];
        let n = s.len() - s.trim_start_matches([' ', '\t']).len();
        &s[..n]
    }

    /// The statement whose lines include 0-based `line`.
    pub fn stmt_at_line(&self, line: usize) -> Option<usize> {
        self.stmts
            .iter()
            .position(|s| s.first <= line && line <= s.last)
    }

    /// Names a statement uses as values: not attributes (`x.name`) and not keywords (`name=`).
    pub fn value_names<'s>(&'s self, st: &'s Stmt) -> impl Iterator<Item = &'s str> + 's {
        st.toks.iter().enumerate().filter_map(move |(i, t)| {
            if t.kind != Kind::Name {
                return None;
            }
            if i > 0 && self.tok_text(&st.toks[i - 1]) == "." {
                return None;
            }
            if st.toks.get(i + 1).is_some_and(|n| self.tok_text(n) == "=") && i > 0 {
                // `name=` inside a call is a keyword; `name = ...` at the start is a target.
                return None;
            }
            Some(self.tok_text(t))
        })
    }

    /// Whether statement `i` is the only statement of its block: the one before it is less
    /// indented (the block's header) and the one after it, if any, is less indented too.
    pub fn only_in_block(&self, i: usize) -> bool {
        let ind = self.stmts[i].indent;
        let before = i > 0 && self.stmts[i - 1].indent < ind;
        let after = self.stmts.get(i + 1).is_none_or(|s| s.indent < ind);
        before && after
    }
}

fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_' || c >= 0x80
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn is_string_prefix(s: &str) -> bool {
    matches!(
        s.to_ascii_lowercase().as_str(),
        "r" | "b" | "u" | "f" | "rb" | "br" | "fr" | "rf"
    )
}

/// Skip a string literal starting at the quote at `i`; returns the byte after it.
fn skip_string(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let triple = b.len() >= i + 3 && b[i + 1] == q && b[i + 2] == q;
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < b.len() {
        let c = b[j];
        if c == b'\\' {
            j += 2;
            continue;
        }
        if triple {
            if c == q && b.get(j + 1) == Some(&q) && b.get(j + 2) == Some(&q) {
                return j + 3;
            }
        } else if c == q {
            return j + 1;
        } else if c == b'\n' {
            // Unterminated: the parser reports it; stop at the line end.
            return j;
        }
        j += 1;
    }
    b.len()
}

fn lex(text: &str, line_starts: &[usize]) -> Vec<Stmt> {
    let b = text.as_bytes();
    let line_of = |p: usize| line_starts.partition_point(|&s| s <= p) - 1;
    let indent_of = |line: usize| {
        let s = line_starts[line];
        b[s..]
            .iter()
            .take_while(|&&c| c == b' ' || c == b'\t')
            .count()
    };
    let mut stmts = Vec::new();
    let mut cur: Vec<Tok> = Vec::new();
    let mut depth = 0usize;
    let close = |cur: &mut Vec<Tok>, stmts: &mut Vec<Stmt>| {
        if cur.is_empty() {
            return;
        }
        let first = cur[0].line;
        let last = line_of(
            cur.last()
                .unwrap()
                .end
                .saturating_sub(1)
                .max(cur.last().unwrap().start),
        );
        stmts.push(Stmt {
            first,
            last,
            indent: indent_of(first),
            toks: std::mem::take(cur),
        });
    };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind;
        match c {
            b'\n' => {
                if depth == 0 {
                    close(&mut cur, &mut stmts);
                }
                i += 1;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') => {
                i += 3;
                continue;
            }
            b' ' | b'\t' | b'\r' | 0x0c => {
                i += 1;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'"' | b'\'' => {
                i = skip_string(b, i);
                kind = Kind::Str;
            }
            c if is_name_start(c) => {
                while i < b.len() && is_name_char(b[i]) {
                    i += 1;
                }
                if i < b.len()
                    && (b[i] == b'"' || b[i] == b'\'')
                    && is_string_prefix(&text[start..i])
                {
                    i = skip_string(b, i);
                    kind = Kind::Str;
                } else {
                    kind = Kind::Name;
                }
            }
            c if c.is_ascii_digit()
                || (c == b'.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) =>
            {
                while i < b.len() {
                    let d = b[i];
                    let exponent_sign = (d == b'+' || d == b'-') && matches!(b[i - 1], b'e' | b'E');
                    if d.is_ascii_alphanumeric() || d == b'_' || d == b'.' || exponent_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                kind = Kind::Number;
            }
            _ => {
                match c {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                let two = b.get(i + 1).copied();
                i += match (c, two) {
                    (b'=' | b'!' | b'<' | b'>' | b':', Some(b'=')) => 2,
                    (b'-', Some(b'>')) | (b'*', Some(b'*')) | (b'/', Some(b'/')) => 2,
                    (b'<', Some(b'<')) | (b'>', Some(b'>')) => 2,
                    (b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'@', Some(b'=')) => 2,
                    _ => 1,
                };
                kind = Kind::Op;
            }
        }
        cur.push(Tok {
            kind,
            start,
            end: i,
            line: line_of(start),
        });
    }
    close(&mut cur, &mut stmts);
    stmts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_span_brackets_and_skip_strings() {
        let src = Source::new(
            "\"\"\"doc (\nstring\"\"\"\nimport cake\nx = f(a,  # (\n      b)\n# c\ny = 'q(' + 1\n",
        );
        let spans: Vec<(usize, usize)> = src.stmts.iter().map(|s| (s.first, s.last)).collect();
        assert_eq!(spans, vec![(0, 1), (2, 2), (3, 4), (6, 6)]);
        let names: Vec<&str> = src.value_names(&src.stmts[2]).collect();
        assert_eq!(names, vec!["x", "f", "a", "b"]);
    }
}
