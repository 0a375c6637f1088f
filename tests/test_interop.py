"""ppdinfer.interop: OpenDP measurements become ppdinfer mechanisms with the same noise law.

OpenDP's samplers cannot be seeded, so the checks on its releases are statistical, with
thresholds (p > 1e-4 for the right law, p < 1e-4 for a wrong scale) that a correct conversion
fails with probability about 1e-4 and a wrong one passes with negligible probability.
"""

import math

import numpy as np
import pytest
from release_checks import assert_rejection_matches_exact_posterior, chi_square_p_value
from scipy import stats

import ppdinfer as pp
from ppdinfer.interop import BOX_TOLERANCE, from_noise, from_opendp
from ppdinfer.mechanisms import DiscreteGaussian, DiscreteLaplace, Gaussian, Laplace, PostProcessedRelease

dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")

INTEGERS = dp.atom_domain(T=int), dp.absolute_distance(T=int)
FLOATS = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
INTEGER_VECTORS = dp.vector_domain(dp.atom_domain(T=int))
RECORDS = dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()
UNSIGNED = dp.atom_domain(T="u32"), dp.absolute_distance(T="u32")
RELEASES = 200_000


@pytest.mark.parametrize(
    "make, metric, family, scale, wrong_scale",
    [
        (dp.m.make_laplace, dp.l1_distance(T=int), "laplace", 2.0, 2.5),
        (dp.m.make_gaussian, dp.l2_distance(T=int), "gaussian", 1.5, 1.8),
    ],
)
def test_opendp_integer_releases_follow_the_converted_pmf(make, metric, family, scale, wrong_scale):
    measurement = make(INTEGER_VECTORS, metric, scale=scale)
    mechanism = from_opendp(measurement)
    x = 7
    noise = np.asarray(measurement([x] * 20_000)) - x
    assert chi_square_p_value(noise, mechanism, 6) > 1e-4
    assert chi_square_p_value(noise, from_noise(family, wrong_scale, integer=True), 6) < 1e-4


def test_opendp_float_laplace_releases_follow_the_converted_density():
    float_vectors = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    measurement = dp.m.make_laplace(float_vectors, dp.l1_distance(T=float), scale=0.5)
    mechanism = from_opendp(measurement)
    noise = np.asarray(measurement([3.0] * 20_000)) - 3.0
    e = np.linspace(-3, 3, 7)
    reference = stats.laplace(scale=0.5)
    np.testing.assert_allclose(mechanism.logpdf(0, e), reference.logpdf(e), rtol=1e-12)
    assert stats.kstest(noise, reference.cdf).pvalue > 1e-4
    assert stats.kstest(noise, stats.laplace(scale=0.6).cdf).pvalue < 1e-4


@pytest.mark.parametrize("scale", [0.7, 2.0, 13.0])
def test_scale_conversion_is_exact_in_log_pmf_ratios(scale):
    k = np.arange(-5, 6)
    for mechanism, log_kernel in [
        (from_noise("laplace", scale, integer=True), -np.abs(k) / scale),
        (from_noise("laplace", scale, integer=False), -np.abs(k) / scale),
        (from_noise("gaussian", scale, integer=True), -(k**2) / (2 * scale**2)),
        (from_noise("gaussian", scale, integer=False), -(k**2) / (2 * scale**2)),
    ]:
        ratios = mechanism.logpdf(0, k) - mechanism.logpdf(0, np.zeros(1))
        np.testing.assert_allclose(ratios, log_kernel, rtol=1e-14, atol=1e-14)


def test_from_opendp_reads_the_family_domain_and_scale():
    # the epsilon OpenDP states at d_in = 1 (1 / scale), the sensitivity epsilon * scale
    assert from_opendp(dp.m.make_laplace(*INTEGERS, scale=2.0)) == DiscreteLaplace(0.5, 1.0)
    assert from_opendp(dp.m.make_geometric(*INTEGERS, scale=2.0)) == DiscreteLaplace(0.5, 1.0)
    assert from_opendp(INTEGERS >> dp.m.then_gaussian(scale=3.0)) == DiscreteGaussian(3.0)
    noise = dp.m.make_noise(*INTEGERS, dp.zero_concentrated_divergence(), scale=3.0)
    assert from_opendp(noise) == DiscreteGaussian(3.0)
    assert from_opendp(dp.m.make_laplace(*FLOATS, scale=0.5)) == Laplace(2.0, 1.0)
    assert from_opendp(dp.m.make_gaussian(*FLOATS, scale=0.5)) == Gaussian(0.5)


def test_privacy_of_the_opendp_measurement_matches_the_converted_rate():
    measurement = dp.m.make_laplace(*INTEGERS, scale=4.0)
    mechanism = from_opendp(measurement)
    assert math.isclose(measurement.map(3), 3 * mechanism.rate, rel_tol=1e-12)


