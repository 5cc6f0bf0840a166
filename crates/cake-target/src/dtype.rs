//! Element types.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Element types Cake knows.
///
/// The serde form is the lowercase name (`"bf16"`, `"e4m3"`, `"bool"`), the same string
/// [`DType::name`] returns, so IR text, JSON and diagnostics all spell a type one way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    BF16,
    F16,
    F32,
    F64,
    /// TensorFloat-32. Kept in 32-bit storage; only the tensor cores read the reduced mantissa.
    TF32,
    /// FP8 with 4 exponent and 3 mantissa bits.
    E4M3,
    /// FP8 with 5 exponent and 2 mantissa bits.
    E5M2,
    I8,
    U8,
    I32,
    U32,
    I64,
    Bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Float,
    Int,
    Other,
}

use Class::{Float, Int, Other};

/// One row per dtype: everything else about a dtype is looked up here, so adding a type is
/// one line rather than an edit to every method.
struct Info {
    dtype: DType,
    name: &'static str,
    /// Storage width in memory, not the number of significant bits.
    bits: u32,
    c_type: &'static str,
    class: Class,
}

#[rustfmt::skip]
const INFO: &[Info] = &[
    Info { dtype: DType::BF16, name: "bf16", bits: 16, c_type: "__nv_bfloat16", class: Float },
    Info { dtype: DType::F16,  name: "f16",  bits: 16, c_type: "__half",        class: Float },
    Info { dtype: DType::F32,  name: "f32",  bits: 32, c_type: "float",         class: Float },
    Info { dtype: DType::F64,  name: "f64",  bits: 64, c_type: "double",        class: Float },
    Info { dtype: DType::TF32, name: "tf32", bits: 32, c_type: "float",         class: Float },
    Info { dtype: DType::E4M3, name: "e4m3", bits: 8,  c_type: "__nv_fp8_e4m3", class: Float },
    Info { dtype: DType::E5M2, name: "e5m2", bits: 8,  c_type: "__nv_fp8_e5m2", class: Float },
    Info { dtype: DType::I8,   name: "i8",   bits: 8,  c_type: "int8_t",        class: Int },
    Info { dtype: DType::U8,   name: "u8",   bits: 8,  c_type: "uint8_t",       class: Int },
    Info { dtype: DType::I32,  name: "i32",  bits: 32, c_type: "int32_t",       class: Int },
    Info { dtype: DType::U32,  name: "u32",  bits: 32, c_type: "uint32_t",      class: Int },
    Info { dtype: DType::I64,  name: "i64",  bits: 64, c_type: "int64_t",       class: Int },
    Info { dtype: DType::Bool, name: "bool", bits: 8,  c_type: "bool",          class: Other },
];

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 13] = [
        DType::BF16,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::TF32,
        DType::E4M3,
        DType::E5M2,
        DType::I8,
        DType::U8,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::Bool,
    ];

    fn info(self) -> &'static Info {
        // INFO is indexed by discriminant; the `dtype_table_is_in_declaration_order` test
        // keeps the two in step.
        &INFO[self as usize]
    }

    /// Storage width in bits: tf32 occupies 32 bits and `bool` one byte, as in CUDA C++.
    pub fn bits(self) -> u32 {
        self.info().bits
    }

    /// Storage size in bytes (bits rounded up to whole bytes).
    pub fn bytes(self) -> u32 {
        self.bits().div_ceil(8)
    }

    /// The canonical lowercase name (`"bf16"`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The dtype with this canonical name; exact and case-sensitive.
    pub fn from_name(name: &str) -> Option<DType> {
        INFO.iter().find(|i| i.name == name).map(|i| i.dtype)
    }

    /// Floating-point types, including tf32 and both FP8 formats.
    pub fn is_float(self) -> bool {
        self.info().class == Float
    }

    /// Integer types, signed or not. `bool` is neither float nor int.
    pub fn is_int(self) -> bool {
        self.info().class == Int
    }

    /// Whether this is one of the two FP8 formats.
    pub fn is_fp8(self) -> bool {
        matches!(self, DType::E4M3 | DType::E5M2)
    }

    /// How generated CUDA C++ spells the type. tf32 has no C++ type of its own and lives in a
    /// `float`.
    pub fn c_type(self) -> &'static str {
        self.info().c_type
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Returned by `DType::from_str` for a name that is not a canonical dtype name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDType(pub String);

impl fmt::Display for UnknownDType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown dtype `{}`; known dtypes: ", self.0)?;
        let names: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        f.write_str(&names.join(", "))
    }
}

impl std::error::Error for UnknownDType {}

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::from_name(s).ok_or_else(|| UnknownDType(s.to_string()))
    }
}

/// bfloat16 bits of `x`, rounded to nearest even; NaN stays NaN. The one conversion the
/// compiler (constants it writes into bf16 buffers) and the runtime (bf16 scalar arguments) share.
pub fn f32_to_bf16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    if x.is_nan() {
        return ((bits >> 16) | 0x40) as u16;
    }
    let rounded = bits.wrapping_add(0x7fff + ((bits >> 16) & 1));
    (rounded >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_table_is_in_declaration_order() {
        assert_eq!(INFO.len(), DType::ALL.len());
        for (i, d) in DType::ALL.iter().enumerate() {
            assert_eq!(INFO[i].dtype, *d);
            assert_eq!(*d as usize, i);
        }
    }

    #[test]
    fn names_round_trip_through_from_name_and_serde() {
        for d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
            assert_eq!(d.to_string(), d.name());
            let json = serde_json::to_string(&d).unwrap();
            assert_eq!(json, format!("\"{}\"", d.name()));
            assert_eq!(serde_json::from_str::<DType>(&json).unwrap(), d);
        }
        assert_eq!(DType::from_name("BF16"), None);
        assert!("float".parse::<DType>().is_err());
    }

    #[test]
    fn sizes_and_classes() {
        assert_eq!(DType::BF16.bytes(), 2);
        assert_eq!(DType::TF32.bytes(), 4);
        assert_eq!(DType::E4M3.bytes(), 1);
        assert_eq!(DType::Bool.bytes(), 1);
        assert_eq!(DType::I64.bits(), 64);
        assert!(DType::E5M2.is_float() && !DType::E5M2.is_int());
        assert!(DType::U8.is_int() && !DType::U8.is_float());
        assert!(!DType::Bool.is_int() && !DType::Bool.is_float());
        assert_eq!(DType::TF32.c_type(), "float");
        assert_eq!(DType::BF16.c_type(), "__nv_bfloat16");
    }
}
