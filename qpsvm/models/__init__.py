"""Structured-output models for the structural SVM: joint feature map, task loss, and inference.

Each model implements :class:`JointFeatureModel`; any learner (cutting plane, subgradient) works
with any model.

* :class:`MulticlassModel` -- ``Psi(x, y) = e_y (x) x`` with the 0/1 loss (Crammer-Singer).
* :class:`ChainModel` -- linear-chain sequence labelling with the Hamming loss; exact Viterbi
  oracles for margin rescaling and a dynamic program over the error count for slack rescaling.
* :class:`MultiLabelModel` -- multi-label classification with independent labels, a tree of
  labels (e.g. :func:`chow_liu_tree`) or every pair of labels.
* :class:`GraphModel` -- a pairwise CRF over a graph given with each example (with optional edge
  features; :func:`grid_edges` for images): exact max-product on forests, the LP relaxation
  over the local polytope on graphs with cycles (:mod:`qpsvm.models.pairwise`,
  :mod:`qpsvm.models.local_polytope`), whose fractional maximisers are outputs of the relaxed
  problem.
* :class:`Rounding` -- the bounds on a model's rounding that make the structural SVM's
  certificate rigorous (:meth:`JointFeatureModel.rounding`).
* :class:`LatentModel`, :class:`LatentMulticlassModel` -- outputs ``(y, h)`` with a hidden
  ``h``, for :class:`qpsvm.LatentStructuralSVM`.
"""

from qpsvm.models.base import JointFeatureModel, Rounding
from qpsvm.models.chain import ChainModel
from qpsvm.models.graph import GraphModel, grid_edges
from qpsvm.models.latent import LatentModel, LatentMulticlassModel
from qpsvm.models.multiclass import MulticlassModel
from qpsvm.models.multilabel import MultiLabelModel, chow_liu_tree

__all__ = [
    "ChainModel",
    "GraphModel",
    "JointFeatureModel",
    "LatentModel",
    "LatentMulticlassModel",
    "MultiLabelModel",
    "MulticlassModel",
    "Rounding",
    "chow_liu_tree",
    "grid_edges",
]
