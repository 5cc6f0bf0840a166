use crate::emit::*;
use cake_diag::Span;
use cake_ir::*;

impl Emitter<'_> {
    /// A pipelined loop whose MMA writes a double-buffered accumulator: iteration k+1's wait and
    /// MMA are issued before the rest of iteration k, which reads the other buffer, so the tensor
    /// cores work through the epilogue. Unrolled by two so each buffer is a fixed register array.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn double_buffered_loop(
        &mut self,
        id: LoopId,
        var: &str,
        (start, stop): (String, String),
        p: PipelineId,
        (wait, mma): (StmtId, StmtId),
        body: &Block,
        sp: Span,
    ) {
        let k = self.k;
        let Stmt::Op(Op::Mma {
            acc: Operand::Frag(f),
            a,
            b,
            accumulate,
            release,
        }) = k.stmts[mma].clone()
        else {
            return;
        };
        let Stmt::Op(wait_op) = k.stmts[wait].clone() else {
            return;
        };
        let pipe = &k.pipelines[p];
        let (pn, stages) = (c_ident(&pipe.name), pipe.stages);
        let fname = c_ident(&k.fragments[f].name);
        let (wsp, msp) = (k.stmts.span(wait), k.stmts.span(mma));
        let stage_lines = |me: &mut Self, it: &str| {
            me.line(&format!("const uint32_t {pn}_stage = ({it}) % {stages};"));
            me.line(&format!(
                "const uint32_t {pn}_phase = (({it}) / {stages}) & 1;"
            ));
        };
        // Issue one iteration's wait and MMA (into `buf`), for pipeline iteration `it`.
        let issue = |me: &mut Self, it: &str, buf: &str| {
            stage_lines(me, it);
            me.op(&wait_op, wsp);
            me.frag_alias.insert(f, buf.to_string());
            me.mma(&Operand::Frag(f), &a, &b, accumulate, None, msp);
            me.frag_alias.remove(&f);
        };
        self.line(&format!("{{  // {} ({}): double-buffered `{}` — the MMA of iteration k+1 overlaps the rest of iteration k", var, self.loc(sp), k.fragments[f].name));
        self.indent += 1;
        self.line(&format!("const int {var}_end = {stop};"));
        self.pipes.push((id, p));
        self.line(&format!(
            "if ({start} < {var}_end) {{  // first iteration's MMA"
        ));
        self.indent += 1;
        issue(self, &format!("{pn}_it"), &format!("{fname}_b0"));
        self.line("cake_wgmma_wait<0>();");
        self.indent -= 1;
        self.line("}");
        self.line(&format!(
            "for (int {var}_pair = {start}; {var}_pair < {var}_end; {var}_pair += 2) {{"
        ));
        self.indent += 1;
        for (half, (cur, nxt)) in [("b0", "b1"), ("b1", "b0")].into_iter().enumerate() {
            if half == 1 {
                self.line(&format!("if ({var}_pair + 1 < {var}_end) {{"));
                self.indent += 1;
            } else {
                self.line("{");
                self.indent += 1;
            }
            self.line(&format!("const int {var} = {var}_pair + {half};"));
            stage_lines(self, &format!("{pn}_it"));
            // This iteration's MMA retired before the iteration began; the next one is issued
            // now and runs while the rest of this iteration reads `cur`.
            self.line(&format!("if ({var} + 1 < {var}_end) {{"));
            self.indent += 1;
            issue(self, &format!("{pn}_it + 1"), &format!("{fname}_{nxt}"));
            self.indent -= 1;
            self.line("}");
            self.line(&format!("cake_wgmma_fence_regs({fname}_{cur});"));
            if let Some(bar) = release {
                let slot = self.barrier_slot(bar);
                let arrive = self.wgmma_release(bar, &slot, None);
                self.line(&format!("{arrive}  // release ({})", self.loc(msp)));
            }
            self.frag_alias.insert(f, format!("{fname}_{cur}"));
            self.invalidate_reductions(None);
            for &s in &body[2..] {
                self.stmt(s);
            }
            self.invalidate_reductions(None);
            self.frag_alias.remove(&f);
            // Nothing stays in flight across the loop's back edge: ptxas cannot follow a
            // wgmma group through it and would serialise every MMA (C7514).
            self.line("cake_wgmma_wait<0>();");
            self.line(&format!("++{pn}_it;"));
            self.indent -= 1;
            self.line("}");
        }
        self.indent -= 1;
        self.line("}");
        self.pipes.pop();
        self.indent -= 1;
        self.line("}");
    }

    /// The statement that releases barrier `b` at `slot` once the current role's wgmma groups
    /// have retired: one thread per warpgroup (a group completes for the whole warpgroup), thread
    /// c of each warpgroup in CTA c for a cluster barrier (`cake_ir::sync` counts them).
    /// `when` is a further condition (a deferred release has a stage pending).
    pub(crate) fn wgmma_release(&self, b: BarrierId, slot: &str, when: Option<&str>) -> String {
        let (role, _) = self.role.expect("inside a role");
        let t = format!("{}_thread", c_ident(&self.k.roles[role].name));
        let when = when.map(|w| format!("{w} && ")).unwrap_or_default();
        if self.k.barriers[b].cluster && self.clustered() {
            let n = self.cluster_ctas();
            format!("if ({when}{t} < {n}) cake_mbar_release_cluster({slot}, {t});")
        } else {
            format!("if ({when}{t} == 0) cake_mbar_arrive({slot});")
        }
    }

    /// `lm.mma(acc, frag, view.T)` on sm_90a: wgmma with A from registers (a [`FragLayout::WgmmaA`]
    /// fragment, four registers per k-step) and B from shared memory.
    pub(crate) fn wgmma_register_a(
        &mut self,
        accf: FragId,
        af: FragId,
        bv: &ViewRef,
        accumulate: ExprId,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        let k = self.k;
        let (Some(FragLayout::WgmmaAcc { n }), Some(FragLayout::WgmmaA { k: kdim })) = (
            self.frag_layouts.get(&accf).copied(),
            self.frag_layouts.get(&af).copied(),
        ) else {
            return;
        };
        if !bv.transposed {
            self.unsupported(
                sp,
                "only a K-major `b` is lowered yet: the transpose of an (N, K) view",
            );
            return;
        }
        let input = match k.fragments[af].dtype {
            DType::BF16 => "bf16",
            _ => "f16",
        };
        if k.views[bv.view].dtype != k.fragments[af].dtype {
            self.unsupported(sp, "wgmma takes `a` and `b` of the same 16-bit type");
            return;
        }
        self.wgmma_rs_shapes.insert((n, input));
        let (accn, an) = (self.frag_name(accf), self.frag_name(af));
        let acc_pred = self.ix(accumulate);
        self.line(&format!(
            "// mma {accn} += {} (registers) * {}.T ({})",
            k.fragments[af].name,
            k.views[bv.view].name,
            self.loc(sp)
        ));
        self.line("cake_wgmma_fence();");
        for kk in 0..kdim / 16 {
            let Some(bd) = self.wgmma_operand(bv, kk, 16, sp) else {
                return;
            };
            let scale = if kk == 0 {
                format!("({acc_pred}) ? 1 : 0")
            } else {
                "1".into()
            };
            let r = 4 * kk;
            self.line(&format!(
                "cake_wgmma_m64n{n}k16_f32_{input}_rs({accn}, {an}[{r}], {an}[{}], {an}[{}], {an}[{}], cake_wgmma_desc({bd}, 16, 1024, 1), {scale});",
                r + 1,
                r + 2,
                r + 3
            ));
        }
        self.wgmma_commit(accf, release);
    }

    pub(crate) fn mma(
        &mut self,
        acc: &Operand,
        a: &Operand,
        b: &Operand,
        accumulate: ExprId,
        release: Option<BarrierId>,
        sp: Span,
    ) {
        if self.mma_sync() {
            return self.mma_sync_op(acc, a, b, accumulate, release, sp);
        }
        let k = self.k;
        if let (Operand::Frag(accf), Operand::Frag(af), Operand::Smem(bv)) = (acc, a, b) {
            return self.wgmma_register_a(*accf, *af, bv, accumulate, release, sp);
        }
        let (Operand::Frag(accf), Operand::Smem(av), Operand::Smem(bv)) = (acc, a, b) else {
            self.unsupported(sp, "on sm_90a, lm.mma is lowered with the accumulator in registers, `b` in shared memory and `a` in shared memory or registers");
            return;
        };
        let Some(FragLayout::WgmmaAcc { n }) = self.frag_layouts.get(accf).copied() else {
            return;
        };
        if av.transposed || !bv.transposed {
            self.unsupported(sp, "only K-major operands are lowered yet: `a` as stored (M, K) and `b` as the transpose of an (N, K) view");
            return;
        }
        let input = match k.views[av.view].dtype {
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            other => {
                self.unsupported(sp, format!("wgmma with {other} inputs is not lowered yet"));
                return;
            }
        };
        let kdim = k.views[av.view].shape[1];
        let k_step = 16;
        self.wgmma_shapes.insert((n, input));
        let accn = self.frag_name(*accf);
        let acc_pred = self.ix(accumulate);
        self.line(&format!(
            "// mma {accn} += {} * {}.T ({})",
            k.views[av.view].name,
            k.views[bv.view].name,
            self.loc(sp)
        ));
        self.line("cake_wgmma_fence();");
        for kk in 0..kdim / k_step {
            let (Some(ad), Some(bd)) = (
                self.wgmma_operand(av, kk, k_step, sp),
                self.wgmma_operand(bv, kk, k_step, sp),
            ) else {
                return;
            };
            let scale = if kk == 0 {
                format!("({acc_pred}) ? 1 : 0")
            } else {
                "1".into()
            };
            self.line(&format!(
                "cake_wgmma_m64n{n}k16_f32_{input}({accn}, cake_wgmma_desc({ad}, 16, 1024, 1), cake_wgmma_desc({bd}, 16, 1024, 1), {scale});"
            ));
        }
        self.wgmma_commit(*accf, release);
    }

    /// Close a group of wgmma into `accf`: commit it, then release `release` once the MMAs have
    /// retired — right away, or one iteration later when the loop keeps a group in flight
    /// (deferred release) — or, without a release, remember the accumulator as in flight.
    pub(crate) fn wgmma_commit(&mut self, accf: FragId, release: Option<BarrierId>) {
        let k = self.k;
        self.line("cake_wgmma_commit();");
        if let Some(bar) = release {
            let bn = c_ident(&k.barriers[bar].name);
            if self.deferred_release.iter().any(|(b, _)| *b == bar) {
                let pipe = self
                    .pipes
                    .last()
                    .map(|(_, p)| c_ident(&k.pipelines[*p].name))
                    .unwrap_or_default();
                self.line("cake_wgmma_wait<1>();  // the previous iteration's MMAs have retired");
                let pending = format!("{bn}_pending >= 0");
                let arrive =
                    self.wgmma_release(bar, &format!("{bn} + 8 * {bn}_pending"), Some(&pending));
                self.line(&format!("{arrive}  // release"));
                self.line(&format!("{bn}_pending = (int){pipe}_stage;"));
            } else {
                let slot = self.barrier_slot(bar);
                self.line("cake_wgmma_wait<0>();");
                self.mma_in_flight.clear();
                let arrive = self.wgmma_release(bar, &slot, None);
                self.line(&format!("{arrive}  // release"));
            }
        } else if self.deferred_release.is_empty() {
            self.mma_in_flight.insert(accf);
        }
    }

    /// Before an operation that reads or overwrites the accumulator of a wgmma group still in
    /// flight, wait for the groups to retire (the registers are the tensor cores' until then).
    pub(crate) fn retire_mmas_before(&mut self, op: &Op) {
        if self.mma_in_flight.is_empty() {
            return;
        }
        let k = self.k;
        let reads = |e: &ExprId, f: &FragId| k.expr_reads_fragment(*e, *f);
        let hit = self.mma_in_flight.iter().find(|f| match op {
            Op::Assign { dst, value } => dst == *f || reads(value, f),
            Op::Store { value, .. }
            | Op::SmemStore { value, .. }
            | Op::TmemStore { src: value, .. } => reads(value, f),
            Op::Mma {
                a: Operand::Frag(a),
                ..
            } => a == *f,
            _ => false,
        });
        if let Some(&f) = hit {
            self.line(&format!(
                "cake_wgmma_wait<0>();  // the MMAs into `{}` have retired",
                k.fragments[f].name
            ));
            self.mma_in_flight.clear();
        }
    }
}
