//! The tcgen05 backend (sm_100a, sm_103a): MMAs into tensor memory (TMEM), issued by one thread
//! and completed asynchronously, signalled by `tcgen05.commit` to an mbarrier. What it adds to
//! the walk — TMEM allocation and deallocation, `tcgen05.mma` with its descriptors, commits,
//! TMEM loads, stores and copies, and the `tcgen05.fence::*_thread_sync` fences around barrier
//! handoffs — is here; fragments read out of TMEM (one row per thread) are ordinary register
//! layouts the emitter evaluates itself.
//!
//! Section numbers are those of the PTX ISA 9.1 (§9.7.16 "TensorCore 5th Generation Family
//! Instructions"). Nothing here has run on hardware: ptxas accepts it, and the descriptor
//! encoders are unit-tested against values derived by hand from the ISA's tables.

use super::{check_sw128_operand, MmaBackend, MmaCall};
use crate::emit::*;
use crate::legal::{self, Checker, Planner, Scope};
use cake_diag::Span;
use cake_ir::*;
use cake_target::Target;

/// The operand types of a dense `tcgen05.mma`, which choose its kind and the descriptor's type
/// codes (Table 42, bits 7-9 / 10-12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Inputs {
    /// `.kind::f16`, both operands F16 (code 0) or both BF16 (code 1).
    F16,
    BF16,
    /// `.kind::f8f6f4` with 8-bit operands, each E4M3 (code 0) or E5M2 (code 1).
    F8 {
        a: DType,
        b: DType,
    },
}

impl Inputs {
    fn of(a: DType, b: DType) -> Result<Inputs, String> {
        match (a, b) {
            (DType::BF16, DType::BF16) => Ok(Inputs::BF16),
            (DType::F16, DType::F16) => Ok(Inputs::F16),
            _ if a.is_fp8() && b.is_fp8() => Ok(Inputs::F8 { a, b }),
            (x, y) => Err(format!(
                "tcgen05.mma with {x} x {y} inputs is not lowered yet (bf16, f16 and FP8 are)"
            )),
        }
    }

    /// The descriptor's atype and btype codes.
    fn codes(self) -> (u32, u32) {
        let f8 = |d: DType| u32::from(d == DType::E5M2);
        match self {
            Inputs::F16 => (0, 0),
            Inputs::BF16 => (1, 1),
            Inputs::F8 { a, b } => (f8(a), f8(b)),
        }
    }

    /// The instruction's `.kind` and the wrapper that issues it.
    fn kind(self) -> &'static str {
        match self {
            Inputs::F16 | Inputs::BF16 => "f16",
            Inputs::F8 { .. } => "f8f6f4",
        }
    }

    /// K of one instruction, the target table's (`cake_target::mma_instr_k`): 32 bytes of a
    /// K-major row, 16 for 16-bit inputs and 32 for FP8.
    fn k_step(self) -> u32 {
        let a = match self {
            Inputs::F16 => DType::F16,
            Inputs::BF16 => DType::BF16,
            Inputs::F8 { a, .. } => a,
        };
        cake_target::mma_instr_k(cake_target::MmaFamily::Tcgen05, a).unwrap_or(16)
    }
}

/// The 32-bit instruction descriptor of a dense `tcgen05.mma ... .kind::f16` or
/// `.kind::f8f6f4` (PTX ISA
/// §9.7.16.4.2, Table 42 "Instruction descriptor format for .kind::tf32, .kind::f16,
/// .kind::f8f6f4 and .kind::i8"):
///
/// | bits  | field                         | value here                       |
/// |-------|-------------------------------|----------------------------------|
/// | 0-1   | sparsity selector             | 0                                |
/// | 2     | sparsity                      | 0 (dense)                        |
/// | 3     | saturate                      | 0                                |
/// | 4-5   | dtype (D)                     | F16 = 0, F32 = 1                 |
/// | 6     | reserved                      | 0                                |
/// | 7-9   | atype                         | F16 = 0, BF16 = 1; E4M3 = 0, E5M2 = 1 |
/// | 10-12 | btype                         | F16 = 0, BF16 = 1; E4M3 = 0, E5M2 = 1 |
/// | 13,14 | negate A, negate B            | 0                                |
/// | 15    | transpose A (1 = M-major)     | `a_mn_major`                     |
/// | 16    | transpose B (1 = N-major)     | `b_mn_major`                     |
/// | 17-22 | N >> 3                        |                                  |
/// | 23    | reserved                      | 0                                |
/// | 24-28 | M >> 4                        |                                  |
/// | 29    | reserved                      | 0                                |
/// | 30-31 | max shift (`.ws` only)        | 0                                |
fn idesc(input: Inputs, acc_f32: bool, m: u32, n: u32, a_mn_major: bool, b_mn_major: bool) -> u32 {
    let (a_ty, b_ty) = input.codes();
    (u32::from(acc_f32) << 4)
        | (a_ty << 7)
        | (b_ty << 10)
        | (u32::from(a_mn_major) << 15)
        | (u32::from(b_mn_major) << 16)
        | (((n >> 3) & 0x3F) << 17)
        | (((m >> 4) & 0x1F) << 24)
}

/// Swizzle modes of the tcgen05 shared-memory descriptor (§9.7.16.4.1, bits 61-63).
fn smem_desc_swizzle(swizzle_bytes: u32) -> Option<u64> {
    match swizzle_bytes {
        0 => Some(0),
        128 => Some(2),
        64 => Some(4),
        32 => Some(6),
        _ => None,
    }
}

