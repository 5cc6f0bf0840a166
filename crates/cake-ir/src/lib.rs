//! Cake IR: the typed, hardware-explicit schedule representation every later stage consumes.
//!
//! Nodes live in typed arenas (`Arena<T>`, `Handle<T>`) with their source spans in a side
//! table, so analyses can point findings at the author's line without the IR carrying spans in
//! every node. `print` renders the canonical text form; `layout` computes the shared-memory
//! placement that the verifier checks and the lowering emits.

pub mod arena;
pub mod bounds;
pub mod facts;
pub mod kernel;
pub mod layout;
pub mod print;
pub mod sync;
pub mod visit;

pub use arena::{Arena, Handle};
pub use cake_target::DType;
pub use facts::{KernelFacts, OpSite};
pub use kernel::*;
pub use visit::{BarrierUse, OpEffects};
