"""Modules that are imported on first use: CVXPY, whose import is the largest part of
``import qpsvm`` (measured: about half of it), is needed only when a CVXPY problem is built or
solved, and the paths that state their problem as matrices (:mod:`qpsvm.solvers.direct`, the
kernel working set's certified SMO start) never build one.

``cp = lazy_module("cvxpy")`` binds a module object whose code runs at the first attribute
access (:class:`importlib.util.LazyLoader`); after that it is the ordinary module, the same
object every ``import cvxpy`` returns. A module already imported is returned as it is.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["lazy_module"]


def lazy_module(name: str) -> ModuleType:
    """The module ``name``, executed on first attribute access.

    Raises
    ------
    ModuleNotFoundError
        ``name`` is not installed (found now, not at first use).
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
