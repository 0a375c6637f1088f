"""ppdinfer against what an expert writes instead (issue 34): the hospital model with the counts summed out by hand.

The model is ``benchmarks/hospitals_pymc.py``'s (exposures e_i, rates lambda_i ~ Gamma(a, a / m), a, m ~ Gamma(2, 1),
counts x_i ~ Poisson(e_i lambda_i) released with Gaussian noise of sd sigma = 4.22, eps 1, delta 1e-6); same data
per size. Contenders, every one in every round (2 chains x (``--tune`` 1000 + ``--draws`` 1000), 2 cores):

- ``ppdinfer``: ``ppdinfer.pymc.sample`` on the ``Release`` model with its defaults (``method="auto"`` sums the
  counts out and integrates the rates with them; ``marginal_step="auto"``: the independence Metropolis sampler on
  the 2 dimensions left, a and m); ``ppdinfer[nuts]``: the same with ``marginal_step="nuts"`` (NUTS on what is
  left, as before the independence sampler: PyMC's own for a short run, else the default backend);
- the expert's marginalized model: a, m and the rates continuous, the counts summed out by logsumexp over a window
  of +-8 noise sds (a ``pm.Potential``), sampled by PyMC's NUTS (``pymc``) and by ``nutpie``;
- ``numpyro``: the same marginalized model written by hand in NumPyro (NUTS, chains in parallel on 2 host devices);
  its compile seconds are those of a 5 + 5 run (each run compiles afresh), its sampling the rest of the full run.

For each: compile seconds (wall minus sampling), sampling seconds, the smallest bulk ESS over a, m and the rates, ESS
per second (compilation included), and per-variable means with MCSE; the median over ``--rounds`` rounds. Then the
ratios of ppdinfer's ESS per second to each contender's (and sampling-only at each size), and a check that every
pair of contenders agrees on the means of a and m within 4 combined MCSE, and on the rates with no more means beyond
4 combined MCSE than chance allows (at most max(1, 3 x the expected count)). Load (``uptime``) is printed
beside each table. Run: ``.venv/bin/python benchmarks/expert_alternatives.py [--sizes 50 200] [--rounds 3]``.
"""

from __future__ import annotations

import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")  # NumPyro: a device per chain

import argparse
import importlib.util
import subprocess
import sys
import time
import warnings
from pathlib import Path

import arviz as az
import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy import special, stats

sys.path.insert(0, str(Path(__file__).parent))
from hospitals_pymc import hierarchical_model, synthetic_hospitals

import ppdinfer.pymc as ppm

warnings.filterwarnings("ignore")
HALF_WIDTH_SDS = 8.0
CHAINS = 2


def expert_window(y, sigma):
    """(lo, width): the window k in [lo, lo + width) covering y +- 8 sigma, k >= 0."""
    lo = np.maximum(np.floor(y - HALF_WIDTH_SDS * sigma), 0).astype(np.int64)
    width = int(np.ceil(2 * HALF_WIDTH_SDS * sigma)) + 1
    return lo, width


def expert_pymc_model(exposure, y, sigma) -> pm.Model:
    """The marginalized model an expert writes in PyMC: logsumexp over the window, NUTS on a, m and the rates."""
    lo, width = expert_window(y, sigma)
    k = (lo[None, :] + np.arange(width)[:, None]).astype(float)
    noise = -0.5 * ((y - k) / sigma) ** 2 - np.log(sigma * np.sqrt(2 * np.pi)) - special.gammaln(k + 1)
    with pm.Model(coords={"hospital": np.arange(len(y))}) as model:
        a = pm.Gamma("a", 2.0, 1.0)
        m = pm.Gamma("m", 2.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / m, dims="hospital")
        mu = rate * exposure
        pm.Potential("y_marginal", pt.sum(pt.logsumexp(k * pt.log(mu) - mu + noise, axis=0)))
    return model


def run_pymc(model, nuts_sampler, draws, tune, seed):
    start = time.perf_counter()
    with model:
        idata = pm.sample(
            draws=draws,
            tune=tune,
            chains=CHAINS,
            cores=2,
            random_seed=seed,
            nuts_sampler=nuts_sampler,
            progressbar=False,
            compute_convergence_checks=False,
        )
    total = time.perf_counter() - start
    return idata, total, _sampling_seconds(idata, total)


def _sampling_seconds(idata, total):
    for group in ("posterior", "sample_stats"):
        if group in idata.children and "sampling_time" in idata[group].attrs:
            return float(idata[group].attrs["sampling_time"]) + float(
                idata["posterior"].attrs.get("sampling_time_latents", 0.0)
            )
    return total


