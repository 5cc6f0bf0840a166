//! rustc-like text: a header, the source lines with carets, then `=` lines.
//!
//! annotate-snippets draws the header and the source excerpt. The `=` lines
//! are written here because annotate-snippets 0.11 only knows `note:` and
//! `help:` footers, and `expected:`/`actual:` read better under their own names.

use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};

use annotate_snippets::renderer::{AnsiColor, Effects, Style};
use annotate_snippets::{Level, Renderer, Snippet};

use super::Summary;
use crate::finding::{Finding, Severity};
use crate::source::{SourceFile, Span};

/// Wide enough that annotate-snippets never elides part of a source line:
/// an agent must see the whole line it is asked to repair.
const TERM_WIDTH: usize = 1 << 20;

/// Renders `findings` in the order given, then a summary line such as
/// `error: 2 errors, 1 warning emitted`. No findings give the empty string.
/// ANSI colors are used only when `color` is true.
pub fn human(file: &SourceFile, findings: &[Finding], color: bool) -> String {
    let mut out = String::new();
    for finding in findings {
        out.push_str(&finding_block(file, finding, color));
        out.push('\n');
    }
    out.push_str(&summary_line(Summary::of(findings), color));
    out
}

fn finding_block(file: &SourceFile, finding: &Finding, color: bool) -> String {
    let excerpt = Excerpt::new(file, finding);
    let drawn = if excerpt.has_content() {
        // annotate-snippets panics on some inputs it considers invalid. The
        // excerpt is prepared so that none should reach it, but a diagnostic
        // must never take the compiler down: if it does panic, fall back to
        // the header alone.
        panic::catch_unwind(AssertUnwindSafe(|| excerpt.draw(finding, color))).ok()
    } else {
        Some(excerpt.draw_blank(finding, color))
    };
    let (mut text, gutter) = match drawn {
        Some(text) => (text, excerpt.gutter()),
        None => (header(file, finding, 1, color), 1),
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&footer_lines(finding, gutter, color));
    text
}

/// The source lines one finding shows and the spans marked on them.
struct Excerpt<'a> {
    file: &'a SourceFile,
    /// Byte offset of `source` in the file.
    start: u32,
    /// The lines from the first to the last one any span touches, without
    /// the last line's terminator.
    source: &'a str,
    first_line: u32,
    last_line: u32,
    /// The primary span first, then the labels; all clamped into `source`.
    marks: Vec<Mark>,
}

struct Mark {
    span: Span,
    /// Index into the finding's labels of the text drawn next to the mark.
    label: Option<usize>,
    primary: bool,
}

