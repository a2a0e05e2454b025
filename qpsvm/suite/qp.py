"""An instance as a standard-form QP for QP solvers (:func:`to_qp`), and its export to files.

The QP is :func:`qpsvm.standard_form.standard_form` of the instance's ``f.problem``. Its optimal
value relates to the instance's certified optimum ``P*`` by ``P* = sign * (QP value + offset)``
(``sign = -1`` for the kernel dual, a maximisation). Structural chains have exponentially many
constraints and no finite ``f.problem``: they are not exported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from qpsvm.exceptions import UnsupportedProblemError
from qpsvm.standard_form import StandardForm, standard_form
from qpsvm.suite.instances import Instance

__all__ = ["EXPORT_FORMAT", "QP", "export", "to_qp"]

#: Families whose ``f.problem`` is the whole problem (a finite QP).
_NOT_QP = frozenset({"chain"})

EXPORT_FORMAT = "qpsvm-suite-qp/1"


@dataclass
class QP:
    """A suite instance as a QP.

    Attributes
    ----------
    problem : qpsolvers.Problem
        ``min 1/2 x^T P x + q^T x`` s.t. ``G x <= h``, ``A x = b``, ``lb <= x <= ub``.
    offset : float
        Constant of the objective: the instance's value is ``sign * (QP value + offset)``.
    sign : float
        ``+1``, or ``-1`` when the instance's CVXPY problem is a maximisation.
    form : StandardForm
        The extraction, which maps a QP solution back onto the named variables.
    """

    problem: Any
    offset: float
    sign: float
    form: StandardForm

    def value(self, x: np.ndarray) -> float:
        """The instance's objective at the QP point ``x``."""
        return self.form.value(x)


def to_qp(instance: Instance, formulation: Any = None) -> QP:
    """The instance's problem as a :class:`qpsolvers.Problem` with its constant offset.

    Parameters
    ----------
    instance : Instance
    formulation : Formulation, optional
        ``instance.build()`` when it is already built.

    Raises
    ------
    UnsupportedProblemError
        For the structural families (no finite QP).
    """
    if instance.family in _NOT_QP:
        raise UnsupportedProblemError(
            f"{instance.name}: a structural SVM has exponentially many constraints and no finite "
            "QP to export; solve it with a cutting-plane method."
        )
    f = instance.build() if formulation is None else formulation
    form = standard_form(f)
    return QP(form.to_qpsolvers(), form.offset, form.sign, form)


def _sparse(M: Any) -> dict[str, Any]:
    M = sp.coo_matrix(M)
    return {"shape": list(M.shape), "row": M.row, "col": M.col, "data": M.data}


def export(instances: list[Instance], directory: str | Path) -> Path:
    """Write every instance as a QP: ``<name>.npz`` per instance and ``index.json``.

    Each ``.npz`` holds ``P_shape, P_row, P_col, P_data`` (the same for ``G`` and ``A``, in
    coordinate form, absent when there are none), ``q``, ``h``, ``b``, ``lb``, ``ub`` (absent
    when there are none; ``-inf`` / ``inf`` for a missing bound), ``offset``, ``sign``,
    ``lower`` and ``upper``, with ``lower <= sign * (1/2 x*^T P x* + q^T x* + offset) <=
    upper``. ``index.json`` lists, per instance, the file, family, recipe, the enclosure, its
    ``rigorous`` flag and ``source`` (``"exact"`` or ``"certificate"``), ``format`` being
    :data:`EXPORT_FORMAT`. Instances without a finite QP (structural chains) are skipped.
    Returns the index's path.
    """
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    index = []
    for inst in instances:
        if inst.family in _NOT_QP:
            continue
        qp = to_qp(inst)
        form = qp.form
        arrays: dict[str, Any] = {
            "q": form.q,
            "offset": form.offset,
            "sign": form.sign,
            "lower": inst.optimum.lower,
            "upper": inst.optimum.upper,
        }
        for key in ("P", "G", "A"):
            matrix = getattr(form, key)
            if matrix is not None:
                arrays |= {f"{key}_{k}": v for k, v in _sparse(matrix).items()}
        for key in ("h", "b", "lb", "ub"):
            if getattr(form, key) is not None:
                arrays[key] = getattr(form, key)
        file = inst.name.replace("/", "__").replace("=", "-") + ".npz"
        np.savez_compressed(out / file, **arrays)
        index.append(
            {
                "file": file,
                "name": inst.name,
                "family": inst.family,
                "tier": inst.tier,
                "recipe": inst.recipe,
                "n_variables": form.n_variables,
                "lower": inst.optimum.lower,
                "upper": inst.optimum.upper,
                "rigorous": inst.optimum.rigorous,
                "source": inst.optimum.source,
            }
        )
    path = out / "index.json"
    path.write_text(json.dumps({"format": EXPORT_FORMAT, "instances": index}, indent=1) + "\n")
    return path
