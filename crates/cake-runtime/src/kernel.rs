//! A kernel built by `cake build`: its validated launch metadata and cubin, loaded into each
//! device's primary context at first launch there.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::bind::{self, Bound, ScalarValue, TensorDesc};
use crate::driver::{self, Config, Function};
use crate::error::{launch, Error, Result};
use crate::pack::{self, Packed, ParamSlot, Planned};
use crate::spec::{ArgKind, GridKind, Spec};
use crate::tensormap::TensorMapFields;
use cake_lower::StateMeta;

/// Encoded tensor maps a kernel keeps: enough for the distinct tensors of a training or
/// benchmark loop; the cache is emptied when it fills.
const TENSORMAP_CACHE: usize = 256;

/// Streams per device a kernel with a workspace (launch.json `state`) keeps one for: a bound,
/// so a program that makes a fresh stream per call gets a clear error instead of a workspace per
/// call held for the kernel's life.
pub const STATE_STREAMS: usize = 64;

/// The workspaces of a kernel with state (launch.json `state`, docs/launch.md): one per device
/// and stream it was launched on outside a graph capture. Each is zeroed once, on its stream,
/// when it is allocated, and every launch leaves its `zeroed` prefix zero again, so launches on
/// one stream (which run one after another) reuse it with no memset, and launches on two streams
/// (which may overlap) never share one. Freed when the kernel and every launch prepared from it
/// are gone.
pub struct Workspaces {
    kernel: String,
    state: StateMeta,
    buffers: Mutex<HashMap<(i32, u64), u64>>,
}

impl Workspaces {
    fn new(kernel: &str, state: StateMeta) -> Workspaces {
        Workspaces {
            kernel: kernel.to_string(),
            state,
            buffers: Mutex::new(HashMap::new()),
        }
    }

    /// The workspace of launches on `stream` of `device` (whose context is current), allocated
    /// and zeroed on the stream the first time.
    pub fn of_stream(&self, device: i32, stream: u64) -> Result<u64> {
        let mut map = self.buffers.lock().expect("lock");
        if let Some(p) = map.get(&(device, stream)) {
            return Ok(*p);
        }
        if map.keys().filter(|(d, _)| *d == device).count() >= STATE_STREAMS {
            return Err(launch(format!(
                "kernel `{}` has a workspace per stream (a dynamic tile loop or stream-K), and \
                 device {device} already has {STATE_STREAMS}: launch it on a few long-lived \
                 streams, not a new one per call",
                self.kernel
            )));
        }
        let ptr = driver::mem_alloc(self.state.bytes as usize)?;
        if let Err(e) = driver::memset_zero(ptr, self.state.zeroed as usize, stream) {
            let _ = driver::mem_free(ptr);
            return Err(e);
        }
        map.insert((device, stream), ptr);
        Ok(ptr)
    }

    /// Devices and streams with a workspace, for tests and diagnostics.
    pub fn streams(&self) -> Vec<(i32, u64)> {
        let mut v: Vec<(i32, u64)> = self.buffers.lock().expect("lock").keys().copied().collect();
        v.sort();
        v
    }
}

impl Drop for Workspaces {
    fn drop(&mut self) {
        let Ok(drv) = driver::driver() else { return };
        for (&(device, _), &ptr) in self.buffers.get_mut().expect("lock").iter() {
            // cuMemFree synchronizes with the device's work first, so no launch still uses it.
            // At exit the driver may be gone already: nothing to do then.
            if drv.make_current(device).is_ok() {
                let _ = driver::mem_free(ptr);
            }
        }
    }
}

/// How a prepared launch of a kernel with state finds its workspace.
struct StateLaunch {
    /// The workspace argument's position.
    arg: usize,
    workspaces: Arc<Workspaces>,
    /// Prepared outside a capture: the stream's workspace, already in the packed arguments.
    eager: Option<u64>,
}

pub struct Kernel {
    spec: Spec,
    image: Vec<u8>,
    path: Option<PathBuf>,
    /// The loaded function per device.
    functions: Mutex<HashMap<i32, Function>>,
    /// A kernel with state: its per-stream workspaces.
    workspaces: Option<Arc<Workspaces>>,
    /// Per device: CTAs of whole clusters that can run at once (persistent cluster grids only).
    cluster_fit: Mutex<HashMap<i32, u32>>,
    /// `cuTensorMapEncodeTiled` results by their arguments. A descriptor is a pure function of
    /// its fields (address, shape, strides, box, ...), independent of context and device, so a
    /// repeated call with the same tensors reuses it instead of encoding again.
    tensormaps: Mutex<HashMap<TensorMapFields, ParamSlot>>,
}

