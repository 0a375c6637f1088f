"""The census cell sampler against exact enumeration, invariants at every draw, recovery, seeds, bad input."""

import itertools

import arviz as az
import numpy as np
import pytest

from ppdinfer.census import (
    CellPrior,
    Geography,
    TableSpec,
    census_queries,
    hierarchical_log_prior,
    sample_cells,
)
from ppdinfer.mechanisms import NoisyMeasurements

FIXED = {"alpha": 3.0, "phi": 4.0, "mean": 5.0, "shares": [0.35, 0.65]}


def tiny(total=None, sigma=1.5, leaves=2):
    names = [f"b{i}" for i in range(leaves)]
    geo = Geography(["t", *names], [None] + ["t"] * leaves)
    q = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    invariants = q.unit_invariants(["t"], [total]) if total is not None else None
    return q, NoisyMeasurements(q.matrix, sigma, invariants=invariants)


def exact_posterior(q, mech, y, tables, hyperparameters=FIXED):
    prior = CellPrior(q)
    logp = np.array(
        [hierarchical_log_prior(t, prior, **hyperparameters) + mech.logpdf(y, t.ravel())[0] for t in tables],
        dtype=float,
    )
    w = np.exp(logp - logp.max())
    return w / w.sum()


def check_against(tree, tables, weights):
    draws = tree["posterior"]["cells"].values  # chain, draw, unit, cell
    flat = draws.reshape(draws.shape[0], draws.shape[1], -1).astype(float)
    exact_mean = weights @ tables.reshape(len(tables), -1)
    # every cell's mean and the indicator of each cell's exact median, within 4 MCSE
    quantities = [flat[..., k] for k in range(flat.shape[-1])]
    targets = list(exact_mean)
    for k in range(flat.shape[-1]):
        values = tables.reshape(len(tables), -1)[:, k]
        cut = np.unique(values)[
            np.searchsorted(np.cumsum([weights[values == v].sum() for v in np.unique(values)]), 0.5)
        ]
        quantities.append((flat[..., k] <= cut).astype(float))
        targets.append(weights[values <= cut].sum())
    for draws_k, target in zip(quantities, targets):
        ess = float(az.ess(draws_k[..., None].transpose(0, 1, 2)[..., 0]))
        mcse = draws_k.std() / np.sqrt(max(ess, 1.0))
        assert abs(draws_k.mean() - target) < 4 * mcse + 1e-12, (draws_k.mean(), target, mcse, ess)


# the default mixture of kernels; the wide kernel alone (a window fixed by the line, narrow enough that
# states fall outside it); the local kernel alone
KERNELS = [{}, {"window": 1.5, "local": 0.0}, {"window": 0.0}]


@pytest.mark.parametrize("kernel", KERNELS)
def test_paired_moves_match_enumeration_under_the_total_invariant(kernel):
    q, mech = tiny(total=8)
    y = mech.release([1, 3, 2, 2], random_seed=4)
    tables = np.array([t for t in itertools.product(range(9), repeat=4) if sum(t) == 8]).reshape(-1, 2, 2)
    weights = exact_posterior(q, mech, y, tables)
    tree = sample_cells(
        q, mech, y, draws=6000, tune=300, random_seed=11, learn=False, hyperparameters=FIXED, progressbar=False,
        **kernel,
    )  # fmt: skip
    assert (tree["posterior"]["cells"].sum(("unit", "cell")) == 8).all()
    check_against(tree, tables, weights)


@pytest.mark.parametrize("kernel", KERNELS)
def test_single_moves_match_enumeration_without_invariants(kernel):
    q, mech = tiny(total=None, sigma=2.0, leaves=1)
    y = mech.release([4, 7], random_seed=5)
    tables = np.array(list(itertools.product(range(70), repeat=2))).reshape(-1, 1, 2)
    weights = exact_posterior(q, mech, y, tables)
    tree = sample_cells(
        q, mech, y, draws=6000, tune=300, random_seed=12, learn=False, hyperparameters=FIXED, progressbar=False,
        **kernel,
    )  # fmt: skip
    check_against(tree, tables, weights)


