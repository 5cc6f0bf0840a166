//! Cake's per-architecture target database.
//!
//! Everything a later stage needs to know about a GPU architecture lives here as data: which
//! instruction families it has ([`Feature`]), its launch limits ([`Limits`]), its tensor memory
//! ([`TmemSpec`]) and which MMA shapes each tensor-core family accepts
//! ([`check_mma_shape`]). Every number carries a source string
//! ([`Target::source_of`]); values no primary source confirms are marked `[U]`.
//!
//! Targets are matched exactly ([`lookup`]). Cake never steps a kernel down to an older
//! architecture: a missing feature is an error that names the targets that have it
//! ([`require`]).

mod card;
mod dtype;
mod feature;
mod mma;
mod peak;
mod render;
mod target;

pub use card::{card_is, is_card_word};
pub use dtype::{f32_to_bf16_bits, DType, UnknownDType};
pub use feature::Feature;
pub use mma::{
    check_mma_shape, check_tcgen05_pair_shape, mma_acc_dtypes, mma_feature, mma_instr_k,
    mma_rules_source, MmaFamily,
};
pub use peak::{peak, peak_for, Peak};
pub use render::{render_table, to_json};
pub use target::{
    lookup, require, Limits, Target, TmemSpec, UnknownTarget, LIMIT_FIELDS, SOURCED_FIELDS, TARGETS,
};
