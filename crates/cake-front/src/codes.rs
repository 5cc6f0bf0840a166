//! The front-end's finding codes (the "language" category of the catalog).
pub use cake_diag::catalog::language::*;
