"""The Wasserstein exponential mechanism (Theorem 9) and the K-norm gradient mechanism (Theorem 10).

Reference pmfs are enumerated by hand here (itertools and scipy), independently of the library.
"""

import itertools
import math

import numpy as np
import pytest
from conftest import chi_square_pvalue, matches_exact
from scipy import integrate, special, stats

import ppdinfer as pp
from ppdinfer.mechanisms import KNormGradient, PriorCongenial, WassersteinExponential
from ppdinfer.mechanisms.wem import MIN_SWEEPS, ChainLengthWarning

# Small instances: J counties, a public total, last month's cases, and a confidential table x.
SMALL = {
    "J3": ({"total": 4, "previous_cases": [5, 0, 2]}, np.array([[2, 1, 1], [1, 0, 1]])),
    "J2": ({"total": 6, "previous_cases": [1, 6]}, np.array([[5, 1], [2, 1]])),
}
RELEASES = 20_000
CHAIN_SWEEPS = 60  # three times the ~20 sweeps after which the TV reaches its sampling-noise floor


def congenial_tables(total, n_counties):
    """Every (2, J) table with cases summing to total and cases >= deaths >= 0."""
    tables = []
    for cases in itertools.product(range(total + 1), repeat=n_counties):
        if sum(cases) == total:
            tables += [[list(cases), list(deaths)] for deaths in itertools.product(*(range(c + 1) for c in cases))]
    return np.array(tables)


def hand_pmf(x, support, epsilon, sigma, power, weight=None):
    """exp(-eps ||y - x||_p / (2 sigma)) nu(y) normalized over the support."""
    loss = np.linalg.norm((support - x).reshape(len(support), -1), ord=power, axis=1)
    log_p = -epsilon * loss / (2 * sigma) + (0.0 if weight is None else np.log(weight))
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def dirichlet_multinomial_weight(support, z, alpha=1.0, pseudocount=1.0):
    concentration = alpha * (np.asarray(z["previous_cases"]) + pseudocount)
    return stats.dirichlet_multinomial.pmf(support[:, 0], concentration, z["total"])


def total_variation(draws, support, pmf):
    """TV between the empirical distribution of draws and pmf; draws outside the support count fully."""
    index = {table.tobytes(): i for i, table in enumerate(np.ascontiguousarray(support))}
    cells = np.array([index.get(d.tobytes(), len(support)) for d in np.ascontiguousarray(draws)])
    counts = np.bincount(cells, minlength=len(support) + 1)
    return 0.5 * np.abs(counts / len(draws) - np.append(pmf, 0.0)).sum()


def iid_total_variation(pmf, n, rng, repeats=5):
    """The TV of n iid draws from pmf itself: the sampling-noise floor of the statistic."""
    return np.mean([0.5 * np.abs(rng.multinomial(n, pmf) / n - pmf).sum() for _ in range(repeats)])


# -- the base measures and the likelihood ----------------------------------------------------


def test_prior_weight_is_the_standard_dirichlet_multinomial():
    z, _ = SMALL["J3"]
    support = congenial_tables(z["total"], 3)
    measure = PriorCongenial(alpha=0.7, pseudocount=1.0)
    expected = dirichlet_multinomial_weight(support, z, alpha=0.7)
    assert np.allclose(np.exp(measure.log_weight(support, z)), expected, rtol=1e-10)
    # the zero-count county gets concentration alpha * pseudocount, not 0
    assert measure.concentration(z, 3)[1] == pytest.approx(0.7)


@pytest.mark.parametrize("base_measure", ["congenial", "prior_congenial"])
@pytest.mark.parametrize("loss", ["l1", "l2"])
def test_logpdf_is_the_enumerated_pmf_with_its_normalizer(base_measure, loss):
    z, x = SMALL["J3"]
    mechanism = WassersteinExponential(1.3, 2.0, loss=loss, base_measure=base_measure)
    support = congenial_tables(z["total"], 3)
    weight = dirichlet_multinomial_weight(support, z) if base_measure == "prior_congenial" else None
    for x_row in (x, support[0], support[-1]):
        expected = hand_pmf(x_row, support, 1.3, 2.0, 1 if loss == "l1" else 2, weight)
        got = np.exp([mechanism.logpdf(y, x_row, z)[0] for y in support])
        assert np.allclose(got, expected, rtol=1e-9, atol=1e-15)
    # a batch of x, flattened as the samplers pass it, gives per-row values with C(x) per row
    batch = support[[0, 5, 5, 9]]
    assert np.allclose(
        mechanism.logpdf(support[3].reshape(-1), batch.reshape(4, -1), z),
        [mechanism.logpdf(support[3], row, z)[0] for row in batch],
    )


