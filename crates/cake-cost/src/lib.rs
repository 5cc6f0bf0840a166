//! Cake's cost model: from a verified schedule, a target, a shape and the target's calibration,
//! the predicted time, what bounds it, how busy each unit is, and non-blocking hints.
//!
//! The model reads the IR (docs/cost-model.md): per role and per loop iteration the TMA bytes,
//! MMA work, element-wise operations, stores and waits ([`analyze`]); it overlaps roles through
//! the pipeline depth (a ring of S stages hides latency L when S × iteration ≥ L + consume),
//! quantizes tiles into waves over the SMs, bounds occupancy by shared memory, threads and
//! registers, estimates DRAM traffic from the tiles in flight (L2 reuse), and adds launch and
//! prologue latency. Every constant comes from the target's calibration table ([`Calibration`]);
//! nothing depends on a kernel's name. The estimate is deterministic.

use std::collections::BTreeMap;

use cake_diag::{catalog::performance as perf, CodeInfo, Finding, Span};
use cake_ir::{Kernel, KernelFacts, LoopId, LoopKind, Stmt};
use cake_target::Target;
use serde::Serialize;

pub mod analyze;
mod calib;
mod shape;

pub use calib::{Calibration, Meta, Param, PARAMS};
pub use shape::{check_shape, parse_shape};

/// Why there is no estimate.
#[derive(Debug, Clone, PartialEq)]
pub enum CostError {
    /// The target has no calibration table (`CAKE-V003`).
    NoCalibration {
        target: String,
        available: Vec<String>,
    },
    /// The target has calibration tables, but none measured on the GPU asked for.
    NoCalibrationForGpu {
        target: String,
        gpu: String,
        /// The cards of the target's tables, its default first.
        cards: Vec<String>,
    },
    /// A calibration table for another target was given.
    WrongCalibration { target: String, table: String },
    /// A calibration table that does not parse or lacks a parameter.
    BadCalibration(String),
    /// The shape does not parse or does not bind the kernel's dimensions.
    Shape(String),
}

impl CostError {
    /// The finding code of this error, where it has one.
    pub fn code(&self) -> Option<&'static str> {
        match self {
            CostError::NoCalibration { .. } => {
                Some(cake_diag::catalog::coverage::NO_CALIBRATION.code)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for CostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CostError::NoCalibration { target, available } => write!(
                f,
                "{}: no calibration for {target}: the cost model gives no estimate without \
                 numbers measured on that target (calibrated: {}; `cake calibrate --target \
                 {target}` on such a GPU makes one)",
                cake_diag::catalog::coverage::NO_CALIBRATION.code,
                available.join(", ")
            ),
            CostError::NoCalibrationForGpu { target, gpu, cards } => write!(
                f,
                "no calibration table of {target} was measured on `{gpu}`: its tables are for {} \
                 (the first is the default); `cake calibrate --target {target}` on that GPU \
                 makes one, and `--calibration FILE` uses it",
                cards.join(", ")
            ),
            CostError::WrongCalibration { target, table } => write!(
                f,
                "the calibration table is for {table}, not {target}; Cake never uses another \
                 target's numbers"
            ),
            CostError::BadCalibration(m) => write!(f, "bad calibration table: {m}"),
            CostError::Shape(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CostError {}

/// What limits the predicted time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The tensor cores are busy: the MMA work itself.
    TensorCores,
    /// DRAM or L2 bandwidth.
    Memory,
    /// Pipeline bubbles: TMA latency not covered by the stages, pipeline fill, prologues.
    Latency,
    /// Barrier handoffs and named-barrier syncs.
    Synchronization,
    /// Element-wise work and stores (in the loop or after it).
    Epilogue,
    /// Wave quantization: SMs idle during the last wave.
    TailWave,
    /// Kernel launch.
    Launch,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::TensorCores => "tensor cores",
            Bound::Memory => "memory",
            Bound::Latency => "latency (pipeline bubbles)",
            Bound::Synchronization => "synchronization",
            Bound::Epilogue => "epilogue",
            Bound::TailWave => "tail wave",
            Bound::Launch => "launch",
        }
    }
}

/// The predicted time split by cause; the terms sum to `time_us`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Terms {
    pub tensor_us: f64,
    pub memory_us: f64,
    pub latency_us: f64,
    pub sync_us: f64,
    pub epilogue_us: f64,
    pub tail_us: f64,
    pub launch_us: f64,
}

impl Terms {
    fn add(&mut self, o: &Terms, k: f64) {
        self.tensor_us += o.tensor_us * k;
        self.memory_us += o.memory_us * k;
        self.latency_us += o.latency_us * k;
        self.sync_us += o.sync_us * k;
        self.epilogue_us += o.epilogue_us * k;
        self.tail_us += o.tail_us * k;
        self.launch_us += o.launch_us * k;
    }
    fn total(&self) -> f64 {
        self.tensor_us
            + self.memory_us
            + self.latency_us
            + self.sync_us
            + self.epilogue_us
            + self.tail_us
            + self.launch_us
    }
    fn bound(&self) -> Bound {
        let all = [
            (Bound::TensorCores, self.tensor_us),
            (Bound::Memory, self.memory_us),
            (Bound::Latency, self.latency_us),
            (Bound::Synchronization, self.sync_us),
            (Bound::Epilogue, self.epilogue_us),
            (Bound::TailWave, self.tail_us),
            (Bound::Launch, self.launch_us),
        ];
        all.iter()
            .fold((Bound::Launch, f64::MIN), |best, &(b, v)| {
                if v > best.1 {
                    (b, v)
                } else {
                    best
                }
            })
            .0
    }
}

/// Fraction of each unit's calibrated rate the kernel uses over its predicted time.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Utilization {
    pub tensor: f64,
    pub dram: f64,
    pub l2: f64,
    pub alu: f64,
    /// SM-time spent on tiles (wave quantization and idle SMs lower it).
    pub sms: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Grid {
    pub tiles: i64,
    pub ctas: i64,
    pub persistent: bool,
    /// CTAs that fit on one SM (shared memory, threads, registers).
    pub ctas_per_sm: u32,
    /// What limits `ctas_per_sm`.
    pub occupancy_limit: String,
    /// Tiles ÷ (SMs × resident CTAs).
    pub waves: f64,
    pub smem_bytes: u64,
    pub threads: u32,
    /// CTAs per cluster (1: not clustered).
    pub cluster: u32,
    /// The SMs that can hold a CTA of such clusters at once, where fewer than all (calibrated:
    /// a cluster stays within one GPC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_sms: Option<u32>,
}

/// One run-time loop's iteration, as the model sees it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LoopReport {
    pub role: String,
    pub var: String,
    pub pipeline: Option<String>,
    pub stages: Option<u32>,
    pub trips: f64,
    /// µs per iteration: the slowest of the four limits below.
    pub iteration_us: f64,
    pub load_us: f64,
    pub consume_us: f64,
    /// (latency + consume + handoff) ÷ stages: the ring's limit; (latency + handoff) ÷
    /// (stages − 1) where a wgmma releases its stage one iteration late (`deferred_release`).
    pub ring_us: f64,
    pub deferred_release: bool,
    pub handoff_us: f64,
    pub mma_us: f64,
    pub alu_us: f64,
    pub load_bytes: f64,
    pub flops: f64,
}

/// A non-blocking suggestion; `cake check --shape` reports it as a finding of `code`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hint {
    pub code: &'static str,
    pub message: String,
    pub help: Option<String>,
    #[serde(skip)]
    pub span: Span,
    #[serde(skip)]
    info: &'static CodeInfo,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CalibrationRef {
    pub target: String,
    pub gpu: String,
    pub date: String,
    pub method: String,
    /// Parameters still marked `[U]` (estimates nobody measured).
    pub unverified: Vec<String>,
}

/// The model's answer for one kernel at one shape.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub kernel: String,
    pub target: String,
    pub shape: BTreeMap<String, i64>,
    /// What a timer around the launch sees (CUDA events): the kernel's span plus the launch.
    pub time_us: f64,
    /// The kernel's span on the GPU, first CTA start to last CTA end (what CUPTI reports, and
    /// what the harness's medians are): `time_us` less the launch.
    pub span_us: f64,
    /// The largest term of `time_us` (the launch included).
    pub bound: Bound,
    /// The largest term of the kernel's work on the GPU (the launch left out): what `span_us`
    /// is bound by, the bottleneck a CUPTI span shows. A kernel of a few microseconds is
    /// `Launch`-bound as timed by CUDA events and bound by its memory or tail wave on the GPU.
    pub span_bound: Bound,
    pub tflops: Option<f64>,
    /// DRAM traffic over the predicted time, TB/s.
    pub dram_tbps: f64,
    pub flops: f64,
    /// Estimated DRAM traffic (loads after L2 reuse, plus stores).
    pub dram_bytes: f64,
    /// Bytes moved from L2 into shared memory or registers.
    pub l2_bytes: f64,
    /// The speed-of-light time: FLOPs at the datasheet tensor peak or the unique bytes at the
    /// datasheet DRAM bandwidth, whichever is longer: the ceilings of the card the calibration
    /// table was measured on where Cake knows that card's, else the target's
    /// (`cake_target::peak_for`). No correct run on that card can be faster.
    pub speed_of_light_us: f64,
    pub terms: Terms,
    pub utilization: Utilization,
    pub grid: Grid,
    pub loops: Vec<LoopReport>,
    pub hints: Vec<Hint>,
    pub assumptions: Vec<String>,
    pub calibration: CalibrationRef,
}

