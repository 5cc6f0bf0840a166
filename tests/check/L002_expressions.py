# Expressions outside the Cake subset.
import cake
from cake import lm


@cake.schedule(targets=["sm_90a"])
def stream(A: lm.tensor[lm.bf16, "M", "K"]):
    load = lm.role(warpgroup=0)
    for tm in lm.tiles(4):
        with load:
            f = lambda x: x  # error[CAKE-L002]: `lambda`
            xs = [i for i in range(4)]  # error[CAKE-L002]: comprehension
            g = (i for i in range(4))  # error[CAKE-L002]: comprehension
            s = f"tile {tm}"  # error[CAKE-L002]: f-strings
            d = {"a": 1}  # error[CAKE-L002]: dicts and sets
            t = {1, 2}  # error[CAKE-L002]: dicts and sets
            w = (y := 3)  # error[CAKE-L002]: walrus
            z = 1 < 2 < 3  # error[CAKE-L002]: chained comparisons
            b = b"bytes"  # error[CAKE-L002]: bytes literals
            c = 1j  # error[CAKE-L002]: complex numbers
            e = 3 in (1, 2)  # error[CAKE-L002]: `in`
            p = 2 ** 3  # error[CAKE-L002]: this operator is not supported
            q = ~3  # error[CAKE-L002]: unary operator
            u = (1, 2)[0:1]  # error[CAKE-L002]: a slice here
            v = lm.cdiv(*(8, 2))  # error[CAKE-L002]: `*args`
            h = lm.cdiv(**{"a": 8})  # error[CAKE-L002]: `**kwargs`