def test_log_bound_is_the_sup_over_x_satisfying_z():
    z, _ = SMALL["J2"]
    mechanism = WassersteinExponential(2.0, 2.0, base_measure="prior_congenial")
    support = congenial_tables(z["total"], 2)
    peak = max(mechanism.logpdf(y, support, z).max() for y in support)
    assert mechanism.log_bound(z, size=4) == pytest.approx(peak, abs=1e-12)


def test_naive_logpdf_is_the_unnormalized_kernel():
    mechanism = WassersteinExponential(1.0, 2.0, base_measure="naive")
    y = np.array([[3, -2], [0, 4]])
    x = np.array([[[3, 0], [0, 4]], [[1, 1], [1, 1]]])
    assert np.allclose(mechanism.logpdf(y, x), -np.linalg.norm((y - x).reshape(2, -1), axis=1) / 4)
    assert mechanism.log_bound(None, size=4) == 0.0
    # only ratios in x matter, and the L1 ratios are those of the normalized discrete Laplace product
    l1 = WassersteinExponential(1.0, 2.0, loss="l1")
    laplace = stats.dlaplace(0.25).logpmf((y - x).reshape(2, -1)).sum(axis=1)
    assert np.diff(l1.logpdf(y, x)) == pytest.approx(np.diff(laplace))


# -- release ----------------------------------------------------------------------------------


def _instances():
    # (name, mechanism, z, x, support, pmf, the pmf of a broken chain that the check must reject)
    z3, x3 = SMALL["J3"]
    z2, x2 = SMALL["J2"]
    s3, s2 = congenial_tables(4, 3), congenial_tables(6, 2)
    w3, w2 = dirichlet_multinomial_weight(s3, z3), dirichlet_multinomial_weight(s2, z2)
    lattice = x2[:, :1] + np.array(list(itertools.product(range(-25, 26), repeat=2))).reshape(-1, 2, 1)
    return [
        (
            "congenial-l2-J3",
            WassersteinExponential(2.0, 2.0, base_measure="congenial"),
            z3,
            x3,
            s3,
            hand_pmf(x3, s3, 2.0, 2.0, 2),
            hand_pmf(x3, s3, 2.0, 2.0, 1),
        ),  # broken: the L1 loss
        (
            "prior-l2-J3",
            WassersteinExponential(2.0, 2.0, base_measure="prior_congenial"),
            z3,
            x3,
            s3,
            hand_pmf(x3, s3, 2.0, 2.0, 2, w3),
            hand_pmf(x3, s3, 2.0, 2.0, 2),
        ),  # broken: no prior weight
        (
            "prior-l1-J2",
            WassersteinExponential(1.0, 2.0, loss="l1", base_measure="prior_congenial"),
            z2,
            x2,
            s2,
            hand_pmf(x2, s2, 1.0, 2.0, 1, w2),
            hand_pmf(x2, s2, 2.0, 2.0, 1, w2),
        ),  # broken: epsilon doubled
        (
            "naive-l2-J1",
            WassersteinExponential(4.0, 2.0),
            None,
            x2[:, :1],
            lattice,
            hand_pmf(x2[:, :1], lattice, 4.0, 2.0, 2),
            hand_pmf(x2[:, :1], lattice, 4.0, 2.0, 1),
        ),
    ]


@pytest.mark.parametrize("method", ["exact", "mcmc"])
@pytest.mark.parametrize("case", _instances(), ids=lambda case: case[0])
def test_release_matches_the_enumerated_pmf(case, method):
    name, mechanism, z, x, support, pmf, broken = case
    if method == "mcmc":  # a short chain, as the check of its length needs
        with pytest.warns(ChainLengthWarning):
            draws = mechanism.release(x, z, random_seed=1, sweeps=CHAIN_SWEEPS, replicates=RELEASES, method=method)
    else:
        draws = mechanism.release(x, z, random_seed=1, replicates=RELEASES, method=method)
    assert draws.shape == (RELEASES, *x.shape) and draws.dtype == np.int64
    floor = iid_total_variation(pmf, RELEASES, np.random.default_rng(0))
    tv = total_variation(draws, support, pmf)
    assert tv < 1.5 * floor, f"{name}: TV {tv:.4f} against a sampling floor of {floor:.4f}"
    assert chi_square_pvalue(draws, support, pmf) > 1e-4
    # the check has power: the draws fail against the pmf a typical bug would produce
    assert total_variation(draws, support, broken) > 1.5 * floor


