"""A point of the regime grid and the timing rule shared by every family."""

from __future__ import annotations

import contextlib
import functools
import importlib
import math
import multiprocessing
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from qpsvm.exceptions import UncertifiedSolutionError
from qpsvm.solution import Solution

SCALES = ("quick", "full")

#: The certifiers of qpsvm's families (the formulations' ``certifier`` entry points).
CERTIFIERS = (
    "qpsvm.verify.binary:certify_binary",
    "qpsvm.verify.fenchel:certify_composed",
    "qpsvm.verify.multiclass:certify_multiclass",
    "qpsvm.verify.ranking:certify_ranking",
    "qpsvm.verify.ranking:certify_grouped",
    "qpsvm.verify.structural:certify_structural",
)


#: The anchor's stopping tolerance, as multiples of its default, tried in turn for the answer of
#: qpsvm's accuracy: its default, then ten times tighter each step.
LADDER = tuple(10.0**-k for k in range(9))

#: Seconds of timed calls each side fills at least (beyond :attr:`Point.repeat` calls), and the
#: most calls it makes however short they are (:func:`enough`).
BUDGET = 0.4
MOST_CALLS = 1000


def enough(times: list[float], repeat: int) -> bool:
    """Whether a side's timed calls, of ``times`` = t_1 .. t_n seconds so far, are done:
    n >= ``repeat`` and t_1 + ... + t_n >= :data:`BUDGET`, or n >= :data:`MOST_CALLS`.

    The rule of qpsvm's calls, the anchor's and the certificate's alike, and of the anchor's
    forked child and its parent (both stop on the same times). A call of ``BUDGET / repeat``
    seconds or more is timed ``repeat`` times, as before the rule; shorter calls are timed
    until their median stops moving with the machine. Three calls a side read one
    ms-scale point 1.2x in one run and 2.5x in the next, and the 200 x 40 graded ranking
    at ``c`` = 1 between 1.25x and 7.4x in five runs at load 5; 0.4 s of calls a side (CPU
    time, :attr:`Point.clock`) held every ms-scale point within 1.11x over five runs
    (docs/performance.md, "The grid's timing of short calls").
    """
    return len(times) >= MOST_CALLS or (len(times) >= repeat and sum(times) >= BUDGET)


@dataclass(frozen=True)
class Tightened:
    """The anchor at a scaled stopping tolerance, and the certificate of its answer.

    ``fit(factor)`` runs the anchor on the point's data with ``factor`` times its default
    stopping tolerance (and an iteration limit high enough not to stop it first) and returns its
    model; ``certified(model)`` tells whether qpsvm certifies the model's answer on the point's
    problem at qpsvm's tolerance (relative gap ``1e-9``), the accuracy of qpsvm's own answer.
    """

    fit: Callable[[float], Any]
    certified: Callable[[Any], bool]


@dataclass(frozen=True)
class Point:
    """One problem of the grid, solved by qpsvm and by its anchor.

    Parameters
    ----------
    family : str
        The regime: ``"sparse"``, ``"kernel"``, ``"multiclass"``, ``"ranking"``, ``"structural"``,
        ``"small"``, ``"cold"``.
    name : str
        The point's parameters, e.g. ``"n=5000 d=20000 nnz/row=50 C=1"``.
    anchor : str
        The specialised solver timed against qpsvm (``"liblinear"``, ``"libsvm"``, ``"dlib"``, ...).
    qpsvm : callable
        Runs qpsvm's certified solve and returns its :class:`~qpsvm.Solution` (or a stand-in
        with ``passed``); the point fails when the answer is not certified, so a fast wrong
        answer never counts.
    reference : callable
        Runs the anchor at its defaults on the same data.
    repeat : int
        Calls per side at least (:func:`enough`: more while they fill less than
        :data:`BUDGET` seconds); the median time is reported.
    formulation : callable, optional
        Builds the formulation ``qpsvm`` solves. The certificate is timed as a user runs it,
        ``f.certify(solution)`` of the answer ``qpsvm`` returned, on a formulation built afresh
        for each call (its construction untimed; no cache of the solve reused). ``None`` when
        the point has no separate certificate (the cold start).
    tightened : Tightened, optional
        The anchor with its stopping tolerance scaled, where it solves qpsvm's problem itself
        (not where it stands in for a nearest problem: a regularised bias for qpsvm's free
        intercept, Crammer-Singer for Weston-Watkins, a binary cut for graded relevance).
    clock : callable
        The seconds every timed call is read on: the process's CPU time by default, each
        side's calls being single-threaded (``OMP_NUM_THREADS=1``), so that a shared machine
        does not charge a call with other processes' time slices, the longer call more often
        (the rbf n = 200 point at load 5: qpsvm 6.4 ms wall for 2.4 ms CPU, libsvm 1.4 ms
        both); wall time (``time.perf_counter``) where a call's work runs in another process
        (the cold start).
    """

    family: str
    name: str
    anchor: str
    qpsvm: Callable[[], Any]
    reference: Callable[[], Any]
    repeat: int = 3
    formulation: Callable[[], Any] | None = None
    tightened: Tightened | None = None
    clock: Callable[[], float] = time.process_time


