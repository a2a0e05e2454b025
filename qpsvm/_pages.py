"""Large arrays on fresh pages that the kernel may back by 2 MiB huge pages."""

from __future__ import annotations

import mmap

import numpy as np

__all__ = ["HUGE_FROM", "fresh_empty"]

#: From how many bytes an array gets a mapping of its own: numpy's own threshold for asking
#: huge pages (4 MiB), below which an array spans few 4 KiB pages' worth of TLB entries.
HUGE_FROM = 1 << 22

_HUGE_PAGE = 1 << 21


def fresh_empty(like: np.ndarray) -> np.ndarray:
    """An uninitialised array of ``like``'s shape and dtype, from :data:`HUGE_FROM` bytes up
    on an anonymous mapping of its own, aligned to 2 MiB and advised ``MADV_HUGEPAGE``.

    numpy asks huge pages for every large array, but glibc's dynamic mmap threshold rises with
    the large blocks a process frees: late in a process a large array comes from heap pages
    already faulted as 4 KiB pages, which the advice does not change, and the compiled epochs'
    rows in random order then miss the TLB. A mapping of its own is faulted afresh (one fault a
    huge page where the kernel has one) and unmapped with the array's last reference.
    """
    nbytes = like.nbytes
    if nbytes < HUGE_FROM or not hasattr(mmap, "MADV_HUGEPAGE"):
        return np.empty_like(like)
    # whole huge pages from an aligned start (the tail's too); private, as shared anonymous
    # memory is the kernel's shmem, whose huge pages are a setting of their own
    length = -(-nbytes // _HUGE_PAGE) * _HUGE_PAGE + _HUGE_PAGE
    pages = mmap.mmap(-1, length, flags=mmap.MAP_PRIVATE)
    # typed over the whole mapping: the array's base then under twice its length, which
    # scipy's CSR constructor would copy (it copies a view of a base twice its size)
    raw = np.frombuffer(pages, dtype=like.dtype)
    start = -raw.ctypes.data % _HUGE_PAGE
    pages.madvise(mmap.MADV_HUGEPAGE, start, length - start)
    first = start // like.dtype.itemsize
    return raw[first : first + like.size].reshape(like.shape)
