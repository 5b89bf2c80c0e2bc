"""nsys2prv: Nsight Systems reports -> one clock-aligned Paraver trace."""

__version__ = "0.6.0"


def __getattr__(name: str):
    """``nsys2prv.open`` and ``nsys2prv.Run``: the Python API (nsys2prv/api.py, the top layer, beside
    the command line), imported when first used, so that ``import nsys2prv`` loads no pandas."""
    if name in ("open", "Run"):
        from nsys2prv import api  # (lazy: the root exports the top layer's entry point)

        return getattr(api, name)
    raise AttributeError(f"module 'nsys2prv' has no attribute {name!r}")
