//! Calibration tables: the measured constants of one target, as data.
//!
//! A table is TOML (`calibration/<target>.toml`, embedded with `include_str!`): a `[meta]`
//! section (target, GPU, driver, date, how it was made) and one `[params]` entry per constant,
//! each `{ value = ..., source = "..." }`. Values marked `[U]` in their source are estimates
//! nobody has measured yet. A target without a table gets no estimate (`CostError::NoCalibration`),
//! never another target's numbers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::CostError;

/// Every parameter a table must give, with its unit and meaning (docs/cost-model.md).
pub const PARAMS: &[(&str, &str)] = &[
    ("sm_count", "streaming multiprocessors"),
    ("l2_bytes", "L2 capacity, bytes"),
    ("clock_ghz", "SM clock, GHz"),
    (
        "mma_tflops_16bit",
        "achievable dense tensor-core rate, 16-bit inputs, TFLOP/s (whole GPU)",
    ),
    (
        "mma_tflops_8bit",
        "achievable dense tensor-core rate, 8-bit inputs, TFLOP/s (whole GPU)",
    ),
    ("dram_gbps", "achievable DRAM bandwidth, GB/s (whole GPU)"),
    ("l2_gbps", "achievable L2-to-SM bandwidth, GB/s (whole GPU)"),
    (
        "tma_latency_us",
        "a TMA load's issue-to-barrier-complete latency, µs",
    ),
    ("barrier_us", "one pipeline handoff (arrive + wait), µs"),
    (
        "named_barrier_us",
        "one named-barrier sync (`bar.sync` of two warpgroups), µs",
    ),
    (
        "alu_gops_per_sm",
        "element-wise thread operations per ns per SM (register math of epilogues)",
    ),
    (
        "alu_int_ratio",
        "rate of the integer/ALU pipe (compares, selects, min/max) relative to alu_gops_per_sm",
    ),
    (
        "store_gbps",
        "register-to-global stores from accumulator layouts, GB/s (whole GPU)",
    ),
    ("tma_store_gbps", "bulk tensor stores, GB/s (whole GPU)"),
    (
        "launch_us",
        "GPU-side launch and teardown of one kernel, µs",
    ),
    (
        "cta_setup_us",
        "a CTA's prologue (barrier init, setmaxnreg), µs",
    ),
    (
        "kernel_span_us",
        "the GPU span of a kernel of one CTA that loads and adds a few rows (CUPTI: first CTA start to last CTA end), µs",
    ),
    (
        "cluster_start_us",
        "what launching in clusters (`cluster=`) adds to a kernel's span, µs",
    ),
    (
        "memset_gbps",
        "the launcher's zero fill of `zero=` tensors (a memset), GB/s",
    ),
    (
        "red_gops",
        "global atomic adds (`red.global.add`) into destinations that fit L2, G/s (whole GPU)",
    ),
    (
        "red_dram_gops",
        "global atomic adds spread over destinations larger than L2, G/s (whole GPU)",
    ),
    (
        "red_contended_gops",
        "global atomic adds spread over only 32 destinations, G/s (adds to one destination are serialized)",
    ),
    (
        "red_contention_exponent",
        "how the atomic rate grows with the destinations in use: rate ∝ destinations^exponent",
    ),
    (
        "sm_dram_gbps",
        "DRAM bytes one SM's TMA copies draw at most, GB/s (a deep ring on a few SMs)",
    ),
    (
        "tma_misaligned_rows_per_us",
        "rows of TMA boxes one SM is served per µs when the rows start inside 32-byte sectors (a row pitch not a multiple of 32 bytes)",
    ),
    (
        "flush_dirty_fraction",
        "of the DRAM bytes a kernel loads (up to the L2's size), the fraction written back on top: the harness's L2 flush is a write, so the L2 it leaves is dirty",
    ),
    (
        "flush_dirty_fraction_evict_first",
        "flush_dirty_fraction for the DRAM loads of copies that ask L2 to evict their own lines first (`evict=\"first\"`)",
    ),
    (
        "acc_issue_ratio",
        "instructions issued per counted element operation of accumulator-layout code (the index, bounds and address arithmetic the lowering adds around each)",
    ),
];

