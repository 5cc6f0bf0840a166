//! Tensor memory as a declared resource: the kernel's TMEM regions are allocated in the prologue
//! (warp 0, before the barrier-initialisation sync), every thread reads the base address after
//! it, and warp 0 frees the allocation after every role. Keyed on what the kernel declares, like
//! barrier initialisation; the verifier admits TMEM only on targets that have it (tcgen05).

use super::*;

impl Emitter<'_> {
    /// Column offset of each TMEM region (declaration order, packed, a staged region's stages
    /// side by side) and the allocation size.
    fn tmem_columns(&self) -> (Vec<u32>, u32) {
        let mut offs = Vec::new();
        let mut cur = 0;
        for (_, t) in self.k.tmems.iter() {
            offs.push(cur);
            cur += t.total_cols();
        }
        (offs, alloc_columns(cur))
    }

    /// The TMEM address of `t`'s stage (lane 0, its first column), as C text; an explicit
    /// stage is evaluated.
    pub(crate) fn tmem_addr(&mut self, t: &TmemRef) -> String {
        if let Some(st) = t.stage {
            self.ix(st); // its checks
        }
        let (offs, _) = self.tmem_columns();
        let mut terms = vec!["cake_tmem".to_string()];
        if offs[t.region.index()] > 0 {
            terms.push(offs[t.region.index()].to_string());
        }
        let stage = self.tmem_stage_text(t);
        if stage != "0" {
            terms.push(format!("{} * {stage}", self.k.tmems[t.region].cols));
        }
        match terms.len() {
            1 => terms.remove(0),
            _ => format!("({})", terms.join(" + ")),
        }
    }

    /// The stage of `t` as C text: its explicit `.stage`, else the innermost pipelined loop's
    /// (as for a view).
    fn tmem_stage_text(&self, t: &TmemRef) -> String {
        // One stage is stage 0 whatever names it (the verifier keeps a named one in range).
        if self.k.tmems[t.region].stages <= 1 {
            return "0".into();
        }
        if let Some(st) = t.stage {
            return self.ix_text(st);
        }
        match self.pipes.last() {
            Some((_, p)) => self.pipe_var(*p, "stage"),
            None => "0".into(),
        }
    }

    /// Before the barrier-initialisation sync: warp 0 allocates the kernel's TMEM and gives up
    /// the right to allocate more, then fences its tcgen05 work before the sync (§9.7.16.7).
    pub(crate) fn tmem_alloc_prologue(&mut self) {
        if self.k.tmems.is_empty() {
            return;
        }
        let slot = self
            .layout
            .tmem_slot
            .expect("layout reserves the TMEM slot");
        let (offs, ncols) = self.tmem_columns();
        let regions: Vec<String> = self
            .k
            .tmems
            .iter()
            .zip(&offs)
            .map(|((_, t), o)| match t.stages {
                1 => format!("{} at column {o}", t.name),
                n => format!("{} at column {o}, {n} stages of {}", t.name, t.cols),
            })
            .collect();
        self.line(&format!(
            "// TMEM: {} column(s) allocated ({}); base address written to shared memory.",
            ncols,
            regions.join(", ")
        ));
        self.braced("if (warp == 0) {", |e| {
            e.line(&format!("cake_tmem_alloc(cake_smem + {slot}, {ncols});"));
            e.line("cake_tmem_relinquish();");
            e.line("cake_tcgen05_fence_before();");
        });
    }

    /// After the sync: every thread reads the TMEM base address.
    pub(crate) fn tmem_base_after_sync(&mut self) {
        let Some(slot) = self.layout.tmem_slot else {
            return;
        };
        self.line("cake_tcgen05_fence_after();");
        self.line(&format!(
            "const uint32_t cake_tmem = cake_ld_shared_b32(cake_smem + {slot});  // lane 0, column of the allocation"
        ));
    }

    /// After every role: all TMEM reads and MMAs are complete (every reader waited for them), so
    /// warp 0 frees the allocation behind a CTA barrier fenced on both sides.
    pub(crate) fn tmem_dealloc_epilogue(&mut self) {
        if self.k.tmems.is_empty() {
            return;
        }
        let (_, ncols) = self.tmem_columns();
        self.line("// Free TMEM once every role is done with it.");
        self.line("cake_tcgen05_fence_before();");
        self.line("__syncthreads();");
        self.braced("if (warp == 0) {", |e| {
            e.line("cake_tcgen05_fence_after();");
            e.line(&format!("cake_tmem_dealloc(cake_tmem, {ncols});"));
        });
    }
}

/// Columns `tcgen05.alloc` takes for regions of `cols` columns in total: a power of two, at
/// least 32 (PTX ISA 9.1 §9.7.16.1.2).
fn alloc_columns(cols: u32) -> u32 {
    cols.max(32).next_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_is_a_power_of_two_of_at_least_32_columns() {
        assert_eq!(alloc_columns(0), 32);
        assert_eq!(alloc_columns(16), 32);
        assert_eq!(alloc_columns(128), 128);
        assert_eq!(alloc_columns(128 + 64 + 64), 256);
        assert_eq!(alloc_columns(320), 512);
    }
}
