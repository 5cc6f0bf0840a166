//! Stream-K (docs/language.md §8.1a): the tile loop over a CTA's even share of the tiles' K
//! steps, and `lm.stream_fixup`, which adds a tile's partial accumulators into the run that
//! ends the tile.
//!
//! With `n` CTAs and `w = tiles / n` whole waves, the first `w − 1` waves are data-parallel:
//! CTA c takes tiles `c, c + n, …` whole, so the CTAs running at once work on neighbouring
//! tiles and share their operands in L2. The rest (between one and two waves' worth) is shared
//! out by steps: CTA c takes steps `[all·c/n, all·(c+1)/n)` of the `all = rest · steps` and walks
//! them from the end back, one run (a tile's steps inside the share) at a time. Only a share's
//! last run can stop before its tile's end, so each CTA publishes at most one partial per
//! launch, in its slot of the launch's workspace (`state.rs`); the run that ends a tile is its
//! CTA's first and runs last, after every CTA before it has published the runs it waits for, as
//! their first shared-out work. Waits only go to CTAs of lower index, which start no later.

use super::timeline::FixupPoint;
use super::{c_ident, state, Emitter};
use crate::legal::{self, Scope, STREAM_CTAS};
use cake_diag::Span;
use cake_ir::*;

/// The prelude's stream-K helpers: a release store and an acquire load of a ready flag at GPU
/// scope (sm_70 and later).
pub(crate) const STREAM_OPS: &str = r#"
// Stream-K fix-up: ready flags published with release and read with acquire at GPU scope.
__device__ __forceinline__ void cake_st_release_gpu(unsigned int* p, unsigned int v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ unsigned int cake_ld_acquire_gpu(const unsigned int* p) {
  unsigned int v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void cake_st_relaxed_gpu(unsigned int* p, unsigned int v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" :: "l"(p), "r"(v) : "memory");
}
"#;

impl Emitter<'_> {
    /// The kernel prologue's stream-K lines: the K steps of a tile, the data-parallel waves and
    /// this CTA's share of the rest.
    pub(crate) fn stream_prologue(&mut self, steps: ExprId) {
        let steps = self.ix(steps);
        self.line(&format!(
            "const int stream_steps = {steps};  // K steps per tile, shared out by stream-K"
        ));
        self.line(&format!(
            "const int stream_grid = min((int)gridDim.x, {STREAM_CTAS});  // CTAs with a workspace slot"
        ));
        self.line("const int stream_dp_waves = max(tiles_total / stream_grid - 1, 0);  // whole waves of whole tiles first");
        self.line("const int stream_dp_tiles = stream_dp_waves * stream_grid;");
        self.line(
            "const long long stream_all = (long long)(tiles_total - stream_dp_tiles) * stream_steps;  // the steps shared out",
        );
        self.line("const int stream_ctas = (int)min(stream_all, (long long)stream_grid);  // each with at least one step");
        self.line("const bool stream_member = (int)blockIdx.x < stream_ctas;");
        self.line("const long long stream_first = stream_member ? stream_all * blockIdx.x / stream_ctas : 0;  // this CTA's steps: [stream_first, stream_end)");
        self.line(
            "const long long stream_end = stream_member ? stream_all * (blockIdx.x + 1) / stream_ctas : 0;",
        );
    }

    /// The tile loop of a stream-K schedule: one iteration per run, binding the run's first and
    /// stop step as the tile coordinates of axes `counts.len()` and `counts.len() + 1`. With
    /// `group`, the tiles are numbered in grouped raster order, so the CTAs running at once
    /// work on neighbouring tiles, as in a tile loop with `group=`.
    pub(crate) fn stream_tile_loop(
        &mut self,
        counts: &[ExprId],
        names: &[String],
        group: Option<u32>,
        body: &Block,
        sp: Span,
    ) {
        let (k0, k1) = (counts.len(), counts.len() + 1);
        let open = format!(
            "for (int stream_dp = 0; ; ++stream_dp) {{  // runs ({}): whole tiles of the data-parallel waves, then this CTA's shared-out steps, last first ({})",
            names.join(", "),
            self.loc(sp)
        );
        self.line("long long stream_at = stream_end;");
        self.line("CAKE_STAMP_FLAG(stream_stamped_shared);");
        self.braced(&open, |me| {
            me.line("int tile;");
            me.line("long long stream_tile_first;  // the tile's first step in the shared-out part");
            me.line(&format!("int tile_{k0}, tile_{k1};  // {}, {}: the run's first step and its stop", names[k0], names[k1]));
            me.braced_else(
                "if (stream_dp < stream_dp_waves) {",
                |me| {
                    me.line("tile = (int)blockIdx.x + stream_dp * stream_grid;");
                    me.line("if ((int)blockIdx.x >= stream_grid) break;");
                    me.line("stream_tile_first = 0;");
                    me.line(&format!("tile_{k0} = 0;"));
                    me.line(&format!("tile_{k1} = stream_steps;"));
                },
                |me| {
                    me.line("if (stream_at <= stream_first) break;");
                    let slot = super::timeline::shared_out_slot(me.k);
                    me.line(&format!("CAKE_STAMP_ONCE(threadIdx.x == 0, {slot}, stream_stamped_shared);  // timeline: the first shared-out run"));
                    me.line("const int rest = (int)((stream_at - 1) / stream_steps);");
                    me.line("tile = stream_dp_tiles + rest;");
                    me.line("stream_tile_first = (long long)rest * stream_steps;");
                    me.line(&format!(
                        "tile_{k0} = (int)(max(stream_first, stream_tile_first) - stream_tile_first);"
                    ));
                    me.line(&format!("tile_{k1} = (int)(stream_at - stream_tile_first);"));
                    me.line(&format!("stream_at = stream_tile_first + tile_{k0};"));
                },
            );
            me.tile_coords(counts, group);
            me.block(body);
        });
    }

    /// `lm.stream_fixup(frag)`: a run that stops before its tile's end publishes `frag`; a run
    /// that ends a tile it did not start adds the partials of the CTAs before it that ran the
    /// tile's earlier steps, each once, and resets their flags for the next launch.
    pub(crate) fn stream_fixup(&mut self, frag: FragId, sp: Span) {
        let k = self.k;
        let (role, issue_only) = self.role.expect("inside a role");
        let regs = match legal::stream_fixup_registers(k, role, issue_only, frag, self.layout(frag))
        {
            Ok(n) => n,
            Err(m) => return self.unsupported(sp, m),
        };
        let Some((_, k0, k1)) = k.stream_k() else {
            return self.unsupported(sp, "`lm.stream_fixup` outside a stream-K tile loop");
        };
        let r = &k.roles[role];
        let (replicas, threads) = (r.replicas(), r.threads() / r.replicas());
        let warps = threads / 32;
        let rn = c_ident(&r.name);
        let acc = self.frag_name(frag);
        let (ws, ready) = state::stream_regions(k, frag);
        let (Some(ws_ptr), Some(ready_ptr)) = (self.state_pointer(&ws), self.state_pointer(&ready))
        else {
            return self.unsupported(sp, "`lm.stream_fixup` without its workspace");
        };
        let slot = |cta: &str| {
            format!(
                "{ws} + ((size_t)({cta}) * {replicas} + {rn}_index) * {} + {rn}_thread",
                regs * threads
            )
        };
        let flag = |cta: &str| {
            format!("{ready} + ((size_t)({cta}) * {replicas} + {rn}_index) * {warps} + {rn}_thread / 32")
        };
        self.line(&format!(
            "// stream_fixup {} ({})",
            k.fragments[frag].name,
            self.loc(sp)
        ));
        self.line(&ws_ptr);
        self.line(&ready_ptr);
        self.braced_else(
            &format!("if (tile_{k1} < stream_steps) {{  // the tile goes on past this run: publish the partial"),
            |me| {
                me.line(&format!("float* const slot = {};", slot("blockIdx.x")));
                me.unrolled(&format!("for (int r = 0; r < {regs}; ++r) {{"), |me| {
                    me.line(&format!("__stcg(slot + r * {threads}, {acc}[r]);"));
                });
                me.line("__threadfence();");
                me.line("__syncwarp();");
                me.line(&format!(
                    "if ({rn}_thread % 32 == 0) cake_st_release_gpu({}, 1u);",
                    flag("blockIdx.x")
                ));
                me.stamp_fixup(role, FixupPoint::Publish);
            },
            |me| {
                me.braced(
                    &format!("if (tile_{k0} > 0) {{  // the run ends a tile begun before this CTA's share: add the partials"),
                    |me| {
                        me.stamp_fixup(role, FixupPoint::Wait);
                        me.braced("for (int c = (int)blockIdx.x - 1; c >= 0; --c) {", |me| {
                            me.line(&format!("unsigned int* const ready = {};", flag("c")));
                            me.line("while (cake_ld_acquire_gpu(ready) == 0u) {}");
                            me.line(&format!("const float* const slot = {};", slot("c")));
                            me.unrolled(&format!("for (int r = 0; r < {regs}; ++r) {{"), |me| {
                                me.line(&format!("{acc}[r] += __ldcg(slot + r * {threads});"));
                            });
                            me.line("__syncwarp();");
                            me.line(&format!(
                                "if ({rn}_thread % 32 == 0) cake_st_relaxed_gpu(ready, 0u);"
                            ));
                            me.line("if (stream_all * c / stream_ctas <= stream_tile_first) break;  // CTA c ran the tile's first step");
                        });
                        me.stamp_fixup(role, FixupPoint::Done);
                    },
                );
            },
        );
        self.invalidate_reductions(Some(frag));
    }
}