/// The 64-bit shared-memory matrix descriptor of `tcgen05.mma` (PTX ISA §9.7.16.4.1, "Shared
/// memory descriptor"):
///
/// | bits  | field                                            |
/// |-------|--------------------------------------------------|
/// | 0-13  | matrix start address >> 4                        |
/// | 16-29 | leading-dimension byte offset (LBO) >> 4         |
/// | 32-45 | stride-dimension byte offset (SBO) >> 4          |
/// | 46-48 | fixed constant 0b001                             |
/// | 49-51 | matrix base offset                               |
/// | 52    | LBO mode (0 = relative offset)                   |
/// | 53-60 | fixed 0                                          |
/// | 61-63 | swizzle: 0 none, 1 128B/32B-atom, 2 128B, 4 64B, 6 32B |
///
/// Differences from the sm_90 wgmma descriptor (§9.7.15.5.1.2.2): bits 46-48 must hold the
/// constant 0b001 (wgmma leaves them 0); the swizzle field is 3 bits at 61-63 instead of 2 at
/// 62-63 — for 128B/64B/32B the values (2, 4, 6 at bit 61 against 1, 2, 3 at bit 62) set the
/// same bits, and 1 (128B with 32-byte atoms) is new; bit 52 selects the LBO mode.
fn smem_desc(addr: u32, lbo: u32, sbo: u32, base_offset: u32, swizzle_mode: u64) -> u64 {
    (u64::from((addr & 0x3FFFF) >> 4))
        | (u64::from((lbo >> 4) & 0x3FFF) << 16)
        | (u64::from((sbo >> 4) & 0x3FFF) << 32)
        | (1u64 << 46)
        | (u64::from(base_offset & 0x7) << 49)
        | ((swizzle_mode & 0x7) << 61)
}

/// The constant part of the descriptor of a K-major, 128B-swizzled operand (a tcgen05.mma K
/// step, or the tcgen05.cp of one). LBO / SBO as the ISA defines them for swizzled layouts
/// (§9.7.15.5.1.2.1.1-2, used by tcgen05's relative LBO mode, §9.7.16.3.1.1), in a matrix
/// normalised to 128-bit elements: LBO "not used, assumed to be 1" (16 B); SBO = from the first
/// 8 rows to the next 8 rows = 8 × 128 B.
fn k_major_sw128_desc() -> u64 {
    smem_desc(0, 16, 1024, 0, smem_desc_swizzle(128).expect("128B"))
}

/// tcgen05 helpers (sm_100a, sm_103a).
const PRELUDE: &str = r#"
// tcgen05 / tensor memory (PTX ISA 9.1 §9.7.16). One warp allocates; the base address lands in
// shared memory (§9.7.16.1.2, §9.7.16.7).
static __device__ __forceinline__ void cake_tmem_alloc(uint32_t slot, uint32_t ncols) {
  asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;" :: "r"(slot), "r"(ncols) : "memory");
}
static __device__ __forceinline__ void cake_tmem_relinquish() {
  asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
static __device__ __forceinline__ void cake_tmem_dealloc(uint32_t taddr, uint32_t ncols) {
  asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" :: "r"(taddr), "r"(ncols) : "memory");
}
static __device__ __forceinline__ uint32_t cake_ld_shared_b32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
// Order tcgen05 operations across a thread synchronisation (patterns of §9.7.16.6.4): `before` ahead of the
// arrive/barrier that publishes them, `after` behind the wait/barrier that observes them.
static __device__ __forceinline__ void cake_tcgen05_fence_before() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
static __device__ __forceinline__ void cake_tcgen05_fence_after() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}
// D[tmem] (+)= A[smem] * B[smem], one thread issues (tcgen05.mma, §9.7.16.10). `accumulate` is enable-input-d.
static __device__ __forceinline__ void cake_tcgen05_mma_f16_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc, uint32_t accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}"
      :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate) : "memory");
}
// D[tmem] (+)= A[tmem] * B[smem]: A read from tensor memory (K-major, 16-bit elements packed two
// per 32-bit column), one thread issues (tcgen05.mma, §9.7.16.10).
static __device__ __forceinline__ void cake_tcgen05_mma_f16_ts(uint32_t d_tmem, uint32_t a_tmem, uint64_t b_desc, uint32_t idesc, uint32_t accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f16 [%0], [%1], %2, %3, p;\n\t}"
      :: "r"(d_tmem), "r"(a_tmem), "l"(b_desc), "r"(idesc), "r"(accumulate) : "memory");
}
// Shared memory -> TMEM, 128 lanes x 256 bits, one thread issues (tcgen05.cp, §9.7.16.9.2); the
// source is described like an MMA operand.
static __device__ __forceinline__ void cake_tcgen05_cp_128x256b(uint32_t tmem, uint64_t s_desc) {
  asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" :: "r"(tmem), "l"(s_desc) : "memory");
}
// Stores by tcgen05.st are complete (visible to later tcgen05 operations once fenced) after this
// (tcgen05.wait).
static __device__ __forceinline__ void cake_tmem_wait_st() {
  asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
}
// One arrival on the mbarrier once every tcgen05 operation this thread issued before has
// completed (§9.7.16.12.1).
static __device__ __forceinline__ void cake_tcgen05_commit(uint32_t bar) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];" :: "r"(bar) : "memory");
}
// The same arrival, on the mbarrier at the same offset in every CTA of `mask` (a cluster barrier).
static __device__ __forceinline__ void cake_tcgen05_commit_multicast(uint32_t bar, uint16_t mask) {
  asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;" :: "r"(bar), "h"(mask) : "memory");
}
// Registers written by tcgen05.ld are valid only after this (tcgen05.wait).
static __device__ __forceinline__ void cake_tmem_wait_ld() {
  asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
}
// Shared-memory descriptor (§9.7.16.4.1): the start address (bits 0-13) or'ed with the constant
// part the compiler derived (LBO, SBO, the fixed 0b001 at bits 46-48, swizzle at 61-63).
static __device__ __forceinline__ uint64_t cake_umma_desc(uint32_t addr, uint64_t fixed) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | fixed;
}
"#;

