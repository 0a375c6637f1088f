"""The samplers' silent or obscure cases (issue 25): each now warns or refuses, naming the problem."""

import time
import warnings

import numpy as np
import pytest
from scipy import stats

import ppdinfer as pp
from ppdinfer import generators, priors
from ppdinfer.interop import from_noise
from ppdinfer.invariants import LinearInvariants
from ppdinfer.mechanisms import BoxMassWarning, Congenial, DiscreteGaussian, DiscreteLaplace, PostProcessedRelease

BETA_BINOMIAL = pp.PPDModel(priors.Beta(2, 3), generators.Binomial(20), DiscreteLaplace(1.0), names="p")
#: The same model on a theta grid (a scipy prior has no conjugate pair).
GRIDDED = pp.PPDModel(stats.beta(2, 3), generators.Binomial(20), DiscreteLaplace(1.0), names="p")


def clip_at_zero(y, z):
    return np.maximum(y, 0)


def clipped_model(box):
    return pp.PPDModel(
        priors.Beta(2, 3),
        generators.Binomial(20),
        PostProcessedRelease(DiscreteGaussian(4.0), clip_at_zero, box=box),
        names="p",
    )


def sampler_runs(model, y, z=None):
    """The three samplers on (y, z), small and seeded."""
    return {
        "exact": lambda: pp.exact_posterior(model, y, z, draws=500, random_seed=1),
        "importance": lambda: pp.importance_sample(model, y, z, draws=2000, random_seed=1),
        "rejection": lambda: pp.rejection_sample(
            model, y, z, draws=300, random_seed=1, progressbar=False, max_seconds=20
        ),
    }


def quietly(run):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return run()


# -- 1. an importance proposal that misses the posterior --------------------------------------------------------
def test_a_proposal_that_misses_the_posterior_is_warned_about():
    exact = float(pp.exact_posterior(BETA_BINOMIAL, 7)["exact"]["theta_mean"][0])
    with pytest.warns(pp.ImportanceWarning, match=r"does not cover the posterior's support") as caught:
        result = pp.importance_sample(BETA_BINOMIAL, 7, draws=20000, proposal=stats.uniform(0.5, 0.1), random_seed=1)
    biased = float(pp.weighted_mean(result)["p"])
    assert abs(biased - exact) > 0.15  # the estimate it warns about: 0.54 against 0.36
    message = str(caught[0].message)
    assert "zero at 8" in message and "prior draws" in message  # 86 % of the prior draws lie outside (0.5, 0.6)


