//! The target table: one [`Target`] per architecture Cake compiles for.
//!
//! Everything here is data. Each number is paired with a source string in the target's
//! `sources` list so that a diagnostic quoting a limit can also say where the limit comes from,
//! and so that unverified values (marked `[U]`) stay visibly unverified.

use std::fmt;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use crate::feature::Feature;
use crate::mma::MmaFamily;

/// One compilation target. Cake never substitutes one target for another: `a` targets are not
/// forward-compatible, so a kernel built for `sm_90a` is only ever built for `sm_90a`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The name users type (`"sm_90a"`).
    pub name: &'static str,
    /// Representative products (`"H100 / H200"`).
    pub sku: &'static str,
    /// The virtual architecture passed to nvcc (`"compute_90a"`).
    pub compute: &'static str,
    /// The real architecture passed to nvcc (`"sm_90a"`).
    pub sm: &'static str,
    /// Compute capability (major, minor).
    pub cc: (u32, u32),
    /// Instruction families the target supports.
    pub features: &'static [Feature],
    /// The tensor-core family Cake prefers for MMAs whose operands come from shared memory.
    pub mma: MmaFamily,
    pub limits: Limits,
    /// Tensor memory, on targets that have it.
    pub tmem: Option<TmemSpec>,
    /// `(field, source)` pairs; see [`SOURCED_FIELDS`] for the field names.
    #[serde(serialize_with = "sources_as_map")]
    pub sources: &'static [(&'static str, &'static str)],
}

/// Per-launch resource limits. Sizes are bytes; register counts are 32-bit registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Shared memory on one SM.
    pub smem_per_sm: u32,
    /// Most shared memory one block may use, after opting in to large dynamic smem.
    pub smem_per_block_optin: u32,
    /// Most static (`__shared__`) memory one block may declare without the opt-in.
    pub smem_static_max: u32,
    pub regs_per_sm: u32,
    pub regs_per_block: u32,
    pub regs_per_thread: u32,
    pub threads_per_block: u32,
    pub threads_per_sm: u32,
    pub max_ctas_per_sm: u32,
    /// Largest cluster every launch may use; 0 means the target has no clusters.
    pub cluster_portable: u32,
    /// Largest cluster with the non-portable opt-in; 0 means no clusters.
    pub cluster_max: u32,
    /// `setmaxnreg` operand range as (min, max, step); `None` where the instruction is absent.
    #[serde(serialize_with = "setmaxnreg_as_object")]
    pub setmaxnreg: Option<(u32, u32, u32)>,
    pub warp_size: u32,
}

impl Limits {
    /// Registers each thread of a `threads`-thread block gets at launch: the block's share of
    /// the register file, allocated per thread in steps of 8 (so a 255-register cap holds 256).
    pub fn launch_registers(&self, threads: u32) -> u32 {
        ((self.regs_per_block / threads.max(1)) / 8 * 8)
            .min(self.regs_per_thread.next_multiple_of(8))
    }
}

/// Tensor memory of one CTA: `lanes` × `columns` cells of 32 bits. Allocations are a power of
/// two number of columns between `min_alloc_cols` and `max_alloc_cols`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TmemSpec {
    pub lanes: u32,
    pub columns: u32,
    pub min_alloc_cols: u32,
    pub max_alloc_cols: u32,
}

impl Target {
    /// Whether the target supports the feature.
    pub fn has(&self, f: Feature) -> bool {
        self.features.contains(&f)
    }

    /// Where the value of `field` comes from. Field names are those in [`SOURCED_FIELDS`].
    pub fn source_of(&self, field: &str) -> Option<&'static str> {
        self.sources
            .iter()
            .find(|(name, _)| *name == field)
            .map(|(_, source)| *source)
    }

    /// Whether the PTX of this target's virtual architecture runs on later GPUs too (the driver
    /// JIT-compiles it): true for `compute_80`, `compute_89`; false for the architecture-specific
    /// `a` targets, whose PTX (`compute_90a`, ...) runs only on that exact architecture (CUDA C++
    /// Programming Guide, "Feature availability": arch-specific features are not forward
    /// compatible). Only such a target may ship its PTX for another GPU (`--embed-ptx`).
    pub fn ptx_forward_compatible(&self) -> bool {
        !self.compute.ends_with('a')
    }

    /// Whether a kernel built for this target with its PTX embedded can run on a GPU of compute
    /// capability `cc`: the target's own, or a later one when the PTX is forward compatible.
    pub fn runs_on(&self, cc: (u32, u32), embed_ptx: bool) -> bool {
        cc == self.cc || (embed_ptx && self.ptx_forward_compatible() && cc > self.cc)
    }

    /// Whether the value of `field` is marked unverified (`[U]`) in its source.
    pub fn is_unverified(&self, field: &str) -> bool {
        self.source_of(field).is_some_and(|s| s.contains("[U]"))
    }
}

