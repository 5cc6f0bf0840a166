//! The mma.sync backend (sm_80, sm_89, sm_120a, sm_121a): warp-level, synchronous MMAs on
//! register tiles, fed by cp.async copies into shared memory and ldmatrix loads out of it. Being
//! synchronous, nothing stays in flight: a release arrives right after its MMA.

use super::{MmaBackend, MmaCall};
use crate::emit::*;
use crate::legal::{Checker, Planner, Scope};
use cake_diag::Span;
use cake_ir::*;
use cake_target::{MmaFamily, Target};
use std::collections::BTreeSet;

pub(crate) struct MmaSync;

/// What the mma.sync backend records while it emits.
#[derive(Default, Clone)]
pub(crate) struct State {
    /// mma.sync instructions used: (k, A type, B type).
    shapes: BTreeSet<(u32, &'static str, &'static str)>,
    /// Whether an MN-major operand was read (`ldmatrix.trans`).
    trans: bool,
}

impl State {
    pub(crate) fn join(&mut self, other: State) {
        self.shapes.extend(other.shapes);
        self.trans |= other.trans;
    }
}

impl MmaBackend for MmaSync {
    fn generates_for(&self, target: &Target) -> bool {
        crate::MMA_SYNC_TARGETS.contains(&target.name)
    }

    fn plan_layouts(&self, p: &mut Planner) {
        p.infer_mma_sync_layouts();
    }

    /// The MMA's conditions, then what its emission evaluates: `b`'s first row and stage, the
    /// accumulate flag, and `a`'s first row and stage when it is read from shared memory.
    fn check_mma(&self, c: &mut Checker, m: &MmaCall) {
        match mma_form(c.k, c.target, |f| c.layout(f), m) {
            Err(msg) => c.unsupported(m.sp, msg),
            Ok(None) => {}
            Ok(Some(form)) => {
                if let BOperand::View { v, .. } = form.b {
                    c.rows_start(v);
                    c.view_base(v);
                }
                c.ix(m.accumulate);
                if let Operand::Smem(av) = m.a {
                    c.rows_start(av);
                    c.view_base(av);
                }
            }
        }
    }

    fn family_ops(&self) -> &'static [&'static str] {
        &["Ldmatrix"]
    }

    fn check_family_op(&self, c: &mut Checker, op: &Op, sp: Span) {
        let Op::Ldmatrix { dst, src } = op else {
            return;
        };
        match ldmatrix_form(c.k, *dst, c.layout(*dst), src) {
            Err(m) => c.unsupported(sp, m),
            Ok(_) => {
                c.rows_start(src);
                c.view_base(src);
            }
        }
    }

    fn prelude(&self, e: &Emitter, out: &mut String) {
        out.push_str(MMA_SYNC);
        if e.mma.mma_sync.trans {
            out.push_str(LDMATRIX_TRANS);
        }
        for (kk, a, b) in &e.mma.mma_sync.shapes {
            out.push('\n');
            out.push_str(&mma_sync_fn(*kk, a, b));
        }
    }

    /// Where this thread's mma.sync accumulator registers sit in each m16n8 tile.
    fn warp_role_lanes(&self, e: &mut Emitter) {
        e.line("const int lane = (int)threadIdx.x % 32;");
        e.line("const int lane_row = lane / 4;  // and +8, every 16 rows");
        e.line("const int lane_col = 2 * (lane % 4);  // and +1, every 8 columns");
        e.line("(void)lane; (void)lane_row; (void)lane_col;");
    }

    fn mma(&self, e: &mut Emitter, m: &MmaCall) {
        e.mma_sync_op(m);
    }

    fn ldmatrix(&self, e: &mut Emitter, dst: FragId, src: &ViewRef, sp: Span) {
        e.ldmatrix(dst, src, sp);
    }
}

/// An `lm.mma` mma.sync lowers: the accumulator tile, `a`'s K in bytes and type, the
/// instruction (k, A and B types) and `b`.
struct MmaForm<'o> {
    accf: FragId,
    m: u32,
    n: u32,
    k_bytes: u32,
    kk: u32,
    an: &'static str,
    bn: &'static str,
    b: BOperand<'o>,
}