/// Parameters added after tables were first committed: a table without them takes them from
/// the built-in table of its target (`from_toml`).
const LATER_PARAMS: &[&str] = &[
    "kernel_span_us",
    "cluster_start_us",
    "memset_gbps",
    "red_gops",
    "red_dram_gops",
    "red_contended_gops",
    "red_contention_exponent",
    "sm_dram_gbps",
    "flush_dirty_fraction",
    "flush_dirty_fraction_evict_first",
    "acc_issue_ratio",
    "tma_misaligned_rows_per_us",
];

const SM_90A: &str = include_str!("../calibration/sm_90a.toml");
const SM_90A_H100: &str = include_str!("../calibration/sm_90a-h100.toml");

/// The built-in tables, by target name. One target covers cards that differ in DRAM bandwidth,
/// L2 and clocks, so a target may have a table per card: its first is its default (what an
/// estimate uses when the GPU is not known), the others are chosen by the GPU's name
/// ([`Calibration::builtin_for`]).
const BUILTIN: &[(&str, &str)] = &[("sm_90a", SM_90A), ("sm_90a", SM_90A_H100)];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub target: String,
    pub gpu: String,
    pub driver: String,
    pub date: String,
    /// How the numbers were produced (`seed: ...` or `cake calibrate ...`).
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub value: f64,
    pub source: String,
}

/// One target's constants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Calibration {
    pub meta: Meta,
    pub params: BTreeMap<String, Param>,
    /// The wgmma rate (16-bit inputs, TFLOP/s, whole GPU) by the accumulator's N: keys `n64`,
    /// `n128`, ... (`kernels/calibrate/wgmma.py` at each BN). Optional: without it every N gets
    /// `mma_tflops_16bit`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mma_tflops_16bit_by_n: BTreeMap<String, Param>,
    /// What one warpgroup's chain of dependent MMAs on one accumulator draws from an SM's tensor
    /// cores, by N (16-bit inputs, TFLOP/s summed over the GPU at one chain per SM; keys as
    /// above; `kernels/calibrate/wgmma.py`, one tile per SM). Optional: without it any number
    /// of chains is taken to reach the per-N rate.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mma_chain_tflops_16bit_by_n: BTreeMap<String, Param>,
    /// The full-grid TMA ring's L2 rate (GB/s, whole GPU, one CTA per SM) by box rows and stage
    /// depth: keys `bm128_s2` (`kernels/calibrate/stream.py`, boxes of BM x 64 bf16, STAGES,
    /// REUSE = 8). Optional: without it the ring uses the unloaded `tma_latency_us`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tma_stream_gbps: BTreeMap<String, Param>,
    /// CTAs resident at once in clusters of n CTAs, at one CTA per SM, by n: keys `c2`, `c4`,
    /// ... (`cudaOccupancyMaxActiveClusters` × n; `bench/probes/cluster_capacity.cu`). A
    /// cluster's CTAs share a GPC, so GPCs whose SM count n does not divide leave SMs idle.
    /// Optional: without it every SM takes a CTA of any cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cluster_ctas: BTreeMap<String, Param>,
}

/// The bytes of one row of the stream probe's box (64 bf16 columns).
pub const STREAM_ROW_BYTES: f64 = 128.0;

/// A table keyed `n<N>` as (N, value), by N.
fn by_n(table: &BTreeMap<String, Param>) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = table
        .iter()
        .filter_map(|(k, p)| Some((parse_n_key(k)? as f64, p.value)))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// `n64` -> 64.
fn parse_n_key(k: &str) -> Option<u32> {
    let n: u32 = k.strip_prefix('n')?.parse().ok()?;
    ((8..=256).contains(&n) && n.is_multiple_of(8) && format!("n{n}") == k).then_some(n)
}

/// `c4` -> 4: cluster sizes from 2 to 16 (16 is non-portable).
fn parse_cluster_key(k: &str) -> Option<u32> {
    let n: u32 = k.strip_prefix('c')?.parse().ok()?;
    ((2..=16).contains(&n) && format!("c{n}") == k).then_some(n)
}

