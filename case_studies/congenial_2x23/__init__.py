"""Gong & Meng's congenial DP on the 2 x 23 sex-by-age table (sections 3-4, Table 1, Figure 1, Appendix C).

See README.md in this folder. :func:`reproduce` runs everything into a folder and writes ``report.md``;
the pieces: ``data.py`` (Table 1, its invariants, the synthetic tables), ``table1.py`` (release,
acceptance curve, trace, exact rejection), ``comparison.py`` (Figure 1's four methods),
``figures.py``, ``report.py`` (the claims table), ``settings.py`` (full and quick sizes).
"""

from ...reproduce import CaseStudy, LazyFunction, lazy_exports

# the code is imported on first use, so that ``ppdinfer --help`` stays fast
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(["CONFIDENTIAL", "PAPER_RELEASE", "free_cells", "invariants_for", "synthetic_tables"], ".data"),
        "reproduce": ".pipeline",
        **dict.fromkeys(["acceptance_curve", "congenial_mechanism", "mis_release", "rejection_estimate"], ".table1"),
    },
)

CASE_STUDY = CaseStudy(
    name="congenial_2x23",
    title="congenial double-geometric release of a 2 x 23 sex-by-age table under census invariants: "
    "the MIS's acceptance rate and traces, exact rejection, and the distance comparison of Figure 1",
    paper="R. Gong, X.-L. Meng, Congenial Differential Privacy under Mandated Disclosure, sections 3-4 and appendix C",
    minutes=(6, 0.2),
    run=LazyFunction(f"{__name__}.pipeline", "reproduce"),
)

__all__ = [
    "CASE_STUDY",
    "CONFIDENTIAL",
    "PAPER_RELEASE",
    "acceptance_curve",
    "congenial_mechanism",
    "free_cells",
    "invariants_for",
    "mis_release",
    "reproduce",
    "rejection_estimate",
    "synthetic_tables",
]
