"""Python side of Cake: load and launch kernels built by `cake build`."""

__version__ = "0.0.1"

# launch.py imports torch lazily, so this normally succeeds without torch; the guard keeps
# `import cake` usable for its static parts even if that ever changes.
try:
    from .launch import Kernel, LaunchError, load_kernel
except ImportError as _e:  # pragma: no cover - only without a usable launch module
    _import_error = _e
    Kernel = None  # type: ignore[assignment,misc]

    class LaunchError(Exception):  # type: ignore[no-redef]
        pass

    def load_kernel(*_args, **_kwargs):  # type: ignore[no-redef]
        raise LaunchError(f"cake.launch is unavailable: {_import_error}")

__all__ = ["__version__", "load_kernel", "Kernel", "LaunchError"]