impl Estimate {
    /// The hints as findings (category performance, severity note), for `cake check --shape`.
    pub fn findings(&self) -> Vec<Finding> {
        self.hints
            .iter()
            .map(|h| {
                let mut f = Finding::new(h.info, h.span, h.message.clone()).note(format!(
                    "cost model at {}: {:.1} µs, bound by {}",
                    shape_text(&self.shape),
                    self.time_us,
                    self.bound.as_str()
                ));
                if let Some(help) = &h.help {
                    f = f.help(help.clone());
                }
                f
            })
            .collect()
    }

    /// A short human report.
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "{} on {} at {}: {:.1} µs ({}{:.2} TB/s from DRAM), bound by {}; {:.1} µs on the GPU, bound by {}",
            self.kernel,
            self.target,
            shape_text(&self.shape),
            self.time_us,
            self.tflops
                .map(|t| format!("{t:.0} TFLOP/s, "))
                .unwrap_or_default(),
            self.dram_tbps,
            self.bound.as_str(),
            self.span_us,
            self.span_bound.as_str()
        );
        let t = &self.terms;
        let _ = writeln!(
            o,
            "  terms (µs): tensor {:.1} · memory {:.1} · latency {:.1} · sync {:.1} · epilogue {:.1} · tail {:.1} · launch {:.1}",
            t.tensor_us, t.memory_us, t.latency_us, t.sync_us, t.epilogue_us, t.tail_us, t.launch_us
        );
        let u = &self.utilization;
        let _ = writeln!(
            o,
            "  utilization: tensor {:.0}% · DRAM {:.0}% · L2 {:.0}% · ALU {:.0}% · SMs {:.0}%",
            u.tensor * 100.0,
            u.dram * 100.0,
            u.l2 * 100.0,
            u.alu * 100.0,
            u.sms * 100.0
        );
        let g = &self.grid;
        let _ = writeln!(
            o,
            "  grid: {} tiles, {} CTAs ({}), {} per SM ({}), {:.2} waves; {} B shared memory, {} threads",
            g.tiles,
            g.ctas,
            if g.persistent { "persistent" } else { "one per tile" },
            g.ctas_per_sm,
            g.occupancy_limit,
            g.waves,
            g.smem_bytes,
            g.threads
        );
        if let Some(n) = g.cluster_sms {
            let _ = writeln!(
                o,
                "  clusters of {}: at most {} at once, on {n} SMs (a cluster stays within one GPC)",
                g.cluster,
                n / g.cluster.max(1),
            );
        }
        let _ = writeln!(
            o,
            "  traffic: DRAM {:.1} MB · L2 {:.1} MB · speed of light {:.1} µs",
            self.dram_bytes / 1e6,
            self.l2_bytes / 1e6,
            self.speed_of_light_us
        );
        for l in &self.loops {
            let _ = writeln!(
                o,
                "  loop `{}` ({}{}): {} × {:.3} µs = load {:.3} · consume {:.3} (mma {:.3}, alu {:.3}) · ring {:.3} · handoff {:.3}",
                l.var,
                l.role,
                l.stages.map(|s| format!(", {s} stages")).unwrap_or_default(),
                l.trips,
                l.iteration_us,
                l.load_us,
                l.consume_us,
                l.mma_us,
                l.alu_us,
                l.ring_us,
                l.handoff_us
            );
        }
        for h in &self.hints {
            let _ = writeln!(o, "  hint[{}]: {}", h.code, h.message);
            if let Some(help) = &h.help {
                let _ = writeln!(o, "    help: {help}");
            }
        }
        for a in &self.assumptions {
            let _ = writeln!(o, "  assumed: {a}");
        }
        let _ = writeln!(
            o,
            "  calibration: {} {} ({}){}",
            self.calibration.gpu,
            self.calibration.date,
            self.calibration.method,
            if self.calibration.unverified.is_empty() {
                String::new()
            } else {
                format!("; unmeasured: {}", self.calibration.unverified.join(", "))
            }
        );
        o
    }
}

pub fn shape_text(shape: &BTreeMap<String, i64>) -> String {
    shape
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The calibrated constants, unpacked.
struct P {
    sms: f64,
    l2_cap: f64,
    tf16: f64,
    tf8: f64,
    dram: f64,
    l2: f64,
    lat: f64,
    bar: f64,
    named_bar: f64,
    /// The wgmma rate by N (TFLOP/s), by N; empty without a table.
    mma_by_n: Vec<(f64, f64)>,
    /// One warpgroup's MMA chain per SM by N (TFLOP/s over the GPU); empty without a table.
    mma_chain_by_n: Vec<(f64, f64)>,
    /// The loaded TMA latency by bytes in flight per SM; empty without a table.
    loaded: Vec<(f64, f64)>,
    alu: f64,
    int_ratio: f64,
    store: f64,
    tma_store: f64,
    launch: f64,
    setup: f64,
    clock_ghz: f64,
    span: f64,
    cluster_start: f64,
    /// CTAs resident at once in clusters of n (one per SM), for the sizes measured.
    cluster_ctas: BTreeMap<u32, f64>,
    memset: f64,
    red: f64,
    red_dram: f64,
    red_contended: f64,
    red_exponent: f64,
    sm_dram: f64,
    tma_misaligned_rows: f64,
    dirty: f64,
    dirty_evict_first: f64,
    acc_issue: f64,
}

impl P {
    fn new(c: &Calibration) -> P {
        P {
            sms: c.get("sm_count"),
            l2_cap: c.get("l2_bytes"),
            tf16: c.get("mma_tflops_16bit"),
            tf8: c.get("mma_tflops_8bit"),
            dram: c.get("dram_gbps"),
            l2: c.get("l2_gbps"),
            lat: c.get("tma_latency_us"),
            bar: c.get("barrier_us"),
            named_bar: c.get("named_barrier_us"),
            mma_by_n: c.mma_by_n(),
            mma_chain_by_n: c.mma_chain_by_n(),
            loaded: c.loaded_latency(),
            alu: c.get("alu_gops_per_sm"),
            int_ratio: c.get("alu_int_ratio"),
            store: c.get("store_gbps"),
            tma_store: c.get("tma_store_gbps"),
            launch: c.get("launch_us"),
            clock_ghz: c.get("clock_ghz"),
            setup: c.get("cta_setup_us"),
            span: c.get("kernel_span_us"),
            cluster_start: c.get("cluster_start_us"),
            cluster_ctas: (2..=16)
                .filter_map(|n| Some((n, c.cluster_ctas(n)?)))
                .collect(),
            memset: c.get("memset_gbps"),
            red: c.get("red_gops"),
            red_dram: c.get("red_dram_gops"),
            red_contended: c.get("red_contended_gops"),
            red_exponent: c.get("red_contention_exponent"),
            sm_dram: c.get("sm_dram_gbps"),
            tma_misaligned_rows: c.get("tma_misaligned_rows_per_us"),
            dirty: c.get("flush_dirty_fraction"),
            dirty_evict_first: c.get("flush_dirty_fraction_evict_first"),
            acc_issue: c.get("acc_issue_ratio"),
        }
    }

    /// The 16-bit MMA rate for an accumulator `n` wide (TFLOP/s): the per-N table, linear
    /// between its points; `None` when the table is empty or `n` lies outside it (the caller
    /// then uses `mma_tflops_16bit`).
    fn mma_rate_n(&self, n: f64) -> Option<f64> {
        interpolate(&self.mma_by_n, n)
    }

    /// The 16-bit MMA rate `chains` warpgroups' dependent MMAs on an `n`-wide accumulator draw
    /// from one SM's tensor cores, summed over the GPU (TFLOP/s, comparable with
    /// `mma_rate_n`): `chains` times one chain's, linear between the table's Ns (an N outside
    /// it, its nearest); `None` without a table.
    fn mma_chain_rate_n(&self, n: f64, chains: f64) -> Option<f64> {
        let t = &self.mma_chain_by_n;
        let n = n.clamp(t.first()?.0, t.last()?.0);
        Some(chains * interpolate(t, n)?)
    }

    /// The TMA latency a copy sees while every SM draws `rate` bytes per µs: the stream
    /// table's Little's-law latency, linear between its points and from the unloaded latency
    /// at rate zero; beyond its fastest point, that point's latency (more load than the probe
    /// reached is the load term's business). Without a table: `tma_latency_us`.
    fn loaded_latency(&self, rate: f64) -> f64 {
        let mut prev = (0.0, self.lat);
        for &(x, l) in &self.loaded {
            if rate <= x {
                let f = (rate - prev.0) / (x - prev.0).max(1e-9);
                return prev.1 + (l - prev.1) * f.clamp(0.0, 1.0);
            }
            prev = (x, l);
        }
        prev.1
    }

    /// The ring limit of `stages` stages moving `bytes` per iteration per SM: (latency +
    /// consume + handoff) ÷ stages, with the latency at the rate the iteration itself draws.
    /// That rate falls as the iteration lengthens, so the iteration is the fixed point
    /// it = max(load, consume, handoff, ring(it)) (ring decreases in it; bisection). With the
    /// stream table a stage's copy also takes its own transfer (`load`, the stage's bytes at the
    /// CTA's share of bandwidth): the table's latency excludes it. With a `deferred` release (a
    /// stage held until the next stage's data has arrived and its MMA is issued), a stage's
    /// round is latency + handoff + one whole iteration, so the limit is (latency + handoff) ÷
    /// (stages − 1).
    fn ring_us(
        &self,
        stages: f64,
        deferred: bool,
        bytes: f64,
        load: f64,
        consume: f64,
        handoff: f64,
    ) -> f64 {
        let transfer = if self.loaded.is_empty() { 0.0 } else { load };
        let other = load.max(consume).max(handoff);
        let (held, covering) = if deferred && stages >= 2.0 {
            (0.0, stages - 1.0)
        } else {
            (consume, stages)
        };
        let ring = |it: f64| {
            (self.loaded_latency(bytes / it.max(1e-9)) + transfer + held + handoff) / covering
        };
        let base = other.max(1e-9);
        if ring(base) <= base {
            return ring(base);
        }
        let (mut lo, mut hi) = (base, ring(base));
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if ring(mid) > mid {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        ring(hi)
    }
}

/// A table of (x, y) by x, linear between its points; `None` when it is empty or `x` lies
/// outside it.
fn interpolate(t: &[(f64, f64)], x: f64) -> Option<f64> {
    let (first, last) = (t.first()?, t.last()?);
    if x < first.0 || x > last.0 {
        return None;
    }
    for w in t.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if x >= x0 && x <= x1 {
            return Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0).max(1e-9));
        }
    }
    Some(first.1)
}

