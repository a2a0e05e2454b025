"""A solver-validation suite: reference SVM instances with certified optima, and a scorer.

``load(tier)`` returns the instances of a tier (``"small"``, ``"medium"``, ``"large"``), each
regenerated from its data recipe by ``build()`` and carrying its certified optimum
(``optimum.lower <= P* <= optimum.upper``, and ``w*``). See the documentation page "Solver
validation suite".
"""

from qpsvm.suite.catalogue import TIERS
from qpsvm.suite.cli import parse_solver
from qpsvm.suite.instances import VERSION, Instance, Optimum, load
from qpsvm.suite.qp import QP, export, to_qp
from qpsvm.suite.recipes import FAMILIES
from qpsvm.suite.score import Result, Summary, score, summarize
from qpsvm.suite.solvers import (
    Callable,
    Command,
    CvxpySolver,
    Estimator,
    Liblinear,
    Libsvm,
    QpSolver,
    Solver,
)

__all__ = [
    "FAMILIES",
    "QP",
    "TIERS",
    "VERSION",
    "Callable",
    "Command",
    "CvxpySolver",
    "Estimator",
    "Instance",
    "Liblinear",
    "Libsvm",
    "Optimum",
    "QpSolver",
    "Result",
    "Solver",
    "Summary",
    "export",
    "load",
    "parse_solver",
    "score",
    "summarize",
    "to_qp",
]
