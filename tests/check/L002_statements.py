# Statements outside the Cake subset: each is reported and the walk continues.
import cake
from cake import lm

N = 3


@cake.schedule(targets=["sm_90a"])
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    global N  # error[CAKE-L002]: `global`
    load = lm.role(warpgroup=0)
    for tm in lm.tiles(4):
        with load:
            k = 0
            while k < 4:  # error[CAKE-L002]: `while`: not part of Cake IR
                k = k + 1
            try:  # error[CAKE-L002]: use `assert`
                pass
            except Exception:
                pass
            for i in lm.range(4):
                break  # error[CAKE-L002]: `break`
            for j in lm.range(4):
                continue  # error[CAKE-L002]: `continue`
            del k  # error[CAKE-L002]: `del`
            import os  # error[CAKE-L002]: an import inside a function
            def inner():  # error[CAKE-L002]: a nested function
                pass
            x: int = 3  # error[CAKE-L002]: an annotated assignment
            raise ValueError("no")  # error[CAKE-L002]: use `assert`
            match N:  # error[CAKE-L002]: `match`
                case 1:
                    pass
            class Foo:  # error[CAKE-L002]: `class`
                pass
            with load as l:  # error[CAKE-L002]: `with` takes exactly one role
                pass
            a = b = 3  # error[CAKE-L002]: chained assignment
