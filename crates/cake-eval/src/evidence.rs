//! The evidence record (`cake.evidence/v0`, DESIGN.md §4; fields in docs/contracts.md): what a
//! `cake test` or `cake bench` run established about one candidate, content-addressed by the
//! candidate's hash. Worker answers are kept as the worker sent them (docs/worker.md), so the
//! record carries every metric the worker measured.

use crate::contract::{Shape, Specialization};
use crate::worker::Failure;
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::Value;

pub const SCHEMA: &str = "cake.evidence/v0";

#[derive(Serialize, Debug)]
pub struct Evidence {
    pub schema: &'static str,
    /// `test` or `bench`.
    pub command: String,
    /// UTC, RFC 3339.
    pub created: String,
    /// The candidate; with `[specialize]`, the build of the run's first specialization.
    pub candidate: CandidateRecord,
    /// With `[specialize]`: every build the run used, one per distinct value of the constants.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub specializations: Option<Vec<SpecializationRecord>>,
    pub contract: ContractRecord,
    /// The check's findings (JSON rendering) plus those drawn from the ptxas report.
    pub findings: Value,
    /// The cost model's estimates at the bench shapes (`cake.cost/v0` estimates, crates/cake-cost),
    /// or why there are none (`{"error": ...}`); `null` for prebuilt kernels.
    pub cost_estimate: Option<Value>,
    /// ptxas's per-kernel report (registers, spills, stack, shared memory).
    pub resources: Value,
    pub correctness: Correctness,
    /// Present for `bench` when correctness passed.
    pub timing: Option<Timing>,
    pub environment: Value,
    pub budget: Budget,
    /// `passed`, or `failed: <first reason>`.
    pub verdict: String,
}

#[derive(Serialize, Debug, Clone)]
pub struct CandidateRecord {
    /// SHA-256 over what defines the candidate: schedule text, target and Cake version (or the
    /// cubin and launch metadata of a prebuilt kernel).
    pub hash: String,
    /// `schedule` (built by Cake from source) or `prebuilt` (a given launch.json and cubin).
    pub origin: String,
    pub path: String,
    /// The schedule's text (absent for prebuilt kernels).
    pub source: Option<String>,
    pub entry: String,
    pub target: String,
    pub launch: Value,
}

/// One specialization of a schedule: the values its constants were set to, and its build.
#[derive(Serialize, Debug, Clone)]
pub struct SpecializationRecord {
    /// Constant → value (`{"H": 4096}`).
    pub values: Specialization,
    /// The name it was loaded under in the worker (`candidate[H=4096]`).
    pub callable: String,
    /// Like the candidate's hash, over the rewritten schedule.
    pub hash: String,
    pub launch: Value,
    /// This build's findings (the JSON rendering), as the record's top-level `findings`.
    pub findings: Value,
    /// ptxas's report for this build.
    pub resources: Value,
    /// Why it was not run: the schedule has errors, the interface differs, it did not compile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejected: Option<String>,
}

#[derive(Serialize, Debug, Clone)]
pub struct ContractRecord {
    pub path: String,
    pub name: String,
    pub hash: String,
}

#[derive(Serialize, Debug, Default)]
pub struct Correctness {
    pub passed: bool,
    /// The contract's shape set the checks ran on (`check` unless asked otherwise).
    pub shape_set: String,
    /// The run's base seed; each check's own seed is in its record.
    pub seed: u64,
    pub runs_per_check: u32,
    pub checks: Vec<CheckRecord>,
}

#[derive(Serialize, Debug)]
pub struct CheckRecord {
    pub shape: Shape,
    pub distribution: String,
    pub seed: u64,
    pub passed: bool,
    /// The worker's answer (metrics per output, inputs unmodified, determinism, reason).
    pub result: Option<Value>,
    /// Why the check has no answer (hang, crash, error).
    pub failure: Option<Failure>,
    /// Why the check was not run.
    pub skipped: Option<String>,
}

#[derive(Serialize, Debug)]
pub struct Timing {
    pub shape_set: String,
    pub warmup: u32,
    pub samples: u32,
    pub flush_l2: bool,
    pub cupti: bool,
    pub shapes: Vec<ShapeTiming>,
}

#[derive(Serialize, Debug)]
pub struct ShapeTiming {
    pub shape: Shape,
    pub floor: Option<Floor>,
    pub candidate: Timed,
    pub baselines: IndexMap<String, Timed>,
    /// Baseline median ÷ candidate median, per measure; absent where either is missing or the
    /// candidate's time is suspicious.
    pub speedup: IndexMap<String, Speedup>,
    /// Why a time is not believable (below the physical floor, no GPU work seen).
    pub suspicious: Vec<String>,
    /// Whether candidate and baselines were timed sample by sample in turn (false when the
    /// joint request failed and each was timed alone).
    pub interleaved: bool,
    /// Why the candidate's outputs after the timed calls did not match the oracle.
    pub outputs_wrong: Option<String>,
    /// The candidate's throughput and how close it comes to the floor, from its events median.
    pub candidate_rate: Option<Rate>,
    /// The cost model's prediction at this shape, and the measurement against it.
    pub predicted: Option<Predicted>,
    /// Writeback a callable (`candidate` or a baseline's name) left for the flush after it,
    /// beyond what the others timed with it left (ms): added to its times in `speedup`
    /// (`deferred_writeback`). Only callables charged appear.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub deferred_ms: IndexMap<String, f64>,
    /// With `cake bench --timeline`: the summary of one launch of the candidate's timeline
    /// build (`cake.timeline.summarize`, docs/timeline.md), or `{"error": ...}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Value>,
}

