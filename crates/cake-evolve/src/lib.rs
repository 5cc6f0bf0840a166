//! The evolution loop (issue #8, docs/agents.md): an [`archive`] of every candidate (SQLite,
//! crash-safe), [`propose`]rs (the built-in [`knobs`] mutator, an [`external`] agent command, a
//! [`chat`]-completions client), the [`search`] cascade (parse and verify → cost ranking →
//! GPU evaluation → evidence routed back), [`budget`]s that stop a run, and [`report`]s.
//!
//! The cost model plugs in through [`estimate::Estimator`]; the GPU through
//! [`evaluate::Evaluator`] (the real one, [`evaluate::Harness`], is `cake_eval::run`).

pub mod archive;
pub mod budget;
pub mod chat;
pub mod distill;
pub mod estimate;
pub mod evaluate;
pub mod external;
// The knob lexer lives in cake-mutate, so the Python extension can use it without the archive.
pub use cake_mutate::knobs;
pub mod logs;
pub mod propose;
pub mod rank;
pub mod report;
pub mod search;
pub mod tactics;

pub use archive::{Archive, Candidate, Stage};
pub use budget::{Budget, Spent};
pub use estimate::{CostModel, Estimator};
pub use evaluate::{Evaluation, Evaluator, Harness, Outcome};
pub use propose::{KnobMutator, Proposer};
pub use search::{Event, ProposerSettings, Search, Settings};
