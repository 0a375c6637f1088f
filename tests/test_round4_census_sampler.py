"""Issue 41, the census sampler and its case study: arguments refused by name, learn=False with every
hyperparameter, a second Ctrl-C, counts past int32 and near 2^53, a state fit of another configuration."""

import json
import signal
import threading
import time

import arviz as az
import numpy as np
import pytest
from scipy import special, stats

from ppdinfer.census import Geography, TableSpec, census_queries, hierarchical_log_prior, sample_cells
from ppdinfer.census import sampler as census_sampler
from ppdinfer.mechanisms import NoisyMeasurements

LOG_10 = float(np.log(10.0))
FIXED = {"alpha": 3.0, "phi": 4.0, "mean": 5.0, "shares": [0.35, 0.65]}


def tiny(queries=("total", "detailed"), total=8, sigma=1.5, margins=None):
    geo = Geography(["t", "b0", "b1"], [None, "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b"), margins or {}), {"level1": list(queries)})
    invariants = q.unit_invariants(["t"], [total]) if total is not None else None
    return q, NoisyMeasurements(q.matrix, sigma, invariants=invariants)


def within_mcse(draws, target, sds=4.0):
    """Whether the mean of (chain, draw) values is within ``sds`` Monte Carlo standard errors of ``target``."""
    mcse = draws.std() / np.sqrt(max(float(az.ess(draws)), 1.0))
    return abs(draws.mean() - target) < sds * mcse + 1e-12, (draws.mean(), target, mcse)


# --- arguments ---------------------------------------------------------------------------------------------------

BAD = [
    ({"tune": -1}, "tune must be non-negative, got -1"),
    ({"tune": 1.5}, "tune must hold integers, got 1.5"),
    ({"tune": True}, "tune must be a whole number >= 0"),
    ({"draws": 2.5}, "draws must be a positive integer, got 2.5"),
    ({"chains": 0}, "chains must be a positive integer"),
    ({"thin": -2}, "thin must be a positive integer"),
    ({"cores": -1}, "cores must be a positive integer, got -1"),
    ({"cores": 0}, "cores must be a positive integer, got 0"),
    ({"step": 0}, "step must be a positive integer"),
    ({"hyper_rounds": 1.5}, "hyper_rounds must be a positive integer"),
    ({"revisit": -1}, "revisit must be non-negative, got -1"),
    ({"revisit": 2.5}, "revisit must hold integers"),
    ({"window": "wide"}, "window must be a finite number >= 0, got 'wide'"),
    ({"window": float("inf")}, "window must be a finite number >= 0"),
    ({"local": "x"}, r"local must be a probability in \[0, 1\], got 'x'"),
    ({"spread": float("nan")}, r"spread must be a probability in \[0, 1\]"),
    ({"sibling_spread": 2}, r"sibling_spread must be a probability in \[0, 1\]"),
    ({"partners": ("a", 0.1)}, r"partners must be a probability in \[0, 1\], got 'a'"),
    ({"partner_floor": 0}, "partner_floor must be a positive finite number"),
    ({"partners": (0.1, 0.1, 0.1)}, "partners must be two probabilities"),
    ({"partners": 0.5}, "partners must be two probabilities"),
    ({"partners": (0.7, 0.6)}, "partners must be two probabilities"),
    ({"learn": "no"}, "learn must be True or False"),
    ({"initial": "abc"}, "initial must hold integers"),
    ({"initial": [1, 2, 3, 2, 0]}, "initial must hold 4 counts"),
    ({"hyperparameters": [("alpha", 1.0)]}, "hyperparameters must be a dict or None"),
    ({"hyperparameters": {"beta": 1.0}}, r"unknown keys \['beta'\]"),
    ({"hyperparameters": {"alpha": [1.0, 2.0, 3.0]}}, r"hyperparameters: alpha must be a scalar or one value per"),
    ({"hyperparameters": {"alpha": "a"}}, r"hyperparameters: alpha must be numbers"),
    ({"hyperparameters": {"alpha": -1.0}}, r"hyperparameters: alpha must be finite and > 0"),
    ({"hyperparameters": {"mean": [1.0, 2.0]}}, r"hyperparameters: mean must be a scalar or one value per parent"),
    ({"hyperparameters": {"shares": [0.2, 0.3, 0.5]}}, r"hyperparameters: shares must be 2 values or one row"),
    ({"hyperparameters": {"shares": [0.2, 0.3]}}, r"hyperparameters: shares must sum to one"),
    ({"hyperparameters": {"phi": [1.0, 2.0]}}, r"hyperparameters: phi must be a positive finite number"),
    ({"hyperparameters": {"alpha_prior": (1.0,)}}, r"hyperparameters: alpha_prior must be a pair \(mu, sd\)"),
    ({"hyperparameters": {"phi_prior": (1.0, 0.0)}}, r"hyperparameters: phi_prior: sd must be a positive"),
    ({"hyperparameters": {"mean_prior": (np.nan, 1.0)}}, r"hyperparameters: mean_prior: mu must be a finite"),
    ({"hyperparameters": {"share_prior": [1, 2]}}, r"hyperparameters: share_prior must be a positive finite"),
]


