//! Instruction families whose availability differs between targets.

use std::fmt;

use serde::{Serialize, Serializer};

/// Instruction families whose availability differs per target.
///
/// Which target has which feature is recorded once, in each [`crate::Target`]'s `features`
/// list; this type only names and describes the families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Feature {
    MmaSync,
    MmaSyncFp8,
    MmaSyncBlockScaled,
    Ldmatrix,
    Stmatrix,
    CpAsync,
    Mbarrier,
    MbarrierExpectTx,
    Tma,
    TmaMulticast,
    Clusters,
    DistributedSmem,
    FenceProxyAsync,
    Wgmma,
    SetMaxNReg,
    Tcgen05,
    Tmem,
    /// `tcgen05` with `cta_group::2`: one MMA spread over a pair of CTAs.
    Tcgen05Pair,
}

/// One row per feature: its stable name, a one-line description, and where the PTX ISA makes
/// it available (which may be wider than Cake's own target list).
struct Info {
    feature: Feature,
    name: &'static str,
    describe: &'static str,
    hint: &'static str,
}

#[rustfmt::skip]
const INFO: &[Info] = &[
    Info { feature: Feature::MmaSync, name: "mma-sync",
        describe: "warp-level MMA (mma.sync)",
        hint: "sm_80 and later" },
    Info { feature: Feature::MmaSyncFp8, name: "mma-sync-fp8",
        describe: "FP8 e4m3/e5m2 warp-level MMA (mma.sync m16n8k32)",
        hint: "sm_89 and later" },
    Info { feature: Feature::MmaSyncBlockScaled, name: "mma-sync-block-scaled",
        describe: "block-scaled warp-level MMA (mma.sync kind::mxf8f6f4 / block_scale)",
        hint: "sm_120a family only" },
    Info { feature: Feature::Ldmatrix, name: "ldmatrix",
        describe: "warp-cooperative shared-to-register matrix load (ldmatrix)",
        hint: "sm_75 and later" },
    Info { feature: Feature::Stmatrix, name: "stmatrix",
        describe: "warp-cooperative register-to-shared matrix store (stmatrix)",
        hint: "sm_90 and later" },
    Info { feature: Feature::CpAsync, name: "cp-async",
        describe: "per-thread asynchronous global-to-shared copy (cp.async)",
        hint: "sm_80 and later" },
    Info { feature: Feature::Mbarrier, name: "mbarrier",
        describe: "shared-memory barrier objects (mbarrier arrive / test_wait)",
        hint: "sm_80 and later" },
    Info { feature: Feature::MbarrierExpectTx, name: "mbarrier-expect-tx",
        describe: "mbarrier transaction counts and try_wait (mbarrier.expect_tx)",
        hint: "sm_90 and later" },
    Info { feature: Feature::Tma, name: "tma",
        describe: "tensor memory accelerator bulk copies (cp.async.bulk.tensor)",
        hint: "sm_90 and later" },
    Info { feature: Feature::TmaMulticast, name: "tma-multicast",
        describe: "TMA loads delivered to several CTAs of a cluster (.multicast::cluster)",
        hint: "sm_90a and the sm_100 family (the only targets it is tuned for)" },
    Info { feature: Feature::Clusters, name: "clusters",
        describe: "thread-block clusters (barrier.cluster, %cluster_ctarank)",
        hint: "sm_90 and later" },
    Info { feature: Feature::DistributedSmem, name: "distributed-smem",
        describe: "access to a peer CTA's shared memory in the cluster (shared::cluster)",
        hint: "sm_90 and later" },
    Info { feature: Feature::FenceProxyAsync, name: "fence-proxy-async",
        describe: "generic-to-async proxy fence (fence.proxy.async)",
        hint: "sm_90 and later" },
    Info { feature: Feature::Wgmma, name: "wgmma",
        describe: "warpgroup MMA (wgmma.mma_async)",
        hint: "sm_90a only" },
    Info { feature: Feature::SetMaxNReg, name: "setmaxnreg",
        describe: "per-warpgroup register reallocation (setmaxnreg)",
        hint: "sm_90a, sm_100a family, sm_110a, sm_120a family" },
    Info { feature: Feature::Tcgen05, name: "tcgen05",
        describe: "fifth-generation tensor-core MMA (tcgen05.mma)",
        hint: "sm_100a, sm_100f, sm_103a, sm_110a; not sm_120" },
    Info { feature: Feature::Tmem, name: "tmem",
        describe: "tensor memory allocation and access (tcgen05.alloc / ld / st)",
        hint: "sm_100a, sm_100f, sm_103a, sm_110a; not sm_120" },
    Info { feature: Feature::Tcgen05Pair, name: "tcgen05-pair",
        describe: "two-CTA tensor-core MMA (tcgen05 cta_group::2)",
        hint: "sm_100a, sm_100f, sm_103a, sm_110a; not sm_120" },
];

impl Feature {
    /// Every feature, in declaration order.
    pub const ALL: [Feature; 18] = [
        Feature::MmaSync,
        Feature::MmaSyncFp8,
        Feature::MmaSyncBlockScaled,
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
        Feature::Tcgen05,
        Feature::Tmem,
        Feature::Tcgen05Pair,
    ];

    fn info(self) -> &'static Info {
        // Indexed by discriminant; `feature_table_is_in_declaration_order` keeps them in step.
        &INFO[self as usize]
    }

    /// Stable kebab-case name used in diagnostics and JSON (`"mma-sync-fp8"`).
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The feature with this kebab-case name.
    pub fn from_name(name: &str) -> Option<Feature> {
        INFO.iter().find(|i| i.name == name).map(|i| i.feature)
    }

    /// One line naming the instructions the feature covers.
    pub fn describe(self) -> &'static str {
        self.info().describe
    }

    /// Where the PTX ISA offers the feature, as prose. Cake may support fewer targets; for
    /// Cake's own list use [`Feature::targets`].
    pub fn min_targets_hint(self) -> &'static str {
        self.info().hint
    }

    /// The names of the Cake targets that have this feature, in table order.
    pub fn targets(self) -> Vec<&'static str> {
        crate::TARGETS
            .iter()
            .filter(|t| t.has(self))
            .map(|t| t.name)
            .collect()
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Feature {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_table_is_in_declaration_order() {
        assert_eq!(INFO.len(), Feature::ALL.len());
        for (i, f) in Feature::ALL.iter().enumerate() {
            assert_eq!(INFO[i].feature, *f);
            assert_eq!(*f as usize, i);
        }
    }

    #[test]
    fn names_are_unique_kebab_case_and_round_trip() {
        for f in Feature::ALL {
            let name = f.name();
            assert!(name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
            assert_eq!(Feature::from_name(name), Some(f));
            assert!(!f.describe().is_empty() && !f.min_targets_hint().is_empty());
        }
        assert_eq!(Feature::Wgmma.name(), "wgmma");
        assert_eq!(Feature::MmaSyncFp8.name(), "mma-sync-fp8");
        assert_eq!(Feature::Tma.name(), "tma");
        assert_eq!(Feature::Wgmma.describe(), "warpgroup MMA (wgmma.mma_async)");
    }
}
