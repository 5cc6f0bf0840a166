//! Tensor-core MMA legality: which shapes, input pairs and accumulators each family accepts.
//!
//! The rules are tables, one per family (and per CTA group for tcgen05) with one row per A
//! dtype. Only dense MMAs are modelled; sparse variants (which double K), tcgen05 `.ws` and the
//! block-scaled `mx*` kinds are not.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::dtype::DType;
use crate::dtype::DType as D;
use crate::feature::Feature;

/// Tensor-core instruction families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MmaFamily {
    /// Warp-level `mma.sync` (sm_80 on).
    MmaSync,
    /// Warpgroup `wgmma.mma_async` (sm_90a only).
    Wgmma,
    /// `tcgen05.mma` with the accumulator in tensor memory (sm_100a family).
    Tcgen05,
}

impl MmaFamily {
    pub const ALL: [MmaFamily; 3] = [MmaFamily::MmaSync, MmaFamily::Wgmma, MmaFamily::Tcgen05];

    /// The PTX spelling: `"mma.sync"`, `"wgmma"`, `"tcgen05.mma"`.
    pub fn name(self) -> &'static str {
        match self {
            MmaFamily::MmaSync => "mma.sync",
            MmaFamily::Wgmma => "wgmma",
            MmaFamily::Tcgen05 => "tcgen05.mma",
        }
    }

    /// On a target whose tensor-core family is `self`, the family of an MMA whose accumulator
    /// is in registers: wgmma where the target has it, warp-level mma.sync everywhere else
    /// (tcgen05 targets keep mma.sync, not wgmma).
    pub fn register_accumulator_family(self) -> MmaFamily {
        match self {
            MmaFamily::Wgmma => MmaFamily::Wgmma,
            MmaFamily::MmaSync | MmaFamily::Tcgen05 => MmaFamily::MmaSync,
        }
    }

    /// Whether operand `b` may be a register fragment: mma.sync takes both operands in
    /// registers; wgmma and tcgen05.mma read `b` from shared memory through a descriptor.
    pub fn b_in_registers(self) -> bool {
        match self {
            MmaFamily::MmaSync => true,
            MmaFamily::Wgmma | MmaFamily::Tcgen05 => false,
        }
    }

    /// The (M, N) one instruction computes for an MMA tile of (m, n): the whole tile for wgmma
    /// (per warpgroup) and tcgen05; m16n8 for mma.sync, whose warps tile the fragment with it.
    pub fn instruction_tile(self, m: u32, n: u32) -> (u32, u32) {
        match self {
            MmaFamily::Wgmma | MmaFamily::Tcgen05 => (m, n),
            MmaFamily::MmaSync => (16, 8),
        }
    }
}

impl fmt::Display for MmaFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for MmaFamily {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// `lo..=hi` in steps of `step`; a single value has `lo == hi`.
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: u32,
    hi: u32,
    step: u32,
}

impl Span {
    const fn one(v: u32) -> Span {
        Span {
            lo: v,
            hi: v,
            step: 1,
        }
    }

    const fn range(lo: u32, hi: u32, step: u32) -> Span {
        Span { lo, hi, step }
    }

    fn contains(self, v: u32) -> bool {
        self.lo <= v && v <= self.hi && (v - self.lo).is_multiple_of(self.step)
    }

    /// How many values the span holds; short spans print as lists.
    fn len(self) -> u32 {
        (self.hi - self.lo) / self.step + 1
    }
}

/// A union of spans, printed the way the error messages state a legal set.
struct SpanSet(&'static [Span]);

impl SpanSet {
    fn contains(&self, v: u32) -> bool {
        self.0.iter().any(|s| s.contains(v))
    }
}

impl fmt::Display for SpanSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Short spans become explicit values, long ones `lo..=hi step s`:
        // "{8, 16, 24, 32} or 48..=256 step 16", "{64, 128}", "8..=256 step 8".
        let mut listed = Vec::new();
        let mut ranges = Vec::new();
        for s in self.0 {
            if s.len() <= 4 {
                listed.extend((0..s.len()).map(|i| (s.lo + i * s.step).to_string()));
            } else {
                ranges.push(format!("{}..={} step {}", s.lo, s.hi, s.step));
            }
        }
        let mut parts = Vec::new();
        if !listed.is_empty() {
            parts.push(format!("{{{}}}", listed.join(", ")));
        }
        parts.extend(ranges);
        f.write_str(&parts.join(" or "))
    }
}

