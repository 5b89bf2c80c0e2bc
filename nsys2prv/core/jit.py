"""numba's ``njit`` for nsys2prv's kernels, with their compiled-code cache in the user's cache
directory (``$XDG_CACHE_HOME/nsys2prv/numba``, else ``~/.cache/nsys2prv/numba``), never inside the
installed package: a cache written into ``site-packages/nsys2prv/__pycache__`` outlives an
uninstall and shadows a later editable install.

``NUMBA_CACHE_DIR``, when set, is numba's own choice and wins; so do numba's own locators where
the user's cache directory cannot be written.
"""

from __future__ import annotations

import os
from pathlib import Path

from numba import njit
from numba.core import caching

from nsys2prv.core.paths import user_cache_dir

PACKAGE_DIR = Path(__file__).resolve().parent.parent


class _UserCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """numba's cache locator for functions defined in this package's files."""

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._cache_path = str(user_cache_dir() / "numba" / self.get_suitable_cache_subpath(py_file))

    def get_cache_path(self):
        return self._cache_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if os.environ.get("NUMBA_CACHE_DIR") or not Path(py_file).resolve().is_relative_to(PACKAGE_DIR):
            return None
        return super().from_function(py_func, py_file)


def _install() -> None:
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    if _UserCacheLocator not in impl._locator_classes:
        impl._locator_classes.insert(0, _UserCacheLocator)


_install()

__all__ = ["njit"]
