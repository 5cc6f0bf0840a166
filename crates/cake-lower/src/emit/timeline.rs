//! Timeline stamps (docs/timeline.md): every kernel carries `CAKE_STAMP` hooks at a fixed set of
//! points — a CTA's start, the SM it runs on, the end of its prologue, and for each role its
//! start, its first completed wait (its first data) and its end — that expand to nothing unless
//! the source is compiled with `CAKE_TIMELINE` defined (`cake build --timeline`). Then the kernel
//! takes two more parameters, a buffer of `slots` 64-bit words per CTA and its length, and the
//! first thread of each point writes `%globaltimer` (the SM id for `sm`) into its CTA's slot.
//! A stream-K kernel has three more points per role, for its fix-up: when the run that stops
//! before its tile's end has published its partial, and when the run that ends a tile begun
//! elsewhere starts waiting for the partials and has added them; and one per CTA, when thread 0
//! leaves the data-parallel tiles for the shared-out steps.

use super::{c_ident, Emitter};
use crate::launch::{Arg, TensorMeta, Timeline};
use cake_ir::{Kernel, Op, RoleId, Stmt};

/// The name of the timeline buffer's tensor and of its length in a timeline build's launch
/// metadata.
pub const TIMELINE_TENSOR: &str = "CAKE_TIMELINE";
pub const TIMELINE_LEN: &str = "CAKE_TIMELINE_LEN";

/// The prelude's stamp macros: hooks that compile to nothing in an ordinary build.
pub(crate) const TIMELINE_OPS: &str = r#"
// Timeline stamps (cake build --timeline defines CAKE_TIMELINE; otherwise they compile to nothing).
#ifdef CAKE_TIMELINE
#define CAKE_TIMELINE_PARAMS , unsigned long long* __restrict__ cake_timeline, int cake_timeline_len
#define CAKE_TIMELINE_ONLY_PARAMS unsigned long long* __restrict__ cake_timeline, int cake_timeline_len
static __device__ __forceinline__ void cake_stamp_at(unsigned long long* t, int len, int slots, int slot, unsigned long long v) {
  const long long i = (long long)blockIdx.x * slots + slot;
  if (i < len) t[i] = v;
}
static __device__ __forceinline__ unsigned long long cake_globaltimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}
static __device__ __forceinline__ unsigned long long cake_smid() {
  unsigned int s;
  asm volatile("mov.u32 %0, %smid;" : "=r"(s));
  return s;
}
#define CAKE_STAMP(who, slot) do { if (who) cake_stamp_at(cake_timeline, cake_timeline_len, CAKE_TIMELINE_SLOTS, (slot), cake_globaltimer()); } while (0)
#define CAKE_STAMP_SM(who, slot) do { if (who) cake_stamp_at(cake_timeline, cake_timeline_len, CAKE_TIMELINE_SLOTS, (slot), cake_smid()); } while (0)
#define CAKE_STAMP_FLAG(flag) bool flag = false
#define CAKE_STAMP_ONCE(who, slot, flag) do { if (!flag) { flag = true; CAKE_STAMP(who, slot); } } while (0)
#else
#define CAKE_TIMELINE_PARAMS
#define CAKE_TIMELINE_ONLY_PARAMS
#define CAKE_STAMP(who, slot) do { } while (0)
#define CAKE_STAMP_SM(who, slot) do { } while (0)
#define CAKE_STAMP_FLAG(flag) do { } while (0)
#define CAKE_STAMP_ONCE(who, slot, flag) do { } while (0)
#endif
"#;

/// Slot of the CTA's start, its SM, and the end of its prologue.
pub(crate) const SLOT_START: u32 = 0;
pub(crate) const SLOT_SM: u32 = 1;
pub(crate) const SLOT_PROLOGUE: u32 = 2;
/// Each role's points, in slot order after the CTA's three.
const ROLE_POINTS: [&str; 3] = ["start", "first_wait", "end"];
/// A stream-K kernel's fix-up points per role, after every role's [`ROLE_POINTS`].
const FIXUP_POINTS: [&str; 3] = ["publish", "fixup_wait", "fixup_done"];

/// Which stream-K fix-up point a stamp marks.
#[derive(Clone, Copy)]
pub(crate) enum FixupPoint {
    /// A run that stops before its tile's end has published its partial.
    Publish = 0,
    /// The run that ends a tile begun by other CTAs starts waiting for their partials.
    Wait = 1,
    /// ... and has added them all.
    Done = 2,
}

/// The slots' names, in order: `cta.start`, `cta.sm`, `cta.prologue`, then per role
/// `<role>.start`, `<role>.first_wait`, `<role>.end`; then per role with a stream-K fix-up
/// `<role>.publish`, `<role>.fixup_wait`, `<role>.fixup_done`.
pub fn timeline_points(k: &Kernel) -> Vec<String> {
    let mut points = vec!["cta.start".into(), "cta.sm".into(), "cta.prologue".into()];
    for (_, r) in k.roles.iter() {
        for what in ROLE_POINTS {
            points.push(format!("{}.{what}", r.name));
        }
    }
    for role in fixup_roles(k) {
        for what in FIXUP_POINTS {
            points.push(format!("{}.{what}", k.roles[role].name));
        }
    }
    if k.stream_k().is_some() {
        points.push("cta.shared_out".into());
    }
    points
}