/// Rates a CTA sees while `active` CTAs run on the GPU, `per_sm` of them on each busy SM.
struct Rates<'a> {
    p: &'a P,
    active: f64,
    per_sm: f64,
    /// Fraction of L2 traffic that misses to DRAM.
    miss: f64,
    /// Dirty bytes written back per byte loaded from DRAM (the harness's flush).
    writeback: f64,
}

impl Rates<'_> {
    /// A CTA's copies of `bytes`: at its share of L2, and for the part that misses, at its share
    /// of DRAM, which also carries the dirty lines those misses evict (`writeback` bytes per
    /// missed byte), and never faster than `sm_dram_gbps` (shared by the CTAs resident on its
    /// SM) however few SMs the grid keeps busy.
    /// `misaligned_rows` of them start inside 32-byte sectors: the SM's TMA serves those at
    /// `tma_misaligned_rows_per_us` (shared by the CTAs resident on it), whatever their bytes.
    fn load_us(&self, bytes: f64, misaligned_rows: f64) -> f64 {
        let l2 = self.p.l2 * 1e3 / self.active;
        let dram = self.p.dram * 1e3 / self.active;
        let sm = self.p.sm_dram * 1e3 / self.per_sm;
        let by_bytes =
            bytes * (1.0 / l2).max(self.miss * ((1.0 + self.writeback) / dram).max(1.0 / sm));
        by_bytes.max(misaligned_rows * self.per_sm / self.p.tma_misaligned_rows)
    }
    /// A CTA's MMAs, issued by `warpgroups` of its warpgroups: at the SM's rate for their N,
    /// unless the chains of dependent MMAs on the SM (those warpgroups on each CTA resident
    /// there) are too few to reach it.
    fn mma_us(&self, w: &analyze::Work, warpgroups: f64) -> f64 {
        let chains = warpgroups.max(1.0) * self.per_sm;
        let per_sm16 = self.p.tf16 * 1e6 / self.p.sms;
        let per_sm8 = self.p.tf8 * 1e6 / self.p.sms;
        let mut rest16 = w.mma_flops_16;
        let mut t = 0.0;
        for (n, f) in &w.mma_flops_16_by_n {
            let n = *n as f64;
            let rate = self.p.mma_rate_n(n).unwrap_or(self.p.tf16);
            let rate = self
                .p
                .mma_chain_rate_n(n, chains)
                .map_or(rate, |c| rate.min(c));
            t += f / (rate * 1e6 / self.p.sms);
            rest16 -= f;
        }
        t + rest16.max(0.0) / per_sm16 + w.mma_flops_8 / per_sm8
    }
    /// The SMs the CTAs in flight occupy (`per_sm` on each).
    fn busy_sms(&self) -> f64 {
        (self.active / self.per_sm).clamp(1.0, self.p.sms)
    }
    fn alu_us(&self, w: &analyze::Work) -> f64 {
        // Indexed reductions and per-column vector loads in accumulator layouts issue more than
        // their counted operations (acc_issue_ratio).
        let extra = self.p.acc_issue - 1.0;
        let all = w.alu_ops + extra * w.acc_alu_ops;
        let int = w.int_ops + extra * w.acc_int_ops;
        (all / (self.p.alu * 1e3)).max(int / (self.p.alu * self.p.int_ratio * 1e3))
            + w.store_bytes / (self.p.store * 1e3 / self.active)
            + w.tma_store_bytes / (self.p.tma_store * 1e3 / self.active)
            + w.reg_load_bytes / (self.p.l2 * 1e3 / self.busy_sms())
            + w.syncs * self.p.named_bar
    }
    /// Row-layout tiles streamed through registers, at the SM's share of DRAM: the CTAs
    /// resident on an SM take turns (`per_sm` in the wave), so a CTA's share is not divided
    /// again. With fewer SMs busy than the GPU has, each draws a larger share, up to its
    /// share of the L2's rate (what one SM's requests in flight reach).
    fn row_us(&self, w: &analyze::Work) -> f64 {
        let share = (self.p.dram / self.busy_sms()).min(self.p.l2 / self.p.sms);
        w.row_bytes / (share * 1e3)
    }
}

/// Predict `kernel` on `target` at `shape` with `calibration`.
pub fn estimate(
    kernel: &Kernel,
    target: &'static Target,
    shape: &BTreeMap<String, i64>,
    calibration: &Calibration,
) -> Result<Estimate, CostError> {
    estimate_with(
        kernel,
        &KernelFacts::new(kernel, target),
        shape,
        calibration,
    )
}

