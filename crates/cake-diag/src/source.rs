//! Byte spans and the source files they point into.

use serde::{Deserialize, Serialize};

/// Half-open byte range `start..end` into one source file.
///
/// Spans are byte offsets because that is what the parser produces and what
/// slicing needs; lines and columns are derived from them by [`SourceFile`]
/// only when a finding is rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    /// The span `start..end`; reversed bounds are swapped so that a span is
    /// never negative.
    pub const fn new(start: u32, end: u32) -> Span {
        if start <= end {
            Span { start, end }
        } else {
            Span {
                start: end,
                end: start,
            }
        }
    }

    /// The empty span at `byte`, for positions such as "end of file".
    pub const fn at(byte: u32) -> Span {
        Span {
            start: byte,
            end: byte,
        }
    }

    /// The smallest span covering both `self` and `other`.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(self.end).min(other.start.min(other.end)),
            end: self.end.max(self.start).max(other.end.max(other.start)),
        }
    }

    /// True when the span covers no byte (a position, not a range).
    pub fn is_empty(self) -> bool {
        self.end <= self.start
    }

    /// Number of bytes covered.
    pub fn len(self) -> u32 {
        self.end.saturating_sub(self.start)
    }
}

/// A source file with precomputed line starts.
///
/// Lines and columns are 1-based. Columns count Unicode scalar values
/// (`char`s), which is what SARIF calls `unicodeCodePoints` and what an
/// editor shows for non-ASCII text. `\n`, `\r\n` and a lone `\r` each end a
/// line, as in Python; the terminator is not part of the line's text.
///
/// Every query accepts any offset: one past the end of the text is clamped to
/// the end, and one inside a UTF-8 sequence is rounded down to the start of
/// its character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown to the reader, usually the path as given on the command line.
    pub name: String,
    pub text: String,
    /// Byte offset of the first byte of each line; `line_starts[0] == 0`.
    line_starts: Vec<u32>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let mut line_starts = vec![0];
        let bytes = text.as_bytes();
        for (i, &byte) in bytes.iter().enumerate() {
            // A `\r` ends a line unless a `\n` follows (then the `\n` ends it).
            let ends = byte == b'\n' || (byte == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
            if ends {
                match u32::try_from(i + 1) {
                    Ok(start) => line_starts.push(start),
                    // Offsets are u32: lines past 4 GiB are unreachable by any span.
                    Err(_) => break,
                }
            }
        }
        SourceFile {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// Length of the text in bytes, saturated to `u32`.
    pub fn len(&self) -> u32 {
        u32::try_from(self.text.len()).unwrap_or(u32::MAX)
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Number of lines; an empty file has one (empty) line, and a file
    /// ending in `\n` has an empty last line after it.
    pub fn line_count(&self) -> u32 {
        u32::try_from(self.line_starts.len()).unwrap_or(u32::MAX)
    }

    /// `byte` moved into the text: clamped to its length and rounded down
    /// to a character boundary.
    pub fn clamp(&self, byte: u32) -> u32 {
        let mut b = (byte as usize).min(self.text.len());
        while !self.text.is_char_boundary(b) {
            b -= 1;
        }
        // `b <= byte`, so it fits.
        b as u32
    }

    /// `span` moved into the text (see [`SourceFile::clamp`]).
    pub fn clamp_span(&self, span: Span) -> Span {
        let span = Span::new(span.start, span.end);
        Span {
            start: self.clamp(span.start),
            end: self.clamp(span.end),
        }
    }

    /// The text covered by `span`, after clamping.
    pub fn slice(&self, span: Span) -> &str {
        let span = self.clamp_span(span);
        &self.text[span.start as usize..span.end as usize]
    }

    /// 1-based line containing `byte`.
    pub fn line_of(&self, byte: u32) -> u32 {
        let byte = self.clamp(byte);
        // line_starts[0] == 0 <= byte, so the partition point is at least 1.
        let line = self.line_starts.partition_point(|&start| start <= byte);
        u32::try_from(line).unwrap_or(u32::MAX)
    }

    /// 1-based (line, column) of `byte`; the column counts characters.
    pub fn line_col(&self, byte: u32) -> (u32, u32) {
        let byte = self.clamp(byte);
        let line = self.line_of(byte);
        let start = self.line_start(line);
        let chars = self.text[start as usize..byte as usize].chars().count();
        (line, u32::try_from(chars + 1).unwrap_or(u32::MAX))
    }

    /// Text of the 1-based `line` without its line terminator; empty for a
    /// line that does not exist.
    pub fn line_text(&self, line: u32) -> &str {
        if line == 0 || line > self.line_count() {
            return "";
        }
        let span = self.line_span(line);
        &self.text[span.start as usize..span.end as usize]
    }

    /// Byte span of the 1-based `line` without its terminator (`\n`, `\r\n`
    /// or `\r`); lines past the end give the empty span at the end of the text.
    pub fn line_span(&self, line: u32) -> Span {
        if line == 0 || line > self.line_count() {
            return Span::at(self.len());
        }
        let start = self.line_start(line);
        let mut end = self
            .line_starts
            .get(line as usize)
            .map_or(self.len(), |&next| next - 1);
        // `end` is the terminator's last byte; a `\n` may have a `\r` before it.
        let bytes = self.text.as_bytes();
        if end > start
            && bytes.get(end as usize) == Some(&b'\n')
            && bytes.get(end as usize - 1) == Some(&b'\r')
        {
            end -= 1;
        }
        Span { start, end }
    }

    /// Byte offset where the 1-based `line` starts (clamped to existing lines).
    fn line_start(&self, line: u32) -> u32 {
        let index = (line.max(1) as usize - 1).min(self.line_starts.len() - 1);
        self.line_starts[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_basics() {
        assert_eq!(Span::new(5, 2), Span::new(2, 5));
        assert_eq!(Span::new(2, 5).to(Span::new(7, 9)), Span::new(2, 9));
        assert_eq!(Span::new(7, 9).to(Span::new(2, 5)), Span::new(2, 9));
        assert!(Span::at(3).is_empty());
        assert!(!Span::new(3, 4).is_empty());
        assert_eq!(Span::new(3, 10).len(), 7);
    }

    #[test]
    fn lines_and_columns_count_chars() {
        let f = SourceFile::new("t.py", "ab\r\n# é€x\n\nlast");
        assert_eq!(f.line_count(), 4);
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(2), (1, 3));
        assert_eq!(f.line_text(1), "ab");
        // "# é€x": 'é' is 2 bytes, '€' is 3.
        let x = f.text.find('x').unwrap() as u32;
        assert_eq!(f.line_col(x), (2, 5));
        assert_eq!(f.line_text(2), "# é€x");
        assert_eq!(f.line_text(3), "");
        assert_eq!(f.line_text(4), "last");
        assert_eq!(f.line_text(0), "");
        assert_eq!(f.line_text(5), "");
    }

    #[test]
    fn carriage_returns_end_lines() {
        // Old Mac line endings, and all three kinds mixed.
        let f = SourceFile::new("t.py", "a = 1\rbb = 2\rx");
        assert_eq!(f.line_count(), 3);
        assert_eq!(f.line_col(f.text.find('x').unwrap() as u32), (3, 1));
        assert_eq!(f.line_text(1), "a = 1");
        assert_eq!(f.line_text(2), "bb = 2");
        let m = SourceFile::new("m.py", "a\r\nb\rc\nd\r\re");
        assert_eq!(m.line_count(), 6);
        let texts: Vec<&str> = (1..=6).map(|l| m.line_text(l)).collect();
        assert_eq!(texts, ["a", "b", "c", "d", "", "e"]);
        assert_eq!(m.line_col(m.text.find('e').unwrap() as u32), (6, 1));
        assert_eq!(m.line_col(m.text.find('c').unwrap() as u32), (3, 1));
    }

    #[test]
    fn offsets_are_clamped_never_panic() {
        let f = SourceFile::new("t.py", "é\n");
        // Byte 1 is inside 'é': rounded down to 0.
        assert_eq!(f.clamp(1), 0);
        assert_eq!(f.line_col(1), (1, 1));
        assert_eq!(f.line_col(3), (2, 1));
        assert_eq!(f.line_col(u32::MAX), (2, 1));
        assert_eq!(f.slice(Span::new(1, 99)), "é\n");
        let empty = SourceFile::new("e.py", "");
        assert_eq!(empty.line_count(), 1);
        assert_eq!(empty.line_col(10), (1, 1));
        assert_eq!(empty.line_text(1), "");
        assert_eq!(empty.line_span(7), Span::at(0));
    }
}
