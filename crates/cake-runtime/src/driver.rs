//! The few CUDA driver entry points the launcher needs, through `cudarc::driver::sys` with
//! dynamic loading: `libcuda.so.1` is opened at first use, so nothing CUDA is linked at build
//! time and every pure part of this crate works without a driver.
//!
//! Contexts: the launcher works in the *primary context* of the tensors' device, the one the
//! CUDA runtime (and so torch) uses. It retains it once per device (never released: torch holds
//! it too for the life of the process) and makes it current on the calling thread before every
//! call that needs one.

use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys;

use crate::error::{CudaError, Error, Result};
use crate::pack::ParamSlot;
use crate::tensormap::TensorMapFields;

/// Every entry point used here; probed at load so an old driver is a clear error, not a panic.
const REQUIRED: [&str; 23] = [
    "cuInit",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGet",
    "cuDeviceGetAttribute",
    "cuDevicePrimaryCtxRetain",
    "cuCtxGetCurrent",
    "cuCtxSetCurrent",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuFuncSetAttribute",
    "cuFuncGetAttribute",
    "cuTensorMapEncodeTiled",
    "cuLaunchKernelEx",
    "cuOccupancyMaxActiveClusters",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuMemsetD8Async",
    "cuCtxResetPersistingL2Cache",
    "cuStreamIsCapturing",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
];

/// A `CUresult` as (name, description), e.g. ("CUDA_ERROR_INVALID_VALUE", "invalid argument").
pub fn describe(res: sys::CUresult) -> (String, String) {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let mut text: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: out-pointers to locals; the driver returns static strings or leaves them null.
    unsafe {
        let n = if sys::cuGetErrorName(res, &mut name) == sys::CUresult::CUDA_SUCCESS
            && !name.is_null()
        {
            CStr::from_ptr(name).to_string_lossy().into_owned()
        } else {
            format!("CUresult {}", res as u32)
        };
        let t = if sys::cuGetErrorString(res, &mut text) == sys::CUresult::CUDA_SUCCESS
            && !text.is_null()
        {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        } else {
            String::new()
        };
        (n, t)
    }
}

/// `Ok` on `CUDA_SUCCESS`, else the error with `call` (evaluated only on failure).
pub fn check(res: sys::CUresult, call: impl FnOnce() -> String) -> Result<()> {
    if res == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let (name, description) = describe(res);
    Err(Error::Cuda(CudaError {
        call: call(),
        code: res as u32,
        name,
        description,
        note: String::new(),
    }))
}