/// [`estimate`] with the kernel's facts already derived.
pub fn estimate_with(
    kernel: &Kernel,
    facts: &KernelFacts,
    shape: &BTreeMap<String, i64>,
    calibration: &Calibration,
) -> Result<Estimate, CostError> {
    let target = facts.target;
    if calibration.meta.target != target.name {
        return Err(CostError::WrongCalibration {
            target: target.name.into(),
            table: calibration.meta.target.clone(),
        });
    }
    check_shape(kernel, shape)?;
    let p = P::new(calibration);
    let a = analyze::analyze(kernel, shape);
    if let Some(t) = &a.tiles {
        shape::check_tiles(kernel, &t.counts)?;
    }
    let mut assumptions = a.assumptions.clone();
    {
        let mut ns: Vec<i64> = Vec::new();
        for r in &a.roles {
            for w in [&r.before, &r.after]
                .into_iter()
                .chain(r.loops.iter().map(|l| &l.work))
            {
                ns.extend(w.mma_flops_16_by_n.keys().copied());
            }
        }
        ns.sort_unstable();
        ns.dedup();
        let missing: Vec<String> = ns
            .iter()
            .filter(|n| p.mma_rate_n(**n as f64).is_none())
            .map(|n| n.to_string())
            .collect();
        if !missing.is_empty() {
            assumptions.push(format!(
                "no measured wgmma rate for N = {} (the table's per-N rates cover {}): mma_tflops_16bit for those MMAs",
                missing.join(", "),
                if p.mma_by_n.is_empty() {
                    "nothing".to_string()
                } else {
                    p.mma_by_n.iter().map(|(n, _)| n.to_string()).collect::<Vec<_>>().join(", ")
                }
            ));
        }
    }

    // ---- grid and occupancy
    let tiles: i64 = a.tiles.as_ref().map_or(1, |t| t.counts.iter().product());
    let smem = facts.layout.total;
    let threads = kernel.block_threads();
    let lim = &target.limits;
    let budgets = kernel.roles.iter().any(|(_, r)| r.regs.is_some());
    // Every thread's share of the register file: all of it over the CTA's threads, or 1/n of
    // that with `ctas_per_sm=n`.
    let per_sm_asked = kernel.ctas_per_sm();
    let share = lim.regs_per_block / (threads * per_sm_asked).max(1);
    let regs_per_thread = if budgets {
        // setmaxnreg schedules are launched with their whole share.
        share.max(1)
    } else if per_sm_asked > 1 {
        share.clamp(1, 128)
    } else {
        assumptions
            .push("no role states `regs=`: 128 registers per thread assumed for occupancy".into());
        128
    };
    let limits = [
        (
            "shared memory",
            lim.smem_per_sm as u64 / (smem + 1024).max(1),
        ),
        ("threads", (lim.threads_per_sm / threads.max(1)) as u64),
        (
            "registers",
            (lim.regs_per_sm / (threads * regs_per_thread).max(1)) as u64,
        ),
        ("CTA slots", lim.max_ctas_per_sm as u64),
    ];
    let (occ_limit, occ) = limits.iter().fold(
        ("", u64::MAX),
        |b, &(n, v)| if v < b.1 { (n, v) } else { b },
    );
    let occ = occ.max(1) as f64;
    let persistent = kernel.persistent;
    // Stream-K shares every tile's steps out over the grid: up to one CTA per step.
    let stream_steps = a.tiles.as_ref().and_then(|t| t.stream);
    // A cluster's CTAs share a GPC: where the table measured clusters of this size, only the
    // SMs they can occupy take CTAs (the runtime sizes persistent grids the same way).
    let cluster_size: u32 = kernel.cluster.iter().product();
    let cluster_sms = p.cluster_ctas.get(&cluster_size).copied();
    let sms = cluster_sms.unwrap_or(p.sms).min(p.sms);
    let (ctas, per_sm) = if persistent {
        let work = (tiles as f64) * stream_steps.unwrap_or(1) as f64;
        (work.min(sms), 1.0)
    } else {
        (tiles as f64, occ)
    };
    // At several CTAs per SM the measured one-per-SM count is scaled (on an H100, clusters of 4
    // at two per SM: 248 measured, 240 taken).
    let slots = sms * per_sm;
    let active = ctas.min(slots).max(1.0);
    // CTAs resident on each busy SM: fewer than fit when the grid does not fill the GPU.
    let per_sm_busy = per_sm.min((ctas / sms).ceil()).max(1.0);

    // ---- traffic and L2 reuse
    let per_tile = |f: &dyn Fn(&analyze::Work) -> f64| -> f64 {
        a.roles
            .iter()
            .map(|r| {
                f(&r.before)
                    + f(&r.after)
                    + r.loops.iter().map(|l| l.trips * f(&l.work)).sum::<f64>()
            })
            .sum()
    };
    let mut by_tensor: BTreeMap<usize, f64> = BTreeMap::new();
    for r in &a.roles {
        let mut add = |w: &analyze::Work, k: f64| {
            for (t, b) in &w.load_by_tensor {
                *by_tensor.entry(*t).or_default() += b * k;
            }
        };
        add(&r.before, 1.0);
        add(&r.after, 1.0);
        for l in &r.loops {
            add(&l.work, l.trips);
        }
    }
    let t = tiles as f64;
    let l2_bytes = per_tile(&|w| w.load_bytes + w.reg_load_bytes) * t;
    let flops = per_tile(&|w| w.mma_flops_16 + w.mma_flops_8) * t;
    let store_bytes = per_tile(&|w| w.store_bytes + w.tma_store_bytes) * t;
    // Row-layout tiles stream through DRAM both ways.
    let row_bytes = per_tile(&|w| w.row_bytes) * t;
    let alu_total = per_tile(&|w| w.alu_ops) * t;
    let dram_loads = dram_load_bytes(&a, &by_tensor, tiles, active, p.l2_cap);
    let dram_bytes = dram_loads + store_bytes + row_bytes;
    let miss = if l2_bytes > 0.0 {
        (dram_loads / l2_bytes).min(1.0)
    } else {
        0.0
    };
    // The harness flushes L2 by writing a buffer twice its size, so the L2 a timed kernel starts
    // with is dirty: the lines its first loads evict are written back (a fraction of them
    // measured, up to the L2's size), on the same DRAM. Copies that ask L2 to evict their own
    // lines first (`evict="first"`) evict fewer dirty ones.
    let ef_loads = if a.evict_first.is_empty() {
        0.0
    } else {
        let ef: BTreeMap<usize, f64> = by_tensor
            .iter()
            .filter(|(t, _)| a.evict_first.contains(t))
            .map(|(t, b)| (*t, *b))
            .collect();
        dram_load_bytes(&a, &ef, tiles, active, p.l2_cap).min(dram_loads)
    };
    let ef_share = if dram_loads > 0.0 {
        ef_loads / dram_loads
    } else {
        0.0
    };
    let writeback =
        (p.dirty * (1.0 - ef_share) + p.dirty_evict_first * ef_share) * dram_loads.min(p.l2_cap);
    let rates = Rates {
        p: &p,
        active,
        per_sm: per_sm_busy,
        miss,
        writeback: if dram_loads > 0.0 {
            writeback / dram_loads
        } else {
            0.0
        },
    };

    // ---- one tile, per role
    let mut iter_of: BTreeMap<(usize, usize), (f64, Terms)> = BTreeMap::new();
    // Of an iteration, the time streaming row-layout tiles (a throughput CTAs on an SM share).
    let mut row_of: BTreeMap<(usize, usize), f64> = BTreeMap::new();
    // Pipelined loops are timed jointly across the roles that run them.
    let mut pipelines: Vec<cake_ir::PipelineId> = Vec::new();
    for r in &a.roles {
        for l in &r.loops {
            if let Some(pp) = l.pipeline {
                if !pipelines.contains(&pp) {
                    pipelines.push(pp);
                }
            }
        }
    }
    // Loops nested in another first: an outer loop's iteration holds its inner loops' (their
    // time is part of its consumers' work, `inner_us`). The report keeps program order.
    let mut order: Vec<(usize, usize, usize)> = Vec::new();
    for (ri, r) in a.roles.iter().enumerate() {
        for (li, l) in r.loops.iter().enumerate() {
            let mut depth = 0;
            let mut up = l.parent;
            while let Some(pi) = up {
                depth += 1;
                up = r.loops[pi].parent;
            }
            order.push((depth, ri, li));
        }
    }
    order.sort_by_key(|&(depth, ri, li)| (std::cmp::Reverse(depth), ri, li));
    let mut reports: Vec<((usize, usize), LoopReport)> = Vec::new();
    for (_, ri, li) in order {
        let l = &a.roles[ri].loops[li];
        let members: Vec<(usize, usize, &analyze::LoopWork)> = match l.pipeline {
            Some(pp) => a
                .roles
                .iter()
                .enumerate()
                .filter_map(|(i, r)| {
                    r.loops
                        .iter()
                        .position(|m| m.pipeline == Some(pp))
                        .map(|j| (i, j, &r.loops[j]))
                })
                .collect(),
            None => vec![(ri, li, l)],
        };
        // Per member: the time of the loops nested in it, per iteration of it.
        let inner_us = |i: usize, j: usize| -> f64 {
            let outer = &a.roles[i].loops[j];
            a.roles[i]
                .loops
                .iter()
                .enumerate()
                .filter(|(_, c)| c.parent == Some(j) && outer.trips > 0.0)
                .map(|(ci, c)| iter_of.get(&(i, ci)).map_or(0.0, |x| x.0) * c.trips / outer.trips)
                .sum()
        };
        let load_bytes: f64 = members.iter().map(|(_, _, m)| m.work.load_bytes).sum();
        let copies: u32 = members.iter().map(|(_, _, m)| m.work.copies).sum();
        let misaligned: f64 = members.iter().map(|(_, _, m)| m.work.misaligned_rows).sum();
        let load_us = rates.load_us(load_bytes, misaligned);
        let (mut c, mut c_mma, mut c_alu, mut c_row, mut c_inner) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
        for (i, j, m) in &members {
            let replicas = f64::from(a.roles[*i].replicas.max(1));
            let (mm, al, rs) = (
                rates.mma_us(&m.work, replicas),
                rates.alu_us(&m.work),
                rates.row_us(&m.work),
            );
            let consume = if replicas > 1.0 && feeds_mma(kernel, m.id) {
                // Warpgroups whose element-wise results are an MMA operand of the same
                // iteration (attention's P) each wait on their own element-wise work before
                // that MMA, so they drift apart: while one computes, the other W - 1 keep
                // the tensor cores busy, and of the shorter of the two phases that share
                // hides, with or without a deferred MMA (measured within 9 % of each
                // other, bench/results/2026-12-03-cost-model-2/).
                let hidden = mm.min(al) * (replicas - 1.0) / replicas;
                (mm + al - hidden).max(mm.max(al)) + rs
            } else if defers_mma(kernel, m.id) {
                // A loop whose last MMA is deferred (`defer=True`) runs its element-wise
                // work while that MMA is in flight: the two overlap instead of adding up.
                mm.max(al) + rs
            } else {
                // Warpgroups whose element-wise work only reads the accumulator wait on
                // the same stage and their MMAs finish together: they run in lockstep.
                mm + al + rs
            };
            // The loops inside it run before its consumer is done with the stage.
            let inner = inner_us(*i, *j);
            if consume + inner > c {
                c = consume + inner;
                c_mma = mm;
                c_alu = al;
                c_row = rs;
                c_inner = inner;
            }
        }
        let waits = members.iter().any(|(_, _, m)| m.work.waits > 0.0);
        let stages = l.pipeline.map(|pp| kernel.pipelines[pp].stages);
        // A role alone on its pipeline waits for the copies it issues: in flight are the
        // iteration's own and those it issued early (`lm.ahead`), not the whole ring.
        let stages = match (stages, members.as_slice()) {
            (Some(s), [(_, _, m)]) if copies > 0 => Some(s.min(1 + ahead_steps(kernel, m.id))),
            _ => stages,
        };
        let handoff = if waits { p.bar } else { 0.0 };
        // The consumer's loop holds the MMA (the producer's, with the same pipeline, does not).
        let deferred = members
            .iter()
            .any(|(_, _, m)| releases_a_stage_late(kernel, facts, m.id));
        // The latency under the load the loop itself puts on L2 (every SM runs it).
        let ring = match stages {
            Some(s) if copies > 0 => {
                let note = "no [tma_stream_gbps] table: rings cover the unloaded tma_latency_us";
                if p.loaded.is_empty() && !assumptions.iter().any(|a| a == note) {
                    assumptions.push(note.into());
                }
                let per_sm = load_bytes * active / p.sms;
                // A stage a wgmma reads is released one iteration late (`wait_group 1` after
                // the next stage's wait, then the arrive: docs/language.md §9.6): while the
                // loop waits for data, each stage is also held through the next one's wait.
                // Measured on an H100: BK = 256 rings of 4 / 3 / 2 stages ran 1.12-1.28x /
                // 0.89-1.20x / 0.78-1.05x cuBLAS (bench/results/2026-12-05-bk/, calls 1, 3).
                p.ring_us(s as f64, deferred, per_sm, load_us, c, handoff)
            }
            _ => 0.0,
        };
        // Registers the role's fragments (and a wgmma's working set) need beyond its
        // budget are spilled: each is reloaded from and stored to local memory once per
        // iteration, on the warps' critical path.
        let worst = members
            .iter()
            .filter_map(|(i, _, _)| a.roles[*i].role)
            .map(|rid| (spilled_registers(kernel, target, rid), rid))
            .max_by_key(|(n, rid)| (*n, std::cmp::Reverse(rid.index())));
        let spilled = worst.map_or(0, |(n, _)| n);
        let spill_us = spilled as f64 * 2.0 * L1_HIT_CYCLES / (p.clock_ghz * 1e3);
        if let Some((_, spiller)) = worst.filter(|(n, _)| *n > 0) {
            let note = format!(
                    "role `{}` needs {spilled} registers per thread more than its budget (fragments and the wgmma working set): ptxas spills them; charged {spill_us:.3} µs per iteration of `{}` (a reload and a store each, at L1 latency)",
                    kernel.roles[spiller].name,
                    kernel.loops[l.id].var_name
                );
            if !assumptions.contains(&note) {
                assumptions.push(note);
            }
        }
        let limit = load_us.max(c).max(ring).max(handoff);
        let it = limit + spill_us;
        // The element-wise work the MMAs do not hide (all of it, unless an MMA is deferred).
        // The inner loops' time is theirs (`loop_terms` adds it): not counted here.
        let mut terms = Terms {
            tensor_us: c_mma,
            epilogue_us: (c - c_inner - c_mma - c_row).max(0.0),
            memory_us: c_row,
            ..Terms::default()
        };
        row_of.insert((ri, li), c_row);
        let extra = limit - c;
        if extra > 0.0 {
            if load_us >= ring && load_us >= handoff {
                terms.memory_us = extra;
            } else if ring >= handoff {
                terms.latency_us = extra;
            } else {
                terms.sync_us = extra;
            }
        }
        terms.latency_us += spill_us;
        iter_of.insert((ri, li), (it, terms));
        if members.first().map(|(i, _, _)| *i) == Some(ri) || l.pipeline.is_none() {
            let report = LoopReport {
                role: members
                    .iter()
                    .map(|(i, _, _)| a.roles[*i].name.clone())
                    .collect::<Vec<_>>()
                    .join(" + "),
                var: kernel.loops[l.id].var_name.clone(),
                pipeline: l.pipeline.map(|pp| kernel.pipelines[pp].name.clone()),
                stages,
                trips: l.trips,
                iteration_us: it,
                load_us,
                consume_us: c,
                ring_us: ring,
                deferred_release: deferred,
                handoff_us: handoff,
                mma_us: c_mma,
                alu_us: c_alu,
                load_bytes,
                flops: members
                    .iter()
                    .map(|(_, _, m)| m.work.mma_flops_16 + m.work.mma_flops_8)
                    .sum(),
            };
            reports.push(((ri, li), report));
        }
    }
    reports.sort_by_key(|(at, _)| *at);
    let loops_out: Vec<LoopReport> = reports.into_iter().map(|(_, r)| r).collect();
    // Per role: what runs once per tile outside loops, then its loops.
    let mut critical: Option<(usize, f64, Terms, f64)> = None;
    for (ri, r) in a.roles.iter().enumerate() {
        let mut terms = Terms::default();
        let mut stream = 0.0;
        for w in [&r.before, &r.after] {
            let (mm, al, rs) = (
                rates.mma_us(w, f64::from(r.replicas)),
                rates.alu_us(w),
                rates.row_us(w),
            );
            terms.tensor_us += mm;
            terms.epilogue_us += al;
            terms.memory_us += rs;
            stream += rs;
            if w.copies > 0 && w.waits > 0.0 {
                // The role waits for its own copies: their latency and transfer are exposed.
                terms.latency_us += p.lat;
                terms.memory_us += rates.load_us(w.load_bytes, w.misaligned_rows);
            } else {
                terms.sync_us += w.waits * p.bar;
            }
        }
        // A loop nested in another runs within its iterations (`loop_terms`).
        for (li, l) in r.loops.iter().enumerate() {
            if l.parent.is_none() {
                terms.add(&loop_terms(&iter_of, ri, &r.loops, li), l.trips);
            }
            stream += row_of[&(ri, li)] * l.trips;
        }
        let total = terms.total();
        if critical.as_ref().is_none_or(|c| total > c.1) {
            critical = Some((ri, total, terms, stream));
        }
    }
    let (_, tile_us, tile_terms, tile_stream_us) =
        critical.unwrap_or((0, 0.0, Terms::default(), 0.0));

    // ---- waves
    let mut terms = Terms::default();
    let (sched_us, waves) = if tiles == 0 {
        (0.0, 0.0)
    } else if persistent {
        let balanced = t / ctas;
        // Stream-K CTAs take equal shares of steps: no tile is a CTA's last alone. Each pays
        // for one partial published and one added (an L2 round trip and the bytes).
        let max_tiles = if stream_steps.is_some() {
            balanced
        } else {
            balanced.ceil()
        };
        terms.add(&tile_terms, balanced);
        terms.tail_us = (max_tiles - balanced) * tile_us;
        terms.latency_us += p.setup + p.lat;
        let fixup_us = if let Some(kb) = stream_steps.filter(|k| *k > 0) {
            // One partial published, then the run that ends a tile adds every earlier run's
            // partial in turn (a wait and an L2 read each). The whole waves but the last run
            // data-parallel; the rest's steps are shared out, so a shared tile spans about
            // KB ÷ (its steps per CTA) runs, one more where the shares do not align.
            let bytes = per_tile(&|w| w.fixup_bytes);
            let one = bytes / (p.l2 * 1e3 / p.sms);
            let kb = kb as f64;
            let whole = (t / ctas).floor();
            let shared = if whole >= 2.0 {
                t - (whole - 1.0) * ctas
            } else {
                t
            };
            let per_cta = (shared * kb / ctas).max(1.0);
            let runs = if per_cta >= kb {
                2.0
            } else {
                (kb / per_cta).ceil() + 1.0
            };
            p.lat + one + (runs - 1.0) * (p.lat + one)
        } else {
            0.0
        };
        terms.latency_us += fixup_us;
        (max_tiles * tile_us + p.setup + p.lat + fixup_us, t / sms)
    } else {
        // Each CTA pays its prologue and pipeline fill; CTAs resident together on an SM share
        // its tensor cores and ALUs but overlap each other's latencies.
        let first = p.setup + p.lat;
        let lat_tile = tile_us + first;
        // The SM's DRAM share streams one CTA's rows while its ALUs work on another's.
        let thr_tile = (tile_terms.tensor_us + tile_terms.epilogue_us).max(tile_stream_us);
        let wave = (per_sm_busy * thr_tile).max(lat_tile);
        let waves_exact = t / slots;
        let waves = waves_exact.ceil();
        let mut per = tile_terms.clone();
        per.latency_us += first;
        // Spread one wave's time over the causes in proportion.
        let scale = if lat_tile > 0.0 { wave / lat_tile } else { 0.0 };
        terms.add(&per, scale * waves_exact);
        // The last wave's few CTAs share DRAM with each other only: each streams at up to the
        // SM's own cap, so the memory part of their tile is shorter than in a full wave.
        let last = t - (waves - 1.0) * slots;
        let last_wave = if waves > 1.0 && last < active && tile_terms.total() > 0.0 {
            let per_cta = |n: f64, per: f64| (p.dram / n).min(p.sm_dram / per);
            let per_last = per_sm.min((last / sms).ceil()).max(1.0);
            let speed = (per_cta(last, per_last) / per_cta(active, per_sm_busy)).max(1.0);
            let memory = (tile_terms.memory_us / tile_terms.total()).clamp(0.0, 1.0);
            wave * (1.0 - memory + memory / speed)
        } else {
            wave
        };
        let sched = (waves - 1.0) * wave + last_wave;
        terms.tail_us = (sched - waves_exact * wave).max(0.0);
        (sched, waves_exact)
    };
    let mem_us = ((dram_bytes + writeback) / (p.dram * 1e3)).max(l2_bytes / (p.l2 * 1e3));
    // Adds to one destination are serialized at L2: adds spread over A destinations go at
    // the rate measured on 32 of them, times (A / 32)^exponent, up to the L2's rate (the
    // destinations in use fit L2) or the DRAM's. The destinations in use are a slice of the
    // tensor (its leading coordinates fixed) times the slices the CTAs in flight cover.
    let mut atomic_us = 0.0;
    for (tensor, slice) in &a.red_slices {
        let n = per_tile(&|w| w.reds_by_tensor.get(tensor).copied().unwrap_or(0.0)) * t;
        let slices = (a.tensor_bytes.get(tensor).copied().unwrap_or(0.0) / slice.bytes).max(1.0);
        let concurrent = (active * slices / t.max(1.0)).clamp(1.0, slices);
        let targets = slice.targets * concurrent;
        let cap = if slice.bytes * concurrent <= p.l2_cap {
            p.red
        } else {
            p.red_dram
        };
        let rate = (p.red_contended * (targets / 32.0).powf(p.red_exponent)).min(cap);
        atomic_us += n / (rate * 1e3);
    }
    if !a.red_slices.is_empty() {
        assumptions.push(
            "global atomic adds land on the destinations in use uniformly (the CTAs in flight cover consecutive slices of the leading coordinates)".into(),
        );
    }
    let core_us = sched_us.max(mem_us).max(atomic_us);
    if mem_us.max(atomic_us) > sched_us {
        terms.memory_us += mem_us.max(atomic_us) - sched_us;
    }
    // The launcher fills `zero=` tensors first: one memset each, a launch of its own. The GPU
    // runs it (the fill and a kernel's start) or, when that is quicker, waits for the host to
    // issue the next launch (a launch's time less the span of the kernel it launched).
    let zero_us: f64 = kernel
        .zeroed
        .iter()
        .map(|z| {
            let fill = a.tensor_bytes.get(&z.index()).copied().unwrap_or(0.0) / (p.memset * 1e3);
            (fill + p.span).max(p.launch - p.span)
        })
        .sum();
    terms.memory_us += zero_us;
    terms.launch_us = p.launch;
    let time_us = core_us + zero_us + p.launch;
    // On the GPU a kernel spans what the tiles take plus a fixed start and drain: a one-CTA
    // kernel's span, less the prologue and first load its tile already pays, and what a
    // cluster launch adds. (A one-CTA kernel whose load is a TMA copy measured no longer, so
    // copies add nothing here.)
    let clustered = kernel.cluster.iter().product::<u32>() > 1;
    let start_us =
        (p.span - p.setup - p.lat).max(0.0) + if clustered { p.cluster_start } else { 0.0 };
    let span_us = core_us + zero_us + start_us;

    // ---- speed of light (datasheet ceilings, as the harness's physical floor)
    let unique: f64 = by_tensor
        .keys()
        .map(|t| a.tensor_bytes.get(t).copied().unwrap_or(0.0))
        .sum::<f64>()
        + store_bytes.min(
            a.tensor_bytes.values().sum::<f64>(), // outputs written at least once
        )
        // Row-layout tiles: each row read and written once at least.
        + row_bytes.min(a.tensor_bytes.values().sum::<f64>());
    // The ceilings of the card the table was measured on, where they are known; else the
    // target's, which hold for every card.
    let sol = cake_target::peak_for(target.name, Some(&calibration.meta.gpu)).map_or(0.0, |pk| {
        let f8 = per_tile(&|w| w.mma_flops_8) * t;
        let f16 = flops - f8;
        let compute =
            f16 / (pk.tflops_16bit * 1e6) + pk.tflops_fp8.map_or(0.0, |t8| f8 / (t8 * 1e6));
        compute.max(unique / (pk.dram_gbps * 1e3))
    });

    let utilization = Utilization {
        // Each MMA against its own peak: FP8 runs at twice the 16-bit rate.
        tensor: {
            let f8 = per_tile(&|w| w.mma_flops_8) * t;
            ((flops - f8) / (p.tf16 * 1e6) + f8 / (p.tf8 * 1e6)) / time_us
        },
        dram: dram_bytes / (time_us * p.dram * 1e3),
        l2: l2_bytes / (time_us * p.l2 * 1e3),
        alu: alu_total / (time_us * p.alu * 1e3 * p.sms),
        sms: if sched_us > 0.0 {
            (terms.total() - terms.tail_us - terms.launch_us) / (core_us.max(1e-9))
                * (active / (p.sms * per_sm))
        } else {
            0.0
        },
    };
    let grid = Grid {
        tiles,
        ctas: ctas as i64,
        persistent,
        ctas_per_sm: per_sm as u32,
        occupancy_limit: if persistent {
            "persistent: one CTA per SM".into()
        } else {
            occ_limit.to_string()
        },
        waves,
        smem_bytes: smem,
        threads,
        cluster: cluster_size,
        cluster_sms: cluster_sms.filter(|c| *c < p.sms).map(|c| c as u32),
    };
    let mut est = Estimate {
        kernel: kernel.name.clone(),
        target: target.name.to_string(),
        shape: shape.clone(),
        time_us,
        span_us,
        bound: terms.bound(),
        span_bound: Terms {
            launch_us: 0.0,
            ..terms.clone()
        }
        .bound(),
        tflops: (flops > 0.0).then(|| flops / (time_us * 1e6)),
        dram_tbps: dram_bytes / (time_us * 1e6),
        flops,
        dram_bytes,
        l2_bytes,
        speed_of_light_us: sol,
        terms,
        utilization,
        grid,
        loops: loops_out,
        hints: Vec::new(),
        assumptions,
        calibration: CalibrationRef {
            target: calibration.meta.target.clone(),
            gpu: calibration.meta.gpu.clone(),
            date: calibration.meta.date.clone(),
            method: calibration.meta.method.clone(),
            unverified: calibration
                .unverified()
                .into_iter()
                .map(str::to_string)
                .collect(),
        },
    };
    est.hints = hints(kernel, facts, &a, &p, &est, &by_tensor, tile_us, slots);
    Ok(est)
}

