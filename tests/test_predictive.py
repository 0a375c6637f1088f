"""Posterior predictive checks: y_rep has the mechanism's law given x, p-values are calibrated and detect a
wrong noise, every sampler's result works, the figure draws."""

import numpy as np
import pytest
import xarray as xr
from release_checks import chi_square_p_value
from scipy import stats

import ppdinfer as pp
from ppdinfer import generators, mechanisms, priors
from ppdinfer.census import Geography, TableSpec, census_queries, sample_cells
from ppdinfer.models import semidp_table

BETA_BINOMIAL = pp.PPDModel(priors.Beta(1, 1), generators.Binomial(60), mechanisms.DiscreteLaplace(0.5), names="p")
SHARES = pp.PPDModel(
    priors.Dirichlet([30.0] * 5),
    generators.MultinomialTotal("total"),
    mechanisms.DiscreteLaplace(1.0),
    names="share",
    x_name="cases",
    dims={"cases": ("county",)},
)


def test_replicated_releases_follow_the_mechanism_given_x():
    """At the draws where x takes a given value, y_rep - x is DLap(0.5) noise (chi-square)."""
    result = pp.rejection_sample(BETA_BINOMIAL, 25, draws=20_000, random_seed=1, progressbar=False)
    checked = pp.posterior_predictive(result, BETA_BINOMIAL, random_seed=2)
    x = checked["posterior"]["x"].values.reshape(-1)
    y_rep = checked["posterior_predictive"]["y"].values.reshape(-1)
    assert checked["posterior_predictive"]["y"].dims == ("chain", "draw")
    values, counts = np.unique(x, return_counts=True)
    for value in values[np.argsort(counts)[-2:]]:  # the two most frequent x, > 1,500 draws each
        noise = y_rep[x == value] - value
        assert noise.size > 1500
        assert chi_square_p_value(noise, BETA_BINOMIAL.mechanism, half_width=6) > 1e-3
    wrong = np.round(np.random.default_rng(3).laplace(0, 1 / 0.4, size=noise.size))  # a larger noise fails
    assert chi_square_p_value(wrong, BETA_BINOMIAL.mechanism, half_width=6) < 1e-6


def _p_values(release_epsilon, replicates, seed):
    """p-values of the two default statistics over replicated data sets drawn from the model's prior."""
    rng = np.random.default_rng(seed)
    z = {"total": 15}
    out = []
    for _ in range(replicates):
        x = rng.multinomial(15, rng.dirichlet([30.0] * 5))
        y = mechanisms.DiscreteLaplace(release_epsilon).release(x, random_seed=rng)
        result = pp.exact_posterior(SHARES, y, z, draws=200, random_seed=rng)
        out.append(pp.posterior_predictive_pvalue(pp.posterior_predictive(result, SHARES, random_seed=rng), SHARES))
    return np.array(out)


def test_p_values_are_calibrated_when_the_model_is_right_and_extreme_when_the_noise_is_four_times_larger():
    right = _p_values(1.0, 100, seed=1)
    # sum(y_rep) = total + the assumed noise's sum, whatever the posterior: its p-value is uniform
    assert stats.kstest(right[:, 0], "uniform").pvalue > 0.01
    # the realized discrepancy -log pi(y | x) is conservative (centred on 1/2), rarely extreme
    assert 0.4 < right[:, 1].mean() < 0.6 and np.mean(right[:, 1] < 0.05) <= 0.1
    wrong = _p_values(0.25, 40, seed=2)  # y released with 4x the noise the model assumes
    assert np.median(wrong[:, 1]) < 0.05 and np.mean(wrong[:, 1] < 0.05) >= 0.5
    assert np.mean((wrong[:, 0] < 0.05) | (wrong[:, 0] > 0.95)) >= 0.5


def test_p_value_counts_ties_half_and_takes_the_users_statistics():
    """y = 2 and y_rep = 1, 2, 2, 3: P(T_rep > T) + P(T_rep = T) / 2 = 1/4 + 1/4."""
    tree = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"x": (("chain", "draw"), [[1, 2, 2, 3]])}),
            "observed_data": xr.Dataset({"y": 2}),
            "posterior_predictive": xr.Dataset({"y": (("chain", "draw"), [[1, 2, 2, 3]])}),
        }
    )
    p = pp.posterior_predictive_pvalue(tree, BETA_BINOMIAL, {"y": lambda y, x: float(y), "gap": lambda y, x: y - x})
    assert p.to_dict() == {"y": 0.5, "gap": 0.5}  # y_rep - x = 0 at every draw, y - x = 1, 0, 0, -1

    def maximum(y, x):
        return float(np.max(y))

    assert pp.posterior_predictive_pvalue(tree, BETA_BINOMIAL, maximum).index.tolist() == ["maximum"]
    with pytest.raises(ValueError, match="statistics must be a callable"):
        pp.posterior_predictive_pvalue(tree, BETA_BINOMIAL, {"bad": 3})


