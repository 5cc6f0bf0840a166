# Every exact target name is accepted (the near miss of CAKE-L012).
import cake
from cake import lm


@cake.schedule(targets=["sm_80", "sm_89", "sm_90a", "sm_100a", "sm_103a", "sm_120a", "sm_121a"])
def copy(A: lm.tensor[lm.f16, "M", "K"], C: lm.tensor[lm.f16, "M", "K"]):
    for tm, tk in lm.tiles(lm.cdiv(M, 64), lm.cdiv(K, 64)):
        pass


@cake.schedule(targets="sm_90a")
def one(A: lm.tensor[lm.f16, "M", "K"]):
    for tm in lm.tiles(lm.cdiv(M, 64)):
        pass
