"""Where numba's compiled kernels are cached: a per-user directory, never the installed package.

qpsvm's kernels are compiled by numba with ``cache=True``. By default numba writes its cache
(``.nbi`` index and ``.nbc`` object files) into ``__pycache__`` next to the source. Inside an
installed package that has two faults: pip does not know the files, so ``pip uninstall`` leaves
``site-packages/qpsvm/`` behind as an importable namespace package that shadows a later editable
install; and a read-only installation cannot cache at all.

Importing this module (``qpsvm/__init__.py`` does, before anything is compiled) puts a cache
locator first in numba's list, for qpsvm's own source files only:

* the cache lives in ``$QPSVM_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/qpsvm`` (default
  ``~/.cache/qpsvm``), in a subdirectory per source directory (numba hashes its absolute path,
  so an editable checkout and an installed copy never share entries);
* numba keys each entry by the source file's modification time and size, so an edited or
  reinstalled file is recompiled, never served stale;
* where the directory cannot be created or written, numba's own locators decide as before.

Other packages' numba functions are untouched. The first call of each kernel after an install
compiles it (a few seconds in all); later processes load it from the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

from numba.core.caching import CacheImpl, UserWideCacheLocator

__all__ = ["cache_directory"]

_PACKAGE = Path(__file__).resolve().parent


def cache_directory() -> Path:
    """The directory holding qpsvm's compiled kernels.

    Returns
    -------
    pathlib.Path
        ``$QPSVM_CACHE_DIR`` if the variable is set, else ``$XDG_CACHE_HOME/qpsvm`` with
        ``XDG_CACHE_HOME`` defaulting to ``~/.cache``.
    """
    root = os.environ.get("QPSVM_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
        root = os.path.join(xdg, "qpsvm")
    return Path(root)


class _QPSVMCacheLocator(UserWideCacheLocator):
    """numba cache locator for functions defined in qpsvm's own source files."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = str(cache_directory() / self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(_PACKAGE):
            return None
        return super().from_function(py_func, py_file)


if _QPSVMCacheLocator not in CacheImpl._locator_classes:
    CacheImpl._locator_classes.insert(0, _QPSVMCacheLocator)