fn no_driver(msg: String) -> Error {
    Error::Cuda(CudaError {
        call: "loading the CUDA driver (libcuda.so.1)".into(),
        code: 0,
        name: "CUDA_ERROR_NO_DRIVER_LIBRARY".into(),
        description: msg,
        note: String::new(),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
struct Ctx(sys::CUcontext);
// SAFETY: a context handle is an opaque token the driver accepts from any thread.
unsafe impl Send for Ctx {}
unsafe impl Sync for Ctx {}

/// The process-wide driver state: `cuInit` done, primary contexts retained, SM counts cached.
pub struct Driver {
    primary: Mutex<HashMap<i32, Ctx>>,
    sm_count: Mutex<HashMap<i32, u32>>,
}

static DRIVER: OnceLock<std::result::Result<Driver, Error>> = OnceLock::new();

/// The driver, loaded and initialised once per process.
pub fn driver() -> Result<&'static Driver> {
    DRIVER
        .get_or_init(Driver::init)
        .as_ref()
        .map_err(Clone::clone)
}

impl Driver {
    fn init() -> Result<Driver> {
        // SAFETY: dlopen of the driver library; cudarc keeps the handle for the process.
        unsafe {
            if !sys::is_culib_present() {
                return Err(no_driver(
                    "libcuda.so.1 was not found: no NVIDIA driver on this machine".into(),
                ));
            }
            let lib = sys::culib();
            let missing: Vec<&str> = REQUIRED
                .iter()
                .copied()
                .filter(|n| lib.get::<unsafe extern "C" fn()>(n.as_bytes()).is_err())
                .collect();
            if !missing.is_empty() {
                return Err(no_driver(format!(
                    "the driver lacks {}; it is too old (TMA and cluster launches need CUDA 12.0 or newer)",
                    missing.join(", ")
                )));
            }
            check(sys::cuInit(0), || "cuInit(0)".into())?;
        }
        Ok(Driver {
            primary: Mutex::new(HashMap::new()),
            sm_count: Mutex::new(HashMap::new()),
        })
    }

    pub fn device(&self, ordinal: i32) -> Result<sys::CUdevice> {
        let mut dev: sys::CUdevice = 0;
        // SAFETY: out-pointer to a local.
        check(unsafe { sys::cuDeviceGet(&mut dev, ordinal) }, || {
            format!("cuDeviceGet({ordinal})")
        })?;
        Ok(dev)
    }

    pub fn attribute(&self, attr: sys::CUdevice_attribute, ordinal: i32) -> Result<i32> {
        let dev = self.device(ordinal)?;
        let mut v = 0;
        // SAFETY: out-pointer to a local.
        check(
            unsafe { sys::cuDeviceGetAttribute(&mut v, attr, dev) },
            || format!("cuDeviceGetAttribute({attr:?}, device {ordinal})"),
        )?;
        Ok(v)
    }

    pub fn sm_count(&self, ordinal: i32) -> Result<u32> {
        if let Some(&n) = self.sm_count.lock().expect("lock").get(&ordinal) {
            return Ok(n);
        }
        let n = self.attribute(
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            ordinal,
        )? as u32;
        self.sm_count.lock().expect("lock").insert(ordinal, n);
        Ok(n)
    }

    /// `sm_90` style: the device's compute capability.
    pub fn compute_capability(&self, ordinal: i32) -> Result<(i32, i32)> {
        use sys::CUdevice_attribute as A;
        Ok((
            self.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, ordinal)?,
            self.attribute(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, ordinal)?,
        ))
    }

    /// Make the primary context of device `ordinal` (torch's) current on this thread, retaining
    /// it the first time.
    pub fn make_current(&self, ordinal: i32) -> Result<()> {
        let primary = {
            let mut map = self.primary.lock().expect("lock");
            match map.get(&ordinal) {
                Some(c) => *c,
                None => {
                    let dev = self.device(ordinal)?;
                    let mut ctx: sys::CUcontext = std::ptr::null_mut();
                    // SAFETY: out-pointer to a local.
                    check(
                        unsafe { sys::cuDevicePrimaryCtxRetain(&mut ctx, dev) },
                        || format!("cuDevicePrimaryCtxRetain(device {ordinal})"),
                    )?;
                    map.insert(ordinal, Ctx(ctx));
                    Ctx(ctx)
                }
            }
        };
        let mut cur: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the context handle came from the driver.
        unsafe {
            check(sys::cuCtxGetCurrent(&mut cur), || "cuCtxGetCurrent".into())?;
            if cur != primary.0 {
                check(sys::cuCtxSetCurrent(primary.0), || {
                    format!("cuCtxSetCurrent(primary context of device {ordinal})")
                })?;
            }
        }
        Ok(())
    }

    /// Return every L2 line marked persisting to normal priority, in device `ordinal`'s primary
    /// context. Lines a kernel read or wrote with an `evict_last` policy outlive a write that
    /// fills L2 (it evicts normal lines first), so a timing harness resets them before it
    /// flushes: otherwise a kernel's lines would stay to slow whatever is timed next.
    pub fn reset_persisting_l2(&self, ordinal: i32) -> Result<()> {
        self.make_current(ordinal)?;
        // SAFETY: no arguments; acts on the context made current above.
        check(unsafe { sys::cuCtxResetPersistingL2Cache() }, || {
            format!("cuCtxResetPersistingL2Cache(primary context of device {ordinal})")
        })
    }

    /// Encode one tensor map into `slot` (128 bytes, aligned as `CUtensorMap` requires).
    pub fn encode_tensormap(&self, f: &TensorMapFields, slot: &mut ParamSlot) -> Result<()> {
        use sys::CUtensorMapDataType as D;
        use sys::CUtensorMapFloatOOBfill as O;
        use sys::CUtensorMapInterleave as I;
        use sys::CUtensorMapL2promotion as L;
        use sys::CUtensorMapSwizzle as S;
        let data_type = match f.data_type {
            0 => D::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            1 => D::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            2 => D::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            3 => D::CU_TENSOR_MAP_DATA_TYPE_INT32,
            4 => D::CU_TENSOR_MAP_DATA_TYPE_UINT64,
            5 => D::CU_TENSOR_MAP_DATA_TYPE_INT64,
            6 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            7 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            8 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            9 => D::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            10 => D::CU_TENSOR_MAP_DATA_TYPE_FLOAT32_FTZ,
            11 => D::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32,
            _ => D::CU_TENSOR_MAP_DATA_TYPE_TFLOAT32_FTZ,
        };
        let interleave = match f.interleave {
            1 => I::CU_TENSOR_MAP_INTERLEAVE_16B,
            2 => I::CU_TENSOR_MAP_INTERLEAVE_32B,
            _ => I::CU_TENSOR_MAP_INTERLEAVE_NONE,
        };
        let swizzle = match f.swizzle {
            1 => S::CU_TENSOR_MAP_SWIZZLE_32B,
            2 => S::CU_TENSOR_MAP_SWIZZLE_64B,
            3 => S::CU_TENSOR_MAP_SWIZZLE_128B,
            _ => S::CU_TENSOR_MAP_SWIZZLE_NONE,
        };
        let l2 = match f.l2_promotion {
            1 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            2 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            3 => L::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            _ => L::CU_TENSOR_MAP_L2_PROMOTION_NONE,
        };
        let oob = if f.oob_fill == 1 {
            O::CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
        } else {
            O::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE
        };
        // rank − 1 strides; pass a valid (unused) array for rank 1.
        let strides: Vec<u64> = if f.global_strides.is_empty() {
            vec![0]
        } else {
            f.global_strides.clone()
        };
        const _: () = assert!(std::mem::size_of::<sys::CUtensorMap>() == 128);
        const _: () =
            assert!(std::mem::align_of::<ParamSlot>() >= std::mem::align_of::<sys::CUtensorMap>());
        let dst = slot.0.as_mut_ptr().cast::<sys::CUtensorMap>();
        // SAFETY: `dst` is 128 writable bytes aligned for CUtensorMap; the arrays hold `rank`
        // (strides: rank − 1, at least one) elements and outlive the call.
        let res = unsafe {
            sys::cuTensorMapEncodeTiled(
                dst,
                data_type,
                f.rank,
                f.global_address as *mut c_void,
                f.global_dim.as_ptr(),
                strides.as_ptr(),
                f.box_dim.as_ptr(),
                f.element_strides.as_ptr(),
                interleave,
                swizzle,
                l2,
                oob,
            )
        };
        check(res, || format!("cuTensorMapEncodeTiled({f:?})"))
    }
}

/// A loaded kernel function (one per device).
#[derive(Clone, Copy, Debug)]
pub struct Function(pub sys::CUfunction);
// SAFETY: a function handle is an opaque token valid in its context from any thread.
unsafe impl Send for Function {}
unsafe impl Sync for Function {}

/// Load `image` into the current context and look up `symbol`; raise the dynamic shared memory
/// limit when the kernel needs more than the default 48 KB, and allow non-portable cluster sizes
/// above 8.
pub fn load_function(
    image: &[u8],
    symbol: &str,
    dynamic_smem: u32,
    cluster: [u32; 3],
) -> Result<Function> {
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: the image is a complete cubin the driver copies during the call.
    check(
        unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr().cast()) },
        || "cuModuleLoadData".into(),
    )?;
    let name = CString::new(symbol)
        .map_err(|_| crate::error::launch(format!("symbol `{symbol}` contains a NUL byte")))?;
    let mut func: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: out-pointer to a local; module just loaded.
    let found = check(
        unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) },
        || format!("cuModuleGetFunction(`{symbol}`)"),
    );
    if let Err(e) = found {
        // SAFETY: the module was loaded above and nothing refers to it.
        unsafe { sys::cuModuleUnload(module) };
        return Err(e);
    }
    use sys::CUfunction_attribute as F;
    if dynamic_smem > 48 * 1024 {
        // SAFETY: a valid function handle.
        check(
            unsafe {
                sys::cuFuncSetAttribute(
                    func,
                    F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    dynamic_smem as i32,
                )
            },
            || {
                format!(
                    "cuFuncSetAttribute(`{symbol}`, MAX_DYNAMIC_SHARED_SIZE_BYTES, {dynamic_smem})"
                )
            },
        )?;
    }
    if cluster.iter().product::<u32>() > 8 {
        // SAFETY: a valid function handle.
        check(
            unsafe {
                sys::cuFuncSetAttribute(
                    func,
                    F::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
                    1,
                )
            },
            || format!("cuFuncSetAttribute(`{symbol}`, NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1)"),
        )?;
    }
    Ok(Function(func))
}

