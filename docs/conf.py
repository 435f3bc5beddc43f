"""Sphinx configuration of pyroi's documentation (built by .ci/run with warnings as errors:
sphinx-build -W --keep-going -b html docs DIR).

Pages are Markdown (MyST). Every docs/*.md page joins the site on its own (the glob in
index.md's table of contents); docs/project/ holds the pages listed last (changelog,
license). The API reference is generated from the installed package's docstrings (numpydoc
sections, read by napoleon), the C API reference from the comments of pyroi.h
(_ext/c_header.py).
"""

import logging
import sys
from pathlib import Path

import pyroi

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

project = "pyroi"
author = "the pyroi developers"
copyright = "2026, the pyroi developers"
release = version = pyroi.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "c_header",
]
source_suffix = {".md": "markdown"}
root_doc = "index"
smartquotes = False  # "--libs" stays two hyphens, quotes stay straight
exclude_patterns = ["_build", "**/_build", ".venv*"]

# A page may link to a repository file outside docs/ (../README.md, ../examples/...), which
# Sphinx cannot resolve as a page; tests/test_docs.py checks instead that every relative link
# of every page names a file that exists.
suppress_warnings = ["myst.xref_missing"]

# MyST: headings get anchors (for links such as [x](semantics.md#the-bilinear-sampler)),
# and $...$ is not math.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# The reference documents what is exported; docstrings use numpydoc sections.
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the signatures' types are in the stubs and the docstrings
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "alabaster"
html_title = f"pyroi {release}"
html_theme_options = {"description": "Region-of-interest pooling, exact and fast",
                      "fixed_sidebar": True, "page_width": "1240px", "sidebar_width": "230px",
                      "body_max_width": "none"}
html_static_path = ["_static"]
html_css_files = ["pyroi.css"]
html_sidebars = {"**": ["about.html", "navigation.html", "searchbox.html"]}


class _EmptyGlob(logging.Filter):
    """Drops the warning of index.md's `*` glob when no page beyond the listed ones exists
    (Sphinx gives it no type, so suppress_warnings cannot name it)."""

    def filter(self, record):
        return getattr(record, "subtype", None) != "empty_glob"


def setup(app):
    logging.getLogger("sphinx.sphinx.directives.other").addFilter(_EmptyGlob())
