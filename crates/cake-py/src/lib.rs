//! `cake._native`: the compiled half of the `cake` Python package (python/cake). Static commands
//! (`check`, `lower`) need no GPU and no CUDA toolchain; `build` needs the toolchain; `Kernel`
//! launches through the CUDA driver (loaded at run time by cake-runtime).
//!
//! Errors are the classes of `cake.errors` (defined in Python, so `import cake` has them even
//! without this module): `CompileError` (findings in the schedule, or generated CUDA that did
//! not compile), `LaunchError` (arguments or launch metadata rejected before launch),
//! `CudaError` (a driver call failed; `.result` is the `CUresult` name).

use std::path::PathBuf;

use cake_runtime::{Device, Error, ScalarValue, TensorDesc};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

pyo3::import_exception!(cake.errors, CompileError);
pyo3::import_exception!(cake.errors, LaunchError);
pyo3::import_exception!(cake.errors, CudaError);

/// Any serialisable value as Python objects, through the json module.
fn to_py<'py>(py: Python<'py>, v: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(v).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.import("json")?.call_method1("loads", (text,))
}

fn runtime_err(e: Error) -> PyErr {
    match e {
        Error::Launch(m) => LaunchError::new_err(m),
        Error::Cuda(c) => CudaError::new_err((c.to_string(), c.name.clone(), c.code)),
    }
}

fn read(path: &str) -> PyResult<Vec<u8>> {
    // A regular file of at most 4 MiB (`cake_driver::read_schedule`): never a FIFO that blocks.
    cake_driver::read_schedule(std::path::Path::new(path)).map_err(|e| {
        let err = PyErr::from(std::io::Error::new(
            e.kind(),
            format!("cannot read {path}: {e}"),
        ));
        if matches!(
            e.kind(),
            std::io::ErrorKind::NotFound
                | std::io::ErrorKind::PermissionDenied
                | std::io::ErrorKind::IsADirectory
        ) {
            err
        } else {
            PyOSError::new_err(format!("cannot read {path}: {e}"))
        }
    })
}

/// The schedule's bytes: `source` when given (then `path` only names it in findings), else the
/// file at `path`. Both obey the same size cap.
fn schedule(path: &str, source: Option<&str>) -> PyResult<Vec<u8>> {
    let Some(text) = source else {
        return read(path);
    };
    if text.len() as u64 > cake_driver::MAX_SCHEDULE_BYTES {
        return Err(PyValueError::new_err(format!(
            "{path}: the source is {} bytes; schedules are limited to {} bytes",
            text.len(),
            cake_driver::MAX_SCHEDULE_BYTES
        )));
    }
    Ok(text.as_bytes().to_vec())
}

fn check_target(target: &str) -> PyResult<()> {
    cake_target::lookup(target).map(|_| ()).map_err(|e| {
        let mut msg = e.to_string();
        if let Some(s) = e.suggestion() {
            msg.push_str(&format!(
                " (did you mean `{s}`? Cake compiles for exact targets only)"
            ));
        }
        PyValueError::new_err(msg)
    })
}

/// A `cake.findings/v1` document with an `errors` count at the top.
fn findings_doc<'py>(
    py: Python<'py>,
    file: &cake_diag::SourceFile,
    findings: &[cake_diag::Finding],
) -> PyResult<Bound<'py, PyAny>> {
    let doc = to_py(py, &cake_diag::render::json(file, findings))?;
    doc.set_item("errors", findings.iter().filter(|f| f.is_error()).count())?;
    Ok(doc)
}

fn build_err(py: Python<'_>, e: cake_driver::BuildError) -> PyErr {
    match e {
        cake_driver::BuildError::Findings(c) => {
            let text = cake_diag::render::human(&c.file, &c.findings, false);
            match findings_doc(py, &c.file, &c.findings) {
                Ok(doc) => CompileError::new_err((text, doc.unbind())),
                Err(e) => e,
            }
        }
        cake_driver::BuildError::Target(m) => PyValueError::new_err(m),
        other => CompileError::new_err((other.to_string(), py.None())),
    }
}