/// Registers, static/local shared memory and limits of a loaded function.
pub fn function_attributes(f: Function) -> Result<Vec<(&'static str, i32)>> {
    use sys::CUfunction_attribute as F;
    let attrs = [
        ("num_regs", F::CU_FUNC_ATTRIBUTE_NUM_REGS),
        ("static_smem", F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
        ("local_bytes", F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        (
            "max_threads_per_block",
            F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        ),
        (
            "max_dynamic_smem",
            F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        ),
    ];
    attrs
        .into_iter()
        .map(|(name, a)| {
            let mut v = 0;
            // SAFETY: out-pointer to a local; a valid function handle.
            check(unsafe { sys::cuFuncGetAttribute(&mut v, a, f.0) }, || {
                format!("cuFuncGetAttribute({name})")
            })?;
            Ok((name, v))
        })
        .collect()
}

/// The launch configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub cluster: [u32; 3],
    pub dynamic_smem: u32,
    /// A `CUstream` handle as an integer (`torch.cuda.Stream.cuda_stream`); 0 is the legacy
    /// default stream.
    pub stream: u64,
}

/// The cluster-dimension launch attribute of `cfg`.
fn cluster_attribute(cfg: &Config) -> sys::CUlaunchAttribute {
    // SAFETY: an all-zero attribute is valid plain data; the id and the union member set
    // below agree.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attr.value.clusterDim.x = cfg.cluster[0];
    attr.value.clusterDim.y = cfg.cluster[1];
    attr.value.clusterDim.z = cfg.cluster[2];
    attr
}

/// `cfg` as the driver's launch configuration. `attr` (the cluster attribute) is referenced
/// when the cluster is not 1×1×1 or `always_cluster` is set, and must outlive the result.
fn launch_config(
    cfg: &Config,
    attr: &mut sys::CUlaunchAttribute,
    always_cluster: bool,
) -> sys::CUlaunchConfig {
    let clustered = always_cluster || cfg.cluster != [1, 1, 1];
    sys::CUlaunchConfig {
        gridDimX: cfg.grid[0],
        gridDimY: cfg.grid[1],
        gridDimZ: cfg.grid[2],
        blockDimX: cfg.block[0],
        blockDimY: cfg.block[1],
        blockDimZ: cfg.block[2],
        sharedMemBytes: cfg.dynamic_smem,
        hStream: cfg.stream as usize as sys::CUstream,
        attrs: if clustered {
            attr
        } else {
            std::ptr::null_mut()
        },
        numAttrs: u32::from(clustered),
    }
}

/// How many clusters of `cfg`'s shape can run at once (`cuOccupancyMaxActiveClusters`): a
/// persistent grid of clusters larger than this would leave whole clusters waiting for a
/// second wave. `f` must be loaded in the current context.
pub fn max_active_clusters(f: Function, cfg: &Config) -> Result<u32> {
    let mut attr = cluster_attribute(cfg);
    let config = launch_config(cfg, &mut attr, true);
    let mut n: std::ffi::c_int = 0;
    // SAFETY: the config and its attribute live across the call; `f` is a loaded function.
    let res = unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f.0, &config) };
    check(res, || {
        format!(
            "cuOccupancyMaxActiveClusters(block={:?}, cluster={:?}, smem={})",
            cfg.block, cfg.cluster, cfg.dynamic_smem
        )
    })?;
    Ok(n.max(0) as u32)
}

