"""Simulation-based calibration: calibrated pipelines pass, a wrong likelihood fails, ranks are exact,
and the results do not depend on the workers."""

from __future__ import annotations

import functools
import multiprocessing
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import ppdinfer as pp
from ppdinfer.inference.results import assemble, posterior_dataset
from ppdinfer.simulation_based_calibration import rank_bin_edges, rank_uniformity

BETA_BINOMIAL = pp.PPDModel(
    pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(0.25), names="p"
)


def _exact_fit(model, y, z=None, *, random_seed=None, fit_model=BETA_BINOMIAL):
    """Exact posterior draws of ``fit_model`` (which may differ from the model that simulated y)."""
    return pp.exact_posterior(fit_model, y, z, draws=99, random_seed=random_seed)


# -- calibrated pipelines pass, a wrong likelihood fails ------------------------------------------------------


def test_beta_binomial_with_discrete_laplace_is_calibrated_and_a_misread_epsilon_is_not():
    """y is released at eps = 0.25. Fitting the right model passes; reading y as if released at eps = 2
    (too little noise: overconfident posteriors) fails decisively, for x and for p."""
    right = pp.sbc(BETA_BINOMIAL, _exact_fit, simulations=200, include_x=True, random_seed=3, progressbar=False)
    assert right.calibrated and right.p_value > 0.05
    assert right.draws == 99 and right.bins == 20 and right.complete
    too_sure = pp.PPDModel(
        pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(2.0), names="p"
    )
    wrong = pp.sbc(
        BETA_BINOMIAL,
        functools.partial(_exact_fit, fit_model=too_sure),
        simulations=200,
        include_x=True,
        random_seed=3,
        progressbar=False,
    )
    assert not wrong.calibrated
    assert float(wrong.p_values["p"]) < 1e-3 and float(wrong.p_values["x"]) < 1e-3
    # overconfidence: the ranks pile up in the two end bins
    ends = np.isin(np.searchsorted(rank_bin_edges(99, 20), wrong.ranks["p"].values, side="right") - 1, [0, 19])
    assert ends.mean() > 0.3  # 0.1 expected of a calibrated pipeline
    # the same simulations: the truth does not depend on the sampler
    xr.testing.assert_equal(right.truth, wrong.truth)


def test_poisson_count_with_gamma_prior_and_gaussian_release_is_calibrated():
    model = pp.PPDModel(
        pp.priors.Gamma(shape=4.0, rate=0.5),
        pp.generators.Poisson(),
        pp.mechanisms.Gaussian(3.0),
        names="rate",
        x_name="count",
    )
    result = pp.sbc(model, "rejection", simulations=200, include_x=True, random_seed=5, progressbar=False)
    assert result.calibrated and result.p_value > 0.05
    assert set(result.ranks.data_vars) == {"rate", "count"}
    assert int(result.ranks["rate"].min()) >= 0 and int(result.ranks["rate"].max()) <= 99


def test_hierarchical_units_are_calibrated_with_importance_sampling():
    """H = 3 units sharing a mean and a concentration (priors.HierarchicalBeta): theta = (m, k, p_1..p_3),
    each unit's count released. Joint rejection would pay the product of the units' rates (the
    sampler refuses), so importance sampling from the prior fits it (ESS about 200-700 of 16,384)."""
    prior = pp.priors.HierarchicalBeta(mean=pp.priors.Beta(2.0, 2.0), concentration=pp.priors.Gamma(10.0, 1.0), size=3)
    model = pp.PPDModel(
        prior,
        pp.generators.Binomial(10),
        pp.mechanisms.DiscreteLaplace(1.0),
        coords={"unit": ["a", "b", "c"]},
        dims={"p": "unit", "x": "unit"},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pp.ImportanceWarning)
        result = pp.sbc(
            model,
            functools.partial(pp.importance_sample, draws=16_384),
            draws=49,
            simulations=150,
            include_x=True,
            random_seed=7,
            progressbar=False,
        )
    assert list(result.ranks.data_vars) == ["mean", "concentration", "p", "x"]
    assert result.ranks["p"].dims == ("simulation", "unit") and result.ranks["unit"].values.tolist() == ["a", "b", "c"]
    assert result.p_values["p"].shape == (3,) and result.p_values["x"].shape == (3,)
    assert result.calibrated and result.p_value > 0.05  # Bonferroni over 8 tests