/// DRAM bytes of the loads: per wave of `active` tiles in raster order, each tensor's distinct
/// slices (tiles that differ only in axes its coordinates do not read share them); the whole
/// tensor set once when it fits in half of L2.
fn dram_load_bytes(
    a: &analyze::Analysis,
    by_tensor: &BTreeMap<usize, f64>,
    tiles: i64,
    active: f64,
    l2_cap: f64,
) -> f64 {
    let t = tiles as f64;
    let unique: BTreeMap<usize, f64> = by_tensor
        .iter()
        .map(|(&i, &per_tile)| {
            let axes = a.tensor_axes.get(&i).copied().unwrap_or(0);
            let distinct: f64 = match &a.tiles {
                Some(ti) => ti
                    .counts
                    .iter()
                    .enumerate()
                    .filter(|(ax, _)| axes & (1 << ax) != 0)
                    .map(|(_, &c)| c as f64)
                    .product(),
                None => 1.0,
            };
            let size = a.tensor_bytes.get(&i).copied().unwrap_or(f64::MAX);
            (i, (per_tile * distinct).min(size.max(per_tile)))
        })
        .collect();
    let total_unique: f64 = unique.values().sum();
    if total_unique <= 0.5 * l2_cap {
        return total_unique;
    }
    // Distinct tile coordinates per axis within one wave.
    let Some(ti) = &a.tiles else {
        return total_unique;
    };
    let w = active.min(t).max(1.0);
    let per_axis: Vec<f64> = if ti.counts.len() == 2 {
        let (c0, c1) = (ti.counts[0] as f64, ti.counts[1] as f64);
        match ti.group {
            Some(g) => {
                let d0 = (g as f64).min(c0);
                let d1 = (w / d0).ceil().min(c1);
                vec![d0, d1]
            }
            None => {
                let d1 = w.min(c1);
                let d0 = (w / c1).ceil().min(c0);
                vec![d0, d1]
            }
        }
    } else {
        // Row-major over any number of axes: the last axis varies fastest.
        let mut rest = w;
        let mut out = vec![1.0; ti.counts.len()];
        for (ax, &c) in ti.counts.iter().enumerate().rev() {
            out[ax] = rest.min(c as f64).max(1.0);
            rest = (rest / c as f64).ceil();
        }
        out
    };
    let waves = t / w;
    let mut bytes = 0.0;
    for (&i, &per_tile) in by_tensor {
        let axes = a.tensor_axes.get(&i).copied().unwrap_or(0);
        let distinct: f64 = per_axis
            .iter()
            .enumerate()
            .filter(|(ax, _)| axes & (1 << ax) != 0)
            .map(|(_, d)| *d)
            .product();
        bytes += waves * distinct * per_tile;
    }
    bytes.max(total_unique)
}