/// Check a schedule file: every finding, as the `cake.findings/v1` JSON document plus an
/// `errors` count. `target`: one exact target, or each target the schedule declares. `source`:
/// the schedule's text, checked instead of reading `path` (which then only names it).
#[pyfunction]
#[pyo3(signature = (path, target=None, source=None))]
fn check<'py>(
    py: Python<'py>,
    path: &str,
    target: Option<&str>,
    source: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = schedule(path, source)?;
    if let Some(t) = target {
        check_target(t)?;
    }
    let checked = py.detach(|| cake_driver::check(path, &bytes, target));
    let doc = findings_doc(py, &checked.file, &checked.findings)?;
    let kernels: Vec<&str> = checked.kernels.iter().map(|k| k.name.as_str()).collect();
    doc.set_item("kernels", kernels)?;
    let unbuildable: std::collections::BTreeMap<&str, usize> =
        cake_driver::unbuildable_targets(&checked.findings)
            .into_iter()
            .collect();
    doc.set_item("unbuildable", unbuildable)?;
    Ok(doc)
}

/// Check and lower a schedule for one target: per kernel its CUDA source and launch metadata.
/// Raises CompileError (with the human-rendered findings) when the schedule has errors.
#[pyfunction]
#[pyo3(signature = (path, target, source=None))]
fn lower<'py>(
    py: Python<'py>,
    path: &str,
    target: &str,
    source: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = schedule(path, source)?;
    check_target(target)?;
    let (checked, lowered) = py
        .detach(|| cake_driver::lower(path, &bytes, target))
        .map_err(|e| build_err(py, e))?;
    let kernels: Vec<serde_json::Value> = lowered
        .iter()
        .map(|l| {
            serde_json::json!({"kernel": l.launch.kernel, "symbol": l.symbol,
                "target": l.launch.target, "cuda": l.cuda, "launch": l.launch})
        })
        .collect();
    let doc = to_py(
        py,
        &serde_json::json!({"schema": "cake.lower/v0", "kernels": kernels}),
    )?;
    doc.set_item(
        "findings",
        findings_doc(py, &checked.file, &checked.findings)?,
    )?;
    Ok(doc)
}

/// Check, lower and compile every kernel into `out_dir` (`<kernel>.{cu,cubin,launch.json,
/// resources.json}`; cubins come from the build cache when the same CUDA was compiled before).
/// The findings may include errors drawn from the ptxas report (`errors` > 0). `embed_ptx`:
/// write `<kernel>.fatbin` with the target's PTX too (sm_80, sm_89), so a later GPU can run it.
/// `timeline`: compile the timeline stamps in (docs/timeline.md).
#[pyfunction]
#[pyo3(signature = (path, target, out_dir, embed_ptx=false, source=None, timeline=false))]
fn build<'py>(
    py: Python<'py>,
    path: &str,
    target: &str,
    out_dir: PathBuf,
    embed_ptx: bool,
    source: Option<&str>,
    timeline: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let bytes = schedule(path, source)?;
    check_target(target)?;
    let opts = cake_driver::BuildOptions {
        embed_ptx,
        timeline,
    };
    let built = py
        .detach(|| cake_driver::build_opts(path, &bytes, target, &out_dir, &opts))
        .map_err(|e| build_err(py, e))?;
    let kernels: Vec<serde_json::Value> = built
        .kernels
        .iter()
        .map(|k| {
            serde_json::json!({"kernel": k.name, "cu": k.cu, "cubin": k.cubin,
                "launch": k.launch_json, "resources": k.resources, "cached": k.cached})
        })
        .collect();
    let doc = to_py(
        py,
        &serde_json::json!({"schema": "cake.build/v0", "target": target, "kernels": kernels}),
    )?;
    let findings = findings_doc(py, &built.checked.file, &built.findings)?;
    doc.set_item("errors", findings.get_item("errors")?)?;
    doc.set_item("findings", findings)?;
    let human = cake_diag::render::human(&built.checked.file, &built.findings, false);
    doc.set_item("human", human)?;
    Ok(doc)
}

