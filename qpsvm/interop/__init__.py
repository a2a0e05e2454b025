"""Other tools' answers: read them with the problem they solved, and certify them on it.

:func:`validate` is the entry point (also ``qpsvm.validate`` and ``qpsvm validate`` / ``qpsvm
certify`` on the command line). Readers: :mod:`~qpsvm.interop.scikit_learn` (fitted
estimators), :mod:`~qpsvm.interop.liblinear` and :mod:`~qpsvm.interop.libsvm` (model files and
the official bindings' model objects), :mod:`~qpsvm.interop.svmlight` (SVM-light / SVM-rank
files), :mod:`~qpsvm.interop.files` (format detection, JSON and text). verify/ never sees any
of this: it gets arrays and a problem.
"""

from qpsvm.interop.answer import ForeignAnswer, ProblemSpec
from qpsvm.interop.files import FORMATS, detect_format, read_model_file
from qpsvm.interop.validation import Part, Validation, read_answer, validate

__all__ = [
    "FORMATS",
    "ForeignAnswer",
    "Part",
    "ProblemSpec",
    "Validation",
    "detect_format",
    "read_answer",
    "read_model_file",
    "validate",
]
