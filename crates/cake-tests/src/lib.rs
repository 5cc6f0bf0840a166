//! Test-only crate: everything lives in `tests/` and `benches/`.
//!
//! - `tests/check.rs` runs the annotated schedules under `tests/check/` at the repository root
//!   and checks that `cake_front::check` reports exactly the marked findings, and that every
//!   file in `examples/` checks clean.
//! - `tests/ir.rs` compares the printed IR of every example with `tests/golden/ir/`
//!   (regenerate with `CAKE_BLESS=1 cargo test -p cake-tests --test ir`).
//! - `tests/no_panic.rs` feeds arbitrary and mutated input to the front-end.
//! - `benches/check.rs` measures the front-end (see docs/performance.md).