#[allow(clippy::too_many_arguments)]
fn hints(
    kernel: &Kernel,
    facts: &KernelFacts,
    a: &analyze::Analysis,
    p: &P,
    est: &Estimate,
    by_tensor: &BTreeMap<usize, f64>,
    tile_us: f64,
    slots: f64,
) -> Vec<Hint> {
    let mut out = Vec::new();
    let hint = |info: &'static CodeInfo, span: Span, message: String, help: Option<String>| Hint {
        code: info.code,
        message,
        help,
        span,
        info,
    };
    let target = facts.target;
    let time = est.time_us;
    // 1. Stages that leave TMA latency exposed.
    for l in &est.loops {
        let (Some(stages), Some(pname)) = (l.stages, &l.pipeline) else {
            continue;
        };
        let other = l.load_us.max(l.consume_us).max(l.handoff_us);
        if l.ring_us <= other * 1.05 || l.ring_us <= 0.0 {
            continue;
        }
        let exposed =
            (l.ring_us - other) * l.trips * est.grid.tiles as f64 / est.grid.ctas.max(1) as f64;
        if exposed < 0.03 * time {
            continue;
        }
        let need = if l.deferred_release {
            // One stage is held while the next one's data is awaited (see `ring_us`).
            ((p.lat + l.handoff_us) / other.max(1e-9)).ceil() as u32 + 1
        } else {
            ((p.lat + l.consume_us + l.handoff_us) / other.max(1e-9)).ceil() as u32
        };
        let need = need.clamp(stages + 1, 16);
        let Some((pid, declared)) = kernel
            .pipelines
            .iter()
            .find(|(_, pp)| &pp.name == pname)
            .map(|(id, pp)| (id, pp.stages))
        else {
            continue;
        };
        // A stage a wgmma reads comes back an iteration late: one fewer can be issued early.
        let most_ahead = declared.saturating_sub(if l.deferred_release { 2 } else { 1 });
        if most_ahead + 1 > stages {
            // A role alone on its pipeline: the ring is there, its copies are issued too late.
            out.push(hint(
                &perf::EXPOSED_LATENCY,
                kernel.pipelines.span(pid),
                format!(
                    "role `{}` waits for the copies it issues with {stages} of pipeline `{pname}`'s {declared} stages in flight: each iteration of `{}` takes {:.2} µs where the data and the MMAs need {:.2} µs ({:.0}% of the kernel's time waiting)",
                    l.role,
                    l.var,
                    l.ring_us,
                    other,
                    100.0 * exposed / time
                ),
                Some(format!(
                    "issue them early: open the body of `{}`'s loop with `with lm.ahead({most_ahead}):` around its waits and copies (docs/language.md §8.3a)",
                    l.var
                )),
            ));
            continue;
        }
        // A role alone on its pipeline already issuing as early as it may: the ring itself
        // must grow, and the region issued early with it (`in_flight` of `declared` stages).
        let in_flight = stages;
        let (need, stages, early) = if declared > in_flight {
            let grown = need + declared - in_flight;
            (grown, declared, Some(grown - (declared - most_ahead)))
        } else {
            (need, in_flight, None)
        };
        // Shared memory with `need` stages: every view staged like this pipeline grows.
        let layout = &facts.layout;
        let grow: u64 = kernel
            .views
            .iter()
            .filter(|(_, v)| v.stages == stages && v.stages > 1)
            .map(|(id, _)| layout.view(id).stage_stride * (need - stages) as u64)
            .sum();
        let total = layout.total + grow;
        let limit = target.limits.smem_per_block_optin as u64;
        let with_early = early.map_or(String::new(), |n| format!(" with `lm.ahead({n})`"));
        let help = if total <= limit {
            format!(
                "{need} stages{with_early} fit in shared memory ({} KiB of {} KiB)",
                total / 1024,
                limit / 1024
            )
        } else {
            format!(
                "{need} stages would need {} KiB of shared memory, more than the {} KiB a block may use: smaller stages (a shorter K step) with more of them",
                total / 1024,
                limit / 1024
            )
        };
        out.push(hint(
            &perf::EXPOSED_LATENCY,
            kernel.pipelines.span(pid),
            format!(
                "{in_flight} stages{} leave TMA latency exposed: each iteration of `{}` takes {:.2} µs where the data and the MMAs need {:.2} µs ({:.0}% of the kernel's time waiting)",
                if early.is_some() { " in flight" } else { "" },
                l.var,
                l.ring_us,
                other,
                100.0 * exposed / time
            ),
            Some(help),
        ));
    }
    // 2. Tail wave.
    if est.terms.tail_us >= 0.05 * time && est.grid.tiles > 0 {
        let w = est.grid.waves;
        let full = (w - w.floor()) * 100.0;
        let mut help = None;
        if let Some(ti) = &a.tiles {
            let names = match &kernel
                .loops
                .iter()
                .find(|(_, l)| matches!(l.kind, cake_ir::LoopKind::Tiles { .. }))
            {
                Some((_, l)) => match &l.kind {
                    cake_ir::LoopKind::Tiles { names, .. } => names.clone(),
                    _ => Vec::new(),
                },
                None => Vec::new(),
            };
            let eff = |tiles: f64| tiles / (slots * (tiles / slots).ceil());
            let base = eff(est.grid.tiles as f64);
            let mut best: Option<(f64, usize, i64, f64)> = None;
            for (ax, d) in ti.divisors.iter().enumerate() {
                let Some((dim, c)) = d else { continue };
                for cand in [c / 2, c * 3 / 4, c * 3 / 2, c * 2] {
                    // Keep the extent's alignment up to 64 (an extent of 64 is often wgmma's M,
                    // which moves in steps of 64: never suggest 32 or 48 there).
                    let step = (*c).clamp(16, 64);
                    if cand < 16 || cand % step != 0 || cand == *c || cand > 256 {
                        continue;
                    }
                    let mut counts = ti.counts.clone();
                    counts[ax] = (dim + cand - 1) / cand;
                    let n: i64 = counts.iter().product();
                    let e = eff(n as f64);
                    if e > base + 0.05 && best.as_ref().is_none_or(|b| e > b.0) {
                        best = Some((e, ax, cand, n as f64 / slots));
                    }
                }
            }
            help = best.map(|(e, ax, cand, waves)| {
                format!(
                    "tiles of {cand} along `{}` make {waves:.2} waves, {:.0}% of the SM-time used instead of {:.0}% (if the rest of the schedule allows that extent)",
                    names.get(ax).cloned().unwrap_or_else(|| format!("axis {ax}")),
                    e * 100.0,
                    base * 100.0
                )
            });
            if help.is_none() && w < 1.0 {
                help = Some("fewer tiles than the SMs take: split the contraction so several CTAs share a tile (a cluster that adds the partials, or stream-K: docs/language.md §8.1a)".into());
            } else if help.is_none() && !kernel.persistent {
                help = Some("a persistent schedule (persistent=True) lets CTAs run the last tiles back to back without a fresh prologue".into());
            }
        }
        let mut message = format!(
            "{w:.2} waves: the last wave is {full:.0}% full and SMs idle for {:.0}% of the time",
            100.0 * est.terms.tail_us / time
        );
        // Waves the GPC limit on clusters adds: the same grid unclustered would need fewer.
        let g = &est.grid;
        let every_sm = p.sms * g.ctas_per_sm as f64;
        if let Some(sms) = g.cluster_sms.filter(|_| !g.persistent) {
            let tiles = g.tiles as f64;
            if (tiles / slots).ceil() > (tiles / every_sm).ceil() {
                let n = g.cluster.max(1);
                let resident = slots as u32 / n;
                message += &format!(
                    ", because only {resident} clusters of {n} run at once ({sms} of the {} SMs: a cluster stays within one GPC)",
                    p.sms
                );
                help = Some(format!(
                    "a grid of at most {resident} clusters of {n} (fewer tiles, or fewer CTAs per tile), or clusters of a size every GPC divides, runs in {:.0} wave(s)",
                    (tiles / every_sm).ceil()
                ));
            }
        }
        out.push(hint(
            &perf::TAIL_WAVE,
            a.tiles.as_ref().map_or(kernel.span, |t| t.span),
            message,
            help,
        ));
    }
    // 3. Element-wise work serialised with the MMAs inside the loop.
    for l in &est.loops {
        if l.mma_us > 0.0 && l.alu_us > 0.15 * l.iteration_us && l.alu_us * l.trips > 0.0 {
            let share = l.alu_us / l.iteration_us;
            let span = a
                .roles
                .iter()
                .flat_map(|r| r.loops.iter())
                .find(|w| kernel.loops[w.id].var_name == l.var && w.work.has_mma())
                .map_or(kernel.span, |w| w.stmt);
            out.push(hint(
                &perf::SERIALIZED_EPILOGUE,
                span,
                format!(
                    "element-wise work in loop `{}` of `{}` ({:.2} µs of each {:.2} µs iteration) runs between the MMAs: the tensor cores idle {:.0}% of the loop",
                    l.var, l.role, l.alu_us, l.iteration_us, share * 100.0
                ),
                Some("fewer operations per element (fold constants, fuse min/argmin), or more MMA work per element (a deeper contraction per tile)".into()),
            ));
        }
    }
    // 4. Epilogue after the loop, not overlapped.
    for r in &a.roles {
        if r.loops.is_empty() || !(r.loops.iter().any(|l| l.work.has_mma())) {
            continue;
        }
        let rates = Rates {
            p,
            active: est.grid.ctas.min(slots as i64).max(1) as f64,
            per_sm: est.grid.ctas_per_sm.max(1) as f64,
            miss: 0.0,
            writeback: 0.0,
        };
        let epi = rates.alu_us(&r.after);
        if tile_us > 0.0 && epi > 0.08 * tile_us {
            let direct = r.after.store_bytes > 0.0;
            out.push(hint(
                &perf::EXPOSED_EPILOGUE,
                r.loops.last().map_or(kernel.span, |l| l.stmt),
                format!(
                    "the epilogue after the loop of `{}` takes {:.1} µs of each {:.1} µs tile and does not overlap the next tile's MMAs",
                    r.name, epi, tile_us
                ),
                Some(if direct {
                    "stage the result in shared memory and store it with TMA (view.store, or view.T.store for a tile stored transposed; lm.fence_proxy_async; view.tma_store)".into()
                } else {
                    "a larger contraction per tile amortizes it".into()
                }),
            ));
        }
    }
    // 5. TMA rows that start off a 32-byte sector.
    misaligned_rows(kernel, &est.shape, &mut |info, span, message, help| {
        out.push(hint(info, span, message, help))
    });
    // 6. Memory bound, with the raster's reuse.
    if est.bound == Bound::Memory {
        let unique: f64 = by_tensor
            .keys()
            .map(|t| a.tensor_bytes.get(t).copied().unwrap_or(0.0))
            .sum();
        let help = match &a.tiles {
            Some(ti) if ti.group.is_none() && ti.counts.len() == 2 && est.dram_bytes > 1.3 * unique => {
                Some("a grouped raster (lm.tiles(..., group=8)) lets the CTAs in flight share operand tiles in L2".into())
            }
            _ => None,
        };
        out.push(hint(
            &perf::MEMORY_BOUND,
            a.tiles.as_ref().map_or(kernel.span, |t| t.span),
            format!(
                "memory-bound: {:.1} MB from DRAM ({:.2}x the operands' size) and {:.1} MB from L2 set the time",
                est.dram_bytes / 1e6,
                if unique > 0.0 { est.dram_bytes / unique } else { 0.0 },
                est.l2_bytes / 1e6
            ),
            help,
        ));
    }
    out
}

/// A tensor copied by TMA whose rows are not a multiple of 32 bytes apart: rows start inside
/// sectors (every other one, for bf16 rows a multiple of 16 bytes apart), and each such row's
/// box costs one more sector request from L2.
/// Measured on the H200 (bench/results/2026-12-03-gemm-align/): the 128-row TMA GEMMs took
/// 1.4-2.0x as long at K an odd multiple of 8 as at the multiple of 16 next to it. The loads'
/// time charges it (`tma_misaligned_rows_per_us`); the hint says which tensors and why.
fn misaligned_rows(
    kernel: &Kernel,
    shape: &BTreeMap<String, i64>,
    push: &mut impl FnMut(&'static CodeInfo, Span, String, Option<String>),
) {
    // Each tensor's first TMA load, and whether any of its loads is multicast.
    let mut first: BTreeMap<usize, (Span, bool)> = BTreeMap::new();
    kernel.walk(|id, s, _| {
        if let Stmt::Op(cake_ir::Op::TmaLoad { src, multicast, .. }) = s {
            let e = first
                .entry(src.index())
                .or_insert((kernel.stmts.span(id), false));
            e.1 |= *multicast > 1;
        }
    });
    for (t, (span, multicast)) in first {
        let id = cake_ir::ParamId::from_index(t);
        let Some(pitch) = analyze::row_pitch(kernel, id, shape).filter(|p| p.misaligned()) else {
            continue;
        };
        let name = &pitch.extent;
        let elems = 32 / pitch.elem_bytes.max(1);
        push(
            &perf::MISALIGNED_ROWS,
            span,
            format!(
                "the rows of `{}` are {name} × {} = {} bytes apart, not a multiple of 32: each row starts {} bytes further into a 32-byte sector, and a row's TMA box that starts inside one costs one more L2 request{}",
                kernel.params[id].name,
                pitch.elem_bytes,
                pitch.bytes,
                pitch.bytes % 32,
                if multicast { " (the multicast halves how many rows each CTA requests)" } else { "" }
            ),
            Some(format!(
                "a row length that is a multiple of {elems} elements (pad `{name}`, or route such shapes elsewhere), or a cluster that multicasts the tile so fewer rows leave L2 per CTA"
            )),
        );
    }
}

/// Cycles an L1 hit takes on the GPUs Cake targets (about 33 on Hopper in public
/// microbenchmarks): what a spilled register's reload from local memory costs.
const L1_HIT_CYCLES: f64 = 33.0;

/// Registers per thread role `r` needs beyond its budget (`Kernel::registers_over_budget`), with
/// a wgmma's working set when the role issues one on this target.
fn spilled_registers(k: &Kernel, target: &Target, r: cake_ir::RoleId) -> u64 {
    let issues_wgmma = target.mma == cake_target::MmaFamily::Wgmma
        && k.stmts.iter().any(|(_, s)| {
            matches!(s, Stmt::Op(cake_ir::Op::Mma { acc: cake_ir::Operand::Frag(f), .. }) if k.fragments[*f].role == r)
        });
    let launch = target
        .limits
        .launch_registers(k.block_threads() * k.ctas_per_sm());
    k.registers_over_budget(r, launch, issues_wgmma)
}

/// The terms of one iteration of loop `li` of role `ri` with the loops nested in it: its own
/// (`iter_of`: its work, and what of its limit the inner loops' time does not cover) plus its
/// inner loops' iterations per iteration of it.
fn loop_terms(
    iter_of: &BTreeMap<(usize, usize), (f64, Terms)>,
    ri: usize,
    loops: &[analyze::LoopWork],
    li: usize,
) -> Terms {
    let mut terms = iter_of[&(ri, li)].1.clone();
    for (ci, c) in loops.iter().enumerate() {
        if c.parent == Some(li) && loops[li].trips > 0.0 {
            terms.add(
                &loop_terms(iter_of, ri, loops, ci),
                c.trips / loops[li].trips,
            );
        }
    }
    terms
}

/// Whether loop `l` issues an MMA whose A operand is a register fragment: element-wise results
/// of the iteration feeding the tensor cores (attention's P·V), not only read from them.
fn feeds_mma(k: &Kernel, l: LoopId) -> bool {
    let mut found = false;
    k.walk(|_, s, ctx| {
        if let Stmt::Op(cake_ir::Op::Mma {
            a: cake_ir::Operand::Frag(_),
            ..
        }) = s
        {
            found |= ctx.loops.contains(&l);
        }
    });
    found
}

/// Whether loop `l` is pipelined and an MMA of its body releases the pipeline's stage one
/// iteration late (`cake_ir::sync::defers_release`: a wgmma whose accumulator the iteration
/// does not read, in a ring of two or more stages), holding one stage while it is in flight.
fn releases_a_stage_late(k: &Kernel, facts: &KernelFacts, l: LoopId) -> bool {
    if facts.target.mma != cake_target::MmaFamily::Wgmma {
        return false;
    }
    let LoopKind::Range {
        pipeline: Some(p), ..
    } = &k.loops[l].kind
    else {
        return false;
    };
    k.loop_body(l).is_some_and(|body| {
        body.iter().any(|&m| {
            matches!(&k.stmts[m], Stmt::Op(cake_ir::Op::Mma { release: Some(b), .. }) if k.barriers[*b].pipeline == Some(*p))
                && cake_ir::sync::defers_release(k, facts, body, m)
        })
    })
}

/// How many iterations early loop `l` issues the region that opens its body (`lm.ahead`).
fn ahead_steps(k: &Kernel, l: LoopId) -> u32 {
    k.loop_body(l)
        .and_then(|body| k.leading_ahead(body))
        .map_or(0, |(_, n, _)| n)
}

/// Whether loop `l` defers its last MMA into the next iteration (`defer=True`, in the shape the
/// lowering rotates).
fn defers_mma(k: &Kernel, l: LoopId) -> bool {
    let LoopKind::Range { pipeline, .. } = &k.loops[l].kind else {
        return false;
    };
    k.loop_body(l)
        .is_some_and(|body| matches!(cake_ir::sync::deferred_mma(k, body, *pipeline), Ok(Some(_))))
}
