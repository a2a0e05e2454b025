"""Formulations: each SVM stated once, as a CVXPY problem and its numpy math."""

from qpsvm.formulations.base import Formulation
from qpsvm.formulations.binary import HardMargin, SoftMarginDual, SoftMarginPrimal
from qpsvm.formulations.composed import ComposedClassifier, ComposedProblem
from qpsvm.formulations.composed_ranking import ComposedRanking
from qpsvm.formulations.latent import LatentSolution, LatentStructuralSVM
from qpsvm.formulations.multiclass import MulticlassSVM
from qpsvm.formulations.ranking import RankingSVM
from qpsvm.formulations.regression import SupportVectorRegression
from qpsvm.formulations.structural import StructuralSVM

__all__ = [
    "ComposedClassifier",
    "ComposedProblem",
    "ComposedRanking",
    "Formulation",
    "HardMargin",
    "LatentSolution",
    "LatentStructuralSVM",
    "MulticlassSVM",
    "RankingSVM",
    "SoftMarginDual",
    "SoftMarginPrimal",
    "StructuralSVM",
    "SupportVectorRegression",
]
