"""Bayesian inference for a census noisy-measurement file: a synthetic Pennsylvania released as in 2020.

See README.md in this folder. :func:`reproduce` writes the synthetic state's Noisy Measurement File in
the Bureau's layout, reads it back, and fits that release of the whole synthetic state by
the posterior (:func:`ppdinfer.census.sample_cells`), GLS and a TopDown-like estimate
(``analysis.py``), runs the coverage study over replicate releases of a few counties on any
executor, checkpointed (``coverage.py``), and that of the full 2,016-cell histogram
(:func:`ppdinfer.census.sample_people`) over replicate files of one county, fits one file of a few
counties down to blocks (block and district posteriors against GLS and TopDown, ``blocks.py``) and
replicate files of one county at the Block level (coverage by block size, ``block_coverage.py``), and
writes ``report.md`` with a claims table and figures (``report.py``, ``block_report.py``). The synthetic
state and its release are in ``synthetic.py``; PROVENANCE.md derives the noise scales from the Bureau's
production settings.
"""

from ...reproduce import CaseStudy, LazyFunction, lazy_exports

# the code is imported on first use, so that ``ppdinfer --help`` stays fast
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "reproduce": ".pipeline",
        "make_release": ".synthetic",
        "file_release": ".synthetic",
        "fit_release": ".analysis",
        **dict.fromkeys(["coverage_summary", "load_replicates", "run_coverage"], ".coverage"),
    },
)

CASE_STUDY = CaseStudy(
    name="census_nmf",
    title="A synthetic Pennsylvania's 2020-style noisy measurements: posterior cells against GLS and "
    "TopDown, interval coverage, majority-minority tracts",
    paper="J. M. Abowd et al., The 2020 Census Disclosure Avoidance System TopDown Algorithm",
    # quick: 151 s on an idle 2-core machine (measured; the block steps 48 s of it);
    # full: the state fit 109-154 min (benchmarks/census_nmf_file.py), the full histogram's study 80 min, the
    # block fit about 10 min and the block coverage study (200 files x 800 sweeps) about 70 min, estimated
    minutes=(310, 2.5),
    run=LazyFunction(f"{__name__}.pipeline", "reproduce"),
)

__all__ = [
    "CASE_STUDY",
    "coverage_summary",
    "file_release",
    "fit_release",
    "load_replicates",
    "make_release",
    "reproduce",
    "run_coverage",
]
