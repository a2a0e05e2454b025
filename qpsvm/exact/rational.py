r"""Exact rational arithmetic on float64 data: conversion, and rows over a common denominator.

Every float64 number is a dyadic rational; :func:`to_rational` reads it as that rational exactly
(:class:`fractions.Fraction`), so sums and products of the data are computed without rounding.
Arrays of fractions are numpy ``object`` arrays: ``A @ v`` then runs the exact Python operations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["IntegerRows", "over_common", "to_float", "to_rational"]

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
class IntegerRows:
    r"""Rational rows over one common denominator, ``a_k = num_k / den``.

    Products with the rows are then integer dot products (Python integers, no gcd per
    operation), rational only at the end.

    Attributes
    ----------
    num : ndarray of int (object), shape (n_rows, dim)
    den : int
    """

    num: np.ndarray
    den: int

    @classmethod
    def from_float(cls, a: Any) -> IntegerRows:
        """The exact rows of a float64 array (dense or sparse): every entry ``m 2^e`` with an
        integer mantissa ``m``, over the smallest power of two among them."""
        if sp.issparse(a):
            a = a.toarray()
        a = np.asarray(a, dtype=np.float64)
        mantissa, exponent = np.frexp(a)
        digits = (mantissa * 2.0**53).astype(np.int64)  # exact: |mantissa| < 1
        shift = exponent.astype(np.int64) - 53
        low = min(int(shift[digits != 0].min(initial=0)), 0)
        pairs = zip(digits.ravel().tolist(), (shift - low).ravel().tolist(), strict=True)
        num = np.array([m << s if m else 0 for m, s in pairs], dtype=object)
        return cls(num.reshape(a.shape), 1 << -low)

    @classmethod
    def from_rational(cls, A: np.ndarray) -> IntegerRows:
        """The rows of an array of fractions (or integers)."""
        A = np.asarray(A, dtype=object)
        den = math.lcm(1, *(Fraction(v).denominator for v in A.ravel()))
        num = np.array([int(Fraction(v) * den) for v in A.ravel()], dtype=object)
        return cls(num.reshape(A.shape), den)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.num.shape

    def fractions(self) -> np.ndarray:
        """The rows as an array of :class:`~fractions.Fraction`."""
        out = [Fraction(int(v), self.den) for v in self.num.ravel()]
        return np.array(out, dtype=object).reshape(self.num.shape)

    def to_float(self) -> np.ndarray:
        """The rows rounded to float64 (each entry correctly rounded)."""
        return to_float(self.fractions())

    def take(self, index: Any) -> IntegerRows:
        """The rows ``index`` (any numpy index), same denominator."""
        return IntegerRows(self.num[index], self.den)

    def combine(self, rows: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """``sum_j coef_j a_{rows_j}``, exact."""
        if len(rows) == 0:
            return np.array([ZERO] * self.num.shape[1], dtype=object)
        top, bottom = over_common(coef)
        return _divide(self.num[rows].T.dot(top), bottom * self.den)

    def apply(self, w: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """``a_k . w`` for ``rows`` (default all), exact."""
        num = self.num if rows is None else self.num[rows]
        top, bottom = over_common(w)
        return _divide(
            num.dot(top) if num.size else np.zeros(num.shape[0], object), bottom * self.den
        )

    def gram(self, rows: np.ndarray) -> np.ndarray:
        """``a_j . a_k`` over ``rows``, exact."""
        num = self.num[rows]
        return _divide(num.dot(num.T), self.den * self.den)


def over_common(v: Any) -> tuple[np.ndarray, int]:
    """Integers ``num`` and ``den`` with ``v = num / den`` (``v`` rationals or floats)."""
    v = [Fraction(x) for x in np.ravel(v)]
    den = math.lcm(1, *(x.denominator for x in v))
    return np.array([int(x * den) for x in v], dtype=object), den


def _divide(num: np.ndarray, den: int) -> np.ndarray:
    out = [Fraction(int(v), den) for v in np.ravel(num)]
    return np.array(out, dtype=object).reshape(np.shape(num))