@pytest.mark.parametrize("proposal", [stats.uniform(0, 1), stats.uniform(0.02, 0.9)])
def test_a_proposal_covering_the_posterior_is_not_warned_about(proposal):
    """The whole prior's support, or all but a part of it where the posterior has no noticeable mass."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", pp.ImportanceWarning)
        result = pp.importance_sample(BETA_BINOMIAL, 7, draws=20000, proposal=proposal, random_seed=1)
    exact = pp.exact_posterior(BETA_BINOMIAL, 7)["exact"]
    mean, sd = float(exact["theta_mean"][0]), float(exact["theta_sd"][0])
    assert abs(float(pp.weighted_mean(result)["p"]) - mean) < 4 * sd / np.sqrt(float(result["sample_stats"]["ess"]))


# -- 2. a post-processing box that misses the raw release's law ----------------------------------------------------
@pytest.mark.parametrize("sampler", ["exact", "importance", "rejection"])
def test_a_box_that_misses_mass_at_the_drawn_x_is_warned_about(sampler):
    narrow = clipped_model(np.arange(-2, 40)[:, None])
    with pytest.warns(BoxMassWarning, match=rf"{sampler}\w*: the box of raw releases misses 0.265 .* at x = \[0\]"):
        sampler_runs(narrow, 0)[sampler]()
    wide = clipped_model(np.arange(-40, 60)[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoxMassWarning)
        sampler_runs(wide, 0)[sampler]()


def test_check_box_measures_the_missing_mass_exactly():
    mechanism = PostProcessedRelease(DiscreteGaussian(4.0), clip_at_zero, box=np.arange(-2, 40)[:, None])
    raw = DiscreteGaussian(4.0)
    outside = np.concatenate([np.arange(-200, -2), np.arange(40, 240)])
    expected = np.exp(raw.logpdf(np.zeros(1), outside[:, None])).sum()  # by symmetry: P(y outside | x = 0)
    with pytest.warns(BoxMassWarning):
        assert mechanism.check_box([[0], [3]]) == pytest.approx(expected, rel=1e-9)
    assert expected == pytest.approx(0.26544885, abs=1e-8)


# -- 3. exact_posterior's grid ---------------------------------------------------------------------------------
def test_a_repeated_grid_value_is_refused_and_the_order_does_not_matter():
    with pytest.raises(ValueError, match=r"theta_grid holds 0.2 more than once"):
        pp.exact_posterior(GRIDDED, 7, theta_grid=[0.5, 0.2, 0.2, 0.9])
    grid = np.linspace(0.01, 0.99, 99)
    shuffled = np.random.default_rng(0).permutation(grid)
    means = [float(pp.exact_posterior(GRIDDED, 7, theta_grid=g)["exact"]["theta_mean"][0]) for g in (grid, shuffled)]
    assert means[0] == means[1]


def test_a_conjugate_posterior_is_reported_on_the_users_grid():
    conjugate = pp.PPDModel(priors.Beta(2, 3), generators.Binomial(20), DiscreteLaplace(1.0), names="p")
    grid = np.linspace(0.05, 0.65, 25)
    exact = pp.exact_posterior(conjugate, 7, theta_grid=grid[::-1])["exact"]  # sorted like a gridded one
    np.testing.assert_array_equal(exact["theta_grid"].values[:, 0], grid)
    default = pp.exact_posterior(conjugate, 7)["exact"]  # its own 2,001 points; closed form either way
    assert float(exact["theta_mean"][0]) == float(default["theta_mean"][0])
    for name in ("theta_cdf", "theta_density"):
        between = np.interp(grid, default["theta_grid"].values[:, 0], default[name].values[:, 0])
        np.testing.assert_allclose(exact[name].values[:, 0], between, rtol=1e-3, atol=1e-6)
    with pytest.raises(ValueError, match=r"theta_grid must lie in \[0, 1\] for the conjugate Beta prior"):
        pp.exact_posterior(conjugate, 7, theta_grid=[-0.5, 0.5, 1.5])


def test_a_grid_too_large_is_refused_before_it_is_computed():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"a grid of 100,000,000 theta values times 21 support points"):
        pp.exact_posterior(GRIDDED, 7, grid_size=10**8)
    with pytest.raises(ValueError, match=r"a grid of 10,000,000,000,000,000,000 theta values"):
        pp.exact_posterior(GRIDDED, 7, grid_size=10**19)
    assert time.perf_counter() - start < 5  # 212 s and 6.2 GB before


def test_a_refusal_for_memory_is_short():
    with pytest.raises(ValueError, match=r"draws=1.00e\+300 needs about 1.22e\+296 MiB") as refused:
        pp.exact_posterior(GRIDDED, 7, draws=10**300)
    assert len(str(refused.value)) < 250


# -- 4. z keys, cores and executors ------------------------------------------------------------------------------
@pytest.mark.parametrize("sampler", ["exact", "importance", "rejection"])
def test_a_z_key_nothing_reads_is_warned_about(sampler):
    with pytest.warns(UserWarning, match=r"z has key .total., which neither the prior, the data model nor the mech"):
        sampler_runs(BETA_BINOMIAL, 7, {"total": 5})[sampler]()


def test_keys_read_by_the_prior_the_data_model_or_the_mechanism_are_not_warned_about():
    from ppdinfer.models import county_counts

    model = county_counts.model(epsilon=1.0, concentration=10.0)
    z = county_counts.public_information(previous=[3, 2], total=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        pp.exact_posterior(model, [3, 1], z, draws=10)
    with pytest.warns(UserWarning, match=r"z has key 'totl'"):
        pp.exact_posterior(model, [3, 1], {**z, "totl": 4}, draws=10)


def test_cores_beyond_the_machine_are_capped_with_a_warning():
    from ppdinfer.inference.parallel import available_cores

    start = time.perf_counter()
    with pytest.warns(UserWarning, match=rf"cores=10000 exceeds the {available_cores()} cores available"):
        result = pp.rejection_sample(BETA_BINOMIAL, 7, draws=100, random_seed=1, progressbar=False, cores=10**4)
    assert time.perf_counter() - start < 10  # 97 s and 1.8 GB before
    reference = pp.rejection_sample(BETA_BINOMIAL, 7, draws=100, random_seed=1, progressbar=False, cores=1)
    np.testing.assert_array_equal(result["posterior"]["p"].values, reference["posterior"]["p"].values)


@pytest.mark.parametrize("sampler", [pp.rejection_sample, pp.importance_sample])
def test_an_executor_that_is_not_one_is_refused_by_name(sampler):
    with pytest.raises(ValueError, match=r"executor must be a concurrent.futures.Executor .* got 'pool'"):
        sampler(BETA_BINOMIAL, 7, draws=10, executor="pool")


# -- 5. a y of probability zero ------------------------------------------------------------------------------------
@pytest.mark.parametrize("sampler", ["exact", "importance", "rejection"])
def test_a_published_value_outside_the_image_has_probability_zero(sampler):
    model = clipped_model(np.arange(-40, 60)[:, None])
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"y has probability zero under the model: no raw release of the box"):
        sampler_runs(model, -1)[sampler]()
    assert time.perf_counter() - start < 5


CONGENIAL = pp.PPDModel(
    priors.Dirichlet([1.0, 1.0, 1.0]),
    generators.MultinomialTotal("total"),
    Congenial(DiscreteLaplace(1.0), LinearInvariants.grand_total(3, 4) & LinearInvariants.nonnegative(3)),
    names="share",
)


@pytest.mark.parametrize("sampler", ["exact", "importance", "rejection"])
def test_a_congenial_release_off_the_invariants_has_probability_zero(sampler):
    with pytest.raises(ValueError, match=r"y has probability zero under the model: y breaks the congenial"):
        sampler_runs(CONGENIAL, [3, 1, 1], {"total": 4})[sampler]()
    quietly(sampler_runs(CONGENIAL, [3, 1, 0], {"total": 4})[sampler])  # a release that keeps them


@pytest.mark.parametrize("sampler", ["exact", "importance", "rejection"])
def test_probability_zero_at_every_x_of_the_support_is_refused(sampler):
    """Decided by the support: the release of a congenial mechanism (which y alone does not decide here,
    inside a post-processing that keeps it) is zero at every x the data model can give."""
    inner = CONGENIAL.mechanism
    box = np.stack(np.meshgrid(*[np.arange(-1, 6)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    model = pp.PPDModel(
        CONGENIAL.prior, CONGENIAL.simulate, PostProcessedRelease(inner, lambda y, z: y, box=box), names="share"
    )
    with pytest.raises(
        ValueError,
        match=r"y has probability zero under the model: its likelihood is zero at every "
        r"one of the 15 x",
    ):
        sampler_runs(model, [3, 1, 1], {"total": 4})[sampler]()


@pytest.mark.parametrize("sampler", ["exact", "importance", "rejection"])
def test_a_y_of_small_likelihood_is_not_refused(sampler):
    """y = 24 for a count of at most 20: likelihood at most e^-4, but positive."""
    result = quietly(sampler_runs(BETA_BINOMIAL, 24)[sampler])
    assert result["posterior"].sizes["draw"] > 0


def test_a_postprocessing_that_returns_nan_is_refused():
    mechanism = PostProcessedRelease(
        DiscreteLaplace(1.0), lambda y, z: np.where(y > 3, np.nan, y), box=np.arange(-20, 30)
    )
    with pytest.raises(ValueError, match=r"postprocess returned NaN for the raw release \[4\]"):
        mechanism.logpdf(0, [1])
    with pytest.raises(ValueError, match=r"postprocess returned NaN"):
        mechanism.release(10, random_seed=1)


# -- 6. from_noise's integer ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("integer", ["no", 0, 1, None])
def test_from_noise_wants_a_bool(integer):
    with pytest.raises(ValueError, match=r"integer must be True or False"):
        from_noise("laplace", 1.0, integer=integer)


def test_from_noise_takes_numpy_bools():
    assert from_noise("laplace", 1.0, integer=np.True_) == DiscreteLaplace(1.0)
