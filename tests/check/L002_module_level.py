"""A module docstring is allowed; anything but imports of cake, constants, helpers and
schedules is not."""
import cake
import os  # error[CAKE-L002]: `import os`
from cake import lm
from numpy import zeros  # error[CAKE-L002]: schedules import only `lm` from `cake`


class Config:  # error[CAKE-L002]: `class` is not allowed at module level
    pass


for i in range(3):  # error[CAKE-L002]: control flow is not allowed at module level
    pass

print("hello")  # error[CAKE-L002]: a module-level expression


@cake.schedule(targets=["sm_90a"])
def copy(A: lm.tensor[lm.bf16, "M", "K"]):
    for tm in lm.tiles(4):
        pass
