"""Access to the Gram matrix ``K_ij = k(x_i, x_j)`` of a kernel formulation: rows computed on
demand and kept in a shared cache, the full matrix only when it is asked for or given
(``kernel="precomputed"``)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm._rows import row_sq_norms, touched_columns
from qpsvm.exceptions import InvalidInputError
from qpsvm.kernels import Kernel, KernelCache

__all__ = ["KernelRows", "TouchedRows"]


class TouchedRows:
    """The columns a linear formulation's sparse rows touch, and a solver's expansion of its
    multipliers over them, kept for the certificate (a mixin of the binary and composed
    formulations, which own ``X`` and ``linear``)."""

    X: Any
    linear: bool
    _touched: tuple | None = None
    _kept: tuple | None = None
    _sqnorms: tuple | None = None

    def touched_columns(self) -> tuple[sp.csr_matrix, np.ndarray] | None:
        """The linear kernel's sparse ``X`` restricted to the columns its rows touch and those
        columns (:func:`qpsvm._rows.touched_columns`; ``None`` for dense rows, another kernel, or
        most columns touched), computed once: shared by the coordinate ascent, which runs over
        them, and the certificate, which expands its multipliers over them."""
        if self._touched is None:
            linear_sparse = self.linear and sp.issparse(self.X) and self.X.format == "csr"
            self._touched = (touched_columns(self.X) if linear_sparse else None,)
        return self._touched[0]

    def row_sq_norms(self) -> np.ndarray:
        """The rows' squared norms ``||x_i||^2`` (:func:`qpsvm._rows.row_sq_norms` of ``X``, a
        read-only array), computed once for the ``X`` at hand: shared by the coordinate
        ascent's data and the certificate's bound on a free intercept
        (:func:`~qpsvm.verify.rigorous.binary_dual_lower`), which each summed them (at 20000 x
        200, 10 nonzeros a row, about 1 ms a pass)."""
        if self._sqnorms is None or self._sqnorms[0] is not self.X:
            norms = row_sq_norms(self.X)
            norms.flags.writeable = False
            self._sqnorms = (self.X, norms)
        return self._sqnorms[1]

    def keep_expansion(self, M: Any, parts: tuple) -> None:
        """Keep a solver's expansion of its multipliers over the rows ``M`` and what it was made
        of, ``(c, hi, lo, m)``: ``M^T c = hi + lo`` by Dot2 and ``m = |M|^T |c|``
        (:meth:`~qpsvm.verify.ascent.CoordinateData.enclosed_expansion`), for the certificate
        (:meth:`kept_expansion`). The last one only."""
        self._kept = (M, parts)

    def kept_expansion(self, M: Any, c: np.ndarray) -> tuple | None:
        """``(hi, lo, m)`` of the kept expansion (:meth:`keep_expansion`) when it is ``M^T c``:
        the same rows object and coefficients equal to the bit, so the same floats as
        :func:`~qpsvm._numerics.csr_tdot2_abs` of ``M`` and ``c``; else ``None``."""
        if self._kept is None or self._kept[0] is not M:
            return None
        kept, hi, lo, m = self._kept[1]
        return (hi, lo, m) if np.array_equal(kept, c) else None


class KernelRows(TouchedRows):
    """The Gram matrix of ``X`` under ``kernel``, row by row (a mixin of the binary
    formulations, which own ``X``, ``kernel`` and ``linear``).

    The rows of the rbf and poly kernels go to one :class:`~qpsvm.kernels.KernelCache` of
    :attr:`kernel_cache_size` MB shared by SMO, the working set and the certificate (and by the
    copies :meth:`~qpsvm.formulations.Formulation.with_C` makes after it exists); the ``n x n``
    matrix is formed only by :meth:`gram`.
    """

    X: Any
    kernel: Kernel
    linear: bool
    #: Memory budget (MB) of the kernel row cache (:meth:`kernel_cache`).
    kernel_cache_size: ClassVar[float] = 200.0
    _gram: np.ndarray | None = None
    _cache: KernelCache | None = None

    def gram(self) -> np.ndarray:
        """The training Gram matrix ``K`` (nonlinear kernels only; cached)."""
        if self.linear:
            raise InvalidInputError(
                "qpsvm never forms the n x n Gram matrix of the linear kernel; use X directly."
            )
        if self._gram is None:
            self._gram = self.kernel.gram(self.X)
        return self._gram

    def gram_rows(self, idx: np.ndarray) -> np.ndarray:
        """Rows ``K[idx, :]`` of the Gram matrix (computed from ``X`` for the linear kernel,
        taken from :meth:`kernel_cache` for the others unless the Gram matrix is formed)."""
        if self.linear:
            rows = self.X[idx] @ self.X.T
            return rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        if self._gram is None and self.kernel.name != "precomputed":
            return self.kernel_cache().take(idx)
        return self.gram()[idx]

    def enclosed_products(
        self, V: np.ndarray, A: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """``K V^T`` by Dot2 and ``K A^T`` in one read of the rows from :meth:`kernel_cache`
        (:meth:`~qpsvm.kernels.KernelCache.enclosed_products`); ``None`` where the rows do not
        come from it (the linear kernel, a formed or precomputed Gram matrix)."""
        if self.linear or self._gram is not None or self.kernel.name == "precomputed":
            return None
        return self.kernel_cache().enclosed_products(V, A)

    def gram_block(self, idx: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
        """The block ``K[idx][:, cols]`` of the Gram matrix (``cols`` defaults to ``idx``):
        from ``X`` for the linear kernel, from :meth:`kernel_cache` without copying whole rows
        for the others unless the Gram matrix is formed."""
        cols = idx if cols is None else cols
        if self.linear:
            block = self.X[idx] @ self.X[cols].T
            return block.toarray() if sp.issparse(block) else np.asarray(block)
        if self._gram is None and self.kernel.name != "precomputed":
            return self.kernel_cache().block(idx, cols)
        return self.gram()[np.ix_(idx, cols)]

    def kernel_cache(self) -> KernelCache:
        """The rows of the Gram matrix computed so far (:class:`~qpsvm.kernels.KernelCache` of
        :attr:`kernel_cache_size` MB, created on first use): shared by SMO, the working set and
        the certificate, and by the copies of :meth:`with_C` made after it exists."""
        if self.linear or self.kernel.name == "precomputed":
            raise InvalidInputError(
                f"the {self.kernel.name!r} kernel has no row cache; use X (or the Gram matrix)."
            )
        if self._cache is None:
            self._cache = KernelCache(self.kernel, self.X, self.kernel_cache_size)
        return self._cache

    def _kernel_product(self, v: np.ndarray) -> np.ndarray:
        """``K v`` (nonlinear kernels): with the Gram matrix when it is formed, else over the
        cached rows of the nonzero ``v_j``."""
        if self._gram is None and self.kernel.name != "precomputed":
            return self.kernel_cache().matvec(v)
        return self.gram() @ v