/// How many CTAs of `f` one SM holds at once with `cfg`'s block and dynamic shared memory
/// (`cuOccupancyMaxActiveBlocksPerMultiprocessor`: registers, shared memory, threads, slots).
/// `f` must be loaded in the current context.
pub fn max_ctas_per_sm(f: Function, cfg: &Config) -> Result<u32> {
    let threads: u32 = cfg.block.iter().product();
    let mut n: std::ffi::c_int = 0;
    // SAFETY: an out-pointer to a local; `f` is a loaded function.
    let res = unsafe {
        sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
            &mut n,
            f.0,
            threads as std::ffi::c_int,
            cfg.dynamic_smem as usize,
        )
    };
    check(res, || {
        format!(
            "cuOccupancyMaxActiveBlocksPerMultiprocessor(block={:?}, smem={})",
            cfg.block, cfg.dynamic_smem
        )
    })?;
    Ok(n.max(0) as u32)
}

/// Whether `stream` is being captured into a CUDA graph (`cuStreamIsCapturing`), in the current
/// context: loading a module then would break the capture, and a launch's workspace must then be
/// the graph's own.
pub fn stream_is_capturing(stream: u64) -> Result<bool> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: out-pointer to a local; the driver validates the stream.
    let res = unsafe { sys::cuStreamIsCapturing(stream as usize as sys::CUstream, &mut status) };
    check(res, || format!("cuStreamIsCapturing(stream={stream:#x})"))?;
    Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
}

