r"""Exact rational arithmetic on float64 data: conversion and Gauss-Jordan elimination.

Every float64 number is a dyadic rational; :func:`to_rational` reads it as that rational exactly
(:class:`fractions.Fraction`), so sums and products of the data are computed without rounding.
Arrays of fractions are numpy ``object`` arrays: ``A @ v`` then runs the exact Python operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["RationalSolution", "solve_rational", "to_float", "to_rational"]

ZERO = Fraction(0)

_as_fraction = np.frompyfunc(Fraction, 1, 1)
_as_float = np.frompyfunc(float, 1, 1)


def to_rational(a: Any) -> np.ndarray:
    """The exact rational values of a float64 array (dense or sparse), as a ``object`` array."""
    if sp.issparse(a):
        a = a.toarray()
    a = np.asarray(a, dtype=np.float64)
    return np.asarray(_as_fraction(a), dtype=object).reshape(a.shape)


def to_float(a: np.ndarray) -> np.ndarray:
    """The float64 values nearest to the rationals of ``a`` (each correctly rounded)."""
    a = np.asarray(a, dtype=object)
    return np.asarray(_as_float(a), dtype=np.float64).reshape(a.shape)


@dataclass
class RationalSolution:
    r"""A solution of ``M x = r`` found by Gauss-Jordan elimination.

    Attributes
    ----------
    x : ndarray of Fraction
        A solution: every variable without a pivot (a column dependent on earlier ones) is 0.
    pivots : list of int
        The columns that received a pivot.
    inconsistent : list of int
        Original rows that reduced to ``0 = c != 0`` (empty when the system is consistent; ``x``
        then solves the other rows only).
    """

    x: np.ndarray
    pivots: list[int]
    inconsistent: list[int]


def solve_rational(M: list[list[Fraction]], r: list[Fraction]) -> RationalSolution:
    r"""Solve ``M x = r`` exactly for a square or rectangular rational ``M``.

    Gauss-Jordan elimination with the first nonzero pivot in each column, in column order: a
    column that gets no pivot is a linear combination of earlier columns and its variable is set
    to 0. Rows that reduce to ``0 = c`` with ``c != 0`` are reported (by their original index),
    not raised, so that a caller can change the system.
    """
    n_rows = len(M)
    n_cols = len(M[0]) if n_rows else 0
    rows = [[*row, rhs] for row, rhs in zip(M, r, strict=True)]
    origin = list(range(n_rows))
    pivots: list[int] = []
    top = 0
    for col in range(n_cols):
        pick = next((i for i in range(top, n_rows) if rows[i][col] != 0), None)
        if pick is None:
            continue
        rows[top], rows[pick] = rows[pick], rows[top]
        origin[top], origin[pick] = origin[pick], origin[top]
        head = rows[top]
        inverse = 1 / head[col]
        head[col:] = [v * inverse for v in head[col:]]
        for i in range(n_rows):
            if i != top:
                factor = rows[i][col]
                if factor != 0:
                    row = rows[i]
                    for j in range(col, n_cols + 1):
                        if head[j] != 0:
                            row[j] -= factor * head[j]
        pivots.append(col)
        top += 1
        if top == n_rows:
            break
    x = np.array([ZERO] * n_cols, dtype=object)
    for i, col in enumerate(pivots):
        x[col] = rows[i][n_cols]
    inconsistent = [origin[i] for i in range(top, n_rows) if rows[i][n_cols] != 0]
    return RationalSolution(x=x, pivots=pivots, inconsistent=inconsistent)
