//! Dynamic tile loops (`lm.tiles(..., dynamic=True)`): a persistent grid whose CTAs take their
//! tiles from a counter in global memory as each comes to its next one, so an SM that draws
//! less memory bandwidth or runs slower tiles takes fewer of them.
//!
//! One thread of the CTA, the *taker* (thread 0 of the first role that copies into shared memory
//! in the tile loop, a producer, else of the first role that runs the loop), takes the tiles:
//! the CTA's first tile is its index, each later one is `gridDim.x` plus an `atomicAdd` on the
//! counter, issued when the taker's role has issued the tile before (a producer: its last copy),
//! so the round trip overlaps those copies and a long tile's successor is chosen near its end.
//! Each role has its own copy of the tile loop (the emitter's one branch per role), so the taker
//! hands every tile to all of them through a ring in shared memory: it writes the index into
//! the next slot and arrives on the slot's full barrier; every thread that runs the loop waits
//! on that barrier, reads the index and arrives on the slot's empty barrier (once per warp, or
//! per thread of an issue-only role), which the taker waits on before it writes the slot again.
//! An index past the last tile ends every role's loop. The ring has a slot more than the
//! deepest pipeline has stages (`cake_ir::layout::tile_ring_slots`), so a producer may run as
//! many tiles ahead of its consumers as its stages allow, as in a static persistent loop.
//!
//! The counter and a count of the CTAs that have taken their last tile are the first words of
//! the launch's workspace (`state.rs`); the last CTA to finish sets both back to zero, so a
//! workspace the next launch on the stream reuses needs no memset (docs/launch.md, `state`).

use super::*;

/// The module's counters and the ring's shared-memory accesses.
pub(crate) const DYNAMIC_OPS: &str = r#"
// Dynamic tile loop: `tiles[0]` counts the tiles taken past each CTA's first, `tiles[1]` the CTAs
// that have taken their last (the launch's workspace: zero when it starts, zero when it ends).
static __device__ __forceinline__ void cake_tile_put(uint32_t addr, int tile) {
  asm volatile("st.shared.s32 [%0], %1;" :: "r"(addr), "r"(tile) : "memory");
}
static __device__ __forceinline__ int cake_tile_get(uint32_t addr) {
  int tile;
  asm volatile("ld.shared.s32 %0, [%1];" : "=r"(tile) : "r"(addr) : "memory");
  return tile;
}
// The taker's last step: its CTA takes no more tiles. The last CTA to get here resets the
// counters (every other CTA's grabs have come back before it counted itself done).
static __device__ __forceinline__ void cake_tiles_leave(unsigned int* tiles) {
  __threadfence();
  if (atomicAdd(tiles + 1, 1u) == gridDim.x - 1) {
    tiles[0] = 0u;
    tiles[1] = 0u;
    __threadfence();
  }
}
"#;

