"""Semi-DP releases of contingency tables with public margins (Cho & Awan): Figures 2-3 and Section 6.

See README.md in this folder. :func:`reproduce` runs both experiments
(:mod:`.experiments`), draws the figures (:mod:`.figures`) and writes ``report.md`` with the
paper's claims checked in numbers (:mod:`.report`), including the 2020 Census account
(:mod:`.census`).
"""

from ...reproduce import CaseStudy
from .pipeline import reproduce

CASE_STUDY = CaseStudy(
    name="semidp_tables",
    title="Semi-DP Gaussian and K-norm releases of k x k tables with public margins against naive DP designs, "
          "and the 2020 Census guarantee under Semi-DP",
    paper="Y. Cho, J. Awan, Formal Privacy Guarantees with Invariant Statistics, sections 5.3 and 6",
    minutes=(1, 0.2),
    run=reproduce,
)

__all__ = ["CASE_STUDY", "reproduce"]