/// `.kind::f8f6f4` with both operands in shared memory, in the prelude of kernels with FP8 MMAs.
const F8F6F4_SS: &str = r#"
// D[tmem] (+)= A[smem] * B[smem] for 8-bit operands (E4M3 or E5M2, as the instruction descriptor says): 32 of K each.
static __device__ __forceinline__ void cake_tcgen05_mma_f8f6f4_ss(uint32_t d_tmem, uint64_t a_desc, uint64_t b_desc, uint32_t idesc, uint32_t accumulate) {
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.b32 p, %4, 0;\n\t"
      "tcgen05.mma.cta_group::1.kind::f8f6f4 [%0], %1, %2, %3, p;\n\t}"
      :: "r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate) : "memory");
}
"#;

/// `tcgen05.ld.sync.aligned.32x32b.x32.b32`: 32 consecutive columns of this warp's 32 lanes, one
/// lane per thread (tcgen05.ld, shape 32x32b: thread t of the warp gets lane base + t).
fn tmem_ld_fn() -> String {
    let mut out = String::from(
        "static __device__ __forceinline__ void cake_tmem_ld_32x32b_x32(uint32_t taddr, float* r) {\n  asm volatile(\n      \"tcgen05.ld.sync.aligned.32x32b.x32.b32 {\"\n",
    );
    let regs: Vec<String> = (0..32).map(|i| format!("%{i}")).collect();
    for (i, chunk) in regs.chunks(8).enumerate() {
        let sep = if i == 3 { "}, [%32];\"" } else { ", \"" };
        out.push_str(&format!("      \"{}{sep}\n", chunk.join(", ")));
    }
    let outs: Vec<String> = (0..32).map(|i| format!("\"=f\"(r[{i}])")).collect();
    out.push_str("      : ");
    for (i, chunk) in outs.chunks(8).enumerate() {
        if i > 0 {
            out.push_str(",\n        ");
        }
        out.push_str(&chunk.join(", "));
    }
    out.push_str("\n      : \"r\"(taddr) : \"memory\");\n}\n");
    out
}

/// `tcgen05.st.sync.aligned.32x32b.x32.b32`: the store counterpart of `tmem_ld_fn`.
fn tmem_st_fn() -> String {
    let mut out = String::from(
        "static __device__ __forceinline__ void cake_tmem_st_32x32b_x32(uint32_t taddr, const uint32_t* r) {\n  asm volatile(\n      \"tcgen05.st.sync.aligned.32x32b.x32.b32 [%0], {\"\n",
    );
    let regs: Vec<String> = (1..=32).map(|i| format!("%{i}")).collect();
    for (i, chunk) in regs.chunks(8).enumerate() {
        let sep = if i == 3 { "};\"" } else { ", \"" };
        out.push_str(&format!("      \"{}{sep}\n", chunk.join(", ")));
    }
    let ins: Vec<String> = (0..32).map(|i| format!("\"r\"(r[{i}])")).collect();
    out.push_str("      :: \"r\"(taddr),\n        ");
    for (i, chunk) in ins.chunks(8).enumerate() {
        if i > 0 {
            out.push_str(",\n        ");
        }
        out.push_str(&chunk.join(", "));
    }
    out.push_str(" : \"memory\");\n}\n");
    out
}

pub(crate) struct Tcgen05;

impl MmaBackend for Tcgen05 {
    /// The warpgroup register layouts (as on sm_90a), then the fragments filled from TMEM.
    fn plan_layouts(&self, p: &mut Planner) {
        p.infer_warpgroup_layouts();
        p.infer_tmem_fragment_layouts();
    }

    /// The MMA's conditions, then what its emission evaluates: the accumulate flag, and for the
    /// first k-step `b`'s stage (N-major) or descriptor, then `a`'s descriptor (from shared
    /// memory), either of which stops the MMA when not lowered.
    fn check_mma(&self, c: &mut Checker, m: &MmaCall) {
        let form = match mma_form(c.k, c.target, m) {
            Ok(form) => form,
            Err(msg) => return c.unsupported(m.sp, msg),
        };
        c.ix(m.accumulate);
        if let Operand::Tmem(acc) = m.acc {
            c.tmem_stage(acc);
        }
        if form.kdim / 16 == 0 {
            return;
        }
        if form.b_mn_major {
            c.view_base(form.b);
        } else if !check_sw128_operand(c, form.b, m.sp) {
            return;
        }
        match m.a {
            Operand::Smem(av) => {
                check_sw128_operand(c, av, m.sp);
            }
            Operand::Tmem(at) => c.tmem_stage(at),
            Operand::Frag(_) => {}
        }
    }