@pytest.mark.parametrize("arguments, message", BAD, ids=[str(a) for a, _ in BAD])
def test_every_argument_is_refused_by_name(arguments, message):
    q, mech = tiny()
    y = mech.release([1, 3, 2, 2], random_seed=4)
    with pytest.raises(ValueError, match=message):
        sample_cells(q, mech, y, **{"draws": 5, "tune": 5, "progressbar": False, **arguments})


def test_learn_false_requires_every_hyperparameter_and_defaults_are_recorded():
    q, mech = tiny()
    y = mech.release([1, 3, 2, 2], random_seed=4)
    with pytest.raises(ValueError, match=r"learn=False .*\(missing: phi, mean, shares\)"):
        sample_cells(q, mech, y, learn=False, hyperparameters={"alpha": 3.0}, progressbar=False)
    learned = sample_cells(q, mech, y, draws=5, tune=5, hyperparameters={"alpha": 3.0}, progressbar=False)
    assert learned.attrs["hyperparameters_filled"] == "phi, mean, shares"
    fixed = sample_cells(q, mech, y, draws=5, tune=5, learn=False, hyperparameters=FIXED, progressbar=False)
    assert fixed.attrs["hyperparameters_filled"] == ""
    assert np.allclose(fixed["posterior"]["phi"], 4.0) and np.allclose(fixed["posterior"]["mean_size"], 5.0)


def test_a_cell_no_query_reads_is_refused_by_name():
    q, mech = tiny(queries=("first",), total=None, margins={"first": ((0,),)})
    y = mech.release([1, 3, 2, 2], random_seed=4)
    for step in (None, 3):  # an IndexError in reduceat, a ZeroDivisionError in the kernel
        with pytest.raises(ValueError, match="census: 2 cells are read by no query .*unit b0, cell 'b'"):
            sample_cells(q, mech, y, step=step, progressbar=False)


def test_pair_moves_along_a_flat_likelihood_match_enumeration():
    # leaf totals only: a move between a leaf's two cells leaves every query as it is (a flat likelihood along
    # the line, which divided by zero); the conditional is then the prior's, against enumeration
    q, mech = tiny(queries=("total",), total=8)
    y = mech.release([1, 3, 2, 2], random_seed=4)
    tables = np.array([[a, b, c, 8 - a - b - c] for a in range(9) for b in range(9) for c in range(9)])
    tables = tables[(tables >= 0).all(axis=1)]
    prior = census_sampler.CellPrior(q)
    logp = [hierarchical_log_prior(t, prior, **FIXED) + mech.logpdf(y, t)[0] for t in tables]
    weights = np.exp(np.array(logp) - max(logp))
    weights /= weights.sum()
    tree = sample_cells(q, mech, y, draws=3000, tune=200, random_seed=5, learn=False, hyperparameters=FIXED,
                        progressbar=False)  # fmt: skip
    draws = tree["posterior"]["cells"].values.reshape(2, 3000, 4)
    for k in range(4):
        ok, detail = within_mcse(draws[..., k].astype(float), weights @ tables[:, k])
        assert ok, (k, detail)


# --- a second Ctrl-C ---------------------------------------------------------------------------------------------


