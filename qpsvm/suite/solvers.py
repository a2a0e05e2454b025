"""The solvers the suite scores, each turning an instance into a certificate on its problem.

A solver runs on an instance's data and returns an :class:`Answer`: the certificate of its
answer on the instance's formulation, or the failure (an exception, a wrong status, a model of
a different problem). The kinds:

- :class:`CvxpySolver`: a CVXPY solver on ``f.problem``, at its defaults or at high accuracy;
- :class:`QpSolver`: a qpsolvers backend on :func:`qpsvm.suite.to_qp`;
- :class:`Estimator`: a scikit-learn estimator class with parameters (``C``, sample weights and
  kernel parameters set from the instance);
- :class:`Liblinear` / :class:`Libsvm`: the official bindings with an option string (``-c`` is
  set from the instance);
- :class:`Command`: a command line that trains on an svmlight file and writes a model file;
- :class:`Callable`: a Python function ``instance -> (w, b)``, ``{"w": .., "b": ..}`` or
  ``{"alpha": ..}``.

Models of other tools are read and certified on the problem they solved by
:func:`qpsvm.validate`; when that problem is not the instance's (compared through their
settings, kernel and data, :func:`same_problem`), the answer fails with ``"different problem"``
and the problem the tool solved, in words.
"""

from __future__ import annotations

import importlib
import shlex
import subprocess
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable as CallableType
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from qpsvm.exceptions import InvalidInputError, UnsupportedProblemError
from qpsvm.suite.instances import Instance

__all__ = [
    "Answer",
    "Callable",
    "Command",
    "CvxpySolver",
    "Estimator",
    "Liblinear",
    "Libsvm",
    "QpSolver",
    "Solver",
    "same_problem",
]

#: Options of each CVXPY solver at high accuracy.
CVXPY_HIGH_ACCURACY: dict[str, dict[str, Any]] = {
    "CLARABEL": {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12},
    "OSQP": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iter": 200000, "polishing": True},
    "SCS": {"eps_abs": 1e-10, "eps_rel": 1e-10, "max_iters": 200000},
    "ECOS": {"abstol": 1e-12, "reltol": 1e-12, "feastol": 1e-12},
    "PIQP": {"eps_abs": 1e-12, "eps_rel": 1e-12},
    "PROXQP": {"eps_abs": 1e-12, "eps_rel": 0.0},
    "HIGHS": {},
}
#: Options of each qpsolvers backend at high accuracy (the same solvers and option names,
#: qpsolvers naming backends in lower case).
QPSOLVERS_HIGH_ACCURACY: dict[str, dict[str, Any]] = {
    name.lower(): options for name, options in CVXPY_HIGH_ACCURACY.items()
}


@dataclass
class Answer:
    """What a solver returned on one instance.

    Attributes
    ----------
    certificate : Certificate or None
        Of the answer on the instance's formulation (``None`` on failure).
    w : ndarray or None
        The answer's ``w`` when explicit.
    failure : str or None
        ``"exception"``, ``"status"``, ``"different problem"`` or ``"unsupported"``.
    message : str
    """

    certificate: Any = None
    w: np.ndarray | None = None
    failure: str | None = None
    message: str = ""


#: Attributes that state a problem besides its arrays (those present on a formulation count).
_SETTINGS = ("C", "fit_intercept", "variant", "loss", "penalty", "intercept", "epsilon")
_ARRAYS = ("X", "y", "sample_weight", "margin", "pairs", "items")
#: Kinds whose problem with mirrored labels ``-y`` is the same, with ``(w, b) -> (-w, -b)``.
_MIRRORED = ("binary", "ComposedClassifier")


def _kind(f: Any) -> str:
    """The problem a formulation class states: the binary primal and dual state one."""
    from qpsvm.formulations.binary import BinaryFormulation
    from qpsvm.formulations.ranking import RankingSVM

    if isinstance(f, BinaryFormulation) and not isinstance(f, RankingSVM):
        return "binary"
    return type(f).__name__