/// One legal A dtype of one family: what may go with it and in which shapes.
struct Rule {
    a: DType,
    /// B dtypes that may go with `a`. Equal to A except FP8, where e4m3 and e5m2 mix.
    b: &'static [DType],
    m: &'static [Span],
    n: &'static [Span],
    /// Legal K values, ascending; the last is the one Cake emits.
    k: &'static [u32],
    acc: &'static [DType],
}

const FP8: &[DType] = &[D::E4M3, D::E5M2];
const ACC_F16_F32: &[DType] = &[D::F16, D::F32];
const ACC_F32: &[DType] = &[D::F32];
const ACC_I32: &[DType] = &[D::I32];

const M16: &[Span] = &[Span::one(16)];
const N8: &[Span] = &[Span::one(8)];
const M64: &[Span] = &[Span::one(64)];
const M64_128: &[Span] = &[Span::one(64), Span::one(128)];
const M128_256: &[Span] = &[Span::one(128), Span::one(256)];
const N8_TO_256: &[Span] = &[Span::range(8, 256, 8)];
/// Integer N: every 8 up to 32, then every 16.
const N_INT: &[Span] = &[Span::range(8, 32, 8), Span::range(48, 256, 16)];
const N16_TO_256: &[Span] = &[Span::range(16, 256, 16)];
const N32_TO_256: &[Span] = &[Span::range(32, 256, 32)];

const SRC_MMA_SYNC: &str = "PTX ISA 9.2, mma.sync m16n8k* shapes (hazards.md §3); FP8 \
                            accumulates in f32 only here (f16 needs a newer PTX, not modelled)";
const SRC_WGMMA: &str = "PTX ISA 9.2 §9.7.15.2; A/B pairing §9.7.15.5.2";
const SRC_TCGEN05: &str = "PTX ISA 9.2 §9.7.16.2.1 Table 39 (dense, without .ws)";

/// `mma.sync`: m16n8k*, plus the f64 m8n8k4 shape.
#[rustfmt::skip]
const MMA_SYNC: &[Rule] = &[
    Rule { a: D::F16,  b: &[D::F16],  m: M16, n: N8, k: &[8, 16],  acc: ACC_F16_F32 },
    Rule { a: D::BF16, b: &[D::BF16], m: M16, n: N8, k: &[8, 16],  acc: ACC_F32 },
    Rule { a: D::TF32, b: &[D::TF32], m: M16, n: N8, k: &[4, 8],   acc: ACC_F32 },
    Rule { a: D::I8,   b: &[D::I8],   m: M16, n: N8, k: &[16, 32], acc: ACC_I32 },
    Rule { a: D::U8,   b: &[D::U8],   m: M16, n: N8, k: &[16, 32], acc: ACC_I32 },
    Rule { a: D::E4M3, b: FP8,        m: M16, n: N8, k: &[32],     acc: ACC_F32 },
    Rule { a: D::E5M2, b: FP8,        m: M16, n: N8, k: &[32],     acc: ACC_F32 },
    Rule { a: D::F64,  b: &[D::F64],  m: &[Span::one(8)], n: N8, k: &[4], acc: &[D::F64] },
];

/// `wgmma.mma_async`: M is always 64.
#[rustfmt::skip]
const WGMMA: &[Rule] = &[
    Rule { a: D::F16,  b: &[D::F16],  m: M64, n: N8_TO_256, k: &[16], acc: ACC_F16_F32 },
    Rule { a: D::BF16, b: &[D::BF16], m: M64, n: N8_TO_256, k: &[16], acc: ACC_F32 },
    Rule { a: D::TF32, b: &[D::TF32], m: M64, n: N8_TO_256, k: &[8],  acc: ACC_F32 },
    Rule { a: D::E4M3, b: FP8,        m: M64, n: N8_TO_256, k: &[32], acc: ACC_F16_F32 },
    Rule { a: D::E5M2, b: FP8,        m: M64, n: N8_TO_256, k: &[32], acc: ACC_F16_F32 },
    Rule { a: D::I8,   b: &[D::I8],   m: M64, n: N_INT,     k: &[32], acc: ACC_I32 },
    Rule { a: D::U8,   b: &[D::U8],   m: M64, n: N_INT,     k: &[32], acc: ACC_I32 },
];