/// The [`Limits`] field names, in declaration order. Every target has a source for each.
pub const LIMIT_FIELDS: [&str; 13] = [
    "smem_per_sm",
    "smem_per_block_optin",
    "smem_static_max",
    "regs_per_sm",
    "regs_per_block",
    "regs_per_thread",
    "threads_per_block",
    "threads_per_sm",
    "max_ctas_per_sm",
    "cluster_portable",
    "cluster_max",
    "setmaxnreg",
    "warp_size",
];

/// Every field name a target's `sources` covers: the [`Limits`] fields plus the target-level
/// facts (`cc`, `features`, `mma`, `tmem`).
pub const SOURCED_FIELDS: [&str; 17] = [
    "smem_per_sm",
    "smem_per_block_optin",
    "smem_static_max",
    "regs_per_sm",
    "regs_per_block",
    "regs_per_thread",
    "threads_per_block",
    "threads_per_sm",
    "max_ctas_per_sm",
    "cluster_portable",
    "cluster_max",
    "setmaxnreg",
    "warp_size",
    "cc",
    "features",
    "mma",
    "tmem",
];

// ---------------------------------------------------------------------------------------------
// Source strings shared by several targets. Target-specific ones are written inline.

const SRC_CC: &str = "CUDA C++ Programming Guide, compute capabilities";
const SRC_WARP: &str = "PTX ISA 9.2 (WARP_SZ is 32 on every target)";
const SRC_STATIC: &str =
    "CUDA C++ Programming Guide (static smem capped at 48 KB; beyond that, dynamic smem plus \
     the MaxDynamicSharedMemorySize opt-in)";
const SRC_T31: &str = "CUDA C++ Programming Guide Table 31 (v13.4.2)";
const SRC_QUOTED: &str =
    "CUDA C++ Programming Guide (commonly quoted value, not re-verified; hazards.md §3)";
const SRC_CTAS_U: &str = "CUDA C++ Programming Guide (commonly quoted, unverified [U])";
const SRC_NO_CLUSTER: &str = "PTX ISA 9.2 target requirements: clusters need sm_90 or later";
const SRC_SETMAXNREG: &str = "PTX ISA 9.2 §9.7.19.5 (24..=256 registers, multiple of 8)";
const SRC_NO_SETMAXNREG: &str = "PTX ISA 9.2 §9.7.19.5: setmaxnreg needs sm_90a or later";
const SRC_NO_TMEM: &str =
    "PTX ISA 9.2 target requirements: tensor memory exists only on the sm_100 family and sm_110a";
const SRC_TMEM: &str = "PTX ISA 9.2 §9.7.16.1 (128 lanes x 512 columns x 32 bit per CTA); \
                        §9.7.16.7.1 (alloc 32..=512 columns, power of 2)";
const SRC_MMA: &str = "Cake system description Table 3 (tensor-core path per target)";
const SRC_SM121_AS_SM120: &str = "sm_120a value (hazards.md §3), assumed for sm_121a [U]";
const SRC_FEATURES: &str =
    "PTX ISA 9.2 target requirements (hazards.md §1(c) C1); Cake system description Table 3";

/// Register file: the same on every Cake target.
const REGS_PER_SM: u32 = 65_536;
const REGS_PER_BLOCK: u32 = 65_536;
const REGS_PER_THREAD: u32 = 255;
const SMEM_STATIC_MAX: u32 = 48 * 1024;
const WARP_SIZE: u32 = 32;
const SETMAXNREG: Option<(u32, u32, u32)> = Some((24, 256, 8));

const SM80_FEATURES: &[Feature] = &[
    Feature::MmaSync,
    Feature::Ldmatrix,
    Feature::CpAsync,
    Feature::Mbarrier,
];

const SM89_FEATURES: &[Feature] = &[
    Feature::MmaSync,
    Feature::MmaSyncFp8,
    Feature::Ldmatrix,
    Feature::CpAsync,
    Feature::Mbarrier,
];