def test_exact_release_for_l1_on_the_lattice():
    mechanism = WassersteinExponential(1.0, 2.0, loss="l1")
    x = np.array([[7, 3], [2, 0]])
    noise = (mechanism.release(x, random_seed=3, replicates=3000) - x).reshape(-1)
    support = np.arange(noise.min() - 5, noise.max() + 6)
    assert chi_square_pvalue(noise, support, stats.dlaplace(0.25).pmf(support)) > 1e-3


def test_release_stays_in_the_support_on_realistic_counts():
    previous = np.array([1200, 40, 0, 310, 95])
    x = np.array([[1100, 55, 3, 280, 102], [30, 2, 0, 11, 5]])
    z = {"total": int(x[0].sum()), "previous_cases": previous}
    for base_measure in ("congenial", "prior_congenial"):
        draws = WassersteinExponential(0.5, 2.0, base_measure=base_measure).release(
            x, z, random_seed=5, sweeps=MIN_SWEEPS, replicates=50
        )
        assert np.all(draws[:, 0].sum(axis=1) == z["total"])
        assert np.all(draws[:, 0] >= draws[:, 1]) and np.all(draws[:, 1] >= 0)
        assert len({d.tobytes() for d in draws}) > 40  # the chains moved
    same = WassersteinExponential(0.5, 2.0, base_measure="congenial")
    assert np.array_equal(same.release(x, z, random_seed=9), same.release(x, z, random_seed=9))


# -- inference --------------------------------------------------------------------------------


class CasesAndDeaths(pp.generators.DataModel):
    """cases ~ Multinomial(z['total'], shares), deaths_j | cases ~ Binomial(cases_j, p); theta = p."""

    def __init__(self, shares):
        self.shares = np.asarray(shares, dtype=float)

    def __call__(self, theta, z, rng):
        p = np.asarray(theta, dtype=float).reshape(-1)
        cases = rng.multinomial(z["total"], self.shares, size=p.size)
        return np.stack([cases, rng.binomial(cases, p[:, None])], axis=1)

    def logpmf(self, x, theta, z=None):
        x = np.asarray(x).reshape(len(x), 2, -1)
        p = np.asarray(theta, dtype=float).reshape(-1, 1, 1)
        log_cases = stats.multinomial.logpmf(x[:, 0], z["total"], self.shares)
        return log_cases[None] + stats.binom.logpmf(x[None, :, 1], x[None, :, 0], p).sum(axis=-1)

    def support(self, z=None, theta_dim=1):
        return congenial_tables(z["total"], self.shares.size)


def hand_posterior(y, z, epsilon, sigma, shares):
    """p(x | y, z) on the tables satisfying z, and E[p | y, z], with p ~ Beta(2, 2) integrated out by hand."""
    tables = congenial_tables(z["total"], len(shares))
    cases, deaths = tables[:, 0], tables[:, 1]
    d, c = deaths.sum(axis=1), cases.sum(axis=1)
    log_prior = (
        stats.multinomial.logpmf(cases, z["total"], shares)
        + np.log(special.comb(cases, deaths)).sum(axis=1)
        + special.betaln(2 + d, 2 + c - d)
        - special.betaln(2, 2)
    )
    y_index = next(i for i, t in enumerate(tables) if np.array_equal(t, y))
    likelihood = np.array([hand_pmf(x, tables, epsilon, sigma, 2)[y_index] for x in tables])
    weights = np.exp(log_prior) * likelihood
    weights /= weights.sum()
    return weights, float(weights @ ((2 + d) / (4 + c)))


def test_rejection_matches_the_exact_posterior_on_a_congenial_release():
    z = {"total": 5}
    mechanism = WassersteinExponential(2.0, 2.0, base_measure="congenial")
    model = pp.PPDModel(pp.priors.Beta(2, 2), CasesAndDeaths([0.6, 0.4]), mechanism, names="p")
    y = mechanism.release(np.array([[4, 1], [3, 0]]), z, random_seed=4)
    exact = pp.exact_posterior(model, y, z, random_seed=0)
    x_pmf, p_mean = hand_posterior(y, z, 2.0, 2.0, [0.6, 0.4])
    assert np.allclose(exact["exact"]["x_pmf"].values, x_pmf, atol=1e-5)
    assert float(exact["exact"]["theta_mean"][0]) == pytest.approx(p_mean, abs=1e-4)
    result = pp.rejection_sample(model, y, z, draws=3000, random_seed=8, progressbar=False)
    assert result.attrs["complete"]
    assert matches_exact(result, exact, "p")


