"""Memory per draw of each sampler, and the largest requests that fit on a 24 GiB machine.

What is measured
----------------
Each configuration (a sampler on a problem, at two request sizes) runs in its own Python
process. The process imports and warms up everything first, then records its resident memory,
runs the request and reports its peak resident memory (``ru_maxrss``). The growth between the
two sizes, divided by the difference in draws (or, for enumeration, in enumerated tables),
is the memory one more draw costs; its intercept is the fixed cost of the request. From them
the script extrapolates the largest request that fits in 24 GiB less the baseline of the
process, and checks that ``PPDModel.check_memory``'s estimate per draw (which every sampler
uses to refuse a request that will not fit) is at least the measured one, so the refusal is
on the safe side.

Problems (shapes of the project's case studies):

* ``beta-binomial``: theta and x scalars (the gallery's first model);
* ``2 x 23 table``: 46 cells with a public total, the shape of the congenial case study's table
  (the county model's structure with 46 cells);
* ``67 counties``: the COVID county model's shape (67 shares, 67 counts, a public total);
* enumeration: the county model on 4 counties, by the number of splits of the total;
* ``pymc``: the 67-county model's PyMC twin with the data-augmentation step (one chain; PyMC keeps
  every draw of every variable in memory).

Run: ``.venv/bin/python benchmarks/memory_limits.py`` (about 3 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import textwrap

GIB = 2**30
MACHINE_BYTES = 24 * GIB

CHILD = textwrap.dedent(r"""
    import json, resource, sys, warnings
    import numpy as np
    import ppdinfer as pp
    from ppdinfer.inference.model import _MEMORY_COPIES
    from ppdinfer.models import beta_binomial, county_counts

    sampler, problem, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    warnings.simplefilter("ignore")

    def county(J, total):
        rng = np.random.default_rng(20261123)
        previous = rng.multinomial(total, rng.dirichlet(np.full(J, 2.0)))
        x = rng.multinomial(total, (previous + 1) / (previous + 1).sum())
        model = county_counts.model(epsilon=1.0, concentration=50.0)
        z = county_counts.public_information(previous, total)
        return model, model.mechanism.release(x, z, random_seed=1), z

    def build(total):
        if problem == "beta-binomial":
            return beta_binomial.model(n=100, epsilon=0.5), 40, None
        if problem == "2 x 23 table":
            return county(46, 2000)
        if problem == "67 counties":
            return county(67, 5000)
        return county(4, total)           # enumeration: the public total sets the number of tables

    def run(n, problem_size):
        model, y, z = build(problem_size)
        if sampler == "rejection":
            return pp.rejection_sample(model, y, z, draws=n, random_seed=2, progressbar=False)
        if sampler == "importance":
            return pp.importance_sample(model, y, z, draws=n, random_seed=2)
        if sampler == "pymc":
            import ppdinfer.pymc as ppm
            with model.to_pymc(y, z):
                return ppm.sample(draws=n, tune=100, chains=1, cores=1, random_seed=2, progressbar=False,
                                  compute_convergence_checks=False)
        return pp.exact_posterior(model, y, z, draws=1000, random_seed=2)

    enumerating = sampler == "enumeration"
    run(10, 10)                                            # imports, numba compilation, caches
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    result = run(1000 if enumerating else size, size)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    units = int(result["exact"].sizes["support"]) if enumerating else size
    theta_shape = result["posterior"]["share" if "share" in result["posterior"] else "p"].shape[2:]
    x_shape = result["posterior"]["cases" if "cases" in result["posterior"] else "x"].shape[2:]
    estimate = (int(np.prod(theta_shape)) + int(np.prod(x_shape)) + 2) * 8 * _MEMORY_COPIES  # check_memory's
    print(json.dumps({"before": before, "peak": peak, "units": units, "estimate_per_draw": estimate}))
""")

CONFIGS = [
    ("rejection", "beta-binomial", (100_000, 1_000_000)),
    ("importance", "beta-binomial", (1_000_000, 10_000_000)),
    ("importance", "2 x 23 table", (100_000, 1_000_000)),
    ("importance", "67 counties", (100_000, 1_000_000)),
    ("pymc", "67 counties", (2_000, 50_000)),
    ("enumeration", "4 counties", (60, 150)),
]


def measure(sampler: str, problem: str, size: int) -> dict:
    """Run one configuration in a fresh process and return its memory figures."""
    out = subprocess.run(
        [sys.executable, "-c", CHILD, sampler, problem, str(size)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    print(
        f"{'sampler':<12} {'problem':<15} {'sizes':>22} {'bytes/unit':>11} {'estimate':>9} "
        f"{'baseline':>9} {'largest on 24 GiB':>18}"
    )
    safe = True
    for sampler, problem, (small, large) in CONFIGS:
        a, b = measure(sampler, problem, small), measure(sampler, problem, large)
        growth = (b["peak"] - b["before"]) - (a["peak"] - a["before"])
        per_unit = max(growth, 0) / (b["units"] - a["units"])
        fixed = max(b["peak"] - b["before"] - per_unit * b["units"], 0)
        largest = (MACHINE_BYTES - b["before"] - fixed) / per_unit if per_unit > 0 else float("inf")
        unit = "tables" if sampler == "enumeration" else "draws"
        estimate = b["estimate_per_draw"]
        if sampler not in ("enumeration", "pymc"):  # check_memory guards the exact samplers
            safe &= estimate >= per_unit
        print(
            f"{sampler:<12} {problem:<15} {a['units']:>10,}/{b['units']:>11,} {per_unit:>11,.0f} "
            f"{estimate if sampler not in ('enumeration', 'pymc') else '-':>9} {b['before'] / 2**20:>7,.0f}Mi "
            f"{largest:>12.3g} {unit}"
        )
    print(
        f"\ncheck_memory's estimate per draw is at least the measured cost for every sampler: "
        f"{'met' if safe else 'MISSED'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
