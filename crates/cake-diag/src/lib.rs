//! Cake findings: what the compiler tells its author.
//!
//! Cake's authors are mostly coding agents, and a [`Finding`] is their repair
//! target: a stable code, an exact span, related labels, the resource, role,
//! stage and phase involved, the compared values and a concrete fix where one
//! is clear. Every stage of the compiler reports into a [`Findings`]
//! collection and never stops at the first problem.
//!
//! The same data has three renderings ([`render`]): rustc-like text for
//! people, a documented JSON document for agents (`docs/diagnostics.md`), and
//! SARIF 2.1.0 for CI and code-scanning tools. Every code is described once,
//! in the [`catalog`], which also generates `docs/rules.md` and the pages of
//! `cake explain`.
//!
//! Nothing in this crate panics on bad input: spans past the end of a file or
//! inside a UTF-8 sequence are clamped, because a diagnostic that crashes the
//! compiler hides the diagnostic.

pub mod catalog;
mod finding;
pub mod render;
mod source;

pub use catalog::CodeInfo;
pub use finding::{Category, Finding, Findings, Label, Severity, Subject};
pub use source::{SourceFile, Span};