/// A stream-K kernel's last slot: when thread 0 (the first role's) leaves the data-parallel
/// tiles for its first shared-out run.
pub(crate) fn shared_out_slot(k: &Kernel) -> u32 {
    let roles = k.roles.iter().count() as u32;
    SLOT_PROLOGUE
        + 1
        + (ROLE_POINTS.len() as u32) * roles
        + (FIXUP_POINTS.len() * fixup_roles(k).len()) as u32
}

/// The roles that run a stream-K fix-up (the owners of `lm.stream_fixup`'s fragments), in
/// declaration order.
fn fixup_roles(k: &Kernel) -> Vec<RoleId> {
    let owners: Vec<RoleId> = k
        .stmts
        .iter()
        .filter_map(|(_, s)| match s {
            Stmt::Op(Op::StreamFixup { frag }) => Some(k.fragments[*frag].role),
            _ => None,
        })
        .collect();
    k.roles
        .iter()
        .map(|(r, _)| r)
        .filter(|r| owners.contains(r))
        .collect()
}

fn role_index(k: &Kernel, role: RoleId) -> u32 {
    k.roles.iter().position(|(r, _)| r == role).unwrap_or(0) as u32
}

/// A role's slot for `what` (an index into [`ROLE_POINTS`]), as [`timeline_points`] lays
/// them out.
fn role_slot(k: &Kernel, role: RoleId, what: u32) -> u32 {
    SLOT_PROLOGUE + 1 + ROLE_POINTS.len() as u32 * role_index(k, role) + what
}

/// A role's slot for a fix-up point (stream-K kernels only).
fn fixup_slot(k: &Kernel, role: RoleId, what: FixupPoint) -> u32 {
    let roles = k.roles.iter().count() as u32;
    let index = fixup_roles(k).iter().position(|r| *r == role).unwrap_or(0) as u32;
    SLOT_PROLOGUE
        + 1
        + ROLE_POINTS.len() as u32 * roles
        + FIXUP_POINTS.len() as u32 * index
        + what as u32
}

impl Emitter<'_> {
    /// The stamp for a role point, by the role's first thread of its first replica.
    fn role_stamp(&mut self, role: RoleId, what: u32, text: &str) {
        let slot = role_slot(self.k, role, what);
        self.stamp_in_role(role, slot, text);
    }

    /// The stamp of `slot`, by `role`'s first thread of its first replica.
    fn stamp_in_role(&mut self, role: RoleId, slot: u32, text: &str) {
        let name = c_ident(&self.k.roles[role].name);
        self.line(&format!(
            "CAKE_STAMP({name}_thread == 0 && {name}_index == 0, {slot});  // timeline: role {} {text}",
            self.k.roles[role].name
        ));
    }

    pub(crate) fn stamp_role_start(&mut self, role: RoleId) {
        let name = c_ident(&self.k.roles[role].name);
        self.line(&format!("CAKE_STAMP_FLAG({name}_stamped_wait);"));
        self.role_stamp(role, 0, "starts");
        self.stamped_first_wait = false;
    }

    pub(crate) fn stamp_role_end(&mut self, role: RoleId) {
        self.role_stamp(role, 2, "ends");
    }

    /// A stream-K fix-up point of `role` (its first thread of its first replica).
    pub(crate) fn stamp_fixup(&mut self, role: RoleId, what: FixupPoint) {
        let slot = fixup_slot(self.k, role, what);
        let text = match what {
            FixupPoint::Publish => "partial published",
            FixupPoint::Wait => "waits for the tile's partials",
            FixupPoint::Done => "partials added",
        };
        self.stamp_in_role(role, slot, text);
    }

    /// After the role's first wait in program order: the first time any run reaches it.
    pub(crate) fn stamp_first_wait(&mut self, role: RoleId) {
        if self.stamped_first_wait {
            return;
        }
        self.stamped_first_wait = true;
        let name = c_ident(&self.k.roles[role].name);
        let slot = role_slot(self.k, role, 1);
        self.line(&format!(
            "CAKE_STAMP_ONCE({name}_thread == 0 && {name}_index == 0, {slot}, {name}_stamped_wait);  // timeline: first completed wait"
        ));
    }
}

/// The launch metadata of a timeline build: the buffer and its length as the kernel's last two
/// arguments, and the layout marked as compiled in.
pub fn enable_timeline(launch: &mut crate::LaunchMeta) {
    launch.tensors.push(TensorMeta {
        name: TIMELINE_TENSOR.into(),
        dtype: "i64".into(),
        dims: vec![serde_json::json!(TIMELINE_LEN)],
        access: "write".into(),
    });
    launch.args.push(Arg::Ptr {
        tensor: TIMELINE_TENSOR.into(),
    });
    launch.args.push(Arg::Dim {
        name: TIMELINE_LEN.into(),
    });
    if let Some(t) = launch.timeline.as_mut() {
        t.enabled = true;
    }
}

/// The layout every kernel's launch metadata describes (not compiled in).
pub(crate) fn timeline_meta(k: &Kernel) -> Timeline {
    let points = timeline_points(k);
    Timeline {
        slots: points.len() as u32,
        points,
        enabled: false,
    }
}

/// The source of a timeline build: `cuda` with the stamps compiled in.
pub fn timeline_source(cuda: &str) -> String {
    format!("#define CAKE_TIMELINE 1\n{cuda}")
}