    fn family_ops(&self) -> &'static [&'static str] {
        &["Commit", "TmemLoad", "TmemStore", "TmemCopy"]
    }

    fn check_family_op(&self, c: &mut Checker, op: &Op, sp: Span) {
        match op {
            Op::TmemLoad { dst, src } => {
                c.tmem_stage(src);
                if let Some(FragLayout::TmemRow { .. }) = c.layout(*dst) {
                    c.invalidate(*dst);
                }
            }
            Op::TmemStore { dst, src: value } => {
                c.tmem_stage(dst);
                match tmem_store_form(c.k, dst, *value, |e| c.tile_of(e), |e| c.row_elementwise(e))
                {
                    Err(m) => c.unsupported(sp, m),
                    Ok((inner, ..)) => {
                        c.precompute_reductions(inner);
                        c.elem(inner, Site::Lane);
                    }
                }
            }
            Op::TmemCopy { dst, src } => match tmem_copy_form(c.k, dst.region, src) {
                Err(m) => c.unsupported(sp, m),
                Ok(kdim) => {
                    c.tmem_stage(dst);
                    if kdim / 16 > 0 {
                        check_sw128_operand(c, src, sp);
                    }
                }
            },
            _ => {}
        }
    }

    fn prelude(&self, e: &Emitter, out: &mut String) {
        out.push_str(PRELUDE);
        out.push('\n');
        let fp8 = |o: &Operand| matches!(o, Operand::Smem(v) if e.k.views[v.view].dtype.is_fp8());
        if e.kf
            .ops
            .iter()
            .any(|site| matches!(&site.op, Op::Mma { a, .. } if fp8(a)))
        {
            out.push_str(F8F6F4_SS);
        }
        out.push_str(&tmem_ld_fn());
        out.push('\n');
        out.push_str(&tmem_st_fn());
    }

    fn after_wait(&self, e: &mut Emitter, role: RoleId) {
        if e.role_uses_tcgen05(role) {
            e.line("cake_tcgen05_fence_after();");
        }
    }

    fn before_arrive(&self, e: &mut Emitter, role: RoleId) {
        if e.role_uses_tcgen05(role) {
            e.line("cake_tcgen05_fence_before();");
        }
    }

    fn mma(&self, e: &mut Emitter, m: &MmaCall) {
        e.tcgen05_mma_op(m);
    }

    fn commit(&self, e: &mut Emitter, barrier: BarrierId, sp: Span) {
        e.tcgen05_commit(barrier, sp);
    }

    fn tmem_load(&self, e: &mut Emitter, dst: FragId, src: &TmemRef, sp: Span) {
        e.tmem_load(dst, src, sp);
    }

    fn tmem_store(&self, e: &mut Emitter, dst: &TmemRef, value: ExprId, sp: Span) {
        e.tmem_store(dst, value, sp);
    }

    fn tmem_copy(&self, e: &mut Emitter, dst: &TmemRef, src: &ViewRef, sp: Span) {
        e.tmem_copy(dst, src, sp);
    }
}

/// A `tcgen05.mma` as lowered: `b`, whether it is N-major, the input type, M, N and K.
struct MmaForm<'o> {
    b: &'o ViewRef,
    b_mn_major: bool,
    input: Inputs,
    m: u32,
    n: u32,
    kdim: u32,
    a_name: String,
}

/// The conditions of an `lm.mma` on a tcgen05 target: a TMEM accumulator (a register one would
/// be mma.sync, not lowered here — never wgmma, which these targets lack), `a` a K-major view or
/// a TMEM region, `b` a 2-D 128B-swizzled view, bf16 or f16 inputs, M = 128, N in 16..=256.
/// (The operand descriptors' conditions are checked per k-step, as they are emitted.)
fn mma_form<'o>(k: &Kernel, target: &Target, call: &MmaCall<'o>) -> Result<MmaForm<'o>, String> {
    let Operand::Tmem(acc) = call.acc else {
        return Err(format!(
            "on {}, an MMA with a register accumulator is mma.sync, which is not lowered yet; a TMEM accumulator (lm.tmem) is tcgen05.mma, which is",
            target.name
        ));
    };
    let Operand::Smem(bv) = call.b else {
        return Err(format!(
            "on {}, lm.mma reads `b` from shared memory",
            target.name
        ));
    };
    let vb = &k.views[bv.view];
    // `a`: a K-major view (as stored, (M, K)), or a TMEM region (M lanes, K packed columns).
    let (a_dtype, m, kdim, a_name) = match call.a {
        Operand::Smem(av) if !av.transposed => {
            let va = &k.views[av.view];
            (
                va.dtype,
                av.rows.map_or(va.shape[0], |(_, n)| n),
                va.shape[1],
                va.name.clone(),
            )
        }
        Operand::Tmem(t) => {
            let r = &k.tmems[t.region];
            if r.shape.len() != 2
                || r.lanes != 128
                || r.dtype.bytes() != 2
                || r.shape[1] / 2 > r.cols
            {
                return Err(format!("a TMEM `a` operand is lowered from a 16-bit region of 128 lanes holding its K elements two per column; `{}` is {:?} {} over {} columns", r.name, r.shape, r.dtype, r.cols));
            }
            (r.dtype, r.shape[0], r.shape[1], r.name.clone())
        }
        _ => {
            return Err("`a` is lowered as a view stored (M, K) (K-major) or a TMEM region; an M-major `a` (`.T`) is not lowered yet".into());
        }
    };
    // `b`: `.T` of an (N, K) view is K-major; an untransposed (K, N) view is N-major.
    let b_mn_major = !bv.transposed;
    if b_mn_major && vb.shape.len() == 2 && vb.panels() != 1 {
        return Err(
            "an N-major `b` is lowered when N fits one swizzle span (N × element bytes ≤ swizzle)"
                .into(),
        );
    }
    let input = Inputs::of(a_dtype, vb.dtype)?;
    if matches!(input, Inputs::F8 { .. }) && b_mn_major {
        return Err("an FP8 `b` is lowered K-major (`.T` of an (N, K) view)".into());
    }
    if !kdim.is_multiple_of(input.k_step()) {
        return Err(format!(
            "tcgen05.mma steps K by {} for {} inputs; `a`'s K is {kdim}",
            input.k_step(),
            a_dtype
        ));
    }
    if vb.shape.len() != 2 || vb.swizzle != 128 {
        return Err(format!("tcgen05.mma operands are lowered from 2-D views with 128B swizzle; `{}` has swizzle {}", vb.name, vb.swizzle));
    }
    let region = &k.tmems[acc.region];
    let n = if b_mn_major {
        vb.shape[1]
    } else {
        bv.rows.map_or(vb.shape[0], |(_, n)| n)
    };
    if region.dtype != DType::F32 || region.lanes != 128 || m != 128 {
        return Err(format!("tcgen05.mma is lowered for M = 128 with an f32 accumulator over 128 lanes; `{}` is {} over {} lanes, M = {m}", region.name, region.dtype, region.lanes));
    }
    if !n.is_multiple_of(16) || !(16..=256).contains(&n) || n > region.cols {
        return Err(format!("tcgen05.mma is lowered for N in 16..=256, a multiple of 16, within the region's columns; N = {n}"));
    }
    Ok(MmaForm {
        b: bv,
        b_mn_major,
        input,
        m,
        n,
        kdim,
        a_name,
    })
}

