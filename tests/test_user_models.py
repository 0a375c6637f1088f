"""Models a user writes: scipy priors and proposals, errors that name the cause, memory, dimension names."""

import numpy as np
import pytest
from scipy import stats

import ppdinfer as pp
from ppdinfer.generators import Binomial
from ppdinfer.inference import model as model_module
from ppdinfer.inference.model import theta_logpdf
from ppdinfer.mechanisms import DiscreteLaplace, Gaussian
from ppdinfer.models import county_counts, table_2x2

PRIOR_COV = np.array([[1.0, 0.6], [0.6, 2.0]])
Y = np.array([1.5, -0.5])
COUNTY_Y, COUNTY_Z = [6, 2, 5], county_counts.public_information([5, 3, 3], 12)


def shifted(theta, z, rng):
    """x ~ N(theta, I) for each theta of a batch."""
    return theta + rng.normal(size=theta.shape)


def bivariate(**kwargs):
    """theta ~ N(0, PRIOR_COV), x ~ N(theta, I), y ~ N(x, I): y | theta ~ N(theta, 2 I)."""
    return pp.PPDModel(stats.multivariate_normal(mean=[0, 0], cov=PRIOR_COV), shifted, Gaussian(1.0), **kwargs)


def test_bivariate_normal_prior_matches_the_normal_posterior():
    gain = PRIOR_COV @ np.linalg.inv(PRIOR_COV + 2 * np.eye(2))
    mean, cov = gain @ Y, PRIOR_COV - gain @ PRIOR_COV
    exact = pp.rejection_sample(bivariate(), Y, draws=2000, random_seed=1, progressbar=False)
    theta = exact["posterior"]["theta"].values.reshape(-1, 2)
    assert np.all(np.abs(theta.mean(axis=0) - mean) < 4.5 * np.sqrt(np.diag(cov) / 2000))
    assert np.allclose(np.cov(theta.T), cov, atol=0.1)
    weighted = pp.importance_sample(bivariate(), Y, draws=20_000, random_seed=2)
    ess = float(weighted["sample_stats"]["ess"])
    estimate = pp.weighted_mean(weighted)["theta"].values
    assert np.all(np.abs(estimate - mean) < 4.5 * np.sqrt(np.diag(cov) / ess))


def test_scipy_dirichlet_proposal_matches_exact_posterior():
    model = county_counts.model()
    exact = pp.exact_posterior(model, COUNTY_Y, COUNTY_Z, random_seed=0)
    proposal = stats.dirichlet(30 * exact["exact"]["theta_mean"].values)
    result = pp.importance_sample(model, COUNTY_Y, COUNTY_Z, draws=20_000, proposal=proposal, random_seed=3)
    error = pp.weighted_mean(result)["share"].values - exact["exact"]["theta_mean"].values
    standard_error = exact["exact"]["theta_sd"].values / np.sqrt(float(result["sample_stats"]["ess"]))
    assert np.all(np.abs(error) < 4.5 * standard_error)


def test_scipy_dirichlet_logpdf_layout_and_boundary():
    dirichlet = stats.dirichlet([0.5, 2.0, 3.0])
    theta = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])  # square: a wrong layout could pass
    assert np.allclose(theta_logpdf(dirichlet, theta, None), [dirichlet.logpdf(row) for row in theta])
    outside = np.array([[0.0, 0.5, 0.5], [0.5, 0.6, 0.1]])  # on the boundary; off the simplex
    assert np.all(theta_logpdf(dirichlet, outside, None) == -np.inf)


@pytest.mark.parametrize("family", [stats.beta, stats.norm, stats.multivariate_normal])
def test_unfrozen_scipy_prior_is_refused(family):
    with pytest.raises(ValueError, match="freeze it with its parameters"):
        pp.PPDModel(family, Binomial(10), DiscreteLaplace(1.0))