/// A flush after a call that takes longer than the same flush after the other callables timed
/// with it is doing work that call left behind in L2, past the end of its own span: an
/// `evict_last` output kept in L2 looks 1.6–5.5 % faster flushed than back to back, and the span
/// between samples after it was 5.0–5.6 µs longer (bench/results/2026-12-05-mcast/, calls 2–3).
/// Each callable is charged its excess over the shortest one, when the excess passes
/// `DEFERRED_NOISE_MS`; medians of the CUPTI spans between samples (docs/worker.md). Absent
/// flush times charge nothing.
pub fn deferred_writeback(flush_after_ms: &[(String, Option<f64>)]) -> IndexMap<String, f64> {
    let least = flush_after_ms
        .iter()
        .filter_map(|(_, ms)| *ms)
        .fold(f64::INFINITY, f64::min);
    flush_after_ms
        .iter()
        .filter_map(|(name, ms)| {
            let excess = (*ms)? - least;
            (excess > DEFERRED_NOISE_MS).then(|| (name.clone(), excess))
        })
        .collect()
}

/// The smallest flush excess charged (ms): above the differences between the flushes after
/// kernels that keep nothing in L2 (none of ~400 tinygemm timings, nor RMSNorm against torch,
/// passed it: bench/results/2026-12-05-mcast/ call 3).
pub const DEFERRED_NOISE_MS: f64 = 0.001;

/// The cost model's prediction for one bench shape (crates/cake-cost, docs/cost-model.md).
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Predicted {
    pub time_ms: f64,
    /// The model's speed-of-light time from the schedule's own FLOPs and bytes at the datasheet
    /// ceilings; a median below it (less the floor allowance) is suspicious.
    pub speed_of_light_ms: f64,
    pub bound: String,
    /// Events median ÷ predicted time.
    pub measured_over_predicted: Option<f64>,
    /// The model's span on the GPU (the launch left out), what the CUPTI median measures.
    pub span_ms: f64,
    /// What that span is bound by (`bound` includes the launch, which a short kernel's events
    /// time is mostly made of).
    pub span_bound: String,
    /// CUPTI median ÷ predicted span.
    pub cupti_over_predicted_span: Option<f64>,
}

/// Throughput of one timed callable at one shape.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Rate {
    /// TFLOP/s, when the contract gives `flops`.
    pub tflops: Option<f64>,
    /// TB/s of the contract's `bytes`, when given.
    pub tbps: Option<f64>,
    /// Floor ÷ median: 1.0 is the physical limit.
    pub of_floor: Option<f64>,
}

/// The physical floor: no correct kernel can take less time.
#[derive(Serialize, Debug, Clone)]
pub struct Floor {
    pub flops: Option<f64>,
    pub bytes: Option<f64>,
    pub peak_tflops: Option<f64>,
    pub bandwidth_gbps: Option<f64>,
    pub ms: f64,
}

#[derive(Serialize, Debug, Default)]
pub struct Timed {
    /// The worker's answer: `events_ms` and `cupti_ms` statistics, kernels per call.
    pub result: Option<Value>,
    pub failure: Option<Failure>,
}

impl Timed {
    /// Median of one measure (`events_ms`, `cupti_ms` or `flush_after_ms`), when measured.
    pub fn median(&self, measure: &str) -> Option<f64> {
        self.result.as_ref()?.get(measure)?.get("median")?.as_f64()
    }
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Speedup {
    pub events: Option<f64>,
    pub cupti: Option<f64>,
}

#[derive(Serialize, Debug, Default)]
pub struct Budget {
    pub wall_s: f64,
    pub worker_restarts: u32,
    pub requests: u32,
}

/// `YYYY-MM-DDTHH:MM:SSZ` for a Unix time (proleptic Gregorian, UTC).
pub fn rfc3339(unix_s: u64) -> String {
    let (days, rem) = (unix_s / 86_400, unix_s % 86_400);
    // Howard Hinnant's days-to-civil algorithm.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc3339_dates() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::rfc3339(1_795_988_031), "2026-11-29T21:33:51Z");
    }

    #[test]
    fn a_callable_is_charged_its_flush_beyond_the_shortest_one() {
        use super::{deferred_writeback, DEFERRED_NOISE_MS};
        let f = |v: &[(&str, Option<f64>)]| {
            deferred_writeback(
                &v.iter()
                    .map(|(n, ms)| (n.to_string(), *ms))
                    .collect::<Vec<_>>(),
            )
        };
        let charged = f(&[
            ("candidate", Some(0.0700)),
            ("torch", Some(0.0660)),
            ("copy", Some(0.0662)),
        ]);
        assert_eq!(charged.len(), 1, "the copy's excess is noise: {charged:?}");
        assert!((charged["candidate"] - 0.0040).abs() < 1e-12);
        // The baseline deferring more is charged alike.
        let charged = f(&[("candidate", Some(0.0660)), ("torch", Some(0.0700))]);
        assert_eq!(charged.keys().collect::<Vec<_>>(), ["torch"]);
        // No flush measured (no CUPTI, or no flush): nothing to charge.
        assert!(f(&[("candidate", None), ("torch", Some(0.07))]).is_empty());
        assert!(f(&[
            ("candidate", Some(0.07 + DEFERRED_NOISE_MS / 2.0)),
            ("torch", Some(0.07))
        ])
        .is_empty());
    }
}