def test_a_second_ctrl_c_while_stopping_keeps_the_finished_draws(monkeypatch):
    # the first chunk of sweeps ends, then two Ctrl-Cs reach the main thread before the chain runs its second:
    # the first stops the chain after that chunk, the second comes while it stops and used to discard every draw
    real, calls = census_sampler.census_sweeps, []
    main = threading.main_thread().ident

    def sweeps(*args):
        calls.append(args[0])
        if len(calls) == 2:
            for _ in range(2):
                time.sleep(0.5)  # the main thread waits for the chain by then (and has met the first)
                signal.pthread_kill(main, signal.SIGINT)
        return real(*args)

    monkeypatch.setattr(census_sampler, "census_sweeps", sweeps)
    q, mech = tiny()
    y = mech.release([1, 3, 2, 2], random_seed=4)
    try:
        tree = sample_cells(q, mech, y, draws=1000, tune=0, chains=1, random_seed=1, progressbar=False)
    except KeyboardInterrupt:
        pytest.fail("the second Ctrl-C discarded the finished draws")
    assert tree.attrs["interrupted"] == 1
    assert tree["posterior"].sizes["draw"] == 100  # two chunks of 50 sweeps
    assert (tree["posterior"]["cells"].sum(("unit", "cell")) == 8).all()


# --- counts past int32, near 2^53 --------------------------------------------------------------------------------