def run_ppdinfer(exposure, y, sigma, draws, tune, seed, marginal_step="auto"):
    start = time.perf_counter()
    model = hierarchical_model(exposure, y, sigma, plain=False)
    kwargs = {"marginal_step": marginal_step}
    with model:
        idata = ppm.sample(
            draws=draws,
            tune=tune,
            chains=CHAINS,
            cores=2,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )
    total = time.perf_counter() - start
    return idata, total, _sampling_seconds(idata, total)


def run_nutpie(exposure, y, sigma, draws, tune, seed):
    import nutpie

    start = time.perf_counter()
    compiled = nutpie.compile_pymc_model(expert_pymc_model(exposure, y, sigma))
    compiled_at = time.perf_counter()
    idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=CHAINS, cores=2, seed=seed, progress_bar=False)
    end = time.perf_counter()
    return idata, end - start, end - compiled_at


def run_numpyro(exposure, y, sigma, draws, tune, seed):
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from jax.scipy.special import logsumexp
    from numpyro.infer import MCMC, NUTS

    lo, width = expert_window(y, sigma)
    k = jnp.asarray((lo[None, :] + np.arange(width)[:, None]).astype(float))
    noise = jnp.asarray(
        -0.5 * ((y - np.asarray(k)) / sigma) ** 2
        - np.log(sigma * np.sqrt(2 * np.pi))
        - special.gammaln(np.asarray(k) + 1)
    )
    e = jnp.asarray(exposure)

    def model():
        a = numpyro.sample("a", dist.Gamma(2.0, 1.0))
        m = numpyro.sample("m", dist.Gamma(2.0, 1.0))
        with numpyro.plate("hospital", len(y)):
            rate = numpyro.sample("rate", dist.Gamma(a, a / m))
        mu = rate * e
        numpyro.factor("y_marginal", jnp.sum(logsumexp(k * jnp.log(mu) - mu + noise, axis=0)))

    def run(warmup, samples, key):
        mcmc = MCMC(
            NUTS(model),
            num_warmup=warmup,
            num_samples=samples,
            num_chains=CHAINS,
            chain_method="parallel",
            progress_bar=False,
        )
        start = time.perf_counter()
        mcmc.run(jax.random.PRNGKey(key))
        jax.block_until_ready(mcmc.get_samples())
        return mcmc, time.perf_counter() - start

    # each run compiles afresh (a new pmap of a new kernel): a 5 + 5 run is the compilation, near enough
    _, compile_seconds = run(5, 5, seed + 1)
    mcmc, total = run(tune, draws, seed)
    sampling = max(total - compile_seconds, 1e-9)
    samples = mcmc.get_samples(group_by_chain=True)
    posterior = {name: np.asarray(samples[name]) for name in ("a", "m", "rate")}
    idata = az.from_dict({"posterior": posterior}, dims={"rate": ["hospital"]})
    return idata, total, sampling