/// Where an mma.sync's `b` comes from.
#[derive(Clone, Copy)]
enum BOperand<'o> {
    /// A view, whose registers the MMA loads per k-step and pair of column tiles; `mn`: N-major
    /// (a (K, N) view as stored), read with ldmatrix.trans.
    View { v: &'o ViewRef, mn: bool },
    /// A fragment `lm.ldmatrix` loaded (layout [`FragLayout::MmaB`]).
    Regs(FragId),
}

/// The conditions of an mma.sync `lm.mma`. `Ok(None)`: nothing is emitted and nothing reported
/// (a fragment layout inference already refused).
fn mma_form<'o>(
    k: &Kernel,
    target: &Target,
    layout: impl Fn(FragId) -> Option<FragLayout>,
    call: &MmaCall<'o>,
) -> Result<Option<MmaForm<'o>>, String> {
    let Operand::Frag(accf) = call.acc else {
        return Err(format!(
            "on {}, lm.mma is lowered with the accumulator in a fragment",
            target.name
        ));
    };
    let Some(FragLayout::MmaAcc { m, n }) = layout(*accf) else {
        return Ok(None);
    };
    // `a` in registers (an lm.ldmatrix fragment), or in shared memory: then its registers
    // are loaded per k-step, with the same ldmatrix.x4 pattern lm.ldmatrix uses.
    let (k_bytes, adt) = match call.a {
        Operand::Frag(af) => match layout(*af) {
            Some(FragLayout::MmaA { k_bytes, .. }) => (k_bytes, k.fragments[*af].dtype),
            _ => return Ok(None),
        },
        Operand::Smem(av) if !av.transposed && k.views[av.view].shape.len() == 2 => {
            let v = &k.views[av.view];
            (v.shape[1] * v.dtype.bytes(), v.dtype)
        }
        Operand::Smem(av) if av.transposed => {
            mn_major(k, av, "`a`", m)?;
            let v = &k.views[av.view];
            let rows = av.rows.map_or(v.shape[0], |(_, n)| n);
            (rows * v.dtype.bytes(), v.dtype)
        }
        _ => {
            return Err("on mma.sync, `a` is a fragment loaded by lm.ldmatrix, an (M, K) view as stored, or `.T` of a (K, M) view".into());
        }
    };
    if k_bytes % 32 != 0 {
        return Err(format!(
            "mma.sync k-steps are 32 bytes; K of `a` is {k_bytes} bytes"
        ));
    }
    let (b, bdt) = match call.b {
        Operand::Smem(bv) => {
            let bview = &k.views[bv.view];
            if bview.shape.len() != 2 {
                return Err("`b` is lowered from a 2-D view: `.T` of an (N, K) one (K-major) or a (K, N) one as stored (N-major)".into());
            }
            let mn = !bv.transposed;
            if mn {
                mn_major(k, bv, "`b`", n)?;
            }
            (BOperand::View { v: bv, mn }, bview.dtype)
        }
        Operand::Frag(bf) => match layout(*bf) {
            Some(FragLayout::MmaB {
                k_bytes: b_bytes, ..
            }) if b_bytes == k_bytes => (BOperand::Regs(*bf), k.fragments[*bf].dtype),
            Some(FragLayout::MmaB {
                k_bytes: b_bytes, ..
            }) => {
                return Err(format!(
                    "`b` is {b_bytes} bytes deep in K but `a` is {k_bytes}"
                ))
            }
            _ => return Ok(None),
        },
        Operand::Tmem(_) => {
            return Err("on mma.sync, `b` is a view or a fragment loaded by lm.ldmatrix".into())
        }
    };
    let ptx = |d: DType| match d {
        DType::BF16 => Some("bf16"),
        DType::F16 => Some("f16"),
        DType::E4M3 => Some("e4m3"),
        DType::E5M2 => Some("e5m2"),
        _ => None,
    };
    let (Some(an), Some(bn)) = (ptx(adt), ptx(bdt)) else {
        return Err(format!(
            "mma.sync with {adt} x {bdt} inputs is not lowered yet"
        ));
    };
    let Some(kk) = cake_target::mma_instr_k(MmaFamily::MmaSync, adt) else {
        return Ok(None);
    };
    if kk * adt.bytes() != 32 {
        return Err(format!("mma.sync k{kk} with {adt} is not lowered yet"));
    }
    Ok(Some(MmaForm {
        accf: *accf,
        m,
        n,
        k_bytes,
        kk,
        an,
        bn,
        b,
    }))
}