def test_per_unit_model_is_calibrated_with_rejection_sampling():
    """Independent units (priors.Beta(size=3)): the rejection sampler runs exactly per unit."""
    model = pp.PPDModel(
        pp.priors.Beta(2, 3, size=3),
        pp.generators.Binomial([10, 20, 30]),
        pp.mechanisms.DiscreteLaplace(0.5),
        names="p",
    )
    result = pp.sbc(model, "rejection", simulations=150, include_x=True, random_seed=7, progressbar=False)
    assert result.ranks["p"].shape == result.ranks["x"].shape == (150, 3)
    assert result.calibrated and result.p_value > 0.05


def test_a_biased_sampler_fails():
    """Exact posterior draws shifted up by 0.1 (about 2/3 of a posterior sd): the truth ranks low."""

    def shifted(model, y, z, random_seed):
        result = _exact_fit(model, y, z, random_seed=random_seed)
        posterior = result["posterior"].to_dataset()
        return assemble(model, np.asarray(y), z, posterior.assign(p=np.minimum(posterior["p"] + 0.1, 1.0)))

    result = pp.sbc(BETA_BINOMIAL, shifted, simulations=200, random_seed=3, progressbar=False)
    assert not result.calibrated and result.p_value < 1e-3
    assert float(result.ranks["p"].mean()) < 99 / 2 - 10  # the truth sits low among the draws


# -- the ranks and the tests, exactly -------------------------------------------------------------------------


def test_ranks_are_counts_below_the_truth_of_the_documented_streams():
    """A stub posterior with draws 0.01, 0.02, ..., 0.99: the rank of the true p is the number of them
    below it, and the truth of simulation i comes from SeedSequence(seed).spawn(N)[i].spawn(3)[0]."""
    grid = np.arange(1, 100) / 100

    def stub(model, y, z, random_seed):
        theta = np.column_stack([grid])
        return assemble(model, np.asarray(y), z, posterior_dataset(model, theta, np.zeros((99, 1)), (), ()))

    result = pp.sbc(BETA_BINOMIAL, stub, simulations=30, random_seed=11, cores=1, progressbar=False)
    streams = np.random.SeedSequence(11).spawn(30)
    truth = np.array([np.random.default_rng(stream.spawn(3)[0]).beta(2, 3) for stream in streams])
    np.testing.assert_array_equal(result.truth["p"].values, truth)
    np.testing.assert_array_equal(result.ranks["p"].values, (grid[None, :] < truth[:, None]).sum(axis=1))
    np.testing.assert_array_equal(result.ranks["simulation"].values, np.arange(30))


def test_ties_of_a_discrete_x_are_broken_uniformly_at_random():
    """Every posterior draw of x is 0: a true x of 0 ties with all L draws and gets a uniform rank in
    0..L; a true x above 0 is above all of them (rank L)."""

    def zeros(model, y, z, random_seed):
        theta = np.full((19, 1), 0.5)
        return assemble(model, np.asarray(y), z, posterior_dataset(model, theta, np.zeros((19, 1)), (), ()))

    model = pp.PPDModel(pp.priors.Beta(1, 3), pp.generators.Binomial(1), pp.mechanisms.DiscreteLaplace(1.0), names="p")
    result = pp.sbc(model, zeros, simulations=1000, include_x=True, random_seed=2, progressbar=False)
    x, rank = result.truth["x"].values, result.ranks["x"].values
    assert np.all(rank[x == 1] == 19)
    tied = rank[x == 0]
    assert tied.size > 600 and tied.min() == 0 and tied.max() == 19
    assert stats.chisquare(np.bincount(tied, minlength=20)).pvalue > 0.01