/// The schedule's knobs, as `cake tune` finds them: its module-level integer constants that are
/// not tensor extents, `[{"name", "value", "line"}]` in source order.
#[pyfunction]
fn knobs<'py>(py: Python<'py>, source: &str) -> PyResult<Bound<'py, PyAny>> {
    let found: Vec<serde_json::Value> = cake_mutate::knobs::knobs(source)
        .iter()
        .map(|k| {
            let line = source[..k.start].bytes().filter(|&b| b == b'\n').count() + 1;
            serde_json::json!({"name": k.name, "value": k.value, "line": line})
        })
        .collect();
    to_py(py, &found)
}

/// The values `cake tune` tries next to a knob's `value`: ±1 for small counts, halving, doubling
/// and the steps between for sizes.
#[pyfunction]
fn knob_neighbours(value: i64) -> Vec<i64> {
    cake_mutate::knobs::neighbours(value)
}

/// `source` with knobs set to new values (`{"BM": 64}`), every other byte unchanged. An unknown
/// knob name is a ValueError naming the knobs there are.
#[pyfunction]
fn with_knobs(source: &str, values: std::collections::BTreeMap<String, i64>) -> PyResult<String> {
    set_constants(
        source,
        &values,
        cake_mutate::knobs::knobs(source),
        "knob",
        "knobs",
    )
}

/// `source` with module-level integer constants set, a tensor type's fixed extents included
/// (`H = 4096` in `lm.tensor[lm.bf16, "R", H]`): what a contract's `[specialize]` does per
/// shape. ValueError for a name that is not such a constant.
#[pyfunction]
fn specialize(source: &str, values: std::collections::BTreeMap<String, i64>) -> PyResult<String> {
    let found = cake_mutate::knobs::constants(source);
    set_constants(
        source,
        &values,
        found,
        "module-level integer constant",
        "constants",
    )
}

/// `source` with each of `values` set among the constants `found`; a name not among them is a
/// ValueError naming `what` it had to be and listing them.
fn set_constants(
    source: &str,
    values: &std::collections::BTreeMap<String, i64>,
    found: Vec<cake_mutate::knobs::Knob>,
    what: &str,
    plural: &str,
) -> PyResult<String> {
    cake_mutate::knobs::set(source, &found, values.iter().map(|(k, v)| (k.as_str(), *v))).map_err(
        |m| {
            PyValueError::new_err(format!(
                "no {what} `{}` in the schedule ({plural}: {})",
                m.name,
                m.available_text()
            ))
        },
    )
}

/// A family file (docs/dispatch.md) as JSON: its routes (schedule, entry, guard), its fallback
/// (`/abs/file.py:fn`) and what its contract says a call looks like (dimensions with their
/// domains, tensors, scalars, `[specialize]`). ValueError listing every error of a bad file.
#[pyfunction]
fn family(path: &str) -> PyResult<String> {
    let f = cake_eval::family::Family::load(std::path::Path::new(path)).map_err(|errs| {
        let lines: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        PyValueError::new_err(lines.join("\n"))
    })?;
    let c = &f.contract;
    let doc = serde_json::json!({
        "name": f.name,
        "contract": c.path,
        "targets": c.targets,
        "dims": c.dims.iter().map(|d| serde_json::json!({
            "name": d.name, "min": d.min, "max": d.max, "multiple_of": d.multiple_of,
            "values": d.values,
        })).collect::<Vec<_>>(),
        "tensors": c.tensors,
        "scalars": c.scalars,
        "specialize": c.specialize,
        "limits": c.limits,
        "multiples": c.multiples,
        "routes": f.routes,
        "fallback": f.fallback,
    });
    Ok(doc.to_string())
}

