//! Copies between global and shared memory done by the role's own threads, element or chunk at a
//! time, rather than by the TMA unit: `view.cp_async` (global → shared, asynchronous, completing
//! on an mbarrier) and `view.copy_to` (shared → global, stores or atomic adds). Neither needs the
//! 16-byte strides a tensor map does. Also the one address function of a shared-memory view's
//! elements (panels and swizzle) that these copies and the ldmatrix reads share.

use super::*;

impl Emitter<'_> {
    /// Byte address of element row `row`, byte column `cb` of one stage of `view` (`base` is the
    /// stage's address), through the view's panels and swizzle — the one address function the
    /// cp.async writes and the ldmatrix reads of a view share.
    pub(crate) fn smem_addr(&mut self, view: &View, base: &str, row: &str, cb: &str) -> String {
        let eb = view.dtype.bytes();
        let prb = view.panel_cols() * eb;
        if view.swizzle == 0 {
            return format!("{base} + ({row}) * {prb} + ({cb})");
        }
        self.swizzles.insert(view.swizzle);
        let s = view.swizzle;
        if view.panels() == 1 {
            format!("{base} + cake_swizzle{s}(({row}) * {prb} + ({cb}))")
        } else {
            let panel_bytes = view.shape[0] as u64 * prb as u64;
            format!(
                "{base} + cake_swizzle{s}((({cb}) / {prb}) * {panel_bytes} + ({row}) * {prb} + ({cb}) % {prb})"
            )
        }
    }

    /// `view.cp_async(tensor, coords, barrier)`: every thread of the role copies its share of the
    /// tile (the tensor's trailing axes at `coords`; the leading ones pick the slice), zero-filling
    /// what lies past the tensor's extent through the source-size operand, then arrives on the
    /// barrier's current slot once its copies have landed (`cp.async.mbarrier.arrive.noinc`: one
    /// of the role's `threads` arrivals per phase this statement contributes).
    ///
    /// Rows of whole 16-byte chunks go 16 bytes at a time (chunk c to thread c mod threads) when
    /// the source is 16-byte aligned; with 4- or 8-byte elements, a source that is not (a row
    /// pitch that is not a multiple of 16 bytes: IDS[b, n] with N odd) goes element by element,
    /// chosen at run time. 1- and 2-byte elements have only the 16-byte form (`legal::cp_async`).
    pub(crate) fn cp_async(
        &mut self,
        dst: &ViewRef,
        src: ParamId,
        coords: &[ExprId],
        barrier: BarrierId,
        sp: Span,
    ) {
        let k = self.k;
        let form = match legal::cp_async(k, dst, src) {
            Ok(f) => f,
            Err(m) => return self.unsupported(sp, m),
        };
        let ParamKind::Tensor { dims, .. } = k.params[src].kind.clone() else {
            return;
        };
        let view = k.views[dst.view].clone();
        let eb = view.dtype.bytes();
        let (rows, cols) = form.tile;
        let (role, _) = self.role.expect("role");
        let r = &k.roles[role];
        let threads = r.threads();
        let first = r.warps().into_iter().min().unwrap_or(0) * 32;
        let texts: Vec<String> = coords.iter().map(|c| self.ix(*c)).collect();
        let ca = dims.len() - 1;
        let cext = self.extent_text(&dims[ca]);
        let two_d = view.shape.len() == 2;
        let rext = if two_d {
            self.extent_text(&dims[ca - 1])
        } else {
            "1".to_string()
        };
        let mut at = texts.clone();
        at[ca] = "g_col".into();
        if two_d {
            at[ca - 1] = "g_row".into();
        }
        let offset = self.offset_of(&dims, &at);
        let start = self.offset_of(&dims, &texts);
        let base = self.view_base(dst);
        // Into `.rows(start, ..)` of the view: the box's row r lands in view row start + r.
        let view_row = match dst.rows {
            Some((s, _)) => format!("({}) + row", self.ix(s)),
            None => "row".to_string(),
        };
        let slot = self.barrier_slot(barrier);
        let tname = c_ident(&k.params[src].name);
        let arrivals = self.facts[barrier.index()].arrival_count();
        let g_row = if two_d {
            format!("const int g_row = {} + row;", texts[ca - 1])
        } else {
            "const int g_row = 0;".to_string()
        };
        self.needs_cp_async = true;
        // One loop over the copy's pieces of `bytes` each (chunk c to thread c mod threads).
        let pieces = |e: &mut Self, bytes: u32| {
            let elems = bytes / eb;
            let per_row = cols / elems;
            let total = rows * per_row;
            let per_thread = total.div_ceil(threads);
            let addr = e.smem_addr(&view, &base, &view_row, &format!("col * {eb}"));
            e.line(&format!(
                "// {total} pieces of {bytes} B, {per_thread} per thread"
            ));
            e.unrolled(&format!("for (int c = 0; c < {per_thread}; ++c) {{"), |e| {
                e.line(&format!(
                    "const int chunk = ((int)threadIdx.x - {first}) + {threads} * c;"
                ));
                if !total.is_multiple_of(threads) {
                    e.line(&format!("if (chunk >= {total}) break;"));
                }
                e.line(&format!("const int row = chunk / {per_row};"));
                e.line(&format!("const int col = (chunk % {per_row}) * {elems};"));
                e.line(&g_row);
                e.line(&format!("const int g_col = {} + col;", texts[ca]));
                e.line("// Bytes of the piece inside the tensor; the rest is zero-filled (none: nothing is read).");
                e.line(&format!(
                    "const int valid = g_row < {rext} ? max(0, min({elems}, {cext} - g_col)) * {eb} : 0;"
                ));
                e.line(&format!(
                    "cake_cp_async_{bytes}({addr}, {tname} + (valid > 0 ? {offset} : 0), valid);"
                ));
            });
        };
        let open = format!(
            "{{  // cp_async {} <- {} ({}): {rows} x {cols} elements by the {threads} threads of role {}",
            view.name,
            k.params[src].name,
            self.loc(sp),
            r.name
        );
        self.braced(&open, |e| {
            match (form.wide, form.narrow) {
                (true, false) => pieces(e, 16),
                (false, true) => pieces(e, eb),
                (true, true) => {
                    let pitch = if two_d {
                        format!(" && ({cext}) % {} == 0", 16 / eb)
                    } else {
                        String::new()
                    };
                    e.braced_else(
                        &format!(
                            "if ((uintptr_t)({tname} + {start}) % 16 == 0{pitch}) {{  // 16-byte aligned rows: 16 B at a time"
                        ),
                        |e| pieces(e, 16),
                        |e| pieces(e, eb),
                    );
                }
                (false, false) => {}
            }
            e.line(&format!(
                "cake_cp_async_mbar_arrive({slot});  // completes on {} once this thread's copies land (1 of {arrivals} arrivals per phase)",
                k.barriers[barrier].name
            ));
        });
    }

    /// `view.copy_to(tensor, coords, reduce)`: each thread of the replica takes the view's
    /// elements e ≡ its index (mod the replica's threads), reads each from shared memory and
    /// stores it into the tensor (`add`: `atomicAdd`, which compiles to `red.global.add`),
    /// skipping elements past the tensor's extent. Per-element accesses need no alignment, unlike
    /// a TMA store, whose tensor map wants 16-byte strides. The replica's threads synchronise
    /// before (the view's writers are other warps) and after (later writes of the view must not
    /// overtake these reads).
    pub(crate) fn copy_to(
        &mut self,
        dst: ParamId,
        src: &ViewRef,
        coords: &[ExprId],
        add: bool,
        sp: Span,
    ) {
        let k = self.k;
        let (role, issue_only) = self.role.expect("role");
        if let Err(m) = legal::replica_threads(k, role, issue_only, "copy_to")
            .and_then(|_| legal::copy_to(k, dst, src))
        {
            return self.unsupported(sp, m);
        }
        let ParamKind::Tensor { dims, .. } = k.params[dst].kind.clone() else {
            return;
        };
        let view = k.views[src.view].clone();
        let r = &k.roles[role];
        let rname = c_ident(&r.name);
        let threads = r.unit.threads();
        let eb = view.dtype.bytes();
        // (rows, columns) of the copied range: a 1-D view is one row.
        let (rows, cols) = match (view.shape.as_slice(), src.rows) {
            ([n], None) => (1, *n),
            ([_], Some((_, n))) => (1, n),
            ([m, n], rows) => (rows.map_or(*m, |(_, c)| c), *n),
            _ => return,
        };
        let mut base = self.view_base(&ViewRef {
            rows: None,
            ..src.clone()
        });
        if let Some((start, _)) = src.rows {
            let row_bytes = if view.shape.len() == 1 { eb } else { cols * eb };
            base = format!("({base} + ({}) * {row_bytes})", self.ix(start));
        }
        let texts: Vec<String> = coords.iter().map(|c| self.ix(*c)).collect();
        let rank = dims.len();
        let ca = rank - 1;
        let mut at = texts.clone();
        at[ca] = "g_col".into();
        let mut bounds = vec![format!("g_col < {}", self.extent_text(&dims[ca]))];
        if view.shape.len() == 2 {
            at[ca - 1] = "g_row".into();
            bounds.push(format!("g_row < {}", self.extent_text(&dims[ca - 1])));
        }
        let offset = self.offset_of(&dims, &at);
        let tname = c_ident(&k.params[dst].name);
        let (ld, cty) = match view.dtype {
            DType::I32 => ("cake_ld_shared_s32", "int"),
            _ => ("cake_ld_shared_f32", "float"),
        };
        self.needs_shared_ops = true;
        let total = rows * cols;
        self.line(&format!(
            "// copy_to {} {} {}: {total} elements of 4 B by the {threads} threads of each replica of {} ({})",
            k.params[dst].name,
            if add { "+=" } else { "<-" },
            view.name,
            r.name,
            self.loc(sp)
        ));
        self.replica_sync(sp);
        self.braced(
            &format!("for (int e = {rname}_thread; e < {total}; e += {threads}) {{"),
            |e| {
                e.line(&format!("const int row = e / {cols}, col = e % {cols};"));
                if view.shape.len() == 2 {
                    e.line(&format!("const int g_row = {} + row;", texts[ca - 1]));
                } else {
                    e.line("(void)row;");
                }
                e.line(&format!("const int g_col = {} + col;", texts[ca]));
                e.line(&format!(
                    "const {cty} v = {ld}({base} + (uint32_t)e * {eb}u);"
                ));
                let write = if add {
                    format!("atomicAdd({tname} + {offset}, v);")
                } else {
                    format!("{tname}[{offset}] = v;")
                };
                e.line(&format!("if ({}) {write}", bounds.join(" && ")));
            },
        );
        self.replica_sync(sp);
    }
}

