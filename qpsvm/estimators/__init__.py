"""scikit-learn estimators: thin layers that validate, solve a qpsvm formulation exactly, and keep
the certificate of the answer.

* :class:`SVMClassifier` -- binary (primal or kernel dual) and multiclass SVMs.
* :class:`RankSVM` -- the ranking SVM on preference pairs or relevance labels.
* :class:`StructuredSVM` -- the structural SVM for any structured-output model.
"""

from qpsvm.estimators.classifier import SVMClassifier
from qpsvm.estimators.ranking import RankSVM
from qpsvm.estimators.structured import StructuredSVM

__all__ = ["RankSVM", "SVMClassifier", "StructuredSVM"]
