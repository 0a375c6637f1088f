"""Coverage of the block totals' 90 % intervals over replicate files, by block size: the case study's block study
(``census_nmf.block_coverage``) with more replicates than its quick mode and fewer than its full one.

What is measured
----------------
``--replicates`` files of one county's synthetic truth (``--counties``, default Cameron: 4,547 people, 117 blocks;
the study's seed 2020), each written and read at the Block level and fitted by ``census_nmf.blocks.fit_blocks``
(``blocks.MOVES``, 2 chains in one thread, ``--tune`` + ``--draws`` sweeps) on ``--workers`` processes: by block
class (0, 1-9, 10-49, 50+ persons, and all), the coverage of the posterior's randomized and closed 90 % intervals and
of GLS's normal interval, with binomial and replicate standard errors, the RMSE of the posterior mean against GLS's,
and over the replicates the smallest bulk ESS and largest R-hat of the block totals, and seconds. The replicate
files stay in ``--folder`` (a run resumes there).

Run with ``.venv/bin/python benchmarks/block_coverage.py [--replicates 30] [--draws 200] [--tune 200]
[--workers 2] [--folder DIR]``: about 40 s per replicate per worker on Cameron.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counties", default="Cameron", help="comma-separated county names")
    parser.add_argument("--replicates", type=int, default=30)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--tune", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--folder", default=None, help="the replicate files' folder (default: a new temporary one)")
    args = parser.parse_args()

    from ppdinfer.case_studies.census_nmf.block_coverage import block_coverage_summary, run_block_coverage
    from ppdinfer.case_studies.census_nmf.coverage import load_replicates

    folder = args.folder or tempfile.mkdtemp(prefix="block-coverage-")
    start = time.perf_counter()
    run = run_block_coverage(folder, counties=args.counties.split(","), replicates=args.replicates, draws=args.draws,
                             tune=args.tune, workers=args.workers, progressbar=False)  # fmt: skip
    seconds = time.perf_counter() - start
    summary = block_coverage_summary(*load_replicates(folder))
    columns = ["blocks", "replicates", "coverage_randomized", "se_binomial_randomized", "se_replicate_randomized",
               "coverage_closed", "coverage_gls", "rmse_post_mean", "rmse_gls", "ratio", "se_ratio"]  # fmt: skip
    out = {
        "folder": folder,
        "replicates_run": len(run),
        "seconds": round(seconds, 1),
        "by_size": summary[columns].round(4).to_dict(orient="index"),
        **{("replicate_sampling_seconds" if k == "seconds" else k): round(v, 3) for k, v in summary.attrs.items()},
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