/// `bm128_s2` -> (128, 2).
fn parse_stream_key(k: &str) -> Option<(u32, u32)> {
    let (bm, s) = k.strip_prefix("bm")?.split_once("_s")?;
    let (bm, s): (u32, u32) = (bm.parse().ok()?, s.parse().ok()?);
    ((8..=256).contains(&bm) && (1..=16).contains(&s) && format!("bm{bm}_s{s}") == k)
        .then_some((bm, s))
}

fn check_param(section: &str, name: &str, p: &Param) -> Result<(), CostError> {
    if !(p.value.is_finite() && p.value > 0.0) {
        return Err(CostError::BadCalibration(format!(
            "{section} `{name}` must be a positive number, not {}",
            p.value
        )));
    }
    if p.source.trim().is_empty() {
        return Err(CostError::BadCalibration(format!(
            "{section} `{name}` has no source"
        )));
    }
    Ok(())
}

impl Meta {
    /// The card the table was measured on: the first word of `gpu` that holds a digit (`H100`
    /// of "NVIDIA H100 80GB HBM3", `H200` of "NVIDIA H200"); `None` for a table whose GPU is not
    /// named that way.
    pub fn card(&self) -> Option<&str> {
        self.gpu
            .split(|c: char| !c.is_ascii_alphanumeric())
            .find(|w| w.chars().any(|c| c.is_ascii_digit()))
    }

    /// Whether the table was measured on the GPU named `gpu`: a card word (`H100`) or the
    /// driver's name of a device ("NVIDIA H100 80GB HBM3"), whose words hold the table's card.
    pub fn serves(&self, gpu: &str) -> bool {
        self.card()
            .is_some_and(|card| cake_target::card_is(card, gpu))
    }
}

impl Calibration {
    /// The committed default table of `target` (its first); `CostError::NoCalibration` when
    /// there is none.
    pub fn builtin(target: &cake_target::Target) -> Result<Calibration, CostError> {
        match BUILTIN.iter().find(|(t, _)| *t == target.name) {
            Some((_, text)) => Calibration::from_toml(text),
            None => Err(CostError::NoCalibration {
                target: target.name.to_string(),
                available: {
                    let mut targets: Vec<String> =
                        BUILTIN.iter().map(|(t, _)| t.to_string()).collect();
                    targets.dedup();
                    targets
                },
            }),
        }
    }

    /// The cards of every committed table, in table order (a target's default first).
    pub fn builtin_cards() -> Vec<String> {
        BUILTIN
            .iter()
            .filter_map(|(_, text)| Calibration::from_toml(text).ok())
            .filter_map(|c| c.meta.card().map(str::to_string))
            .collect()
    }

    /// Every committed table of `target`, its default first (empty: none).
    pub fn builtin_tables(target: &cake_target::Target) -> Result<Vec<Calibration>, CostError> {
        BUILTIN
            .iter()
            .filter(|(t, _)| *t == target.name)
            .map(|(_, text)| Calibration::from_toml(text))
            .collect()
    }

    /// The committed table of `target` measured on the GPU named `gpu` (a card word such as
    /// `H100`, or the driver's name of a device). `CostError::NoCalibrationForGpu` names the
    /// cards that have one when none does; `CostError::NoCalibration` when the target has none.
    pub fn builtin_for(target: &cake_target::Target, gpu: &str) -> Result<Calibration, CostError> {
        let tables = Calibration::builtin_tables(target)?;
        if tables.is_empty() {
            // No table for any card: the target's `NoCalibration`.
            return Calibration::builtin(target);
        }
        let cards = tables
            .iter()
            .map(|t| t.meta.card().unwrap_or(&t.meta.gpu).to_string())
            .collect();
        tables
            .into_iter()
            .find(|t| t.meta.serves(gpu))
            .ok_or_else(|| CostError::NoCalibrationForGpu {
                target: target.name.to_string(),
                gpu: gpu.to_string(),
                cards,
            })
    }

    /// The table for a run on the GPU named `gpu` where one was measured on that card, else the
    /// target's default: what an estimate uses when it knows the device it runs on (a bench run,
    /// a measurement) but must not fail for a card nobody calibrated. The table's `meta.gpu`
    /// says which it is.
    pub fn builtin_for_device(
        target: &cake_target::Target,
        gpu: Option<&str>,
    ) -> Result<Calibration, CostError> {
        match gpu.map(|g| Calibration::builtin_for(target, g)) {
            Some(Ok(table)) => Ok(table),
            _ => Calibration::builtin(target),
        }
    }

