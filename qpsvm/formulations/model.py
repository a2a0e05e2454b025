"""The pieces of a built CVXPY problem, kept by name (:class:`CvxModel`; not to be confused with
the structured-output models of :mod:`qpsvm.models`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from qpsvm._lazy import lazy_module

cp = lazy_module("cvxpy")

__all__ = ["CvxModel"]


@dataclass
class CvxModel:
    """A CVXPY problem with its named variables, constraints and parameters.

    ``index`` maps the rows of the constraint blocks back to samples (or pairs) of the full data
    when the model was built over a subset of constraints.
    """

    problem: cp.Problem
    variables: dict[str, cp.Variable]
    constraints: dict[str, cp.Constraint]
    parameters: dict[str, cp.Parameter] = field(default_factory=dict)
    index: np.ndarray | None = None
