"""Sphinx configuration of the qpsvm documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
The notebooks in ``notebooks/`` are stored without outputs; the build executes them (about two
minutes on two cores) so that the site shows their numbers and figures, and fails if one raises.
``QPSVM_DOCS_EXECUTE=0`` renders them unexecuted, for a quick look at the prose.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import qpsvm

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent

project = "qpsvm"
author = "the qpsvm developers"
copyright = "the qpsvm developers"
release = qpsvm.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
]

# --- the notebooks: notebooks/ is the one copy; docs/notebooks is a link to it made at build
# time (a copy where the file system has no symbolic links), never committed
_link = DOCS / "notebooks"
if _link.is_dir() and not _link.is_symlink():
    shutil.rmtree(_link)  # a copy left by an earlier build: refresh it
if not _link.exists():
    try:
        os.symlink(os.path.relpath(ROOT / "notebooks", DOCS), _link, target_is_directory=True)
    except OSError:
        shutil.copytree(ROOT / "notebooks", _link)

nb_execution_mode = "force" if os.environ.get("QPSVM_DOCS_EXECUTE", "1") != "0" else "off"
nb_execution_raise_on_error = True
nb_execution_timeout = 600
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]

# --- API reference
autodoc_typehints = "none"
autodoc_member_order = "bysource"
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False


def _skip_metadata_requests(app, what, name, obj, skip, options):
    """scikit-learn's generated ``set_*_request`` methods are its API, not qpsvm's."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_requests)


# --- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"qpsvm {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path: list[str] = []