def _setting(f: Any, key: str) -> Any:
    """A setting comparably: a composed problem's pieces by what they state (the loss and
    penalty by name, with the elastic net's ratio; the intercept by mode and scaling)."""
    value = getattr(f, key, None)
    if key == "intercept" and value is not None and not isinstance(value, str):
        return (value.mode, value.scaling if value.regularized else None)
    if key == "penalty" and value is not None and not isinstance(value, str):
        return (value.name, getattr(value, "l1_ratio", None))
    if key == "loss" and value is not None and not isinstance(value, str):
        return value.name
    return value


def _kernel_key(f: Any) -> tuple:
    kernel = getattr(f, "kernel", None)
    if kernel is None or kernel.name == "linear":
        return ("linear",)
    params = {"rbf": ("gamma",), "poly": ("gamma", "degree", "coef0")}.get(kernel.name, ())
    return (kernel.name, *(getattr(kernel, p) for p in params), kernel.function)


def same_problem(f: Any, g: Any) -> bool:
    """Whether two formulations state the same problem: the same kind (the binary primal and
    dual are one), settings (``C``, intercept, variant, loss, penalty...), kernel and data
    (``X``, labels up to a mirror of the two binary classes, weights, margins), entry for
    entry. A regularised intercept with scaling ``B`` is the problem without intercept on the
    data with a constant column ``B`` appended (how LIBLINEAR's ``-B`` states it)."""
    (kind, fs, fa), (other, gs, ga) = _canonical(f), _canonical(g)
    if kind != other or fs != gs or _kernel_key(f) != _kernel_key(g):
        return False
    for key in _ARRAYS:
        a, b = fa.get(key), ga.get(key)
        if key == "X" and kind == "RankingSVM":
            continue  # the pair differences follow from items and pairs
        if (a is None) != (b is None):
            return False
        if a is not None:
            # binary labels may be mirrored (LIBLINEAR's positive class is the first label
            # seen): the problem with -y is the same, with (w, b) -> (-w, -b)
            mirrored = key == "y" and kind in _MIRRORED and np.array_equal(a, -b)
            if a.shape != b.shape or not (np.array_equal(a, b) or mirrored):
                return False
    return True