@dataclass(frozen=True)
class Timing:
    """Median times of one point and their ratios.

    ``qpsvm`` and ``anchor`` are the solves; ``certify`` the re-certification of qpsvm's answer
    alone and ``in_solve`` the time ``solve()`` spent inside the certifier (``nan`` where the
    point has none). ``anchor_limited`` marks an anchor stopped at its time limit: ``anchor``
    is then the limit, a lower bound on its fit. ``equal`` is the anchor's time to an answer as
    accurate as qpsvm's (:func:`equal_accuracy`), where measured.
    """

    point: Point
    qpsvm: float
    anchor: float
    certify: float = math.nan
    in_solve: float = math.nan
    anchor_limited: bool = False
    equal: EqualAccuracy | None = None

    @property
    def ratio(self) -> float:
        """qpsvm's solve over the anchor's fit (an upper bound where ``anchor_limited``: the
        anchor's call was stopped at ``anchor`` seconds)."""
        return self.qpsvm / self.anchor

    @property
    def certify_ratio(self) -> float:
        """The certificate alone over the anchor's fit (issue target: at most 1)."""
        return self.certify / self.anchor

    @property
    def equal_ratio(self) -> float:
        """qpsvm's solve over the anchor's fit to an answer qpsvm certifies (``nan`` where the
        point has none or no rung was certified)."""
        if self.equal is None or not self.equal.reached:
            return math.nan
        return self.qpsvm / self.equal.seconds


