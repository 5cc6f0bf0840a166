pub(crate) mod mma_sync;
pub(crate) mod tcgen05;
pub(crate) mod wgmma;

use crate::emit::*;
use cake_diag::Span;
use cake_ir::*;

impl Emitter<'_> {
    /// Byte address (expression) of the K-major wgmma operand tile at k-step `kk`.
    pub(crate) fn wgmma_operand(
        &mut self,
        v: &ViewRef,
        kk: u32,
        k_step: u32,
        sp: Span,
    ) -> Option<String> {
        let view = self.k.views[v.view].clone();
        if view.shape.len() != 2 || view.swizzle != 128 {
            self.unsupported(sp, format!("wgmma operands are lowered from 2-D views with 128B swizzle; `{}` has swizzle {}", view.name, view.swizzle));
            return None;
        }
        let elem = view.dtype.bytes();
        let panel_cols = view.panel_cols();
        let k_elem = kk * k_step;
        let panel = k_elem / panel_cols;
        let within = (k_elem % panel_cols) * elem;
        let rows_total = view.shape[0];
        let base = self.view_base(v);
        let row_off = match v.rows {
            Some((start, _)) => format!(" + ({}) * {}", self.ix(start), panel_cols * elem),
            None => String::new(),
        };
        let off = panel as u64 * rows_total as u64 * (panel_cols * elem) as u64 + within as u64;
        Some(format!("{base} + {off}{row_off}"))
    }
}
