# CAKE-C011: the passing near-miss — fifteen named barriers
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def sync_many(X: lm.tensor[lm.f32, "M"]):
    del X  # unused on purpose
    math = lm.role(warpgroups=[0, 1])
    nbs = (lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]), lm.named_barrier(roles=[math]))
    for t in lm.tiles(1):
        with math:
            for i in range(15):
                lm.sync(nbs[i])
