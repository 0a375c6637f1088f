"""Ni Ding's Kantorovich mechanism for Pufferfish privacy on UCI Adult: Appendix C, Figures 1-4, Theorems 1-3.

See README.md in this folder. :func:`reproduce` (``pipeline.py``) reads race and education
(``data.py``), computes the plans, Figure 4's variances and every calibration with its exact
privacy loss (``experiments.py``), draws the figures (``figures.py``) and writes ``report.md``
with the paper's claims checked in numbers (``report.py``).
"""

from ...reproduce import CaseStudy, LazyFunction, lazy_exports

# the code is imported on first use, so that ``ppdinfer --help`` stays fast
__getattr__, __dir__ = lazy_exports(__name__, {"reproduce": ".pipeline"})

CASE_STUDY = CaseStudy(
    name="kantorovich_adult",
    title="Kantorovich optimal-transport calibration of Laplace and Gaussian noise for Pufferfish privacy: "
    "Appendix C's plans, counting queries, Adult race -> education and Figure 4, with exact privacy losses",
    paper="N. Ding, Kantorovich Mechanism for Pufferfish Privacy, sections 3-5 and Appendix C",
    minutes=(0.5, 0.2),
    run=LazyFunction(f"{__name__}.pipeline", "reproduce"),
)

__all__ = ["CASE_STUDY", "reproduce"]