def test_posterior_from_an_opendp_release_matches_the_exact_posterior():
    measurement = dp.m.make_laplace(*INTEGERS, scale=2.0)
    assert_rejection_matches_exact_posterior(from_opendp(measurement), measurement(20))


@pytest.mark.parametrize(
    "build, unsupported",
    [
        (lambda: dp.m.make_randomized_response_bool(0.75), "from_noise"),
        (lambda: dp.m.make_laplace(*INTEGERS, scale=0.0), "scale must be positive"),
        (lambda: dp.m.make_randomized_response_bool(0.75), "make_randomized_response_bool"),
        (lambda: dp.m.make_geometric(*INTEGERS, scale=2.0, bounds=(0, 10)), "bounds"),
        (lambda: dp.m.make_laplace(*FLOATS, scale=2.0, k=0), "k=0"),
        (lambda: object(), "object"),
    ],
)
def test_unsupported_measurements_raise_naming_what(build, unsupported):
    with pytest.raises(ValueError, match=unsupported):
        from_opendp(build())


def test_from_noise_rejects_an_unknown_family_and_a_bad_scale():
    with pytest.raises(ValueError, match="distribution"):
        from_noise("cauchy", 1.0, integer=True)
    with pytest.raises(ValueError, match="scale"):
        from_noise("laplace", -1.0, integer=True)


# --- unsigned integers: OpenDP saturates at 0 (issue 25) -------------------------------------------


def published_p_value(published, mechanism, x):
    """Chi-square of published values against the converted law at x: bins 0..top and one above, each top bin
    expecting at least 5 counts."""
    values = np.arange(0, 200)
    pmf = np.exp(np.array([mechanism.logpdf(v, [x])[0] for v in values]))
    top = int(np.flatnonzero(np.cumsum(pmf[::-1])[::-1] * published.size >= 5)[-1]) - 1
    observed = [np.sum(published == v) for v in range(top + 1)] + [np.sum(published > top)]
    expected = np.append(pmf[: top + 1], 1 - pmf[: top + 1].sum()) * published.size
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize(
    "make, metric, scale, p_zero",
    [
        (dp.m.make_gaussian, dp.l2_distance(T="u32"), 3.0, 0.4335),
        (dp.m.make_laplace, dp.l1_distance(T="u32"), 2.0, 0.3775),
    ],
)
def test_opendp_unsigned_releases_are_clipped_at_zero(make, metric, scale, p_zero):
    """200,000 OpenDP releases of x = 1 on u32 follow max(x + K, 0); the raw noise law (the old conversion) fails."""
    clipped = from_opendp(make(*UNSIGNED, scale=scale), x_max=60)
    assert isinstance(clipped, PostProcessedRelease)
    assert np.all(1 - clipped.box_mass(np.array([0, 30, 60])) <= BOX_TOLERANCE)
    published = np.asarray(make(dp.vector_domain(UNSIGNED[0]), metric, scale=scale)([1] * RELEASES))
    assert published.min() == 0
    assert published_p_value(published, clipped, 1) > 1e-4
    assert round(float(np.exp(clipped.logpdf(0, [1])[0])), 4) == p_zero  # P(K <= -1)
    raw = from_noise("gaussian" if make is dp.m.make_gaussian else "laplace", scale, integer=True)
    assert abs(np.mean(published == 0) - p_zero) < 4.5 * math.sqrt(p_zero * (1 - p_zero) / RELEASES)
    assert np.mean(published == 0) > 2 * float(np.exp(raw.logpdf(0, [1])[0]))  # raw P(y = 0): 0.126, 0.116


def test_posterior_from_a_clipped_opendp_release():
    """The issue's case: u32 Gaussian noise of scale 3, Beta(1, 1), Binomial(50), y = 0: E[p | y] = 0.0504, not 0.0595."""
    mechanism = from_opendp(dp.m.make_gaussian(*UNSIGNED, scale=3.0), x_max=50)
    posteriors = [
        pp.exact_posterior(pp.PPDModel(pp.priors.Beta(1, 1), pp.generators.Binomial(50), m, names="p"), 0)
        for m in (mechanism, DiscreteGaussian(3.0))
    ]
    means = [float(p["exact"]["theta_mean"].values[0]) for p in posteriors]
    assert [round(m, 4) for m in means] == [0.0504, 0.0595]
    assert_rejection_matches_exact_posterior(mechanism, 0)