def summarize(idata):
    """(min bulk ESS over a, m, rate; means and MCSE of a, m, rate as one vector each)."""
    ess = az.ess(idata, var_names=["a", "m", "rate"], method="bulk")
    mcse = az.mcse(idata, var_names=["a", "m", "rate"])
    min_ess = min(float(ess[name].min()) for name in ("a", "m", "rate"))
    means = np.concatenate(
        [np.ravel(idata["posterior"][name].mean(("chain", "draw")).values) for name in ("a", "m", "rate")]
    )
    errors = np.concatenate([np.ravel(mcse[name].values) for name in ("a", "m", "rate")])
    return min_ess, means, errors, float(ess["a"])


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip().split("load average:")[-1].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 800, 3200])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("--skip", nargs="*", default=[], help="contenders to leave out (e.g. pymc at 3,200)")
    args = parser.parse_args()
    have = {name: importlib.util.find_spec(name) is not None for name in ("nutpie", "numpyro")}
    contenders = {
        "ppdinfer": lambda e, y, s, seed: run_ppdinfer(e, y, s, args.draws, args.tune, seed),
        "ppdinfer[nuts]": lambda e, y, s, seed: run_ppdinfer(e, y, s, args.draws, args.tune, seed, "nuts"),
        "pymc": lambda e, y, s, seed: run_pymc(expert_pymc_model(e, y, s), "pymc", args.draws, args.tune, seed),
    }
    if have["nutpie"]:
        contenders["nutpie"] = lambda e, y, s, seed: run_nutpie(e, y, s, args.draws, args.tune, seed)
    if have["numpyro"]:
        contenders["numpyro"] = lambda e, y, s, seed: run_numpyro(e, y, s, args.draws, args.tune, seed)
    failures = []
    for size in args.sizes:
        exposure, _, y, sigma = synthetic_hospitals(size, args.seed)
        names = [name for name in contenders if f"{name}@{size}" not in args.skip and name not in args.skip]
        rows = {name: [] for name in names}
        loads = [load()]
        for round_ in range(args.rounds):
            order = names[round_ % len(names) :] + names[: round_ % len(names)]  # rotate who goes first
            for name in order:
                seed = args.seed + 100 * round_ + 7
                idata, total, sampling = contenders[name](exposure, y, sigma, seed)
                min_ess, means, errors, ess_a = summarize(idata)
                attrs = idata["posterior"].attrs
                method = " ".join(str(attrs[key]) for key in ("ppdinfer_method", "ppdinfer_step") if key in attrs)
                rows[name].append((total - sampling, sampling, min_ess, ess_a, means, errors, method))
                print(
                    f"  [{size} round {round_}] {name:15s} compile {total - sampling:6.1f} s sampling {sampling:6.1f} s "
                    f"min ESS {min_ess:7.0f} (a {ess_a:6.0f}) {method}",
                    flush=True,
                )
            loads.append(load())
        print(f"\n{size} hospitals (sigma {sigma:.2f}; median of {args.rounds} rounds; load {' -> '.join(loads)})")
        print(
            f"{'contender':15s} {'compile s':>9s} {'sampling s':>10s} {'min ESS':>8s} {'ESS a':>7s} {'ESS/s':>8s} "
            f"{'ESS/s samp.':>11s} {'ppd ratio':>9s} {'ratio samp.':>11s}"
        )
        table = {}
        for name in names:
            compile_s = float(np.median([r[0] for r in rows[name]]))
            sampling_s = float(np.median([r[1] for r in rows[name]]))
            min_ess = float(np.median([r[2] for r in rows[name]]))
            ess_a = float(np.median([r[3] for r in rows[name]]))
            per_s = float(np.median([r[2] / (r[0] + r[1]) for r in rows[name]]))
            per_sampling = float(np.median([r[2] / r[1] for r in rows[name]]))
            table[name] = (compile_s, sampling_s, min_ess, ess_a, per_s, per_sampling)
        for name, (compile_s, sampling_s, min_ess, ess_a, per_s, per_sampling) in table.items():
            ours = table["ppdinfer"] if "ppdinfer" in table else None
            ratio = ours[4] / per_s if ours else float("nan")
            ratio_sampling = ours[5] / per_sampling if ours else float("nan")
            print(
                f"{name:15s} {compile_s:9.1f} {sampling_s:10.1f} {min_ess:8.0f} {ess_a:7.0f} {per_s:8.1f} "
                f"{per_sampling:11.1f} {ratio:9.2f} {ratio_sampling:11.2f}"
            )
        # agreement: every pair of contenders, first round, within 4 combined MCSE on a and m; on the rates, no more
        # means beyond 4 combined MCSE than chance allows (P(|z| > 4) = 6.3e-5 each: with 6 pairs x 3,200 rates about
        # 1.2 fall beyond by chance alone), at most max(1, 3 x that)
        worst, beyond_rates, comparisons = 0.0, 0, 0
        labels = ["a", "m", *(f"rate[{i}]" for i in range(size))]
        for i, first in enumerate(names):
            for second in names[i + 1 :]:
                _, _, _, _, m1, e1, _ = rows[first][0]
                _, _, _, _, m2, e2, _ = rows[second][0]
                z = np.abs(m1 - m2) / np.sqrt(e1**2 + e2**2)
                worst = max(worst, float(z.max()))
                beyond = [f"{labels[k]} ({z[k]:.2f})" for k in np.flatnonzero(z > 4)]
                if beyond:
                    print(f"  {first} vs {second}: beyond 4 MCSE: {', '.join(beyond)} of {z.size}")
                if np.any(z[:2] > 4):
                    failures.append(f"{size}: {first} vs {second}: a or m beyond 4 MCSE")
                beyond_rates += int(np.sum(z[2:] > 4))
                comparisons += z.size - 2
        chance = comparisons * 2 * float(stats.norm.sf(4.0))
        if beyond_rates > max(1.0, 3 * chance):
            failures.append(f"{size}: {beyond_rates} rate means beyond 4 MCSE, {chance:.2f} expected by chance")
        print(f"rate means beyond 4 combined MCSE: {beyond_rates} of {comparisons} ({chance:.2f} expected by chance)")
        print(f"largest |difference| / combined MCSE over every pair and a, m, rates: {worst:.2f} (limit 4)")
    if failures:
        print("DISAGREEMENT:", *failures, sep="\n  ")
    assert not failures, failures


if __name__ == "__main__":
    main()