class CertifierClock:
    """Seconds on ``clock`` spent inside qpsvm's certifiers while :meth:`running` (outermost
    calls only: a certifier that calls another is counted once)."""

    def __init__(self, clock: Callable[[], float] = time.process_time) -> None:
        self.seconds = 0.0
        self._clock = clock
        self._depth = 0

    def _timed(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            start = self._clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self.seconds += self._clock() - start

        timed.__wrapped__ = fn  # type: ignore[attr-defined]
        return timed

    @contextlib.contextmanager
    def running(self) -> Iterator[CertifierClock]:
        """Every qpsvm module's binding of a certifier replaced by its timed wrapper."""
        originals = []
        for path in CERTIFIERS:
            module, _, name = path.partition(":")
            fn = getattr(importlib.import_module(module), name)
            wrapper = self._timed(fn)
            # by key: Cython puts its shadow `cython.parallel`, which has no name, in sys.modules
            ours = [m for key, m in list(sys.modules.items()) if key.startswith("qpsvm")]
            for mod in ours:
                if mod.__dict__.get(name) is fn:
                    originals.append((mod, name, fn))
                    setattr(mod, name, wrapper)
        try:
            yield self
        finally:
            for mod, name, fn in originals:
                setattr(mod, name, fn)


def call_times(
    fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.process_time
) -> Iterator[float]:
    """The time on ``clock`` of each call of ``fn``, called back to back as many times as
    :func:`enough` asks of ``repeat``, yielded as each call ends."""
    times: list[float] = []
    while not enough(times, repeat):
        start = clock()
        fn()
        times.append(clock() - start)
        yield times[-1]


def median_time(
    fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.process_time
) -> float:
    """Median of :func:`call_times`."""
    return statistics.median(call_times(fn, repeat, clock))


class AnchorOverLimit(RuntimeError):
    """One call of the anchor ran longer than the grid's limit and was stopped."""


def _anchor_calls(fn: Callable[[], Any], repeat: int, clock: Callable[[], float], out: Any) -> None:
    """The child's side of :func:`limited_median_time`: an untimed warm call, then the time
    on ``clock`` of each call :func:`enough` asks of ``repeat``, each sent as it ends."""
    fn()
    out.send(None)
    for seconds in call_times(fn, repeat, clock):
        out.send(seconds)


def limited_median_time(
    fn: Callable[[], Any],
    repeat: int,
    limit: float,
    clock: Callable[[], float] = time.process_time,
) -> float:
    """:func:`median_time` after one untimed warm call, with every call stopped after
    ``limit`` seconds of wall time.

    The calls run in a forked child (the anchor's closure and data are inherited, not
    pickled), which is killed when one call outlasts the limit: an anchor that does not end
    (libsvm's poly kernel at n = 8000, C = 100 ran for over an hour) is reported as taking
    more than the limit instead of holding the grid. The child's times (its own CPU time by
    default) come one a call, and the parent stops receiving where :func:`enough` stops the
    child.

    Raises
    ------
    AnchorOverLimit
        When a call (the warm one included) takes longer than ``limit`` seconds.
    RuntimeError
        When the child dies without its times (the anchor raised).
    """
    receive, send = multiprocessing.Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(
        target=_anchor_calls, args=(fn, repeat, clock, send)
    )
    child.start()
    send.close()
    times: list[float] = []
    warm = True
    try:
        while warm or not enough(times, repeat):
            if not receive.poll(limit):
                if child.is_alive():
                    call = len(times) + 1 + (not warm)  # the warm call is the first
                    raise AnchorOverLimit(f"call {call} of the anchor ran over {limit:g} s")
                raise RuntimeError(
                    f"the anchor's process exited with code {child.exitcode} (its traceback above)"
                )
            sent = receive.recv()
            if warm:
                warm = False
            else:
                times.append(sent)
    except EOFError as error:
        raise RuntimeError(f"the anchor's process exited with code {child.exitcode}") from error
    finally:
        child.kill()
        child.join()
        receive.close()
    return statistics.median(times)


def certificate_of(result: Any) -> Any:
    """The certificate of a :class:`~qpsvm.Solution`, or ``result`` itself (a stand-in)."""
    return result.certificate if isinstance(result, Solution) else result


class PointFailure(RuntimeError):
    """qpsvm gave no certified answer at a point: the grid reports it as a failure, never as
    a time, and goes on to the next point."""


def checked(certificate: Any, point: Point, what: str) -> None:
    """Raise :class:`PointFailure` when ``certificate`` did not pass."""
    if not getattr(certificate, "passed", False):
        raise PointFailure(f"{what} is not certified")


def time_point(point: Point, anchor_limit: float | None = None) -> Timing:
    """Time one point; a first untimed call of each side pays compilation and caches, and
    each side's timed calls then run back to back (qpsvm's inside one
    :class:`CertifierClock`, each call's share of it read as the clock's increase), as many
    as :func:`enough` asks of :attr:`Point.repeat` on each side and for the certificate, every
    call read on :attr:`Point.clock`.

    With ``anchor_limit`` (seconds) the anchor's calls run in a child process stopped at the
    limit (:func:`limited_median_time`); a stopped anchor gives a timing with
    ``anchor_limited`` and the limit as its time.

    Raises
    ------
    PointFailure
        When qpsvm's answer is not certified, or its solve refuses to return an uncertified
        one (:class:`~qpsvm.exceptions.UncertifiedSolutionError`, e.g. a rounding floor above
        the tolerance).
    """
    try:
        answer = point.qpsvm()
    except UncertifiedSolutionError as error:
        raise PointFailure(f"{type(error).__name__}: {error}") from error
    checked(certificate_of(answer), point, "qpsvm's answer")
    if anchor_limit is None:
        point.reference()
    shares = []
    times = []
    # one clock around every timed call, so that they run back to back as the anchor's do:
    # the clock's setup (walks of sys.modules, rebinding the certifiers) between the calls
    # left each one with cold caches (the small ranking point: 100 -> 230 us, dlib 44 us)
    clock = CertifierClock(point.clock)
    with clock.running():
        before = 0.0
        for seconds in call_times(point.qpsvm, point.repeat, point.clock):
            times.append(seconds)
            shares.append(clock.seconds - before)
            before = clock.seconds
    limited = False
    if anchor_limit is None:
        anchor = median_time(point.reference, point.repeat, point.clock)
    else:
        try:
            anchor = limited_median_time(point.reference, point.repeat, anchor_limit, point.clock)
        except AnchorOverLimit:
            anchor, limited = anchor_limit, True
    if point.formulation is None:
        return Timing(point, statistics.median(times), anchor, anchor_limited=limited)
    checked(point.formulation().certify(answer), point, "the re-certified answer")
    certify: list[float] = []
    while not enough(certify, point.repeat):
        f = point.formulation()
        start = point.clock()
        f.certify(answer)
        certify.append(point.clock() - start)
    return Timing(
        point,
        statistics.median(times),
        anchor,
        statistics.median(certify),
        statistics.median(shares),
        limited,
    )


def geometric_mean(values: list[float]) -> float:
    """exp(mean(log v)): the mean of ratios that treats 2x and 0.5x symmetrically."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class EqualAccuracy:
    """The anchor's time to an answer as accurate as qpsvm's.

    ``scale`` is the first rung of :data:`LADDER` whose answer qpsvm certifies (``nan`` when
    none does: ``seconds`` is then the last rung's time, a lower bound), ``seconds`` the median
    time of the anchor's fit there.
    """

    scale: float
    seconds: float

    @property
    def reached(self) -> bool:
        """Whether some rung's answer was certified."""
        return not math.isnan(self.scale)


def equal_accuracy(point: Point, limit: float | None = None) -> EqualAccuracy | None:
    """Time the anchor at the loosest tolerance of :data:`LADDER` whose answer qpsvm certifies.

    Each rung's fit is run once and its answer certified; at the first certified rung the fit
    is timed as the point's anchor is (:func:`median_time`, on :attr:`Point.clock`). A fit
    that takes longer than ``limit`` seconds ends the ladder (the rung's time, a lower bound,
    is reported as not reached). ``None`` for a point without :attr:`Point.tightened`.
    """
    if point.tightened is None:
        return None
    seconds = math.nan
    for scale in LADDER:
        start = point.clock()
        model = point.tightened.fit(scale)
        seconds = point.clock() - start
        if point.tightened.certified(model):
            rung = functools.partial(point.tightened.fit, scale)
            return EqualAccuracy(scale, median_time(rung, point.repeat, point.clock))
        if limit is not None and seconds > limit:
            break
    return EqualAccuracy(math.nan, seconds)


def certifies(
    build: Callable[[], Any], answer: Callable[[Any], dict[str, Any]] | None = None
) -> Callable[[Any], bool]:
    """Whether qpsvm certifies a fitted model on the problem ``build()`` states: the model
    itself (a scikit-learn estimator) or the keywords ``answer(model)`` gives ``certify``
    (e.g. ``{"w": ...}``). One formulation serves every rung, built at the first call."""
    built: list[Any] = []

    def certified(model: Any) -> bool:
        if not built:
            built.append(build())
        f = built[0]
        certificate = f.certify(**answer(model)) if answer else f.certify(model)
        return bool(certificate.passed)

    return certified


def liblinear_at(X: Any, y: Any, **params: Any) -> Callable[[float], Any]:
    """``LinearSVC(**params)`` fitted at ``factor`` times its default tolerance (``1e-4``), its
    iteration limit raised so that the tolerance, not the limit, stops it, and its order of
    coordinates seeded: liblinear's dual coordinate descent visits them in a random order, so
    unseeded fits at one tolerance differ, and a rung certified once might not be the next
    time."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    def fit(factor: float) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = LinearSVC(**params, tol=1e-4 * factor, max_iter=10**6, random_state=0)
            return model.fit(X, y)

    return fit


def libsvm_at(X: Any, y: Any, **params: Any) -> Callable[[float], Any]:
    """``SVC(**params)`` fitted at ``factor`` times its default tolerance (``1e-3``)."""
    from sklearn.svm import SVC

    return lambda factor: SVC(**params, tol=1e-3 * factor).fit(X, y)