impl<'a> Excerpt<'a> {
    fn new(file: &'a SourceFile, finding: &Finding) -> Excerpt<'a> {
        let primary = file.clamp_span(finding.span);
        // A label on exactly the primary span becomes the primary mark's text.
        let primary_label = finding
            .labels
            .iter()
            .position(|l| file.clamp_span(l.span) == primary);
        let mut marks = vec![Mark {
            span: primary,
            label: primary_label,
            primary: true,
        }];
        for (i, label) in finding.labels.iter().enumerate() {
            if Some(i) != primary_label {
                marks.push(Mark {
                    span: file.clamp_span(label.span),
                    label: Some(i),
                    primary: false,
                });
            }
        }
        let first_line = marks
            .iter()
            .map(|m| file.line_of(m.span.start))
            .min()
            .unwrap_or(1);
        let last_line = marks
            .iter()
            .map(|m| last_line_of(file, m.span))
            .max()
            .unwrap_or(first_line);
        let start = file.line_span(first_line).start;
        let end = file.line_span(last_line).end.max(start);
        // Only a line break can lie outside the excerpt (the last line's
        // `\r\n`); such a mark is drawn at the end of that line.
        for mark in &mut marks {
            mark.span.start = mark.span.start.clamp(start, end);
            mark.span.end = mark.span.end.clamp(mark.span.start, end);
        }
        Excerpt {
            file,
            start,
            source: &file.text[start as usize..end as usize],
            first_line,
            last_line,
            marks,
        }
    }

    /// annotate-snippets trims lines that are all whitespace to `...`, so an
    /// excerpt without a visible character is drawn by [`Excerpt::draw_blank`].
    fn has_content(&self) -> bool {
        self.source.chars().any(|c| !c.is_whitespace())
    }

    /// Width of the line-number column, which the `=` lines must match.
    fn gutter(&self) -> usize {
        self.last_line.to_string().len()
    }

    /// The excerpt drawn by annotate-snippets.
    fn draw(&self, finding: &Finding, color: bool) -> String {
        // annotate-snippets 0.11 prints a tab as four spaces but counts it as
        // zero columns when placing carets, so carets after a tab land to the
        // left of their text. A tab shown as one space keeps carets, columns
        // and byte offsets in step with the other renderings.
        let mut source = lone_cr_to_lf(&self.source.replace('\t', " "));
        // annotate-snippets shows no line at all for an empty last line, so a
        // span at the end of a file ending in a newline would lose its caret.
        // A space gives the caret a line to sit on.
        if self.file.line_text(self.last_line).is_empty() {
            source.push(' ');
        }
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        for mark in &self.marks {
            let mut s = (mark.span.start - self.start) as usize;
            let mut e = (mark.span.end - self.start) as usize;
            if s == e {
                // An empty range at the start of a line is drawn at the end of
                // the line before; covering the character at the position
                // (or the line break) keeps the caret on the right line.
                e = source[s..].chars().next().map_or(s, |c| s + c.len_utf8());
            } else if ranges.contains(&(s, e)) && source[s..e].lines().count() > 1 {
                // annotate-snippets draws a repeated multi-line range once,
                // moving the repeats to the range's last byte, which panics when
                // that byte is inside a character. Move them here, on a
                // character boundary.
                s = floor_char_boundary(&source, e - 1);
            }
            ranges.push((s, e));
        }

        let annotations = self.marks.iter().zip(&ranges).map(|(mark, &(s, e))| {
            // Only the error level draws `^`, so the primary mark uses it
            // (its color is set to the finding's severity below); the
            // warning level draws `-` with no prefix, rustc's secondary label.
            let level = if mark.primary {
                Level::Error
            } else {
                Level::Warning
            };
            let annotation = level.span(s..e);
            match mark.label {
                Some(i) => annotation.label(&finding.labels[i].message),
                None => annotation,
            }
        });
        let snippet = Snippet::source(&source)
            .line_start(self.first_line as usize)
            .origin(display_name(self.file))
            .fold(true)
            .annotations(annotations);
        let message = level(finding.severity)
            .title(&finding.message)
            .id(finding.code)
            .snippet(snippet);
        let renderer = if color {
            let secondary = if finding.severity == Severity::Warning {
                severity_style(Severity::Warning)
            } else {
                line_style()
            };
            Renderer::styled()
                .error(severity_style(finding.severity))
                .warning(secondary)
        } else {
            Renderer::plain()
        };
        let renderer = renderer.term_width(TERM_WIDTH);
        let text = renderer.render(message).to_string();
        // Lines are padded for the gutter even when nothing follows; trailing
        // blanks only get in the way of agents comparing text.
        let mut out = String::with_capacity(text.len() + 1);
        for line in text.lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    /// The excerpt drawn by hand, for excerpts of blank lines (an empty file,
    /// the end of a file, a line of indentation). Each mark goes under its
    /// first line; lines without a mark are left out.
    fn draw_blank(&self, finding: &Finding, color: bool) -> String {
        let gutter = self.gutter();
        let pad = " ".repeat(gutter + 1);
        let bar = paint("|", line_style(), color);
        let mut out = header(self.file, finding, gutter, color);
        let _ = writeln!(out, "{pad}{bar}");
        let mut lines: Vec<u32> = self
            .marks
            .iter()
            .map(|m| self.file.line_of(m.span.start))
            .collect();
        lines.sort_unstable();
        lines.dedup();
        let mut previous: Option<u32> = None;
        for line in lines {
            if previous.is_some_and(|p| line > p + 1) {
                out.push_str("...\n");
            }
            previous = Some(line);
            let text = self.file.line_text(line).replace('\t', " ");
            let number = paint(&format!("{line:>gutter$}"), line_style(), color);
            let _ = writeln!(out, "{}", format!("{number} {bar} {text}").trim_end());
            let line_start = self.file.line_span(line).start as usize;
            for mark in self
                .marks
                .iter()
                .filter(|m| self.file.line_of(m.span.start) == line)
            {
                let before = &self.file.text[line_start..mark.span.start as usize];
                let indent = before.chars().count();
                let (symbol, style) = if mark.primary {
                    ("^", severity_style(finding.severity))
                } else {
                    ("-", line_style())
                };
                let mut marker = format!("{}{symbol}", " ".repeat(indent));
                if let Some(i) = mark.label {
                    marker.push(' ');
                    marker.push_str(finding.labels[i].message.trim_end());
                }
                let _ = writeln!(out, "{pad}{bar} {}", paint(&marker, style, color));
            }
        }
        let _ = writeln!(out, "{pad}{bar}");
        out
    }
}

/// Line of the last byte a span covers (its start line when empty), so that
/// a span ending just after a newline does not drag in the next line.
fn last_line_of(file: &SourceFile, span: Span) -> u32 {
    if span.is_empty() {
        file.line_of(span.start)
    } else {
        file.line_of(span.end - 1)
    }
}

fn floor_char_boundary(text: &str, mut byte: usize) -> usize {
    byte = byte.min(text.len());
    while !text.is_char_boundary(byte) {
        byte -= 1;
    }
    byte
}

fn display_name(file: &SourceFile) -> &str {
    if file.name.is_empty() {
        "<input>"
    } else {
        &file.name
    }
}

fn level(severity: Severity) -> Level {
    match severity {
        Severity::Error => Level::Error,
        Severity::Warning => Level::Warning,
        Severity::Note => Level::Note,
    }
}

fn severity_style(severity: Severity) -> Style {
    match severity {
        Severity::Error => AnsiColor::BrightRed.on_default().effects(Effects::BOLD),
        Severity::Warning => AnsiColor::Yellow.on_default().effects(Effects::BOLD),
        Severity::Note => AnsiColor::BrightGreen.on_default().effects(Effects::BOLD),
    }
}

/// The style annotate-snippets uses for line numbers and `|`.
fn line_style() -> Style {
    AnsiColor::BrightBlue.on_default().effects(Effects::BOLD)
}

fn help_style() -> Style {
    AnsiColor::BrightCyan.on_default().effects(Effects::BOLD)
}

fn bold() -> Style {
    Style::new().effects(Effects::BOLD)
}

fn paint(text: &str, style: Style, color: bool) -> String {
    if color {
        format!("{}{}{}", style.render(), text, style.render_reset())
    } else {
        text.to_string()
    }
}

/// The title and `-->` lines, as annotate-snippets draws them.
fn header(file: &SourceFile, finding: &Finding, gutter: usize, color: bool) -> String {
    let (line, col) = file.line_col(finding.span.start);
    format!(
        "{}: {}\n{}{} {}:{}:{}\n",
        paint(
            &format!("{}[{}]", finding.severity, finding.code),
            severity_style(finding.severity),
            color
        ),
        paint(&finding.message, bold(), color),
        " ".repeat(gutter),
        paint("-->", line_style(), color),
        display_name(file),
        line,
        col,
    )
}

/// The `= key: value` lines under the excerpt: what the finding is about,
/// the compared values, the fix and the notes, in that order.
fn footer_lines(finding: &Finding, gutter: usize, color: bool) -> String {
    let mut rows: Vec<(&str, String, Style)> = Vec::new();
    let on = on_text(finding);
    if !on.is_empty() {
        rows.push(("on", on, bold()));
    }
    if let Some(v) = &finding.expected {
        rows.push(("expected", v.clone(), bold()));
    }
    if let Some(v) = &finding.actual {
        rows.push(("actual", v.clone(), bold()));
    }
    if let Some(v) = &finding.help {
        rows.push(("help", v.clone(), help_style()));
    }
    for note in &finding.notes {
        rows.push(("note", note.clone(), severity_style(Severity::Note)));
    }

    let pad = " ".repeat(gutter + 1);
    let mut out = String::new();
    for (key, value, style) in rows {
        let _ = write!(
            out,
            "{pad}{} {}: ",
            paint("=", line_style(), color),
            paint(key, style, color)
        );
        // Continuation lines of a multi-line value line up under its first line.
        let indent = " ".repeat(pad.len() + key.len() + 4);
        for (i, line) in value.lines().enumerate() {
            if i > 0 {
                out.push('\n');
                out.push_str(&indent);
            }
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// "barrier `full`, role `math`, stage 2, phase 1": the finding's coordinates.
fn on_text(finding: &Finding) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &finding.subject {
        parts.push(format!("{} `{}`", s.kind, s.name));
    }
    if let Some(r) = &finding.role {
        parts.push(format!("role `{r}`"));
    }
    if let Some(s) = finding.stage {
        parts.push(format!("stage {s}"));
    }
    if let Some(p) = finding.phase {
        parts.push(format!("phase {p}"));
    }
    parts.join(", ")
}

fn summary_line(summary: Summary, color: bool) -> String {
    let counts = [
        (summary.errors, Severity::Error),
        (summary.warnings, Severity::Warning),
        (summary.notes, Severity::Note),
    ];
    // The line is headed by the most severe level present.
    let Some(&(_, worst)) = counts.iter().find(|(n, _)| *n > 0) else {
        return String::new();
    };
    let text = counts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|&(n, s)| format!("{n} {s}{}", if n == 1 { "" } else { "s" }))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "{}{}\n",
        paint(worst.as_str(), severity_style(worst), color),
        paint(&format!(": {text} emitted"), bold(), color)
    )
}

/// annotate-snippets breaks lines only at `\n`; a lone `\r` (a line break for
/// [`SourceFile`]) becomes `\n`, byte for byte, so offsets stay valid.
fn lone_cr_to_lf(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.char_indices() {
        if c == '\r' && b.get(i + 1) != Some(&b'\n') {
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}