/// What `lm.ldmatrix(frag, view)` loads: an mma.sync `a` or `b` fragment, and whether the view
/// is M- or N-major (`ldmatrix.trans`).
#[derive(Clone, Copy)]
enum LdmatrixForm {
    /// An (m, K) `a` from an (M, K) view as stored (K-major) or `.T` of a (K, M) one.
    A { m: u32, k_bytes: u32, trans: bool },
    /// A (K, n) `b` from `.T` of an (N, K) view (K-major) or a (K, N) one as stored.
    B { n: u32, k_bytes: u32, trans: bool },
}

/// The conditions of `lm.ldmatrix(frag, view)`: into an mma.sync `a` or `b` fragment, from a 2-D
/// view whose K is contiguous (no `.trans`) or whose M or N is (16-bit, `ldmatrix.trans`).
fn ldmatrix_form(
    k: &Kernel,
    dst: FragId,
    layout: Option<FragLayout>,
    src: &ViewRef,
) -> Result<LdmatrixForm, String> {
    if !matches!(
        layout,
        Some(FragLayout::MmaA { .. } | FragLayout::MmaB { .. })
    ) {
        return Err(format!(
            "lm.ldmatrix is lowered into the `a` or `b` fragment of an mma.sync; `{}` is not one",
            k.fragments[dst].name
        ));
    }
    if k.views[src.view].shape.len() != 2 {
        return Err("lm.ldmatrix is lowered from a 2-D view".into());
    }
    Ok(match layout {
        Some(FragLayout::MmaB { n, k_bytes }) => {
            // `b` is (K, N): `.T` of an (N, K) view is K-major, a (K, N) view as stored N-major.
            let trans = !src.transposed;
            if trans {
                mn_major(k, src, "`b`", n)?;
            }
            LdmatrixForm::B { n, k_bytes, trans }
        }
        Some(FragLayout::MmaA { m, k_bytes }) => {
            if src.transposed {
                mn_major(k, src, "`a`", m)?;
            }
            LdmatrixForm::A {
                m,
                k_bytes,
                trans: src.transposed,
            }
        }
        _ => unreachable!("refused above"),
    })
}

/// An MN-major mma.sync operand, read with `ldmatrix.trans`: a 16-bit 2-D view stored (K, M) or
/// (K, N) whose columns are exactly the operand's `mn` rows or columns (a warp's block; wider
/// tiles stack their blocks along the view's rows, `.rows(start, K)` each).
fn mn_major(k: &Kernel, v: &ViewRef, what: &str, mn: u32) -> Result<(), String> {
    let view = &k.views[v.view];
    if view.dtype.bytes() != 2 {
        return Err(format!(
            "an M- or N-major {what} on mma.sync is read with ldmatrix.trans, which moves 16-bit elements; `{}` holds {}",
            view.name, view.dtype
        ));
    }
    if view.shape.len() != 2 || view.shape[1] != mn {
        return Err(format!(
            "an M- or N-major {what} on mma.sync is lowered from a (K, {mn}) view (or `.rows(start, K)` of one) whose columns are the warp's {mn}; `{}` is {:?}",
            view.name, view.shape
        ));
    }
    Ok(())
}

/// The register layout of fragment `f` as an mma.sync operand — an `(M, K)` `a`, or a `(K, N)`
/// `b` when `as_b` — where it is whole ldmatrix.x4 tiles: a single-buffered 2-D fragment of 16
/// rows of `a` (two 8-column tiles of `b`) by 32 bytes of K. `None` otherwise.
fn operand_layout(f: &Fragment, as_b: bool) -> Option<FragLayout> {
    let [rows, cols] = f.shape[..] else {
        return None;
    };
    let (mn, k_bytes) = if as_b {
        (cols, rows * f.dtype.bytes())
    } else {
        (rows, cols * f.dtype.bytes())
    };
    let tiles = mn > 0 && mn.is_multiple_of(16) && k_bytes > 0 && k_bytes.is_multiple_of(32);
    (f.buffers == 1 && tiles).then_some(if as_b {
        FragLayout::MmaB { n: mn, k_bytes }
    } else {
        FragLayout::MmaA { m: mn, k_bytes }
    })
}

