"""Structured-output models for the structural SVM: joint feature map, task loss, and inference.

Each model implements :class:`JointFeatureModel`; any learner (cutting plane, subgradient) works
with any model.

* :class:`MulticlassModel` -- ``Psi(x, y) = e_y (x) x`` with the 0/1 loss (Crammer-Singer).
* :class:`ChainModel` -- linear-chain sequence labelling with the Hamming loss; exact Viterbi
  oracles for margin rescaling and a dynamic program over the error count for slack rescaling.
"""

from qpsvm.models.base import JointFeatureModel
from qpsvm.models.chain import ChainModel
from qpsvm.models.multiclass import MulticlassModel

__all__ = ["ChainModel", "JointFeatureModel", "MulticlassModel"]