def test_spread_moves_match_enumeration_with_three_categories():
    geo = Geography(["t", "b"], [None, "t"])
    q = census_queries(geo, TableSpec(("a", "b", "c")), {"level1": ["total", "detailed"]})
    mech = NoisyMeasurements(q.matrix, 1.5, invariants=q.unit_invariants(["t"], [10]))
    y = mech.release([6, 0, 4], random_seed=3)
    tables = np.array([t for t in itertools.product(range(11), repeat=3) if sum(t) == 10]).reshape(-1, 1, 3)
    fixed = {**FIXED, "shares": [0.6, 0.05, 0.35]}
    tree = sample_cells(
        q, mech, y, draws=6000, tune=300, random_seed=13, learn=False, hyperparameters=fixed, progressbar=False,
        spread=0.5,
    )  # fmt: skip
    assert (tree["posterior"]["cells"].sum(("unit", "cell")) == 10).all()
    check_against(tree, tables, exact_posterior(q, mech, y, tables, fixed))


def test_share_weighted_and_nearby_partners_match_enumeration_over_three_leaves():
    # uneven shares make the partner weights uneven; three leaves under one invariant make the
    # class partners of other leaves (nearby or anywhere) move mass between leaves; spread moves on
    geo = Geography(["t", "b0", "b1", "b2"], [None, "t", "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b", "c")), {"level1": ["total", "detailed"]})
    mech = NoisyMeasurements(q.matrix, 1.5, invariants=q.unit_invariants(["t"], [6]))
    y = mech.release([2, 0, 1, 1, 0, 0, 1, 1, 0], random_seed=8)
    tables = np.array([t for t in itertools.product(range(7), repeat=9) if sum(t) == 6]).reshape(-1, 3, 3)
    fixed = {**FIXED, "shares": [0.7, 0.05, 0.25]}
    tree = sample_cells(
        q, mech, y, draws=6000, tune=300, random_seed=14, learn=False, hyperparameters=fixed, progressbar=False,
        partners=(0.3, 0.2),
    )  # fmt: skip
    assert (tree["posterior"]["cells"].sum(("unit", "cell")) == 6).all()
    check_against(tree, tables, exact_posterior(q, mech, y, tables, fixed))


def test_sibling_spreads_and_revisits_match_enumeration_over_two_leaves(monkeypatch):
    # every visit of a rare cell starts with a spread move, always in its sibling form: the people of
    # category b pass between the two block groups while one person of a and of c goes back; the
    # tract's own detailed counts are measured, as in the census; every cell that moved during tuning
    # counts as slow, so each gets 3 revisits per sweep
    monkeypatch.setattr("ppdinfer.census.sampler._SLOW", -1.0)
    geo = Geography(["t", "b0", "b1"], [None, "t", "t"])
    q = census_queries(geo, TableSpec(("a", "b", "c")), {"level0": ["detailed"], "level1": ["total", "detailed"]})
    mech = NoisyMeasurements(q.matrix, 1.5, invariants=q.unit_invariants(["t"], [9]))
    y = mech.release([2, 2, 1, 1, 0, 3], random_seed=6)
    tables = np.array([t for t in itertools.product(range(10), repeat=6) if sum(t) == 9]).reshape(-1, 2, 3)
    fixed = {**FIXED, "shares": [0.6, 0.05, 0.35]}
    tree = sample_cells(
        q, mech, y, draws=6000, tune=300, random_seed=16, learn=False, hyperparameters=fixed, progressbar=False,
        spread=1.0, sibling_spread=1.0, revisit=3,
    )  # fmt: skip
    assert (tree["posterior"]["cells"].sum(("unit", "cell")) == 9).all()
    check_against(tree, tables, exact_posterior(q, mech, y, tables, fixed))


def test_slow_cells_are_those_with_high_lag_one_autocorrelation():
    from ppdinfer.census.sampler import _slow_cells
    from ppdinfer.kernels.census import _record_tuning

    rng = np.random.default_rng(0)
    rho = np.array([0.95, 0.9, 0.3, 0.0, -0.5])
    n = 400
    stats = []
    for _chain in range(2):
        sums = np.zeros((5, rho.size + 1))  # the last cell never moves
        x = rng.normal(size=rho.size) / np.sqrt(1 - rho**2)
        for k in range(n):
            x = rho * x + rng.normal(size=rho.size)
            _record_tuning(np.append(np.round(50 + 10 * x), 7).astype(np.int64), sums, k)
        stats.append(sums)
    np.testing.assert_array_equal(_slow_cells(stats, n), [1, 1, 0, 0, 0, 0])


