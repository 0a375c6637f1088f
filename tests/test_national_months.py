"""All months of a national panel as tasks: the same results on any executor, close to the truth, resumable."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import xarray as xr

from ppdinfer.case_studies.covid_pa import national
from ppdinfer.case_studies.covid_pa.national import fit_months, synthetic_panel, z_scores
from ppdinfer.case_studies.covid_pa.results_dir import ResultsError
from ppdinfer.case_studies.covid_pa.synthesis import LocalPool
from ppdinfer.inference.diagnostics import ess_rhat

pytestmark = pytest.mark.filterwarnings("ignore:Numba will use object mode")

# 30 counties x 3 months, 2 chains of 150 draws: about a second a month
RUN = {"draws": 150, "tune": 100, "chains": 2, "seed": 11, "progressbar": False}


@pytest.fixture(scope="module")
def panel():
    return synthetic_panel(counties=30, months=3, epsilon=0.05, seed=5)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("reference")


@pytest.fixture(scope="module")
def reference(panel, folder):
    return fit_months(panel, executor=ThreadPoolExecutor(1), results_dir=folder, **RUN)


def same_fits(got, expected):
    """Identical but for the seconds each fit took."""
    xr.testing.assert_identical(got.drop_vars("seconds"), expected.drop_vars("seconds"))


def test_the_panel_is_drawn_from_its_seed_as_documented(panel):
    assert panel.counts.shape == (4, 30) and panel.releases.shape == (3, 30)
    again = synthetic_panel(counties=30, months=3, epsilon=0.05, seed=5)
    assert panel.digest() == again.digest()
    assert (panel.counts == again.counts).all() and (panel.releases == again.releases).all()
    assert panel.digest() != synthetic_panel(counties=30, months=3, epsilon=0.05, seed=6).digest()
    assert panel.digest() != synthetic_panel(counties=30, months=3, seed=5).digest()  # epsilon 1
    longer = synthetic_panel(counties=30, months=6, epsilon=0.05, seed=5)  # fewer months: the start of a longer panel
    assert (longer.counts[:4] == panel.counts).all() and (longer.releases[:3] == panel.releases).all()
    # the national wave: totals near 250 J (1 + 0.5 sin(2 pi t / 12)) (Poisson sd about 87 at J = 30)
    expected = 250 * 30 * (1 + 0.5 * np.sin(2 * np.pi * np.arange(4) / 12))
    assert np.all(np.abs(panel.counts.sum(axis=1) - expected) < 5 * np.sqrt(expected))
    # the release is discrete Laplace noise of scale 2 / epsilon = 40: a = exp(-1/40), variance 2a / (1 - a)^2
    a = np.exp(-1 / 40)
    noise = panel.releases - panel.counts[1:]
    assert noise.dtype == np.int64 and 0.6 < noise.var() / (2 * a / (1 - a) ** 2) < 1.6
    y, z, x = panel.month(2)
    assert (y == panel.releases[1]).all() and (z["previous"] == panel.counts[1]).all()
    assert z["total"] == x.sum() and (x == panel.counts[2]).all()


def test_the_posterior_means_of_the_counts_are_close_to_the_truth(panel, reference):
    # every posterior state keeps the public total, so the means do too
    np.testing.assert_allclose(reference["cases_mean"].sum("county"), panel.counts[1:].sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(reference["share_mean"].sum("county"), 1.0, rtol=1e-9)
    z = z_scores(panel, reference).values.ravel()
    # 90 z-scores, near N(0, 1) when the fit is right (the mean's sd is about 0.1); last month's counts as
    # the answer miss by |z| near 10, and posterior sds three times too wide (or narrow) leave sd 0.3 (or 3)
    assert abs(z.mean()) < 0.35 and 0.55 < z.std(ddof=1) < 1.4
    # at epsilon 0.05 (noise sd 57) the prior centred on last month matters: the posterior means are far
    # closer to the truth than the release itself (squared error 0.4-0.6 of the release's in trials)
    truth = panel.counts[1:]
    assert ((reference["cases_mean"].values - truth) ** 2).mean() < 0.75 * ((panel.releases - truth) ** 2).mean()
    assert (reference["ess_share"] > 50).all() and (reference["ess_cases"] > 50).all()
    assert (reference["rhat"] < 1.1).all() and (reference["seconds"] > 0).all()
    assert reference.attrs["ess_target"] == national.ESS_TARGET and reference.attrs["seed"] == RUN["seed"]


def test_two_local_workers_give_identical_results(panel, reference, tmp_path):
    with LocalPool(2) as pool:
        same_fits(fit_months(panel, executor=pool, results_dir=tmp_path, **RUN), reference)


def test_a_dask_local_cluster_gives_identical_results(panel, reference, tmp_path):
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        same_fits(fit_months(panel, executor=client.get_executor(), results_dir=tmp_path, **RUN), reference)


def test_a_months_fit_is_seeded_by_the_seed_and_month_alone(panel, reference, tmp_path):
    alone = fit_months(panel, [3], executor=ThreadPoolExecutor(1), results_dir=tmp_path, **RUN)
    same_fits(alone, reference.sel(month=[3]))


def test_an_interrupted_run_keeps_finished_months_and_resumes(panel, reference, tmp_path, monkeypatch):
    calls = []
    original = national._run_month

    def interrupt_on_second(panel, t, *args):
        calls.append(t)
        if len(calls) >= 2:
            raise KeyboardInterrupt
        return original(panel, t, *args)

    monkeypatch.setattr(national, "_run_month", interrupt_on_second)
    with pytest.raises(KeyboardInterrupt):
        fit_months(panel, executor=ThreadPoolExecutor(1), results_dir=tmp_path, **RUN)
    assert sorted(p.name for p in tmp_path.glob("*.nc")) == ["month_001.nc"]  # the finished month is kept
    monkeypatch.setattr(national, "_run_month", original)
    same_fits(fit_months(panel, executor=ThreadPoolExecutor(1), results_dir=tmp_path, **RUN), reference)


def test_a_finished_folder_is_read_back_and_another_configuration_refused(panel, reference, folder, monkeypatch):
    def no_fit(*args):
        raise AssertionError("a finished month was fitted again")

    monkeypatch.setattr(national, "_run_month", no_fit)
    xr.testing.assert_identical(fit_months(panel, executor=ThreadPoolExecutor(1), results_dir=folder, **RUN), reference)
    with pytest.raises(ResultsError, match="another configuration.*seed 11 there, 12 now"):
        fit_months(panel, executor=ThreadPoolExecutor(1), results_dir=folder, **{**RUN, "seed": 12})


@pytest.mark.parametrize(("chains", "draws"), [(2, 400), (1, 301), (4, 50), (3, 9)])
def test_the_vectorized_diagnostics_are_arviz_s(chains, draws):
    arviz_stats = pytest.importorskip("arviz_stats.base").array_stats
    rng = np.random.default_rng(chains * draws)
    phi = rng.uniform(-0.7, 0.99, 12)  # AR(1) chains, from antithetic to slow
    x = np.zeros((chains, draws, 12))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + rng.standard_normal((chains, 12))
    x[..., 0] = 3.0  # constant
    x[..., 1] = np.round(x[..., 1] * 0.3)  # integer draws with many ties
    x[..., 2] = np.tile([1.0, -1.0], draws)[:draws]  # antithetic
    x[..., 3] += np.arange(chains)[:, None]  # chains apart
    ess, rhat = ess_rhat(x)
    expected = arviz_stats.ess(x.transpose(2, 0, 1), method="bulk")
    np.testing.assert_allclose(ess, expected, rtol=1e-10)
    if chains > 1:
        with np.errstate(divide="ignore", invalid="ignore"):
            np.testing.assert_allclose(rhat, arviz_stats.rhat(x.transpose(2, 0, 1)), rtol=1e-10)
    else:
        assert np.isnan(rhat).all()


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"counties": 1}, "counties must be at least 2"),
        ({"months": 0}, "months must be a positive integer"),
        ({"epsilon": -1.0}, "epsilon must be a positive"),
        ({"seed": -1}, "seed must be a non-negative integer"),
    ],
)
def test_bad_panels_are_refused(arguments, match):
    with pytest.raises(ValueError, match=match):
        synthetic_panel(**{"counties": 5, "months": 2, **arguments})


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"months": [0]}, "month must be an integer from 1 to 3"),
        ({"months": [1, 1]}, "months must list distinct months"),
        ({"months": []}, "months must list distinct months"),
        ({"draws": 0}, "draws must be a positive integer"),
        ({"draws": 3}, "draws must be at least 4"),
        ({"tune": -1}, "tune must be a non-negative integer"),
        ({"chains": 0}, "chains must be a positive integer"),
        ({"concentration_per_county": 0.0}, "concentration_per_county must be a positive"),
        ({"seed": 1.5}, "seed must be a non-negative integer"),
    ],
)
def test_bad_fits_are_refused(panel, tmp_path, arguments, match):
    with pytest.raises(ValueError, match=match):
        fit_months(panel, results_dir=tmp_path, **{**RUN, **arguments})
    with pytest.raises(ValueError, match="panel must be a NationalPanel"):
        fit_months(panel.counts)


def test_the_national_command_passes_its_options(tmp_path, monkeypatch):
    from ppdinfer.cli import main

    seen = {}
    monkeypatch.setattr(national, "national_step", lambda *args, **kwargs: seen.update(args=args, **kwargs))
    argv = ["covid", "national", "--counties", "40", "--months", "3", "--workers", "2", "--results", str(tmp_path)]
    assert main([*argv, "--draws", "200", "--chains", "1", "--fresh", "--no-progress"]) == 0
    assert seen["args"] == (40, 3) and (seen["workers"], seen["executor"], seen["results"]) == (2, None, tmp_path)
    assert (seen["draws"], seen["chains"], seen["fresh"], seen["progressbar"]) == (200, 1, True, False)
