//! The finding data model and the collection every compiler stage reports into.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::catalog::CodeInfo;
use crate::source::Span;

/// How much a finding matters. Only errors block compilation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The schedule is rejected.
    Error,
    /// The schedule compiles but is probably not what the author meant.
    Warning,
    /// Information worth knowing; nothing needs to change.
    Note,
}

impl Severity {
    /// The lowercase name used in every rendering.
    pub const fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which part of Cake's contract a finding is about. The category is also the
/// letter after `CAKE-` in the code, so a code says where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Category {
    /// Front-end errors: syntax, unsupported Python, names, types, constants.
    Language,
    /// Blocking verifier rule: the schedule could race, hang or corrupt memory.
    Safety,
    /// Blocking verifier rule: an instruction's contract on the target is broken.
    Conformance,
    /// Blocking verifier rule: two declarations or uses of one resource disagree.
    Consistency,
    /// Blocking verifier rule: the schedule does not compute what it declares.
    Semantics,
    /// Non-blocking: the schedule is correct but leaves speed on the table.
    Performance,
    /// Non-blocking: a suggestion about style or a simpler spelling.
    Hint,
    /// Non-blocking: something Cake could not check, said out loud.
    Coverage,
}

impl Category {
    /// Every category, in catalog order.
    pub const ALL: [Category; 8] = [
        Category::Language,
        Category::Safety,
        Category::Conformance,
        Category::Consistency,
        Category::Semantics,
        Category::Performance,
        Category::Hint,
        Category::Coverage,
    ];

    /// The lowercase name used in every rendering.
    pub const fn as_str(self) -> &'static str {
        match self {
            Category::Language => "language",
            Category::Safety => "safety",
            Category::Conformance => "conformance",
            Category::Consistency => "consistency",
            Category::Semantics => "semantics",
            Category::Performance => "performance",
            Category::Hint => "hint",
            Category::Coverage => "coverage",
        }
    }

    /// The letter after `CAKE-` in the codes of this category.
    pub const fn letter(self) -> char {
        match self {
            Category::Language => 'L',
            Category::Safety => 'S',
            Category::Conformance => 'C',
            Category::Consistency => 'D',
            Category::Semantics => 'M',
            Category::Performance => 'P',
            Category::Hint => 'H',
            Category::Coverage => 'V',
        }
    }

    /// The category whose codes use `letter` (case-insensitive).
    pub fn from_letter(letter: char) -> Option<Category> {
        let letter = letter.to_ascii_uppercase();
        Category::ALL.into_iter().find(|c| c.letter() == letter)
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A secondary span with a short text, such as "declared here".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    pub span: Span,
    pub message: String,
}

/// The named thing a finding is about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// What kind of thing: "barrier", "view", "role", "pipeline", "fragment",
    /// "tensor", "op", ...
    pub kind: String,
    /// Its name in the schedule.
    pub name: String,
}

/// One problem (or observation) in one source file.
///
/// Build one with [`Finding::new`] and the builder methods; every field is
/// optional except the code, message and span, and every field that is set
/// appears in every rendering.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// Stable code from the catalog, e.g. `CAKE-L003`.
    pub code: &'static str,
    pub category: Category,
    pub severity: Severity,
    /// One sentence saying what is wrong; names in backticks.
    pub message: String,
    /// The primary location, where the repair most likely goes.
    pub span: Span,
    /// Other locations that explain the finding. A label whose span equals
    /// [`Finding::span`] is drawn as the primary location's own text.
    pub labels: Vec<Label>,
    pub subject: Option<Subject>,
    /// The warp role whose code is at fault.
    pub role: Option<String>,
    /// The pipeline stage involved (0-based).
    pub stage: Option<u32>,
    /// The barrier phase involved (0 or 1 for an mbarrier's parity).
    pub phase: Option<u32>,
    /// The value the contract requires, when a value was compared.
    pub expected: Option<String>,
    /// The value the schedule has or the analysis derived.
    pub actual: Option<String>,
    /// A concrete fix, when one is clear.
    pub help: Option<String>,
    /// Further context, one sentence each.
    pub notes: Vec<String>,
}

impl Finding {
    /// A finding of `info`'s code, with its default severity and category.
    pub fn new(info: &'static CodeInfo, span: Span, message: impl Into<String>) -> Finding {
        Finding {
            code: info.code,
            category: info.category,
            severity: info.severity,
            message: message.into(),
            span,
            labels: Vec::new(),
            subject: None,
            role: None,
            stage: None,
            phase: None,
            expected: None,
            actual: None,
            help: None,
            notes: Vec::new(),
        }
    }

    /// Adds a secondary location with its text.
    pub fn label(mut self, span: Span, message: impl Into<String>) -> Self {
        self.labels.push(Label {
            span,
            message: message.into(),
        });
        self
    }

