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
* every entry is stamped with the whole package's sources (each ``.py`` file's path,
  modification time and size), not numba's default of the function's own file: a caller's
  compiled code contains its callees from other modules, so an edit to ``_rows.py`` must
  recompile the SMO loop in ``solvers/_online_kernels.py`` too. Any edit or reinstall
  recompiles what is called next, never serves stale code;
* where the directory cannot be created or written, numba's own locators decide as before.

Other packages' numba functions are untouched. The first call of each kernel after an install
compiles it (a few seconds in all); later processes load it from the cache. :func:`compiled`
tells, without compiling, whether a call would load a kernel or compile it, so that a small
first call can take a path that needs no compile (DESIGN.md "Compiled kernels and the cold
start").
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

from numba.core.caching import CacheImpl, UserWideCacheLocator

__all__ = ["cache_directory", "compiled", "source_stamp"]

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


def source_stamp(package: Path | None = None) -> str:
    """A digest of every Python source file under ``package``: path, modification time, size.

    numba stamps a cache entry with its function's own file only, and serves the entry while
    that file is unchanged; but the entry's machine code includes every compiled callee, which
    may live in another file. qpsvm's entries carry this stamp instead, so editing any source
    file invalidates all of them (a few seconds of compiles in all), and none goes stale.

    Parameters
    ----------
    package : pathlib.Path, optional
        The directory to stamp. By default qpsvm's own, stamped once per process (the
        sources a process compiles are those it imported).

    Returns
    -------
    str
        A hex digest; it changes when a ``.py`` file is added, removed, renamed, touched or
        resized.
    """
    return _package_stamp() if package is None else _digest(package.resolve())


@functools.cache
def _package_stamp() -> str:
    return _digest(_PACKAGE)


def _digest(package: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for path in sorted(package.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(package)}\0{st.st_mtime_ns}\0{st.st_size}\n".encode())
    return digest.hexdigest()


class _QPSVMCacheLocator(UserWideCacheLocator):
    """numba cache locator for functions defined in qpsvm's own source files."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        self._cache_path = str(cache_directory() / self.get_suitable_cache_subpath(py_file))

    def get_source_stamp(self) -> str:
        """The package's :func:`source_stamp`, not the function's file's alone."""
        return source_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        if not Path(py_file).resolve().is_relative_to(_PACKAGE):
            return None
        return super().from_function(py_func, py_file)


if _QPSVMCacheLocator not in CacheImpl._locator_classes:
    CacheImpl._locator_classes.insert(0, _QPSVMCacheLocator)


#: Dispatchers found without a usable cache entry (read once per process: the index is a file).
_UNCACHED: set[int] = set()
#: Dispatchers found compiled or cached: a call compiles nothing from then on (it loads the
#: entry or has it), so the answer stays (``dispatcher.signatures`` costs microseconds, and the
#: certificate's sums ask before every call).
_COMPILED: set[int] = set()


def compiled(dispatcher: Any) -> bool:
    """Whether calling the numba ``dispatcher`` runs without compiling it: it was compiled in
    this process, or its on-disk cache holds an entry that numba would load.

    numba's own test is applied to the cache index (``numba.core.caching``, private, the same in
    numba 0.59.1 and 0.68.1; ``tests/test_cold_start.py`` fails if it changes): the index is numba's
    version's and stamped with :func:`source_stamp`, and an entry's key, after its
    signature, is :meth:`Cache._index_key` of that signature here (the machine, and the hashes of
    the function's bytecode and closure). A cache this cannot read counts as missing, so a
    change in numba makes callers take their uncompiled path, never a wrong one. An index found
    without an entry is remembered for the process (a kernel compiled meanwhile shows in
    ``dispatcher.signatures``), and so is a dispatcher found compiled or cached.
    """
    key = id(dispatcher)
    if key in _COMPILED:
        return True
    if dispatcher.signatures:
        _COMPILED.add(key)
        return True
    if key in _UNCACHED:
        return False
    try:
        cache = dispatcher._cache
        index = cache._cache_file._load_index()
        codegen = dispatcher.targetctx.codegen()
        found = any(entry[1:] == cache._index_key(entry[0], codegen)[1:] for entry in index)
    except (AttributeError, TypeError, ValueError, OSError):
        found = False
    (_COMPILED if found else _UNCACHED).add(key)
    return found
