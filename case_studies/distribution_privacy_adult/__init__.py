"""Distribution privacy on UCI Adult (Chen & Ohrimenko): Table 2, Figures 2-5, the attack of Figure 4 and Table 3.

See README.md in this folder. :func:`reproduce` (``pipeline.py``) draws subsets with a fixed
income share and fits f_theta (``data.py``, ``experiments.py``), calibrates ExpM(G), EigM(G),
DauM(G) and the group-DP Gaussian and audits them (``experiments.py``), runs the meta-classifier
attack (``attack.py``), draws the figures (``figures.py``) and writes ``report.md`` with the
paper's claims checked in numbers (``report.py``).
"""

from ...reproduce import CaseStudy, LazyFunction, lazy_exports

# the code is imported on first use, so that ``ppdinfer --help`` stays fast
__getattr__, __dir__ = lazy_exports(__name__, {"reproduce": ".pipeline"})

CASE_STUDY = CaseStudy(
    name="distribution_privacy_adult",
    title="Distribution privacy for the income share of Adult subsets: ExpM(G), EigM(G), DauM(G) against the "
    "group-DP Gaussian (Table 2, Figures 2, 3, 5) and a meta-classifier property inference attack "
    "(Figure 4, Table 3), with exact audits of the Gaussian calibrations",
    paper="M. Chen, O. Ohrimenko, Protecting Global Properties of Datasets with Distribution Privacy Mechanisms, "
    "section 5 and Appendix C",
    minutes=(1.5, 0.3),
    run=LazyFunction(f"{__name__}.pipeline", "reproduce"),
)

__all__ = ["CASE_STUDY", "reproduce"]
