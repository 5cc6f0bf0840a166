import cake
  from cake import lm  # error[CAKE-L001]: Unexpected indentation
def f(:  # error[CAKE-L001] error[CAKE-L001]
    pass