    /// Parse and validate a table: every parameter of [`PARAMS`] present, finite and positive,
    /// no unknown parameter.
    pub fn from_toml(text: &str) -> Result<Calibration, CostError> {
        let mut c: Calibration =
            toml::from_str(text).map_err(|e| CostError::BadCalibration(e.to_string()))?;
        c.fill_later_params();
        c.validate()?;
        Ok(c)
    }

    /// A table written before a parameter of [`LATER_PARAMS`] existed (the committed evidence
    /// of older runs) takes that parameter from its target's built-in table, marked as such.
    fn fill_later_params(&mut self) {
        if LATER_PARAMS.iter().all(|n| self.params.contains_key(*n)) {
            return;
        }
        let Some((_, text)) = BUILTIN.iter().find(|(t, _)| *t == self.meta.target) else {
            return;
        };
        let Ok(builtin) = toml::from_str::<Calibration>(text) else {
            return;
        };
        for name in LATER_PARAMS {
            if self.params.contains_key(*name) {
                continue;
            }
            if let Some(p) = builtin.params.get(*name) {
                self.params.insert(
                    name.to_string(),
                    Param {
                        value: p.value,
                        source: format!(
                            "seed: this table predates the parameter; the built-in table's ({})",
                            p.source
                        ),
                    },
                );
            }
        }
    }

    pub fn validate(&self) -> Result<(), CostError> {
        for (name, _) in PARAMS {
            match self.params.get(*name) {
                None => {
                    return Err(CostError::BadCalibration(format!(
                        "parameter `{name}` is missing"
                    )))
                }
                Some(p) if !(p.value.is_finite() && p.value > 0.0) => {
                    return Err(CostError::BadCalibration(format!(
                        "parameter `{name}` must be a positive number, not {}",
                        p.value
                    )))
                }
                Some(p) if p.source.trim().is_empty() => {
                    return Err(CostError::BadCalibration(format!(
                        "parameter `{name}` has no source"
                    )))
                }
                _ => {}
            }
        }
        for (title, table) in [
            ("mma_tflops_16bit_by_n", &self.mma_tflops_16bit_by_n),
            (
                "mma_chain_tflops_16bit_by_n",
                &self.mma_chain_tflops_16bit_by_n,
            ),
        ] {
            for (k, p) in table {
                if parse_n_key(k).is_none() {
                    return Err(CostError::BadCalibration(format!(
                        "unknown key `{k}` in [{title}] (expected n<N>, N a multiple of 8 up to 256)"
                    )));
                }
                check_param(&format!("[{title}]"), k, p)?;
            }
        }
        for (k, p) in &self.tma_stream_gbps {
            if parse_stream_key(k).is_none() {
                return Err(CostError::BadCalibration(format!(
                    "unknown key `{k}` in [tma_stream_gbps] (expected bm<rows>_s<stages>)"
                )));
            }
            check_param("[tma_stream_gbps]", k, p)?;
        }
        let sms = self.get("sm_count");
        for (k, p) in &self.cluster_ctas {
            if parse_cluster_key(k).is_none() {
                return Err(CostError::BadCalibration(format!(
                    "unknown key `{k}` in [cluster_ctas] (expected c<n>, n from 2 to 16)"
                )));
            }
            check_param("[cluster_ctas]", k, p)?;
            if p.value > sms {
                return Err(CostError::BadCalibration(format!(
                    "[cluster_ctas] `{k}` = {} is more CTAs than the {sms} SMs hold at one per SM",
                    p.value
                )));
            }
        }
        if let Some(extra) = self
            .params
            .keys()
            .find(|k| !PARAMS.iter().any(|(n, _)| n == k))
        {
            return Err(CostError::BadCalibration(format!(
                "unknown parameter `{extra}`"
            )));
        }
        if cake_target::lookup(&self.meta.target).is_err() {
            return Err(CostError::BadCalibration(format!(
                "unknown target `{}` in [meta]",
                self.meta.target
            )));
        }
        Ok(())
    }