def test_the_alpha_move_changes_the_log_prior_by_the_exact_amount():
    # the move scales a group's beta by exp(shift), shares kept: its likelihood term against the prior's formula
    from ppdinfer.kernels.census import _scale_change

    q, mech, truth, _ = synthetic(seed=3)
    prior = CellPrior(q)
    shares = np.array([0.5, 0.3, 0.2])
    cells = truth.astype(np.int64).ravel()
    cells[::7] = 0  # some empty cells
    alpha, shift = 4.0, 0.37
    table = cells.reshape(-1, 3)
    exact = hierarchical_log_prior(table, prior, alpha * np.exp(shift), 5.0, 90.0, shares)
    exact -= hierarchical_log_prior(table, prior, alpha, 5.0, 90.0, shares)
    leaves = np.arange(q.geography.n_leaves, dtype=np.int64)
    change = _scale_change(cells, table.sum(axis=1), 3, leaves, alpha * shares, shift)
    assert change == pytest.approx(exact, rel=1e-9, abs=1e-8)


def hyperparameter_posterior(table, lo=-7.0, hi=9.0, n=121):
    """E[log alpha] and E[q] given the cells, by quadrature over a grid of log beta (beta = alpha q, the
    default prior: alpha ~ LogNormal(log 20, 1.5), q ~ Dirichlet(1); written from scipy, not from the kernel)."""
    from scipy import special, stats

    mu, sd, a0 = np.log(20.0), 1.5, 1.0

    K = table.shape[1]
    axis = np.linspace(lo, hi, n)
    log_beta = np.stack([g.ravel() for g in np.meshgrid(*([axis] * K), indexing="ij")], axis=1)
    beta = np.exp(log_beta)
    alpha = beta.sum(axis=1)
    q = beta / alpha[:, None]
    logp = stats.lognorm.logpdf(alpha, sd, scale=np.exp(mu)) + (a0 - 1) * np.log(q).sum(axis=1)
    logp += log_beta.sum(axis=1) - (K - 1) * np.log(alpha)  # density of log beta: Jacobians of beta -> (alpha, q)
    for row in table:  # the Dirichlet-multinomial of each leaf
        logp += special.gammaln(alpha) - special.gammaln(row.sum() + alpha)
        logp += (special.gammaln(row + beta) - special.gammaln(beta)).sum(axis=1)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    edge = (np.isclose(log_beta, lo) | np.isclose(log_beta, hi)).any(axis=1)
    assert w[edge].sum() < 1e-4  # the grid holds the posterior (the means move far less than an MCSE)
    return w @ np.log(alpha), w @ q


def test_shares_and_alpha_given_the_cells_match_quadrature():
    # every cell pinned by an invariant, so only the hyperparameters move: the one-at-a-time moves on
    # log beta_k and the alpha move must draw beta from p(beta | cells), a 3-d integral on a grid. Fails
    # when beta_k's change drops its lgamma(beta_k) terms, when the alpha move drops its prior, or when
    # beta_k's move reads the prior at the old alpha.
    table = np.array([[6, 2, 0], [9, 1, 1], [4, 3, 0], [8, 0, 1], [7, 2, 0], [5, 1, 0]])
    names = [f"b{i}" for i in range(len(table))]
    q = census_queries(
        Geography(["t", *names], [None] + ["t"] * len(table)), TableSpec(("a", "b", "c")), {"level1": ["total"]}
    )
    mech = NoisyMeasurements(q.matrix, 2.0, invariants=(np.eye(q.n_cells, dtype=np.int64), table.ravel()))
    tree = sample_cells(q, mech, mech.release(table.ravel(), random_seed=1), draws=4000, tune=500, random_seed=2,
                        progressbar=False)  # fmt: skip
    post = tree["posterior"]
    assert (post["cells"].values.reshape(2, 4000, -1) == table.ravel()).all()
    log_alpha, shares = hyperparameter_posterior(table)
    draws = [np.log(post["alpha"].values[..., 0])] + [post["shares"].values[..., 0, k] for k in range(3)]
    for values, target in zip(draws, [log_alpha, *shares]):
        mcse = values.std() / np.sqrt(float(az.ess(values)))
        assert abs(values.mean() - target) < 4 * mcse, (values.mean(), target, mcse)


