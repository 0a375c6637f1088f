"""Semi-DP releases of contingency tables with public margins (Cho & Awan): Figures 2-3 and Section 6.

See README.md in this folder. :func:`reproduce` runs both experiments (``experiments.py``), draws
the figures (``figures.py``) and writes ``report.md`` with the paper's claims checked in numbers
(``report.py``), including the 2020 Census account (``census.py``).
"""

from ...reproduce import CaseStudy, LazyFunction, lazy_exports

# the code is imported on first use, so that ``ppdinfer --help`` stays fast
__getattr__, __dir__ = lazy_exports(__name__, {"reproduce": ".pipeline"})

CASE_STUDY = CaseStudy(
    name="semidp_tables",
    title="Semi-DP Gaussian and K-norm releases of k x k tables with public margins against naive DP designs, "
    "and the 2020 Census guarantee under Semi-DP",
    paper="Y. Cho, J. Awan, Formal Privacy Guarantees with Invariant Statistics, sections 5.3 and 6",
    minutes=(1, 0.2),
    run=LazyFunction(f"{__name__}.pipeline", "reproduce"),
)

__all__ = ["CASE_STUDY", "reproduce"]