/// Cake's tensor element types: canonical name (as launch.json writes it) -> the torch dtype
/// attribute that stores it (`"bf16": "bfloat16"`), so Python allocates outputs without a
/// second copy of the table.
#[pyfunction]
fn dtypes() -> std::collections::BTreeMap<&'static str, &'static str> {
    cake_runtime::dtype::DTYPES
        .iter()
        .map(|d| (d.name, d.storage))
        .collect()
}

/// The target database (what `cake targets --format json` prints).
#[pyfunction]
fn targets(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    to_py(py, &cake_target::to_json())
}

/// `(name, dtype, shape, strides, data_ptr, device)` tuples: `device` is a CUDA ordinal, or a
/// string naming a non-CUDA device, or None.
fn tensors_arg(tensors: &Bound<'_, PyAny>) -> PyResult<Vec<TensorDesc>> {
    let mut out = Vec::new();
    for item in tensors.try_iter()? {
        let item = item?;
        let (name, dtype, shape, strides, data_ptr, device): (
            String,
            String,
            Vec<i64>,
            Vec<i64>,
            u64,
            Bound<'_, PyAny>,
        ) = item.extract().map_err(|e| {
            LaunchError::new_err(format!(
                "expected (name, dtype, shape, strides, data_ptr, device) tuples: {e}"
            ))
        })?;
        let device = if device.is_none() {
            Device::Other("an unknown device".into())
        } else if let Ok(i) = device.extract::<i32>() {
            Device::Cuda(i)
        } else {
            Device::Other(device.str()?.to_string())
        };
        out.push(TensorDesc {
            name,
            dtype,
            shape,
            strides,
            data_ptr,
            device,
        });
    }
    Ok(out)
}

fn scalar_value(
    spec: &cake_runtime::Spec,
    name: &str,
    v: &Bound<'_, PyAny>,
) -> PyResult<ScalarValue> {
    Ok(if v.is_instance_of::<PyBool>() {
        ScalarValue::Bool(v.extract()?)
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i128>() {
            Ok(i) => ScalarValue::Int(i),
            Err(_) => {
                let dtype = spec
                    .scalar(name)
                    .map_or("any parameter type", |s| s.dtype.name);
                return Err(LaunchError::new_err(format!(
                    "scalar `{name}`: {} out of range for {dtype}",
                    v.str()?
                )));
            }
        }
    } else if v.is_instance_of::<PyFloat>() {
        ScalarValue::Float(v.extract()?)
    } else {
        ScalarValue::Other(v.get_type().name()?.to_string())
    })
}

fn scalars_arg(
    spec: &cake_runtime::Spec,
    scalars: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<(String, ScalarValue)>> {
    let mut out = Vec::new();
    if let Some(d) = scalars {
        for (k, v) in d.iter() {
            let name: String = k
                .cast::<PyString>()
                .map_err(|_| LaunchError::new_err("scalar names must be strings"))?
                .to_string();
            let value = scalar_value(spec, &name, &v)?;
            out.push((name, value));
        }
    }
    Ok(out)
}

/// A kernel built by `cake build`. `load` reads its launch.json and cubin (no GPU needed);
/// the cubin is loaded into a device's primary context at the first launch there.
#[pyclass(module = "cake._native", name = "Kernel", frozen)]
struct PyKernel {
    inner: cake_runtime::Kernel,
}

#[pyclass(module = "cake._native", name = "Prepared", frozen)]
struct PyPrepared {
    inner: cake_runtime::Prepared,
}

#[pymethods]
impl PyPrepared {
    /// Launch again exactly as prepared (the GIL is released during the call).
    fn launch(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.inner.launch()).map_err(runtime_err)
    }

    #[getter]
    fn grid(&self) -> (u32, u32, u32) {
        let g = self.inner.grid();
        (g[0], g[1], g[2])
    }
}

/// One call's arguments as the runtime takes them.
type CallArgs = (Vec<TensorDesc>, Vec<(String, ScalarValue)>);