def test_unfrozen_scipy_proposal_is_refused():
    model = pp.PPDModel(stats.beta(2, 3), Binomial(10), DiscreteLaplace(1.0))
    with pytest.raises(ValueError, match="proposal is the distribution family scipy.stats.beta"):
        pp.importance_sample(model, 4, draws=100, proposal=stats.beta)


def test_errors_name_the_public_information():
    model = county_counts.model()
    with pytest.raises(ValueError, match=r"y has shape \(4,\) .* shape of z\['previous'\]: y and z do not fit"):
        pp.importance_sample(model, [1, 2, 3, 0], county_counts.public_information([1, 2, 3, 4, 5], 10), draws=10)
    reads_n = pp.PPDModel(stats.beta(2, 3), lambda theta, z, rng: rng.binomial(z["n"], theta), DiscreteLaplace(1.0))
    with pytest.raises(ValueError, match=r"z has no key 'n', which the model reads; z has keys \['m'\]"):
        pp.rejection_sample(reads_n, 3, {"m": 4}, draws=10)


class CountingBinomial(Binomial):
    """Binomial that counts its draws and enumerations."""

    def __init__(self, n):
        super().__init__(n)
        self.calls = 0

    def __call__(self, theta, z, rng):
        self.calls += 1
        return super().__call__(theta, z, rng)

    def support(self, z=None, theta_dim=1):
        self.calls += 1
        return super().support(z, theta_dim)


@pytest.mark.parametrize("sampler", [pp.rejection_sample, pp.importance_sample, pp.exact_posterior])
def test_request_beyond_memory_is_refused_before_sampling(sampler, monkeypatch):
    monkeypatch.setattr(model_module, "available_memory", lambda: 2**20)
    data = CountingBinomial(10)
    model = pp.PPDModel(pp.priors.Beta(1, 1), data, DiscreteLaplace(1.0))
    with pytest.raises(
        ValueError,
        match=r"draws=100000 needs about 12 MiB \(100000 draws x 4 values x 8 bytes x 4 "
        r"copies\) but only 1 MiB of memory is available",
    ):
        sampler(model, 3, draws=100_000)
    assert data.calls == 1  # the prior-predictive draw that learns the shapes
    sampler(model, 3, draws=1000)


def test_available_memory_falls_back_to_unknown(monkeypatch):
    assert model_module.available_memory() > 0

    def unavailable(*args):
        raise OSError

    monkeypatch.setattr(model_module, "open", unavailable, raising=False)
    monkeypatch.setattr(model_module.os, "sysconf", unavailable)
    assert model_module.available_memory() is None
    pp.PPDModel.check_memory(10**15, (1,), (1,))  # unknown: nothing is refused


def test_dimension_names():
    result = pp.rejection_sample(county_counts.model(), COUNTY_Y, COUNTY_Z, draws=10, random_seed=0, progressbar=False)
    assert result["posterior"]["share"].dims == result["posterior"]["cases"].dims == ("chain", "draw", "county")
    assert result["observed_data"]["y"].dims == ("county",)
    exact = pp.exact_posterior(county_counts.model(), COUNTY_Y, COUNTY_Z, draws=10)
    assert exact["exact"]["x_support"].dims == ("support", "county")
    named = pp.rejection_sample(bivariate(dims={"theta": "axis", "x": ("axis",)}), Y, draws=10, progressbar=False)
    assert named["posterior"]["theta"].dims[2:] == named["posterior"]["x"].dims[2:] == ("axis",)
    with pytest.raises(ValueError, match="none of the model's variables"):
        bivariate(dims={"mu": "axis"})
    with pytest.raises(ValueError, match="other than chain and draw"):
        bivariate(dims={"x": "draw"})
    with pytest.raises(ValueError, match=r"dims\['theta'\] = \('a', 'b'\) names 2 dimensions but theta has 1"):
        pp.rejection_sample(bivariate(dims={"theta": ("a", "b")}), Y, draws=10)


def test_gallery_builds_z_with_public_information():
    assert table_2x2.public_information([10, 12], 9) == {"row_totals": [10, 12], "col_total": 9}
    assert not hasattr(table_2x2, "margins")
