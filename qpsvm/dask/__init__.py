"""Exact linear SVMs on Dask collections: data beyond one machine's memory (see
:mod:`qpsvm.dask.working_set`). Needs the ``dask`` extra: ``pip install qpsvm[dask]``."""