def test_counts_past_int32_are_stored_exactly_and_ordinary_ones_in_int32():
    total = 5_000_000_001
    q, mech = tiny(total=total, sigma=1.0)
    truth = [1_500_000_000, 2_200_000_000, 800_000_000, 500_000_001]
    y = mech.release(truth, random_seed=3)
    tree = sample_cells(q, mech, y, draws=300, tune=100, random_seed=2, progressbar=False)
    cells = tree["posterior"]["cells"].values.reshape(-1, 4)
    assert cells.dtype == np.int64 and tree.attrs["cells_dtype"] == "int64"
    assert (cells >= 0).all() and (cells.sum(axis=1) == total).all()
    # the prior is flat at this scale (its log changes by 1e-8 over the window): the likelihood alone, enumerated
    # on a window about the cells' own releases (queries 1, 2, 4, 5), is the posterior
    axes = [np.arange(y[i] - 12, y[i] + 13) for i in (1, 2, 4)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    tables = np.column_stack([grid, total - grid.sum(axis=1)])
    logp = mech.logpdf(y, tables)
    weights = np.exp(logp - logp.max())
    weights /= weights.sum()
    assert weights[(np.abs(grid - grid.mean(axis=0)) >= 12).any(axis=1)].sum() < 1e-9  # the window holds it
    for k in range(4):
        ok, detail = within_mcse(cells[:, k].reshape(2, -1).astype(float), weights @ tables[:, k])
        assert ok, (k, detail)
    small_q, small_mech = tiny()
    small = sample_cells(small_q, small_mech, small_mech.release([1, 3, 2, 2], random_seed=4), draws=5, tune=5,
                         progressbar=False)  # fmt: skip
    assert small["posterior"]["cells"].dtype == np.int32 and small.attrs["cells_bound"] == 8


def test_a_query_that_may_pass_2_to_53_is_refused():
    q, mech = tiny(total=None, sigma=1e12)
    y = np.full(q.n_queries, 2**53 - 10)
    with pytest.raises(ValueError, match=r"y: a query's value may reach .* beyond 2\^53"):
        sample_cells(q, mech, y, progressbar=False)


def negative_binomial_posterior(totals, mu_phi=LOG_10, sd_phi=1.5, sd_m=3.0):
    """E[log phi] and E[log m] given leaf totals N_l ~ NegBin(mean m, size phi), by quadrature on a grid
    (scipy's betaln, which is accurate for a huge first argument: C(N + phi - 1, N) = 1 / ((N + phi) B(N + 1, phi)))."""
    mu_m = np.log(totals.mean())
    log_phi = np.linspace(mu_phi - 6 * sd_phi, mu_phi + 6 * sd_phi, 401)[:, None]
    log_m = np.linspace(mu_m - 5.0, mu_m + 5.0, 401)[None, :]
    phi, m = np.exp(log_phi), np.exp(log_m)
    logp = stats.norm.logpdf(log_phi, mu_phi, sd_phi) + stats.norm.logpdf(log_m, mu_m, sd_m)
    for n in totals.astype(float):
        logp = logp - special.betaln(n + 1.0, phi) - np.log(n + phi) - phi * np.log1p(m / phi) - n * np.log1p(phi / m)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    assert w[[0, -1], :].sum() + w[:, [0, -1]].sum() < 1e-6  # the grid holds the posterior
    return float((w * log_phi).sum()), float((w * log_m).sum())


def test_hyperparameters_given_counts_of_4e15_match_quadrature():
    # every cell pinned by an invariant (one category, so alpha's posterior is its prior): the moves of phi, of
    # the mean size and of alpha compare log-gammas of 4e15, which float64 rounds by +-16 unless the kernel
    # takes their differences by Stirling's series
    totals = np.array([3_100_000_000_000_000, 4_000_000_000_000_000, 5_300_000_000_000_000])
    geo = Geography(["t", "b0", "b1", "b2"], [None, "t", "t", "t"])
    q = census_queries(geo, TableSpec(("all",)), {"level1": ["total"]})
    mech = NoisyMeasurements(q.matrix, 2.0, invariants=(np.eye(3, dtype=np.int64), totals))
    tree = sample_cells(q, mech, mech.release(totals, random_seed=1), draws=2500, tune=500, random_seed=3,
                        progressbar=False)  # fmt: skip
    post = tree["posterior"]
    assert (post["cells"].values.reshape(-1, 3) == totals).all()
    log_phi, log_m = negative_binomial_posterior(totals)
    checks = [(np.log(post["phi"].values), log_phi), (np.log(post["mean_size"].values[..., 0]), log_m),
              (np.log(post["alpha"].values[..., 0]), np.log(20.0))]  # fmt: skip
    for draws, target in checks:
        ok, detail = within_mcse(draws, target)
        assert ok, detail


def test_the_log_prior_of_a_huge_table_changes_as_its_exact_ratio():
    # one person more in a cell of 4e15: the log prior changes by the log of the pmf's exact ratio, a few
    # float64 spacings of 1e-16, where the log-gammas of 4e15 alone are rounded by +-16
    geo = Geography(["t", "b"], [None, "t"])
    prior = census_sampler.CellPrior(census_queries(geo, TableSpec(("a", "b")), {"level1": ["detailed"]}))
    n = np.array([[4_000_000_000_000_000, 7]])
    alpha, phi, m, q = 3.0, 5.0, 4.2e15, np.array([0.4, 0.6])
    change = hierarchical_log_prior(n + [[1, 0]], prior, alpha, phi, m, q)
    change -= hierarchical_log_prior(n, prior, alpha, phi, m, q)
    N, a = float(n.sum()), float(n[0, 0])
    exact = np.log((N + phi) / (N + alpha) * m / (phi + m) * (a + alpha * q[0]) / (a + 1.0))
    assert change == pytest.approx(exact, abs=1e-12)


# --- the case study's state fit ----------------------------------------------------------------------------------


def test_the_state_step_refuses_a_fit_of_another_configuration(tmp_path, monkeypatch):
    from ppdinfer.case_studies.census_nmf import analysis, pipeline
    from ppdinfer.case_studies.covid_pa import results_dir as rundir
    from ppdinfer.case_studies.covid_pa.results_dir import ResultsError
    from ppdinfer.cli import main

    plan = dict(pipeline.QUICK, state_counties=["Cameron"], state_draws=30, state_tune=30)
    state = tmp_path / "state"
    state.mkdir()
    other = dict(pipeline.state_config(plan), draws=31)
    (state / "info.json").write_text(json.dumps({"config": other}))
    (state / "cells.csv.gz").write_bytes(b"a finished fit")

    def refit(*args, **kwargs):
        raise AssertionError("the finished fit was deleted and refitted")

    monkeypatch.setattr(analysis, "fit_release", refit)
    with pytest.raises(ResultsError, match="another configuration .*draws 31 there, 30 now.*--fresh"):
        pipeline.state_step(tmp_path, plan)
    assert json.loads((state / "info.json").read_text())["config"] == other
    assert (state / "cells.csv.gz").read_bytes() == b"a finished fit"
    # the command line: one line naming the folder, status 1, nothing deleted
    assert main(["reproduce", "census_nmf", "--quick", "--no-progress", "--results", str(tmp_path)]) == 1
    assert (state / "cells.csv.gz").read_bytes() == b"a finished fit"
    # an unreadable info.json (a fit cut short while writing it) is named, not a JSONDecodeError
    (state / "info.json").write_text("{")
    with pytest.raises(ResultsError, match="info.json: cannot read it"):
        pipeline.state_step(tmp_path, plan)
    # another run fitting into the folder: refused, not overwritten under it
    with rundir.locked(state), pytest.raises(ResultsError, match="in use by another run"):
        pipeline.state_step(tmp_path, plan, fresh=True)
    with pytest.raises(AssertionError, match="refitted"):  # fresh=True deletes it and refits
        pipeline.state_step(tmp_path, plan, fresh=True)
    assert not (state / "info.json").exists()
