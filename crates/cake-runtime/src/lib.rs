//! The Cake runtime: load a kernel built by `cake build` (`<kernel>.launch.json`, schema
//! `cake.launch/v0`, and its cubin) and launch it on tensors described neutrally (name, dtype,
//! shape, strides, address, device), with every rule checked before anything reaches the GPU.
//!
//! Layers:
//! * pure ([`spec`], [`bind`], [`tensormap`], [`pack`], [`expr`], [`dtype`]): validation of the
//!   metadata, argument binding, grid, tensor-map fields and parameter packing — no driver;
//! * [`driver`]: the CUDA driver API through `cudarc` (loaded at run time), the primary context
//!   of the tensors' device, module loading, `cuTensorMapEncodeTiled`, `cuLaunchKernelEx`;
//! * [`kernel`]: the two together.
//!
//! The Python package (`crates/cake-py`) is a thin layer over [`Kernel`].

pub mod bind;
pub mod driver;
pub mod dtype;
pub mod error;
pub mod expr;
pub mod kernel;
pub mod pack;
pub mod spec;
pub mod tensormap;

pub use bind::{Bound, Device, ScalarValue, TensorDesc};
pub use error::{CudaError, Error, Result};
pub use kernel::{Binding, Kernel, Prepared};
pub use spec::Spec;