@pytest.mark.filterwarnings("ignore::ppdinfer.ImportanceWarning")
def test_every_samplers_result_gets_a_posterior_predictive_with_xs_dims():
    z = {"total": 15}
    y = [3, 2, 4, 1, 5]
    results = {
        "rejection": pp.rejection_sample(SHARES, y, z, draws=50, random_seed=1, progressbar=False),
        "importance": pp.importance_sample(SHARES, y, z, draws=3000, random_seed=2),
        "exact": pp.exact_posterior(SHARES, y, z, draws=60, random_seed=3),
    }
    for name, result in results.items():
        checked = pp.posterior_predictive(result, SHARES, random_seed=4)
        replicated = checked["posterior_predictive"]["y"]
        assert replicated.dims == ("chain", "draw", "county") == result["posterior"]["cases"].dims, name
        assert replicated.shape == result["posterior"]["cases"].shape
        assert "posterior_predictive" not in result.children  # the input is not modified
        assert np.issubdtype(replicated.dtype, np.integer)
    # importance: the equal-weight posterior resample, not the weighted proposals
    shorter = results["importance"].copy()
    shorter["posterior"] = xr.DataTree(shorter["posterior"].to_dataset().isel(draw=slice(0, 10)))
    assert pp.posterior_predictive(shorter, SHARES)["posterior_predictive"].sizes["draw"] == 10
    # a seed gives the same releases
    one, two = (pp.posterior_predictive(results["exact"], SHARES.mechanism, random_seed=7) for _ in range(2))
    assert one["posterior_predictive"].identical(two["posterior_predictive"])


def test_a_non_additive_mechanism_and_a_pymc_result():
    """Semi-DP Gaussian on a 2 x 2 table (one release per draw): y_rep keeps the margins and its free cell
    is x11 + N(0, 1 / mu^2); the PyMC twin's result (the release a potential) takes y as an argument."""
    mu = 0.8
    model = semidp_table.model(mu=mu, shape=(2, 2))
    z = semidp_table.public_information([7, 6], [5, 8])
    y = np.array([[3.6, 3.4], [1.4, 4.6]])
    exact = pp.exact_posterior(model, y, z, draws=2000, random_seed=1)
    checked = pp.posterior_predictive(exact, model, random_seed=2)
    replicated = checked["posterior_predictive"]["y"].values.reshape(-1, 2, 2)
    tables = checked["posterior"]["table"].values.reshape(-1, 2, 2)
    np.testing.assert_allclose(replicated.sum(axis=2), np.broadcast_to([7, 6], (2000, 2)), atol=1e-9)
    np.testing.assert_allclose(replicated.sum(axis=1), np.broadcast_to([5, 8], (2000, 2)), atol=1e-9)
    assert stats.kstest((replicated[:, 0, 0] - tables[:, 0, 0]) * mu, "norm").pvalue > 1e-3
    assert stats.kstest((replicated[:, 0, 0] - tables[:, 0, 0]) * mu / 1.5, "norm").pvalue < 1e-6

    idata = model.sample_pymc(
        y, z, draws=200, tune=200, chains=1, random_seed=3, progressbar=False, compute_convergence_checks=False
    )
    del idata["observed_data"]
    with pytest.raises(ValueError, match="pass the observed release as y"):
        pp.posterior_predictive(idata, model)
    twin_checked = pp.posterior_predictive(idata, model, y=y, random_seed=4)
    assert twin_checked["posterior_predictive"]["y"].dims == idata["posterior"]["table"].dims
    assert set(pp.posterior_predictive_pvalue(twin_checked, model).index) == {"sum", "discrepancy"}


def test_the_figure_draws():
    result = pp.exact_posterior(SHARES, [3, 2, 4, 1, 5], {"total": 15}, draws=300, random_seed=1)
    checked = pp.posterior_predictive(result, SHARES, random_seed=2)
    figure = pp.plot_posterior_predictive(checked, SHARES, prob=0.8)
    p = pp.posterior_predictive_pvalue(checked, SHARES)
    assert [ax.get_title() for ax in figure.axes] == [
        "y: 80% intervals of y_rep",
        f"sum: p = {p['sum']:.3f}",
        f"discrepancy: p = {p['discrepancy']:.3f}",
    ]
    assert len(figure.axes[0].lines[1].get_xdata()) == 5 and figure.axes[0].lines[1].get_ydata().tolist() == [
        3,
        2,
        4,
        1,
        5,
    ]
    figure.canvas.draw()
    # matplotlib is imported inside the plotting function only, never when the module loads
    source = open(pp.inference.predictive.__file__).read()
    assert "\nimport matplotlib" not in source and "\nfrom matplotlib" not in source