def test_samplers_refuse_when_the_normalizer_cannot_be_enumerated():
    z = {"total": 200}  # C(209, 9) ~ 4e14 tables: far above ENUMERATION_LIMIT
    mechanism = WassersteinExponential(1.0, 2.0, base_measure="congenial")
    model = pp.PPDModel(pp.priors.Beta(2, 2), CasesAndDeaths(np.full(5, 0.2)), mechanism, names="p")
    x = model.simulate(np.array([0.1]), z, np.random.default_rng(0))[0]
    y = mechanism.release(x, z, random_seed=0)
    assert mechanism.log_bound(z, size=10) == math.inf
    with pytest.raises(ValueError, match="no finite bound"):
        pp.rejection_sample(model, y, z, draws=10, progressbar=False)
    with pytest.raises(ValueError, match="normalizer C\\(x\\) .* depends on x"):
        pp.importance_sample(model, y, z, draws=100, random_seed=0)


# -- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"sigma": math.inf}, "sigma"),
        ({"loss": "linf"}, "loss"),
        ({"base_measure": "flat"}, "base_measure"),
        ({"sweeps": 0}, "sweeps"),
        ({"method": "gibbs"}, "method"),
    ],
)
def test_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        WassersteinExponential(**{"epsilon": 1.0, "sigma": 2.0, **kwargs})


@pytest.mark.parametrize(
    "x, z, match",
    [
        ([[2, -1, 3], [0, 0, 0]], {"total": 4, "previous_cases": [1, 1, 1]}, "non-negative"),
        ([[2, 0.5, 1], [0, 0, 0]], {"total": 4, "previous_cases": [1, 1, 1]}, "integers"),
        ([2, 1, 1], {"total": 4, "previous_cases": [1, 1, 1]}, "shape"),
        ([[2, 1, 1], [0, 2, 0]], {"total": 4, "previous_cases": [1, 1, 1]}, "does not satisfy z"),
        ([[2, 1, 1], [0, 0, 0]], {"total": 5, "previous_cases": [1, 1, 1]}, "does not satisfy z"),
        ([[2, 1, 1], [0, 0, 0]], {"total": -4, "previous_cases": [1, 1, 1]}, "total"),
        ([[2, 1, 1], [0, 0, 0]], {"total": 4.5, "previous_cases": [1, 1, 1]}, "total"),
        ([[2, 1, 1], [0, 0, 0]], {"previous_cases": [1, 1, 1]}, "total"),
        ([[2, 1, 1], [0, 0, 0]], {"total": 4, "previous_cases": [1, 1]}, "previous_cases"),
        ([[2, 1, 1], [0, 0, 0]], {"total": 4}, "previous_cases"),
    ],
)
def test_bad_tables_and_public_information(x, z, match):
    mechanism = WassersteinExponential(1.0, 2.0, base_measure="prior_congenial")
    with pytest.raises(ValueError, match=match):
        mechanism.release(x, z)


def test_bad_releases_and_zero_concentrations():
    with pytest.raises(ValueError, match="alpha"):
        PriorCongenial(alpha=0)
    with pytest.raises(ValueError, match="pseudocount"):
        PriorCongenial(pseudocount=-1)
    z = {"total": 4, "previous_cases": [3, 0, 1]}
    x = np.array([[2, 1, 1], [0, 0, 0]])
    mechanism = WassersteinExponential(1.0, 2.0, base_measure="prior_congenial")
    with pytest.raises(ValueError, match="outside the support"):
        mechanism.logpdf([[2, 1, 2], [0, 0, 0]], x, z)
    with pytest.raises(ValueError, match="shape"):
        mechanism.logpdf([[2, 1, 1], [0, 0, 0]], np.zeros((2, 4)), z)
    with pytest.raises(ValueError, match="pseudocount > 0"):
        WassersteinExponential(1.0, 2.0, base_measure=PriorCongenial(pseudocount=0)).release(x, z)
    with pytest.raises(ValueError, match="replicates"):
        mechanism.release(x, z, replicates=0)


# -- the K-norm gradient mechanism ------------------------------------------------------------