/// A bound call: what `Kernel::bind` checks without any driver call but the SM count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    pub bound: Bound,
    /// Every parameter's value, tensor-map fields included; `None` for an empty problem.
    pub plan: Option<Vec<Planned>>,
}

/// A bound, packed launch (tensor maps encoded): `launch()` issues exactly this launch again.
/// The tensor maps hold raw addresses, so it is valid only while the tensors it was prepared
/// from stay alive and unchanged.
pub struct Prepared {
    function: Option<Function>,
    config: Config,
    device: i32,
    packed: Option<Packed>,
    /// (address, bytes) of the tensors zeroed before the kernel (launch.json's `zero`).
    zero: Vec<(u64, usize)>,
    state: Option<StateLaunch>,
}

impl Prepared {
    pub fn grid(&self) -> [u32; 3] {
        self.config.grid
    }

    pub fn launch(&self) -> Result<()> {
        if self.packed.is_none() && self.zero.is_empty() {
            return Ok(()); // an empty problem: nothing to launch
        }
        driver::driver()?.make_current(self.device)?;
        // Zeroed outputs are zero even when the problem is empty (N = 0 rows to add).
        for &(ptr, bytes) in &self.zero {
            driver::memset_zero(ptr, bytes, self.config.stream)?;
        }
        let (Some(f), Some(packed)) = (self.function, self.packed.as_ref()) else {
            return Ok(());
        };
        let Some(state) = &self.state else {
            // SAFETY: `packed` holds one slot per kernel parameter in launch.json order; the
            // function was loaded in this device's primary context, now current.
            return unsafe { driver::launch(f, &self.config, packed.params()) };
        };
        let stream = self.config.stream;
        if !driver::stream_is_capturing(stream)? {
            if state.eager.is_some() {
                // SAFETY: as above; the stream's workspace is in its argument.
                return unsafe { driver::launch(f, &self.config, packed.params()) };
            }
            let ws = state.workspaces.of_stream(self.device, stream)?;
            let packed = packed.with_pointer(state.arg, ws);
            // SAFETY: as above, with the stream's workspace in its argument.
            return unsafe { driver::launch(f, &self.config, packed.params()) };
        }
        // Inside a capture the graph gets a workspace of its own, allocated and zeroed by its
        // nodes on each replay: replays of two graphs (or of one on two streams) may overlap.
        let s = state.workspaces.state;
        let ws = driver::mem_alloc_async(s.bytes as usize, stream)?;
        let packed = packed.with_pointer(state.arg, ws);
        let launched = driver::memset_zero(ws, s.zeroed as usize, stream)
            // SAFETY: as above, with the graph's workspace in its argument.
            .and_then(|()| unsafe { driver::launch(f, &self.config, packed.params()) });
        let freed = driver::mem_free_async(ws, stream);
        launched.and(freed)
    }
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("kernel", &self.spec.meta.kernel)
            .field("path", &self.path)
            .field("cubin_bytes", &self.image.len())
            .finish()
    }
}

impl Kernel {
    pub fn new(spec: Spec, image: Vec<u8>, path: Option<PathBuf>) -> Kernel {
        let workspaces = spec
            .meta
            .state
            .map(|s| Arc::new(Workspaces::new(&spec.meta.kernel, s)));
        Kernel {
            spec,
            image,
            path,
            functions: Mutex::new(HashMap::new()),
            workspaces,
            cluster_fit: Mutex::new(HashMap::new()),
            tensormaps: Mutex::new(HashMap::new()),
        }
    }