def test_rank_uniformity_is_pearsons_chi_square_over_the_bins():
    rng = np.random.default_rng(0)
    ranks = rng.integers(0, 100, size=(300, 2))  # L = 99
    ranks[:, 1] = np.minimum(ranks[:, 1], 70)  # a pile at rank 70
    statistic, p = rank_uniformity(ranks, draws=99, bins=10)
    for column in range(2):
        reference = stats.chisquare(np.bincount(ranks[:, column] // 10, minlength=10))
        assert statistic[column] == pytest.approx(reference.statistic)
        assert p[column] == pytest.approx(reference.pvalue)
    assert p[0] > 0.01 and p[1] < 1e-10
    # bins of unequal length: L + 1 = 10 ranks in 3 bins of 3, 3 and 4
    counts = np.array([3, 3, 4]) * 10
    ranks = np.repeat(np.arange(10), 10)  # uniform: each rank 10 times
    statistic, p = rank_uniformity(ranks, draws=9, bins=3)
    assert float(statistic) == pytest.approx(stats.chisquare(counts, counts).statistic) == 0.0
    np.testing.assert_array_equal(rank_bin_edges(9, 3), [0, 3, 6, 10])


def test_verdict_is_the_bonferroni_adjusted_smallest_p_value():
    result = pp.sbc(
        BETA_BINOMIAL, _exact_fit, simulations=60, include_x=True, bins=5, alpha=0.2, random_seed=4, progressbar=False
    )
    p = np.array([float(result.p_values["p"]), float(result.p_values["x"])])
    assert result.p_value == pytest.approx(min(1.0, 2 * p.min()))
    assert result.calibrated == (result.p_value > 0.2)
    statistic, expected = rank_uniformity(result.ranks["x"].values, 99, 5)
    assert float(result.p_values["x"]) == pytest.approx(expected)
    assert float(result.chi_square["x"]) == pytest.approx(statistic)


# -- workers, seeds, interrupts --------------------------------------------------------------------------------


def test_parallel_results_equal_serial_results():
    run = functools.partial(
        pp.sbc, BETA_BINOMIAL, "rejection", simulations=24, draws=19, include_x=True, random_seed=9, progressbar=False
    )
    serial = run(cores=1)
    for parallel in (run(cores=2), run(executor=ThreadPoolExecutor(3))):
        xr.testing.assert_equal(serial.ranks, parallel.ranks)
        xr.testing.assert_equal(serial.truth, parallel.truth)
        assert serial.p_value == parallel.p_value


def test_a_process_pool_gives_the_same_results():
    run = functools.partial(pp.sbc, BETA_BINOMIAL, "exact", simulations=8, draws=19, random_seed=9, progressbar=False)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        pooled = run(executor=pool)
    xr.testing.assert_equal(run(cores=1).ranks, pooled.ranks)


class _InterruptAt:
    """A sampler that fits exactly, except that simulation number ``at`` (by its seed) is interrupted."""

    def __init__(self, at_seed):
        self.at_seed = at_seed

    def __call__(self, model, y, z, random_seed):
        if random_seed == self.at_seed:
            raise KeyboardInterrupt
        return _exact_fit(model, y, z, random_seed=random_seed)


@pytest.mark.parametrize("cores", [1, 2])
def test_ctrl_c_returns_the_simulations_finished(cores):
    seeds = []

    def record(model, y, z, random_seed):
        seeds.append(random_seed)
        return _exact_fit(model, y, z, random_seed=random_seed)

    pp.sbc(BETA_BINOMIAL, record, simulations=6, cores=1, random_seed=1, progressbar=False)
    with pytest.warns(pp.BudgetWarning, match="interrupt after 4 of 6"):
        result = pp.sbc(
            BETA_BINOMIAL, _InterruptAt(seeds[4]), simulations=6, cores=cores, random_seed=1, progressbar=False
        )
    assert not result.complete
    np.testing.assert_array_equal(result.ranks["simulation"].values, np.arange(4))
    full = pp.sbc(BETA_BINOMIAL, _exact_fit, simulations=6, cores=1, random_seed=1, progressbar=False)
    xr.testing.assert_equal(result.ranks, full.ranks.isel(simulation=slice(4)))
    with pytest.raises(KeyboardInterrupt):  # nothing finished: the interrupt goes on
        pp.sbc(BETA_BINOMIAL, _InterruptAt(seeds[0]), simulations=6, cores=1, random_seed=1, progressbar=False)


def test_plot_draws_one_panel_per_component_with_the_uniform_band():
    result = pp.sbc(BETA_BINOMIAL, _exact_fit, simulations=40, include_x=True, random_seed=1, progressbar=False)
    figure = result.plot(band=0.95)
    assert len(figure.axes) == 2
    assert figure.axes[0].get_title().startswith("p ")
    assert len(result.plot(max_panels=1).axes) == 1


# -- bad input -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"simulations": 0}, "simulations"),
        ({"simulations": 2.5}, "simulations"),
        ({"sampler": 42}, "sampler must be callable"),
        ({"sampler": "gibbs"}, "sampler must be callable or one of"),
        ({"draws": 0}, "draws"),
        ({"bins": 1}, "bins"),
        ({"bins": 200}, "bins"),
        ({"alpha": 1.5}, "alpha"),
        ({"include_x": "yes"}, "include_x"),
        ({"model": "beta-binomial"}, "model must be a ppdinfer.PPDModel or a function"),
    ],
)
def test_bad_input_is_refused(kwargs, match):
    arguments = {"model": BETA_BINOMIAL, "sampler": "exact", "simulations": 4, "progressbar": False, **kwargs}
    with pytest.raises(ValueError, match=match):
        pp.sbc(**arguments)