def synthetic(seed=0):
    rng = np.random.default_rng(seed)
    units, parents = ["s", "c1", "c2"], [None, "s", "s"]
    for c in ("c1", "c2"):
        for t in range(3):
            units.append(f"{c}t{t}")
            parents.append(c)
    for t in units[3:9]:
        for b in range(3):
            units.append(f"{t}b{b}")
            parents.append(t)
    geo = Geography(units, parents, ["State", "County", "Tract", "Block_Group"])
    q = census_queries(
        geo,
        TableSpec(("a", "b", "c")),
        {
            "State": ["total"],
            "County": ["total", "detailed"],
            "Tract": ["total", "detailed"],
            "Block_Group": ["total", "detailed"],
        },
    )
    shares = rng.dirichlet(20 * np.array([0.6, 0.3, 0.1]), size=geo.n_leaves)
    truth = np.array([rng.multinomial(rng.integers(60, 140), p) for p in shares])
    mech = NoisyMeasurements(q.matrix, 2.0, invariants=q.unit_invariants(["s"], [int(truth.sum())]))
    return q, mech, truth, mech.release(truth.ravel(), random_seed=seed)


def test_learned_hyperparameters_recover_a_synthetic_state():
    q, mech, truth, y = synthetic()
    tree = sample_cells(q, mech, y, draws=600, tune=600, random_seed=3, progressbar=False)
    cells = tree["posterior"]["cells"]
    assert (cells.sum(("unit", "cell")) == truth.sum()).all()
    lo, hi = cells.quantile(0.05, ("chain", "draw")).values, cells.quantile(0.95, ("chain", "draw")).values
    coverage = np.mean((lo <= truth) & (truth <= hi))
    assert coverage >= 0.75, coverage
    rhat = az.rhat(tree["posterior"].to_dataset()[["cells"]])["cells"].values
    assert np.nanmax(rhat) < 1.1
    assert set(tree["posterior"].data_vars) >= {"alpha", "phi", "mean_size", "shares"}
    assert tree["posterior"]["cells"].coords["unit"].values[0] == "c1t0b0"


def test_a_seed_reproduces_the_draws_and_thinning_keeps_fewer():
    q, mech, truth, y = synthetic(1)
    first = sample_cells(q, mech, y, draws=20, tune=10, thin=2, random_seed=8, progressbar=False)
    again = sample_cells(q, mech, y, draws=20, tune=10, thin=2, random_seed=8, progressbar=False, cores=1)
    other = sample_cells(q, mech, y, draws=20, tune=10, thin=2, random_seed=9, progressbar=False)
    assert first["posterior"]["cells"].shape == (2, 20, 18, 3)
    assert np.array_equal(first["posterior"]["cells"].values, again["posterior"]["cells"].values)
    assert np.array_equal(first["posterior"]["alpha"].values, again["posterior"]["alpha"].values)
    assert not np.array_equal(first["posterior"]["cells"].values, other["posterior"]["cells"].values)


def test_bad_input_is_refused():
    q, mech = tiny(total=8)
    y = mech.release([1, 3, 2, 2], random_seed=4)
    with pytest.raises(ValueError, match="y must hold one integer per query"):
        sample_cells(q, mech, y[:-1], progressbar=False)
    other, _ = tiny(total=None, leaves=3)
    with pytest.raises(ValueError, match="query matrix"):
        sample_cells(other, mech, y, progressbar=False)
    with pytest.raises(ValueError, match="initial breaks the invariants"):
        sample_cells(q, mech, y, initial=[1, 1, 1, 1], progressbar=False)
    with pytest.raises(ValueError, match="alpha must be finite"):
        sample_cells(q, mech, y, hyperparameters={"alpha": -1.0}, progressbar=False)
    with pytest.raises(ValueError, match="window"):
        sample_cells(q, mech, y, window=-1.0, progressbar=False)
    with pytest.raises(ValueError, match="partners"):
        sample_cells(q, mech, y, partners=(0.7, 0.6), progressbar=False)
    with pytest.raises(ValueError, match="unknown keys"):
        sample_cells(q, mech, y, hyperparameters={"beta": 1.0}, progressbar=False)
    with pytest.raises(ValueError, match="draws"):
        sample_cells(q, mech, y, draws=0, progressbar=False)
    with pytest.raises(ValueError, match="sibling_spread must be a probability"):
        sample_cells(q, mech, y, sibling_spread=1.5, progressbar=False)
    with pytest.raises(ValueError, match="revisit"):
        sample_cells(q, mech, y, revisit=-1, progressbar=False)
    crossing = NoisyMeasurements(q.matrix, 1.0, invariants=(np.array([[1, 1, 0, 0], [0, 1, 1, 0]]), [3, 3]))
    with pytest.raises(ValueError, match="overlap without nesting"):
        sample_cells(q, crossing, y, progressbar=False)