impl Planner<'_> {
    /// mma.sync register layouts: each MMA's accumulator and its `a` and `b` fragments (loaded
    /// by ldmatrix), per warp. Anything else in registers is a coverage gap of this generator.
    fn infer_mma_sync_layouts(&mut self) {
        let kf = self.kf;
        // The fragments some MMA reads as `b`: their ldmatrix loads the B-operand layout.
        let b_frags: BTreeSet<FragId> = kf
            .ops
            .iter()
            .filter_map(|s| match &s.op {
                Op::Mma {
                    b: Operand::Frag(f),
                    ..
                } => Some(*f),
                _ => None,
            })
            .collect();
        for (sid, op) in kf.ops.iter().map(|s| (s.stmt, &s.op)) {
            // An ldmatrix destination holds the A-operand layout unless an MMA reads it as `b`.
            if let Op::Ldmatrix { dst, .. } = op {
                let f = &self.k.fragments[*dst];
                if let Some(layout) = operand_layout(f, b_frags.contains(dst)) {
                    self.frag_layouts.insert(*dst, layout);
                }
                continue;
            }
            let Op::Mma { acc, a, b, .. } = op else {
                continue;
            };
            let sp = self.k.stmts.span(sid);
            let Operand::Frag(f) = acc else {
                self.unsupported(
                    sp,
                    "mma.sync keeps its accumulator in registers: `acc` must be a fragment",
                );
                continue;
            };
            let frag = &self.k.fragments[*f];
            let role = &self.k.roles[frag.role];
            let (m, n) = (
                frag.shape.first().copied().unwrap_or(0),
                frag.shape.get(1).copied().unwrap_or(0),
            );
            if role.unit != RoleUnit::Warp || frag.shape.len() != 2 || m % 16 != 0 || n % 16 != 0 {
                self.unsupported(sp, format!("an mma.sync accumulator is an (M, N) fragment of a warp role with M a multiple of 16 and N of 16; `{}` is {:?} on role `{}` ({})", frag.name, frag.shape, role.name, if role.unit == RoleUnit::Warp { "warps" } else { "warpgroups" }));
                continue;
            }
            if frag.dtype != DType::F32 {
                self.unsupported(
                    sp,
                    format!(
                        "mma.sync accumulators are lowered in f32; `{}` is {}",
                        frag.name, frag.dtype
                    ),
                );
                continue;
            }
            if frag.buffers != 1 {
                self.unsupported(
                    sp,
                    format!(
                        "double-buffered fragments (`{}`) are lowered for wgmma only",
                        frag.name
                    ),
                );
                continue;
            }
            self.frag_layouts.insert(*f, FragLayout::MmaAcc { m, n });
            if let Operand::Frag(bf) = b {
                let fb = &self.k.fragments[*bf];
                let Some(layout) = operand_layout(fb, true) else {
                    self.unsupported(sp, format!("an mma.sync `b` fragment is (K, N) with K a multiple of 32 bytes and N of 16; `{}` is {:?} {}", fb.name, fb.shape, fb.dtype));
                    continue;
                };
                self.frag_layouts.insert(*bf, layout);
            }
            if let Operand::Frag(af) = a {
                let fa = &self.k.fragments[*af];
                if b_frags.contains(af) {
                    self.unsupported(sp, format!("fragment `{}` is read as both `a` and `b` of mma.sync, whose register layouts differ: load each operand into its own fragment", fa.name));
                    continue;
                }
                let Some(layout) = operand_layout(fa, false) else {
                    self.unsupported(sp, format!("an mma.sync `a` fragment is (M, K) with M a multiple of 16 and K a multiple of 32 bytes; `{}` is {:?} {}", fa.name, fa.shape, fa.dtype));
                    continue;
                };
                self.frag_layouts.insert(*af, layout);
            }
        }
    }
}

