"""Contract functions (numpy) for the worker tests: oracles, generators, scores, callables."""

import numpy as np


# ---- C = A + alpha * B -------------------------------------------------------------------

def oracle(A, B, alpha):
    return {"C": A.astype(np.float64) + alpha * B.astype(np.float64)}


def add(A, B, C, alpha):
    C[...] = A + alpha * B


def generator(shape, distribution, generator):
    M, N = shape["M"], shape["N"]
    return {"A": np.full((M, N), 1.5, np.float32), "B": generator.standard_normal((M, N)).astype(np.float32)}


def generator_missing_b(shape, distribution, generator):
    return {"A": np.zeros((shape["M"], shape["N"]), np.float32)}


def generator_wrong_dtype(shape, distribution, generator):
    M, N = shape["M"], shape["N"]
    return {"A": np.zeros((M, N), np.float64), "B": np.zeros((M, N), np.float32)}


def broken_oracle(A, B, alpha):
    raise ValueError("the oracle is broken")


def oracle_wrong_shape(A, B, alpha):
    return {"C": np.zeros((1, 1))}


def oracle_not_a_tensor(A, B, alpha):
    return {"C": (A + alpha * B).tolist()}


def oracle_complex(A, B, alpha):
    return {"C": (A + alpha * B).astype(np.complex128)}


# ---- nearest centre: I[n] = argmin_k |X[n] - Cen[k]|^2 ----------------------------------

def _dist(X, Cen):
    X, Cen = X.astype(np.float64), Cen.astype(np.float64)
    return ((X[:, None, :] - Cen[None, :, :]) ** 2).sum(-1)


def assign_oracle(X, Cen):
    return {"I": _dist(X, Cen).argmin(1).astype(np.int32)}  # the first of tied minima


def assign_score(X, Cen, index):
    return ((X.astype(np.float64) - Cen.astype(np.float64)[index]) ** 2).sum(-1)


def assign_score_broken(X, Cen, index):
    raise RuntimeError("the score function is broken")


def assign_last_tie(X, Cen, I):
    d = _dist(X, Cen)
    I[...] = (d.shape[1] - 1 - d[:, ::-1].argmin(1)).astype(np.int32)  # the last of tied minima


def assign_second_best(X, Cen, I):
    I[...] = np.argsort(_dist(X, Cen), axis=1, kind="stable")[:, 1].astype(np.int32)


def assign_past_the_end(X, Cen, I):
    """Right, but for rows 0 and 5 it picks K: one past the last centre."""
    assign_last_tie(X, Cen, I)
    I[[0, 5]] = Cen.shape[0]


def assign_negative(X, Cen, I):
    """Right, but for row 3 it picks -1, which numpy's indexing would wrap to the last centre."""
    assign_last_tie(X, Cen, I)
    I[3] = -1