    /// Read `DIR/<kernel>.launch.json` (or a directory holding exactly one) and its cubin. No
    /// driver call: the cubin is loaded at the first launch on each device.
    pub fn load(path: &Path) -> Result<Kernel> {
        let path = if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .map_err(|e| launch(format!("cannot read {}: {e}", path.display())))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(".launch.json"))
                .collect();
            found.sort();
            if found.len() != 1 {
                let names: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
                return Err(launch(format!(
                    "{}: expected exactly one *.launch.json, found {}",
                    path.display(),
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                )));
            }
            found.remove(0)
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&path)
            .map_err(|e| launch(format!("cannot read {}: {e}", path.display())))?;
        let spec =
            Spec::from_json(&text).map_err(|e| launch(format!("{}: {e}", path.display())))?;
        let cubin = path
            .parent()
            .unwrap_or(Path::new("."))
            .join(&spec.meta.cubin);
        let image = std::fs::read(&cubin).map_err(|e| {
            launch(format!(
                "{} field `cubin`: cannot read {}: {e}",
                path.display(),
                cubin.display()
            ))
        })?;
        if !is_cubin_or_fatbin(&image) {
            // The driver would read anything else as NUL-terminated PTX, past the buffer's end.
            return Err(launch(format!(
                "{} field `cubin`: {} is not a cubin (ELF) or fatbin",
                path.display(),
                cubin.display()
            )));
        }
        Ok(Kernel::new(spec, image, Some(path)))
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Check and bind one call without launching. `num_sms`: the persistent grid's cap; when
    /// `None`, asked of the driver for the launch device.
    pub fn bind(
        &self,
        tensors: &[TensorDesc],
        scalars: &[(String, ScalarValue)],
        num_sms: Option<u32>,
        device: Option<i32>,
    ) -> Result<Binding> {
        // Validate everything first (a placeholder SM count), so a bad argument is reported
        // even without a driver; then size a persistent grid with the device's real SM count.
        let mut bound = bind::bind(&self.spec, tensors, scalars, num_sms.unwrap_or(1), device)?;
        if num_sms.is_none() && self.spec.grid_kind == GridKind::Persistent {
            let sms = driver::driver()?.sm_count(bound.device)?;
            bound.grid = bind::compute_grid(&self.spec, &bound.env(), sms)?;
        }
        let plan = if bound.is_empty() {
            None
        } else {
            Some(pack::plan(&self.spec, &bound)?)
        };
        Ok(Binding { bound, plan })
    }

    /// The function on `device`, loading the cubin into the device's primary context the first
    /// time. The context must be current; `stream` is the launch's, checked for a capture.
    fn function(&self, device: i32, stream: u64) -> Result<Function> {
        let mut map = self.functions.lock().expect("lock");
        if let Some(f) = map.get(&device) {
            return Ok(*f);
        }
        let m = &self.spec.meta;
        if driver::stream_is_capturing(stream)? {
            return Err(launch(format!(
                "kernel `{}`: the first launch on this device loads its module, which a CUDA \
                 graph capture cannot contain: launch it once on any stream before capturing \
                 (docs/python.md, CUDA graphs)",
                m.kernel
            )));
        }
        let f = driver::load_function(&self.image, &m.symbol, m.dynamic_smem as u32, m.cluster)
            .map_err(|e| match e {
                Error::Cuda(mut c) => {
                    let cc = driver::driver()
                        .and_then(|d| d.compute_capability(device))
                        .map(|(a, b)| format!("sm_{a}{b}"))
                        .unwrap_or_else(|_| "unknown".into());
                    c.call = format!("{} for {}", c.call, m.cubin);
                    c.note = format!("built for target {}, device {device} is {cc}", m.target);
                    Error::Cuda(c)
                }
                other => other,
            })?;
        map.insert(device, f);
        Ok(f)
    }

    /// The per-stream workspaces of a kernel with state (launch.json `state`).
    pub fn workspaces(&self) -> Option<&Workspaces> {
        self.workspaces.as_deref()
    }

    /// Bind, check, load (first time on the device) and encode: everything but the launch.
    pub fn prepare(
        &self,
        tensors: &[TensorDesc],
        scalars: &[(String, ScalarValue)],
        stream: u64,
        device: Option<i32>,
    ) -> Result<Prepared> {
        let binding = self.bind(tensors, scalars, None, device)?;
        let device = binding.bound.device;
        let m = &self.spec.meta;
        let zero: Vec<(u64, usize)> = binding
            .bound
            .tensors
            .iter()
            .filter(|t| m.zero.contains(&t.name) && t.nbytes() > 0)
            .map(|t| (t.data_ptr, t.nbytes() as usize))
            .collect();
        let mut config = Config {
            grid: binding.bound.grid,
            block: m.block,
            cluster: m.cluster,
            dynamic_smem: m.dynamic_smem as u32,
            stream,
        };
        let Some(plan) = binding.plan else {
            return Ok(Prepared {
                function: None,
                config,
                device,
                packed: None,
                zero,
                state: None,
            });
        };
        let drv = driver::driver()?;
        drv.make_current(device)?;
        let function = self.function(device, stream)?;
        if self.spec.grid_kind == GridKind::Persistent && m.cluster != [1, 1, 1] {
            // Not every SM can host a CTA of a cluster (clusters stay within a GPC): size the
            // persistent grid by the clusters that fit at once.
            let cached = self.cluster_fit.lock().expect("lock").get(&device).copied();
            let fit = match cached {
                Some(f) => f,
                None => {
                    let f = driver::max_active_clusters(function, &config)? * m.cluster[0];
                    self.cluster_fit.lock().expect("lock").insert(device, f);
                    f
                }
            };
            if fit > 0 && fit < config.grid[0] {
                config.grid = bind::compute_grid(&self.spec, &binding.bound.env(), fit)?;
            }
        }
        let mut packed = Packed::new(&plan, |f, slot| self.encode_cached(drv, f, slot))?;
        let state = match &self.workspaces {
            None => None,
            Some(w) => {
                let arg = self
                    .spec
                    .args
                    .iter()
                    .position(|a| a.kind == ArgKind::State)
                    .expect("a spec with `state` has its argument");
                // Outside a capture the stream's workspace goes in now; a launch inside one
                // (whenever this is launched) gets the graph's instead.
                let eager = if driver::stream_is_capturing(stream)? {
                    None
                } else {
                    let ws = w.of_stream(device, stream)?;
                    packed.set_pointer(arg, ws);
                    Some(ws)
                };
                Some(StateLaunch {
                    arg,
                    workspaces: Arc::clone(w),
                    eager,
                })
            }
        };
        Ok(Prepared {
            function: Some(function),
            config,
            device,
            packed: Some(packed),
            zero,
            state,
        })
    }

    fn encode_cached(
        &self,
        drv: &driver::Driver,
        f: &TensorMapFields,
        slot: &mut ParamSlot,
    ) -> Result<()> {
        if let Some(hit) = self.tensormaps.lock().expect("lock").get(f) {
            *slot = *hit;
            return Ok(());
        }
        drv.encode_tensormap(f, slot)?;
        let mut cache = self.tensormaps.lock().expect("lock");
        if cache.len() >= TENSORMAP_CACHE {
            cache.clear();
        }
        cache.insert(f.clone(), *slot);
        Ok(())
    }

    /// Check, bind and launch asynchronously on `stream`; returns the grid (a zero component:
    /// an empty problem, nothing launched).
    pub fn launch(
        &self,
        tensors: &[TensorDesc],
        scalars: &[(String, ScalarValue)],
        stream: u64,
        device: Option<i32>,
    ) -> Result<[u32; 3]> {
        let p = self.prepare(tensors, scalars, stream, device)?;
        p.launch()?;
        Ok(p.grid())
    }

    /// Registers, shared and local memory and limits of the function on `device` (loading it).
    pub fn function_attributes(&self, device: i32) -> Result<Vec<(&'static str, i32)>> {
        driver::driver()?.make_current(device)?;
        driver::function_attributes(self.function(device, 0)?)
    }

    /// How this kernel's CTAs fit `device` as the driver reckons it: per SM, and for a
    /// clustered kernel the clusters resident at once (a cluster's CTAs share a GPC, so fewer
    /// than SMs × CTAs per SM ÷ cluster size where the GPCs' SM counts leave remainders).
    pub fn residency(&self, device: i32) -> Result<Residency> {
        let drv = driver::driver()?;
        drv.make_current(device)?;
        let function = self.function(device, 0)?;
        let m = &self.spec.meta;
        let config = Config {
            // One cluster's worth: the driver refuses a grid that is not whole clusters.
            grid: m.cluster,
            block: m.block,
            cluster: m.cluster,
            dynamic_smem: m.dynamic_smem as u32,
            stream: 0,
        };
        let cluster: u32 = m.cluster.iter().product();
        Ok(Residency {
            sm_count: drv.sm_count(device)?,
            ctas_per_sm: driver::max_ctas_per_sm(function, &config)?,
            cluster,
            clusters_at_once: if cluster > 1 {
                Some(driver::max_active_clusters(function, &config)?)
            } else {
                None
            },
        })
    }
}

/// How a kernel's CTAs fit one device ([`Kernel::residency`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Residency {
    pub sm_count: u32,
    pub ctas_per_sm: u32,
    /// CTAs per cluster (1: not clustered).
    pub cluster: u32,
    /// Clusters resident at once, for a clustered kernel.
    pub clusters_at_once: Option<u32>,
}

impl Residency {
    /// CTAs that run at once: the clusters that fit times their size, else SMs × per SM.
    pub fn resident_ctas(&self) -> u32 {
        match self.clusters_at_once {
            Some(c) => c * self.cluster,
            None => self.sm_count * self.ctas_per_sm,
        }
    }
}

/// Whether `image` starts like an ELF object (a cubin) or a fatbin: the only images this runtime
/// hands to `cuModuleLoadData`.
pub fn is_cubin_or_fatbin(image: &[u8]) -> bool {
    const ELF: &[u8] = b"\x7fELF";
    const FATBIN: &[u8] = &[0x50, 0xed, 0x55, 0xba]; // 0xba55ed50, little-endian
    image.starts_with(ELF) || image.starts_with(FATBIN)
}
