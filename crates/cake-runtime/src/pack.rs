//! Kernel parameters in launch.json order: the plan (pure values, tensor-map fields included)
//! and the packed parameter buffer whose `void**` goes to `cuLaunchKernelEx`.

use std::ffi::c_void;

use crate::bind::Bound;
use crate::error::{launch, Result};
use crate::spec::{ArgKind, Spec};
use crate::tensormap::{self, TensorMapFields};

/// One parameter's storage: 128 bytes at a 128-byte-aligned address, so it can hold a
/// `CUtensorMap` (128 bytes; 64-byte aligned up to CUDA 12, 128-byte aligned in CUDA 13's
/// header) or any scalar.
#[repr(C, align(128))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParamSlot(pub [u8; 128]);

pub const TENSORMAP_BYTES: usize = 128;

/// One kernel parameter's value, before any driver call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Planned {
    /// A `CUtensorMap` to encode from these fields.
    TensorMap(TensorMapFields),
    /// A device address.
    Ptr(u64),
    /// A dimension, as `int32`.
    Dim(i32),
    /// A scalar: the low `size` bytes of `bits`, little-endian.
    Scalar { bits: u64, size: usize },
}

impl Planned {
    pub fn size(&self) -> usize {
        match self {
            Planned::TensorMap(_) => TENSORMAP_BYTES,
            Planned::Ptr(_) => 8,
            Planned::Dim(_) => 4,
            Planned::Scalar { size, .. } => *size,
        }
    }
}

/// Every parameter's value for a bound, non-empty call; checks what TMA and `int32` dims need.
pub fn plan(spec: &Spec, bound: &Bound) -> Result<Vec<Planned>> {
    spec.args
        .iter()
        .map(|a| {
            Ok(match &a.kind {
                ArgKind::TensorMap(tma) => {
                    let t = bound
                        .tensor(&a.name)
                        .expect("bound tensors follow the spec");
                    Planned::TensorMap(tensormap::fields(a, tma, t)?)
                }
                ArgKind::Ptr => Planned::Ptr(bound.tensor(&a.name).expect("bound").data_ptr),
                ArgKind::Dim => {
                    let v = bound.dim(&a.name).expect("bound dims follow the spec");
                    let v = i32::try_from(v).map_err(|_| {
                        launch(format!(
                            "{}: dim `{}` = {v} does not fit the int32 kernel parameter",
                            a.label(),
                            a.name
                        ))
                    })?;
                    Planned::Dim(v)
                }
                // Filled per launch: the launcher picks the workspace (`Packed::with_pointer`).
                ArgKind::State => Planned::Ptr(0),
                ArgKind::Scalar => {
                    let s = bound
                        .scalar(&a.name)
                        .expect("bound scalars follow the spec");
                    Planned::Scalar {
                        bits: s.bits,
                        size: s.size,
                    }
                }
            })
        })
        .collect()
}

/// The packed parameters: one aligned slot per parameter and the `void**` array pointing at
/// them. The slots are boxed, so the pointers stay valid while this value lives (the driver
/// copies the parameters at launch).
pub struct Packed {
    slots: Box<[ParamSlot]>,
    sizes: Vec<usize>,
    params: Vec<*mut c_void>,
}

// The raw pointers point into `slots`, which this value owns.
unsafe impl Send for Packed {}
unsafe impl Sync for Packed {}

impl Packed {
    /// Pack `plan`, encoding each tensor map into its slot with `encode`.
    pub fn new(
        plan: &[Planned],
        mut encode: impl FnMut(&TensorMapFields, &mut ParamSlot) -> Result<()>,
    ) -> Result<Packed> {
        let mut slots = vec![ParamSlot([0; 128]); plan.len()].into_boxed_slice();
        for (p, slot) in plan.iter().zip(slots.iter_mut()) {
            match p {
                Planned::TensorMap(f) => encode(f, slot)?,
                Planned::Ptr(v) => slot.0[..8].copy_from_slice(&v.to_le_bytes()),
                Planned::Dim(v) => slot.0[..4].copy_from_slice(&v.to_le_bytes()),
                Planned::Scalar { bits, size } => {
                    slot.0[..*size].copy_from_slice(&bits.to_le_bytes()[..*size])
                }
            }
        }
        Ok(Packed::from_slots(
            slots,
            plan.iter().map(Planned::size).collect(),
        ))
    }

    /// The parameters in `slots` (their sizes in `sizes`), with the pointer array to them.
    fn from_slots(mut slots: Box<[ParamSlot]>, sizes: Vec<usize>) -> Packed {
        let params = slots
            .iter_mut()
            .map(|s| s.0.as_mut_ptr().cast::<c_void>())
            .collect();
        Packed {
            slots,
            sizes,
            params,
        }
    }

    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Parameter `i`'s bytes as the kernel receives them.
    pub fn bytes(&self, i: usize) -> &[u8] {
        &self.slots[i].0[..self.sizes[i]]
    }

    /// Parameter `i`'s address (what the `void**` array holds).
    pub fn address(&self, i: usize) -> usize {
        self.params[i] as usize
    }

    /// The same parameters with pointer parameter `i` set to `value` (a launch's workspace).
    pub fn with_pointer(&self, i: usize, value: u64) -> Packed {
        let mut p = Packed::from_slots(self.slots.clone(), self.sizes.clone());
        p.set_pointer(i, value);
        p
    }

    /// Set pointer parameter `i` to `value`.
    pub fn set_pointer(&mut self, i: usize, value: u64) {
        self.slots[i].0[..8].copy_from_slice(&value.to_le_bytes());
    }

    /// The `kernelParams` array for `cuLaunchKernelEx` (which only reads through it).
    pub fn params(&self) -> *mut *mut c_void {
        self.params.as_ptr().cast_mut()
    }
}