/// The conditions of `lm.tmem_store(region, value)`: an f32 region takes an f32 value, a 16-bit
/// one a cast to its type; the value element-wise over a TMEM tile of the region's width, 32
/// columns per store. The value to evaluate, its packed type and the tile's columns.
fn tmem_store_form(
    k: &Kernel,
    dst: &TmemRef,
    value: ExprId,
    tile_of: impl Fn(ExprId) -> Option<FragLayout>,
    row_elementwise: impl Fn(ExprId) -> bool,
) -> Result<(ExprId, Option<DType>, u32, u32), String> {
    let (region, cols) = (&k.tmems[dst.region], dst.cols);
    let (inner, packed) = match legal::cast_to_16bit(k, value, region.dtype) {
        _ if region.dtype == DType::F32 => (value, None),
        Some((inner, d)) => (inner, Some(d)),
        None => return Err(format!("lm.tmem_store into the {} region `{}` is lowered for an f32 value, or lm.cast(value, lm.{}) of one", region.dtype, region.name, region.dtype)),
    };
    let n = match tile_of(inner) {
        Some(FragLayout::TmemRow { n }) if row_elementwise(inner) => n,
        _ => return Err("lm.tmem_store is lowered for element-wise values of a tile read from TMEM (one row per thread)".into()),
    };
    let words = if packed.is_some() { n / 2 } else { n };
    let width = cols.map_or(region.shape.get(1).copied().unwrap_or(0), |c| c.count);
    let first = tmem_first_word(cols, packed.is_some())?;
    if region.lanes != 128
        || region.shape.len() != 2
        || width != n
        || !words.is_multiple_of(32)
        || first + words > region.cols
    {
        return Err(format!("lm.tmem_store is lowered for 128-lane regions (or column ranges of them) written 32 columns at a time; `{}` is {:?} over {} columns, the value {n} wide", region.name, region.shape, region.cols));
    }
    Ok((inner, packed, n, first))
}

/// The first 32-bit TMEM column a column range starts at (0 for a whole region): its first
/// element's, two 16-bit elements to a column. The lowering moves 32 columns per instruction
/// from a multiple of 32.
fn tmem_first_word(cols: Option<TmemCols>, packed: bool) -> Result<u32, String> {
    let Some(c) = cols else { return Ok(0) };
    let per_word = if packed { 2 } else { 1 };
    let word = c.start / per_word;
    if !c.start.is_multiple_of(per_word) || !word.is_multiple_of(32) {
        return Err(format!(
            "a TMEM column range is lowered from a multiple of 32 columns (of {} elements); `.cols({}, {})` starts at column {}",
            per_word * 32,
            c.start,
            c.count,
            c.start as f64 / per_word as f64
        ));
    }
    Ok(word)
}

/// The conditions of `lm.tmem_copy(region, view)`: what a tcgen05.mma `a` operand would read
/// (a (128, K) 16-bit view with 128B swizzle, as stored) into a region of the same dtype and K
/// over 128 lanes. K.
fn tmem_copy_form(k: &Kernel, dst: TmemId, src: &ViewRef) -> Result<u32, String> {
    let (region, view) = (&k.tmems[dst], &k.views[src.view]);
    let rows = src.rows.map_or(view.shape[0], |(_, n)| n);
    let ok = !src.transposed
        && view.shape.len() == 2
        && view.swizzle == 128
        && rows == 128
        && region.lanes == 128
        && region.dtype.bytes() == 2
        && region.dtype == view.dtype
        && region.shape.len() == 2
        && region.shape[1] == view.shape[1]
        && view.shape[1].is_multiple_of(16)
        && view.shape[1] / 2 <= region.cols;
    if !ok {
        return Err(format!("lm.tmem_copy is lowered from a (128, K) 16-bit view with 128B swizzle, as stored, into a region of the same dtype and K over 128 lanes (two elements per column); `{}` is {:?} {} (swizzle {}) and `{}` {:?} {} over {} lanes", view.name, view.shape, view.dtype, view.swizzle, region.name, region.shape, region.dtype, region.lanes));
    }
    Ok(view.shape[1])
}

/// How a TMEM transfer's comment names where a column range starts.
fn from_column(first: u32) -> String {
    if first == 0 {
        String::new()
    } else {
        format!(" from column {first}")
    }
}

impl Planner<'_> {
    /// Fragments filled by `lm.tmem_load`: one TMEM lane (row) per thread of a warpgroup.
    fn infer_tmem_fragment_layouts(&mut self) {
        let kf = self.kf;
        for (sid, op) in kf.ops.iter().map(|s| (s.stmt, &s.op)) {
            let Op::TmemLoad { dst, src } = op else {
                continue;
            };
            let frag = &self.k.fragments[*dst];
            let role = &self.k.roles[frag.role];
            let region = &self.k.tmems[src.region];
            let sp = self.k.stmts.span(sid);
            if role.unit != RoleUnit::Warpgroup
                || frag.shape.len() != 2
                || frag.shape[0] != 128
                || frag.dtype != DType::F32
                || region.dtype != DType::F32
                || region.lanes != 128
                || !frag.shape[1].is_multiple_of(32)
                || frag.shape[1] > region.cols
            {
                self.unsupported(sp, format!("lm.tmem_load is lowered into a (128, N) f32 fragment of a warpgroup role (N a multiple of 32) from an f32 region of 128 lanes; `{}` is {:?} {} on role `{}`", frag.name, frag.shape, frag.dtype, role.name));
                continue;
            }
            match tmem_first_word(src.cols, false) {
                Err(m) => {
                    self.unsupported(sp, m);
                    continue;
                }
                Ok(first) if first + frag.shape[1] > region.cols => {
                    self.unsupported(
                        sp,
                        format!(
                            "columns {first}..{} of `{}` are past its {} TMEM columns",
                            first + frag.shape[1],
                            region.name,
                            region.cols
                        ),
                    );
                    continue;
                }
                Ok(_) => {}
            }
            self.frag_layouts
                .insert(*dst, FragLayout::TmemRow { n: frag.shape[1] });
        }
        // Per-row vectors of a warpgroup role: one value per thread, its TMEM lane.
        for (f, frag) in self.k.fragments.iter() {
            if !self.frag_layouts.contains_key(&f)
                && self.k.roles[frag.role].unit == RoleUnit::Warpgroup
                && frag.shape == [128]
            {
                self.frag_layouts.insert(f, FragLayout::LaneScalar);
            }
        }
    }
}