    /// The table as TOML, in the layout of the committed files.
    pub fn to_toml(&self) -> String {
        let mut out = String::from(
            "# Cost-model calibration (docs/cost-model.md). Every parameter carries its source;\n\
             # [U] marks an estimate nobody has measured.\n\n[meta]\n",
        );
        let q = |s: &str| toml_string(s);
        out += &format!("target = {}\n", q(&self.meta.target));
        out += &format!("gpu = {}\n", q(&self.meta.gpu));
        out += &format!("driver = {}\n", q(&self.meta.driver));
        out += &format!("date = {}\n", q(&self.meta.date));
        out += &format!("method = {}\n", q(&self.meta.method));
        if let Some(c) = &self.meta.commit {
            out += &format!("commit = {}\n", q(c));
        }
        out += "\n[params]\n";
        for (name, _) in PARAMS {
            if let Some(p) = self.params.get(*name) {
                out += &format!(
                    "{name} = {{ value = {:?}, source = {} }}\n",
                    p.value,
                    q(&p.source)
                );
            }
        }
        let mut section = |title: &str, rows: Vec<(&String, &Param)>| {
            if !rows.is_empty() {
                out += &format!("\n[{title}]\n");
                for (k, p) in rows {
                    out += &format!(
                        "{k} = {{ value = {:?}, source = {} }}\n",
                        p.value,
                        q(&p.source)
                    );
                }
            }
        };
        for (title, table) in [
            ("mma_tflops_16bit_by_n", &self.mma_tflops_16bit_by_n),
            (
                "mma_chain_tflops_16bit_by_n",
                &self.mma_chain_tflops_16bit_by_n,
            ),
        ] {
            let mut by_n: Vec<_> = table.iter().collect();
            by_n.sort_by_key(|(k, _)| parse_n_key(k));
            section(title, by_n);
        }
        let mut stream: Vec<_> = self.tma_stream_gbps.iter().collect();
        stream.sort_by_key(|(k, _)| parse_stream_key(k));
        section("tma_stream_gbps", stream);
        let mut clusters: Vec<_> = self.cluster_ctas.iter().collect();
        clusters.sort_by_key(|(k, _)| parse_cluster_key(k));
        section("cluster_ctas", clusters);
        out
    }

    /// The per-N wgmma table as (N, TFLOP/s), by N.
    pub fn mma_by_n(&self) -> Vec<(f64, f64)> {
        by_n(&self.mma_tflops_16bit_by_n)
    }

    /// The per-N rate of one warpgroup's MMA chain as (N, TFLOP/s over the GPU), by N.
    pub fn mma_chain_by_n(&self) -> Vec<(f64, f64)> {
        by_n(&self.mma_chain_tflops_16bit_by_n)
    }

    /// The CTAs resident at once (one per SM) in clusters of `n`, where the table measured that
    /// size; `None` for a size it did not (resident CTAs are not monotone in the size: a GPC of
    /// 16 SMs holds 16 in clusters of 4 and 15 in clusters of 3).
    pub fn cluster_ctas(&self, n: u32) -> Option<f64> {
        self.cluster_ctas
            .iter()
            .find(|(k, _)| parse_cluster_key(k) == Some(n))
            .map(|(_, p)| p.value)
    }