const SM90A_FEATURES: &[Feature] = &[
    Feature::MmaSync,
    Feature::MmaSyncFp8,
    Feature::Ldmatrix,
    Feature::Stmatrix,
    Feature::CpAsync,
    Feature::Mbarrier,
    Feature::MbarrierExpectTx,
    Feature::Tma,
    Feature::TmaMulticast,
    Feature::Clusters,
    Feature::DistributedSmem,
    Feature::FenceProxyAsync,
    Feature::Wgmma,
    Feature::SetMaxNReg,
];

/// sm_90a without wgmma, plus the tcgen05 family.
const SM100_FEATURES: &[Feature] = &[
    Feature::MmaSync,
    Feature::MmaSyncFp8,
    Feature::Ldmatrix,
    Feature::Stmatrix,
    Feature::CpAsync,
    Feature::Mbarrier,
    Feature::MbarrierExpectTx,
    Feature::Tma,
    Feature::TmaMulticast,
    Feature::Clusters,
    Feature::DistributedSmem,
    Feature::FenceProxyAsync,
    Feature::SetMaxNReg,
    Feature::Tcgen05,
    Feature::Tmem,
    Feature::Tcgen05Pair,
];

/// Consumer Blackwell: block-scaled mma.sync, no wgmma, no tcgen05/TMEM, and TMA multicast
/// treated as absent because it is tuned only for sm_90a and the sm_100 family.
const SM120_FEATURES: &[Feature] = &[
    Feature::MmaSync,
    Feature::MmaSyncFp8,
    Feature::MmaSyncBlockScaled,
    Feature::Ldmatrix,
    Feature::Stmatrix,
    Feature::CpAsync,
    Feature::Mbarrier,
    Feature::MbarrierExpectTx,
    Feature::Tma,
    Feature::Clusters,
    Feature::DistributedSmem,
    Feature::FenceProxyAsync,
    Feature::SetMaxNReg,
];

const TMEM_SM100: TmemSpec = TmemSpec {
    lanes: 128,
    columns: 512,
    min_alloc_cols: 32,
    max_alloc_cols: 512,
};

const SM_80: Target = Target {
    name: "sm_80",
    sku: "A100",
    compute: "compute_80",
    sm: "sm_80",
    cc: (8, 0),
    features: SM80_FEATURES,
    mma: MmaFamily::MmaSync,
    limits: Limits {
        smem_per_sm: 164 * 1024,
        smem_per_block_optin: 163 * 1024,
        smem_static_max: SMEM_STATIC_MAX,
        regs_per_sm: REGS_PER_SM,
        regs_per_block: REGS_PER_BLOCK,
        regs_per_thread: REGS_PER_THREAD,
        threads_per_block: 1024,
        threads_per_sm: 2048,
        max_ctas_per_sm: 32,
        cluster_portable: 0,
        cluster_max: 0,
        setmaxnreg: None,
        warp_size: WARP_SIZE,
    },
    tmem: None,
    sources: &[
        ("smem_per_sm", SRC_QUOTED),
        ("smem_per_block_optin", SRC_QUOTED),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_QUOTED),
        ("regs_per_block", SRC_QUOTED),
        ("regs_per_thread", SRC_QUOTED),
        ("threads_per_block", SRC_QUOTED),
        ("threads_per_sm", SRC_QUOTED),
        ("max_ctas_per_sm", SRC_QUOTED),
        ("cluster_portable", SRC_NO_CLUSTER),
        ("cluster_max", SRC_NO_CLUSTER),
        ("setmaxnreg", SRC_NO_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        ("features", SRC_FEATURES),
        ("mma", SRC_MMA),
        ("tmem", SRC_NO_TMEM),
    ],
};

