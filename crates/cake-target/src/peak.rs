//! Physical ceilings per target, for the harness's "too fast to be true" check: a measured time
//! below `flops ÷ peak` or `bytes ÷ bandwidth` is a measurement or correctness bug, never a win.
//!
//! A target covers several products; each ceiling is the highest among them, so the floor it
//! gives is a lower bound on the time for every product of the target.

/// Dense tensor-core throughput and DRAM bandwidth, with where the numbers come from.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Peak {
    /// Dense (no sparsity) tensor-core TFLOP/s with 16-bit inputs (bf16/f16) and f32 accumulate.
    pub tflops_16bit: f64,
    /// Dense tensor-core TFLOP/s with 8-bit floating-point inputs; `None` without FP8.
    pub tflops_fp8: Option<f64>,
    /// DRAM bandwidth in GB/s (10⁹ B/s).
    pub dram_gbps: f64,
    pub source: &'static str,
}

const PEAKS: &[(&str, Peak)] = &[
    (
        "sm_80",
        Peak {
            tflops_16bit: 312.0,
            tflops_fp8: None,
            dram_gbps: 2039.0,
            source: "NVIDIA A100 datasheet (SXM4 80 GB: 312 TF BF16 dense, 2,039 GB/s)",
        },
    ),
    (
        "sm_90a",
        Peak {
            tflops_16bit: 989.4,
            tflops_fp8: Some(1978.9),
            dram_gbps: 4800.0,
            source: "NVIDIA H100/H200 datasheets (SXM: 989 TF BF16 dense, 1,979 TF FP8 dense; \
                     H200 4.8 TB/s)",
        },
    ),
];

/// Ceilings of one product of a target, by the exact name its driver reports: a floor for that
/// card only. Only names that denote one product are listed ("NVIDIA H100 NVL" streams 3.9 TB/s,
/// more than the SXM5's 3.35, so a word such as `H100` would not do); any other name takes the
/// target's ceilings.
const CARD_PEAKS: &[(&str, &str, Peak)] = &[(
    "sm_90a",
    "NVIDIA H100 80GB HBM3",
    Peak {
        tflops_16bit: 989.4,
        tflops_fp8: Some(1978.9),
        dram_gbps: 3350.0,
        source: "NVIDIA H100 datasheet (H100 SXM: 989 TF BF16 dense, 1,979 TF FP8 dense, \
                 3.35 TB/s)",
    },
)];

/// The ceilings of `target`, where the table has them (today sm_80 and sm_90a).
pub fn peak(target: &str) -> Option<Peak> {
    PEAKS.iter().find(|(t, _)| *t == target).map(|(_, p)| *p)
}

/// The ceilings of `target` on the GPU named `gpu` (the driver's name): the card's own where the
/// table lists that exact name, else the target's ([`peak`]), which hold for every product.
pub fn peak_for(target: &str, gpu: Option<&str>) -> Option<Peak> {
    let card = gpu.and_then(|g| {
        CARD_PEAKS
            .iter()
            .find(|(t, name, _)| *t == target && name.eq_ignore_ascii_case(g.trim()))
    });
    card.map(|(_, _, p)| *p).or_else(|| peak(target))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_peak_names_a_known_target() {
        for (t, p) in super::PEAKS {
            assert!(crate::lookup(t).is_ok(), "{t}");
            assert!(p.tflops_16bit > 0.0 && p.dram_gbps > 0.0 && !p.source.is_empty());
        }
    }

    /// A card's ceilings are never above its target's: the target's hold for every product.
    #[test]
    fn a_cards_peak_is_within_its_targets() {
        for (t, name, p) in super::CARD_PEAKS {
            let target = super::peak(t).unwrap();
            assert!(p.dram_gbps <= target.dram_gbps && p.tflops_16bit <= target.tflops_16bit);
            assert_eq!(super::peak_for(t, Some(name)), Some(*p));
        }
        let h100 = super::peak_for("sm_90a", Some("NVIDIA H100 80GB HBM3")).unwrap();
        assert_eq!(h100.dram_gbps, 3350.0);
        // Another product with the same word, or no name: the target's ceilings.
        for gpu in [Some("NVIDIA H100 NVL"), Some("NVIDIA H200"), None] {
            assert_eq!(
                super::peak_for("sm_90a", gpu),
                super::peak("sm_90a"),
                "{gpu:?}"
            );
        }
    }
}