impl Emitter<'_> {
    /// Whether the role issues or reads tcgen05 work (MMAs into TMEM, TMEM transfers, commits).
    fn role_uses_tcgen05(&self, role: RoleId) -> bool {
        self.role_ops(role).any(|s| {
            let e = &s.effects;
            !e.tmem_reads.is_empty()
                || !e.tmem_writes.is_empty()
                || e.barriers.iter().any(|(_, u)| *u == BarrierUse::Commit)
        })
    }

    /// `lm.tmem_store(region, value)`: each warp writes its 32-lane quarter, 32 columns per
    /// `tcgen05.st`, then waits for the stores. An f32 region takes the value's bits; a bf16/f16
    /// region takes `lm.cast(value, that dtype)` packed two elements per 32-bit column (lower
    /// column in the low half).
    fn tmem_store(&mut self, dst: &TmemRef, value: ExprId, sp: Span) {
        let k = self.k;
        let region = k.tmems[dst.region].clone();
        let (inner, pack, n, first) = match tmem_store_form(
            k,
            dst,
            value,
            |e| self.tile_of(e),
            |e| self.row_elementwise(e),
        ) {
            Ok((inner, packed, n, first)) => (inner, packed.map(pack_fn), n, first),
            Err(m) => return self.unsupported(sp, m),
        };
        let words = if pack.is_some() { n / 2 } else { n };
        self.precompute_reductions(inner);
        let v = self.elem(inner, Site::Lane);
        let addr = self.tmem_addr(dst);
        self.line(&format!(
            "// tmem_store {} ({}): this warp's 32 lanes, {words} column(s){}",
            region.name,
            self.loc(sp),
            from_column(first)
        ));
        self.braced("{", |e| {
            e.line(&format!(
                "const uint32_t taddr = {addr} + ((uint32_t)(32 * (warp % 4)) << 16);  // lane in bits 16-31"
            ));
            for w0 in (0..words).step_by(32) {
                e.braced("{", |e| {
                    e.line("uint32_t r[32];");
                    e.unrolled("for (int w = 0; w < 32; ++w) {", |e| match pack {
                        Some(f) => {
                            e.line("float v[2];");
                            e.line("#pragma unroll");
                            e.line(&format!(
                                "for (int j = 0; j < 2; ++j) {{ const int c = 2 * ({w0} + w) + j; v[j] = {v}; }}"
                            ));
                            e.line(&format!("r[w] = {f}(v[0], v[1]);"));
                        }
                        None => {
                            e.line(&format!("const int c = {w0} + w;"));
                            e.line(&format!("r[w] = __float_as_uint({v});"));
                        }
                    });
                    e.line(&format!(
                        "cake_tmem_st_32x32b_x32(taddr + {}, r);",
                        first + w0
                    ));
                });
            }
            e.line("cake_tmem_wait_st();");
        });
    }

    /// `lm.tmem_load(frag, region)`: each warp of the warpgroup reads its 32-lane quarter
    /// (warp w: lanes 32·(w mod 4)..+31, the access restriction of §9.7.16.1) 32 columns at a
    /// time, then waits.
    fn tmem_load(&mut self, dst: FragId, src: &TmemRef, sp: Span) {
        let Some(FragLayout::TmemRow { n }) = self.frag_layouts.get(&dst).copied() else {
            return;
        };
        // The planner refused a range it cannot start at.
        let Ok(first) = tmem_first_word(src.cols, false) else {
            return;
        };
        let name = self.frag_name(dst);
        let addr = self.tmem_addr(src);
        self.line(&format!(
            "// tmem_load {} <- {} ({}): this warp's 32 lanes, {n} columns{}",
            self.k.fragments[dst].name,
            self.k.tmems[src.region].name,
            self.loc(sp),
            from_column(first)
        ));
        self.braced("{", |e| {
            e.line(&format!(
                "const uint32_t taddr = {addr} + ((uint32_t)(32 * (warp % 4)) << 16);  // lane in bits 16-31"
            ));
            for c in (0..n).step_by(32) {
                e.line(&format!(
                    "cake_tmem_ld_32x32b_x32(taddr + {}, {name} + {c});",
                    first + c
                ));
            }
            e.line("cake_tmem_wait_ld();");
        });
        self.invalidate_reductions(Some(dst));
    }

    /// `lm.mma` with a TMEM accumulator: `tcgen05.mma.cta_group::1.kind::f16`, one instruction
    /// per 16-deep K step, issued by one thread; `release=` is a `tcgen05.commit` to the stage's
    /// mbarrier, which arrives when these MMAs (and every earlier one) have completed. A register
    /// accumulator (mma.sync) is not lowered (`mma_form`).
    fn tcgen05_mma_op(&mut self, call: &MmaCall) {
        let (a, accumulate, release, sp) = (call.a, call.accumulate, call.release, call.sp);
        let k = self.k;
        let MmaForm {
            b: bv,
            b_mn_major,
            input,
            m,
            n,
            kdim,
            a_name,
        } = match mma_form(k, self.target, call) {
            Ok(form) => form,
            Err(msg) => return self.unsupported(sp, msg),
        };
        let Operand::Tmem(acc) = call.acc else {
            return;
        };
        let vb = &k.views[bv.view];
        let region = &k.tmems[acc.region];
        let k_step = input.k_step();
        let kind = input.kind();
        let idesc = idesc(input, true, m, n, false, b_mn_major);
        let sw128 = smem_desc_swizzle(128).expect("128B");
        let fixed_k = k_major_sw128_desc();
        // N-major (the view's rows are K): SBO = "from the first 8 columns to the next 8
        // columns" = 8 K-rows × 128 B; LBO = "from the first (swizzle bytes / 16) rows to the
        // next" = from one 128-byte atom along N to the next, the panel stride (unused while N
        // fits one panel).
        let fixed_mn = smem_desc(0, super::n_major_panel_stride(vb), 1024, 0, sw128);
        let pred = self.ix(accumulate);
        let d = self.tmem_addr(acc);
        self.line(&format!(
            "// mma {} += {a_name} * {}{} ({}): tcgen05.mma M={m} N={n} K={k_step}, idesc {idesc:#010x}",
            region.name,
            vb.name,
            if b_mn_major { "" } else { ".T" },
            self.loc(sp)
        ));
        self.on_one_thread(|me| {
            for kk in 0..kdim / k_step {
                let bdesc = if b_mn_major {
                    let at = me.n_major_operand(bv, kk, k_step);
                    format!("cake_umma_desc({at}, {fixed_mn:#018x}ull)")
                } else {
                    let Some(bd) = me.wgmma_operand(bv, kk, k_step, sp) else {
                        return;
                    };
                    format!("cake_umma_desc({bd}, {fixed_k:#018x}ull)")
                };
                let acc_in = if kk == 0 {
                    format!("({pred}) ? 1u : 0u")
                } else {
                    "1u".into()
                };
                match a {
                    Operand::Tmem(t) => {
                        // 16 elements of 16 bits = 8 columns per K step (a TMEM `a` is 16-bit:
                        // `mma_form`).
                        let at = me.tmem_addr(t);
                        let col = kk * k_step / 2;
                        me.line(&format!(
                            "cake_tcgen05_mma_f16_ts({d}, {at} + {col}, {bdesc}, {idesc:#010x}u, {acc_in});"
                        ));
                    }
                    Operand::Smem(av) => {
                        let Some(ad) = me.wgmma_operand(av, kk, k_step, sp) else {
                            return;
                        };
                        me.line(&format!(
                            "cake_tcgen05_mma_{kind}_ss({d}, cake_umma_desc({ad}, {fixed_k:#018x}ull), {bdesc}, {idesc:#010x}u, {acc_in});"
                        ));
                    }
                    _ => return,
                }
            }
            if let Some(bar) = release {
                let commit = me.tcgen05_commit_call(bar);
                me.line(&format!(
                    "{commit};  // release {} when these MMAs complete",
                    k.barriers[bar].name
                ));
            }
        });
    }

    /// `lm.tmem_copy(region, view)`: `tcgen05.cp.cta_group::1.128x256b` per 16 elements of K,
    /// one thread issuing. The view is what a tcgen05.mma `a` operand would read (K-major,
    /// 128B swizzle, 128 rows), so each copy takes the same shared-memory descriptor as that
    /// MMA's K step, and lands in the region as a TMEM `a` operand is read: row r in lane r,
    /// 16-bit elements two per column, eight columns per step. tcgen05.cp and a later
    /// tcgen05.mma of the same thread run in issue order (§9.7.16.6.3), so an MMA may read the
    /// region right after.
    fn tmem_copy(&mut self, dst: &TmemRef, src: &ViewRef, sp: Span) {
        let k = self.k;
        let (region, view) = (&k.tmems[dst.region], &k.views[src.view]);
        let kdim = match tmem_copy_form(k, dst.region, src) {
            Ok(kdim) => kdim,
            Err(m) => return self.unsupported(sp, m),
        };
        let fixed_k = k_major_sw128_desc();
        let d = self.tmem_addr(dst);
        self.line(&format!(
            "// tmem_copy {} <- {} ({}): tcgen05.cp 128x256b, {} steps",
            region.name,
            view.name,
            self.loc(sp),
            kdim / 16
        ));
        self.on_one_thread(|me| {
            for kk in 0..kdim / 16 {
                let Some(desc) = me.wgmma_operand(src, kk, 16, sp) else {
                    return;
                };
                me.line(&format!(
                    "cake_tcgen05_cp_128x256b({d} + {}, cake_umma_desc({desc}, {fixed_k:#018x}ull));",
                    kk * 8
                ));
            }
        });
    }

    /// `lm.commit(bar)`: one arrival once every tcgen05 operation this thread issued completes.
    /// `tcgen05.commit` to `barrier`'s current slot; to a cluster barrier, multicast to every
    /// CTA of the cluster (`cake_ir::sync` counts one arrival per CTA).
    fn tcgen05_commit_call(&self, barrier: BarrierId) -> String {
        let slot = self.barrier_slot(barrier);
        let n = self.cluster_ctas();
        if self.k.barriers[barrier].cluster && n > 1 {
            format!(
                "cake_tcgen05_commit_multicast({slot}, {:#x})",
                (1u32 << n) - 1
            )
        } else {
            format!("cake_tcgen05_commit({slot})")
        }
    }

    fn tcgen05_commit(&mut self, barrier: BarrierId, sp: Span) {
        let (role, issue_only) = self.role.expect("role");
        let rname = c_ident(&self.k.roles[role].name);
        let guard = if issue_only {
            String::new()
        } else {
            format!("if ({rname}_thread == 0) ")
        };
        let commit = self.tcgen05_commit_call(barrier);
        self.line(&format!(
            "{guard}{commit};  // commit {} ({})",
            self.k.barriers[barrier].name,
            self.loc(sp)
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Table 42 (§9.7.16.4.2), worked by hand for M = 128, N = 128, BF16 inputs, F32 D, both
    // operands K-major (no transpose):
    //   dtype F32 = 1 at bit 4         -> 0x0000_0010
    //   atype BF16 = 1 at bit 7        -> 0x0000_0080
    //   btype BF16 = 1 at bit 10       -> 0x0000_0400
    //   N >> 3 = 16 at bits 17-22      -> 0x0020_0000
    //   M >> 4 = 8 at bits 24-28       -> 0x0800_0000
    //                                    = 0x0820_0490
    #[test]
    fn idesc_bf16_m128_n128_k_major() {
        assert_eq!(
            idesc(Inputs::BF16, true, 128, 128, false, false),
            0x0820_0490
        );
    }

    // M = 64, N = 256, F16 inputs, F16 D, A M-major, B N-major:
    //   dtype F16 = 0; atype = btype = F16 = 0
    //   transpose A at bit 15          -> 0x0000_8000
    //   transpose B at bit 16          -> 0x0001_0000
    //   N >> 3 = 32 at bits 17-22      -> 0x0040_0000
    //   M >> 4 = 4 at bits 24-28       -> 0x0400_0000
    //                                    = 0x0441_8000
    #[test]
    fn idesc_f16_m64_n256_mn_major() {
        assert_eq!(idesc(Inputs::F16, false, 64, 256, true, true), 0x0441_8000);
    }

    // FP8, M = 128, N = 256, an E4M3 A and an E5M2 B, F32 D, both K-major:
    //   dtype F32 = 1 at bit 4         -> 0x0000_0010
    //   atype E4M3 = 0; btype E5M2 = 1 at bit 10 -> 0x0000_0400
    //   N >> 3 = 32 at bits 17-22      -> 0x0040_0000
    //   M >> 4 = 8 at bits 24-28       -> 0x0800_0000
    //                                    = 0x0840_0410
    #[test]
    fn idesc_fp8_mixed_m128_n256() {
        let input = Inputs::of(DType::E4M3, DType::E5M2).unwrap();
        assert_eq!(input.kind(), "f8f6f4");
        assert_eq!(input.k_step(), 32);
        assert_eq!(idesc(input, true, 128, 256, false, false), 0x0840_0410);
        assert!(Inputs::of(DType::BF16, DType::E4M3).is_err());
    }

    // The smallest legal N (8) and the widest field values stay inside their fields:
    // N >> 3 = 1 -> bit 17; M >> 4 = 8 -> bit 27; BF16 + F32 as above.
    #[test]
    fn idesc_fields_do_not_overlap() {
        let d = idesc(Inputs::BF16, true, 128, 8, false, false);
        assert_eq!(d, 0x0802_0490);
        assert_eq!(d & (1 << 23), 0, "bit 23 is reserved");
        assert_eq!(d & (1 << 29), 0, "bit 29 is reserved");
        assert_eq!(d & (1 << 6), 0, "bit 6 is reserved");
    }

    // §9.7.16.4.1, K-major operand with 128B swizzle at shared address 0x400 (1 KiB):
    //   start 0x400 >> 4 = 0x40 at bits 0-13   -> 0x0000_0000_0000_0040
    //   LBO 16 B >> 4 = 1 at bits 16-29        -> 0x0000_0000_0001_0000
    //   SBO 1024 B >> 4 = 64 at bits 32-45     -> 0x0000_0040_0000_0000
    //   fixed 0b001 at bits 46-48              -> 0x0000_4000_0000_0000
    //   base offset 0 at bits 49-51
    //   swizzle 128B = 2 at bits 61-63         -> 0x4000_0000_0000_0000
    //                                            = 0x4000_4040_0001_0040
    #[test]
    fn smem_desc_k_major_sw128() {
        let mode = smem_desc_swizzle(128).unwrap();
        assert_eq!(mode, 2);
        assert_eq!(smem_desc(0x400, 16, 1024, 0, mode), 0x4000_4040_0001_0040);
    }

    // 64B swizzle (mode 4 -> bit 63), SBO 512 B, base offset 3, address 0x1_2340 (bit 17 set;
    // the field keeps address bits 4-17):
    //   0x12340 >> 4 = 0x1234                  -> 0x0000_0000_0000_1234
    //   LBO 32 >> 4 = 2                        -> 0x0000_0000_0002_0000
    //   SBO 512 >> 4 = 32                      -> 0x0000_0020_0000_0000
    //   fixed 0b001                            -> 0x0000_4000_0000_0000
    //   base offset 3 at 49                    -> 0x0006_0000_0000_0000
    //   swizzle 4 at 61                        -> 0x8000_0000_0000_0000
    //                                            = 0x8006_4020_0002_1234
    #[test]
    fn smem_desc_sw64_with_base_offset() {
        let mode = smem_desc_swizzle(64).unwrap();
        assert_eq!(smem_desc(0x1_2340, 32, 512, 3, mode), 0x8006_4020_0002_1234);
    }

    // The swizzle encodings of §9.7.16.4.1 against sm_90's wgmma field (1/2/3 at bit 62): the
    // same bits for 128B/64B/32B, and no swizzle is 0 in both.
    #[test]
    fn smem_desc_swizzle_modes() {
        for (bytes, wgmma) in [(0u32, 0u64), (128, 1), (64, 2), (32, 3)] {
            let t = smem_desc_swizzle(bytes).unwrap();
            assert_eq!(t << 61, wgmma << 62, "{bytes}B");
        }
        assert_eq!(smem_desc_swizzle(16), None);
    }
}