    /// The loaded TMA latency the stream table implies, as (bytes per µs per SM, µs), by
    /// rate: a ring of S boxes of B bytes per SM whose consumer holds one (its wgmma's deferred
    /// release) moving r bytes per µs per SM has, by Little's law, (S − 1)·B ÷ r µs per copy
    /// round trip. Less the handoff the probe's consumer adds to each
    /// round and the box's own transfer at the SM's share of `l2_gbps` (the model charges that
    /// separately, per stage), that is the latency of a copy while every SM draws r — never
    /// less than the unloaded `tma_latency_us`, and never less than at a lower rate (queueing
    /// does not shorten with load, so measurement noise is flattened).
    pub fn loaded_latency(&self) -> Vec<(f64, f64)> {
        let sms = self.get("sm_count");
        let (bar, lat) = (self.get("barrier_us"), self.get("tma_latency_us"));
        let l2_per_sm = self.get("l2_gbps") * 1e3 / sms;
        let mut pts: Vec<(f64, f64)> = self
            .tma_stream_gbps
            .iter()
            .filter_map(|(k, p)| {
                let (bm, s) = parse_stream_key(k)?;
                // The probe's consumer releases a stage with its token wgmma's `release=`, which
                // the lowering defers one iteration: S - 1 stages are in flight, not S.
                let inflight = s.saturating_sub(1).max(1) as f64 * bm as f64 * STREAM_ROW_BYTES;
                let per_sm = p.value * 1e3 / sms; // bytes per µs per SM
                let transfer = bm as f64 * STREAM_ROW_BYTES / l2_per_sm;
                Some((per_sm, (inflight / per_sm - bar - transfer).max(lat)))
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let mut top = lat;
        for p in &mut pts {
            top = top.max(p.1);
            p.1 = top;
        }
        pts
    }

    /// A parameter's value (validated tables have them all).
    pub fn get(&self, name: &str) -> f64 {
        self.params.get(name).map_or(f64::NAN, |p| p.value)
    }

    /// Whether any parameter is still an unmeasured estimate.
    pub fn unverified(&self) -> Vec<&str> {
        self.params
            .iter()
            .filter(|(_, p)| p.source.contains("[U]"))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    /// A table from `cake calibrate`'s measurements (`cake.calibrate/v0`, written by
    /// `python -m cake.calibrate`): each probe that ran replaces the seed's value; a parameter no
    /// probe measured keeps the seed's value and source, prefixed `seed:`.
    pub fn from_measurements(
        seed: &Calibration,
        m: &serde_json::Value,
    ) -> Result<Calibration, CostError> {
        if m["schema"] != "cake.calibrate/v0" {
            return Err(CostError::BadCalibration(
                "measurements are not a cake.calibrate/v0 document".into(),
            ));
        }
        let env = &m["environment"];
        let s = |v: &serde_json::Value| v.as_str().unwrap_or("unknown").to_string();
        let mut out = seed.clone();
        out.meta = Meta {
            target: m["target"]
                .as_str()
                .unwrap_or(&seed.meta.target)
                .to_string(),
            gpu: s(&env["gpu"]),
            driver: s(&env["driver"]),
            date: s(&m["date"]),
            method: "cake calibrate (kernels/calibrate/*.py on this GPU)".into(),
            commit: m["commit"].as_str().map(str::to_string),
        };
        for p in out
            .params
            .values_mut()
            .chain(out.mma_tflops_16bit_by_n.values_mut())
            .chain(out.mma_chain_tflops_16bit_by_n.values_mut())
            .chain(out.tma_stream_gbps.values_mut())
            .chain(out.cluster_ctas.values_mut())
        {
            if !p.source.starts_with("seed:") {
                p.source = format!("seed: {}", p.source);
            }
        }
        let mut set = |name: &str, value: Option<f64>, how: String| {
            if let Some(v) = value.filter(|v| v.is_finite() && *v > 0.0) {
                out.params.insert(
                    name.to_string(),
                    Param {
                        value: round4(v),
                        source: how,
                    },
                );
            }
        };
        let probes = &m["probes"];
        let f = |v: &serde_json::Value| v.as_f64();
        set(
            "sm_count",
            f(&env["sm_count"]),
            "device property multi_processor_count".into(),
        );
        set(
            "l2_bytes",
            f(&env["l2_bytes"]),
            "device property L2_cache_size".into(),
        );
        set(
            "clock_ghz",
            f(&env["clock_max_mhz"]).map(|x| x / 1000.0),
            "nvidia-smi clocks.max.sm".into(),
        );
        // Each probe reports its work and its median time (ms) under the harness's timing.
        let rate = |p: &serde_json::Value, work: &str| -> Option<f64> {
            Some(f(&p[work])? / (f(&p["median_ms"])? * 1e-3))
        };
        let probe_src = |name: &str, p: &serde_json::Value| {
            format!(
                "kernels/calibrate/{}.py {} (median of {} samples, {:.4} ms)",
                p["schedule"].as_str().unwrap_or(name),
                p["config"].as_str().unwrap_or(""),
                p["samples"].as_u64().unwrap_or(0),
                f(&p["median_ms"]).unwrap_or(0.0)
            )
        };
        let p = &probes["wgmma"];
        set(
            "mma_tflops_16bit",
            rate(p, "flops").map(|r| r / 1e12),
            probe_src("wgmma", p),
        );
        // FP8: its own probe (e4m3 tiles, wgmma k32); a run without it (an older probe set)
        // assumes twice the 16-bit rate, marked unmeasured.
        let p8 = &probes["wgmma_fp8"];
        if let Some(r8) = rate(p8, "flops") {
            set(
                "mma_tflops_8bit",
                Some(r8 / 1e12),
                probe_src("wgmma_fp8", p8),
            );
        } else if let Some(r) = rate(p, "flops") {
            set(
                "mma_tflops_8bit",
                Some(2.0 * r / 1e12),
                format!(
                    "[U] twice the measured 16-bit rate ({})",
                    probe_src("wgmma", p)
                ),
            );
        }
        // wgmma per N: the `wgmma` probe is N = 256, `wgmma_n<N>` the others.
        for (key, name) in [
            ("n64", "wgmma_n64"),
            ("n128", "wgmma_n128"),
            ("n192", "wgmma_n192"),
            ("n256", "wgmma"),
        ] {
            let p = &probes[name];
            if let Some(r) = rate(p, "flops") {
                out.mma_tflops_16bit_by_n.insert(
                    key.to_string(),
                    Param {
                        value: round4(r / 1e12),
                        source: probe_src("wgmma", p),
                    },
                );
            }
        }
        // One warpgroup's chain per SM: `wgmma_chain_n<N>`.
        for n in [64, 128, 256] {
            let p = &probes[format!("wgmma_chain_n{n}").as_str()];
            if let Some(r) = rate(p, "flops") {
                out.mma_chain_tflops_16bit_by_n.insert(
                    format!("n{n}"),
                    Param {
                        value: round4(r / 1e12),
                        source: format!("{}, one tile per SM", probe_src("wgmma", p)),
                    },
                );
            }
        }
        // The stream ring at full occupancy, L2-resident, by box rows and stages
        // (`stream_bm<BM>_s<S>`; BM = 128, 4 stages is the L2 probe).
        if let Some(obj) = probes.as_object() {
            for (name, p) in obj {
                let key = if name == "l2_stream" {
                    "bm128_s4".to_string()
                } else if let Some(k) = name.strip_prefix("stream_") {
                    k.to_string()
                } else {
                    continue;
                };
                if parse_stream_key(&key).is_none() {
                    continue;
                }
                if let Some(r) = rate(p, "bytes") {
                    out.tma_stream_gbps.insert(
                        key,
                        Param {
                            value: round4(r / 1e9),
                            source: probe_src("stream", p),
                        },
                    );
                }
            }
        }
        let p = &probes["dram_stream"];
        set(
            "dram_gbps",
            rate(p, "bytes").map(|r| r / 1e9),
            probe_src("dram", p),
        );
        let p = &probes["l2_stream"];
        set(
            "l2_gbps",
            rate(p, "bytes").map(|r| r / 1e9),
            probe_src("l2", p),
        );
        // One CTA, one stage: an iteration is the latency plus one handoff; eight stages: the
        // handoff (an upper bound: the copy of the stage may take longer).
        let per_iter =
            |p: &serde_json::Value| Some(f(&p["median_ms"])? * 1e3 / f(&p["iterations"])?);
        let barrier = per_iter(&probes["barrier"]);
        let p = &probes["barrier"];
        set(
            "barrier_us",
            barrier,
            format!("upper bound: {}", probe_src("barrier", p)),
        );
        let p = &probes["tma_latency"];
        set(
            "tma_latency_us",
            per_iter(p).map(|t| match barrier {
                Some(b) if t > 2.0 * b => t - b,
                _ => t,
            }),
            format!("{} less one handoff", probe_src("latency", p)),
        );
        let p = &probes["named_barrier"];
        set(
            "named_barrier_us",
            per_iter(p),
            probe_src("named_barrier", p),
        );
        let p = &probes["alu"];
        let sms = f(&env["sm_count"]).unwrap_or(seed.get("sm_count"));
        let alu = rate(p, "ops").map(|r| r / 1e9 / sms);
        set("alu_gops_per_sm", alu, probe_src("alu", p));
        let p = &probes["alu_minmax"];
        set(
            "alu_int_ratio",
            rate(p, "ops").zip(alu).map(|(r, a)| r / 1e9 / sms / a),
            format!("{} over alu_gops_per_sm", probe_src("alu", p)),
        );
        let p = &probes["store"];
        set(
            "store_gbps",
            rate(p, "bytes").map(|r| r / 1e9),
            probe_src("store", p),
        );
        let p = &probes["tma_store"];
        set(
            "tma_store_gbps",
            rate(p, "bytes").map(|r| r / 1e9),
            probe_src("tma_store", p),
        );
        let p = &probes["launch"];
        set(
            "launch_us",
            f(&p["median_ms"]).map(|ms| ms * 1e3),
            probe_src("launch", p),
        );
        let p = &probes["empty_span"];
        let one = f(&p["span_median_ms"]).map(|ms| ms * 1e3);
        set(
            "kernel_span_us",
            one,
            format!("CUPTI span of {}", probe_src("empty_span", p)),
        );
        let p = &probes["cluster_span"];
        set(
            "cluster_start_us",
            f(&p["span_median_ms"])
                .zip(one)
                .map(|(ms, one)| ms * 1e3 - one),
            format!(
                "CUPTI span of {} less kernel_span_us",
                probe_src("cluster_span", p)
            ),
        );
        // Clusters that fit at once (not timed: the driver's answer), at one CTA per SM only —
        // what the table's entries mean.
        for n in [2u64, 4, 8] {
            let p = &probes[format!("cluster_c{n}").as_str()];
            let (Some(ctas), Some(1)) = (p["resident_ctas"].as_f64(), p["ctas_per_sm"].as_u64())
            else {
                continue;
            };
            if ctas > 0.0 {
                out.cluster_ctas.insert(
                    format!("c{n}"),
                    Param {
                        value: ctas,
                        source: format!(
                            "kernels/calibrate/stream.py {}: {} clusters of {n} at once (cuOccupancyMaxActiveClusters)",
                            p["config"].as_str().unwrap_or(""),
                            p["clusters_at_once"].as_u64().unwrap_or(0)
                        ),
                    },
                );
            }
        }
        let p = &probes["memset"];
        set(
            "memset_gbps",
            rate(p, "bytes").map(|r| r / 1e9),
            probe_src("memset", p),
        );
        // Atomic adds: into 32 768 destinations that fit L2 (the L2's rate), spread over 512 MiB
        // (the DRAM's), and every row into one row of 32 destinations (one destination's rate).
        let p = &probes["atomic_mid"];
        set(
            "red_gops",
            rate(p, "reds").map(|r| r / 1e9),
            probe_src("atomic", p),
        );
        let p = &probes["atomic_spread"];
        set(
            "red_dram_gops",
            rate(p, "reds").map(|r| r / 1e9),
            probe_src("atomic", p),
        );
        // Every row on one row (32 destinations), and on 64 rows (2048): the rate there, and
        // how it grows with the destinations.
        let p = &probes["atomic_contended"];
        let one = rate(p, "reds");
        set(
            "red_contended_gops",
            one.map(|r| r / 1e9),
            probe_src("atomic", p),
        );
        let p64 = &probes["atomic_contended64"];
        set(
            "red_contention_exponent",
            one.zip(rate(p64, "reds"))
                .map(|(r1, r64)| (r64 / r1).ln() / 64f64.ln()),
            format!(
                "from {} and {}",
                probe_src("atomic", p),
                probe_src("atomic", p64)
            ),
        );
        // A deep ring of 64-row boxes on a few SMs, from DRAM: what one SM's copies draw.
        let p = &probes["sm_stream"];
        set(
            "sm_dram_gbps",
            rate(p, "bytes")
                .zip(f(&p["ctas"]))
                .map(|(r, n)| r / 1e9 / n),
            format!("{} over its CTAs", probe_src("stream", p)),
        );
        out.validate()?;
        Ok(out)
    }
}

fn round4(v: f64) -> f64 {
    if v == 0.0 {
        return 0.0;
    }
    let mag = 10f64.powi(4 - v.abs().log10().ceil() as i32);
    (v * mag).round() / mag
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