def test_a_sampler_whose_output_does_not_fit_is_refused():
    few = functools.partial(pp.exact_posterior, draws=10)
    with pytest.raises(ValueError, match="returned 10 draws, fewer than draws=20"):
        pp.sbc(BETA_BINOMIAL, few, draws=20, simulations=2, progressbar=False)
    renamed = pp.PPDModel(
        pp.priors.Beta(2, 3), pp.generators.Binomial(30), pp.mechanisms.DiscreteLaplace(0.25), names="q"
    )
    with pytest.raises(ValueError, match="no variable 'p'"):
        pp.sbc(BETA_BINOMIAL, functools.partial(_exact_fit, fit_model=renamed), simulations=2, progressbar=False)
    with pytest.raises(ValueError, match="posterior group"):
        pp.sbc(BETA_BINOMIAL, lambda model, y, z, random_seed: np.zeros(3), simulations=2, progressbar=False)

    def varying(model, y, z, random_seed):
        return pp.exact_posterior(model, y, z, draws=10 + random_seed % 2, random_seed=random_seed)

    with pytest.raises(ValueError, match="pass draws=L"):
        pp.sbc(BETA_BINOMIAL, varying, simulations=8, cores=1, random_seed=0, progressbar=False)


# -- too few simulations, a failing simulation, a PyMC model -----------------------------------------------------


@pytest.mark.parametrize("simulations", [1, 3, 9])
def test_too_few_simulations_give_no_verdict(simulations):
    result = pp.sbc(BETA_BINOMIAL, "exact", simulations=simulations, draws=19, random_seed=1, progressbar=False)
    assert result.calibrated is None and "too few simulations to test" in result.reason
    assert "at least 10 simulations" in result.reason and "reason=" in repr(result)
    enough = pp.sbc(BETA_BINOMIAL, "exact", simulations=10, draws=19, random_seed=1, progressbar=False)
    assert enough.calibrated is True and enough.reason == ""


class _FailAt:
    """A sampler that fits exactly, except that the simulation whose seed is ``at_seed`` raises."""

    def __init__(self, at_seed):
        self.at_seed = at_seed

    def __call__(self, model, y, z, random_seed):
        if random_seed == self.at_seed:
            raise FloatingPointError("the sampler diverged")
        return _exact_fit(model, y, z, random_seed=random_seed)


