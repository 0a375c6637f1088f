"""The independence Metropolis sampler of summed-out models (ppdinfer.pymc.independence; issue 34): the hospital
model's collapsed posterior against 2-D quadrature, a skewed posterior's moments, when it declines and what runs
instead, interruption, reproducibility, the arguments, and the latents' inverse-CDF draws."""

from __future__ import annotations

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import ppdinfer.pymc as ppm
import ppdinfer.pymc.independence as independence
from ppdinfer.kernels.resampling import draw_columns
from ppdinfer.mechanisms import Gaussian
from ppdinfer.pymc.independence import Declined, fit_mode, sample_independence

QUIET = {"progressbar": False, "compute_convergence_checks": False}
EXPOSURE = np.array([20.0, 50.0, 80.0, 120.0])
Y = np.array([41.2, 97.0, 170.3, 236.9])
SIGMA = 4.0


def _hospitals() -> pm.Model:
    with pm.Model(coords={"hospital": np.arange(4)}) as model:
        a = pm.Gamma("a", 2.0, 1.0)
        m = pm.Gamma("m", 2.0, 1.0)
        rate = pm.Gamma("rate", alpha=a, beta=a / m, dims="hospital")
        x = pm.Poisson("x", rate * EXPOSURE, dims="hospital", initval=np.array([40, 100, 160, 240]))
        ppm.Release("y", Gaussian(SIGMA), x, observed=Y, dims="hospital")
    return model


def _hospitals_exact():
    """E[a], E[m], E[x_i], E[rate_i] given y by quadrature over (log a, log m) and a sum over every x_i."""
    log_a, log_m = np.meshgrid(np.linspace(-4, 5, 181), np.linspace(-3, 3, 121), indexing="ij")
    a, m = np.exp(log_a)[..., None, None], np.exp(log_m)[..., None, None]
    k = np.arange(0, 300)[:, None].astype(float)
    p = (a / m) / (a / m + EXPOSURE)  # x_i ~ NegativeBinomial(a, p_i) once rate_i is integrated out
    joint = stats.nbinom.logpmf(k, a, p) + stats.norm.logpdf(Y, k, SIGMA)  # (a, m, k, unit)
    per_unit = special.logsumexp(joint, axis=2)
    log_post = (
        stats.gamma.logpdf(np.exp(log_a), 2.0) + stats.gamma.logpdf(np.exp(log_m), 2.0) + log_a + log_m
        + per_unit.sum(axis=-1)
    )  # fmt: skip
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    x_given = np.exp(joint - per_unit[:, :, None, :])  # p(x_i = k | a, m, y)
    rate_given = (a + k) / (a / m + EXPOSURE)  # E[rate_i | x_i = k, a, m]
    return {
        "a": float(np.sum(w * np.exp(log_a))),
        "m": float(np.sum(w * np.exp(log_m))),
        "x": np.einsum("am,amku,ku->u", w, x_given, np.broadcast_to(k, (k.size, 4))),
        "rate": np.einsum("am,amku,amku->u", w, x_given, np.broadcast_to(rate_given, x_given.shape)),
    }


def test_collapsed_hospital_posterior_matches_quadrature():
    with _hospitals():
        idata = ppm.sample(draws=2000, tune=300, chains=2, random_seed=11, **QUIET)
    post = idata["posterior"]
    assert post.attrs["ppdinfer_step"] == "independence" and post.attrs["acceptance_rate"] > 0.5
    assert "rate kept" not in post.attrs["ppdinfer_method_reason"]  # integrated out: the sampler takes 2 dimensions
    exact = _hospitals_exact()
    for name in ("a", "m", "x", "rate"):
        mean = post[name].mean(("chain", "draw")).values
        mcse = az.mcse(idata, var_names=[name])[name].values
        assert np.all(np.abs(mean - exact[name]) <= 4 * mcse), (name, mean, exact[name], mcse)
    rhat = az.rhat(idata, var_names=["a", "m"])
    assert max(float(rhat["a"]), float(rhat["m"])) < 1.01


def test_skewed_posterior_moments():
    """Two Gamma posteriors (shape 3.5 and 12: skewed on the log scale too) in one model: means and sds."""
    with pm.Model() as model:
        lam = pm.Gamma("lam", 1.5, 1.0)
        mu = pm.Gamma("mu", 2.0, 0.5)
        pm.Poisson("counts", lam, observed=[1, 0, 1])
        pm.Poisson("more", mu, observed=[3, 5, 2])
    tree = sample_independence(model, draws=3000, tune=300, chains=2, random_seed=5, progressbar=False)
    post = tree["posterior"]
    for name, shape, rate in (("lam", 3.5, 4.0), ("mu", 12.0, 3.5)):
        mean, sd = float(post[name].mean()), float(post[name].std())
        mcse = float(az.mcse(post, var_names=[name])[name])
        assert abs(mean - shape / rate) <= 4 * mcse, (name, mean, shape / rate, mcse)
        assert sd == pytest.approx(np.sqrt(shape) / rate, rel=0.06)
    assert set(tree["sample_stats"].data_vars) == {"lp", "accepted"}


def test_same_seed_same_draws_and_every_chain_its_own():
    with pm.Model() as model:
        pm.Normal("mu", 0.0, 1.0)
    runs = [sample_independence(model, draws=100, tune=50, chains=3, random_seed=8, progressbar=False) for _ in "ab"]
    first, second = (run["posterior"]["mu"].values for run in runs)
    assert np.array_equal(first, second) and first.shape == (3, 100)
    assert not np.array_equal(first[0], first[1])


