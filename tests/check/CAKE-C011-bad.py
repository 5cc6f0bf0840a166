# CAKE-C011: sixteen named barriers; ids 1..=15 are available
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def sync_many(X: lm.tensor[lm.f32, "M"]):
    del X  # unused on purpose
    math = lm.role(warpgroups=[0, 1])
    nbs = (lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]))  # error[CAKE-C011]
    for t in lm.tiles(1):
        with math:
            for i in range(16):
                lm.sync(nbs[i])