@pytest.mark.parametrize("cores", [1, 2])
def test_a_failing_simulation_keeps_the_finished_ones_and_names_its_index_and_seed(cores):
    seeds = []

    def record(model, y, z, random_seed):
        seeds.append(random_seed)
        return _exact_fit(model, y, z, random_seed=random_seed)

    pp.sbc(BETA_BINOMIAL, record, simulations=6, cores=1, random_seed=1, progressbar=False)
    with pytest.warns(RuntimeWarning, match=f"after 4 of 6 simulations: simulation 4 .*random_seed={seeds[4]}"):
        result = pp.sbc(BETA_BINOMIAL, _FailAt(seeds[4]), simulations=6, cores=cores, random_seed=1, progressbar=False)
    assert not result.complete and "FloatingPointError: the sampler diverged" in result.stopped_by
    full = pp.sbc(BETA_BINOMIAL, _exact_fit, simulations=6, cores=1, random_seed=1, progressbar=False)
    xr.testing.assert_equal(result.ranks, full.ranks.isel(simulation=slice(4)))
    assert full.complete and full.stopped_by == ""
    with pytest.raises(FloatingPointError) as caught:  # nothing finished: the error goes on, named
        pp.sbc(BETA_BINOMIAL, _FailAt(seeds[0]), simulations=6, cores=cores, random_seed=1, progressbar=False)
    assert f"in sbc's simulation 0, whose sampler got random_seed={seeds[0]}" in caught.value.__notes__


def _beta_binomial_pymc(y):
    import pymc as pm

    from ppdinfer.pymc import Release

    with pm.Model(coords={"unit": ["a", "b"]}) as model:
        p = pm.Beta("p", 2, 3)
        x = pm.Binomial("x", n=30, p=p, dims="unit")
        Release("y", pp.mechanisms.DiscreteLaplace(0.25), x, observed=y, dims="unit")
    return model


def test_a_pymc_builder_is_calibrated_and_quiet(capfd, caplog):
    import ppdinfer.pymc

    fit = functools.partial(
        ppdinfer.pymc.sample, draws=100, tune=100, chains=1, progressbar=False, compute_convergence_checks=False
    )
    with caplog.at_level("INFO", logger="pymc"):
        result = pp.sbc(
            _beta_binomial_pymc,
            fit,
            observed=[10, 12],
            simulations=10,
            draws=19,
            include_x=True,
            random_seed=4,
            progressbar=False,
        )
    assert not [record for record in caplog.records if record.name.startswith("pymc")]  # no per-fit log
    assert "Sequential sampling" not in capfd.readouterr().err
    assert result.ranks["p"].dims == ("simulation",) and result.ranks["x"].dims == ("simulation", "unit")
    assert result.ranks["x"]["unit"].values.tolist() == ["a", "b"]
    assert int(result.ranks["x"].max()) <= 19 and result.calibrated is True
    # the truth is the prior draw: p in (0, 1), x integers in 0..30
    assert ((0 < result.truth["p"]) & (result.truth["p"] < 1)).all()
    assert result.truth["x"].values.min() >= 0 and result.truth["x"].values.max() <= 30
    without_x = pp.sbc(
        _beta_binomial_pymc, fit, observed=[10, 12], simulations=2, draws=19, random_seed=4, progressbar=False
    )
    assert list(without_x.ranks.data_vars) == ["p"]
    xr.testing.assert_equal(without_x.ranks["p"], result.ranks["p"].isel(simulation=slice(2)))


def test_a_pymc_builder_refuses_bad_input():
    with pytest.raises(ValueError, match="observed is required with a PyMC builder"):
        pp.sbc(_beta_binomial_pymc, simulations=2)
    with pytest.raises(ValueError, match="cores and executor are for a PPDModel"):
        pp.sbc(_beta_binomial_pymc, observed=[1, 2], cores=2, simulations=2)
    with pytest.raises(ValueError, match="z is for a PPDModel"):
        pp.sbc(_beta_binomial_pymc, None, {"total": 3}, observed=[1, 2], simulations=2)
    with pytest.raises(ValueError, match="the builder must return a pymc.Model"):
        pp.sbc(lambda y: None, observed=[1, 2], simulations=2, progressbar=False)
    with pytest.raises(ValueError, match="sampler is required with a PPDModel"):
        pp.sbc(BETA_BINOMIAL, simulations=2)
    with pytest.raises(ValueError, match="observed is for a PyMC builder"):
        pp.sbc(BETA_BINOMIAL, "exact", observed=[1], simulations=2)
