"""The gamma-Poisson window summed by recurrence (ppdinfer.kernels.windows, ppdinfer.pymc.window_ops; issue 34):
value and gradient against the plain logsumexp, at ordinary and extreme parameters (the rescaling), and the
marginal model's log density and gradient with and without it."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from ppdinfer.kernels.windows import (
    digamma,
    gamma_poisson_window,
    gamma_poisson_window_draws,
    gamma_poisson_window_value,
)
from ppdinfer.mechanisms import Gaussian, Laplace
from ppdinfer.pymc import Release
from ppdinfer.pymc.marginal import marginalize
from ppdinfer.pymc.window_ops import gamma_poisson_window_logp


def _window(units, width, noise, rng):
    lo = rng.integers(0, 400, units)
    k = lo[None] + np.arange(width)[:, None]
    y = lo + width / 2 + rng.normal(0, 3, units)
    c = noise(y, k) - special.gammaln(k + 1.0)
    return lo, k, c


def _plain(shape, log_q, k, c):
    return special.logsumexp(special.gammaln(k + shape) + k * log_q + c, axis=0)


@pytest.mark.parametrize(
    "noise", [lambda y, k: stats.norm.logpdf(y, k, 4.2), lambda y, k: stats.laplace.logpdf(y, k, 2.0)]
)
# shape 1e6: the terms climb past 1e250 from the noise's peak (the prior's mass lies far above the window): the
# accumulators' rescaling
@pytest.mark.parametrize(
    "shape, q", [(2.5, 0.9), (0.05, 0.999), (300.0, 1e-6), (1e6, 0.9), (1.0, 1 - 1e-12), (5e3, 0.5)]
)
def test_value_and_gradient_equal_the_plain_sum(noise, shape, q):
    rng = np.random.default_rng(3)
    lo, k, c = _window(40, 61, noise, rng)
    shapes = np.full(40, shape) * np.exp(rng.normal(0, 0.1, 40))
    log_q = np.full(40, np.log(q))
    peak = np.argmax(c, axis=0)
    args = (shapes, log_q, lo, np.exp(np.diff(c, axis=0)), peak, c[peak, np.arange(40)])
    value, d_shape, d_log_q = gamma_poisson_window(*args)
    plain = _plain(shapes, log_q, k, c)
    log_t = special.gammaln(k + shapes) + k * log_q + c
    above_peak = (log_t.max(axis=0) - log_t[peak, np.arange(40)]).max()
    assert (above_peak > np.log(1e250)) == (shape == 1e6)  # shape 1e6 rescales the accumulators, the others not
    assert value == pytest.approx(plain.sum(), rel=1e-12, abs=1e-9)
    assert gamma_poisson_window_value(*args) == pytest.approx(value, rel=1e-13, abs=1e-10)
    weights = np.exp(log_t - plain)
    # the reference's own error: its log terms carry |log t| x eps each (1e7 at shape 1e6, a few thousand otherwise)
    slack = 50 * np.finfo(float).eps * np.abs(log_t).max()
    psi = special.digamma(k + shapes)
    assert np.allclose(d_shape, (weights * psi).sum(axis=0), rtol=1e-9, atol=1e-9 + slack * np.abs(psi).max())
    assert np.allclose(d_log_q, (weights * k).sum(axis=0), rtol=1e-10, atol=1e-8 + slack * k.max())


def test_digamma():
    x = np.concatenate([np.geomspace(1e-3, 1e6, 200), np.arange(1.0, 30.0)])
    assert np.allclose([digamma(v) for v in x], special.digamma(x), rtol=1e-13, atol=1e-13)


def test_the_op_gradient_through_pytensor():
    rng = np.random.default_rng(5)
    lo, k, c = _window(6, 30, lambda y, k: stats.norm.logpdf(y, k, 2.5), rng)
    shape, log_q = pt.dscalar("shape"), pt.dscalar("log_q")
    graph = gamma_poisson_window_logp(shape, log_q, c, lo)
    grads = pt.grad(graph, [shape, log_q])
    at = {shape: 3.1, log_q: np.log(0.8)}
    value, g_shape, g_log_q = (float(v.eval(at)) for v in (graph, *grads))
    h = 1e-6
    plain = lambda s, q: _plain(s, q, k, c).sum()  # noqa: E731
    assert value == pytest.approx(plain(3.1, np.log(0.8)), rel=1e-12)
    assert g_shape == pytest.approx((plain(3.1 + h, np.log(0.8)) - plain(3.1 - h, np.log(0.8))) / (2 * h), rel=1e-6)
    assert g_log_q == pytest.approx((plain(3.1, np.log(0.8) + h) - plain(3.1, np.log(0.8) - h)) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("mechanism", [Gaussian(4.0), Laplace(2.0)])
def test_marginal_model_with_and_without_the_recurrence(mechanism):
    exposure = np.array([20.0, 50.0, 80.0, 120.0])
    with pm.Model() as model:
        a = pm.Gamma("a", 2.0, 1.0)
        m = pm.Gamma("m", 2.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / m, shape=4)
        x = pm.Poisson("x", rate * exposure)
        Release("y", mechanism, x, observed=[41.2, 97.0, 170.3, 236.9])
    functions = []
    for recurrence in (True, False):
        marginal = marginalize(model, recurrence=recurrence).model
        functions.append(marginal.logp_dlogp_function(ravel_inputs=True))
    for point in ([0.3, 0.9], [-2.0, 2.5], [3.0, -1.0]):
        (v1, g1), (v2, g2) = (f(np.array(point)) for f in functions)
        assert v1 == pytest.approx(v2, rel=1e-12) and np.allclose(g1, g2, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("shape, q", [(2.5, 0.9), (300.0, 1e-6), (1e7, 0.9)])  # the last: from logarithms
def test_window_draws_follow_the_terms(shape, q):
    rng = np.random.default_rng(8)
    lo, k, c = _window(3, 61, lambda y, k: stats.norm.logpdf(y, k, 4.2), rng)
    peak = np.argmax(c, axis=0)
    log_t = special.gammaln(k + shape) + k * np.log(q) + c
    p = np.exp(log_t - special.logsumexp(log_t, axis=0))
    above_peak = (log_t.max(axis=0) - log_t[peak, np.arange(3)]).max()  # how far the recurrence's terms climb
    assert (above_peak > np.log(1e250)) == (shape == 1e7)  # shape 1e7 takes the logarithms' path, the others not
    n = 40_000
    draws = gamma_poisson_window_draws(
        np.full((n, 3), shape), np.full((n, 3), np.log(q)), lo, np.exp(np.diff(c, axis=0)), peak, c, rng.random((n, 3))
    )
    for i in range(3):
        counts = np.bincount(draws[:, i] - lo[i], minlength=61)
        expected = n * p[:, i]
        big = expected > 5
        observed = np.append(counts[big], counts[~big].sum())
        assert stats.chisquare(observed, np.append(expected[big], expected[~big].sum())).pvalue > 1e-3
