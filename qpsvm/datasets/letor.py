"""Reading LETOR / SVM-rank files (``<relevance> qid:<query> <index>:<value> ... # comment``).

scikit-learn's :func:`~sklearn.datasets.load_svmlight_file` (``query_id=True``) does the parsing;
this module checks the result and returns it as a :class:`RankingData` ready for
``RankingSVM(data.X, y=data.y, groups=data.groups)``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import scipy.sparse as sp

from qpsvm.exceptions import InvalidInputError

__all__ = ["RankingData", "load_letor"]


@dataclass
class RankingData:
    """Items of a ranking data set; unpacks as ``X, y, groups = data``.

    Attributes
    ----------
    X : csr_matrix or ndarray of shape (n_items, n_features)
        Item features.
    y : ndarray of shape (n_items,)
        Relevance labels (larger is more relevant).
    groups : ndarray of int, shape (n_items,)
        Query identifiers (``qid``).
    """

    X: sp.csr_matrix | np.ndarray
    y: np.ndarray
    groups: np.ndarray

    def __iter__(self) -> Iterator[Any]:
        return iter((self.X, self.y, self.groups))

    @property
    def n_queries(self) -> int:
        """Number of distinct queries (``C_from_svmrank`` needs it)."""
        return int(np.unique(self.groups).size)


def load_letor(
    f: str | os.PathLike[str] | IO[bytes],
    n_features: int | None = None,
    *,
    dense: bool = False,
    zero_based: bool | str = "auto",
) -> RankingData:
    """Read a LETOR / SVM-rank file into features, relevance labels and query groups.

    Parameters
    ----------
    f : path or binary file object
        The file; every line needs a ``qid:``.
    n_features : int, optional
        Number of features (default: the largest index in the file); give it to read a test file
        with the training file's width.
    dense : bool, default=False
        Return ``X`` as a dense array instead of CSR.
    zero_based : bool or "auto", default="auto"
        Whether feature indices start at 0; see :func:`~sklearn.datasets.load_svmlight_file`.
        LETOR and SVM-rank files are one-based.

    Returns
    -------
    RankingData

    Raises
    ------
    FileNotFoundError
        If the path does not exist.
    InvalidInputError
        If a line cannot be parsed, the file is empty, or lines lack ``qid:``.
    """
    from sklearn.datasets import load_svmlight_file

    try:
        X, y, qid = load_svmlight_file(
            f, n_features=n_features, zero_based=zero_based, query_id=True, dtype=np.float64
        )
    except ValueError as exc:
        raise InvalidInputError(
            f"could not read {f!r} as a LETOR / SVM-rank file (lines "
            f"'<relevance> qid:<query> <index>:<value> ...'): {exc}"
        ) from None
    if X.shape[0] == 0:
        raise InvalidInputError(f"{f!r} holds no item (no data line).")
    if qid.shape[0] != X.shape[0]:
        raise InvalidInputError(
            f"{f!r}: {X.shape[0] - qid.shape[0]} of {X.shape[0]} lines have no qid:; every line "
            "of a ranking file needs its query id ('<relevance> qid:<query> <index>:<value> ...')."
        )
    return RankingData(X.toarray() if dense else X.tocsr(), np.asarray(y), np.asarray(qid))
