"""The pieces of a built CVXPY model, kept by name."""

from __future__ import annotations

from dataclasses import dataclass, field

import cvxpy as cp
import numpy as np

from qpsvm.verify.candidates import Candidate

__all__ = ["Candidate", "Model"]


@dataclass
class Model:
    """A CVXPY problem with its named variables, constraints and parameters.

    ``index`` maps the rows of the constraint blocks back to samples (or pairs) of the full data
    when the model was built over a subset of constraints.
    """

    problem: cp.Problem
    variables: dict[str, cp.Variable]
    constraints: dict[str, cp.Constraint]
    parameters: dict[str, cp.Parameter] = field(default_factory=dict)
    index: np.ndarray | None = None
