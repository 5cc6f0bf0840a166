//! The launch's workspace: memory a kernel's CTAs share within one launch and that outlives
//! none of it — a dynamic tile loop's counters, stream-K's partials and ready flags.
//!
//! It is the kernel's `cake_state` argument (launch.json's `state` and an `Arg::State`), which
//! the launcher provides per launch (docs/launch.md): one buffer per stream it launches on, kept
//! between launches, or inside a CUDA graph capture one the graph allocates and zeroes itself.
//! Launches that may overlap never share it. The counters and flags come first, in the
//! `zeroed` prefix: they are zero when a launch starts, and every launch leaves them zero (the
//! last CTA to finish resets the counters; the run that reads a flag resets it), so a buffer
//! reused by the next launch on its stream needs no memset. The partials follow; each is
//! written before it is read.

use super::{c_ident, Emitter};
use crate::launch::StateMeta;
use crate::legal::{self, Scope, STREAM_CTAS};
use cake_ir::*;

/// Partials start on a 256-byte boundary (the alignment of a device allocation).
const PARTIALS_ALIGN: u64 = 256;

/// One range of the workspace.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StateRegion {
    /// What the kernel's code calls it (a local pointer of that name).
    pub name: String,
    pub offset: u64,
    pub bytes: u64,
    /// The C element type the code reads it as.
    pub ctype: &'static str,
    /// What it holds, for the file's comment.
    pub what: String,
}

/// The workspace of one kernel: its regions, zeroed ones first.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct StateLayout {
    pub regions: Vec<StateRegion>,
    /// Bytes at the start that are zero whenever a launch starts.
    pub zeroed: u64,
    pub bytes: u64,
}

impl StateLayout {
    pub(crate) fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    pub(crate) fn region(&self, name: &str) -> Option<&StateRegion> {
        self.regions.iter().find(|r| r.name == name)
    }

    pub(crate) fn meta(&self) -> Option<StateMeta> {
        (!self.is_empty()).then_some(StateMeta {
            bytes: self.bytes,
            zeroed: self.zeroed,
        })
    }

    fn push(&mut self, name: String, bytes: u64, ctype: &'static str, what: String) {
        self.regions.push(StateRegion {
            name,
            offset: self.bytes,
            bytes,
            ctype,
            what,
        });
        self.bytes += bytes;
    }
}

/// The name of the dynamic tile loop's counters in the workspace.
pub(crate) const TILE_COUNTERS: &str = "cake_tiles";

/// The names of a stream-K fix-up's regions for fragment `f`: (partials, ready flags).
pub(crate) fn stream_regions(k: &Kernel, f: FragId) -> (String, String) {
    let ws = format!("cake_stream_{}", c_ident(&k.fragments[f].name));
    let ready = format!("{ws}_ready");
    (ws, ready)
}

impl Emitter<'_> {
    /// The workspace this kernel needs, from its dynamic tile loop and its stream-K fix-ups
    /// (each fragment once, in fragment order). A fix-up the lowering will reject gets no
    /// region; its finding comes from the fix-up itself.
    pub(crate) fn state_layout(&self) -> StateLayout {
        let k = self.k;
        let mut zeroed = StateLayout::default();
        if k.dynamic_tiles() {
            zeroed.push(
                TILE_COUNTERS.into(),
                8,
                "unsigned int",
                "the dynamic tile loop's counters: tiles taken past each CTA's first, CTAs that have taken their last".into(),
            );
        }
        let mut frags: Vec<FragId> = self
            .kf
            .ops
            .iter()
            .filter_map(|s| match s.op {
                Op::StreamFixup { frag } => Some(frag),
                _ => None,
            })
            .collect();
        frags.sort();
        frags.dedup();
        let mut partials = Vec::new();
        for f in frags {
            let frag = &k.fragments[f];
            let r = &k.roles[frag.role];
            let Ok(regs) = legal::stream_fixup_registers(k, frag.role, false, f, self.layout(f))
            else {
                continue;
            };
            let (replicas, threads) = (r.replicas(), r.threads() / r.replicas());
            let (ws, ready) = stream_regions(k, f);
            zeroed.push(
                ready,
                4 * u64::from(STREAM_CTAS * replicas * threads / 32),
                "unsigned int",
                format!(
                    "stream-K ready flags of `{}`: one per warp of each CTA and replica of role `{}`",
                    frag.name, r.name
                ),
            );
            partials.push((
                ws,
                4 * u64::from(STREAM_CTAS * replicas * threads * regs),
                format!(
                    "stream-K partials of `{}`: {regs} f32 registers of each thread of each CTA and replica",
                    frag.name
                ),
            ));
        }
        let mut layout = zeroed;
        layout.zeroed = layout.bytes;
        for (name, bytes, what) in partials {
            layout.bytes = layout.bytes.div_ceil(PARTIALS_ALIGN) * PARTIALS_ALIGN;
            layout.push(name, bytes, "float", what);
        }
        layout
    }

    /// The file's account of the workspace, before the kernel.
    pub(crate) fn state_comment(&self) -> String {
        let s = &self.state;
        let mut out = format!(
            "\n// The launch's workspace (`cake_state`, launch.json `state`): {} bytes, of which the first {} are zero when a launch starts and zero again when it ends.\n",
            s.bytes, s.zeroed
        );
        for r in &s.regions {
            out.push_str(&format!(
                "//   [{}, {}) {}\n",
                r.offset,
                r.offset + r.bytes,
                r.what
            ));
        }
        out
    }

    /// `T* const name = (T*)(cake_state + offset);`: a region as a local pointer.
    pub(crate) fn state_pointer(&self, name: &str) -> Option<String> {
        let r = self.state.region(name)?;
        Some(format!(
            "{t}* const {name} = ({t}*)(cake_state + {});  // the launch's workspace",
            r.offset,
            t = r.ctype
        ))
    }
}
