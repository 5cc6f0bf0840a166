//! The seam to the cost model: an [`Estimator`] predicts a kernel's time at a shape and may name
//! its bottleneck. The search uses it to rank candidates before spending GPU time on them and to
//! place them in niches; `None` (no estimator) means no cost ranking. [`CostModel`] plugs the
//! cost model (cake-cost) in with the target's built-in calibration.

use cake_ir::Kernel;
use cake_target::Target;
use std::collections::BTreeMap;

pub trait Estimator {
    /// Predicted time of one call, in microseconds; `None` when the model cannot say.
    fn predict_us(
        &self,
        kernel: &Kernel,
        target: &'static Target,
        shape: &BTreeMap<String, i64>,
    ) -> Option<f64>;

    /// The bottleneck class (`memory`, `compute`, `latency`, ...), when the model names one.
    fn bottleneck(
        &self,
        _kernel: &Kernel,
        _target: &'static Target,
        _shape: &BTreeMap<String, i64>,
    ) -> Option<String> {
        None
    }
}

/// The cost model with the calibration built into Cake for each target: the table measured on
/// the GPU the run is for where there is one, else the target's default. A target without one
/// gets no prediction (the run then evaluates candidates unranked), never another target's.
#[derive(Default)]
pub struct CostModel {
    /// The GPU the run ranks for (a card such as `H100`, or a device's name); `None`: the
    /// targets' default tables.
    gpu: Option<String>,
    tables: std::cell::RefCell<BTreeMap<&'static str, Option<cake_cost::Calibration>>>,
}

impl CostModel {
    /// The model with the tables measured on `gpu` where a target has one.
    pub fn for_gpu(gpu: Option<String>) -> CostModel {
        CostModel {
            gpu,
            ..CostModel::default()
        }
    }

    fn estimate(
        &self,
        kernel: &Kernel,
        target: &'static Target,
        shape: &BTreeMap<String, i64>,
    ) -> Option<cake_cost::Estimate> {
        let mut tables = self.tables.borrow_mut();
        let table = tables.entry(target.name).or_insert_with(|| {
            cake_cost::Calibration::builtin_for_device(target, self.gpu.as_deref()).ok()
        });
        cake_cost::estimate(kernel, target, shape, table.as_ref()?).ok()
    }
}

impl Estimator for CostModel {
    fn predict_us(
        &self,
        kernel: &Kernel,
        target: &'static Target,
        shape: &BTreeMap<String, i64>,
    ) -> Option<f64> {
        self.estimate(kernel, target, shape).map(|e| e.time_us)
    }

    fn bottleneck(
        &self,
        kernel: &Kernel,
        target: &'static Target,
        shape: &BTreeMap<String, i64>,
    ) -> Option<String> {
        let e = self.estimate(kernel, target, shape)?;
        // The serialised name (`tensor_cores`, `memory`, ...): stable niche keys.
        serde_json::to_value(e.bound)
            .ok()?
            .as_str()
            .map(str::to_string)
    }
}

/// A prediction over a shape set: the sum of the per-shape times (so every shape counts) and the
/// bottleneck at the first shape.
pub fn over_shapes(
    e: &dyn Estimator,
    kernel: &Kernel,
    target: &'static Target,
    shapes: &[BTreeMap<String, i64>],
) -> (Option<f64>, Option<String>) {
    let mut total = 0.0;
    for s in shapes {
        match e.predict_us(kernel, target, s) {
            Some(t) if t.is_finite() && t > 0.0 => total += t,
            _ => return (None, None),
        }
    }
    let bottleneck = shapes.first().and_then(|s| e.bottleneck(kernel, target, s));
    ((!shapes.is_empty()).then_some(total), bottleneck)
}

/// Schedule structure used for niches: the deepest pipeline and the staged views' tile shapes.
pub fn structure(kernel: &Kernel) -> String {
    let stages = kernel
        .pipelines
        .iter()
        .map(|(_, p)| p.stages)
        .max()
        .unwrap_or(1);
    let mut tiles: Vec<String> = kernel
        .views
        .iter()
        .map(|(_, v)| {
            v.shape
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join("x")
        })
        .collect();
    if tiles.is_empty() {
        tiles = kernel
            .fragments
            .iter()
            .map(|(_, f)| {
                f.shape
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join("x")
            })
            .collect();
    }
    format!("stages={stages} tiles={}", tiles.join(","))
}
