"""The pieces of composed problems: losses, penalties and intercept modes, each stated once
(CVXPY expression, numpy value, and what the dual needs)."""

from qpsvm.formulations.pieces.intercepts import INTERCEPTS, Intercept, make_intercept
from qpsvm.formulations.pieces.losses import LOSSES, Loss, make_loss
from qpsvm.formulations.pieces.penalties import PENALTIES, Penalty, make_penalty

__all__ = [
    "INTERCEPTS",
    "LOSSES",
    "PENALTIES",
    "Intercept",
    "Loss",
    "Penalty",
    "make_intercept",
    "make_loss",
    "make_penalty",
]
