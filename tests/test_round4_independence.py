"""Issue 41, items 5-6: the independence Metropolis sampler checks that its proposal covers the posterior. Mode
searches from dispersed starts find both modes of a bimodal summed-out posterior and decline; the importance ratios'
Pareto k declines a Cauchy-like posterior; well-behaved posteriors (the hospital model, a t posterior with 5 df, a
wide normal one, whose climbs stop early) are accepted with the checks' figures in the attrs. References by
quadrature or in closed form."""

from __future__ import annotations

import functools
import re

import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats
from test_pymc_independence import _hospitals

import ppdinfer.pymc as ppm
import ppdinfer.pymc.independence as independence
from ppdinfer.mechanisms import Gaussian
from ppdinfer.pymc.independence import Declined, sample_independence
from ppdinfer.pymc.marginal import marginalize

QUIET = {"progressbar": False, "convergence_checks": False}
CHECKS = ("mode_searches", "modes", "tuning_acceptance", "pareto_k_tuning", "max_ratio_tuning", "pareto_k", "max_ratio")


def _bimodal() -> pm.Model:
    """theta ~ N(0, 5), x ~ Poisson(theta^2 + 0.1), y = x + N(0, 2) observed at 25: theta near +-5."""
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 5.0)
        x = pm.Poisson("x", theta**2 + 0.1)
        ppm.Release("y", Gaussian(2.0), x, observed=25.0)
    return model


@functools.cache
def _bimodal_exact() -> tuple[float, float, float]:
    """(P(theta > 0 | y), the modes of theta | y below and above 0) on a grid, x summed over 0..150 (up to 62
    noise sds above y)."""
    theta = np.linspace(-12.0, 12.0, 12_001)
    k = np.arange(151)[:, None]
    log_post = stats.norm.logpdf(theta, 0.0, 5.0) + special.logsumexp(
        stats.poisson.logpmf(k, theta**2 + 0.1) + stats.norm.logpdf(25.0, k, 2.0), axis=0
    )
    w = np.exp(log_post - log_post.max())
    below, above = theta < 0, theta > 0
    modes = theta[below][np.argmax(w[below])], theta[above][np.argmax(w[above])]
    return float(w[above].sum() / w.sum()), float(modes[0]), float(modes[1])


def _run(model: pm.Model, seed: int, draws: int = 1000):
    """(the reason it declined, None) or (None, the tree)."""
    try:
        return None, sample_independence(model, draws=draws, tune=300, chains=2, random_seed=seed, **QUIET)
    except Declined as why:
        return str(why), None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bimodal_summed_out_posterior_declines_naming_both_modes(seed):
    """Before: P(theta > 0) = 1.0 (or 0.0) against 0.5, every chain started at the one mode found."""
    exact, low, high = _bimodal_exact()
    assert exact == pytest.approx(0.5, abs=1e-9)
    why, tree = _run(marginalize(_bimodal()).model, seed)
    if tree is not None:
        got = float((tree["posterior"]["theta"] > 0).mean())
        pytest.fail(f"not declined: P(theta > 0) = {got:.3f} against {exact:.3f} by quadrature")
    assert "different modes" in why, why
    found = sorted(float(value) for value in re.findall(r"theta=(-?[\d.]+)", why))
    assert found == pytest.approx([low, high], abs=0.02), (why, low, high)


def test_bimodal_declines_through_sample():
    with _bimodal():
        with pytest.raises(ValueError, match=r"the sampler declined: the \d+ mode searches .* 2 different modes"):
            ppm.sample(marginal_step="independence", draws=200, tune=100, chains=2, random_seed=3, progressbar=False)


def test_flat_prior_searches_from_wide_starts():
    """A Flat prior cannot be drawn: the dispersed starts are wide jitters of the initial point, and they find both
    modes at +-3 (before: the two chains' starts within 1 of 0 climbed to the same one for this seed)."""
    with pm.Model() as model:
        mu = pm.Flat("mu")
        pm.Potential("two_modes", pm.logp(pm.NormalMixture.dist(w=[0.5, 0.5], mu=[-3.0, 3.0], sigma=0.5), mu))
    why, tree = _run(model, seed=2, draws=200)
    assert tree is None and "2 different modes" in why, (why, tree and float((tree["posterior"]["mu"] > 0).mean()))


def _cauchy_like() -> pm.Model:
    """nu ~ N(0, 100) and one Cauchy observation at 3: a posterior with Cauchy tails up to |nu| ~ 100."""
    with pm.Model() as model:
        nu = pm.Normal("nu", 0.0, 100.0)
        pm.Cauchy("y", nu, 1.0, observed=[3.0])
    return model