const SM_89: Target = Target {
    name: "sm_89",
    sku: "L40S / RTX 6000 Ada",
    compute: "compute_89",
    sm: "sm_89",
    cc: (8, 9),
    features: SM89_FEATURES,
    mma: MmaFamily::MmaSync,
    limits: Limits {
        smem_per_sm: 100 * 1024,
        smem_per_block_optin: 99 * 1024,
        smem_static_max: SMEM_STATIC_MAX,
        regs_per_sm: REGS_PER_SM,
        regs_per_block: REGS_PER_BLOCK,
        regs_per_thread: REGS_PER_THREAD,
        threads_per_block: 1024,
        threads_per_sm: 1536,
        max_ctas_per_sm: 24,
        cluster_portable: 0,
        cluster_max: 0,
        setmaxnreg: None,
        warp_size: WARP_SIZE,
    },
    tmem: None,
    sources: &[
        ("smem_per_sm", SRC_T31),
        ("smem_per_block_optin", SRC_T31),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_T31),
        ("regs_per_block", SRC_T31),
        ("regs_per_thread", SRC_T31),
        ("threads_per_block", SRC_QUOTED),
        ("threads_per_sm", SRC_QUOTED),
        ("max_ctas_per_sm", SRC_CTAS_U),
        ("cluster_portable", SRC_NO_CLUSTER),
        ("cluster_max", SRC_NO_CLUSTER),
        ("setmaxnreg", SRC_NO_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        ("features", SRC_FEATURES),
        ("mma", SRC_MMA),
        ("tmem", SRC_NO_TMEM),
    ],
};

const SM_90A: Target = Target {
    name: "sm_90a",
    sku: "H100 / H200",
    compute: "compute_90a",
    sm: "sm_90a",
    cc: (9, 0),
    features: SM90A_FEATURES,
    mma: MmaFamily::Wgmma,
    limits: Limits {
        smem_per_sm: 228 * 1024,
        smem_per_block_optin: 227 * 1024,
        smem_static_max: SMEM_STATIC_MAX,
        regs_per_sm: REGS_PER_SM,
        regs_per_block: REGS_PER_BLOCK,
        regs_per_thread: REGS_PER_THREAD,
        threads_per_block: 1024,
        threads_per_sm: 2048,
        max_ctas_per_sm: 32,
        cluster_portable: 8,
        cluster_max: 16,
        setmaxnreg: SETMAXNREG,
        warp_size: WARP_SIZE,
    },
    tmem: None,
    sources: &[
        ("smem_per_sm", SRC_T31),
        (
            "smem_per_block_optin",
            "CUDA C++ Programming Guide Table 31 (v13.4.2); matches CUTLASS \
             sm90_smem_capacity_bytes = 232448",
        ),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_T31),
        ("regs_per_block", SRC_T31),
        ("regs_per_thread", SRC_T31),
        ("threads_per_block", SRC_QUOTED),
        ("threads_per_sm", SRC_QUOTED),
        ("max_ctas_per_sm", SRC_CTAS_U),
        (
            "cluster_portable",
            "CUDA C++ Programming Guide, thread block clusters (portable size 8)",
        ),
        (
            "cluster_max",
            "CUDA C++ Programming Guide, thread block clusters (16 on H100 with the \
             non-portable cluster size opt-in)",
        ),
        ("setmaxnreg", SRC_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        ("features", SRC_FEATURES),
        ("mma", SRC_MMA),
        ("tmem", SRC_NO_TMEM),
    ],
};

const SM_100A: Target = Target {
    name: "sm_100a",
    sku: "B200",
    compute: "compute_100a",
    sm: "sm_100a",
    cc: (10, 0),
    features: SM100_FEATURES,
    mma: MmaFamily::Tcgen05,
    limits: Limits {
        smem_per_sm: 228 * 1024,
        smem_per_block_optin: 227 * 1024,
        smem_static_max: SMEM_STATIC_MAX,
        regs_per_sm: REGS_PER_SM,
        regs_per_block: REGS_PER_BLOCK,
        regs_per_thread: REGS_PER_THREAD,
        threads_per_block: 1024,
        threads_per_sm: 2048,
        max_ctas_per_sm: 32,
        cluster_portable: 8,
        cluster_max: 16,
        setmaxnreg: SETMAXNREG,
        warp_size: WARP_SIZE,
    },
    tmem: Some(TMEM_SM100),
    sources: &[
        ("smem_per_sm", SRC_T31),
        (
            "smem_per_block_optin",
            "CUDA C++ Programming Guide Table 31 (v13.4.2); matches CUTLASS \
             sm100_smem_capacity_bytes = 232448",
        ),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_T31),
        ("regs_per_block", SRC_T31),
        ("regs_per_thread", SRC_T31),
        ("threads_per_block", SRC_QUOTED),
        ("threads_per_sm", SRC_QUOTED),
        ("max_ctas_per_sm", SRC_CTAS_U),
        (
            "cluster_portable",
            "CUDA C++ Programming Guide, thread block clusters (portable size 8; B200 \
             unverified [U])",
        ),
        (
            "cluster_max",
            "assumed equal to H100's non-portable 16; B200 unverified [U]",
        ),
        ("setmaxnreg", SRC_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        ("features", SRC_FEATURES),
        ("mma", SRC_MMA),
        ("tmem", SRC_TMEM),
    ],
};