def test_declines_where_a_normal_fit_cannot_describe_the_posterior():
    with pm.Model() as bimodal:
        pm.NormalMixture("mu", w=[0.5, 0.5], mu=[-4.0, 4.0], sigma=[0.5, 0.5])
    target = independence._Target(bimodal)
    with pytest.raises(Declined, match="different modes"):
        fit_mode(target, [np.array([-3.0]), np.array([3.0])])
    with pm.Model() as wide:
        pm.Normal("z", 0.0, 1.0, shape=independence.INDEPENDENCE_MAX_DIM + 1)
    with pytest.raises(Declined, match="unconstrained dimensions"):
        sample_independence(wide, draws=10, tune=10, progressbar=False)


def test_auto_runs_nuts_where_the_sampler_declines(monkeypatch):
    monkeypatch.setattr(independence, "MIN_ACCEPTANCE", 1.01)  # no proposal is ever that good
    with pm.Model():
        mu = pm.Gamma("mu", 2.0, 0.1)
        x = pm.Poisson("x", mu, shape=2)
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
        idata = ppm.sample(draws=100, tune=100, chains=1, random_seed=1, cores=1, **QUIET)
        post = idata["posterior"]
        assert post.attrs["ppdinfer_step"] == "nuts" and "declined" in post.attrs["ppdinfer_step_reason"]
        with pytest.raises(ValueError, match="the sampler declined: the fitted proposal's acceptance rate"):
            ppm.sample(marginal_step="independence", draws=100, tune=100, chains=1, **QUIET)


def test_ctrl_c_keeps_the_draws_every_chain_finished(monkeypatch):
    with pm.Model() as model:
        pm.Normal("mu", 0.0, 1.0)
    calls = {"n": 0}
    original = independence._Target.__call__

    def interrupted(self, x):
        calls["n"] += 1
        if calls["n"] > 1200:  # after tuning (2 x 100) and well into the draws
            raise KeyboardInterrupt
        return original(self, x)

    monkeypatch.setattr(independence._Target, "__call__", interrupted)
    tree = sample_independence(model, draws=2000, tune=200, chains=2, random_seed=3, progressbar=False)
    kept = tree["posterior"]["mu"].sizes["draw"]
    thin = tree["posterior"].attrs["thin"]
    assert 0 < kept < 2000 and (kept * thin) % independence._BLOCK == 0
    assert tree["posterior"].attrs["interrupted"]


def test_arguments_are_checked():
    with pm.Model():
        mu = pm.Gamma("mu", 2.0, 0.1)
        x = pm.Poisson("x", mu, shape=2)
        ppm.Release("y", Gaussian(2.0), x, observed=[18.3, 25.1])
        with pytest.raises(ValueError, match="marginal_step must be"):
            ppm.sample(marginal_step="gibbs", draws=10, tune=10, **QUIET)
        with pytest.raises(ValueError, match=r"marginal_step='independence': NUTS settings given \(target_accept\)"):
            ppm.sample(marginal_step="independence", target_accept=0.9, draws=10, tune=10, **QUIET)
        idata = ppm.sample(target_accept=0.9, draws=50, tune=50, chains=1, cores=1, random_seed=2, **QUIET)
        assert idata["posterior"].attrs["ppdinfer_step"] == "nuts"
        assert "NUTS settings given (target_accept)" in idata["posterior"].attrs["ppdinfer_step_reason"]


def test_draw_columns_frequencies_match_the_weights():
    rng = np.random.default_rng(4)
    probabilities = np.array([[0.1, 0.0], [0.0, 0.5], [0.6, 0.5], [0.3, 0.0]])
    log_w = np.log(probabilities) + 7.0  # an offset the column max removes
    n = 20_000
    draws = np.stack([draw_columns(log_w, rng.random(2)) for _ in range(n)])
    for j in range(2):
        counts = np.bincount(draws[:, j], minlength=4)
        assert np.all(counts[probabilities[:, j] == 0] == 0)
        support = probabilities[:, j] > 0
        assert stats.chisquare(counts[support], n * probabilities[support, j]).pvalue > 1e-3
    with np.errstate(divide="ignore"):
        assert draw_columns(np.log(probabilities), np.array([1.0 - 1e-17, 1.0 - 1e-17])).tolist() == [3, 2]


def test_the_auto_rule_prices_the_sampler_that_will_run():
    """About 36,000 window cells: NUTS's cost per draw (1.5 ms + 50 ns a cell) is above the augmentation's (3 ms), the
    independence sampler's (25 ns a cell) below it."""
    from ppdinfer.mechanisms import Laplace
    from ppdinfer.pymc.marginal import choose_method

    with pm.Model() as model:
        mu = pm.Gamma("mu", 2.0, 0.001)
        x = pm.Poisson("x", mu, shape=2)
        ppm.Release("y", Laplace(0.0018), x, observed=[1800.3, 2500.1])
    method, reason, marginal = choose_method(model)
    assert 31_000 < marginal.cells < 110_000  # NUTS above the augmentation, the independence sampler below
    assert method == "marginalize", reason
    assert choose_method(model, independence=False)[0] == "augment"


def test_too_few_effective_draws_are_reported(caplog):
    with pm.Model() as model:
        pm.Normal("mu", 0.0, 1.0)
    with caplog.at_level("WARNING", logger="pymc"):
        sample_independence(model, draws=40, tune=40, chains=2, random_seed=1, progressbar=False)
    assert "smallest bulk ESS" in caplog.text  # 80 draws cannot give 100 per chain
    caplog.clear()
    with caplog.at_level("WARNING", logger="pymc"):
        sample_independence(model, draws=1000, tune=100, chains=2, random_seed=1, progressbar=False)
    assert "smallest bulk ESS" not in caplog.text
    with pytest.raises(ValueError, match="draws"):
        sample_independence(model, draws=0, progressbar=False)
    with pytest.raises(ValueError, match="tune must be a whole number"):
        sample_independence(model, tune=-1, progressbar=False)