def _cauchy_like_tail() -> float:
    """P(|nu - 3| > 10 | y) by quadrature."""

    def density(nu):
        return stats.norm.pdf(nu, 0.0, 100.0) * stats.cauchy.pdf(3.0, nu, 1.0)

    pieces = [integrate.quad(density, a, b, limit=200)[0] for a, b in ((-np.inf, -7.0), (-7.0, 13.0), (13.0, np.inf))]
    return (pieces[0] + pieces[2]) / sum(pieces)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_heavy_tailed_posterior_declines_on_the_importance_ratios(seed):
    """Before: acceptance about 0.8 and P(|nu - 3| > 10) = 0.000-0.043 against 0.056, no warning."""
    exact = _cauchy_like_tail()
    assert 0.05 < exact < 0.07
    why, tree = _run(_cauchy_like(), seed)
    if tree is not None:
        got = float((np.abs(tree["posterior"]["nu"] - 3.0) > 10).mean())
        pytest.fail(f"not declined: P(|nu - 3| > 10) = {got:.4f} against {exact:.4f} by quadrature")
    assert "does not cover the posterior's tails" in why and "Pareto k" in why, why


def _check_figures(attrs) -> dict:
    figures = {name: attrs[f"ppdinfer_independence_{name}"] for name in CHECKS}
    assert figures["mode_searches"] >= 8 and figures["modes"] == 1, figures
    assert figures["pareto_k"] <= 0.7 or figures["max_ratio"] <= 10, figures
    return figures


def test_hospital_posterior_accepted_with_its_checks_recorded():
    with _hospitals():
        idata = ppm.sample(draws=1000, tune=300, chains=2, random_seed=11, progressbar=False,
                           compute_convergence_checks=False)  # fmt: skip
    post = idata["posterior"]
    assert post.attrs["ppdinfer_step"] == "independence"
    figures = _check_figures(post.attrs)
    assert figures["pareto_k"] < 0.5 and figures["max_ratio"] < 5 and figures["tuning_acceptance"] > 0.6, figures
    assert "Pareto k of the importance ratios" in post.attrs["ppdinfer_step_reason"]


def test_moderately_heavy_tails_are_accepted_and_right():
    """A t posterior with 5 df (ratios to the proposal's 10 df unbounded, but with a tail light enough: k 0.5) is
    kept, and its tail probability is right (closed form)."""
    with pm.Model() as model:
        pm.StudentT("nu", nu=5.0, mu=0.0, sigma=1.0)
    tree = sample_independence(model, draws=4000, tune=300, chains=2, random_seed=4, **QUIET)
    _check_figures(tree["posterior"].attrs)
    nu = tree["posterior"]["nu"].values.ravel()
    exact = 2 * stats.t.sf(3.0, 5.0)
    got = float((np.abs(nu) > 3).mean())
    assert abs(got - exact) < 4 * np.sqrt(exact * (1 - exact) / (nu.size / 2)), (got, exact)


def test_a_climb_stopped_early_is_not_a_second_mode():
    """A wide normal posterior (sd 1000): BFGS stops where the gradient is below 1e-3, up to about one sd from the
    mode, so dispersed climbs end apart; no valley lies between them, and the sampler runs (sd in closed form)."""
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 1e5)
        pm.Normal("y", mu, 1000.0, observed=[0.0])
    tree = sample_independence(model, draws=2000, tune=300, chains=2, random_seed=5, **QUIET)
    _check_figures(tree["posterior"].attrs)
    sd = (1e-10 + 1e-6) ** -0.5
    mu_draws = tree["posterior"]["mu"].values
    assert float(mu_draws.std()) == pytest.approx(sd, rel=0.06)
    assert abs(float(mu_draws.mean())) < 0.1 * sd


def test_after_ctrl_c_a_failed_coverage_check_warns_and_keeps_the_draws(monkeypatch, caplog):
    """Declining would make ``sample`` start NUTS after the user's Ctrl-C: the check warns instead."""
    original = independence._Chains.run

    def interrupted_at_the_end(self, proposal, n, thin=1):
        run = original(self, proposal, n, thin)
        self.interrupted = n == 1000  # the kept draws' run
        return run

    monkeypatch.setattr(independence._Chains, "run", interrupted_at_the_end)
    with caplog.at_level("WARNING", logger="pymc"):
        why, tree = _run(_cauchy_like(), seed=2)
    assert why is None and tree["posterior"].attrs["interrupted"], why
    assert tree["posterior"].attrs["ppdinfer_independence_pareto_k"] > 0.7
    assert "(interrupted): the proposal does not cover the posterior's tails" in caplog.text