/// B300: the sm_100a numbers. The opt-in smem limit in particular is not confirmed for sm_103.
const SM_103A: Target = Target {
    name: "sm_103a",
    sku: "B300",
    compute: "compute_103a",
    sm: "sm_103a",
    cc: (10, 3),
    features: SM100_FEATURES,
    mma: MmaFamily::Tcgen05,
    limits: SM_100A.limits,
    tmem: Some(TMEM_SM100),
    sources: &[
        (
            "smem_per_sm",
            "CUDA C++ Programming Guide Table 31 (v13.4.2), sm_100a/103a column",
        ),
        (
            "smem_per_block_optin",
            "CUDA C++ Programming Guide Table 31 (v13.4.2), sm_100a value; not confirmed for \
             sm_103 [U]",
        ),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_T31),
        ("regs_per_block", SRC_T31),
        ("regs_per_thread", SRC_T31),
        ("threads_per_block", SRC_QUOTED),
        ("threads_per_sm", SRC_QUOTED),
        ("max_ctas_per_sm", SRC_CTAS_U),
        (
            "cluster_portable",
            "CUDA C++ Programming Guide, thread block clusters (portable size 8; Blackwell \
             unverified [U])",
        ),
        (
            "cluster_max",
            "assumed equal to H100's non-portable 16; Blackwell unverified [U]",
        ),
        ("setmaxnreg", SRC_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        ("features", SRC_FEATURES),
        ("mma", SRC_MMA),
        ("tmem", SRC_TMEM),
    ],
};

const SM_120A: Target = Target {
    name: "sm_120a",
    sku: "RTX 5090 / RTX PRO 6000",
    compute: "compute_120a",
    sm: "sm_120a",
    cc: (12, 0),
    features: SM120_FEATURES,
    mma: MmaFamily::MmaSync,
    limits: Limits {
        smem_per_sm: 100 * 1024,
        smem_per_block_optin: 99 * 1024,
        smem_static_max: SMEM_STATIC_MAX,
        regs_per_sm: REGS_PER_SM,
        regs_per_block: REGS_PER_BLOCK,
        regs_per_thread: REGS_PER_THREAD,
        threads_per_block: 1024,
        threads_per_sm: 1536,
        max_ctas_per_sm: 32,
        cluster_portable: 8,
        cluster_max: 8,
        setmaxnreg: SETMAXNREG,
        warp_size: WARP_SIZE,
    },
    tmem: None,
    sources: &[
        (
            "smem_per_sm",
            "CUDA C++ Programming Guide Table 31 (v13.4.2); the Blackwell tuning guide says \
             128 KB instead [U]",
        ),
        (
            "smem_per_block_optin",
            "CUDA C++ Programming Guide Table 31 (v13.4.2); matches CUTLASS \
             sm120_smem_capacity_bytes = 101376",
        ),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_T31),
        ("regs_per_block", SRC_T31),
        ("regs_per_thread", SRC_T31),
        ("threads_per_block", SRC_QUOTED),
        (
            "threads_per_sm",
            "CUDA C++ Programming Guide (commonly quoted, unverified [U])",
        ),
        ("max_ctas_per_sm", SRC_CTAS_U),
        ("cluster_portable", "assumed, unverified [U]"),
        ("cluster_max", "assumed, unverified [U]"),
        ("setmaxnreg", SRC_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        (
            "features",
            "PTX ISA 9.2 target requirements (hazards.md §1(c) C1); Cake system description \
             Table 3; TMA multicast left out (tuned only for sm_90a and the sm_100 family)",
        ),
        ("mma", SRC_MMA),
        ("tmem", SRC_NO_TMEM),
    ],
};