impl Emitter<'_> {
    /// `lm.ldmatrix(frag, view)` into an mma.sync `a` fragment: one ldmatrix.x4 per 16 rows and
    /// 32 bytes of K. Lanes 0-15 address rows 0-15 at the k-step's first 16 bytes, lanes 16-31
    /// the same rows at its second 16 bytes, so the four registers are the m16n8k16 A fragment
    /// (a0: rows 0-7, a1: rows 8-15, a2/a3: the same rows 16 bytes on). Into a `b` fragment: one
    /// ldmatrix.x4 per 32 bytes of K and pair of 8-column tiles, as the MMA would load it.
    fn ldmatrix(&mut self, dst: FragId, src: &ViewRef, sp: Span) {
        let k = self.k;
        let form = match ldmatrix_form(k, dst, self.layout(dst), src) {
            Ok(form) => form,
            Err(msg) => return self.unsupported(sp, msg),
        };
        let view = k.views[src.view].clone();
        let start = match src.rows {
            Some((start, _)) => self.ix(start),
            None => "0".into(),
        };
        let base = self.view_base(src);
        let name = self.frag_name(dst);
        let addr = self.smem_addr(&view, &base, "row", "cb");
        let (tiles, k_bytes, what) = match form {
            LdmatrixForm::A { m, k_bytes, .. } => (m / 16, k_bytes, "16-row tiles"),
            LdmatrixForm::B { n, k_bytes, .. } => (n / 16, k_bytes, "pairs of 8-column tiles"),
        };
        let kt = k_bytes / 32;
        let open = format!(
            "{{  // ldmatrix {} <- {} ({}): {tiles} {what} x {kt} k-step(s), one ldmatrix.x4{} each",
            k.fragments[dst].name,
            view.name,
            self.loc(sp),
            match form {
                LdmatrixForm::A { trans: true, .. } | LdmatrixForm::B { trans: true, .. } =>
                    ".trans",
                _ => "",
            }
        );
        self.braced(&open, |me| match form {
            LdmatrixForm::A { trans, .. } => {
                me.unrolled(&format!("for (int mt = 0; mt < {tiles}; ++mt) {{"), |me| {
                    me.unrolled(&format!("for (int kt = 0; kt < {kt}; ++kt) {{"), |me| {
                        me.ldmatrix_a(
                            &start,
                            &format!("{name} + 4 * (mt * {kt} + kt)"),
                            &addr,
                            trans,
                        )
                    })
                })
            }
            LdmatrixForm::B { trans, .. } => {
                me.unrolled(&format!("for (int kt = 0; kt < {kt}; ++kt) {{"), |me| {
                    me.unrolled(&format!("for (int np = 0; np < {tiles}; ++np) {{"), |me| {
                        me.ldmatrix_b(
                            &start,
                            &format!("{name} + 4 * (kt * {tiles} + np)"),
                            &addr,
                            trans,
                        )
                    })
                })
            }
        });
    }

    /// One ldmatrix.x4 of the A registers of 16-row tile `mt` at k-step `kt` (both in scope).
    /// K-major: lanes 0-15 address rows 0-15 at the k-step's first 16 bytes, lanes 16-31 the
    /// same rows at its second 16 bytes. M-major (`trans`, the view stored (K, M)): matrix j's
    /// lanes address K rows 8 (j / 2) on, at M columns 8 (j % 2) on, and ldmatrix.trans hands
    /// each thread the transpose. `start` is the first row, `addr` the address of (`row`, `cb`).
    fn ldmatrix_a(&mut self, start: &str, dst: &str, addr: &str, trans: bool) {
        let (row, cb, load) = if trans {
            self.mma.mma_sync.trans = true;
            (
                "16 * kt + (lane / 16) * 8 + lane % 8",
                "2 * (16 * mt + ((lane / 8) % 2) * 8)",
                "cake_ldmatrix_x4_trans",
            )
        } else {
            (
                "16 * mt + lane % 16",
                "32 * kt + (lane / 16) * 16",
                "cake_ldmatrix_x4",
            )
        };
        self.ldmatrix_x4(load, start, row, cb, dst, addr);
    }

    /// `{load}({dst}, {addr})` with the lane's `row` (from `start`) and byte column `cb` in
    /// scope: one ldmatrix.x4 of an operand's registers.
    fn ldmatrix_x4(&mut self, load: &str, start: &str, row: &str, cb: &str, dst: &str, addr: &str) {
        self.line(&format!("const int row = {start} + {row};"));
        self.line(&format!("const int cb = {cb};"));
        self.line(&format!("{load}({dst}, {addr});"));
    }

    /// One ldmatrix.x4 of the B registers of column tiles 2np and 2np+1 at k-step `kt` (both in
    /// scope): matrix j is tile 2np + j / 2 at K 8 (j % 2) on. From an (N, K) view (rows of B's
    /// columns, K contiguous: the `.col` operand as stored, no .trans), lanes 0-7 and 16-23
    /// address their rows of the view and lanes 8-15 and 24-31 the same rows 16 bytes on; from a
    /// (K, N) one (N-major, `trans`: .trans hands each thread the transpose), lanes 0-7 and 16-23
    /// address K rows 0-7 of their 8 columns and lanes 8-15 and 24-31 K rows 8-15. `start` is
    /// the view's first row, `addr` the address of (`row`, `cb`).
    fn ldmatrix_b(&mut self, start: &str, dst: &str, addr: &str, trans: bool) {
        let (what, row, cb, load) = if trans {
            self.mma.mma_sync.trans = true;
            (
                "lanes 0-7 and 16-23 address K rows 0-7 of their 8 columns of the (K, N) view, lanes 8-15 and 24-31 K rows 8-15",
                "16 * kt + ((lane / 8) % 2) * 8 + lane % 8",
                "2 * (16 * np + (lane / 16) * 8)",
                "cake_ldmatrix_x4_trans",
            )
        } else {
            (
                "lanes 0-7 and 16-23 address their rows of the view, lanes 8-15 and 24-31 the same rows 16 bytes on",
                "16 * np + (lane / 16) * 8 + lane % 8",
                "32 * kt + ((lane / 8) % 2) * 16",
                "cake_ldmatrix_x4",
            )
        };
        self.line(&format!("// Column tiles 2np and 2np+1: {what}."));
        self.ldmatrix_x4(load, start, row, cb, dst, addr);
    }

    /// `lm.mma(acc, a, b)` on mma.sync: for each 32-byte k-step and each pair of 8-column tiles,
    /// the B registers — a `b` fragment's, or loaded here with one ldmatrix.x4 from the view
    /// ([`Self::ldmatrix_b`]) — and one m16n8 MMA per 16-row tile and column tile. mma.sync is
    /// synchronous: a release arrives right after, every thread's shared reads being done.
    fn mma_sync_op(&mut self, m: &MmaCall) {
        let (a, accumulate, release, sp) = (m.a, m.accumulate, m.release, m.sp);
        let k = self.k;
        let form = match mma_form(k, self.target, |f| self.layout(f), m) {
            Ok(Some(form)) => form,
            Ok(None) => return,
            Err(msg) => return self.unsupported(sp, msg),
        };
        let MmaForm {
            accf,
            m,
            n,
            k_bytes,
            kk,
            an,
            bn,
            b,
        } = form;
        let accf = &accf;
        self.mma.mma_sync.shapes.insert((kk, an, bn));
        let func = mma_sync_name(kk, an, bn);
        let (mt, nt, kt) = (m / 16, n / 8, k_bytes / 32);
        // `b`'s name for the comment, and its view's first row and address when the MMA loads it.
        let (bname, b_load) = match b {
            BOperand::View { v, mn } => {
                let bview = k.views[v.view].clone();
                let start = match v.rows {
                    Some((start, _)) => self.ix(start),
                    None => "0".into(),
                };
                let base = self.view_base(v);
                let addr = self.smem_addr(&bview, &base, "row", "cb");
                let name = format!("{}{}", bview.name, if mn { "" } else { ".T" });
                (name, Some((start, addr, mn)))
            }
            BOperand::Regs(bf) => (k.fragments[bf].name.clone(), None),
        };
        let accn = self.frag_name(*accf);
        // The A registers of (16-row tile mt, k-step kt): the fragment's, or `a_regs[mt]` loaded
        // at the top of each k-step.
        let (afn, a_of) = match a {
            Operand::Frag(af) => {
                let n = self.frag_name(*af);
                (n.clone(), format!("{n} + 4 * (mt * {kt} + kt)"))
            }
            Operand::Smem(av) => (k.views[av.view].name.clone(), "a_regs[mt]".to_string()),
            _ => unreachable!(),
        };
        // The B registers of column tiles 2np and 2np+1 at k-step kt.
        let b_of = match b {
            BOperand::Regs(bf) => format!("{} + 4 * (kt * {} + np)", self.frag_name(bf), nt / 2),
            BOperand::View { .. } => "b_regs".to_string(),
        };
        let pred = self.ix(accumulate);
        let open = format!(
            "{{  // mma {accn} += {afn} * {bname} ({}): mma.sync m16n8k{kk}, {mt} x {nt} tiles, {kt} k-step(s); {}",
            self.loc(sp),
            match b_load {
                Some((_, _, mn)) => format!("B through ldmatrix.x4{}", if mn { ".trans" } else { "" }),
                None => "B in registers".to_string(),
            }
        );
        self.braced(&open, |e| {
            if !matches!(k.exprs[accumulate].kind, ExprKind::Bool(true)) {
                e.braced(&format!("if (!({pred})) {{"), |e| {
                    e.line("#pragma unroll");
                    e.line(&format!(
                        "for (int r = 0; r < {}; ++r) {accn}[r] = 0.0f;",
                        m * n / 32
                    ));
                });
            }
            e.unrolled(&format!("for (int kt = 0; kt < {kt}; ++kt) {{"), |e| {
                if let Operand::Smem(av) = a {
                    let view = k.views[av.view].clone();
                    let start = match av.rows {
                        Some((start, _)) => e.ix(start),
                        None => "0".into(),
                    };
                    let base = e.view_base(av);
                    let addr = e.smem_addr(&view, &base, "row", "cb");
                    e.line(&format!(
                        "uint32_t a_regs[{mt}][4];  // A of this k-step, as lm.ldmatrix would load it"
                    ));
                    let trans = av.transposed;
                    e.unrolled(&format!("for (int mt = 0; mt < {mt}; ++mt) {{"), |me| {
                        me.ldmatrix_a(&start, "a_regs[mt]", &addr, trans)
                    });
                }
                e.unrolled(&format!("for (int np = 0; np < {}; ++np) {{", nt / 2), |e| {
                    if let Some((start, addr, mn)) = &b_load {
                        e.line("uint32_t b_regs[4];");
                        e.ldmatrix_b(start, "b_regs", addr, *mn);
                    }
                    e.unrolled(&format!("for (int mt = 0; mt < {mt}; ++mt) {{"), |me| {
                        me.line(&format!(
                            "{func}({accn} + 4 * (mt * {nt} + 2 * np), {a_of}, {b_of});"
                        ));
                        me.line(&format!(
                            "{func}({accn} + 4 * (mt * {nt} + 2 * np + 1), {a_of}, {b_of} + 2);"
                        ));
                    });
                });
            });
            if let Some(bar) = release {
                let slot = e.barrier_slot(bar);
                let arrive = e.arrive(bar, &slot);
                e.line(&format!(
                    "{arrive}  // release {}: this thread's reads of the stage are done (mma.sync is synchronous)",
                    k.barriers[bar].name
                ));
            }
        });
    }
}

