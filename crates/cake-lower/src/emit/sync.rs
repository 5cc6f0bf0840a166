//! Barriers: the arrival statement for a barrier slot, named barriers and the per-replica syncs
//! of TMA stores, and the expect-tx bookkeeping of TMA loads.

use super::*;

impl Emitter<'_> {
    /// `view.tma_load(tensor, coords, barrier, multicast, evict)` (`op`): one thread issues one bulk tensor copy
    /// per swizzle panel, after one `expect_tx` per phase for all of this role's loads signalling
    /// the barrier; a multicast load fetches this CTA's share of the rows for every CTA.
    pub(crate) fn tma_load(&mut self, op: &Op, sp: Span) {
        let Op::TmaLoad {
            dst,
            src,
            coords,
            barrier,
            multicast,
            evict,
        } = op
        else {
            unreachable!("tma_load lowers TMA loads")
        };
        let (src, barrier, multicast, evict) = (*src, *barrier, *multicast, *evict);
        let k = self.k;
        let mc = multicast;
        if let Err(m) = legal::tma_load(k, self.target, dst, src, mc) {
            return self.unsupported(sp, m);
        }
        let view = k.views[dst.view].clone();
        let rank = self.rank(src);
        if rank > 3 || evict.is_some() {
            self.tma_load_ranks.insert((rank, mc > 1, evict));
        }
        let hint = crate::prelude::tma_load_suffix(evict);
        let box_rows = self.box_rows(dst, mc);
        let box_dims = self.tma_box(&view, box_rows, rank);
        let tmap = self.tmap_name(src, &box_dims, view.swizzle);
        let slot = self.barrier_slot(barrier);
        let mut dst_base = self.view_base(dst);
        if let Some((start, _)) = dst.rows {
            // A row range of a panel-major view starts `start` rows into every panel.
            let row_bytes = view.panel_cols() * view.dtype.bytes();
            dst_base = format!("({dst_base} + ({}) * {row_bytes})", self.ix(start));
        }
        let mut c: Vec<String> = coords.iter().map(|e| self.ix(*e)).collect();
        c.reverse(); // innermost first
        self.line(&format!(
            "// tma_load {} <- {} ({})",
            view.name,
            k.params[src].name,
            self.loc(sp)
        ));
        let (role, _) = self.role.expect("inside a role");
        self.on_one_thread(|me| {
            // One expect_tx per phase covers every load of this role signalling the barrier.
            let first_to_barrier = me.first_tma_to(barrier, role);
            if first_to_barrier {
                let bytes = me.role_tx_bytes(barrier, role);
                me.line(&format!("cake_mbar_arrive_expect_tx({slot}, {bytes});"));
            }
            // Bytes of one swizzle panel (the whole view when it has one panel).
            let panel_bytes = view.shape[..view.shape.len() - 1]
                .iter()
                .map(|&d| d as u64)
                .product::<u64>()
                * view.panel_cols() as u64
                * view.dtype.bytes() as u64;
            if mc > 1 {
                // This CTA loads its share of the rows and delivers it to every CTA.
                let share = box_rows.unwrap_or(0);
                let row_bytes = view.panel_cols() * view.dtype.bytes();
                me.line(&format!(
                    "// multicast to {mc} CTAs: this one loads rows [{share} * cta_rank, +{share}) of the box"
                ));
                dst_base = format!("{dst_base} + cta_rank * {}", share * row_bytes);
                c[1] = format!("{} + (int)cta_rank * {share}", c[1]);
            }
            let mask = (1u32 << mc) - 1;
            for p in 0..view.panels() {
                let mut cc = c.clone();
                if p > 0 {
                    cc[0] = format!("{} + {}", c[0], p * view.panel_cols());
                }
                let dst_addr = if p == 0 {
                    dst_base.clone()
                } else {
                    format!("{dst_base} + {}", p as u64 * panel_bytes)
                };
                if mc > 1 {
                    me.line(&format!(
                        "cake_tma_load_{rank}d_multicast{hint}({dst_addr}, &{tmap}, {slot}, {mask:#x}, {});",
                        cc.join(", ")
                    ));
                } else {
                    me.line(&format!(
                        "cake_tma_load_{rank}d{hint}({dst_addr}, &{tmap}, {slot}, {});",
                        cc.join(", ")
                    ));
                }
            }
        });
    }

    /// The statement that arrives on barrier `b` at `slot` from the current role. Arrivals on a
    /// cluster barrier reach every CTA (`cake_ir::sync` counts them): an issuing thread arrives
    /// in each one; a warp converges, which orders every lane's accesses before the arrivals,
    /// and lane c arrives in CTA c.
    pub(crate) fn arrive(&self, b: BarrierId, slot: &str) -> String {
        if !self.k.barriers[b].cluster || !self.clustered() {
            return format!("cake_mbar_arrive({slot});");
        }
        let n = self.cluster_ctas();
        match self.role {
            Some((_, true)) => format!(
                "for (uint32_t cta = 0; cta < {n}; ++cta) cake_mbar_arrive_cluster({slot}, cta);"
            ),
            _ => format!(
                "{{ __syncwarp(); if (threadIdx.x % 32 < {n}) cake_mbar_arrive_cluster({slot}, threadIdx.x % 32); }}"
            ),
        }
    }

    /// Address of the barrier slot for the current iteration.
    pub(crate) fn barrier_slot(&self, b: BarrierId) -> String {
        let bar = &self.k.barriers[b];
        let name = c_ident(&bar.name);
        match bar.pipeline {
            Some(p) => {
                if self.pipes.iter().any(|(_, q)| *q == p) {
                    format!("{name} + 8 * {}", self.pipe_var(p, "stage"))
                } else {
                    name
                }
            }
            None => name,
        }
    }

    /// Whether the TMA load being emitted is the first (in program order) of this role that
    /// signals `barrier`: the one whose `expect_tx` covers them all.
    pub(crate) fn first_tma_to(&self, barrier: BarrierId, role: RoleId) -> bool {
        let first = self
            .role_ops(role)
            .find(|s| matches!(s.op, Op::TmaLoad { barrier: b, .. } if b == barrier));
        first.is_some_and(|s| Some(s.stmt) == self.op_stmt)
    }

    pub(crate) fn role_tx_bytes(&self, barrier: BarrierId, role: RoleId) -> u64 {
        self.role_ops(role)
            .map(|s| match &s.op {
                Op::TmaLoad {
                    dst, barrier: b, ..
                } if *b == barrier => tma_bytes(self.k, dst),
                _ => 0,
            })
            .sum()
    }

    /// Whether the role's replicas synchronise their own threads (`replica_sync`): around TMA
    /// stores, shared-memory fills and scatter-adds.
    pub(crate) fn role_syncs_replicas(&self, role: RoleId) -> bool {
        legal::role_syncs_replicas(self.k, self.kf, role)
    }

    /// Synchronise the threads of the current role replica: one hardware named barrier per
    /// replica of each role that stores through TMA, with ids from 8 up (clear of the ids
    /// libraries reserve) to 15, the last one the hardware has.
    pub(crate) fn replica_sync(&mut self, sp: Span) {
        let (role, _) = self.role.expect("role");
        let r = &self.k.roles[role];
        let name = c_ident(&r.name);
        let threads = r.unit.threads();
        let first_id = match legal::replica_barrier(self.k, self.kf, role).and_then(|id| {
            legal::replica_sync_under_vote(self.warp_branches, legal::SYNCED_WORK).map(|()| id)
        }) {
            Ok(id) => id,
            Err(m) => return self.unsupported(sp, m),
        };
        self.line(&format!(
            "cake_named_sync({first_id} + {name}_index, {threads});"
        ));
    }

    /// `lm.sync(nb)`: `bar.sync` on the named barrier's hardware id with the thread count of
    /// its roles. Ids 1–7 go to named barriers in declaration order (0 is `__syncthreads`, 8–15
    /// the per-replica barriers of TMA stores).
    pub(crate) fn named_sync(&mut self, nb: NamedBarrierId, sp: Span) {
        let k = self.k;
        let issue_only = matches!(self.role, Some((_, true)));
        let id = match legal::named_sync(nb, issue_only) {
            Ok(id) => id,
            Err(m) => return self.unsupported(sp, m),
        };
        let b = &k.named_barriers[nb];
        let threads: u32 = b.roles.iter().map(|r| k.roles[*r].threads()).sum();
        self.line(&format!(
            "cake_named_sync({id}, {threads});  // sync {} ({})",
            b.name,
            self.loc(sp)
        ));
    }
}