def test_unsigned_measurements_need_a_range_and_one_coordinate():
    with pytest.raises(ValueError, match="x_max is needed"):
        from_opendp(dp.m.make_laplace(*UNSIGNED, scale=2.0))
    bounded = dp.m.make_laplace(dp.atom_domain(T="u32", bounds=(0, 100)), UNSIGNED[1], scale=2.0)
    assert from_opendp(bounded).box[-1, 0] > 100  # the domain's bound is x_max
    with pytest.raises(ValueError, match="atom_domain"):
        from_opendp(dp.m.make_laplace(dp.vector_domain(UNSIGNED[0]), dp.l1_distance(T="u32"), scale=2.0), x_max=5)
    with pytest.raises(ValueError, match="x_max must be non-negative"):
        from_opendp(dp.m.make_laplace(*UNSIGNED, scale=2.0), x_max=-1)
    with pytest.raises(ValueError, match="saturates"):  # near 2^32 - 1 OpenDP saturates too
        from_opendp(dp.m.make_laplace(*UNSIGNED, scale=2.0), x_max=2**32 - 10)
    with pytest.raises(ValueError, match="box of"):
        from_opendp(dp.m.make_laplace(*UNSIGNED, scale=2.0), x_max=10**7)


# --- chains and Context queries (issue 25) ---------------------------------------------------------


def test_chain_of_a_transformation_and_noise_follows_the_noise_on_the_statistic():
    """count_by_categories >> laplace: one call gives 200,000 noisy counts; the noise is the inner measurement's."""
    categories = list(range(RELEASES - 1))
    chain = RECORDS >> dp.t.then_count_by_categories(categories=categories) >> dp.m.then_laplace(scale=2.0)
    mechanism = from_opendp(chain)
    assert mechanism == DiscreteLaplace(0.5, 1.0)  # epsilon 1/2 at d_in = 1, sensitivity 1
    counts = np.bincount([1, 1, 2, 5], minlength=RELEASES)  # the statistic, the null category last
    noise = np.asarray(chain([1, 1, 2, 5])) - counts
    assert noise.size == RELEASES
    assert chi_square_p_value(noise, mechanism, 6) > 1e-4
    assert chi_square_p_value(noise, from_noise("laplace", 2.3, integer=True), 6) < 1e-4


def test_clamp_sum_chain_reads_the_noise_and_the_sum_sensitivity():
    chain = RECORDS >> dp.t.then_clamp((0, 10)) >> dp.t.then_sum() >> dp.m.then_laplace(scale=5.0)
    assert from_opendp(chain) == DiscreteLaplace(2.0, 10.0)  # OpenDP's epsilon 2, the sum's sensitivity 10
    assert chain.map(1) == 10 / 5.0  # sensitivity 10, scale 5
    data = [3, 12, 7]  # clamped sum 20
    noise = np.array([chain(data) for _ in range(20_000)]) - 20
    assert chi_square_p_value(noise, from_opendp(chain), 8) > 1e-4
    floats = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance())
    float_sum = from_opendp(floats >> dp.t.then_clamp((0.0, 10.0)) >> dp.t.then_sum() >> dp.m.then_laplace(2.0))
    assert isinstance(float_sum, Laplace) and float_sum.rate == pytest.approx(1 / 2.0, rel=1e-15)


def test_context_queries_convert_with_the_scale_the_context_found():
    data = [1, 1, 2, 5]
    context = dp.Context.compositor(
        data=data, privacy_unit=dp.unit_of(contributions=1), privacy_loss=dp.loss_of(epsilon=1.0), split_evenly_over=2
    )
    query = context.query().count_by_categories(categories=list(range(RELEASES - 1))).laplace()
    mechanism = from_opendp(query)
    assert mechanism == DiscreteLaplace(0.5, 1.0)  # eps 1/2 each, sensitivity 1
    noise = np.asarray(query.release()) - np.bincount(data, minlength=RELEASES)
    assert chi_square_p_value(noise, mechanism, 6) > 1e-4
    count = context.query().count().laplace()
    assert from_opendp(count) == DiscreteLaplace(0.5, 1.0)
    assert_rejection_matches_exact_posterior(from_opendp(count), count.release())
    floats = dp.vector_domain(dp.atom_domain(T=float, nan=False))
    gaussian = dp.Context.compositor(
        data=[1.0, 4.0],
        privacy_unit=dp.unit_of(contributions=1),
        domain=floats,
        privacy_loss=dp.loss_of(epsilon=1.0, delta=1e-7),
        split_evenly_over=1,
    )
    mechanism = from_opendp(gaussian.query().clamp((0.0, 10.0)).sum().gaussian())  # under make_fix_delta
    assert isinstance(mechanism, Gaussian)
    rho_context = dp.Context.compositor(
        data=[1.0, 4.0],
        privacy_unit=dp.unit_of(contributions=1),
        domain=floats,
        privacy_loss=dp.loss_of(rho=0.5),
        split_evenly_over=1,
    )
    sigma = from_opendp(rho_context.query().clamp((0.0, 10.0)).sum().gaussian()).sigma
    assert sigma == pytest.approx(10.0, rel=1e-7)  # 10 / sqrt(2 rho); OpenDP adds float-sum rounding slack