/// cp.async (sm_80 and later): one piece of 4, 8 or 16 bytes global → shared, zero-filled beyond
/// `src_bytes` (0 fills the whole piece: the source is not read), and the arrive that completes
/// on an mbarrier once every cp.async this thread issued before it has landed. `.noinc`: the
/// arrival is one of those the barrier was initialised to expect. `.cg` (L2 only) takes only
/// 16-byte pieces; the narrower ones go through L1 (`.ca`).
pub(crate) const CP_ASYNC: &str = r#"
static __device__ __forceinline__ void cake_cp_async_16(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void cake_cp_async_8(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void cake_cp_async_4(uint32_t dst, const void* src, uint32_t src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" :: "r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
static __device__ __forceinline__ void cake_cp_async_mbar_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(bar) : "memory");
}
"#;

/// The shared-memory swizzle of a view, as a function of the byte offset from a 1024-byte aligned
/// base: the 16-byte chunk index (bits 4..) XOR the 128-byte line index (bits 7..), over 1, 2 or
/// 3 bits for the 32B, 64B and 128B modes — the pattern TMA and wgmma use for the same tags.
pub(crate) fn swizzle_fn(swizzle: u32) -> String {
    let bits = match swizzle {
        32 => 1,
        64 => 2,
        128 => 3,
        _ => 0,
    };
    let mask = (1u32 << bits) - 1;
    format!(
        "static __device__ __forceinline__ uint32_t cake_swizzle{swizzle}(uint32_t off) {{ return off ^ (((off >> 7) & {mask}u) << 4); }}\n"
    )
}