/// `tcgen05.mma.cta_group::1`, kinds f16 (f16, bf16), tf32, f8f6f4 (e4m3, e5m2) and i8.
#[rustfmt::skip]
const TCGEN05: &[Rule] = &[
    Rule { a: D::F16,  b: &[D::F16],  m: M64_128, n: N8_TO_256, k: &[16], acc: ACC_F16_F32 },
    Rule { a: D::BF16, b: &[D::BF16], m: M64_128, n: N8_TO_256, k: &[16], acc: ACC_F32 },
    Rule { a: D::TF32, b: &[D::TF32], m: M64_128, n: N8_TO_256, k: &[8],  acc: ACC_F32 },
    Rule { a: D::E4M3, b: FP8,        m: M64_128, n: N8_TO_256, k: &[32], acc: ACC_F32 },
    Rule { a: D::E5M2, b: FP8,        m: M64_128, n: N8_TO_256, k: &[32], acc: ACC_F32 },
    Rule { a: D::I8,   b: &[D::I8],   m: M64_128, n: N_INT,     k: &[32], acc: ACC_I32 },
    Rule { a: D::U8,   b: &[D::U8],   m: M64_128, n: N_INT,     k: &[32], acc: ACC_I32 },
];

/// `tcgen05.mma.cta_group::2`: M and N span the CTA pair, so M doubles and N steps coarsen.
#[rustfmt::skip]
const TCGEN05_PAIR: &[Rule] = &[
    Rule { a: D::F16,  b: &[D::F16],  m: M128_256, n: N16_TO_256, k: &[16], acc: ACC_F16_F32 },
    Rule { a: D::BF16, b: &[D::BF16], m: M128_256, n: N16_TO_256, k: &[16], acc: ACC_F32 },
    Rule { a: D::TF32, b: &[D::TF32], m: M128_256, n: N16_TO_256, k: &[8],  acc: ACC_F32 },
    Rule { a: D::E4M3, b: FP8,        m: M128_256, n: N16_TO_256, k: &[32], acc: ACC_F32 },
    Rule { a: D::E5M2, b: FP8,        m: M128_256, n: N16_TO_256, k: &[32], acc: ACC_F32 },
    Rule { a: D::I8,   b: &[D::I8],   m: M128_256, n: N32_TO_256, k: &[32], acc: ACC_I32 },
    Rule { a: D::U8,   b: &[D::U8],   m: M128_256, n: N32_TO_256, k: &[32], acc: ACC_I32 },
];

/// The source each family's rules come from.
pub fn mma_rules_source(family: MmaFamily) -> &'static str {
    match family {
        MmaFamily::MmaSync => SRC_MMA_SYNC,
        MmaFamily::Wgmma => SRC_WGMMA,
        MmaFamily::Tcgen05 => SRC_TCGEN05,
    }
}

fn rules(family: MmaFamily, pair: bool) -> &'static [Rule] {
    match (family, pair) {
        (MmaFamily::MmaSync, _) => MMA_SYNC,
        (MmaFamily::Wgmma, _) => WGMMA,
        (MmaFamily::Tcgen05, false) => TCGEN05,
        (MmaFamily::Tcgen05, true) => TCGEN05_PAIR,
    }
}

fn rule(family: MmaFamily, pair: bool, a: DType) -> Option<&'static Rule> {
    rules(family, pair).iter().find(|r| r.a == a)
}

/// How the family is named in messages; tcgen05 also says which CTA group.
fn label(family: MmaFamily, pair: bool) -> &'static str {
    match (family, pair) {
        (MmaFamily::Tcgen05, false) => "tcgen05.mma cta_group::1",
        (MmaFamily::Tcgen05, true) => "tcgen05.mma cta_group::2",
        (f, _) => f.name(),
    }
}

fn dtype_set(ds: &[DType]) -> String {
    let names: Vec<&str> = ds.iter().map(|d| d.name()).collect();
    match names.as_slice() {
        [one] => one.to_string(),
        _ => format!("{{{}}}", names.join(", ")),
    }
}

fn value_set(vs: &[u32]) -> String {
    match vs {
        [one] => format!("= {one}"),
        _ => {
            let vs: Vec<String> = vs.iter().map(u32::to_string).collect();
            format!("in {{{}}}", vs.join(", "))
        }
    }
}

fn span_set(spans: &'static [Span]) -> String {
    match spans {
        [s] if s.lo == s.hi => format!("= {}", s.lo),
        _ => format!("in {}", SpanSet(spans)),
    }
}