/// Fill `bytes` bytes at device address `ptr` with zeros, asynchronously on `stream`
/// (`cuMemsetD8Async`), in the current context.
pub fn memset_zero(ptr: u64, bytes: usize, stream: u64) -> Result<()> {
    // SAFETY: plain values; the driver validates the address range and the stream.
    let res = unsafe {
        sys::cuMemsetD8Async(
            ptr as sys::CUdeviceptr,
            0,
            bytes,
            stream as usize as sys::CUstream,
        )
    };
    check(res, || {
        format!("cuMemsetD8Async(ptr={ptr:#x}, bytes={bytes}, stream={stream:#x})")
    })
}

/// `bytes` bytes of device memory in the current context (`cuMemAlloc`).
pub fn mem_alloc(bytes: usize) -> Result<u64> {
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer to a local.
    let res = unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) };
    check(res, || format!("cuMemAlloc(bytes={bytes})"))?;
    Ok(ptr as u64)
}

/// Free memory [`mem_alloc`] returned (`cuMemFree`, which waits for the device's work that may
/// use it), in the context it was allocated in, which must be current.
pub fn mem_free(ptr: u64) -> Result<()> {
    // SAFETY: the caller passes an allocation of this context that nothing will use again.
    let res = unsafe { sys::cuMemFree_v2(ptr as sys::CUdeviceptr) };
    check(res, || format!("cuMemFree(ptr={ptr:#x})"))
}

/// `bytes` bytes of device memory ordered on `stream` (`cuMemAllocAsync`): inside a CUDA graph
/// capture, a node of the graph, so every replay has its own.
pub fn mem_alloc_async(bytes: usize, stream: u64) -> Result<u64> {
    let mut ptr: sys::CUdeviceptr = 0;
    // SAFETY: out-pointer to a local; the driver validates the stream.
    let res = unsafe { sys::cuMemAllocAsync(&mut ptr, bytes, stream as usize as sys::CUstream) };
    check(res, || {
        format!("cuMemAllocAsync(bytes={bytes}, stream={stream:#x})")
    })?;
    Ok(ptr as u64)
}

/// Free [`mem_alloc_async`]'s memory once `stream`'s work so far is done (`cuMemFreeAsync`).
pub fn mem_free_async(ptr: u64, stream: u64) -> Result<()> {
    // SAFETY: the caller passes an allocation that no work ordered after this call uses.
    let res =
        unsafe { sys::cuMemFreeAsync(ptr as sys::CUdeviceptr, stream as usize as sys::CUstream) };
    check(res, || {
        format!("cuMemFreeAsync(ptr={ptr:#x}, stream={stream:#x})")
    })
}

/// `cuLaunchKernelEx` on the current context, with a cluster-dimension attribute when the
/// cluster is not 1×1×1.
///
/// # Safety
/// `params` must point at one valid pointer per kernel parameter, each to that parameter's
/// bytes; `f` must be loaded in the current context, and the stream must belong to it.
pub unsafe fn launch(f: Function, cfg: &Config, params: *mut *mut c_void) -> Result<()> {
    let mut attr = cluster_attribute(cfg);
    let config = launch_config(cfg, &mut attr, false);
    check(
        sys::cuLaunchKernelEx(&config, f.0, params, std::ptr::null_mut()),
        || {
            format!(
                "cuLaunchKernelEx(grid={:?}, block={:?}, cluster={:?}, smem={}, stream={:#x})",
                cfg.grid, cfg.block, cfg.cluster, cfg.dynamic_smem, cfg.stream
            )
        },
    )
}
