"""qpsvm: support vector machines solved exactly, with a certificate of optimality.

Every formulation is a declarative CVXPY problem (``f.problem``) with its numpy math; ``f.solve()``
returns the exact optimum, certified; ``f.certify(candidate)`` certifies any candidate — ours,
scikit-learn's, or a user's own — from the data alone.
"""

import qpsvm._compile_cache  # noqa: F401  (first: compiled kernels cache outside the package)
from qpsvm.exceptions import (
    InaccurateSolutionError,
    InfeasibleProblemError,
    InvalidInputError,
    InvalidTypeError,
    NonConvexProblemError,
    NotSeparableError,
    QPSVMError,
    RoundingFloorError,
    SolverError,
    SolverNotInstalledError,
    UncertifiedSolutionError,
    UnsupportedProblemError,
)
from qpsvm.formulations import (
    ComposedClassifier,
    ComposedRanking,
    Formulation,
    HardMargin,
    LatentSolution,
    LatentStructuralSVM,
    MulticlassSVM,
    RankingSVM,
    SoftMarginDual,
    SoftMarginPrimal,
    StructuralSVM,
    SupportVectorRegression,
)
from qpsvm.interop import validate
from qpsvm.models import (
    ChainModel,
    GraphModel,
    JointFeatureModel,
    MulticlassModel,
    MultiLabelModel,
    chow_liu_tree,
    grid_edges,
)
from qpsvm.problem_certificate import certify_problem
from qpsvm.solution import History, Solution
from qpsvm.verify import Certificate, Comparison

__version__ = "0.1.0"

__all__ = [
    "Certificate",
    "ChainModel",
    "Comparison",
    "ComposedClassifier",
    "ComposedRanking",
    "Formulation",
    "GraphModel",
    "HardMargin",
    "History",
    "InaccurateSolutionError",
    "InfeasibleProblemError",
    "InvalidInputError",
    "InvalidTypeError",
    "JointFeatureModel",
    "LatentSolution",
    "LatentStructuralSVM",
    "MultiLabelModel",
    "MulticlassModel",
    "MulticlassSVM",
    "NonConvexProblemError",
    "NotSeparableError",
    "QPSVMError",
    "RankingSVM",
    "RoundingFloorError",
    "SoftMarginDual",
    "SoftMarginPrimal",
    "Solution",
    "SolverError",
    "SolverNotInstalledError",
    "StructuralSVM",
    "SupportVectorRegression",
    "UncertifiedSolutionError",
    "UnsupportedProblemError",
    "__version__",
    "certify_problem",
    "chow_liu_tree",
    "grid_edges",
    "validate",
]
