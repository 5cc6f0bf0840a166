//! Barriers: the arrival statement for a barrier slot, named barriers and the per-replica syncs
//! of TMA stores, and the expect-tx bookkeeping of TMA loads.

use super::*;

impl Emitter<'_> {
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
                    format!("{name} + 8 * {}_stage", c_ident(&self.k.pipelines[p].name))
                } else {
                    name
                }
            }
            None => name,
        }
    }

    pub(crate) fn first_tma_to(&self, barrier: BarrierId, role: RoleId, sp: Span) -> bool {
        // The first TMA op (in program order) of this role signalling this barrier.
        let mut first: Option<Span> = None;
        self.k.walk(|sid, stmt, ctx| {
            if first.is_none() && ctx.role == Some(role) {
                if let Stmt::Op(Op::TmaLoad { barrier: b, .. }) = stmt {
                    if *b == barrier {
                        first = Some(self.k.stmts.span(sid));
                    }
                }
            }
        });
        first == Some(sp)
    }

    pub(crate) fn role_tx_bytes(&self, barrier: BarrierId, role: RoleId) -> u64 {
        let mut bytes = 0;
        self.k.walk(|_, stmt, ctx| {
            if ctx.role == Some(role) {
                if let Stmt::Op(Op::TmaLoad {
                    dst, barrier: b, ..
                }) = stmt
                {
                    if *b == barrier {
                        bytes += tma_bytes(self.k, dst);
                    }
                }
            }
        });
        bytes
    }

    /// Whether the role's replicas synchronise their own threads (`replica_sync`): around TMA
    /// stores, shared-memory fills and scatter-adds.
    pub(crate) fn role_syncs_replicas(&self, role: RoleId) -> bool {
        let mut found = false;
        self.k.walk(|_, stmt, ctx| {
            if ctx.role == Some(role)
                && matches!(stmt, Stmt::Op(Op::TmaStore { .. } | Op::ScatterAdd { .. }))
            {
                found = true;
            }
            if let (Some(r), Stmt::Op(Op::SmemStore { value, .. })) = (ctx.role, stmt) {
                found |= r == role && self.k.const_number(*value).is_some();
            }
        });
        found
    }

    /// Synchronise the threads of the current role replica: one hardware named barrier per
    /// replica of each role that stores through TMA, with ids from 8 up (clear of the ids
    /// libraries reserve) to 15, the last one the hardware has.
    pub(crate) fn replica_sync(&mut self, sp: Span) {
        let (lowest, highest) = (*TMA_STORE_BARRIER_IDS.start(), *TMA_STORE_BARRIER_IDS.end());
        let (role, _) = self.role.expect("role");
        let r = &self.k.roles[role];
        let name = c_ident(&r.name);
        let threads = r.unit.threads();
        let replicas = r.replicas();
        let earlier: Vec<RoleId> = self
            .k
            .roles
            .iter()
            .map(|(h, _)| h)
            .take_while(|h| *h != role)
            .collect();
        let first_id = lowest
            + earlier
                .into_iter()
                .filter(|h| self.role_syncs_replicas(*h))
                .map(|h| self.k.roles[h].replicas())
                .sum::<u32>();
        if first_id + replicas - 1 > highest {
            self.unsupported(
                sp,
                format!(
                    "the roles that store through TMA need {} named barriers (ids {lowest}..={}); the hardware has ids up to {highest}",
                    first_id + replicas - lowest,
                    first_id + replicas - 1
                ),
            );
            return;
        }
        self.line(&format!(
            "cake_named_sync({first_id} + {name}_index, {threads});"
        ));
    }

    /// `lm.sync(nb)`: `bar.sync` on the named barrier's hardware id with the thread count of
    /// its roles. Ids 1–7 go to named barriers in declaration order (0 is `__syncthreads`, 8–15
    /// the per-replica barriers of TMA stores).
    pub(crate) fn named_sync(&mut self, nb: NamedBarrierId, sp: Span) {
        let k = self.k;
        let id = NAMED_BARRIER_IDS.start() + nb.index() as u32;
        if !NAMED_BARRIER_IDS.contains(&id) {
            self.unsupported(
                sp,
                format!(
                    "more than {} named barriers: hardware ids {NAMED_BARRIER_IDS:?} are theirs ({TMA_STORE_BARRIER_IDS:?} belong to TMA stores)",
                    NAMED_BARRIER_IDS.end()
                ),
            );
            return;
        }
        if let Some((_, true)) = self.role {
            self.unsupported(
                sp,
                "lm.sync in a role whose body one thread issues is not lowered yet: every warp of the role must reach bar.sync",
            );
            return;
        }
        let b = &k.named_barriers[nb];
        let threads: u32 = b.roles.iter().map(|r| k.roles[*r].threads()).sum();
        self.line(&format!(
            "cake_named_sync({id}, {threads});  // sync {} ({})",
            b.name,
            self.loc(sp)
        ));
    }
}