# --- the guarantee OpenDP states (issue 32, item 6) ---------------------------------------------------


def test_context_query_states_opendps_epsilon_for_its_share_of_the_budget():
    """epsilon 1 split over two queries: each is 1/2-DP, and the mechanism says so (not epsilon=1.0)."""
    context = dp.Context.compositor(
        data=[1, 5, 7],
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=2,
    )
    query = context.query().count().laplace()
    stated = query.resolve().map(1)
    mechanism = from_opendp(query)
    assert mechanism.guarantee().definition == "pure"
    assert mechanism.guarantee().epsilon == stated == 0.5
    assert "OpenDP" in mechanism.guarantee().note
    assert mechanism.parameters()["epsilon"] == stated  # the printed epsilon is the stated one
    assert mechanism.rate == 1 / 2.0  # the same noise: scale 2
    # a privacy unit of two contributions: OpenDP states the loss at d_in = 2
    twice = dp.Context.compositor(
        data=[1, 5, 7],
        privacy_unit=dp.unit_of(contributions=2),
        privacy_loss=dp.loss_of(epsilon=1.0),
        split_evenly_over=2,
    )
    assert from_opendp(twice.query().count().laplace()).guarantee().epsilon == pytest.approx(0.5, rel=1e-12)


def test_mean_chain_states_opendps_epsilon_per_record():
    """A clamp-mean chain on 10 records at epsilon 0.25 per record (d_in = 2: one record changed)."""
    sized = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=10), dp.symmetric_distance()
    chain = sized >> dp.t.then_clamp((0.0, 10.0)) >> dp.t.then_mean() >> dp.m.then_laplace(scale=4.0)
    mechanism = from_opendp(chain, d_in=2)
    assert mechanism.guarantee().epsilon == chain.map(2) == pytest.approx(0.25)
    assert mechanism.parameters()["epsilon"] == chain.map(2)
    assert mechanism.rate == pytest.approx(1 / 4.0, rel=1e-15)  # the noise is unchanged
    context = dp.Context.compositor(
        data=[1.0] * 10,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=0.25),
        split_evenly_over=1,
        domain=dp.vector_domain(dp.atom_domain(T=float, nan=False), size=10),
    )
    query = context.query().clamp((0.0, 10.0)).mean().laplace()
    assert from_opendp(query).guarantee().epsilon == query.resolve().map(1) == pytest.approx(0.25)


def test_zcdp_and_approximate_opendp_guarantees_are_stated():
    gaussian = dp.m.make_gaussian(*INTEGERS, scale=2.0)
    assert from_opendp(gaussian).guarantee().rho == gaussian.map(1)
    approximate = dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(gaussian), 1e-6)
    stated = from_opendp(approximate).guarantee()
    assert (stated.definition, stated.epsilon, stated.delta) == ("approximate", *approximate.map(1))
    with pytest.raises(ValueError, match="d_in"):
        from_opendp(gaussian, d_in="one")


def test_diffprivlib_and_tumult_conversions_state_the_source_guarantee():
    from ppdinfer.interop import from_tumult

    pure = from_tumult({"noise_mechanism": "GEOMETRIC", "noise_parameter": 4.0}, budget={"epsilon": 0.25})
    assert pure == DiscreteLaplace(0.25, 1.0) and pure.guarantee().epsilon == 0.25
    assert from_tumult({"noise_mechanism": "GEOMETRIC", "noise_parameter": 4.0}).guarantee().definition == "unstated"
    rho = from_tumult({"noise_mechanism": "DISCRETE_GAUSSIAN", "noise_parameter": 4.0}, budget={"rho": 0.125})
    assert rho.guarantee().rho == 0.125 and rho == DiscreteGaussian(2.0)
    diffprivlib = pytest.importorskip("diffprivlib.mechanisms")
    from ppdinfer.interop import from_diffprivlib

    stated = from_diffprivlib(diffprivlib.Gaussian(epsilon=0.5, delta=1e-5, sensitivity=2.0)).guarantee()
    assert (stated.definition, stated.epsilon, stated.delta, stated.sensitivity) == ("approximate", 0.5, 1e-5, 2.0)
    laplace = from_diffprivlib(diffprivlib.Laplace(epsilon=1.0, delta=0.1, sensitivity=1.0)).guarantee()
    assert (laplace.epsilon, laplace.delta) == (1.0, 0.1)
