"""One BLAS thread for a block of dense linear algebra, at the cost of a context manager.

Threaded LAPACK stalls when the other cores are busy (measured on 2 shared cores: a multiclass
least-squares solve 0.67 s threaded, 0.2 s on one thread), so the certificate's and SMO's small
dense solves run on one thread. ``threadpoolctl.threadpool_limits`` finds the loaded BLAS
libraries anew on every call by reading the process's memory map (1 ms on a quiet machine, up
to 16 ms on a loaded one: most of a small problem's solve); the controller here finds them once
per process. numpy loads its BLAS on import, before any call, so the libraries found are the
ones in use.
"""

from __future__ import annotations

import functools
from typing import Any

from threadpoolctl import ThreadpoolController

__all__ = ["one_blas_thread"]


@functools.cache
def _controller() -> ThreadpoolController:
    """The process's BLAS and OpenMP libraries, inspected once."""
    return ThreadpoolController()


def one_blas_thread() -> Any:
    """A context manager limiting the BLAS libraries to one thread (restored on exit)."""
    return _controller().limit(limits=1, user_api="blas")