impl PyKernel {
    /// The tensors and scalars of one call, converted (and the scalars checked) for the runtime.
    fn call_args(
        &self,
        tensors: &Bound<'_, PyAny>,
        scalars: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<CallArgs> {
        Ok((
            tensors_arg(tensors)?,
            scalars_arg(self.inner.spec(), scalars)?,
        ))
    }
}

#[pymethods]
impl PyKernel {
    /// Load `DIR/<kernel>.launch.json` (or a directory holding exactly one) and its cubin.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let inner = py
            .detach(|| cake_runtime::Kernel::load(&path))
            .map_err(runtime_err)?;
        Ok(PyKernel { inner })
    }

    /// The launch metadata (launch.json) as a dict.
    #[getter]
    fn meta<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.inner.spec().meta)
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.spec().kernel().to_string()
    }

    #[getter]
    fn path(&self) -> Option<PathBuf> {
        self.inner.path().map(PathBuf::from)
    }

    /// Parameter names in the positional calling order: tensors, then scalars.
    #[getter]
    fn param_names(&self) -> Vec<String> {
        self.inner
            .spec()
            .param_names()
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[getter]
    fn tensor_names(&self) -> Vec<String> {
        self.inner
            .spec()
            .tensors
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    #[getter]
    fn scalar_names(&self) -> Vec<String> {
        self.inner
            .spec()
            .scalars
            .iter()
            .map(|s| s.name.clone())
            .collect()
    }

    /// Check and bind without launching: `{"device", "dims", "grid", "empty", "tensormaps"}`.
    /// `num_sms`: the persistent grid's cap (asked of the driver when None).
    #[pyo3(signature = (tensors, scalars=None, num_sms=None, device=None))]
    fn bind<'py>(
        &self,
        py: Python<'py>,
        tensors: &Bound<'py, PyAny>,
        scalars: Option<&Bound<'py, PyDict>>,
        num_sms: Option<u32>,
        device: Option<i32>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (t, s) = self.call_args(tensors, scalars)?;
        let b = py
            .detach(|| self.inner.bind(&t, &s, num_sms, device))
            .map_err(runtime_err)?;
        let tensormaps: Vec<&cake_runtime::tensormap::TensorMapFields> = b
            .plan
            .iter()
            .flatten()
            .filter_map(|p| match p {
                cake_runtime::pack::Planned::TensorMap(f) => Some(f),
                _ => None,
            })
            .collect();
        let dims: serde_json::Map<String, serde_json::Value> = b
            .bound
            .dims
            .iter()
            .map(|(k, v)| (k.clone(), (*v).into()))
            .collect();
        to_py(
            py,
            &serde_json::json!({"device": b.bound.device, "dims": dims,
                "grid": b.bound.grid, "empty": b.bound.is_empty(), "tensormaps": tensormaps}),
        )
    }

    /// Check, bind, load (first time on the device), encode the tensor maps: everything but the
    /// launch. `stream`: a CUstream handle as an int (`torch.cuda.Stream.cuda_stream`).
    #[pyo3(signature = (tensors, scalars, stream, device=None))]
    fn prepare(
        &self,
        py: Python<'_>,
        tensors: &Bound<'_, PyAny>,
        scalars: Option<&Bound<'_, PyDict>>,
        stream: u64,
        device: Option<i32>,
    ) -> PyResult<PyPrepared> {
        let (t, s) = self.call_args(tensors, scalars)?;
        let inner = py
            .detach(|| self.inner.prepare(&t, &s, stream, device))
            .map_err(runtime_err)?;
        Ok(PyPrepared { inner })
    }

    /// Check, bind and launch asynchronously on `stream` in the primary context of the tensors'
    /// device; the GIL is released from binding to the launch. Returns the grid.
    #[pyo3(signature = (tensors, scalars, stream, device=None))]
    fn launch(
        &self,
        py: Python<'_>,
        tensors: &Bound<'_, PyAny>,
        scalars: Option<&Bound<'_, PyDict>>,
        stream: u64,
        device: Option<i32>,
    ) -> PyResult<(u32, u32, u32)> {
        let (t, s) = self.call_args(tensors, scalars)?;
        let g = py
            .detach(|| self.inner.launch(&t, &s, stream, device))
            .map_err(runtime_err)?;
        Ok((g[0], g[1], g[2]))
    }

    /// Registers, static shared memory, local memory and limits of the loaded function.
    #[pyo3(signature = (device=0))]
    fn func_attributes<'py>(&self, py: Python<'py>, device: i32) -> PyResult<Bound<'py, PyDict>> {
        let attrs = py
            .detach(|| self.inner.function_attributes(device))
            .map_err(runtime_err)?;
        let d = PyDict::new(py);
        for (k, v) in attrs {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// How the kernel's CTAs fit the device: `sm_count`, `ctas_per_sm`, `cluster` (CTAs per
    /// cluster) and, when clustered, `clusters_at_once`; `resident_ctas` is what runs at once.
    #[pyo3(signature = (device=0))]
    fn residency<'py>(&self, py: Python<'py>, device: i32) -> PyResult<Bound<'py, PyDict>> {
        let r = py
            .detach(|| self.inner.residency(device))
            .map_err(runtime_err)?;
        let d = PyDict::new(py);
        d.set_item("sm_count", r.sm_count)?;
        d.set_item("ctas_per_sm", r.ctas_per_sm)?;
        d.set_item("cluster", r.cluster)?;
        d.set_item("clusters_at_once", r.clusters_at_once)?;
        d.set_item("resident_ctas", r.resident_ctas())?;
        Ok(d)
    }

    /// The (device, stream) pairs that have a workspace of this kernel (launch.json `state`):
    /// one per stream it was launched on outside a CUDA graph capture.
    fn workspace_streams(&self) -> Vec<(i32, u64)> {
        self.inner
            .workspaces()
            .map(|w| w.streams())
            .unwrap_or_default()
    }

    fn __repr__(&self) -> String {
        let path = self
            .inner
            .path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        format!(
            "<cake._native.Kernel {} ({}) from {path}>",
            self.inner.spec().kernel(),
            self.inner.spec().param_names().join(", ")
        )
    }
}

