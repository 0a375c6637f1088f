"""PostProcessedRelease: the published h(y, z) as a sampler and its push-forward likelihood."""

import numpy as np
import pytest
from release_checks import assert_rejection_matches_exact_posterior
from scipy import stats

import ppdinfer as pp
from ppdinfer.mechanisms import DiscreteLaplace, Laplace, PostProcessedRelease
from ppdinfer.models import county_counts
from ppdinfer.postprocessing import postprocess


def published_cases(y, z):
    """The paper's post-processing (projection onto the public total, integer step), cases only."""
    return postprocess(y, np.zeros_like(y), z["total"]).cases


def clip_at_zero(y, z):
    return np.maximum(y, 0)


def bins_of_4(y, z):
    """Coarsened to multiples of 4. (Clipping at 0 would not do for the sampler tests: with discrete
    Laplace noise P(y <= 0 | x) and P(y = 0 | x) are proportional in x, so it loses nothing.)"""
    return 4 * np.floor_divide(y, 4)


@pytest.fixture(scope="module")
def three_counties():
    """Three counties sharing a public total of 10, released at eps = 0.5 and post-processed."""
    model = county_counts.model(epsilon=0.5, concentration=10.0)
    z = county_counts.public_information(previous=[7, 3, 1], total=10)
    edge = np.arange(-20, z["total"] + 21)
    box = np.stack(np.meshgrid(edge, edge, edge, indexing="ij"), axis=-1).reshape(-1, 3)
    return model, z, box


def test_posterior_given_the_published_table_equals_grouping_the_box_by_its_image(three_counties):
    model, z, box = three_counties
    y_star = np.array([7, 3, 0])
    published = pp.PPDModel(
        model.prior,
        model.simulate,
        PostProcessedRelease(model.mechanism, published_cases, box),
        names=model.names,
        x_name=model.x_name,
        dims=model.dims,
    )
    ours = pp.exact_posterior(published, y_star, z, random_seed=1)["exact"]

    # independently: p(y, x | z) on the box, summed over the y that land on y*, by grouping
    support = ours["x_support"].values
    log_prior = stats.dirichlet_multinomial.logpmf(support, model.prior.concentration_vector(z), z["total"])
    lands = np.all(published_cases(box, z) == y_star, axis=1)
    joint = np.exp(np.stack([model.mechanism.logpdf(x_k, box[lands]) for x_k in support], axis=1) + log_prior)
    expected = joint.sum(axis=0) / joint.sum()
    np.testing.assert_allclose(ours["x_pmf"].values, expected, rtol=1e-9, atol=1e-14)
    assert lands.sum() == published.mechanism.preimage(y_star, z).shape[0] > 100  # many noisy y give one y*

    # the box holds all but a negligible part of the raw release for every x of the support
    assert published.mechanism.box_mass(support[::13], z).min() > 1 - 1e-4
    # and the published table carries less than the raw one: the posterior of the small county is wider
    raw = pp.exact_posterior(model, [7, 3, -1], z, random_seed=1)["exact"]["x_pmf"].values
    assert (
        ours["x_pmf"].values @ support[:, 2] ** 2 - (ours["x_pmf"].values @ support[:, 2]) ** 2
        > raw @ support[:, 2] ** 2 - (raw @ support[:, 2]) ** 2
    )


def test_release_sampler_matches_the_pushforward_pmf():
    def law(epsilon):
        return PostProcessedRelease(DiscreteLaplace(epsilon), clip_at_zero, box=np.arange(-60, 70))

    releases = np.array([law(0.7).release(3, random_seed=seed) for seed in range(20_000)])
    pmf = np.exp([law(0.7).logpdf(value, [3])[0] for value in range(70)])
    a = np.exp(-0.7)
    assert abs(pmf.sum() - 1) < 1e-12 and np.isclose(pmf[0], a**3 / (1 + a))  # P(noise <= -3) piles up at 0
    assert chi_square_p_value(releases, pmf) > 1e-3
    wrong = np.exp([law(0.9).logpdf(value, [3])[0] for value in range(70)])
    assert chi_square_p_value(releases, wrong) < 1e-6  # the test can tell a wrong law


