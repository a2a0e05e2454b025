"""The regime grid of ``bench_regimes.py``: one module per family of problems.

Each family module defines ``points(scale)`` returning :class:`Point` objects; the driver
times qpsvm's certified solve against the specialised solver users would run on the same
problem (the anchor), in the same process, and prints the ratio per point.
"""