    /// Names the resource, role or op the finding is about.
    pub fn subject(mut self, kind: impl Into<String>, name: impl Into<String>) -> Self {
        self.subject = Some(Subject {
            kind: kind.into(),
            name: name.into(),
        });
        self
    }

    pub fn role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(role.into());
        self
    }

    pub fn stage(mut self, stage: u32) -> Self {
        self.stage = Some(stage);
        self
    }

    pub fn phase(mut self, phase: u32) -> Self {
        self.phase = Some(phase);
        self
    }

    pub fn expected(mut self, value: impl ToString) -> Self {
        self.expected = Some(value.to_string());
        self
    }

    pub fn actual(mut self, value: impl ToString) -> Self {
        self.actual = Some(value.to_string());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// Overrides the code's default severity (e.g. a warning promoted to an error).
    pub fn severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// All findings of a run. Stages push into it and carry on, so the author
/// sees every problem at once instead of one per compile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Findings {
    items: Vec<Finding>,
}

impl Findings {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, finding: Finding) {
        self.items.push(finding);
    }

    pub fn has_errors(&self) -> bool {
        self.items.iter().any(Finding::is_error)
    }

    pub fn error_count(&self) -> usize {
        self.count(Severity::Error)
    }

    pub fn warning_count(&self) -> usize {
        self.count(Severity::Warning)
    }

    pub fn note_count(&self) -> usize {
        self.count(Severity::Note)
    }

    fn count(&self, severity: Severity) -> usize {
        self.items.iter().filter(|f| f.severity == severity).count()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The most recent finding, so a caller can attach a help line after reporting it.
    pub fn last_mut(&mut self) -> Option<&mut Finding> {
        self.items.last_mut()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Finding> {
        self.items.iter()
    }

    /// The findings in the order they were pushed.
    pub fn as_slice(&self) -> &[Finding] {
        &self.items
    }

    /// The findings in reading order: by span start, then code. The sort is
    /// stable, so findings that tie keep the order they were reported in and
    /// the output is the same on every run.
    pub fn into_sorted(self) -> Vec<Finding> {
        let mut items = self.items;
        items.sort_by(|a, b| (a.span.start, a.code).cmp(&(b.span.start, b.code)));
        items
    }
}

impl Extend<Finding> for Findings {
    fn extend<I: IntoIterator<Item = Finding>>(&mut self, iter: I) {
        self.items.extend(iter);
    }
}

impl FromIterator<Finding> for Findings {
    fn from_iter<I: IntoIterator<Item = Finding>>(iter: I) -> Self {
        Findings {
            items: iter.into_iter().collect(),
        }
    }
}

impl IntoIterator for Findings {
    type Item = Finding;
    type IntoIter = std::vec::IntoIter<Finding>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a> IntoIterator for &'a Findings {
    type Item = &'a Finding;
    type IntoIter = std::slice::Iter<'a, Finding>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::language;

    #[test]
    fn builder_sets_every_field() {
        let f = Finding::new(
            &language::UNKNOWN_NAME,
            Span::new(3, 6),
            "unknown name `sB2`",
        )
        .label(Span::new(0, 2), "did you mean this?")
        .subject("view", "sB2")
        .role("math")
        .stage(2)
        .phase(1)
        .expected(16384)
        .actual("49152 B")
        .help("use `sB`")
        .note("a note");
        assert_eq!(f.code, "CAKE-L003");
        assert_eq!(f.category, Category::Language);
        assert!(f.is_error());
        assert_eq!(f.labels.len(), 1);
        assert_eq!(f.subject.as_ref().map(|s| s.kind.as_str()), Some("view"));
        assert_eq!(f.expected.as_deref(), Some("16384"));
        assert_eq!(f.stage, Some(2));
        assert_eq!(f.phase, Some(1));
        assert!(!f.clone().severity(Severity::Warning).is_error());
    }

    #[test]
    fn findings_sort_by_start_then_code_stably() {
        let mut all = Findings::new();
        all.push(Finding::new(&language::UNKNOWN_NAME, Span::new(9, 10), "b"));
        all.push(Finding::new(&language::SYNTAX_ERROR, Span::new(9, 12), "a"));
        all.push(Finding::new(&language::UNUSED_VALUE, Span::new(1, 2), "c"));
        all.push(Finding::new(&language::UNKNOWN_NAME, Span::new(9, 9), "d"));
        assert_eq!(all.len(), 4);
        assert!(all.has_errors());
        assert_eq!(all.error_count(), 3);
        assert_eq!(all.warning_count(), 1);
        let order: Vec<_> = all.into_sorted().into_iter().map(|f| f.message).collect();
        assert_eq!(order, ["c", "a", "b", "d"]);
    }

    #[test]
    fn categories_round_trip_through_letters() {
        for c in Category::ALL {
            assert_eq!(Category::from_letter(c.letter()), Some(c));
        }
        assert_eq!(Category::from_letter('x'), None);
    }
}
