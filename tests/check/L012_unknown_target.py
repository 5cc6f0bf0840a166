# Unknown targets, with a suggestion when one is close; Cake never steps down to a nearby target.
import cake
from cake import lm


@cake.schedule(targets=["sm_90"])  # error[CAKE-L012]: did you mean "sm_90a"?
def a(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass


@cake.schedule(targets=["sm_90a", "hopper", "sm100a"])  # error[CAKE-L012]: unknown target `hopper` error[CAKE-L012]: did you mean "sm_100a"?
def b(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass


@cake.schedule(targets=[])  # error[CAKE-L010]: must name at least one target
def c(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass


@cake.schedule(targets=[90])  # error[CAKE-L004]: target names are strings
def d(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass


@cake.schedule(target="sm_90a")  # error[CAKE-L005]: no parameter `target` error[CAKE-L005]: must name the targets
def e(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass
