"""Functions the test contracts name; the fake worker never calls them."""


def oracle(A, B):
    raise NotImplementedError


def baseline(A, B, C):
    raise NotImplementedError