/// DGX Spark: the instruction surface of sm_120a in a separate cubin. Its limits are taken
/// from sm_120a, which no source confirms for sm_121, so every limit is marked `[U]`.
const SM_121A: Target = Target {
    name: "sm_121a",
    sku: "DGX Spark (GB10)",
    compute: "compute_121a",
    sm: "sm_121a",
    cc: (12, 1),
    features: SM120_FEATURES,
    mma: MmaFamily::MmaSync,
    limits: SM_120A.limits,
    tmem: None,
    sources: &[
        ("smem_per_sm", SRC_SM121_AS_SM120),
        ("smem_per_block_optin", SRC_SM121_AS_SM120),
        ("smem_static_max", SRC_STATIC),
        ("regs_per_sm", SRC_SM121_AS_SM120),
        ("regs_per_block", SRC_SM121_AS_SM120),
        ("regs_per_thread", SRC_SM121_AS_SM120),
        ("threads_per_block", SRC_SM121_AS_SM120),
        ("threads_per_sm", SRC_SM121_AS_SM120),
        ("max_ctas_per_sm", SRC_SM121_AS_SM120),
        ("cluster_portable", SRC_SM121_AS_SM120),
        ("cluster_max", SRC_SM121_AS_SM120),
        ("setmaxnreg", SRC_SETMAXNREG),
        ("warp_size", SRC_WARP),
        ("cc", SRC_CC),
        (
            "features",
            "Cake system description Table 3 (same instruction surface as sm_120a); TMA \
             multicast left out as on sm_120a",
        ),
        ("mma", SRC_MMA),
        ("tmem", SRC_NO_TMEM),
    ],
};

/// Every target Cake compiles for, oldest first.
pub const TARGETS: &[Target] = &[SM_80, SM_89, SM_90A, SM_100A, SM_103A, SM_120A, SM_121A];

/// The target with exactly this name. There is no fallback to a nearby architecture: a kernel
/// tuned for one target is never silently compiled for another.
pub fn lookup(name: &str) -> Result<&'static Target, UnknownTarget> {
    TARGETS
        .iter()
        .find(|t| t.name == name)
        .ok_or_else(|| UnknownTarget {
            requested: name.to_string(),
            known: TARGETS.iter().map(|t| t.name).collect(),
        })
}

/// Returned by [`lookup`] for a name that is not in [`TARGETS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTarget {
    pub requested: String,
    pub known: Vec<&'static str>,
}

impl UnknownTarget {
    /// The target the user most likely meant, when the request names the same architecture
    /// in another spelling (`sm_90` → `sm_90a`, `SM100A` → `sm_100a`, `compute_120` →
    /// `sm_120a`, `9.0` → `sm_90a`). Never suggests a different architecture: `sm_86` gets
    /// no suggestion, because stepping down to `sm_80` would change what the kernel may use.
    pub fn suggestion(&self) -> Option<&'static str> {
        suggest(&self.requested)
    }
}

fn suggest(requested: &str) -> Option<&'static str> {
    let lower = requested.trim().to_ascii_lowercase();
    if let Some((major, minor)) = lower.split_once('.') {
        let cc = (major.parse::<u32>().ok()?, minor.parse::<u32>().ok()?);
        return TARGETS.iter().find(|t| t.cc == cc).map(|t| t.name);
    }
    let rest = ["compute_", "compute", "sm_", "sm"]
        .iter()
        .find_map(|prefix| lower.strip_prefix(prefix))
        .unwrap_or(&lower);
    let digits = rest.trim_end_matches(['a', 'f']);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    TARGETS
        .iter()
        .find(|t| t.name.trim_start_matches("sm_").trim_end_matches('a') == digits)
        .map(|t| t.name)
}

impl fmt::Display for UnknownTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown target `{}`; known targets: {}",
            self.requested,
            self.known.join(", ")
        )
    }
}

impl std::error::Error for UnknownTarget {}

/// `Ok` when `target` has `f`; otherwise a reason naming the Cake targets that do.
pub fn require(target: &Target, f: Feature) -> Result<(), String> {
    if target.has(f) {
        return Ok(());
    }
    let with = f.targets();
    let with = if with.is_empty() {
        "none".to_string()
    } else {
        with.join(", ")
    };
    Err(format!(
        "target {} has no `{}`, {}; Cake targets with it: {}",
        target.name,
        f.name(),
        f.describe(),
        with
    ))
}

fn sources_as_map<S: Serializer>(
    sources: &&'static [(&'static str, &'static str)],
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(sources.len()))?;
    for (field, source) in sources.iter() {
        map.serialize_entry(field, source)?;
    }
    map.end()
}

fn setmaxnreg_as_object<S: Serializer>(
    v: &Option<(u32, u32, u32)>,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Range {
        min: u32,
        max: u32,
        step: u32,
    }
    v.map(|(min, max, step)| Range { min, max, step })
        .serialize(s)
}