/// ldmatrix and mma.sync (sm_80 and later).
const MMA_SYNC: &str = r#"
// Four 8x8 b16 matrices: lanes 8i..8i+7 give the row addresses of matrix i; thread t receives
// row t/4, elements 2(t%4) and 2(t%4)+1 of each matrix, one 32-bit register per matrix.
static __device__ __forceinline__ void cake_ldmatrix_x4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
"#;

/// ldmatrix.trans, for MN-major operands.
const LDMATRIX_TRANS: &str = r#"// ldmatrix with .trans: thread t receives elements (2(t%4), t/4) and (2(t%4)+1, t/4) of each
// matrix, the transpose's row t/4 (an MN-major operand as mma.sync's K-major registers).
static __device__ __forceinline__ void cake_ldmatrix_x4_trans(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
"#;

/// The wrapper's name: `cake_mma_m16n8k16_f32_bf16`, or `..._e4m3_e5m2` for mixed FP8 inputs.
fn mma_sync_name(k: u32, a: &str, b: &str) -> String {
    if a == b {
        format!("cake_mma_m16n8k{k}_f32_{a}")
    } else {
        format!("cake_mma_m16n8k{k}_f32_{a}_{b}")
    }
}

/// One `mma.sync.aligned.m16n8k{k}.row.col.f32.{a}.{b}.f32` wrapper: `a` points at the four A
/// registers, `b` at the two B registers, `d` at the four f32 accumulators.
fn mma_sync_fn(k: u32, a: &str, b: &str) -> String {
    let name = mma_sync_name(k, a, b);
    format!(
        r#"static __device__ __forceinline__ void {name}(float* d, const uint32_t* a, const uint32_t* b) {{
  asm volatile("mma.sync.aligned.m16n8k{k}.row.col.f32.{a}.{b}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}}
"#
    )
}