impl Emitter<'_> {
    /// The tile loop's body.
    fn tile_loop_body(&self) -> Option<&Block> {
        let k = self.k;
        k.body.iter().find_map(|&s| match &k.stmts[s] {
            Stmt::Loop { id, body } if matches!(k.loops[*id].kind, LoopKind::Tiles { .. }) => {
                Some(body)
            }
            _ => None,
        })
    }

    /// The role whose thread takes the tiles: the first (in declaration order) that runs the
    /// tile loop and copies into shared memory there — a producer runs ahead of the roles it
    /// feeds, so it reaches each next tile first — or else the first that runs the loop.
    fn tile_taker(&self) -> Option<RoleId> {
        // Every operation sits inside the one tile loop, so a role's operations are its work there.
        let copies = |r: RoleId| {
            self.role_ops(r)
                .any(|site| matches!(site.op, Op::TmaLoad { .. } | Op::CpAsync { .. }))
        };
        let roles = self.tile_ring_roles();
        roles
            .iter()
            .find(|(r, _)| copies(*r))
            .or(roles.first())
            .map(|(r, _)| *r)
    }

    /// The roles whose branch runs the tile loop (those with work inside it), in declaration
    /// order, with their arrivals on the ring's empty barrier per tile.
    fn tile_ring_roles(&self) -> Vec<(RoleId, u32)> {
        let k = self.k;
        let Some(body) = self.tile_loop_body() else {
            return Vec::new();
        };
        k.roles
            .iter()
            .filter(|(rid, _)| legal::has_role_work(k, *rid, body, false))
            .map(|(rid, role)| {
                let arrivals = if self.kf.issue_only[rid.index()] {
                    role.replicas()
                } else {
                    role.warps().len() as u32
                };
                (rid, arrivals)
            })
            .collect()
    }

    /// The prologue's names for the ring.
    pub(crate) fn tile_ring_names(&mut self) {
        let Some(ring) = self.layout.tile_ring.clone() else {
            return;
        };
        let slots = ring.slots;
        self.line(&format!(
            "const uint32_t tiles_full = cake_smem + {};  // dynamic tiles: {slots} slot(s) of the ring that hands each tile to every role",
            ring.offset
        ));
        self.line(&format!(
            "const uint32_t tiles_empty = cake_smem + {};  // a slot read by every role",
            ring.empty_offset()
        ));
        self.line(&format!(
            "const uint32_t tiles_index = cake_smem + {};  // the slots' tile indices",
            ring.index_offset()
        ));
    }

    /// The ring's barriers, initialised by thread 0 with the others.
    pub(crate) fn tile_ring_init(&mut self) {
        let Some(ring) = self.layout.tile_ring.clone() else {
            return;
        };
        let arrivals: u32 = self.tile_ring_roles().iter().map(|(_, n)| n).sum();
        self.line(&format!(
            "for (int s = 0; s < {}; ++s) {{ cake_mbar_init(tiles_full + 8 * s, 1); cake_mbar_init(tiles_empty + 8 * s, {}); }}  // dynamic tiles: the taker; every warp that runs the tile loop",
            ring.slots,
            arrivals.max(1)
        ));
    }

    /// The tile loop of a dynamic schedule, for the current role.
    pub(crate) fn dynamic_tile_loop(
        &mut self,
        counts: &[ExprId],
        names: &[String],
        group: Option<u32>,
        body: &Block,
        sp: Span,
    ) {
        let Some(ring) = self.layout.tile_ring.clone() else {
            return self.unsupported(sp, "a dynamic tile loop without its ring");
        };
        let (role, issue_only) = self.role.expect("inside a role");
        let rn = c_ident(&self.k.roles[role].name);
        let takes = self.tile_taker() == Some(role);
        let slots = ring.slots;
        self.line("uint32_t tile_it = 0;  // tiles this thread has read from the ring");
        if takes {
            self.line("unsigned int tile_next = 0u;  // the taker's grab of its next tile");
            match self.state_pointer(state::TILE_COUNTERS) {
                Some(p) => self.line(&p),
                None => return self.unsupported(sp, "a dynamic tile loop without its counters"),
            }
        }
        let open = format!(
            "for (;;) {{  // tiles ({}), taken dynamically ({})",
            names.join(", "),
            self.loc(sp)
        );
        self.braced(&open, |me| {
            me.line(&format!("const uint32_t tile_slot = tile_it % {slots};"));
            me.line(&format!("const uint32_t tile_phase = (tile_it / {slots}) & 1;"));
            if takes {
                me.braced(
                    &format!("if ({rn}_index == 0 && {rn}_thread == 0) {{  // the taker"),
                    |me| {
                        me.line("cake_mbar_wait(tiles_empty + 8 * tile_slot, tile_phase ^ 1);  // every role has read the slot's last tile");
                        me.line("cake_tile_put(tiles_index + 4 * tile_slot, tile_it == 0 ? (int)blockIdx.x : (int)min(tile_next, (unsigned int)tiles_total));");
                        me.line("cake_mbar_arrive(tiles_full + 8 * tile_slot);");
                    },
                );
            }
            me.line("cake_mbar_wait(tiles_full + 8 * tile_slot, tile_phase);");
            me.line("const int tile = cake_tile_get(tiles_index + 4 * tile_slot);");
            if issue_only {
                me.line("cake_mbar_arrive(tiles_empty + 8 * tile_slot);");
            } else {
                me.line("__syncwarp();");
                me.line(&format!(
                    "if ({rn}_thread % 32 == 0) cake_mbar_arrive(tiles_empty + 8 * tile_slot);"
                ));
            }
            me.line("++tile_it;");
            me.line("if (tile >= tiles_total) break;  // no tiles left");
            me.tile_coords(counts, group);
            me.block(body);
            if takes {
                // After the tile's work is issued, so the grab's round trip overlaps its copies.
                me.line(&format!(
                    "if ({rn}_index == 0 && {rn}_thread == 0) tile_next = gridDim.x + atomicAdd(cake_tiles, 1u);  // the taker grabs its next tile"
                ));
            }
        });
        if takes {
            self.line(&format!(
                "if ({rn}_index == 0 && {rn}_thread == 0) cake_tiles_leave(cake_tiles);  // the taker's grabs have all come back"
            ));
        }
    }
}