def test_bad_input():
    result = pp.exact_posterior(BETA_BINOMIAL, 25, draws=20, random_seed=1)
    with pytest.raises(ValueError, match="mechanism_or_model"):
        pp.posterior_predictive(result, "laplace")
    with pytest.raises(ValueError, match="no draws of x named 'n'"):
        pp.posterior_predictive(result, BETA_BINOMIAL, x_name="n")
    with pytest.raises(ValueError, match="result must be an xarray.DataTree"):
        pp.posterior_predictive(result["posterior"].to_dataset(), BETA_BINOMIAL)
    with pytest.raises(ValueError, match="y must be left out"):
        pp.posterior_predictive(result, BETA_BINOMIAL, y=25)
    with pytest.raises(ValueError, match="z must be a dict"):
        pp.posterior_predictive(result, BETA_BINOMIAL, z=[1])
    with pytest.raises(ValueError, match="no posterior_predictive group"):
        pp.posterior_predictive_pvalue(result, BETA_BINOMIAL)
    checked = pp.posterior_predictive(result, BETA_BINOMIAL)
    with pytest.raises(ValueError, match="prob"):
        pp.plot_posterior_predictive(checked, BETA_BINOMIAL, prob=1.5)


def test_the_figure_names_the_coordinates():
    """The first panel's axis shows the coordinates' names, not 0..n-1."""
    counties = ["Adams", "Bucks", "Centre", "Dauphin", "Erie"]
    model = pp.PPDModel(
        priors.Dirichlet([30.0] * 5),
        generators.MultinomialTotal("total"),
        mechanisms.DiscreteLaplace(1.0),
        names="share",
        x_name="cases",
        dims={"cases": ("county",)},
        coords={"county": counties},
    )
    result = pp.exact_posterior(model, [3, 2, 4, 1, 5], {"total": 15}, draws=100, random_seed=1)
    figure = pp.plot_posterior_predictive(pp.posterior_predictive(result, model, random_seed=2), model)
    assert [label.get_text() for label in figure.axes[0].get_xticklabels()] == counties
    assert figure.axes[0].get_xlabel() == "county"


def test_p_values_refuse_a_nan_or_a_vector_statistic():
    result = pp.exact_posterior(SHARES, [3, 2, 4, 1, 5], {"total": 15}, draws=50, random_seed=1)
    checked = pp.posterior_predictive(result, SHARES, random_seed=2)
    with pytest.raises(ValueError, match="'broken' returned NaN for T\\(y, x\\) at draw 0"):
        pp.posterior_predictive_pvalue(checked, SHARES, {"broken": lambda y, x: np.nan})
    with pytest.raises(
        ValueError, match="'cumsum' must return one real number, but returned an array of shape \\(5,\\)"
    ):
        pp.posterior_predictive_pvalue(checked, SHARES, {"cumsum": lambda y, x: np.cumsum(y)})
    with pytest.raises(ValueError, match="'label' must return one real number, but returned a str"):
        pp.plot_posterior_predictive(checked, SHARES, {"label": lambda y, x: "high"})
    p = pp.posterior_predictive_pvalue(checked, SHARES, {"infinite": lambda y, x: np.inf if y[0] > 3 else 0.0})
    assert 0 <= p["infinite"] <= 1  # infinities order as usual


def test_a_census_fit_gets_replicated_releases_of_its_queries():
    """sample_cells's draws of cells (unit, cell), flattened per draw in C order, are released again by the
    NoisyMeasurements mechanism: y_rep has the release's dims, and its mean over the N draws is Q times the
    posterior mean cells up to the mean of N iid noises (within 5 sigma / sqrt(N) at every query)."""
    geo = Geography(["t", "b0", "b1", "b2"], [None, "t", "t", "t"])
    census = census_queries(geo, TableSpec(("a", "b")), {"level1": ["total", "detailed"]})
    mechanism = mechanisms.NoisyMeasurements(census.matrix, 1.0)
    y = mechanism.release([12, 3, 20, 7, 1, 9], random_seed=1)
    fit = sample_cells(census, mechanism, y, draws=200, tune=200, random_seed=2, progressbar=False)
    checked = pp.posterior_predictive(fit, mechanism, random_seed=3)
    replicated = checked["posterior_predictive"]["y"]
    assert replicated.dims == ("chain", "draw", "query") and replicated.shape == (2, 200, y.size)
    assert replicated.sizes["query"] == fit["observed_data"]["y"].size
    mean_cells = fit["posterior"]["cells"].mean(("chain", "draw")).values.reshape(-1)
    gap = replicated.mean(("chain", "draw")).values - mechanism.queries @ mean_cells
    assert np.abs(gap).max() < 5 / np.sqrt(400), gap
    p = pp.posterior_predictive_pvalue(checked, mechanism)  # the default discrepancy reads the flattened cells
    assert set(p.index) == {"sum", "discrepancy"} and p.between(0, 1).all()
    # the tree names its latent (attrs x_name); without it the error names the argument to pass
    del fit.attrs["x_name"]
    with pytest.raises(ValueError, match="no draws of x named 'x'.*pass x_name"):
        pp.posterior_predictive(fit, mechanism)
    other = mechanisms.NoisyMeasurements(np.eye(4, dtype=int), 1.0)  # a mechanism of 4 cells, not 6
    with pytest.raises(ValueError, match="a posterior draw of 'cells' \\(shape \\(3, 2\\).*not an x of the mechanism"):
        pp.posterior_predictive(fit, other, x_name="cells")