def test_rejection_sampling_from_a_coarsened_release_is_exact():
    binned = PostProcessedRelease(DiscreteLaplace(0.5), bins_of_4, box=np.arange(-80, 130))
    assert_rejection_matches_exact_posterior(binned, 4, n=20)  # published 4: the raw y was 4, 5, 6 or 7


@pytest.mark.filterwarnings("ignore:Numba will use object mode")
def test_pymc_from_a_coarsened_release_matches_enumeration():
    import arviz as az

    from ppdinfer.pymc import sample_model

    binned = PostProcessedRelease(DiscreteLaplace(0.5), bins_of_4, box=np.arange(-80, 130))
    model = pp.PPDModel(pp.priors.Beta(1, 3), pp.generators.Binomial(20), binned, names="p")
    exact = pp.exact_posterior(model, 4)["exact"]
    x_pmf, x_values = exact["x_pmf"].values, exact["x_support"].values.ravel()
    exact_mean = x_pmf @ x_values
    exact_sd = np.sqrt(x_pmf @ x_values**2 - exact_mean**2)
    idata = sample_model(model, 4, draws=1000, tune=300, chains=2, random_seed=3, progressbar=False)
    ess = float(az.ess(idata, var_names=["x"])["x"])
    assert abs(float(idata.posterior["x"].mean()) - exact_mean) < 4 * exact_sd / np.sqrt(ess)
    # reading the published 4 as a raw release would give E x = 3.76 instead of 4.88: outside the tolerance
    assert exact_mean - 3.76 > 4 * exact_sd / np.sqrt(ess)


def chi_square_p_value(releases, pmf, last=12):
    """Counts of 0..last and of everything above against the pmf (each bin expects >= 5 here)."""
    observed = np.append([np.count_nonzero(releases == v) for v in range(last + 1)], np.count_nonzero(releases > last))
    expected = np.append(pmf[: last + 1], pmf[last + 1 :].sum()) * releases.size
    return stats.chisquare(observed, expected).pvalue


def test_a_table_outside_the_image_of_the_box_has_probability_zero(three_counties):
    model, z, box = three_counties
    mechanism = PostProcessedRelease(model.mechanism, published_cases, box)
    assert mechanism.preimage([5, 5, 5], z).shape == (0, 3)  # sums to 15, not the public 10
    assert np.all(mechanism.logpdf([5, 5, 5], [[6, 3, 1], [4, 4, 2]], z) == -np.inf)


def test_bad_input():
    with pytest.raises(ValueError, match="must be discrete"):
        PostProcessedRelease(Laplace(1.0), clip_at_zero, np.arange(5))
    with pytest.raises(ValueError, match="mechanism must be a ppdinfer Mechanism"):
        PostProcessedRelease("laplace", clip_at_zero, np.arange(5))
    with pytest.raises(ValueError, match="postprocess must be a callable"):
        PostProcessedRelease(DiscreteLaplace(1.0), None, np.arange(5))
    with pytest.raises(ValueError, match="box must hold integers"):
        PostProcessedRelease(DiscreteLaplace(1.0), clip_at_zero, [0.5, 1.0])
    with pytest.raises(ValueError, match="box must be a non-empty"):
        PostProcessedRelease(DiscreteLaplace(1.0), clip_at_zero, np.empty((0, 2), dtype=int))
    one_row = PostProcessedRelease(DiscreteLaplace(1.0), lambda y, z: y[:1], np.arange(5))
    with pytest.raises(ValueError, match="postprocess returned shape"):
        one_row.logpdf(0, [1])
    with pytest.raises(ValueError, match="y has 2 values"):
        PostProcessedRelease(DiscreteLaplace(1.0), clip_at_zero, np.arange(5)).logpdf([0, 1], [1])
