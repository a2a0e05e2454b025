r"""Composed ranking problems: a loss and a penalty over weighted preference pairs.

.. math::

    \min_w\; R(w) + C \sum_p s_p\, \ell\big(w\cdot(x_i - x_j)\big),
    \qquad p = (i, j),\ i \text{ preferred over } j,

with the loss ``ell`` (hinge or squared hinge, margin 1) and the penalty ``R`` (L2, L1 or
L1 + L2) of :mod:`qpsvm.formulations.pieces`, pair weights ``s_p``, and no intercept: an
item-score intercept adds to both scores of a pair and cancels in every difference. It is the
composed binary problem (:class:`~qpsvm.formulations.composed.ComposedProblem`) on the pair
differences, all labelled ``+1``, without intercept: the CVXPY problem states each piece's own
expression on the ranking's margins (:func:`~qpsvm.formulations.ranking.pair_margins`), and the
certificate is the Fenchel duality of the pieces (:func:`qpsvm.verify.fenchel.certify_composed`)
with the margins and ``v = sum_p u_p (x_i - x_j)`` enclosed from the items, never from rounded
differences. The hinge loss with the L2 penalty is :class:`~qpsvm.RankingSVM` itself (its working
set, 1-slack method and rational oracle); :class:`~qpsvm.RankingSVM` returns a
:class:`ComposedRanking` for the other combinations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from qpsvm._lazy import lazy_module
from qpsvm.contract import signature_of
from qpsvm.exceptions import InvalidInputError
from qpsvm.formulations.composed import ComposedProblem
from qpsvm.formulations.pieces import make_intercept, make_loss, make_penalty
from qpsvm.formulations.ranking import RankingSVM, pair_margins

cp = lazy_module("cvxpy")

__all__ = ["ComposedRanking", "composed_ranking"]


#: The keyword-only arguments of :class:`~qpsvm.RankingSVM` that choose its pieces.
PIECE_KEYWORDS = frozenset({"loss", "penalty", "intercept", "l1_ratio"})


def composed_ranking(cls: type, args: tuple, kwargs: dict) -> ComposedRanking | None:
    """The :class:`ComposedRanking` for the arguments of :class:`~qpsvm.RankingSVM`, or ``None``
    for the hinge loss with the L2 penalty (the class itself): at once when no keyword of
    :data:`PIECE_KEYWORDS` is given (binding the arguments to the signature costs a sizeable
    share of a small problem's construction; the class's own ``__init__`` then refuses
    arguments it does not take).

    Raises
    ------
    InvalidInputError
        For an intercept other than ``"none"`` (it cancels in every pair difference), or an
        unknown loss or penalty.
    """
    if PIECE_KEYWORDS.isdisjoint(kwargs):
        return None
    bound = signature_of(cls.__init__).bind(None, *args, **kwargs)
    bound.apply_defaults()
    params = dict(bound.arguments)
    del params["self"]
    check_no_intercept(params.pop("intercept"))
    make_loss(params["loss"], regression=False)
    make_penalty(params["penalty"], params["l1_ratio"])
    if (params["loss"], params["penalty"]) == ("hinge", "l2"):
        return None
    return ComposedRanking(**params)


def check_no_intercept(intercept: Any) -> None:
    """Refuse an intercept other than ``"none"``: the ranking problems have none."""
    if intercept is False or (isinstance(intercept, str) and intercept == "none"):
        return
    mode = make_intercept(intercept).mode  # an unknown mode gets the pieces' own error
    raise InvalidInputError(
        f"a ranking problem has no intercept (intercept={mode!r} was given): an item-score "
        "intercept b adds to both scores of a pair and cancels in every difference x_i - x_j, "
        "so it cannot be fitted, free or regularised. Use intercept='none' (the default)."
    )


class ComposedRanking(ComposedProblem):
    r"""A ranking problem composed of a loss and a penalty over weighted preference pairs.

    .. math::

        \min_w\; R(w) + C \sum_p s_p\, \ell\big(w\cdot(x_i - x_j)\big)

    What :class:`~qpsvm.RankingSVM` returns for every (loss, penalty) other than the hinge loss
    with the L2 penalty (see the module docstring).

    Parameters
    ----------
    X, pairs, y, groups, C, pair_weight
        As in :class:`~qpsvm.RankingSVM` (validated by it).
    loss : {"hinge", "squared_hinge"}
    penalty : {"l2", "l1", "l1_l2"}
    intercept : {"none"}
        The only mode: any other is refused (:func:`check_no_intercept`).
    l1_ratio : float
        ``r`` of the ``"l1_l2"`` penalty ``r ||w||_1 + (1 - r)/2 ||w||^2``.

    Attributes
    ----------
    ranking : RankingSVM
        The hinge + L2 ranking SVM on the same pairs: the validated items, pairs and weights,
        and the scores of new items.
    items, pairs
        The item features and the preference pairs ``(preferred, other)``.
    X : PairDifferences
        The pair-difference operator (rows ``x_i - x_j``), never formed.
    """

    def __init__(
        self,
        X: Any,
        pairs: Any = None,
        y: Any = None,
        groups: Any = None,
        C: float = 1.0,
        pair_weight: Any = None,
        *,
        loss: str = "hinge",
        penalty: str = "l2",
        intercept: str = "none",
        l1_ratio: float = 0.5,
    ) -> None:
        check_no_intercept(intercept)
        ranking = RankingSVM(X, pairs, y=y, groups=groups, C=C, pair_weight=pair_weight)
        self.ranking = ranking
        self.items = ranking.items
        self.pairs = ranking.pairs
        self.item_pairs = (self.items, self.pairs)
        n = ranking.n_pairs
        super().__init__(
            ranking.X,
            np.ones(n),
            np.ones(n),
            C,
            loss=loss,
            penalty=penalty,
            intercept="none",
            intercept_scaling=1.0,
            l1_ratio=l1_ratio,
            weights=ranking.sample_weight,
        )

    @property
    def n_pairs(self) -> int:
        """Number of preference pairs."""
        return self.ranking.n_pairs

    @property
    def n_items(self) -> int:
        """Number of items."""
        return self.ranking.n_items

    def default_method(self) -> str:
        """``"newton"`` for the squared hinge with the L2 penalty (measured in
        benchmarks/bench_composed_families.py), else the composed problems' default."""
        return "newton" if "newton" in self.methods else super().default_method()

    def describe(self) -> str:
        """The combination, e.g. ``ComposedRanking(squared_hinge, l2)``."""
        return f"{type(self).__name__}({self.loss.name}, {self.penalty.name})"

    def predictions(
        self, w: cp.Variable, subset: np.ndarray | None = None
    ) -> tuple[cp.Expression, dict[str, cp.Variable], dict[str, cp.Constraint]]:
        """The margins ``w . (x_i - x_j)`` of the pairs ``subset`` (default: all), stated as the
        ranking SVM states them (:func:`~qpsvm.formulations.ranking.pair_margins`)."""
        return pair_margins(self.items, self.pairs if subset is None else self.pairs[subset], w)

    def check_b(self, b: Any) -> float:
        """A candidate intercept, which must be 0 (:meth:`RankingSVM.check_b`)."""
        return self.ranking.check_b(b)

    def decision_function(self, X: Any, solution: Any) -> np.ndarray:
        """Scores ``w . x`` of new items; a higher score ranks higher."""
        return self.ranking.decision_function(X, solution)

    def predict(self, X: Any, solution: Any) -> np.ndarray:
        """Ranking scores of new items (:meth:`decision_function`)."""
        return self.decision_function(X, solution)