fn check(
    family: MmaFamily,
    pair: bool,
    a: DType,
    b: DType,
    acc: DType,
    (m, n, k): (u32, u32, u32),
) -> Result<(), String> {
    let who = label(family, pair);
    let Some(r) = rule(family, pair, a) else {
        let legal: Vec<DType> = rules(family, pair).iter().map(|r| r.a).collect();
        return Err(format!(
            "{who} does not take {a} inputs; it takes {}",
            dtype_set(&legal)
        ));
    };
    if !r.b.contains(&b) {
        return Err(format!(
            "{who} with {a} A needs B = {}; got B = {b}",
            dtype_set(r.b)
        ));
    }
    if !r.acc.contains(&acc) {
        let legal = r
            .acc
            .iter()
            .map(|d| d.name())
            .collect::<Vec<_>>()
            .join(" or ");
        return Err(format!(
            "{who} with {a} inputs accumulates in {legal} only; got {acc}"
        ));
    }
    let bad: Vec<String> = [
        ("M", m, SpanSet(r.m).contains(m)),
        ("N", n, SpanSet(r.n).contains(n)),
        ("K", k, r.k.contains(&k)),
    ]
    .iter()
    .filter(|(_, _, ok)| !ok)
    .map(|(dim, v, _)| format!("{dim} = {v}"))
    .collect();
    if bad.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{who} with {a} inputs needs M {}, N {} and K {}; got {}",
        span_set(r.m),
        span_set(r.n),
        value_set(r.k),
        bad.join(", ")
    ))
}

/// Whether one MMA instruction of `family` may compute `acc[m×n] += a[m×k] · b[k×n]` with
/// these dtypes. For tcgen05 this is the single-CTA form (`cta_group::1`); see
/// [`check_tcgen05_pair_shape`] for CTA pairs.
///
/// Only the instruction's own rules are checked. Whether a target has the instruction (for
/// example FP8 `mma.sync` before sm_89) is [`crate::require`]'s job, with the feature from
/// [`mma_feature`].
pub fn check_mma_shape(
    family: MmaFamily,
    a: DType,
    b: DType,
    acc: DType,
    m: u32,
    n: u32,
    k: u32,
) -> Result<(), String> {
    check(family, false, a, b, acc, (m, n, k))
}

/// [`check_mma_shape`] for `tcgen05.mma.cta_group::2`, where M and N cover the CTA pair.
pub fn check_tcgen05_pair_shape(
    a: DType,
    b: DType,
    acc: DType,
    m: u32,
    n: u32,
    k: u32,
) -> Result<(), String> {
    check(MmaFamily::Tcgen05, true, a, b, acc, (m, n, k))
}

/// The K of one instruction of `family` for A dtype `a`, or `None` when the family does not
/// take `a`. Where several K are legal (mma.sync), this is the largest, which is what Cake emits.
pub fn mma_instr_k(family: MmaFamily, a: DType) -> Option<u32> {
    rule(family, false, a).and_then(|r| r.k.iter().copied().max())
}

/// The accumulator dtypes `family` allows for A dtype `a`; empty when it does not take `a`.
pub fn mma_acc_dtypes(family: MmaFamily, a: DType) -> &'static [DType] {
    rule(family, false, a).map_or(&[], |r| r.acc)
}

/// The feature a target needs to run `family` with A dtype `a`. FP8 `mma.sync` is its own
/// feature because it arrived later (sm_89) than the rest of `mma.sync`.
pub fn mma_feature(family: MmaFamily, a: DType) -> Feature {
    match family {
        MmaFamily::MmaSync if a.is_fp8() => Feature::MmaSyncFp8,
        MmaFamily::MmaSync => Feature::MmaSync,
        MmaFamily::Wgmma => Feature::Wgmma,
        MmaFamily::Tcgen05 => Feature::Tcgen05,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_sets_print_as_lists_and_ranges() {
        assert_eq!(
            SpanSet(N_INT).to_string(),
            "{8, 16, 24, 32} or 48..=256 step 16"
        );
        assert_eq!(SpanSet(M64_128).to_string(), "{64, 128}");
        assert_eq!(SpanSet(N8_TO_256).to_string(), "8..=256 step 8");
    }

    #[test]
    fn every_rule_is_well_formed() {
        for table in [MMA_SYNC, WGMMA, TCGEN05, TCGEN05_PAIR] {
            for r in table {
                assert!(r.b.contains(&r.a), "{}: B set must include A", r.a);
                assert!(!r.k.is_empty() && r.k.windows(2).all(|w| w[0] < w[1]));
                for s in r.m.iter().chain(r.n) {
                    assert!(s.lo <= s.hi && s.step > 0);
                }
                assert_eq!(
                    table.iter().filter(|o| o.a == r.a).count(),
                    1,
                    "one row per A"
                );
            }
        }
    }
}
