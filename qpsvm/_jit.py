"""numba's options for qpsvm's compiled functions: no entry point that nothing uses.

numba compiles a jitted function with two entry points besides its machine code: a CPython
wrapper (to be called from Python) and a C-callable one (to be passed as a first-class function
value, which qpsvm never does). A compiled callee is linked into each of its callers, and each
caller optimises and emits again all the code linked into it, these wrappers included: along the
SMO loop's chain ``exp_nonpositive -> kernel_row -> cached_row -> _unshrink -> smo_loop`` the
unused wrappers cost about 1 s of the 7 s a cold first call spent compiling (measured by
``benchmarks/regimes/cold.py``, DESIGN.md "Compiled kernels and the cold start").

Every compiled function of qpsvm is ``numba.njit(**ENTRY)`` (called from Python) or
``numba.njit(**CALLEE)`` (called only from other compiled functions, so not from Python at all);
both are cached on disk (:mod:`qpsvm._compile_cache`). An ``@overload`` (the row accessors of
:mod:`qpsvm._rows`) takes ``jit_options=OVERLOAD``: numba gives an overload no CPython wrapper
but does give it the C-callable one, which for the accessors' tuple of six arrays is linked
into every kernel that reads a row (0.1-0.15 s of Crammer-Singer's cold compile).
"""

from __future__ import annotations

__all__ = ["CALLEE", "ENTRY", "OVERLOAD"]

#: Options of a compiled function called from Python: cached, without the C-callable wrapper.
ENTRY = {"cache": True, "no_cfunc_wrapper": True}
#: Options of a compiled function called only from compiled code: without either wrapper.
CALLEE = {"cache": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}
#: Options of an overload's implementation (numba's own default adds no CPython wrapper):
#: without the C-callable wrapper either.
OVERLOAD = {"no_cfunc_wrapper": True}
