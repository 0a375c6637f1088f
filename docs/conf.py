"""Sphinx configuration of the ppdinfer documentation (``make docs``).

Markdown pages (MyST), the API reference from the docstrings (autodoc + numpydoc, NumPy style),
the notebooks in ``notebooks/`` executed, and each case study's page with the figures and claims
of a quick run. The local extension ``_ext/ppd_results.py`` keeps both in a cache keyed by the
code's digest (``_build/ppd_cache``): a cold ``make docs`` executes the notebooks and runs the
quick case studies (about 5 minutes on 2 cores), a warm one reuses them. Executing at build time,
rather than storing outputs in the notebooks, keeps the notebooks free of outputs (the tests
require it) and the pictures those of the code being documented. A notebook or case study whose
data are absent here is shown without outputs, with a note.

The build is strict: ``make docs`` and tests/test_docs.py run ``sphinx-build -W --keep-going
-n``, and ``_ext/ppd_docscheck.py`` warns (so fails the build) for a public name without a
docstring or an Examples section, or missing from the API reference. tests/test_docs.py builds
with ``-D nb_execution_mode=off -D ppd_case_study_runs=0``: tests/test_notebooks.py executes the
notebooks, the case-study tests run the quick variants.
"""

import logging
import sys
from pathlib import Path

logging.getLogger("pytensor").setLevel(logging.WARNING)  # its configuration notes at import

sys.path.insert(0, str(Path(__file__).parent / "_ext"))

import ppdinfer  # noqa: E402

project = "ppdinfer"
author = "the ppdinfer developers"
copyright = "the ppdinfer developers"
version = release = ppdinfer.__version__

extensions = [
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx.ext.mathjax",
    "myst_nb",
    "ppd_docscheck",
    "ppd_results",
]

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]
nitpicky = True

autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the parameters are described in the docstrings
autodoc_preserve_defaults = True
numpydoc_show_class_members = False  # autodoc lists the members
numpydoc_class_members_toctree = False

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3
nb_execution_mode = "cache"  # executed once per code digest (ppd_results sets nb_execution_cache_path)
nb_execution_timeout = 300  # seconds per cell; each notebook runs in well under a minute
nb_execution_in_temp = True  # files a notebook writes stay out of the repository
nb_execution_show_tb = True  # the traceback of a failure, in the log (ppd_results reads its last line)

# ppd_results: where the executed notebooks and the case studies' quick runs are kept, and the
# errors that mean "the data are absent here" (the page then shows a note instead of failing): a
# missing file, or a download that failed (ppdinfer.datasets raises OSError where there is no network).
ppd_cache = "_build/ppd_cache"
ppd_data_absent_errors = ["FileNotFoundError", "OSError"]

html_theme = "furo"
html_title = f"ppdinfer {release}"

# ppd_docscheck: the modules whose public names must have a docstring with an example and
# appear in the API reference (docs/api/).
ppd_public_modules = [
    "ppdinfer",
    "ppdinfer.inference",
    "ppdinfer.frequentist",
    "ppdinfer.mechanisms",
    "ppdinfer.mechanisms.distribution",
    "ppdinfer.priors",
    "ppdinfer.generators",
    "ppdinfer.privacy.sufficient_statistics",
    "ppdinfer.privacy",
    "ppdinfer.invariants",
    "ppdinfer.datasets",
    "ppdinfer.interop",
    "ppdinfer.projection",
    "ppdinfer.postprocessing",
    "ppdinfer.pymc",
    "ppdinfer.pymc.families",
    "ppdinfer.pymc.marginal",
    "ppdinfer.testing",
    "ppdinfer.validation",
    "ppdinfer.rng",
    "ppdinfer.models",
    "ppdinfer.models.beta_binomial",
    "ppdinfer.models.congenial_counts",
    "ppdinfer.models.county_counts",
    "ppdinfer.models.linear_regression",
    "ppdinfer.models.logistic_regression",
    "ppdinfer.models.property_secret",
    "ppdinfer.models.pufferfish_secret",
    "ppdinfer.models.regression_records",
    "ppdinfer.models.regression_sbc",
    "ppdinfer.models.semidp_table",
    "ppdinfer.models.table_2x2",
]

# ppd_docscheck: members of classes built on PyMC that implement PyMC's interface (PyMC calls
# and documents them); docs/api/pymc.md leaves them out of the reference.
ppd_foreign_members = {"dist", "logp", "logcdf", "support_point", "rv_op", "rv_type", "competence"}

# ppd_docscheck: public names excused from the docstring-example rule (empty: keep it so; the build
# fails while a stale entry stays).
ppd_docstring_allowlist: set[str] = set()
