"""Import of the compiled extension, with an explanation when it is missing."""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import sys


def _installed_elsewhere():
    """`cake/_native*.so` of another copy of the package on sys.path, loaded as `cake._native`.

    Running from the source tree (python/ first on sys.path, as the tests arrange) while the
    wheel is installed elsewhere (pip --target DIR on PYTHONPATH) shadows the installed
    package, extension included; the pure-Python halves are the same, so use its extension.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        d = os.path.join(entry or os.getcwd(), "cake")
        if os.path.abspath(d) == here or not os.path.isdir(d):
            continue
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(d, "_native" + suffix)
            if os.path.isfile(path):
                spec = importlib.util.spec_from_file_location("cake._native", path)
                if spec is None or spec.loader is None:
                    continue
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules["cake._native"] = module
                return module
    return None


@functools.lru_cache(maxsize=None)
def native():
    """The `cake._native` extension module (imported on first use)."""
    try:
        from . import _native  # type: ignore[attr-defined]

        return _native
    except ImportError as e:
        error = e
    blocked = "cake._native" in sys.modules and sys.modules["cake._native"] is None
    module = None if blocked else _installed_elsewhere()
    if module is None:
        raise ImportError(
            "cake's compiled extension `cake._native` is not available "
            f"({error}). Build the wheel with scripts/wheel.sh and install it "
            "(pip install --no-deps dist/cake-*.whl), or run `maturin develop` in a virtual "
            "environment; see docs/python.md."
        ) from error
    return module


@functools.lru_cache(maxsize=None)
def native_build_id() -> str:
    """A hash of the extension's file: it changes whenever the compiler inside it changes, so
    compiled-kernel caches keyed on it never serve a stale build."""
    mod = native()
    h = hashlib.sha256(str(getattr(mod, "__version__", "")).encode())
    path = getattr(mod, "__file__", None)
    if path and os.path.exists(path):
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()
