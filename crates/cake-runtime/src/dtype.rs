//! Element types as the launcher sees them: size, the `CUtensorMapDataType` TMA moves them as,
//! and the storage a tensor of that type lives in (so a `tf32` parameter takes an `f32` tensor).

use crate::error::{launch, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Int,
    Uint,
    Float,
    Bool,
}

#[derive(Debug, PartialEq, Eq)]
pub struct DType {
    /// Canonical name: Cake's spelling (`bf16`, `e4m3`), as launch.json writes it.
    pub name: &'static str,
    pub bytes: u32,
    /// `CUtensorMapDataType`. FP8, i8 and bool have no TMA type of their own; TMA only moves
    /// bytes, so they travel as UINT8 (and i16 as UINT16).
    pub tma: u32,
    /// The storage type, spelled as torch names it (`torch.<storage>`).
    pub storage: &'static str,
    pub kind: Kind,
}

/// `CUtensorMapDataType` values that are floating point (NaN out-of-bounds fill needs one).
pub const TMA_FLOAT_TYPES: [u32; 7] = [6, 7, 8, 9, 10, 11, 12];

macro_rules! dt {
    ($name:literal, $bytes:literal, $tma:literal, $storage:literal, $kind:ident) => {
        DType {
            name: $name,
            bytes: $bytes,
            tma: $tma,
            storage: $storage,
            kind: Kind::$kind,
        }
    };
}

#[rustfmt::skip]
pub const DTYPES: &[DType] = &[
    dt!("u8",   1, 0,  "uint8",         Uint),
    dt!("i8",   1, 0,  "int8",          Int),
    dt!("u16",  2, 1,  "uint16",        Uint),
    dt!("i16",  2, 1,  "int16",         Int),
    dt!("u32",  4, 2,  "uint32",        Uint),
    dt!("i32",  4, 3,  "int32",         Int),
    dt!("u64",  8, 4,  "uint64",        Uint),
    dt!("i64",  8, 5,  "int64",         Int),
    dt!("f16",  2, 6,  "float16",       Float),
    dt!("f32",  4, 7,  "float32",       Float),
    dt!("f64",  8, 8,  "float64",       Float),
    dt!("bf16", 2, 9,  "bfloat16",      Float),
    // f32 storage, read by TMA with tf32 rounding.
    dt!("tf32", 4, 11, "float32",       Float),
    dt!("e4m3", 1, 0,  "float8_e4m3fn", Float),
    dt!("e5m2", 1, 0,  "float8_e5m2",   Float),
    dt!("bool", 1, 0,  "bool",          Bool),
];

/// Other spellings of the same types: torch's attribute names (so `str(torch.bfloat16)`,
/// `"torch.bfloat16"`, maps too) and the usual FP8 spellings.
#[rustfmt::skip]
const ALIASES: &[(&str, &str)] = &[
    ("uint8", "u8"), ("int8", "i8"), ("uint16", "u16"), ("int16", "i16"), ("short", "i16"),
    ("uint32", "u32"), ("int32", "i32"), ("int", "i32"), ("uint64", "u64"), ("int64", "i64"),
    ("long", "i64"), ("float16", "f16"), ("half", "f16"), ("float32", "f32"), ("float", "f32"),
    ("float64", "f64"), ("double", "f64"), ("bfloat16", "bf16"),
    ("float8_e4m3fn", "e4m3"), ("e4m3fn", "e4m3"), ("f8e4m3", "e4m3"), ("fp8e4m3", "e4m3"),
    ("fp8_e4m3", "e4m3"), ("f8_e4m3", "e4m3"),
    ("float8_e5m2", "e5m2"), ("f8e5m2", "e5m2"), ("fp8e5m2", "e5m2"), ("fp8_e5m2", "e5m2"),
    ("f8_e5m2", "e5m2"),
];

/// Scalar parameters may have these types.
pub const SCALAR_DTYPES: [&str; 12] = [
    "u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64", "f16", "bf16", "f32", "f64",
];

/// The dtype a name stands for: a canonical name, an alias or a torch dtype's `str()`.
pub fn lookup(text: &str) -> Option<&'static DType> {
    let s = text.trim().to_ascii_lowercase();
    let s = s.strip_prefix("torch.").unwrap_or(&s);
    let s = ALIASES.iter().find(|(a, _)| *a == s).map_or(s, |(_, c)| c);
    DTYPES.iter().find(|d| d.name == s)
}

/// [`lookup`], or an error listing the known names.
pub fn normalize(text: &str) -> Result<&'static DType> {
    lookup(text).ok_or_else(|| {
        let known: Vec<&str> = DTYPES.iter().map(|d| d.name).collect();
        launch(format!(
            "unknown dtype '{text}' (known: {})",
            known.join(", ")
        ))
    })
}