def test_knorm_radius_is_gamma_and_direction_uniform():
    mechanism = KNormGradient(1.0, 0.5, [-np.inf] * 3, [np.inf] * 3)
    center = np.array([1.0, -2.0, 0.5])
    rng = np.random.default_rng(2)
    offsets = np.array([mechanism.release(center, random_seed=rng) for _ in range(3000)]) - center
    radius = np.linalg.norm(offsets, axis=1)
    assert stats.kstest(radius, stats.gamma(3, scale=1 / mechanism.rate).cdf).pvalue > 1e-3
    # in 3-D each coordinate of a uniform direction is Uniform(-1, 1) (Archimedes)
    for k in range(3):
        assert stats.kstest(offsets[:, k] / radius, stats.uniform(-1, 2).cdf).pvalue > 1e-3
    # the check has power: a radius from Gamma(2, rate) (d - 1 instead of d) fails
    assert stats.kstest(radius, stats.gamma(2, scale=1 / mechanism.rate).cdf).pvalue < 1e-6


def truncated_laplace_cdf(t, center, rate, low, high):
    """CDF of the density proportional to exp(-rate |y - center|) on [low, high]."""

    def mass_below(s):
        return np.where(s < center, np.exp(rate * (s - center)), 2 - np.exp(-rate * (s - center))) / rate

    return (mass_below(np.clip(t, low, high)) - mass_below(low)) / (mass_below(high) - mass_below(low))


@pytest.mark.parametrize("center", [0.3, -1.0])
def test_knorm_mean_density_and_sampler_in_one_dimension(center):
    mechanism = KNormGradient.mean(0.5, bound=2.0, n=3)  # Example 1: [-1, 1], sigma = 2 / 3
    assert mechanism.rate == pytest.approx(3 * 0.5 / (2 * 2.0))  # n eps / (2 D)
    total, _ = integrate.quad(lambda y: math.exp(mechanism.logpdf(y, center)[0]), -1, 1, points=[center])
    assert total == pytest.approx(1.0, abs=1e-10)
    rng = np.random.default_rng(4)
    draws = np.array([mechanism.release(center, random_seed=rng) for _ in range(2000)])
    cdf = lambda t: truncated_laplace_cdf(t, center, mechanism.rate, -1.0, 1.0)  # noqa: E731
    assert stats.kstest(draws, cdf).pvalue > 1e-3
    # the check has power: the untruncated Laplace density fails
    assert stats.kstest(draws, stats.laplace(center, 1 / mechanism.rate).cdf).pvalue < 1e-6
    assert mechanism.logpdf(0.0, np.linspace(-1, 1, 41)).max() <= mechanism.log_bound(size=1) + 1e-12


def test_knorm_count_density_and_sampler_in_two_dimensions():
    mechanism = KNormGradient.count(0.8, n=6, sensitivity=2.0, dim=2)  # [0, 6]^2, rate 0.2
    center = np.array([1.0, 4.5])
    density = lambda b, a: math.exp(mechanism.logpdf([a, b], center)[0])  # noqa: E731
    # the four quadrants around the center (the density has a cone there)
    cells = [((0, 1), (0, 4.5)), ((0, 1), (4.5, 6)), ((1, 6), (0, 4.5)), ((1, 6), (4.5, 6))]
    probabilities = [integrate.dblquad(density, a0, a1, b0, b1, epsabs=1e-8)[0] for (a0, a1), (b0, b1) in cells]
    assert sum(probabilities) == pytest.approx(1.0, abs=1e-7)
    rng = np.random.default_rng(6)
    draws = np.array([mechanism.release(center, random_seed=rng) for _ in range(4000)])
    cell = 2 * (draws[:, 0] > 1) + (draws[:, 1] > 4.5)
    assert chi_square_pvalue(cell, np.arange(4), probabilities) > 1e-3
    corners = np.array([[0, 0], [6, 6], [0, 6], [3, 3], [1, 4.5]], dtype=float)
    assert np.exp(mechanism.logpdf(center, corners)).max() <= math.exp(mechanism.log_bound(size=2)) * (1 + 1e-12)


def test_knorm_refuses_what_it_cannot_compute():
    box = KNormGradient.count(1.0, n=10, dim=3)
    assert box.log_bound(size=3) == math.inf
    with pytest.raises(ValueError, match="normalizer Z\\(x\\) depends on x"):
        box.logpdf([1.0, 2.0, 3.0], [1.0, 1.0, 1.0])
    assert np.all((0 <= box.release([1.0, 9.0, 5.0], random_seed=0)) & (box.release([1.0, 9.0, 5.0]) <= 10))
    with pytest.raises(ValueError, match="x must lie in the output box"):
        box.release([11.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="epsilon"):
        KNormGradient(0.0, 1.0)
    with pytest.raises(ValueError, match="lower must be below upper"):
        KNormGradient(1.0, 1.0, [0.0, 2.0], [1.0, 1.0])