/// The SM count and compute capability of a device, through the driver.
#[pyfunction]
#[pyo3(signature = (device=0))]
fn device_info<'py>(py: Python<'py>, device: i32) -> PyResult<Bound<'py, PyDict>> {
    let (sms, cc) = py
        .detach(|| {
            let d = cake_runtime::driver::driver()?;
            Ok::<_, Error>((d.sm_count(device)?, d.compute_capability(device)?))
        })
        .map_err(runtime_err)?;
    let out = PyDict::new(py);
    out.set_item("sm_count", sms)?;
    out.set_item("compute_capability", cc)?;
    Ok(out)
}

/// Return L2's persisting lines (an `evict_last` policy's) to normal priority on a device, so
/// that the next write of the whole L2 evicts them (`cake.harness.timing.flush_l2`).
#[pyfunction]
#[pyo3(signature = (device=0))]
fn reset_persisting_l2(py: Python<'_>, device: i32) -> PyResult<()> {
    py.detach(|| cake_runtime::driver::driver()?.reset_persisting_l2(device))
        .map_err(runtime_err)
}

#[pymodule]
#[pyo3(name = "_native")]
fn cake_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(lower, m)?)?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(targets, m)?)?;
    m.add_function(wrap_pyfunction!(knobs, m)?)?;
    m.add_function(wrap_pyfunction!(dtypes, m)?)?;
    m.add_function(wrap_pyfunction!(knob_neighbours, m)?)?;
    m.add_function(wrap_pyfunction!(with_knobs, m)?)?;
    m.add_function(wrap_pyfunction!(specialize, m)?)?;
    m.add_function(wrap_pyfunction!(family, m)?)?;
    m.add_function(wrap_pyfunction!(device_info, m)?)?;
    m.add_function(wrap_pyfunction!(reset_persisting_l2, m)?)?;
    m.add_class::<PyKernel>()?;
    m.add_class::<PyPrepared>()?;
    Ok(())
}
