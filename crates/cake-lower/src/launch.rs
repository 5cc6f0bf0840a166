//! Launch metadata (`<kernel>.launch.json`, schema `cake.launch/v0`): everything a runtime needs
//! to call the kernel — symbol, block, grid rule, shared memory, cluster and the exact parameter
//! list, including the TMA descriptors to encode. Documented in docs/launch.md.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LaunchMeta {
    pub schema: String,
    pub kernel: String,
    pub symbol: String,
    pub target: String,
    pub cubin: String,
    pub block: [u32; 3],
    pub cluster: [u32; 3],
    pub dynamic_smem: u64,
    pub grid: Grid,
    pub tensors: Vec<TensorMeta>,
    pub scalars: Vec<ScalarMeta>,
    pub args: Vec<Arg>,
    /// Tensors the launcher fills with zeros on the launch's stream before the kernel
    /// (`@cake.schedule(zero=[...])`): the destinations of global atomic adds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zero: Vec<String>,
    /// Where the kernel's timeline stamps go (docs/timeline.md): compiled in only in a
    /// `cake build --timeline` build (`enabled`), whose last two arguments are then the buffer
    /// and its length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// The launch's workspace, the kernel's `Arg::State` argument: a dynamic tile loop's
    /// counters, stream-K's partials and ready flags (docs/language.md §8.1, §8.1a). Launches
    /// that may overlap must not share one; the launcher provides it (docs/launch.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateMeta>,
}

/// The size of a kernel's workspace. Its first `zeroed` bytes must be zero when a launch starts;
/// every launch leaves them zero, so a buffer reused by the next launch on the same stream needs
/// no memset. The rest is written before it is read.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct StateMeta {
    pub bytes: u64,
    pub zeroed: u64,
}

/// The timeline's layout: `slots` 64-bit words per CTA (at `blockIdx.x * slots`), named by
/// `points` in order.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timeline {
    pub slots: u32,
    pub points: Vec<String>,
    pub enabled: bool,
}

/// Grid rule. Expressions are JSON: an integer, a dimension or scalar name, or
/// `[op, a, b]` with op in cdiv, add, sub, mul, div, mod, min, max.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Grid {
    /// One CTA per tile, at most one per SM in flight per loop step: gridDim.x = min(SMs, Π tiles).
    Persistent { tiles: Vec<serde_json::Value> },
    /// One CTA per tile: gridDim.x = Π tiles.
    Tiles { tiles: Vec<serde_json::Value> },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TensorMeta {
    pub name: String,
    pub dtype: String,
    pub dims: Vec<serde_json::Value>,
    pub access: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScalarMeta {
    pub name: String,
    pub dtype: String,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Arg {
    Tensormap {
        tensor: String,
        /// Box extents, innermost first.
        #[serde(rename = "box")]
        box_dims: Vec<u32>,
        swizzle: u32,
        interleave: String,
        oob_fill: String,
        l2_promotion: u32,
    },
    Ptr {
        tensor: String,
    },
    Dim {
        name: String,
    },
    Scalar {
        name: String,
    },
    /// The launch's workspace (`state`): a device pointer the launcher provides.
    State,
}