def _canonical(f: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The kind, settings and arrays of ``f``: a regularised intercept folded into the data,
    and a composed hinge / L2 problem read as the binary one it is."""
    kind = _kind(f)
    settings = {key: _setting(f, key) for key in _SETTINGS}
    arrays = {}
    for key in _ARRAYS:
        value = getattr(f, key, None)
        if value is not None:
            arrays[key] = value.toarray() if sp.issparse(value) else np.asarray(value)
    if settings["intercept"] is not None and settings["intercept"][0] == "regularized":
        scaling = settings["intercept"][1]
        arrays["X"] = np.hstack([arrays["X"], np.full((arrays["X"].shape[0], 1), scaling)])
        settings["intercept"] = ("none", None)
        settings["fit_intercept"] = False
    if kind == "ComposedClassifier" and settings["loss"] == "hinge":
        if settings["penalty"] == ("l2", None):
            kind = "binary"
            settings.update(loss=None, penalty=None, intercept=None, epsilon=None)
    return kind, settings, arrays


def _certify_arrays(f: Any, values: dict[str, Any]) -> Answer:
    if values.get("alpha") is not None:
        cert = f.certify(alpha=np.asarray(values["alpha"], dtype=np.float64))
        return Answer(cert, None if not getattr(f, "linear", False) else f.expansion(cert.alpha))
    w = np.asarray(values["w"], dtype=np.float64)
    b = values.get("b")
    cert = f.certify(w=w, b=0.0 if b is None and not getattr(f, "fit_intercept", False) else b)
    return Answer(cert, w)


class Solver(ABC):
    """A solver the suite can score: :meth:`run` an instance, get an :class:`Answer`."""

    name: str = ""

    @abstractmethod
    def run(self, instance: Instance, f: Any) -> Answer:
        """Solve ``f`` (built from ``instance``) and certify the answer."""


@dataclass
class _Backend(Solver):
    """A numerical solver named ``solver``, at its defaults or at high accuracy (the options
    of :attr:`accurate`), with extra ``options``."""

    solver: str
    high_accuracy: bool = False
    options: dict[str, Any] = field(default_factory=dict)

    prefix: ClassVar[str] = ""
    accurate: ClassVar[dict[str, dict[str, Any]]] = {}

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.prefix}:{self.solver}" + (":high" if self.high_accuracy else "")

    def solver_options(self) -> dict[str, Any]:
        """The options passed to the solver."""
        base = dict(self.accurate.get(self.solver, {})) if self.high_accuracy else {}
        return base | self.options


@dataclass
class CvxpySolver(_Backend):
    """A CVXPY solver on ``f.problem``; ``high_accuracy`` uses :data:`CVXPY_HIGH_ACCURACY`.
    The answer is read off the model's variables (``w``, ``b``, or ``alpha``)."""

    prefix: ClassVar[str] = "cvxpy"
    accurate: ClassVar[dict[str, dict[str, Any]]] = CVXPY_HIGH_ACCURACY

    def run(self, instance: Instance, f: Any) -> Answer:
        if instance.family == "chain":
            return Answer(failure="unsupported", message="no finite f.problem")
        problem = f.problem
        problem.solve(solver=self.solver, **self.solver_options())
        if problem.status not in ("optimal", "optimal_inaccurate"):
            return Answer(failure="status", message=f"status {problem.status}")
        values = {name: var.value for name, var in f.variables.items()}
        return _certify_arrays(f, values)


@dataclass
class QpSolver(_Backend):
    """A qpsolvers backend on :func:`qpsvm.suite.to_qp`; ``high_accuracy`` uses
    :data:`QPSOLVERS_HIGH_ACCURACY`."""

    prefix: ClassVar[str] = "qpsolvers"
    accurate: ClassVar[dict[str, dict[str, Any]]] = QPSOLVERS_HIGH_ACCURACY

    def run(self, instance: Instance, f: Any) -> Answer:
        import qpsolvers

        from qpsvm.suite.qp import to_qp

        if instance.family == "chain":
            return Answer(failure="unsupported", message="no finite QP")
        qp = to_qp(instance, f)
        result = qpsolvers.solve_problem(qp.problem, solver=self.solver, **self.solver_options())
        if not result.found or result.x is None:
            return Answer(failure="status", message=f"{self.solver} found no solution")
        return _certify_arrays(f, qp.form.variables(result.x))


def _fit_args(instance: Instance, f: Any) -> dict[str, Any]:
    arrays = instance.arrays()
    weight = getattr(f, "sample_weight", None)
    weighted = weight is not None and not np.all(weight == 1.0)
    return {"X": arrays["X"], "y": arrays.get("y"), "sample_weight": weight if weighted else None}


def _tool_refuses(instance: Instance, f: Any) -> str:
    """Why a classifier tool cannot state the instance's problem ('' when it can)."""
    if instance.family in ("ranking", "chain"):
        return f"a classifier does not solve the {instance.family} problem"
    if not np.isfinite(f.C):
        return "the hard margin has no finite C to pass"
    return ""


def _validated(model: Any, instance: Instance, f: Any, **fit: Any) -> Answer:
    """Certify a tool's model on the problem it solved; its certificate counts when that
    problem is the instance's."""
    from qpsvm.interop import validate

    arrays = instance.arrays()
    kwargs = {"groups": arrays.get("groups")} if "groups" in arrays else {}
    try:
        val = validate(model, arrays["X"], arrays.get("y"), C=f.C, **kwargs, **fit)
    except UnsupportedProblemError as exc:
        return Answer(failure="different problem", message=str(exc))
    spec = val.spec.describe()
    if len(val.parts) != 1 or not same_problem(val.parts[0].formulation, f):
        return Answer(failure="different problem", message=f"the tool solved: {spec}")
    return Answer(val.parts[0].certificate, None, message=spec)


@dataclass
class Estimator(Solver):
    """A scikit-learn estimator class with parameters; ``C``, the kernel (``"linear"`` for the
    linear families), its parameters and the sample weights are set from the instance unless
    given."""

    cls: type
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:  # type: ignore[override]
        extra = ",".join(f"{k}={v}" for k, v in self.params.items())
        return f"sklearn:{self.cls.__name__}" + (f"({extra})" if extra else "")

    def run(self, instance: Instance, f: Any) -> Answer:
        refused = _tool_refuses(instance, f)
        if refused:
            return Answer(failure="unsupported", message=refused)
        params = dict(self.params)
        accepted = self.cls().get_params()
        if "C" in accepted and np.isfinite(f.C):
            params.setdefault("C", f.C)
        for key in ("gamma", "degree", "coef0"):
            if key in accepted and key in instance.recipe:
                params.setdefault(key, instance.recipe[key])
        if "kernel" in accepted:
            kernel = getattr(f, "kernel", None)
            params.setdefault("kernel", "linear" if kernel is None else kernel.name)
        est = self.cls(**params)
        fit = _fit_args(instance, f)
        est.fit(fit["X"], fit["y"], sample_weight=fit["sample_weight"])
        return _validated(est, instance, f, sample_weight=fit["sample_weight"])


@dataclass
class _Official(Solver):
    """An official LIBLINEAR / LIBSVM binding: ``train(y, X, options + " -c C -q")``."""

    options: str = ""

    #: ``(label, module, function)`` of the binding's training call.
    binding: ClassVar[tuple[str, str, str]] = ("", "", "")

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"{self.binding[0]}:{self.options}".rstrip(":")

    def run(self, instance: Instance, f: Any) -> Answer:
        refused = _tool_refuses(instance, f)
        if refused:
            return Answer(failure="unsupported", message=refused)
        fit = _fit_args(instance, f)
        if fit["sample_weight"] is not None:
            return Answer(failure="unsupported", message="the bindings take no sample weights")
        _, module, function = self.binding
        train = getattr(importlib.import_module(module), function)
        model = train(fit["y"].tolist(), fit["X"], f"{self.options} -c {f.C!r} -q")
        return _validated(model, instance, f)


@dataclass
class Liblinear(_Official):
    """The official LIBLINEAR bindings (``liblinear-official``) with an option string, e.g.
    ``"-s 3 -e 1e-3"``; ``-c`` is the instance's ``C``."""

    binding: ClassVar[tuple[str, str, str]] = ("liblinear", "liblinear.liblinearutil", "train")


@dataclass
class Libsvm(_Official):
    """The official LIBSVM bindings (``libsvm-official``) with an option string, e.g.
    ``"-t 2 -g 0.25 -e 1e-3"``; ``-c`` is the instance's ``C``."""

    binding: ClassVar[tuple[str, str, str]] = ("libsvm", "libsvm.svmutil", "svm_train")


@dataclass
class Command(Solver):
    """A command line that trains on an svmlight file and writes a model file.

    ``template`` names ``{train}`` (the data, svmlight format, labels as in the recipe),
    ``{model}`` (the file to write) and ``{C}``; the model file is read by
    :func:`qpsvm.validate` (LIBLINEAR, LIBSVM, SVM-light / SVM-rank, JSON or text).
    """

    template: str

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"command:{self.template}"

    def run(self, instance: Instance, f: Any) -> Answer:
        from sklearn.datasets import dump_svmlight_file

        fit = _fit_args(instance, f)
        with tempfile.TemporaryDirectory() as tmp:
            train, model = Path(tmp) / "train.svm", Path(tmp) / "model.txt"
            arrays = instance.arrays()
            groups = arrays.get("groups")
            dump_svmlight_file(fit["X"], fit["y"], str(train), query_id=groups, zero_based=False)
            command = self.template.format(train=train, model=model, C=repr(f.C))
            done = subprocess.run(shlex.split(command), capture_output=True, text=True)
            if done.returncode != 0:
                return Answer(
                    failure="status", message=f"exit {done.returncode}: {done.stderr[-300:]}"
                )
            return _validated(str(model), instance, f)


@dataclass
class Callable(Solver):
    """A Python function ``instance -> (w, b)``, ``{"w": .., "b": ..}`` or ``{"alpha": ..}``."""

    function: CallableType[[Instance], Any]
    label: str = ""

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.label or getattr(self.function, "__name__", "callable")

    def run(self, instance: Instance, f: Any) -> Answer:
        out = self.function(instance)
        if isinstance(out, dict):
            values = out
        elif isinstance(out, tuple) and len(out) == 2:
            values = {"w": out[0], "b": out[1]}
        else:
            raise InvalidInputError(
                f"{self.name} returned {type(out).__name__}; return (w, b), {{'w': w, 'b': b}} "
                "or {'alpha': alpha}."
            )
        return _certify_arrays(f, values)
